//! The `delegate_tasks` tool (spec `subagents.md` §2, §8): validates the call (its errors are
//! tool output), forces children to untrusted after untrusted ingest, mints task ids and
//! artifact folders, writes the task files, runs the children in parallel under the
//! process-wide slot limit, emits the sub-agent events and renders the results. Start at
//! [`DelegateTool`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use odek_contract::artifact_ref::ArtifactRef;
use odek_contract::envelope::RawArtifactRef;
use odek_contract::quoting::quote;
use odek_contract::runes::runes_with_ellipsis;
use odek_llm::{BoxFuture, ToolDefinition};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::artifacts::{ArtifactRegistry, TaskArtifactInput, TaskId, create_artifact_root, register_call_artifacts};
use super::confine::child_confinement;
use super::render::{TaskSection, render_results};
use super::spawn::{ChildReport, ChildSpec, child_environment, failure, run_child};
use super::task::{TaskFile, TaskReplay};
use crate::budget::{BudgetShare, InputGrant, ShareBudget};
use crate::events::{Event, EventStream, SubagentOutcome};
use crate::tool::{Tool, ToolContext, ToolError, ToolOutcome};

/// Most tasks in one call.
const MAX_TASKS_PER_CALL: usize = 8;
/// The `tool` of a `subagent_denied` for a refusal of the child's confinement (which of the
/// child's tools caused it, its parent cannot know).
const SANDBOX_TOOL: &str = "sandbox";
/// A wait for a slot longer than this emits `subagent_concurrency_wait` (once per task).
const CONCURRENCY_WAIT_NOTICE: Duration = Duration::from_secs(5);

const DESCRIPTION: &str = "Hand focused tasks to sub-agents that run in parallel, each as its own process with its own loop. \
Give every task a self-contained goal (and context or guidance when useful); children cannot ask you questions and have no \
approvals, so anything risky they attempt is denied and reported back to you. Each child's headline answer is capped at about \
2000 characters: bulky results come back as artifacts, which you read with artifact_read by id. Delegation depth is capped, \
so a child may not be able to delegate further.";

/// What `delegate_tasks` needs from the process that offers it.
#[derive(Debug, Clone, Default)]
pub struct DelegateSettings {
    /// The running odek executable.
    pub program: PathBuf,
    pub cwd: PathBuf,
    /// `~/.odek`: artifact folders go under `artifacts/`.
    pub odek_home: PathBuf,
    /// The parent's environment (filtered per child, see `child_environment`).
    pub parent_env: Vec<(String, String)>,
    /// Names loaded from `secrets.env`: never passed to a child.
    pub secret_names: Vec<String>,
    pub api_key: Option<String>,
    pub provider: String,
    pub model: String,
    pub base_url: String,
    /// `Some(false)` when this run sends no prompt-cache breakpoints: its children send none
    /// either (the task file's `prompt_caching`); `None` leaves them to the config.
    pub prompt_caching: Option<bool>,
    /// This process's delegation depth (`ODEK_SUBAGENT_DEPTH`, 0 at the top).
    pub depth: u32,
    pub max_depth: u32,
    /// Process-wide slots (fixed on first use).
    pub max_concurrency: usize,
    pub timeout: Duration,
    /// Profiles the operator defined.
    pub profiles: Vec<String>,
    /// The session the artifacts are filed under.
    pub session_id: Option<String>,
    /// This process's own effective trust is untrusted (a child that delegates).
    pub untrusted_parent: bool,
    /// Whether this process offers `artifact_read` (top level only).
    pub artifact_read: bool,
    /// The session's artifact registry: where the children's artifacts are registered, and the
    /// only one its `artifact_read` finds them in.
    pub registry: Arc<ArtifactRegistry>,
    /// Share mode (`subagent.budget_inherit: "share"`): the run's budget as children see it.
    pub share: Option<BudgetShare>,
    /// **[beyond]** The replay script this process answers from: each child gets the entry of
    /// `subagents` with its goal.
    pub replay: Option<Arc<TaskReplay>>,
    /// \[beyond\] The run's sandbox policy, when the sandbox is in force: an untrusted child runs
    /// confined by it as a whole (issue 20).
    pub sandbox: Option<odek_sandbox::Policy>,
}

/// The `delegate_tasks` tool.
pub struct DelegateTool {
    settings: Arc<DelegateSettings>,
    events: Option<Arc<EventStream>>,
}

