//! One `odek.event/v1` event: its envelope, the per-type `data` fields (spec `events.md` §3),
//! secret redaction of every string it carries (§9) and the single-line JSON shape (§1).
//!
//! An [`Event`] is what a producer builds with one constructor per type; the emitter stamps
//! `run_id`, `session_id` and `timestamp` and renders it with [`render_event_line`].

use std::fmt;

use odek_contract::outcome::Outcome;
use odek_contract::redaction::{redact, redact_json};
use serde::Serialize;
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

use super::EventError;
use super::data::*;
use crate::budget::BudgetValue;
use crate::finish::checks::CheckReport;
use crate::finish::output_file::OutputWritten;

/// The `schema` value of every line.
const EVENT_SCHEMA: &str = "odek.event/v1";

/// The run identifier: 16 bytes from the OS CSPRNG as 32 lowercase hex characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunId(String);

impl RunId {
    /// Mints a fresh run ID. There is no fallback: without randomness there is no run ID.
    pub fn generate() -> Result<RunId, EventError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|err| EventError::Randomness(err.to_string()))?;
        Ok(RunId(hex::encode(bytes)))
    }

    /// An existing run ID (32 lowercase hex characters), e.g. one handed down to a child.
    pub fn parse(text: &str) -> Option<RunId> {
        let valid = text.len() == 32 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| RunId(text.to_owned()))
    }

    fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `budget_exceeded.observed` / `.limit`: integers, except floats in USD for `cost_usd`.
fn budget_value_json(value: BudgetValue) -> Value {
    match value {
        BudgetValue::Count(value) => Value::from(value),
        // A non-finite cost cannot be a JSON number; null keeps the line valid.
        BudgetValue::Usd(value) => Number::from_f64(value).map_or(Value::Null, Value::Number),
    }
}

/// The optional fields of `subagent_completed`, present when known.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SubagentOutcome {
    pub iterations: Option<u64>,
    pub duration_seconds: Option<f64>,
    pub tokens_used: Option<u64>,
    pub artifact_count: Option<u64>,
}

/// One event before it is stamped: its type, the optional `iteration` and `tool`, and `data`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    event_type: &'static str,
    iteration: Option<u32>,
    tool: Option<String>,
    /// `data`'s fields, keys ascending (the order they are written in).
    data: Map<String, Value>,
}

