//! Whole agent runs handed to a remote caller (`odek mcp`'s `run_task`, and any face that hands
//! out runs): each an `odek subagent` child process with a task file, under the sub-agent rules.
//!
//! A child rather than a session in this process, on purpose: an untrusted run's whole process
//! is confined by the kernel (the sandbox policy of the runtime, as `delegate_tasks` does), its
//! trust lockdown, budgets and artifacts are the sub-agent's own, and a run that goes wrong
//! takes nothing else down. One run, in order: a slot taken (at most `max_concurrent_runs` at
//! once; a waiting run reports it); a run id minted and its artifact folder made
//! (`<artifact root>/<run>`); the task file written with the operator's sub-agent caps lowered
//! by the request's; the child run, its protocol-2 records reported as [`TaskProgress`]; the
//! caller's cancellation or the runs' shutdown stops it (SIGINT, then a kill: no orphan); its
//! artifacts validated against the run's folder alone. Start at [`TaskRuns::run`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use odek_agent::subagent::artifacts::{TaskId, validate_task_artifacts};
use odek_agent::subagent::confine::child_confinement;
use odek_agent::subagent::delegate::{RemoveOnDrop, write_task_file};
use odek_agent::subagent::spawn::{ChildSpec, RecordObserver, child_environment, run_child_observed};
use odek_agent::subagent::stream::ITERATION_RECORD;
use odek_agent::subagent::task::{TaskFile, TaskReplay};
use odek_contract::artifact_ref::ArtifactRef;
use odek_contract::envelope::RawArtifactRef;
use odek_contract::quoting::quote;
use odek_contract::runes::runes_with_ellipsis;
use odek_llm::ReplayScript;
use serde_json::{Map, Value};
use tokio::sync::{Notify, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::agent_parts::{REPLAY_PROVIDER, delegation_depth, this_program};
use crate::runtime::Runtime;

/// The largest `goal` accepted, in bytes: a goal is a task statement, not its input (bulky
/// input belongs in a file under the working directory, named in the goal).
pub const MAX_GOAL_BYTES: usize = 64 * 1024;

/// The largest `context`, in bytes.
const MAX_CONTEXT_BYTES: usize = 1024 * 1024;

/// The largest `output_schema`, in bytes of its JSON text.
const MAX_OUTPUT_SCHEMA_BYTES: usize = 256 * 1024;

/// How often a run waiting for a slot reports that it still waits.
const WAITING_PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The parent's deadline past the child's own: the child reports its timeout itself first.
const CHILD_DEADLINE_GRACE: Duration = Duration::from_secs(10);

/// Where the runs' artifacts go and how many run at once.
#[derive(Debug, Clone)]
pub struct TaskRunSettings {
    /// The folder holding one folder per run (relative: to the working directory); `None`:
    /// `~/.odek/artifacts/mcp`.
    pub artifact_root: Option<PathBuf>,
    /// Runs at once; more wait for a slot.
    pub max_concurrent_runs: usize,
    /// A file every run's `odek.event/v1` events are appended to (relative: to the working
    /// directory).
    pub events_jsonl: Option<PathBuf>,
}

/// Why the runs cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TaskRunsError {
    /// The replay provider without a script.
    #[error("--provider replay needs --replay <file>")]
    ReplayWithoutScript,
    /// A script for another provider.
    #[error("--replay needs --provider replay")]
    ScriptWithoutReplay,
    /// The replay script does not load.
    #[error("{0}")]
    Script(String),
    /// The artifact root cannot be made.
    #[error("--artifact-root {path}: {error}")]
    ArtifactRoot {
        /// The root, quoted.
        path: String,
        /// What failed.
        error: std::io::Error,
    },
}

/// Why one run has no report.
#[derive(Debug, thiserror::Error)]
pub enum TaskRunError {
    /// The request is refused, before anything started (the text says what to fix).
    #[error("{0}")]
    Invalid(String),
    /// Cancelled by its caller, or the runs are shutting down, before it started.
    #[error("the runs are stopping; the run was not started")]
    NotStarted,
    /// Cancelled by its caller while it ran (the child was stopped).
    #[error("cancelled")]
    Cancelled,
    /// The run could not be started.
    #[error("{0}")]
    Failed(String),
}

