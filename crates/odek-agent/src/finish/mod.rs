//! \[beyond\] The gates on a run's final answer (issue 17): `--output-schema`, the answer must be
//! JSON that matches a schema ([`output_schema`]); `--check`, commands that must pass once the
//! model says it is done ([`checks`]); and where an accepted answer is written (`--output-file`,
//! [`output_file`]).
//!
//! The loop hands every answer without tool calls to [`FinishGates::review`]. The schema gate
//! looks first, then the checks: a gate accepts the answer (the schema gate replaces it by its
//! compact JSON), sends the model a new user message and the loop goes on — an iteration like
//! any other, counted against every budget — or fails the run with a typed error
//! ([`RunError::InvalidOutput`], [`RunError::ChecksFailed`]). A run without gates accepts the
//! answer as it is, with no extra work. A gate never asks the model whether it complied: the
//! schema is checked here, the checks are run here.
//!
//! Start at [`FinishSettings`] and [`FinishGates::review`].

pub mod checks;
pub mod output_file;
pub mod output_schema;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::observer::LoopObserver;
use crate::run::{BatchApprover, RunError};
use crate::tool::ToolContext;
use checks::{CheckReport, ChecksGate};
use output_schema::{OutputSchemaGate, OutputSchemaSpec};

/// `--output-retries` when none is given: the answers after the first that may still fail.
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;
/// `--check-timeout` when none is given (seconds).
pub const DEFAULT_CHECK_TIMEOUT_SECONDS: u64 = 300;
/// `--max-check-cycles` when none is given: how many times failing checks go back to the model.
pub const DEFAULT_MAX_CHECK_CYCLES: u32 = 3;

/// What a run's final answer must satisfy.
#[derive(Debug, Clone)]
pub struct FinishSettings {
    /// `--output-schema` (or a task file's `output_schema`), compiled.
    pub output_schema: Option<Arc<OutputSchemaSpec>>,
    /// `--output-retries`.
    pub output_retries: u32,
    /// `--check` and `checks`: shell command lines, in order.
    pub checks: Vec<String>,
    /// `--check-timeout`: the deadline of each check.
    pub check_timeout: Duration,
    /// `--max-check-cycles`.
    pub max_check_cycles: u32,
}

impl Default for FinishSettings {
    fn default() -> FinishSettings {
        FinishSettings {
            output_schema: None,
            output_retries: DEFAULT_OUTPUT_RETRIES,
            checks: Vec::new(),
            check_timeout: Duration::from_secs(DEFAULT_CHECK_TIMEOUT_SECONDS),
            max_check_cycles: DEFAULT_MAX_CHECK_CYCLES,
        }
    }
}

impl FinishSettings {
    /// Whether any gate applies.
    pub fn is_empty(&self) -> bool {
        self.output_schema.is_none() && self.checks.is_empty()
    }
}

/// One run's gates and what they counted so far (retries, cycles, the last checks).
#[derive(Default)]
pub struct FinishGates {
    output: Option<OutputSchemaGate>,
    checks: Option<ChecksGate>,
}

impl std::fmt::Debug for FinishGates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinishGates")
            .field("output_schema", &self.output.is_some())
            .field("checks", &self.checks.is_some())
            .finish()
    }
}

/// What the loop gives a review besides the answer.
pub(crate) struct ReviewContext<'a> {
    /// The iteration whose model call gave the answer.
    pub(crate) iteration: u32,
    pub(crate) observer: &'a dyn LoopObserver,
    /// The run's tool context: the checks run under its policy, directory and cancellation.
    pub(crate) tool_context: &'a ToolContext,
    /// Present on interactive runs: asks before a `prompt`-class check runs.
    pub(crate) approver: Option<&'a dyn BatchApprover>,
}

/// How a review ended.
#[derive(Debug)]
pub(crate) enum Review {
    /// The answer stands: `answer` is what the run returns (the compact JSON under a schema),
    /// `output` the validated value.
    Accept { answer: String, output: Option<Value> },
    /// The model gets `feedback` as a new user message and the loop goes on; a run that cannot
    /// go on (its last iteration, a partial summary) fails with `failure` instead.
    Revise { feedback: String, failure: RunError },
    /// The run fails.
    Fail(RunError),
}

impl FinishGates {
    /// The gates `settings` asks for (none: every answer is accepted as it is).
    pub fn new(settings: &FinishSettings) -> FinishGates {
        FinishGates {
            output: settings
                .output_schema
                .as_ref()
                .map(|spec| OutputSchemaGate::new(Arc::clone(spec), settings.output_retries)),
            checks: (!settings.checks.is_empty())
                .then(|| ChecksGate::new(settings.checks.clone(), settings.check_timeout, settings.max_check_cycles)),
        }
    }

    /// Whether no gate applies.
    pub fn is_empty(&self) -> bool {
        self.output.is_none() && self.checks.is_none()
    }

    /// The schema the answer must match, for the provider's structured output.
    pub(crate) fn output_schema(&self) -> Option<&Value> {
        self.output.as_ref().map(OutputSchemaGate::schema)
    }

    /// The checks of the last cycle that ran (empty before any did, or without checks).
    pub fn last_checks(&self) -> &[CheckReport] {
        self.checks.as_ref().map(ChecksGate::last_cycle).unwrap_or_default()
    }

    /// Reviews a final answer: the schema, then the checks. Cancel-safe in the sense the loop
    /// needs: dropped at the runtime deadline, a running check's process group is killed.
    pub(crate) async fn review(&mut self, answer: &str, ctx: &ReviewContext<'_>) -> Review {
        let (answer, output) = match &mut self.output {
            Some(gate) => match gate.review(answer) {
                Review::Accept { answer, output } => (answer, output),
                other => return other,
            },
            None => (answer.to_owned(), None),
        };
        if let Some(gate) = &mut self.checks
            && let Some(verdict) = gate.review(ctx).await
        {
            return verdict;
        }
        Review::Accept { answer, output }
    }
}