/// Durations in whole milliseconds, saturating.
fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Event {
    /// The event of `data`'s type; `None` fields of `data` are left out.
    fn of<D: EventData>(iteration: Option<u32>, tool: Option<&str>, data: D) -> Event {
        // A data struct holds strings, numbers, booleans and maps with string keys, which always
        // serialise; an empty `data` is the harmless fallback.
        let data = match serde_json::to_value(&data) {
            Ok(Value::Object(fields)) => odek_contract::canonical_json::sorted_keys(fields),
            _ => Map::new(),
        };
        // §1: `iteration` is 1-based and never written as 0.
        Event { event_type: D::TYPE, iteration: iteration.filter(|n| *n > 0), tool: tool.map(str::to_owned), data }
    }

    #[cfg(test)]
    fn iteration(&self) -> Option<u32> {
        self.iteration
    }

    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// `data` as a JSON object.
    #[cfg(test)]
    fn data(&self) -> Map<String, Value> {
        self.data.clone()
    }

    pub fn run_started(model: &str, sandbox: bool, max_iterations: u32) -> Event {
        Event::of(None, None, RunStarted { model, sandbox, max_iterations })
    }

    pub fn mcp_server_started(server: &str, tools: usize, duration_ms: u64, protocol_version: &str) -> Event {
        Event::of(None, None, McpServerStarted { server, tools, duration_ms, protocol_version })
    }

    pub fn mcp_server_failed(server: &str, error_class: &str) -> Event {
        Event::of(None, None, McpServerFailed { server, error_class })
    }

    /// `exit_status` is absent for HTTP servers.
    pub fn mcp_server_restarted(server: &str, restarts: u32, exit_status: Option<i32>) -> Event {
        Event::of(None, None, McpServerRestarted { server, restarts, exit_status })
    }

    /// \[beyond\] An elicitation someone answered (`action`), never with what.
    pub fn elicitation_answered(server: &str, mode: &str, action: &str) -> Event {
        Event::of(None, None, ElicitationAnswered { server, mode, action })
    }

    /// \[beyond\] An elicitation odek answered itself (`action`; `None`: with an error).
    pub fn elicitation_declined(server: &str, mode: &str, action: Option<&str>, reason: &str) -> Event {
        Event::of(None, None, ElicitationDeclined { server, mode, action, reason })
    }

    /// `arguments` is the raw string exactly as the provider sent it. It is hashed and measured;
    /// it appears itself (redacted on emit) only when `include_args` is set (§5).
    pub fn tool_call_started(
        iteration: u32,
        tool: &str,
        call_id: &str,
        arguments: &str,
        args_summary: Option<Value>,
        include_args: bool,
    ) -> Event {
        let data = ToolCallStarted {
            call_id,
            args_sha256: super::args_sha256(arguments),
            args_bytes: super::args_bytes(arguments),
            args_summary: args_summary.and_then(|summary| match summary {
                Value::Object(fields) => Some(fields),
                _ => None,
            }),
            args: include_args.then_some(arguments),
        };
        Event::of(Some(iteration), Some(tool), data)
    }

    /// `output` is the tool's output after redaction, before compression and the result
    /// delimiter (§7); `observed_chars` is `Some` exactly when `max_result_chars` cut it.
    pub fn tool_call_completed(
        iteration: u32,
        tool: &str,
        call_id: &str,
        duration: std::time::Duration,
        output: &str,
        observed_chars: Option<u64>,
    ) -> Event {
        let data = ToolCallCompleted {
            call_id,
            duration_ms: millis(duration),
            result_bytes: output.len(),
            artifact_count: super::artifact_count(output),
            truncated: observed_chars.map(|_| true),
            observed_chars,
        };
        Event::of(Some(iteration), Some(tool), data)
    }

    /// `error_class` is always `tool_error` (§8); the error text never appears.
    pub fn tool_call_failed(iteration: u32, tool: &str, call_id: &str, duration: std::time::Duration) -> Event {
        let data = ToolCallFailed { call_id, duration_ms: millis(duration), error_class: "tool_error" };
        Event::of(Some(iteration), Some(tool), data)
    }

    /// \[beyond\] A refused operation (`call_id`, the tool in the envelope, its danger `class`
    /// and the `reason`; redacted on emit like every string).
    pub fn operation_denied(iteration: u32, tool: &str, call_id: &str, class: &str, reason: &str) -> Event {
        Event::of(Some(iteration), Some(tool), OperationDenied { call_id, class, reason })
    }

    /// \[beyond\] A call moved to the next `fallback_models` entry.
    pub fn provider_fallback(iteration: u32, fallback: &odek_llm::Fallback<'_>) -> Event {
        let error = fallback.error.to_string();
        Event::of(
            Some(iteration),
            None,
            ProviderFallback {
                from_provider: fallback.from_provider,
                from_model: fallback.from_model,
                to_provider: fallback.to_provider,
                to_model: fallback.to_model,
                error_class: fallback.error.class(),
                error: &error,
            },
        )
    }

    pub fn plan_created(steps: usize, version: u64) -> Event {
        Event::of(None, None, PlanCreated { steps, version })
    }

    pub fn plan_updated(
        steps: usize,
        done: usize,
        in_progress: usize,
        blocked: usize,
        pending: usize,
        version: u64,
    ) -> Event {
        Event::of(None, None, PlanUpdated { steps, done, in_progress, blocked, pending, version })
    }

    /// The goal itself never appears: only `goal_sha256` of it.
    pub fn subagent_spawned(task_id: &str, pid: u32, depth: u32, timeout_seconds: u64, goal: &str) -> Event {
        let data = SubagentSpawned { task_id, pid, depth, timeout_seconds, goal_sha256: goal_sha256(goal) };
        Event::of(None, None, data)
    }

    pub fn subagent_concurrency_wait(task_index: usize, waited_ms: u64) -> Event {
        Event::of(None, None, SubagentConcurrencyWait { task_index, waited_ms })
    }

    /// `tool` is the tool the child was denied.
    pub fn subagent_denied(tool: &str, task_index: usize, class: &str, reason: &str) -> Event {
        Event::of(None, Some(tool), SubagentDenied { task_index, class, reason })
    }

    pub fn subagent_completed(task_id: &str, status: &str, outcome: SubagentOutcome) -> Event {
        let data = SubagentCompleted {
            task_id,
            status,
            iterations: outcome.iterations,
            // A non-finite duration cannot be a JSON number: left out.
            duration_seconds: outcome.duration_seconds.filter(|seconds| seconds.is_finite()),
            tokens_used: outcome.tokens_used,
            artifact_count: outcome.artifact_count,
        };
        Event::of(None, None, data)
    }

    /// `mode` is `proactive` or `survival`.
    pub fn context_trimmed(iteration: u32, mode: &str, dropped_groups: usize, truncated_results: usize) -> Event {
        Event::of(Some(iteration), None, ContextTrimmed { mode, dropped_groups, truncated_results })
    }

    pub fn session_saved(iteration: u32, message_count: usize) -> Event {
        Event::of(Some(iteration), None, SessionSaved { message_count })
    }

    /// Tokens are cumulative for the run; `tools_called` is the batch size (0 on the answer).
    pub fn iteration_completed(iteration: u32, input_tokens: u64, output_tokens: u64, tools_called: usize) -> Event {
        Event::of(Some(iteration), None, IterationCompleted { input_tokens, output_tokens, tools_called })
    }

    /// `limit_name` is `runtime`, `tool_calls`, `input_tokens`, `output_tokens` or `cost_usd`.
    pub fn budget_exceeded(iteration: u32, limit_name: &str, observed: BudgetValue, limit: BudgetValue) -> Event {
        let data =
            BudgetExceeded { limit_name, observed: budget_value_json(observed), limit: budget_value_json(limit) };
        Event::of(Some(iteration), None, data)
    }

    /// `outcome` \[beyond\] is how the run ended (`success` unless a later rule says otherwise);
    /// `output` \[beyond\] what `--output-file` wrote (`output_sha256`, `output_bytes`).
    pub fn run_completed(
        duration: std::time::Duration,
        input_tokens: u64,
        output_tokens: u64,
        outcome: Outcome,
        output: Option<&OutputWritten>,
    ) -> Event {
        let data = RunCompleted {
            duration_ms: millis(duration),
            input_tokens,
            output_tokens,
            outcome,
            output_sha256: output.map(|written| written.sha256.as_str()),
            output_bytes: output.map(|written| written.bytes),
        };
        Event::of(None, None, data)
    }

    /// `outcome` \[beyond\] says how the run ended, beside the spec's `error_class`; `phase`
    /// \[beyond\] is the phase that stalled (`error_class: "stalled"` only).
    pub fn run_failed(
        duration: std::time::Duration,
        error_class: &str,
        outcome: Outcome,
        phase: Option<&str>,
    ) -> Event {
        Event::of(None, None, RunFailed { duration_ms: millis(duration), error_class, outcome, phase })
    }

    /// A copy with `tool` and every string anywhere inside `data` passed through secret
    /// redaction (§9). `self` is left as it was; non-string values keep their JSON types.
    pub(crate) fn redacted(&self) -> Event {
        Event {
            event_type: self.event_type,
            iteration: self.iteration,
            tool: self.tool.as_deref().map(|tool| redact(tool).into_owned()),
            data: self.data.iter().map(|(key, value)| (key.clone(), redact_json(value))).collect(),
        }
    }

    /// \[beyond\] `run_heartbeat`: the run's `phase`, the running tool calls (`call_ids`, in
    /// start order) and `idle_ms` since the last progress of any kind.
    pub fn run_heartbeat(phase: &str, call_ids: &[String], idle: std::time::Duration) -> Event {
        Event::of(None, None, RunHeartbeat { phase, call_ids, idle_ms: millis(idle) })
    }

    /// \[beyond\] A `--check` starts: `check_id` (`check-<n>`), `cycle` (1 for the first run of
    /// the checks).
    pub fn check_started(iteration: u32, check_id: &str, cycle: u32) -> Event {
        Event::of(Some(iteration), None, CheckStarted { check_id, cycle })
    }

    /// \[beyond\] A `--check` ended: `status` (`passed`, `failed`, `timed_out`, `denied`),
    /// `exit_code` when it exited, `duration_ms`, `output_bytes`; the command itself never
    /// appears.
    pub fn check_completed(iteration: u32, check: &CheckReport) -> Event {
        let data = CheckCompleted {
            check_id: &check.check_id,
            cycle: check.cycle,
            status: check.status.as_str(),
            exit_code: check.exit_code,
            duration_ms: millis(check.duration),
            output_bytes: check.output_bytes,
        };
        Event::of(Some(iteration), None, data)
    }
}