impl DelegateTool {
    pub fn new(settings: DelegateSettings, events: Option<Arc<EventStream>>) -> DelegateTool {
        DelegateTool { settings: Arc::new(settings), events }
    }
}

/// The process-wide slots shared by every `delegate_tasks` call; sized on first use.
fn slots(size: usize) -> Arc<Semaphore> {
    static SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    Arc::clone(SLOTS.get_or_init(|| Arc::new(Semaphore::new(size.max(1)))))
}

/// One task of a call, as the model wrote it.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
struct TaskRequest {
    goal: Option<String>,
    context: String,
    guidance: String,
    trust_level: String,
    max_risk: String,
    profile: String,
}

#[derive(Debug, serde::Deserialize)]
struct CallArguments {
    #[serde(default)]
    tasks: Vec<TaskRequest>,
}

/// A call-level error as the tool's output: `{"error":"<message>"}`.
fn call_error(message: &str) -> ToolOutcome {
    ToolOutcome::text(json!({"error": message}).to_string())
}

/// §2's call-level checks, in order; `Err` is the message for [`call_error`].
fn validate_call(arguments: &str, depth: u32, max_depth: u32) -> Result<Vec<TaskRequest>, String> {
    let text = if arguments.trim().is_empty() { "{}" } else { arguments };
    let parsed: CallArguments = serde_json::from_str(text).map_err(|err| format!("parse failed: {err}"))?;
    if parsed.tasks.is_empty() {
        return Err("no tasks provided".to_owned());
    }
    if parsed.tasks.len() > MAX_TASKS_PER_CALL {
        return Err(format!("max {MAX_TASKS_PER_CALL} tasks per call"));
    }
    if let Some(index) =
        parsed.tasks.iter().position(|task| task.goal.as_deref().is_none_or(|goal| goal.trim().is_empty()))
    {
        return Err(format!("task {}: goal is required", index + 1));
    }
    if max_depth > 0 && depth >= max_depth {
        return Err(format!(
            "delegation depth limit reached (depth {depth}, max {max_depth}); do this work yourself instead of delegating"
        ));
    }
    Ok(parsed.tasks)
}

/// Writes the task file: `odek-task-<random>.json` in the temp directory — \[beyond\] for a
/// confined child, the run's sandbox temporary directory, which is the child's `TMPDIR` and the
/// one it may read — created exclusively with mode `0600`. The caller deletes it after the child
/// exits ([`RemoveOnDrop`]).
pub fn write_task_file(task: &TaskFile, dir: Option<&std::path::Path>) -> std::io::Result<PathBuf> {
    use std::io::Write;
    let mut builder = tempfile::Builder::new();
    builder.prefix("odek-task-").suffix(".json");
    let mut file = match dir {
        Some(dir) => builder.tempfile_in(dir)?,
        None => builder.tempfile()?,
    };
    file.write_all(serde_json::to_string(task).map_err(std::io::Error::other)?.as_bytes())?;
    file.flush()?;
    let (_, path) = file.keep().map_err(|err| err.error)?;
    Ok(path)
}

/// The task file, deleted on every way out of a task, a dropped call included. The child
/// deletes it after reading; this covers a child that never got that far.
pub struct RemoveOnDrop(pub PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A share-mode input-token grant, released on every way out of a task (a dropped call
/// included), charging the child's `tokens_used` as far as it is known.
struct SettleOnDrop<'a> {
    share: Option<&'a BudgetShare>,
    grant: Option<InputGrant>,
    tokens_used: u64,
}

impl Drop for SettleOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(share) = self.share {
            share.settle(self.grant.take(), self.tokens_used);
        }
    }
}

/// One task's outcome, before its artifacts are registered.
struct Finished {
    goal: String,
    report: ChildReport,
    /// Set for a spawned task: its id and artifact folder; `subagent_completed` follows
    /// registration.
    spawned: Option<(String, PathBuf)>,
}

