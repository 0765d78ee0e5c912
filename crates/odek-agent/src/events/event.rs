//! One `odek.event/v1` event: its envelope, the per-type `data` fields (spec `events.md` §3),
//! secret redaction of every string it carries (§9) and the single-line JSON shape (§1).
//!
//! An [`Event`] is what a producer builds with one constructor per type; the emitter stamps
//! `run_id`, `session_id` and `timestamp` and renders it with [`render_event_line`].

use std::fmt;

use odek_contract::outcome::Outcome;
use odek_contract::redaction::redact;
use serde::Serialize;
use serde_json::{Number, Value};
use sha2::{Digest, Sha256};

use super::EventError;
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
    data: Vec<(&'static str, Value)>,
}

/// Builds `data` from `(key, value)` pairs, keys ascending; `None` values are left out.
fn data_of<const N: usize>(fields: [(&'static str, Option<Value>); N]) -> Vec<(&'static str, Value)> {
    let mut data: Vec<_> = fields.into_iter().filter_map(|(key, value)| value.map(|value| (key, value))).collect();
    data.sort_unstable_by_key(|(key, _)| *key);
    data
}

fn some<T: Into<Value>>(value: T) -> Option<Value> {
    Some(value.into())
}

/// Durations in whole milliseconds, saturating.
fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl Event {
    fn new(
        event_type: &'static str,
        iteration: Option<u32>,
        tool: Option<&str>,
        data: Vec<(&'static str, Value)>,
    ) -> Event {
        // §1: `iteration` is 1-based and never written as 0.
        Event { event_type, iteration: iteration.filter(|n| *n > 0), tool: tool.map(str::to_owned), data }
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
    fn data(&self) -> serde_json::Map<String, Value> {
        self.data.iter().map(|(key, value)| ((*key).to_owned(), value.clone())).collect()
    }

    pub fn run_started(model: &str, sandbox: bool, max_iterations: u32) -> Event {
        let data =
            data_of([("model", some(model)), ("sandbox", some(sandbox)), ("max_iterations", some(max_iterations))]);
        Event::new("run_started", None, None, data)
    }

    pub fn mcp_server_started(server: &str, tools: usize, duration_ms: u64, protocol_version: &str) -> Event {
        let data = data_of([
            ("server", some(server)),
            ("tools", some(tools)),
            ("duration_ms", some(duration_ms)),
            ("protocol_version", some(protocol_version)),
        ]);
        Event::new("mcp_server_started", None, None, data)
    }

    pub fn mcp_server_failed(server: &str, error_class: &str) -> Event {
        let data = data_of([("server", some(server)), ("error_class", some(error_class))]);
        Event::new("mcp_server_failed", None, None, data)
    }

    /// `exit_status` is absent for HTTP servers.
    pub fn mcp_server_restarted(server: &str, restarts: u32, exit_status: Option<i32>) -> Event {
        let data = data_of([
            ("server", some(server)),
            ("restarts", some(restarts)),
            ("exit_status", exit_status.map(Value::from)),
        ]);
        Event::new("mcp_server_restarted", None, None, data)
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
        let data = data_of([
            ("call_id", some(call_id)),
            ("args_sha256", some(super::args_sha256(arguments))),
            ("args_bytes", some(super::args_bytes(arguments))),
            ("args_summary", args_summary),
            ("args", include_args.then(|| Value::from(arguments))),
        ]);
        Event::new("tool_call_started", Some(iteration), Some(tool), data)
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
        let data = data_of([
            ("call_id", some(call_id)),
            ("duration_ms", some(millis(duration))),
            ("result_bytes", some(output.len())),
            ("artifact_count", some(super::artifact_count(output))),
            ("truncated", observed_chars.map(|_| Value::Bool(true))),
            ("observed_chars", observed_chars.map(Value::from)),
        ]);
        Event::new("tool_call_completed", Some(iteration), Some(tool), data)
    }

    /// `error_class` is always `tool_error` (§8); the error text never appears.
    pub fn tool_call_failed(iteration: u32, tool: &str, call_id: &str, duration: std::time::Duration) -> Event {
        let data = data_of([
            ("call_id", some(call_id)),
            ("duration_ms", some(millis(duration))),
            ("error_class", some("tool_error")),
        ]);
        Event::new("tool_call_failed", Some(iteration), Some(tool), data)
    }

    pub fn plan_created(steps: usize, version: u64) -> Event {
        Event::new("plan_created", None, None, data_of([("steps", some(steps)), ("version", some(version))]))
    }

    pub fn plan_updated(
        steps: usize,
        done: usize,
        in_progress: usize,
        blocked: usize,
        pending: usize,
        version: u64,
    ) -> Event {
        let data = data_of([
            ("steps", some(steps)),
            ("done", some(done)),
            ("in_progress", some(in_progress)),
            ("blocked", some(blocked)),
            ("pending", some(pending)),
            ("version", some(version)),
        ]);
        Event::new("plan_updated", None, None, data)
    }

    /// The goal itself never appears: only `goal_sha256` of it.
    pub fn subagent_spawned(task_id: &str, pid: u32, depth: u32, timeout_seconds: u64, goal: &str) -> Event {
        let data = data_of([
            ("task_id", some(task_id)),
            ("pid", some(pid)),
            ("depth", some(depth)),
            ("timeout_seconds", some(timeout_seconds)),
            ("goal_sha256", some(goal_sha256(goal))),
        ]);
        Event::new("subagent_spawned", None, None, data)
    }

    pub fn subagent_concurrency_wait(task_index: usize, waited_ms: u64) -> Event {
        let data = data_of([("task_index", some(task_index)), ("waited_ms", some(waited_ms))]);
        Event::new("subagent_concurrency_wait", None, None, data)
    }

    /// `tool` is the tool the child was denied.
    pub fn subagent_denied(tool: &str, task_index: usize, class: &str, reason: &str) -> Event {
        let data = data_of([("task_index", some(task_index)), ("class", some(class)), ("reason", some(reason))]);
        Event::new("subagent_denied", None, Some(tool), data)
    }

    pub fn subagent_completed(task_id: &str, status: &str, outcome: SubagentOutcome) -> Event {
        let data = data_of([
            ("task_id", some(task_id)),
            ("status", some(status)),
            ("iterations", outcome.iterations.map(Value::from)),
            ("duration_seconds", outcome.duration_seconds.and_then(Number::from_f64).map(Value::Number)),
            ("tokens_used", outcome.tokens_used.map(Value::from)),
            ("artifact_count", outcome.artifact_count.map(Value::from)),
        ]);
        Event::new("subagent_completed", None, None, data)
    }

    /// `mode` is `proactive` or `survival`.
    pub fn context_trimmed(iteration: u32, mode: &str, dropped_groups: usize, truncated_results: usize) -> Event {
        let data = data_of([
            ("mode", some(mode)),
            ("dropped_groups", some(dropped_groups)),
            ("truncated_results", some(truncated_results)),
        ]);
        Event::new("context_trimmed", Some(iteration), None, data)
    }

    pub fn session_saved(iteration: u32, message_count: usize) -> Event {
        Event::new("session_saved", Some(iteration), None, data_of([("message_count", some(message_count))]))
    }

    /// Tokens are cumulative for the run; `tools_called` is the batch size (0 on the answer).
    pub fn iteration_completed(iteration: u32, input_tokens: u64, output_tokens: u64, tools_called: usize) -> Event {
        let data = data_of([
            ("input_tokens", some(input_tokens)),
            ("output_tokens", some(output_tokens)),
            ("tools_called", some(tools_called)),
        ]);
        Event::new("iteration_completed", Some(iteration), None, data)
    }

    /// `limit_name` is `runtime`, `tool_calls`, `input_tokens`, `output_tokens` or `cost_usd`.
    pub fn budget_exceeded(iteration: u32, limit_name: &str, observed: BudgetValue, limit: BudgetValue) -> Event {
        let data = data_of([
            ("limit_name", some(limit_name)),
            ("observed", Some(budget_value_json(observed))),
            ("limit", Some(budget_value_json(limit))),
        ]);
        Event::new("budget_exceeded", Some(iteration), None, data)
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
        let data = data_of([
            ("duration_ms", some(millis(duration))),
            ("input_tokens", some(input_tokens)),
            ("output_tokens", some(output_tokens)),
            ("outcome", some(outcome.as_str())),
            ("output_sha256", output.map(|written| Value::from(written.sha256.as_str()))),
            ("output_bytes", output.map(|written| Value::from(written.bytes))),
        ]);
        Event::new("run_completed", None, None, data)
    }

    /// `outcome` \[beyond\] says how the run ended, beside the spec's `error_class`.
    pub fn run_failed(duration: std::time::Duration, error_class: &str, outcome: Outcome) -> Event {
        let data = data_of([
            ("duration_ms", some(millis(duration))),
            ("error_class", some(error_class)),
            ("outcome", some(outcome.as_str())),
        ]);
        Event::new("run_failed", None, None, data)
    }

    /// A copy with `tool` and every string anywhere inside `data` passed through secret
    /// redaction (§9). `self` is left as it was; non-string values keep their JSON types.
    pub(crate) fn redacted(&self) -> Event {
        Event {
            event_type: self.event_type,
            iteration: self.iteration,
            tool: self.tool.as_deref().map(|tool| redact(tool).into_owned()),
            data: self.data.iter().map(|(key, value)| (*key, redact_value(value))).collect(),
        }
    }

    /// \[beyond\] A `--check` starts: `check_id` (`check-<n>`), `cycle` (1 for the first run of
    /// the checks).
    pub fn check_started(iteration: u32, check_id: &str, cycle: u32) -> Event {
        let data = data_of([("check_id", some(check_id)), ("cycle", some(cycle))]);
        Event::new("check_started", Some(iteration), None, data)
    }

    /// \[beyond\] A `--check` ended: `status` (`passed`, `failed`, `timed_out`, `denied`),
    /// `exit_code` when it exited, `duration_ms`, `output_bytes`; the command itself never
    /// appears.
    pub fn check_completed(iteration: u32, check: &CheckReport) -> Event {
        let data = data_of([
            ("check_id", some(check.check_id.as_str())),
            ("cycle", some(check.cycle)),
            ("status", some(check.status.as_str())),
            ("exit_code", check.exit_code.map(Value::from)),
            ("duration_ms", some(millis(check.duration))),
            ("output_bytes", some(check.output_bytes)),
        ]);
        Event::new("check_completed", Some(iteration), None, data)
    }
}

/// Redacts every string in `value` at any depth, into a new value.
fn redact_value(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(redact(text).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::Object(fields) => {
            Value::Object(fields.iter().map(|(key, value)| (key.clone(), redact_value(value))).collect())
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
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
    #[serde(skip_serializing_if = "DataFields::is_empty")]
    data: DataFields<'a>,
}

/// `data` written as a JSON object, in the fields' (ascending) order.
struct DataFields<'a>(&'a [(&'static str, Value)]);

impl DataFields<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for DataFields<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(key, value)| (*key, value)))
    }
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
        data: DataFields(&event.data),
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
