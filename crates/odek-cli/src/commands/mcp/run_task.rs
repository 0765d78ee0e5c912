//! `run_task`: a whole agent run for an MCP client, as `delegate_tasks` runs one for a model —
//! an `odek subagent` child process (`odek::agent::subagent::spawn`) with a task file, so the
//! trust lockdown, the budgets, the artifacts and their verification, and whatever confines a
//! child (the sandbox) are the sub-agent's own.
//!
//! One call, in order: the arguments checked (a goal over [`MAX_GOAL_BYTES`] is refused); a run
//! slot taken (at most `--max-concurrent-runs` run at once; a waiting call reports progress);
//! a run id minted and its artifact folder made (`<artifact-root>/<run>`); the task file
//! written with the operator's budgets lowered by the call's `max_iterations` and
//! `timeout_seconds`; the child run, each of its protocol-2 records turned into a
//! `notifications/progress` (one per iteration); `notifications/cancelled` or the server's
//! shutdown stops the child (SIGINT, then a kill: no orphan); the child's artifacts validated
//! against the run's folder alone; and the answer, an `odek.tool-result/v1` envelope: the
//! summary as text, each artifact an `odek.artifact-ref/v1` `file://` ref with its sha256 and
//! size. A run that did not succeed (a budget, a timeout, an error) is an `isError` result that
//! names why. Start at [`RunTasks::call`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use odek::Runtime;
use odek::agent::subagent::artifacts::{TaskId, validate_task_artifacts};
use odek::agent::subagent::confine::child_confinement;
use odek::agent::subagent::delegate::{RemoveOnDrop, write_task_file};
use odek::agent::subagent::spawn::{ChildSpec, RecordObserver, child_environment, run_child_observed};
use odek::agent::subagent::stream::ITERATION_RECORD;
use odek::agent::subagent::task::{TaskFile, TaskReplay};
use odek::llm::ReplayScript;
use odek::parts::{REPLAY_PROVIDER, delegation_depth, this_program};
use odek_contract::envelope::RawArtifactRef;
use odek_contract::quoting::quote;
use odek_contract::redaction::redact;
use odek_contract::runes::runes_with_ellipsis;
use odek_extension::{ArtifactRef, CallContext, Envelope, Server, ToolAnnotations, ToolDef, ToolResponse};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::Options;
use super::builtins::NOT_AN_OBJECT;
use crate::outcome::CommandError;

/// The largest `goal` accepted, in bytes: a goal is a task statement, not its input (bulky
/// input belongs in a file under the working directory, named in the goal).
pub const MAX_GOAL_BYTES: usize = 64 * 1024;

/// The largest `context`, in bytes.
const MAX_CONTEXT_BYTES: usize = 1024 * 1024;

/// The largest `output_schema`, in bytes of its JSON text.
const MAX_OUTPUT_SCHEMA_BYTES: usize = 256 * 1024;

/// How often a call waiting for a run slot reports that it still waits.
const WAITING_PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The parent's deadline past the child's own: the child reports its timeout itself first.
const CHILD_DEADLINE_GRACE: Duration = Duration::from_secs(10);

/// Progress records buffered between the child's reader and the notifications; past this a
/// record is dropped (progress is advisory, the reader never waits on the client).
const RECORD_QUEUE: usize = 256;

/// Progress values while a call waits for a slot stay below this.
const WAITING_CEILING: f64 = 0.4;
/// The progress value sent as the child is spawned.
const STARTING_PROGRESS: f64 = 0.45;
/// The progress value sent once the child reports it runs.
const STARTED_PROGRESS: f64 = 0.5;