impl DelegateTool {
    /// `budgets.md` §8 before a spawn, in share mode: the spawn gate, the input-token grant and
    /// the snapshot for the task file. `Err` is the task's result when it is not spawned.
    /// `remaining` counts this task and the call's others not yet spawned.
    fn share_gate(&self, remaining: usize) -> Result<(Option<ShareBudget>, Option<InputGrant>), Value> {
        let Some(share) = &self.settings.share else {
            return Ok((None, None));
        };
        if let Some(exceeded) = share.exhausted() {
            return Err(json!({"status": "budget_exhausted", "partial_reason": "execution_budget",
                "error": format!("subagent not spawned: {exceeded}"), "summary": "", "iterations": 0, "tokens_used": 0}));
        }
        let Ok(grant) = share.grant_input_tokens(remaining) else {
            return Err(json!({"status": "error",
                "error": "subagent not spawned: input-token budget fully committed to in-flight sub-agents",
                "summary": "", "files_changed": null, "iterations": 0, "tokens_used": 0}));
        };
        let mut snapshot = share.snapshot();
        if let (Some(snapshot), Some(InputGrant(tokens))) = (snapshot.as_mut(), grant) {
            snapshot.max_input_tokens = tokens;
        }
        Ok((snapshot, grant))
    }

    fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            events.emit(event);
        }
    }

    async fn run_task(
        &self,
        index: usize,
        request: TaskRequest,
        force_untrusted: bool,
        unspawned: &AtomicUsize,
        cancel: &CancellationToken,
    ) -> Finished {
        let settings = &self.settings;
        let goal = request.goal.clone().unwrap_or_default();
        // This task leaves the call's count of tasks not yet spawned exactly once, on whichever
        // path: the grant divides the headroom by what is still to come.
        let counted = std::sync::atomic::AtomicBool::new(false);
        let leave_unspawned = || {
            if !counted.swap(true, Ordering::AcqRel) {
                unspawned.fetch_sub(1, Ordering::AcqRel);
            }
        };
        let not_spawned = |task_id: &str, result: Value| {
            leave_unspawned();
            let status = result["status"].as_str().unwrap_or_default().to_owned();
            self.emit(Event::subagent_completed(task_id, &status, SubagentOutcome::default()));
            Finished { goal: goal.clone(), report: failure(result, None), spawned: None }
        };
        let task_id = match TaskId::mint() {
            Ok(task_id) => task_id,
            Err(err) => return not_spawned("", json!({"status": "error", "error": err.to_string()})),
        };
        let not_spawned = |result: Value| not_spawned(task_id.as_str(), result);
        // `profiles` always holds `default` (the operator's or the built-in one).
        if !request.profile.is_empty() && !settings.profiles.contains(&request.profile) {
            return not_spawned(json!({"status": "error", "error": format!(
                "unknown profile \"{}\" (define it in the top-level profiles config section)", request.profile)}));
        }
        let replay = match &settings.replay {
            None => None,
            Some(replay) => {
                let source = format!("{} › subagent {}", replay.source, quote(&runes_with_ellipsis(&goal, 60)));
                let Some(script) = replay.script.subagent(&goal) else {
                    return not_spawned(json!({"status": "error", "error": format!(
                        "replay {source}: the script has no subagents entry with this goal")}));
                };
                Some(TaskReplay { source, script })
            }
        };
        let artifact_root =
            match create_artifact_root(&settings.odek_home.join("artifacts"), settings.session_id.as_deref(), &task_id)
            {
                Ok(root) => root,
                Err(err) => {
                    return not_spawned(json!({"status": "error", "error": format!("create artifact folder: {err}")}));
                }
            };
        let mut task = TaskFile {
            task_id: task_id.as_str().to_owned(),
            protocol: super::task::STREAM_PROTOCOL,
            goal: goal.clone(),
            context: request.context,
            guidance: request.guidance,
            trust_level: if force_untrusted { "untrusted".to_owned() } else { request.trust_level },
            max_risk: request.max_risk,
            profile: request.profile,
            budget: None,
            parent_trust: if settings.untrusted_parent { "untrusted" } else { "trusted" }.to_owned(),
            artifact_root: artifact_root.to_string_lossy().into_owned(),
            provider: settings.provider.clone(),
            model: settings.model.clone(),
            base_url: settings.base_url.clone(),
            prompt_caching: settings.prompt_caching,
            replay,
            ..TaskFile::default()
        };

        let slots = slots(settings.max_concurrency);
        let waiting_since = Instant::now();
        let cancelled = || json!({"status": "cancelled", "error": "sub-agent cancelled"});
        let acquire = Arc::clone(&slots).acquire_owned();
        tokio::pin!(acquire);
        let notice = tokio::time::sleep(CONCURRENCY_WAIT_NOTICE);
        tokio::pin!(notice);
        let mut noticed = false;
        let permit = loop {
            tokio::select! {
                permit = &mut acquire => break permit,
                () = &mut notice, if !noticed => {
                    noticed = true;
                    self.emit(Event::subagent_concurrency_wait(index, millis(waiting_since.elapsed())));
                }
                () = cancel.cancelled() => return not_spawned(cancelled()),
            }
        };
        let Ok(_permit) = permit else {
            return not_spawned(json!({"status": "error", "error": "sub-agent slots closed"}));
        };
        if cancel.is_cancelled() {
            return not_spawned(cancelled());
        }
        // Share mode: the snapshot is taken right before the spawn, once a slot is free.
        let remaining = unspawned.load(Ordering::Acquire).max(1);
        leave_unspawned();
        let mut grant = match self.share_gate(remaining) {
            Ok((budget, grant)) => {
                task.budget = budget;
                SettleOnDrop { share: settings.share.as_ref(), grant, tokens_used: 0 }
            }
            Err(result) => return not_spawned(result),
        };
        // [beyond] An untrusted child runs in the sandbox as a whole, or not at all.
        let confinement = match &settings.sandbox {
            Some(policy) if task.is_untrusted() => {
                match child_confinement(
                    policy,
                    &settings.program,
                    &task.base_url,
                    std::slice::from_ref(&artifact_root),
                    &settings.odek_home,
                ) {
                    Ok(confinement) => Some(confinement),
                    Err(err) => return not_spawned(json!({"status": "error", "error": err})),
                }
            }
            _ => None,
        };
        let task_dir = confinement.as_ref().map(|confined| confined.sandbox.policy().temp_dir.clone());
        let task_file = match write_task_file(&task, task_dir.as_deref()) {
            Ok(path) => RemoveOnDrop(path),
            Err(err) => return not_spawned(json!({"status": "error", "error": format!("write task file: {err}")})),
        };
        let spec = ChildSpec {
            program: settings.program.clone(),
            cwd: settings.cwd.clone(),
            env: child_environment(
                &settings.parent_env,
                &settings.secret_names,
                settings.depth,
                settings.api_key.is_some(),
            ),
            api_key: settings.api_key.clone(),
            task_file: task_file.0.clone(),
            timeout: settings.timeout,
            confinement,
        };
        let report = run_child(&spec, cancel, |pid| {
            self.emit(Event::subagent_spawned(
                task_id.as_str(),
                pid,
                settings.depth + 1,
                settings.timeout.as_secs(),
                &goal,
            ));
        })
        .await;
        grant.tokens_used = report.result["tokens_used"].as_u64().unwrap_or(0);
        drop((task_file, grant));
        Finished { goal, report, spawned: Some((task_id.as_str().to_owned(), artifact_root)) }
    }

    /// After registration: `subagent_completed` for a spawned task, then one `subagent_denied`
    /// per denial in its parsed result, and one (tool `sandbox`) per refusal its confinement saw
    /// that the child could not (the parent's supervisor answers the child's commands).
    fn report_completed(&self, index: usize, task: &Finished, artifact_count: usize) {
        let result = &task.report.result;
        if let Some((task_id, _)) = &task.spawned {
            self.emit(Event::subagent_completed(
                task_id,
                result["status"].as_str().unwrap_or_default(),
                SubagentOutcome {
                    iterations: result["iterations"].as_u64(),
                    duration_seconds: result["duration_seconds"].as_f64(),
                    tokens_used: result["tokens_used"].as_u64(),
                    artifact_count: Some(artifact_count as u64),
                },
            ));
        }
        if task.report.parsed {
            for denial in result["denials"].as_array().into_iter().flatten() {
                let field = |key: &str| denial[key].as_str().unwrap_or_default();
                self.emit(Event::subagent_denied(field("tool"), index, field("class"), field("reason")));
            }
        }
        for denial in &task.report.sandbox_denials {
            self.emit(Event::subagent_denied(SANDBOX_TOOL, index, denial.class.as_str(), &denial.reason));
        }
    }
}

