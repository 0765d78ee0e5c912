//! `run_task`: a whole agent run for an MCP client, on the runtime's task runs
//! ([`odek::task_runs`]: an `odek subagent` child under the sub-agent rules, as `delegate_tasks`
//! runs one for a model). This face turns the call's arguments into a [`TaskRequest`], the run's
//! progress into `notifications/progress` (one per iteration), `notifications/cancelled` into
//! the run's cancellation, and its report into an `odek.tool-result/v1` envelope: the summary as
//! text, each artifact an `odek.artifact-ref/v1` `file://` ref with its sha256 and size measured
//! again. A run that did not succeed (a budget, a timeout, an error) is an `isError` result that
//! names why. Start at [`call_run_task`].

use std::sync::Arc;

use odek::task_runs::{TaskProgress, TaskReport, TaskRequest, TaskRunError, TaskRuns};
use odek_contract::quoting::quote;
use odek_contract::redaction::redact;
use odek_extension::{ArtifactRef, CallContext, Envelope, Server, ToolAnnotations, ToolDef, ToolResponse};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::builtins::NOT_AN_OBJECT;

/// Progress updates buffered between the run and the notifications; past this one is dropped
/// (progress is advisory, the run never waits on the client).
const PROGRESS_QUEUE: usize = 256;

/// Progress values while a call waits for a slot stay below this.
const WAITING_CEILING: f64 = 0.4;
/// The progress value sent as the child is spawned.
const STARTING_PROGRESS: f64 = 0.45;
/// The progress value sent once the child reports it runs.
const STARTED_PROGRESS: f64 = 0.5;

/// One `run_task` call, from its raw arguments to its answer.
async fn call_run_task(runs: Arc<TaskRuns>, call: Arc<CallContext>, arguments: Value) -> ToolResponse {
    let request = match parse_request(arguments) {
        Ok(request) => request,
        Err(message) => return ToolResponse::error(message),
    };
    let (updates, mut received) = mpsc::channel::<TaskProgress>(PROGRESS_QUEUE);
    let cancel = CancellationToken::new();
    let run = runs.run(request, updates, cancel.clone());
    tokio::pin!(run);
    let mut progress = Progress::new(&call);
    let outcome = loop {
        tokio::select! {
            outcome = &mut run => break outcome,
            Some(update) = received.recv() => progress.update(update).await,
            () = call.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
        }
    };
    // The run may end before its last updates were forwarded: they still go out, before the
    // answer, so every iteration is reported.
    while let Ok(update) = received.try_recv() {
        progress.update(update).await;
    }
    match outcome {
        Ok(_) | Err(TaskRunError::Cancelled | TaskRunError::NotStarted) if call.is_cancelled() => ToolResponse::NoReply,
        Ok(report) => answer(&report, progress.figures(&report)).await,
        Err(TaskRunError::NotStarted) => ToolResponse::error("run_task: odek mcp is stopping; the run was not started"),
        Err(TaskRunError::Invalid(message)) => ToolResponse::error(message),
        Err(error) => ToolResponse::error(format!("run_task: {error}")),
    }
}