/// What one run is asked to do. Unknown members are ignored (the contract's additive rule).
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(default)]
pub struct TaskRequest {
    /// What the run should do.
    pub goal: String,
    /// Background the run should know.
    pub context: String,
    /// At most this many iterations (the operator's cap still applies).
    pub max_iterations: Option<u32>,
    /// At most this many seconds (the operator's cap still applies).
    pub timeout_seconds: Option<u64>,
    /// Run trusted (MCP servers, fewer denials).
    pub trusted: bool,
    /// A JSON Schema the final answer must match.
    pub output_schema: Option<Value>,
}

impl TaskRequest {
    /// The request's own checks; the error is what the caller reads.
    pub fn check(&self) -> Result<(), String> {
        if self.goal.trim().is_empty() {
            return Err(
                "invalid arguments: goal is required (what the run should do, as a non-empty string)".to_owned()
            );
        }
        if self.goal.len() > MAX_GOAL_BYTES {
            return Err(format!(
                "invalid arguments: goal is too large ({} bytes, max {MAX_GOAL_BYTES}); put bulky input in a file \
                 under the working directory and name the file in the goal",
                self.goal.len()
            ));
        }
        if self.context.len() > MAX_CONTEXT_BYTES {
            return Err(format!(
                "invalid arguments: context is too large ({} bytes, max {MAX_CONTEXT_BYTES})",
                self.context.len()
            ));
        }
        if self.max_iterations == Some(0) {
            return Err("invalid arguments: max_iterations must be at least 1".to_owned());
        }
        if self.timeout_seconds == Some(0) {
            return Err("invalid arguments: timeout_seconds must be at least 1".to_owned());
        }
        if let Some(schema) = &self.output_schema {
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
        Ok(())
    }
}

/// The budgets one run was given: the operator's sub-agent caps, lowered by the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Seconds.
    pub timeout_seconds: u64,
    /// Iterations.
    pub max_iterations: u32,
}

/// How a run is getting on, in order; advisory (dropped rather than waited for when the
/// caller reads too slowly).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskProgress {
    /// Still waiting for a slot.
    Waiting {
        /// The slots (all taken).
        slots: usize,
        /// Since when.
        waited: Duration,
    },
    /// The child is being started.
    Starting {
        /// The run's id.
        run_id: String,
    },
    /// The child runs.
    Started {
        /// Its pid.
        pid: u64,
        /// The run's budgets.
        limits: TaskLimits,
    },
    /// An iteration finished.
    Iteration {
        /// Its number.
        iteration: u64,
        /// Tool calls so far.
        tools: u64,
        /// Tokens so far.
        tokens: u64,
        /// The run's budgets.
        limits: TaskLimits,
    },
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct TaskReport {
    /// The run's id (its artifact folder's name).
    pub run_id: String,
    /// The child's result status (`success`, `partial`, `error`, `timeout`, …).
    pub status: String,
    /// Whether the child's result was read at all.
    pub parsed: bool,
    /// The run's summary.
    pub summary: String,
    /// Its error, when it failed.
    pub error: String,
    /// Why a partial run stopped (`iteration_budget`, `time_budget`).
    pub partial_reason: String,
    /// Iterations the child reported.
    pub iterations: u64,
    /// Tokens the child reported.
    pub tokens: u64,
    /// The child's own timing, else the parent's.
    pub seconds: f64,
    /// The budgets it had.
    pub limits: TaskLimits,
    /// Its artifacts that passed validation against its folder.
    pub artifacts: Vec<ArtifactRef>,
    /// A line per artifact dropped, saying why.
    pub dropped: Vec<String>,
}

impl TaskReport {
    /// Whether the run succeeded.
    pub fn succeeded(&self) -> bool {
        self.parsed && self.status == "success"
    }

