//! The `data` of every `odek.event/v1` type as a Rust type (spec `events.md` §3): what an event
//! carries is what its struct declares, and the published JSON Schema (`docs/schemas/`) is
//! generated from these structs ([`super::schema::event_schema`]), so the two cannot drift.
//!
//! A struct's doc comment says when the event is emitted; its fields' say what they hold. An
//! `Option` field is left out of the line when `None`. Adding a type: a struct here, one line
//! in [`event_types!`], a constructor in `event.rs`, then regenerate the schema.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde_json::{Map, Value};

use odek_contract::outcome::Outcome;
use odek_danger::DangerClass;
use odek_mcp::elicitation::{DeclineReason, ElicitationAction, ElicitationMode};

use crate::budget::LimitName;
use crate::finish::checks::CheckStatus;
use crate::liveness::Phase;
use crate::observer::TrimMode;

/// What every `data` struct is: serialisable, with a schema, and bound to its `type`.
pub(crate) trait EventData: Serialize {
    /// The event's `type`.
    const TYPE: &'static str;
}

/// Binds each struct to its `type` and lists them all for the schema, in one place.
macro_rules! event_types {
    ($($data:ident $(<$lt:lifetime>)? => $name:literal,)*) => {
        $(impl$(<$lt>)? EventData for $data$(<$lt>)? {
            const TYPE: &'static str = $name;
        })*

        /// Every event type with the schema of its `data`, in the spec's order (new types beside their kin).
        // `'a` names the structs' lifetime in the list; only the body uses it.
        #[allow(clippy::extra_unused_lifetimes)]
        pub(crate) fn data_schemas<'a>(generator: &mut SchemaGenerator) -> Vec<(&'static str, Schema)> {
            vec![$(($name, generator.root_schema_for::<$data$(<$lt>)?>()),)*]
        }
    };
}

event_types! {
    RunStarted<'a> => "run_started",
    McpServerStarted<'a> => "mcp_server_started",
    McpServerFailed<'a> => "mcp_server_failed",
    McpServerRestarted<'a> => "mcp_server_restarted",
    ElicitationAnswered<'a> => "elicitation_answered",
    ElicitationDeclined<'a> => "elicitation_declined",
    ToolCallStarted<'a> => "tool_call_started",
    ToolCallCompleted<'a> => "tool_call_completed",
    ToolCallFailed<'a> => "tool_call_failed",
    OperationDenied<'a> => "operation_denied",
    PlanCreated => "plan_created",
    PlanUpdated => "plan_updated",
    SubagentSpawned<'a> => "subagent_spawned",
    SubagentConcurrencyWait => "subagent_concurrency_wait",
    SubagentDenied<'a> => "subagent_denied",
    SubagentCompleted<'a> => "subagent_completed",
    ContextTrimmed<'a> => "context_trimmed",
    SessionSaved => "session_saved",
    IterationCompleted => "iteration_completed",
    BudgetExceeded<'a> => "budget_exceeded",
    ProviderFallback<'a> => "provider_fallback",
    RunCompleted<'a> => "run_completed",
    RunFailed<'a> => "run_failed",
    RunHeartbeat<'a> => "run_heartbeat",
    CheckStarted<'a> => "check_started",
    CheckCompleted<'a> => "check_completed",
}

/// The first event of every run.
#[derive(Serialize, JsonSchema)]
pub(crate) struct RunStarted<'a> {
    /// The model the run calls.
    pub model: &'a str,
    /// Whether shell commands run sandboxed.
    pub sandbox: bool,
    /// The iteration cap.
    pub max_iterations: u32,
}

/// \[beyond\] An MCP server connected at start-up.
#[derive(Serialize, JsonSchema)]
pub(crate) struct McpServerStarted<'a> {
    /// The server's configured name.
    pub server: &'a str,
    /// How many tools it exposes.
    pub tools: usize,
    /// How long the start took (spawn, `initialize`, `tools/list`).
    pub duration_ms: u64,
    /// The protocol version the server answered.
    pub protocol_version: &'a str,
}