/// The call's arguments as a checked request, or the error the client reads. Unknown members
/// are ignored (the contract's additive rule).
fn parse_request(arguments: Value) -> Result<TaskRequest, String> {
    let arguments = match arguments {
        Value::Object(_) => arguments,
        Value::Null => Value::Object(Map::new()),
        _ => return Err(NOT_AN_OBJECT.to_owned()),
    };
    let request: TaskRequest =
        serde_json::from_value(arguments).map_err(|error| format!("invalid arguments: {error}"))?;
    request.check()?;
    Ok(request)
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
    /// The latest iteration reported: its iteration and tokens so far.
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
    /// that finished no iteration has none of its own to report, so its report says.
    fn figures(&self, report: &TaskReport) -> Figures {
        self.latest.unwrap_or(Figures { iterations: report.iterations, tokens: report.tokens })
    }

    async fn send(&mut self, value: f64, total: Option<f64>, message: &str) {
        if self.call.progress_token().is_none() || value <= self.last {
            return;
        }
        self.last = value;
        // A client that stopped reading cannot be reported to; the run goes on regardless.
        let _ = self.call.progress(value, total, Some(&redact(message))).await;
    }

    async fn update(&mut self, update: TaskProgress) {
        match update {
            TaskProgress::Waiting { slots, waited } => {
                // Each a little further towards 0.5.
                let value = if self.last < 0.0 { 0.0 } else { self.last + (WAITING_CEILING - self.last) / 2.0 };
                let message = format!(
                    "waiting for a run slot ({slots} running, --max-concurrent-runs {slots}; waited {}s)",
                    waited.as_secs()
                );
                self.send(value, None, &message).await;
            }
            TaskProgress::Starting { run_id } => {
                self.send(STARTING_PROGRESS, None, &format!("run {run_id} starting")).await;
            }
            TaskProgress::Started { pid, limits } => {
                let total = Some(f64::from(limits.max_iterations));
                self.send(STARTED_PROGRESS, total, &format!("run started (pid {pid})")).await;
            }
            TaskProgress::Iteration { iteration, tools, tokens, limits } => {
                self.latest = Some(Figures { iterations: iteration, tokens });
                let message = format!(
                    "iteration {iteration} of at most {}: {tools} tool call(s), {tokens} tokens so far",
                    limits.max_iterations
                );
                self.send(iteration as f64, Some(f64::from(limits.max_iterations)), &message).await;
            }
        }
    }
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
/// progress reported them), the summary and the artifacts (measured again, off the executor);
/// `isError` unless the run succeeded, with the reason named.
async fn answer(report: &TaskReport, Figures { iterations, tokens }: Figures) -> ToolResponse {
    let validated = report.artifacts.clone();
    let measured = tokio::task::spawn_blocking(move || {
        let (mut valid, mut dropped) = (Vec::new(), Vec::new());
        for artifact in &validated {
            match outward_ref(artifact) {
                Ok(outward) => valid.push(outward),
                Err(error) => dropped.push(format!("  [artifact] dropped {}: {error}", quote(&artifact.id))),
            }
        }
        (valid, dropped)
    })
    .await;
    let (artifacts, measure_dropped) =
        measured.unwrap_or_else(|error| (Vec::new(), vec![format!("  [artifact] verification failed: {error}")]));
    let (run_id, status, seconds) = (&report.run_id, &report.status, report.seconds);
    let mut lines =
        vec![format!("run {run_id}: {status} · {iterations} iteration(s) · {seconds:.1}s · {tokens} tokens")];
    if !report.succeeded() {
        lines.push(format!("stopped: {}", report.why_stopped()));
    }
    if !report.summary.trim().is_empty() {
        lines.push(String::new());
        lines.push(report.summary.clone());
    }
    if !report.dropped.is_empty() || !measure_dropped.is_empty() {
        lines.push(String::new());
        lines.extend(report.dropped.iter().cloned());
        lines.extend(measure_dropped);
    }
    let mut envelope = Envelope::new(redact(&lines.join("\n")));
    for artifact in artifacts {
        envelope = envelope.with_artifact(artifact);
    }
    let mut response = envelope.into_response();
    if let ToolResponse::Result(result) = &mut response {
        result.is_error = !report.succeeded();
    }
    response
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

/// Adds `run_task` to `server`, its runs on `runs`.
pub(super) fn add_run_task(server: Server, runs: &Arc<TaskRuns>) -> Server {
    let runs = Arc::clone(runs);
    server.tool(definition(), move |call, arguments| call_run_task(Arc::clone(&runs), call, arguments))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_with_clear_errors() {
        assert_eq!(parse_request(json!([1])).unwrap_err(), NOT_AN_OBJECT);
        assert!(parse_request(json!({})).unwrap_err().contains("goal is required"));
        assert!(parse_request(json!({"goal": 7})).unwrap_err().starts_with("invalid arguments: "));
        let request = parse_request(json!({"goal": "g", "surprise": true, "max_iterations": 3})).unwrap();
        assert_eq!((request.goal.as_str(), request.max_iterations, request.trusted), ("g", Some(3), false));
    }
}