    /// Why the run did not succeed, naming the budget when one stopped it.
    pub fn why_stopped(&self) -> String {
        let limits = &self.limits;
        let error = self.error.as_str();
        match (self.status.as_str(), self.partial_reason.as_str()) {
            ("partial", "iteration_budget") => {
                format!(
                    "the iteration budget ran out (max_iterations {}); the summary is partial",
                    limits.max_iterations
                )
            }
            ("partial", "time_budget") => {
                format!("the time budget ran out (timeout_seconds {}); the summary is partial", limits.timeout_seconds)
            }
            ("budget_exhausted", _) => format!("an execution budget ran out: {error}"),
            ("error", _) if error.starts_with("reached max iterations") => {
                format!("the iteration budget ran out (max_iterations {}): {error}", limits.max_iterations)
            }
            ("timeout", _) => {
                format!("the run's deadline passed (timeout_seconds {}): {error}", limits.timeout_seconds)
            }
            (status, _) if error.is_empty() => format!("the run ended with status {}", quote(status)),
            _ => error.to_owned(),
        }
    }
}

/// What every run shares: how to start a child, and the slots.
pub struct TaskRuns {
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
    sandbox: Option<odek_sandbox::Policy>,
    /// `~/.odek`, whose `config.json` a confined child gets on a descriptor.
    odek_home: PathBuf,
    slots: Arc<Semaphore>,
    max_runs: usize,
    shutdown: CancellationToken,
    active: ActiveRuns,
}

impl TaskRuns {
    /// The runs' settings from the runtime (provider, key, environment, the operator's
    /// sub-agent caps, the `--replay` script, read now) and `settings`; cancelling `shutdown`
    /// stops every run.
    pub fn new(
        runtime: &Runtime,
        settings: &TaskRunSettings,
        shutdown: CancellationToken,
    ) -> Result<Arc<TaskRuns>, TaskRunsError> {
        let resolved = runtime.settings();
        let config = &resolved.config;
        let setup = runtime.setup();
        let cwd = setup.sources.cwd.clone();
        let replay = match &resolved.replay {
            None if config.core.provider == REPLAY_PROVIDER => return Err(TaskRunsError::ReplayWithoutScript),
            None => None,
            Some(_) if config.core.provider != REPLAY_PROVIDER => return Err(TaskRunsError::ScriptWithoutReplay),
            Some(path) => {
                let script = ReplayScript::load(path).map_err(|error| TaskRunsError::Script(error.to_string()))?;
                Some(Arc::new(TaskReplay { source: path.display().to_string(), script }))
            }
        };
        let artifact_root = match &settings.artifact_root {
            Some(root) => cwd.join(root),
            None => setup.sources.odek_dir().join("artifacts").join("mcp"),
        };
        create_private_dir(&artifact_root).map_err(|error| TaskRunsError::ArtifactRoot {
            path: quote(&artifact_root.display().to_string()),
            error,
        })?;
        let parent_env: Vec<(String, String)> =
            setup.sources.env.iter().map(|(name, value)| (name.clone(), value.clone())).collect();
        let env =
            child_environment(&parent_env, &setup.loaded.secrets.names, delegation_depth(), resolved.api_key.is_some());
        let max_runs = settings.max_concurrent_runs.max(1);
        Ok(Arc::new(TaskRuns {
            program: this_program(),
            env,
            api_key: resolved.api_key.clone(),
            provider: config.core.provider.clone(),
            model: config.core.model.clone(),
            base_url: config.core.base_url.clone(),
            prompt_caching: (!config.core.prompt_caching).then_some(false),
            operator_timeout_seconds: config.subagent.timeout_seconds,
            operator_max_iterations: config.subagent.max_iterations,
            artifact_root,
            events_jsonl: settings
                .events_jsonl
                .as_ref()
                .map(|path| cwd.join(path).display().to_string())
                .unwrap_or_default(),
            cwd,
            replay,
            sandbox: runtime.sandbox().map(|sandbox| sandbox.policy().clone()),
            odek_home: setup.sources.odek_dir(),
            slots: Arc::new(Semaphore::new(max_runs)),
            max_runs,
            shutdown,
            active: ActiveRuns::default(),
        }))
    }

    /// Waits at most `wait` until every run has stopped (after the shutdown token was
    /// cancelled, each child gets SIGINT, then a kill).
    pub async fn wait_stopped(&self, wait: Duration) {
        let _ = tokio::time::timeout(wait, self.active.idle()).await;
    }