/// `goal_sha256`: lowercase hex of the first 8 bytes of SHA-256(goal), 16 characters.
fn goal_sha256(goal: &str) -> String {
    let digest = Sha256::digest(goal.as_bytes());
    hex::encode(&digest[..8])
}

/// The envelope in the §1 key order (serde writes struct fields in declaration order).
#[derive(Serialize)]
struct Envelope<'a> {
    schema: &'static str,
    #[serde(rename = "type")]
    event_type: &'a str,
    run_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iteration: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    timestamp: &'a str,
    #[serde(skip_serializing_if = "Map::is_empty")]
    data: &'a Map<String, Value>,
}

/// The event as one compact JSON line ending in `\n`, keys in the §1 order and `data` keys
/// ascending (sorted when the event is built; a test pins it). `None` only if serialisation failed, which a
/// `serde_json::Value` cannot cause.
pub fn render_event_line(event: &Event, run_id: &RunId, session_id: Option<&str>, timestamp: &str) -> Option<String> {
    let envelope = Envelope {
        schema: EVENT_SCHEMA,
        event_type: event.event_type,
        run_id: run_id.as_str(),
        session_id,
        iteration: event.iteration,
        tool: event.tool.as_deref(),
        timestamp,
        data: &event.data,
    };
    let mut line = serde_json::to_string(&envelope).ok()?;
    line.push('\n');
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_is_32_lowercase_hex_and_fresh() {
        let first = RunId::generate().unwrap();
        let second = RunId::generate().unwrap();
        assert_eq!(first.as_str().len(), 32);
        assert!(first.as_str().chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        assert_ne!(first, second);
    }

    #[test]
    fn iteration_zero_is_never_written() {
        let event = Event::iteration_completed(0, 1, 2, 0);
        assert_eq!(event.iteration(), None);
    }

    #[test]
    fn goal_sha256_is_first_8_bytes() {
        assert_eq!(goal_sha256(""), "e3b0c44298fc1c14");
    }

    #[test]
    fn non_finite_cost_is_null() {
        let event = Event::budget_exceeded(1, "cost_usd", BudgetValue::Usd(f64::NAN), BudgetValue::Usd(0.5));
        assert_eq!(event.data()["observed"], Value::Null);
        assert_eq!(event.data()["limit"], Value::from(0.5));
    }
}