/// \[beyond\] An MCP server failed at start-up or on a restart.
#[derive(Serialize, JsonSchema)]
pub(crate) struct McpServerFailed<'a> {
    /// The server's configured name.
    pub server: &'a str,
    /// Why, as a stable word (spec `mcp-client.md` §1).
    pub error_class: &'a str,
}

/// \[beyond\] An MCP server was restarted.
#[derive(Serialize, JsonSchema)]
pub(crate) struct McpServerRestarted<'a> {
    /// The server's configured name.
    pub server: &'a str,
    /// Restarts so far.
    pub restarts: u32,
    /// How the previous process ended; absent for HTTP servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
}

/// \[beyond\] Someone answered an MCP server's elicitation (a request for input): a person, or
/// the `accept_defaults` policy. Never what was answered.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ElicitationAnswered<'a> {
    /// The server's configured name.
    pub server: &'a str,
    /// `form` or `url`.
    #[schemars(schema_with = "elicitation_mode_schema")]
    pub mode: &'a str,
    /// What the server was told.
    #[schemars(schema_with = "elicitation_action_schema")]
    pub action: &'a str,
}

/// \[beyond\] odek answered an MCP server's elicitation itself, asking nobody: the configured
/// policy (a headless face), no answer in time, or a request it refused.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ElicitationDeclined<'a> {
    /// The server's configured name.
    pub server: &'a str,
    /// `form` or `url`.
    #[schemars(schema_with = "elicitation_mode_schema")]
    pub mode: &'a str,
    /// What the server was told (`decline` or `cancel`); absent when it got an error.
    // `default`: a custom schema would otherwise make the field required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "elicitation_action_schema")]
    pub action: Option<&'a str>,
    /// Why odek answered.
    #[schemars(schema_with = "decline_reason_schema")]
    pub reason: &'a str,
}

/// Each requested tool call, before any call of its batch runs.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ToolCallStarted<'a> {
    /// Pairs this event with the call's end (spec §4).
    pub call_id: &'a str,
    /// Lowercase hex SHA-256 of the raw argument string.
    pub args_sha256: String,
    /// The raw argument string's length in bytes.
    pub args_bytes: usize,
    /// Low-cardinality audit metadata (spec §6), when it can be extracted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_summary: Option<Map<String, Value>>,
    /// The raw arguments, redacted: only with `--events-include-args`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<&'a str>,
}

/// A tool call that succeeded.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ToolCallCompleted<'a> {
    /// Pairs this event with the call's start.
    pub call_id: &'a str,
    /// How long the call ran.
    pub duration_ms: u64,
    /// The output's length after redaction, before compression and the result delimiter.
    pub result_bytes: usize,
    /// Lines of the output that begin with `- artifact `.
    pub artifact_count: usize,
    /// \[beyond\] `true` exactly when `max_result_chars` cut the result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// \[beyond\] The characters the server returned, when the result was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_chars: Option<u64>,
}

/// A tool call that failed.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ToolCallFailed<'a> {
    /// Pairs this event with the call's start.
    pub call_id: &'a str,
    /// How long the call ran.
    pub duration_ms: u64,
    /// Always `tool_error`.
    pub error_class: &'a str,
}

/// \[beyond\] An operation the run refused — by the danger policy, the non-interactive policy, a
/// risk cap or an approval answered no — before the call's `tool_call_completed`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct OperationDenied<'a> {
    /// The refused call.
    pub call_id: &'a str,
    /// The operation's danger class.
    #[schemars(schema_with = "danger_class_schema")]
    pub class: &'a str,
    /// Why it was refused.
    pub reason: &'a str,
}