    /// Runs `request` to its report; its progress goes to `progress` (dropped when full), and
    /// `cancel` stops it.
    pub async fn run(
        self: Arc<TaskRuns>,
        request: TaskRequest,
        progress: mpsc::Sender<TaskProgress>,
        cancel: CancellationToken,
    ) -> Result<TaskReport, TaskRunError> {
        let _active = self.active.enter();
        request.check().map_err(TaskRunError::Invalid)?;
        let Some(_slot) = self.take_slot(&progress, &cancel).await else { return Err(TaskRunError::NotStarted) };
        let run_id = TaskId::mint().map_err(|error| TaskRunError::Failed(error.to_string()))?;
        let run_root = self.artifact_root.join(run_id.as_str());
        create_private_dir(&run_root)
            .map_err(|error| TaskRunError::Failed(format!("create artifact folder {}: {error}", run_root.display())))?;
        let (task, limits) = self.task_file(&request, &run_id, &run_root).map_err(TaskRunError::Failed)?;
        let confinement = match &self.sandbox {
            Some(policy) if task.is_untrusted() => {
                let mut own_state = vec![run_root.clone()];
                if !self.events_jsonl.is_empty() {
                    // A Landlock rule needs the file to exist: the child appends to it.
                    create_events_file(Path::new(&self.events_jsonl))
                        .map_err(|error| TaskRunError::Failed(format!("events-jsonl: {error}")))?;
                    own_state.push(PathBuf::from(&self.events_jsonl));
                }
                let confined = child_confinement(policy, &self.program, &task.base_url, &own_state, &self.odek_home)
                    .map_err(TaskRunError::Failed)?;
                Some(confined)
            }
            _ => None,
        };
        let task_dir = confinement.as_ref().map(|confined| confined.sandbox.policy().temp_dir.clone());
        let task_file = write_task_file(&task, task_dir.as_deref())
            .map(RemoveOnDrop)
            .map_err(|error| TaskRunError::Failed(format!("write task file: {error}")))?;
        let spec = ChildSpec {
            program: self.program.clone(),
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            api_key: self.api_key.clone(),
            task_file: task_file.0.clone(),
            timeout: Duration::from_secs(limits.timeout_seconds) + CHILD_DEADLINE_GRACE,
            confinement,
        };
        let _ = progress.try_send(TaskProgress::Starting { run_id: run_id.as_str().to_owned() });
        let stop = self.shutdown.child_token();
        let observer: RecordObserver = Arc::new(move |record: &Map<String, Value>| {
            if let Some(update) = record_progress(record, limits) {
                let _ = progress.try_send(update);
            }
        });
        let started = Instant::now();
        let child = run_child_observed(&spec, &stop, |_| {}, Some(observer));
        tokio::pin!(child);
        let report = tokio::select! {
            report = &mut child => report,
            () = cancel.cancelled() => {
                stop.cancel();
                let _ = child.await;
                return Err(TaskRunError::Cancelled);
            }
        };
        drop(task_file);
        let (artifacts, dropped) = verify_artifacts(&report.result, run_root).await;
        let result = &report.result;
        let text_of = |key: &str| result[key].as_str().unwrap_or_default().to_owned();
        Ok(TaskReport {
            run_id: run_id.as_str().to_owned(),
            status: text_of("status"),
            parsed: report.parsed,
            summary: text_of("summary"),
            error: text_of("error"),
            partial_reason: text_of("partial_reason"),
            iterations: result["iterations"].as_u64().unwrap_or_default(),
            tokens: result["tokens_used"].as_u64().unwrap_or_default(),
            seconds: result["duration_seconds"].as_f64().unwrap_or(started.elapsed().as_secs_f64()),
            limits,
            artifacts,
            dropped,
        })
    }