/// What every run shares: how to start a child, and the slots.
pub(super) struct RunTasks {
    program: PathBuf,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    api_key: Option<String>,
    provider: String,
    model: String,
    base_url: String,
    prompt_caching: Option<bool>,
    /// The operator's caps (`subagent.timeout_seconds`, `subagent.max_iterations`).
    operator_timeout_seconds: u64,
    operator_max_iterations: u32,
    artifact_root: PathBuf,
    events_jsonl: String,
    replay: Option<Arc<TaskReplay>>,
    /// \[beyond\] The runtime's sandbox policy, when the sandbox is in force: an untrusted run's
    /// whole child process is confined in it (as `delegate_tasks` does), or the run fails.
    sandbox: Option<odek::sandbox::Policy>,
    /// `~/.odek`, whose `config.json` a confined child gets on a descriptor.
    odek_home: PathBuf,
    slots: Arc<Semaphore>,
    max_runs: usize,
    shutdown: CancellationToken,
    active: ActiveRuns,
}

impl RunTasks {
    /// The runs' settings from the runtime (provider, key, environment, the operator's
    /// sub-agent caps) and the flags; the `--replay` script is read now.
    pub(super) fn new(
        runtime: &Runtime,
        options: &Options,
        shutdown: CancellationToken,
    ) -> Result<Arc<RunTasks>, CommandError> {
        let settings = runtime.settings();
        let config = &settings.config;
        let setup = runtime.setup();
        let cwd = setup.sources.cwd.clone();
        let replay = match &settings.replay {
            None if config.core.provider == REPLAY_PROVIDER => {
                return Err(CommandError::Fatal("--provider replay needs --replay <file>".to_owned()));
            }
            None => None,
            Some(_) if config.core.provider != REPLAY_PROVIDER => {
                return Err(CommandError::Fatal("--replay needs --provider replay".to_owned()));
            }
            Some(path) => {
                let script = ReplayScript::load(path).map_err(|error| CommandError::Fatal(error.to_string()))?;
                Some(Arc::new(TaskReplay { source: path.display().to_string(), script }))
            }
        };
        let artifact_root = match &options.artifact_root {
            Some(root) => cwd.join(root),
            None => setup.sources.odek_dir().join("artifacts").join("mcp"),
        };
        create_private_dir(&artifact_root).map_err(|error| {
            CommandError::Fatal(format!("--artifact-root {}: {error}", quote(&artifact_root.display().to_string())))
        })?;
        let parent_env: Vec<(String, String)> =
            setup.sources.env.iter().map(|(name, value)| (name.clone(), value.clone())).collect();
        let env =
            child_environment(&parent_env, &setup.loaded.secrets.names, delegation_depth(), settings.api_key.is_some());
        Ok(Arc::new(RunTasks {
            program: this_program(),
            env,
            api_key: settings.api_key.clone(),
            provider: config.core.provider.clone(),
            model: config.core.model.clone(),
            base_url: config.core.base_url.clone(),
            prompt_caching: (!config.core.prompt_caching).then_some(false),
            operator_timeout_seconds: config.subagent.timeout_seconds,
            operator_max_iterations: config.subagent.max_iterations,
            artifact_root,
            events_jsonl: options
                .events_jsonl
                .as_ref()
                .map(|path| cwd.join(path).display().to_string())
                .unwrap_or_default(),
            cwd,
            replay,
            sandbox: runtime.sandbox().map(|sandbox| sandbox.policy().clone()),
            odek_home: setup.sources.odek_dir(),
            slots: Arc::new(Semaphore::new(options.max_concurrent_runs)),
            max_runs: options.max_concurrent_runs,
            shutdown,
            active: ActiveRuns::default(),
        }))
    }

    /// Waits at most `wait` until every run has stopped (after the shutdown token was
    /// cancelled, each child gets SIGINT, then a kill).
    pub(super) async fn wait_stopped(&self, wait: Duration) {
        let _ = tokio::time::timeout(wait, self.active.idle()).await;
    }