/// \[beyond\] A model call failed before its first byte (after its retries) and moved to the
/// next `fallback_models` entry, whose model answers from here on in this call.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ProviderFallback<'a> {
    /// The provider (a kind or a `providers` name) and model that failed.
    pub from_provider: &'a str,
    pub from_model: &'a str,
    /// The entry tried next.
    pub to_provider: &'a str,
    pub to_model: &'a str,
    /// The failure's class, as `run_failed.error_class` would name it.
    pub error_class: &'a str,
    /// The failure's message (redacted on emit like every string).
    pub error: &'a str,
}

/// A plan was created or replaced wholesale.
#[derive(Serialize, JsonSchema)]
pub(crate) struct PlanCreated {
    /// Steps in the plan.
    pub steps: usize,
    /// The plan's version.
    pub version: u64,
}

/// Any other version-bumping plan mutation.
#[derive(Serialize, JsonSchema)]
pub(crate) struct PlanUpdated {
    /// Steps in the plan.
    pub steps: usize,
    /// Steps done.
    pub done: usize,
    /// Steps in progress.
    pub in_progress: usize,
    /// Steps blocked.
    pub blocked: usize,
    /// Steps pending.
    pub pending: usize,
    /// The plan's version.
    pub version: u64,
}

/// A sub-agent process started.
#[derive(Serialize, JsonSchema)]
pub(crate) struct SubagentSpawned<'a> {
    /// The task's id.
    pub task_id: &'a str,
    /// The child's process id.
    pub pid: u32,
    /// The child's delegation depth.
    pub depth: u32,
    /// The child's hard deadline.
    pub timeout_seconds: u64,
    /// The first 8 bytes of SHA-256(goal) as 16 hex characters; the goal never appears.
    pub goal_sha256: String,
}

/// A task waited at least 5 s for a concurrency slot (once per task).
#[derive(Serialize, JsonSchema)]
pub(crate) struct SubagentConcurrencyWait {
    /// The task's index in its `delegate_tasks` call.
    pub task_index: usize,
    /// How long it waited.
    pub waited_ms: u64,
}

/// Once per policy denial a child reports (the envelope's `tool` is the denied tool).
#[derive(Serialize, JsonSchema)]
pub(crate) struct SubagentDenied<'a> {
    /// The task's index in its `delegate_tasks` call.
    pub task_index: usize,
    /// The denied operation's danger class.
    pub class: &'a str,
    /// Why it was denied.
    pub reason: &'a str,
}

/// A sub-agent finished.
#[derive(Serialize, JsonSchema)]
pub(crate) struct SubagentCompleted<'a> {
    /// The task's id.
    pub task_id: &'a str,
    /// The child's result status, or a parent-side one (`timeout`, `no_result`, …).
    pub status: &'a str,
    /// The child's iterations, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// The child's run time, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    /// The child's tokens, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_used: Option<u64>,
    /// Artifacts registered from the child, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_count: Option<u64>,
}

/// A trim dropped or truncated something.
#[derive(Serialize, JsonSchema)]
pub(crate) struct ContextTrimmed<'a> {
    /// `proactive` or `survival`.
    #[schemars(schema_with = "trim_mode_schema")]
    pub mode: &'a str,
    /// Message groups dropped.
    pub dropped_groups: usize,
    /// Tool results truncated.
    pub truncated_results: usize,
}

/// After each per-step session save.
#[derive(Serialize, JsonSchema)]
pub(crate) struct SessionSaved {
    /// Messages in the saved file.
    pub message_count: usize,
}

/// The end of each iteration.
#[derive(Serialize, JsonSchema)]
pub(crate) struct IterationCompleted {
    /// Input tokens of the run so far.
    pub input_tokens: u64,
    /// Output tokens of the run so far.
    pub output_tokens: u64,
    /// The batch size; `0` on the final answer.
    pub tools_called: usize,
}

/// An execution budget was exhausted.
#[derive(Serialize, JsonSchema)]
pub(crate) struct BudgetExceeded<'a> {
    /// Which limit.
    #[schemars(schema_with = "limit_name_schema")]
    pub limit_name: &'a str,
    /// What was observed: an integer, a float in USD for `cost_usd` (`null` if not finite).
    #[schemars(schema_with = "budget_value_schema")]
    pub observed: Value,
    /// The limit, in the same unit.
    #[schemars(schema_with = "budget_value_schema")]
    pub limit: Value,
}