    /// Waits for a run slot, reporting while it waits; `None` when the run was cancelled or
    /// the runs are stopping first.
    async fn take_slot(
        &self,
        progress: &mpsc::Sender<TaskProgress>,
        cancel: &CancellationToken,
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
                    let waiting = TaskProgress::Waiting { slots: self.max_runs, waited: waiting_since.elapsed() };
                    let _ = progress.try_send(waiting);
                }
                () = cancel.cancelled() => return None,
                () = self.shutdown.cancelled() => return None,
            }
        }
    }

    /// The task file of one run and the limits it runs under.
    fn task_file(
        &self,
        request: &TaskRequest,
        run_id: &TaskId,
        run_root: &Path,
    ) -> Result<(TaskFile, TaskLimits), String> {
        let replay = match &self.replay {
            None => None,
            Some(replay) => {
                let source = format!("{} › subagent {}", replay.source, quote(&runes_with_ellipsis(&request.goal, 60)));
                let Some(script) = replay.script.subagent(&request.goal) else {
                    return Err(format!("replay {source}: the script has no subagents entry with this goal"));
                };
                Some(TaskReplay { source, script })
            }
        };
        let limits = TaskLimits {
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

/// A record of the child's progress stream as progress: its start, and every finished
/// iteration.
fn record_progress(record: &Map<String, Value>, limits: TaskLimits) -> Option<TaskProgress> {
    let number = |key: &str| record.get(key).and_then(Value::as_u64).unwrap_or_default();
    match record.get("type").and_then(Value::as_str).unwrap_or_default() {
        "subagent_started" => Some(TaskProgress::Started { pid: number("pid"), limits }),
        kind if kind == ITERATION_RECORD => Some(TaskProgress::Iteration {
            iteration: number("iteration"),
            tools: number("tools_called"),
            tokens: number("tokens_used"),
            limits,
        }),
        _ => None,
    }
}

/// The run's artifacts after validation against its own folder (off the executor: it hashes):
/// the refs that passed, and a line per dropped one.
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
        (checked.valid, checked.dropped)
    })
    .await;
    verified.unwrap_or_else(|error| (Vec::new(), vec![format!("  [artifact] verification failed: {error}")]))
}

/// The lower of the operator's cap and the request's (`None`: the operator's).
fn lower<T: Ord + Copy>(operator: T, asked: Option<T>) -> T {
    asked.map_or(operator, |asked| operator.min(asked))
}

/// A directory (and its parents) with mode 0700 for what odek creates.
fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// The events file made to exist (mode `0600`, never truncated), so a confined child can be
/// granted exactly it.
fn create_events_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().append(true).create(true).mode(0o600).open(path).map(drop)
}

/// How many runs are under way, so shutdown can wait for their children to be stopped.
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

/// One run under way; leaving it (however the run ends) may make the runs idle.
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(arguments: Value) -> TaskRequest {
        serde_json::from_value(arguments).unwrap()
    }

    #[test]
    fn requests_are_checked_with_clear_errors() {
        assert!(request(json!({})).check().unwrap_err().contains("goal is required"));
        let huge = "g".repeat(10 * 1024 * 1024);
        assert_eq!(
            request(json!({"goal": huge})).check().unwrap_err(),
            format!(
                "invalid arguments: goal is too large (10485760 bytes, max {MAX_GOAL_BYTES}); put bulky input in a \
                 file under the working directory and name the file in the goal"
            )
        );
        assert!(request(json!({"goal": "g", "max_iterations": 0})).check().is_err());
        assert!(request(json!({"goal": "g", "output_schema": "no"})).check().is_err());
        let accepted = request(json!({"goal": "g", "surprise": true, "max_iterations": 3}));
        assert!(accepted.check().is_ok());
        assert_eq!((accepted.goal.as_str(), accepted.max_iterations, accepted.trusted), ("g", Some(3), false));
    }

    #[test]
    fn the_request_only_lowers_the_operator_caps() {
        assert_eq!(lower(300_u64, Some(20)), 20);
        assert_eq!(lower(300_u64, Some(9_999)), 300);
        assert_eq!(lower(30_u32, None), 30);
    }

    #[test]
    fn the_child_records_become_progress() {
        let limits = TaskLimits { timeout_seconds: 60, max_iterations: 5 };
        let record = |value: Value| value.as_object().unwrap().clone();
        assert_eq!(
            record_progress(&record(json!({"type": "subagent_started", "pid": 42})), limits),
            Some(TaskProgress::Started { pid: 42, limits })
        );
        let iteration = json!({"type": ITERATION_RECORD, "iteration": 2, "tools_called": 3, "tokens_used": 900});
        assert_eq!(
            record_progress(&record(iteration), limits),
            Some(TaskProgress::Iteration { iteration: 2, tools: 3, tokens: 900, limits })
        );
        assert_eq!(record_progress(&record(json!({"type": "other"})), limits), None);
    }
}