/// A task's registered artifacts: the rendered `artifacts:` block, and the entries as refs.
type Registered = (String, Vec<ArtifactRef>);

/// §10 for every task of the call (off the executor: it hashes files), in `registry`: each
/// task's rendered `artifacts:` block and its registered artifacts. A task's refs are what its
/// parsed result lists; entries that are not refs at all count as nothing.
async fn register_artifacts(registry: &Arc<ArtifactRegistry>, finished: &[Finished]) -> Vec<Registered> {
    let inputs: Vec<(usize, Vec<RawArtifactRef>, Option<PathBuf>)> = finished
        .iter()
        .enumerate()
        .map(|(index, task)| {
            let refs = if task.report.parsed {
                task.report.result["artifacts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|entry| serde_json::from_value(entry.clone()).ok())
                    .collect()
            } else {
                Vec::new()
            };
            (index + 1, refs, task.spawned.as_ref().map(|(_, root)| root.clone()))
        })
        .collect();
    let registry = Arc::clone(registry);
    let registered = tokio::task::spawn_blocking(move || {
        let tasks: Vec<TaskArtifactInput<'_>> = inputs
            .iter()
            .map(|(task_number, refs, root)| TaskArtifactInput {
                task_number: *task_number,
                refs,
                artifact_root: root.as_deref(),
            })
            .collect();
        register_call_artifacts(&registry, &tasks)
            .into_iter()
            .map(|section| {
                let refs = section.refs();
                (section.rendered, refs)
            })
            .collect::<Vec<_>>()
    })
    .await;
    registered.unwrap_or_else(|_| vec![(String::new(), Vec::new()); finished.len()])
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Tool for DelegateTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "delegate_tasks".into(),
            description: DESCRIPTION.into(),
            parameters: json!({"type":"object","required":["tasks"],"properties":{
                "tasks":{"type":"array","minItems":1,"maxItems":8,"items":{"type":"object","required":["goal"],"properties":{
                    "goal":{"type":"string"},"context":{"type":"string"},"guidance":{"type":"string"},
                    "trust_level":{"type":"string","enum":["trusted","untrusted"]},
                    "max_risk":{"type":"string","enum":["safe","local_write","system_write","destructive","code_execution","network_egress","install","blocked"]},
                    "profile":{"type":"string"}}}},
                "description":{"type":"string"}}}),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let tasks = match validate_call(arguments, self.settings.depth, self.settings.max_depth) {
                Ok(tasks) => tasks,
                Err(message) => return Ok(call_error(&message)),
            };
            let force_untrusted = ctx.untrusted_ingested.load(Ordering::Acquire);
            let unspawned = AtomicUsize::new(tasks.len());
            let runs = tasks
                .into_iter()
                .enumerate()
                .map(|(index, request)| self.run_task(index, request, force_untrusted, &unspawned, &ctx.cancel));
            let finished = futures_util::future::join_all(runs).await;
            let blocks = register_artifacts(&self.settings.registry, &finished).await;
            let mut sections = Vec::with_capacity(finished.len());
            let mut artifacts = Vec::new();
            for (index, (task, (block, refs))) in finished.iter().zip(blocks).enumerate() {
                self.report_completed(index, task, refs.len());
                artifacts.extend(refs);
                sections.push(TaskSection {
                    goal: &task.goal,
                    result: &task.report.result,
                    parsed: task.report.parsed,
                    raw_stdout: &task.report.raw_stdout,
                    artifacts_block: block,
                });
            }
            Ok(ToolOutcome::untrusted(render_results(&sections, self.settings.artifact_read), "delegate_tasks")
                .with_artifacts(artifacts))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_errors_are_the_spec_texts() {
        assert!(validate_call("{", 0, 2).unwrap_err().starts_with("parse failed: "));
        assert_eq!(validate_call(r#"{"tasks":[]}"#, 0, 2).unwrap_err(), "no tasks provided");
        let nine = json!({"tasks": vec![json!({"goal": "g"}); 9]}).to_string();
        assert_eq!(validate_call(&nine, 0, 2).unwrap_err(), "max 8 tasks per call");
        assert_eq!(
            validate_call(r#"{"tasks":[{"goal":"a"},{"context":"c"}]}"#, 0, 2).unwrap_err(),
            "task 2: goal is required"
        );
        assert_eq!(
            validate_call(r#"{"tasks":[{"goal":"a"}]}"#, 2, 2).unwrap_err(),
            "delegation depth limit reached (depth 2, max 2); do this work yourself instead of delegating"
        );
        assert_eq!(validate_call(r#"{"tasks":[{"goal":"a"}]}"#, 5, 0).unwrap().len(), 1, "max_depth 0 = no limit");
    }
}