    /// One `run_task` call, from its raw arguments to its answer.
    pub(super) async fn call(self: Arc<RunTasks>, call: Arc<CallContext>, arguments: Value) -> ToolResponse {
        let _active = self.active.enter();
        let request = match RunRequest::parse(arguments) {
            Ok(request) => request,
            Err(message) => return ToolResponse::error(message),
        };
        let mut progress = Progress::new(&call);
        let Some(_slot) = self.take_slot(&call, &mut progress).await else {
            return self.stopped_before_start(&call);
        };
        let run_id = match TaskId::mint() {
            Ok(run_id) => run_id,
            Err(error) => return ToolResponse::error(format!("run_task: {error}")),
        };
        let run_root = self.artifact_root.join(run_id.as_str());
        if let Err(error) = create_private_dir(&run_root) {
            return ToolResponse::error(format!("run_task: create artifact folder {}: {error}", run_root.display()));
        }
        let (task, limits) = match self.task_file(&request, &run_id, &run_root) {
            Ok(prepared) => prepared,
            Err(message) => return ToolResponse::error(message),
        };
        let confinement = match &self.sandbox {
            Some(policy) if task.is_untrusted() => {
                let mut own_state = vec![run_root.clone()];
                if !self.events_jsonl.is_empty() {
                    // A Landlock rule needs the file to exist: the child appends to it.
                    match create_events_file(Path::new(&self.events_jsonl)) {
                        Ok(()) => own_state.push(PathBuf::from(&self.events_jsonl)),
                        Err(error) => return ToolResponse::error(format!("run_task: events-jsonl: {error}")),
                    }
                }
                match child_confinement(policy, &self.program, &task.base_url, &own_state, &self.odek_home) {
                    Ok(confinement) => Some(confinement),
                    Err(error) => return ToolResponse::error(format!("run_task: {error}")),
                }
            }
            _ => None,
        };
        let task_dir = confinement.as_ref().map(|confined| confined.sandbox.policy().temp_dir.clone());
        let task_file = match write_task_file(&task, task_dir.as_deref()) {
            Ok(path) => RemoveOnDrop(path),
            Err(error) => return ToolResponse::error(format!("run_task: write task file: {error}")),
        };
        let spec = ChildSpec {
            program: self.program.clone(),
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            api_key: self.api_key.clone(),
            task_file: task_file.0.clone(),
            timeout: Duration::from_secs(limits.timeout_seconds) + CHILD_DEADLINE_GRACE,
            confinement,
        };
        progress.send(STARTING_PROGRESS, &format!("run {run_id} starting")).await;
        let stop = self.shutdown.child_token();
        let (records, mut received) = mpsc::channel::<Map<String, Value>>(RECORD_QUEUE);
        let observer: RecordObserver = Arc::new(move |record: &Map<String, Value>| {
            let _ = records.try_send(record.clone());
        });
        let started = Instant::now();
        let child = run_child_observed(&spec, &stop, |_| {}, Some(observer));
        tokio::pin!(child);
        let mut cancelled_by_client = false;
        let report = loop {
            tokio::select! {
                report = &mut child => break report,
                Some(record) = received.recv() => progress.record(&record, &limits).await,
                () = call.cancelled(), if !cancelled_by_client => {
                    cancelled_by_client = true;
                    stop.cancel();
                }
            }
        };
        drop(task_file);
        if cancelled_by_client {
            return ToolResponse::NoReply;
        }
        // The child may end before its last records were forwarded: they still go out, before
        // the answer, so every iteration is reported.
        while let Ok(record) = received.try_recv() {
            progress.record(&record, &limits).await;
        }
        let artifacts = verify_artifacts(&report.result, run_root).await;
        let figures = progress.figures(&report.result);
        answer(&run_id, &report.result, report.parsed, &limits, artifacts, figures, started.elapsed())
    }

