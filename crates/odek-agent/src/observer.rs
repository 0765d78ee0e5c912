//! What the loop reports while it runs. The terminal display and (issue 4) the event stream both
//! consume these; the loop never formats output for either.

use std::time::Duration;

use odek_llm::{StreamObserver, Usage};

use crate::plan::PlanEvent;
use crate::tool::{Denial, Risk};

/// How a trim pass was triggered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimMode {
    Proactive,
    Survival,
}

impl TrimMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TrimMode::Proactive => "proactive",
            TrimMode::Survival => "survival",
        }
    }
}

/// How one tool call ended.
#[derive(Debug, Clone, Copy)]
pub enum CallResult<'a> {
    Completed {
        /// The output after redaction (and the untrusted wrapper), before compression.
        output: &'a str,
        /// `Some(observed_chars)` when `max_result_chars` cut it.
        observed_chars: Option<u64>,
    },
    Failed {
        /// The `error: …` output the model sees.
        output: &'a str,
    },
}

/// One thing that happened in the loop.
#[derive(Debug, Clone, Copy)]
pub enum LoopEvent<'a> {
    /// Before the model call of `iteration`.
    IterationStarted { iteration: u32 },
    /// The model answered.
    ModelResponded { iteration: u32, usage: Usage, totals: Usage, tool_calls: usize },
    /// A requested call, before any call of the batch runs.
    ToolCallStarted { iteration: u32, call_id: &'a str, tool: &'a str, arguments: &'a str, risk: Option<&'a Risk> },
    /// \[beyond\] The call was refused (before its `ToolCallFinished`).
    OperationDenied { iteration: u32, call_id: &'a str, tool: &'a str, denial: &'a Denial },
    /// A call ended (emitted after the batch, in call order); `edit`: \[beyond\] the file it
    /// changed, before and after; `artifacts`: \[beyond\] the verified refs its result carries.
    ToolCallFinished {
        iteration: u32,
        call_id: &'a str,
        tool: &'a str,
        duration: Duration,
        result: CallResult<'a>,
        edit: Option<&'a crate::tool::FileEdit>,
        artifacts: &'a [odek_contract::artifact_ref::ArtifactRef],
    },
    /// A trim dropped or truncated something.
    ContextTrimmed { iteration: u32, mode: TrimMode, dropped_groups: usize, truncated_results: usize },
    /// The session was saved after a completed step.
    SessionSaved { iteration: u32, message_count: usize },
    /// End of an iteration (`tools_called` = batch size, 0 on the final answer).
    IterationCompleted { iteration: u32, totals: Usage, tools_called: usize },
    /// \[beyond\] The model call moved to the next `fallback_models` entry.
    ProviderFallback { iteration: u32, fallback: &'a odek_llm::Fallback<'a> },
    /// An execution budget was exhausted (before the run fails with it).
    BudgetExceeded { iteration: u32, exceeded: &'a crate::budget::BudgetExceeded },
    /// A warning for the operator (already free of secrets).
    Warning { text: &'a str },
    /// \[beyond\] A `--check` starts (after the final answer of `iteration`).
    CheckStarted { iteration: u32, check_id: &'a str, cycle: u32 },
    /// \[beyond\] A `--check` ended, or was refused (`check.denial`).
    CheckCompleted { iteration: u32, check: &'a crate::finish::checks::CheckReport },
}

/// Receives the loop's events and streamed text. Implementations must not block.
pub trait LoopObserver: StreamObserver {
    fn on_event(&self, event: &LoopEvent<'_>);

    /// A plan mutation bumped the version (`plan.md` §5). Reported after the batch's
    /// `ToolCallStarted` events and before its `ToolCallFinished` events, in version order.
    fn on_plan_event(&self, _event: &PlanEvent) {}
}

/// Ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct SilentObserver;

impl StreamObserver for SilentObserver {}

impl LoopObserver for SilentObserver {
    fn on_event(&self, _event: &LoopEvent<'_>) {}
}
