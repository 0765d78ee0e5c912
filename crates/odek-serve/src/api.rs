//! The HTTP API's bodies: what each route takes and answers, as types. The handlers speak
//! them and the OpenAPI document ([`crate::openapi`]) is generated from them, so the two
//! cannot drift. Unknown request fields are ignored; every answer may grow fields.

use std::path::PathBuf;

use odek::agent::session::IndexEntry;
use odek::host::LowerLimits;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::runs::{ArtifactView, RunView, Status, Step, Usage};

/// Check commands one run may name.
pub const MAX_CHECKS: usize = 16;

/// The longest check command, in bytes.
pub const MAX_CHECK_BYTES: usize = 4096;

/// `POST /api/runs`: a task for a new run.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StartRun {
    /// What the agent is to do (at most 1 MiB).
    pub task: String,
    /// Run it as the next turn of this saved session (else a new session).
    pub session_id: Option<String>,
    /// The run's working directory, absolute (default: the one `odek serve` started in).
    pub cwd: Option<PathBuf>,
    /// The model (default: the configured one; a saved session's own).
    pub model: Option<String>,
    /// Budgets, each at most the operator's (see `GET /api/limits`).
    #[serde(default)]
    pub limits: LowerLimits,
    /// The plan tool on or off.
    pub planning: Option<bool>,
    /// A JSON Schema (2020-12) the final answer must match, as `--output-schema`.
    pub output_schema: Option<Value>,
    /// Command lines every final answer must pass, as `--check` (run under the danger policy).
    #[serde(default)]
    pub checks: Vec<String>,
}

impl StartRun {
    /// What is wrong with the request before anything is opened.
    pub fn refused(&self) -> Option<String> {
        if self.task.trim().is_empty() {
            return Some("task is required (a non-empty string)".to_owned());
        }
        if self.checks.len() > MAX_CHECKS {
            return Some(format!("checks: at most {MAX_CHECKS} commands"));
        }
        let bad_check =
            |check: &String| check.trim().is_empty() || check.len() > MAX_CHECK_BYTES || check.contains('\0');
        if self.checks.iter().any(bad_check) {
            return Some(format!("checks: each a non-empty command line of at most {MAX_CHECK_BYTES} bytes"));
        }
        if self.output_schema.as_ref().is_some_and(|schema| !schema.is_object() && !schema.is_boolean()) {
            return Some("output_schema must be a JSON Schema (an object)".to_owned());
        }
        None
    }
}

/// `POST /api/runs` accepted.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunStarted {
    /// The run's id: the `run_id` of its events.
    pub run_id: String,
    /// The session it is a turn of.
    pub session_id: String,
}

/// `GET /api/runs`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunList {
    /// Every run remembered (the latest 1000), newest first.
    pub runs: Vec<RunView>,
}

/// `POST /api/runs/{id}/cancel` accepted.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Cancelling {
    /// The run.
    pub run_id: String,
    /// Always true: its stream ends with the run's last event.
    pub cancelling: bool,
}

/// An answer to an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// This call.
    Allow,
    /// Refuse this call.
    Deny,
    /// This call, and every later one of the same tool and operation in the run.
    AllowForRun,
}

/// `POST /api/runs/{id}/approvals/{approval_id}`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Decision {
    /// The answer.
    pub decision: DecisionKind,
}

/// An approval answered.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Decided {
    /// The approval.
    pub approval_id: u64,
    /// The answer given.
    pub decision: DecisionKind,
}

/// What the person does with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationActionKind {
    /// Submit the form's content (URL mode: agree to open the page).
    Accept,
    /// Refuse.
    Decline,
    /// Dismiss without a choice.
    Cancel,
}

/// `POST /api/runs/{id}/elicitations/{elicitation_id}`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct ElicitationReply {
    /// The answer.
    pub action: ElicitationActionKind,
    /// With `accept` in form mode: the form's values by field name, each fitting its field
    /// (every required one present). Ignored with `decline` and `cancel`; none in URL mode.
    #[serde(default)]
    pub content: Option<serde_json::Map<String, Value>>,
}

/// An elicitation answered.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ElicitationReplied {
    /// The elicitation.
    pub elicitation_id: u64,
    /// The answer given (what was filled in is not repeated).
    pub action: ElicitationActionKind,
}

/// `GET /api/sessions`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionList {
    /// Every saved session, newest first.
    pub sessions: Vec<IndexEntry>,
}

/// `GET /api/limits`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Limits {
    /// The operator's budgets for a run in the default working directory (`null`: none).
    pub limits: LowerLimits,
    /// Runs that may run at once; more are refused with 429.
    pub max_concurrent_runs: usize,
}

/// `GET /api/usage`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UsageTotals {
    /// Tokens (and estimated cost) of every run remembered.
    pub usage: Usage,
    /// Runs running now.
    pub running_runs: usize,
}

/// `GET /healthz`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Health {
    /// Always `ok` while serving.
    pub status: String,
    /// Runs running now.
    pub running_runs: usize,
}

/// Every error answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// What went wrong, for a person.
    pub error: String,
}