    /// Waits for a run slot, reporting progress while it waits; `None` when the call was
    /// cancelled or the server is stopping first.
    async fn take_slot(
        &self,
        call: &CallContext,
        progress: &mut Progress<'_>,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Some(permit);
        }
        let waiting_since = Instant::now();
        let acquire = Arc::clone(&self.slots).acquire_owned();
        tokio::pin!(acquire);
        let mut tick = tokio::time::interval(WAITING_PROGRESS_EVERY);
        loop {
            tokio::select! {
                permit = &mut acquire => return permit.ok(),
                _ = tick.tick() => {
                    let message = format!(
                        "waiting for a run slot ({} running, --max-concurrent-runs {}; waited {}s)",
                        self.max_runs,
                        self.max_runs,
                        waiting_since.elapsed().as_secs()
                    );
                    progress.waiting(&message).await;
                }
                () = call.cancelled() => return None,
                () = self.shutdown.cancelled() => return None,
            }
        }
    }

    fn stopped_before_start(&self, call: &CallContext) -> ToolResponse {
        if call.is_cancelled() {
            ToolResponse::NoReply
        } else {
            ToolResponse::error("run_task: odek mcp is stopping; the run was not started")
        }
    }

    /// The task file of one run and the limits it runs under.
    fn task_file(&self, request: &RunRequest, run_id: &TaskId, run_root: &Path) -> Result<(TaskFile, Limits), String> {
        let replay = match &self.replay {
            None => None,
            Some(replay) => {
                let source = format!("{} › subagent {}", replay.source, quote(&runes_with_ellipsis(&request.goal, 60)));
                let Some(script) = replay.script.subagent(&request.goal) else {
                    return Err(format!("run_task: replay {source}: the script has no subagents entry with this goal"));
                };
                Some(TaskReplay { source, script })
            }
        };
        let limits = Limits {
            timeout_seconds: lower(self.operator_timeout_seconds, request.timeout_seconds),
            max_iterations: lower(self.operator_max_iterations, request.max_iterations),
        };
        let task = TaskFile {
            task_id: run_id.as_str().to_owned(),
            protocol: 2,
            goal: request.goal.clone(),
            context: request.context.clone(),
            trust_level: if request.trusted { "trusted" } else { "untrusted" }.to_owned(),
            parent_trust: "trusted".to_owned(),
            artifact_root: run_root.display().to_string(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            prompt_caching: self.prompt_caching,
            replay,
            output_schema: request.output_schema.clone(),
            max_iterations: limits.max_iterations,
            timeout_seconds: limits.timeout_seconds,
            events_jsonl: self.events_jsonl.clone(),
            ..TaskFile::default()
        };
        Ok((task, limits))
    }
}

/// The lower of the operator's cap and the call's (`None`: the operator's).
fn lower<T: Ord + Copy>(operator: T, asked: Option<T>) -> T {
    asked.map_or(operator, |asked| operator.min(asked))
}

/// A directory (and its parents) with mode 0700 for what odek creates.
fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// The budgets one run was given.
#[derive(Debug, Clone, Copy)]
struct Limits {
    timeout_seconds: u64,
    max_iterations: u32,
}

/// The arguments of one call.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct RunRequest {
    goal: String,
    context: String,
    max_iterations: Option<u32>,
    timeout_seconds: Option<u64>,
    trusted: bool,
    output_schema: Option<Value>,
}

impl RunRequest {
    /// The arguments, or the error the client reads. Unknown members are ignored (the
    /// contract's additive rule).
    fn parse(arguments: Value) -> Result<RunRequest, String> {
        let arguments = match arguments {
            Value::Object(_) => arguments,
            Value::Null => Value::Object(Map::new()),
            _ => return Err(NOT_AN_OBJECT.to_owned()),
        };
        let request: RunRequest =
            serde_json::from_value(arguments).map_err(|error| format!("invalid arguments: {error}"))?;
        if request.goal.trim().is_empty() {
            return Err(
                "invalid arguments: goal is required (what the run should do, as a non-empty string)".to_owned()
            );
        }
        if request.goal.len() > MAX_GOAL_BYTES {
            return Err(format!(
                "invalid arguments: goal is too large ({} bytes, max {MAX_GOAL_BYTES}); put bulky input in a file \
                 under the working directory and name the file in the goal",
                request.goal.len()
            ));
        }
        if request.context.len() > MAX_CONTEXT_BYTES {
            return Err(format!(
                "invalid arguments: context is too large ({} bytes, max {MAX_CONTEXT_BYTES})",
                request.context.len()
            ));
        }
        if request.max_iterations == Some(0) {
            return Err("invalid arguments: max_iterations must be at least 1".to_owned());
        }
        if request.timeout_seconds == Some(0) {
            return Err("invalid arguments: timeout_seconds must be at least 1".to_owned());
        }
        if let Some(schema) = &request.output_schema {
            if !schema.is_object() {
                return Err("invalid arguments: output_schema must be a JSON Schema object".to_owned());
            }
            let size = schema.to_string().len();
            if size > MAX_OUTPUT_SCHEMA_BYTES {
                return Err(format!(
                    "invalid arguments: output_schema is too large ({size} bytes, max {MAX_OUTPUT_SCHEMA_BYTES})"
                ));
            }
        }
        Ok(request)
    }
}