/// The last event of a successful run.
#[derive(Serialize, JsonSchema)]
pub(crate) struct RunCompleted<'a> {
    /// How long the run took.
    pub duration_ms: u64,
    /// The run's input tokens.
    pub input_tokens: u64,
    /// The run's output tokens.
    pub output_tokens: u64,
    /// \[beyond\] How the run ended.
    #[schemars(schema_with = "outcome_schema")]
    pub outcome: Outcome,
    /// \[beyond\] Lowercase hex SHA-256 of what `--output-file` wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_sha256: Option<&'a str>,
    /// \[beyond\] The bytes `--output-file` wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
}

/// The last event of a failed run.
#[derive(Serialize, JsonSchema)]
pub(crate) struct RunFailed<'a> {
    /// How long the run took.
    pub duration_ms: u64,
    /// Why, as a stable word (spec §8).
    pub error_class: &'a str,
    /// \[beyond\] How the run ended.
    #[schemars(schema_with = "outcome_schema")]
    pub outcome: Outcome,
    /// \[beyond\] The phase that made no progress; only with `error_class: "stalled"`.
    // `default`: a custom schema would otherwise make the field required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "phase_schema")]
    pub phase: Option<&'a str>,
}

/// \[beyond\] Every `events.heartbeat_seconds` while the run is alive.
#[derive(Serialize, JsonSchema)]
pub(crate) struct RunHeartbeat<'a> {
    /// What the run is doing.
    #[schemars(schema_with = "phase_schema")]
    pub phase: &'a str,
    /// The tool calls running, in start order.
    pub call_ids: &'a [String],
    /// Milliseconds since the last progress of any kind.
    pub idle_ms: u64,
}

/// \[beyond\] A `--check` starts, after the final answer.
#[derive(Serialize, JsonSchema)]
pub(crate) struct CheckStarted<'a> {
    /// `check-<n>`, in the order the checks are configured.
    pub check_id: &'a str,
    /// The run of the checks, 1 for the first.
    pub cycle: u32,
}

/// \[beyond\] A `--check` ended; the command itself never appears.
#[derive(Serialize, JsonSchema)]
pub(crate) struct CheckCompleted<'a> {
    /// `check-<n>`.
    pub check_id: &'a str,
    /// The run of the checks, 1 for the first.
    pub cycle: u32,
    /// How it ended.
    #[schemars(schema_with = "check_status_schema")]
    pub status: &'a str,
    /// The exit status (128 + signal for a signal), when the command exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
    /// Bytes of output captured.
    pub output_bytes: u64,
}

fn check_status_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema(CheckStatus::ALL.iter().map(|status| status.as_str()))
}

fn words_schema(words: impl IntoIterator<Item = &'static str>) -> Schema {
    let words: Vec<&str> = words.into_iter().collect();
    json_schema!({"type": "string", "enum": words})
}

fn outcome_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema(Outcome::ALL.iter().map(|outcome| outcome.as_str()))
}

fn danger_class_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema(DangerClass::ALL.iter().map(|class| class.as_str()))
}

fn trim_mode_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema([TrimMode::Proactive, TrimMode::Survival].iter().map(|mode| mode.as_str()))
}

fn elicitation_mode_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema(ElicitationMode::ALL.iter().map(|mode| mode.as_str()))
}

fn elicitation_action_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema(ElicitationAction::ALL.iter().map(|action| action.as_str()))
}

fn decline_reason_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema(DeclineReason::ALL.iter().map(|reason| reason.as_str()))
}

fn limit_name_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema(LimitName::ALL.iter().map(|name| name.as_str()))
}

fn phase_schema(_: &mut SchemaGenerator) -> Schema {
    words_schema(Phase::ALL.iter().map(|phase| phase.as_str()))
}

fn budget_value_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["number", "null"]})
}