/// The progress of one call: `notifications/progress` when the client gave a token, with a
/// value that only grows — below [`WAITING_CEILING`] while it waits for a slot,
/// [`STARTING_PROGRESS`] as the child is spawned, [`STARTED_PROGRESS`] once it runs, then the
/// number of the iteration that finished (of `total` = the run's `max_iterations`). The last
/// iteration it saw is also what the answer's headline reports ([`Progress::figures`]), so the
/// two never disagree.
struct Progress<'a> {
    call: &'a CallContext,
    last: f64,
    /// The latest iteration record: its iteration and tokens so far.
    latest: Option<Figures>,
}

/// A run's iterations and tokens, as the headline shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Figures {
    iterations: u64,
    tokens: u64,
}

impl<'a> Progress<'a> {
    fn new(call: &'a CallContext) -> Progress<'a> {
        Progress { call, last: -1.0, latest: None }
    }

    /// The figures of the headline: those of the last iteration reported as progress; a run
    /// that finished no iteration has none of its own to report, so the child's result says.
    fn figures(&self, result: &Value) -> Figures {
        self.latest.unwrap_or_else(|| Figures {
            iterations: result["iterations"].as_u64().unwrap_or_default(),
            tokens: result["tokens_used"].as_u64().unwrap_or_default(),
        })
    }

    async fn send_with_total(&mut self, value: f64, total: Option<f64>, message: &str) {
        if self.call.progress_token().is_none() || value <= self.last {
            return;
        }
        self.last = value;
        // A client that stopped reading cannot be reported to; the run goes on regardless.
        let _ = self.call.progress(value, total, Some(&redact(message))).await;
    }

    async fn send(&mut self, value: f64, message: &str) {
        self.send_with_total(value, None, message).await;
    }

    /// A notification while the call waits for a slot: each a little further towards 0.5.
    async fn waiting(&mut self, message: &str) {
        let value = if self.last < 0.0 { 0.0 } else { self.last + (WAITING_CEILING - self.last) / 2.0 };
        self.send(value, message).await;
    }

    /// A record of the child's progress stream: the start, and every finished iteration.
    async fn record(&mut self, record: &Map<String, Value>, limits: &Limits) {
        let kind = record.get("type").and_then(Value::as_str).unwrap_or_default();
        let total = Some(f64::from(limits.max_iterations));
        if kind == "subagent_started" {
            let pid = record.get("pid").and_then(Value::as_u64).unwrap_or_default();
            self.send_with_total(STARTED_PROGRESS, total, &format!("run started (pid {pid})")).await;
        } else if kind == ITERATION_RECORD {
            let iteration = record.get("iteration").and_then(Value::as_u64).unwrap_or_default();
            let tools = record.get("tools_called").and_then(Value::as_u64).unwrap_or_default();
            let tokens = record.get("tokens_used").and_then(Value::as_u64).unwrap_or_default();
            self.latest = Some(Figures { iterations: iteration, tokens });
            let message = format!(
                "iteration {iteration} of at most {}: {tools} tool call(s), {tokens} tokens so far",
                limits.max_iterations
            );
            self.send_with_total(iteration as f64, total, &message).await;
        }
    }
}

/// The run's artifacts after validation against its own folder (off the executor: it hashes):
/// the refs that passed, each with its measured sha256 and size, and a line per dropped one.
async fn verify_artifacts(result: &Value, run_root: PathBuf) -> (Vec<ArtifactRef>, Vec<String>) {
    let refs: Vec<RawArtifactRef> = result["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| serde_json::from_value(entry.clone()).ok())
        .collect();
    if refs.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let verified = tokio::task::spawn_blocking(move || {
        let checked = validate_task_artifacts(&refs, Some(&run_root));
        let mut dropped = checked.dropped;
        let mut valid = Vec::with_capacity(checked.valid.len());
        for artifact in checked.valid {
            match outward_ref(&artifact) {
                Ok(outward) => valid.push(outward),
                Err(error) => dropped.push(format!("  [artifact] dropped {}: {error}", quote(&artifact.id))),
            }
        }
        (valid, dropped)
    })
    .await;
    verified.unwrap_or_else(|error| (Vec::new(), vec![format!("  [artifact] verification failed: {error}")]))
}

/// A validated artifact as the ref `run_task` hands out: its resolved `file://` uri, with the
/// sha256 and size measured again from the file.
fn outward_ref(artifact: &odek_contract::artifact_ref::ArtifactRef) -> Result<ArtifactRef, odek_extension::Error> {
    let (size, sha256) = odek_extension::measure_file(&artifact.resolved_path)?;
    let mut outward = ArtifactRef::new(
        artifact.id.clone(),
        odek_extension::file_uri(&artifact.resolved_path)?,
        artifact.media_type.clone(),
    );
    outward.sha256 = Some(sha256);
    outward.size_bytes = Some(size);
    if !artifact.summary.is_empty() {
        outward.summary = Some(artifact.summary.clone());
    }
    Ok(outward)
}

/// The answer: an `odek.tool-result/v1` envelope with a headline (the run's `figures`, as its
/// progress reported them), the summary and the artifacts; `isError` unless the run
/// succeeded, with the reason named.
fn answer(
    run_id: &TaskId,
    result: &Value,
    parsed: bool,
    limits: &Limits,
    (artifacts, dropped): (Vec<ArtifactRef>, Vec<String>),
    Figures { iterations, tokens }: Figures,
    elapsed: Duration,
) -> ToolResponse {
    let text_of = |key: &str| result[key].as_str().unwrap_or_default().to_owned();
    let status = text_of("status");
    let seconds = result["duration_seconds"].as_f64().unwrap_or(elapsed.as_secs_f64());
    let succeeded = parsed && status == "success";
    let mut lines =
        vec![format!("run {run_id}: {status} · {iterations} iteration(s) · {seconds:.1}s · {tokens} tokens")];
    if !succeeded {
        lines.push(format!("stopped: {}", why_stopped(result, limits)));
    }
    let summary = text_of("summary");
    if !summary.trim().is_empty() {
        lines.push(String::new());
        lines.push(summary);
    }
    if !dropped.is_empty() {
        lines.push(String::new());
        lines.extend(dropped);
    }
    let mut envelope = Envelope::new(redact(&lines.join("\n")));
    for artifact in artifacts {
        envelope = envelope.with_artifact(artifact);
    }
    let mut response = envelope.into_response();
    if let ToolResponse::Result(result) = &mut response {
        result.is_error = !succeeded;
    }
    response
}

/// Why a run did not succeed, naming the budget when one stopped it.
fn why_stopped(result: &Value, limits: &Limits) -> String {
    let error = result["error"].as_str().unwrap_or_default();
    match (result["status"].as_str().unwrap_or_default(), result["partial_reason"].as_str().unwrap_or_default()) {
        ("partial", "iteration_budget") => {
            format!("the iteration budget ran out (max_iterations {}); the summary is partial", limits.max_iterations)
        }
        ("partial", "time_budget") => {
            format!("the time budget ran out (timeout_seconds {}); the summary is partial", limits.timeout_seconds)
        }
        ("budget_exhausted", _) => format!("an execution budget ran out: {error}"),
        ("error", _) if error.starts_with("reached max iterations") => {
            format!("the iteration budget ran out (max_iterations {}): {error}", limits.max_iterations)
        }
        ("timeout", _) => format!("the run's deadline passed (timeout_seconds {}): {error}", limits.timeout_seconds),
        (status, _) if error.is_empty() => format!("the run ended with status {}", quote(status)),
        _ => error.to_owned(),
    }
}

/// How many calls are running, so shutdown can wait for their children to be stopped.
#[derive(Default)]
struct ActiveRuns {
    count: Arc<AtomicUsize>,
    idle: Arc<Notify>,
}

impl ActiveRuns {
    fn enter(&self) -> ActiveRun {
        self.count.fetch_add(1, Ordering::AcqRel);
        ActiveRun { count: Arc::clone(&self.count), idle: Arc::clone(&self.idle) }
    }

    async fn idle(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// One running call; leaving it (however the call ends) may make the server idle.
struct ActiveRun {
    count: Arc<AtomicUsize>,
    idle: Arc<Notify>,
}

impl Drop for ActiveRun {
    fn drop(&mut self) {
        if self.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.idle.notify_waiters();
        }
    }
}

/// The `run_task` tool's definition.
fn definition() -> ToolDef {
    ToolDef::new(
        "run_task",
        "Run a whole odek agent on a goal, in the directory odek mcp serves, and get back its summary with \
         verified artifact references (odek.tool-result/v1). The run has odek's built-in tools; it is untrusted \
         unless trusted is true (untrusted runs get no MCP servers and are denied code execution, installs, \
         network egress and writes outside the directory). Progress is reported per iteration.",
        json!({
            "type": "object",
            "properties": {
                "goal": {"type": "string", "description": "What the run should do: a self-contained task statement."},
                "context": {"type": "string", "description": "Background the run should know."},
                "max_iterations": {"type": "integer", "minimum": 1, "description": "At most this many iterations (the operator's cap still applies)."},
                "timeout_seconds": {"type": "integer", "minimum": 1, "description": "At most this many seconds (the operator's cap still applies)."},
                "trusted": {"type": "boolean", "default": false, "description": "Run trusted (MCP servers, fewer denials)."},
                "output_schema": {"type": "object", "description": "A JSON Schema (2020-12) the run's final answer must match."}
            },
            "required": ["goal"]
        }),
    )
    .with_annotations(ToolAnnotations { open_world_hint: Some(true), ..ToolAnnotations::destructive() })
}

/// Adds `run_task` to `server`.
pub(super) fn add_run_task(server: Server, runs: &Arc<RunTasks>) -> Server {
    let runs = Arc::clone(runs);
    server.tool(definition(), move |call, arguments| Arc::clone(&runs).call(call, arguments))
}

/// `--events-jsonl`'s file made to exist (mode `0600`, never truncated), so a confined child
/// can be granted exactly it.
fn create_events_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().append(true).create(true).mode(0o600).open(path).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_with_clear_errors() {
        assert_eq!(RunRequest::parse(json!([1])).unwrap_err(), NOT_AN_OBJECT);
        assert!(RunRequest::parse(json!({})).unwrap_err().contains("goal is required"));
        let huge = "g".repeat(10 * 1024 * 1024);
        assert_eq!(
            RunRequest::parse(json!({"goal": huge})).unwrap_err(),
            format!(
                "invalid arguments: goal is too large (10485760 bytes, max {MAX_GOAL_BYTES}); put bulky input in a \
                 file under the working directory and name the file in the goal"
            )
        );
        assert!(RunRequest::parse(json!({"goal": "g", "max_iterations": 0})).is_err());
        assert!(RunRequest::parse(json!({"goal": "g", "output_schema": "no"})).is_err());
        let request = RunRequest::parse(json!({"goal": "g", "surprise": true, "max_iterations": 3})).unwrap();
        assert_eq!((request.goal.as_str(), request.max_iterations, request.trusted), ("g", Some(3), false));
    }

    #[test]
    fn the_call_only_lowers_the_operator_caps() {
        assert_eq!(lower(300_u64, Some(20)), 20);
        assert_eq!(lower(300_u64, Some(9_999)), 300);
        assert_eq!(lower(30_u32, None), 30);
    }
}
