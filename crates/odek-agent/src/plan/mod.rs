//! The built-in `plan` tool (spec `plan.md`): a short structured plan kept in engine state and
//! shown to the model every iteration in a protected system message that survives trimming.
//!
//! - `args` decodes the model's arguments, with the spec's tolerance for common deviations.
//! - `state` owns the plan itself: the four verbs, validation, normalisation and versions.
//! - `render` turns a plan into the render (the tool output) and the protected message.
//! - `resume` parses plan messages strictly back out of a transcript (`odek continue`).
//! - `board` is the run's shared plan ([`PlanBoard`]): the `plan` tool (`PlanTool`) mutates
//!   it, the loop restores it at the start of a run, drains its events after each batch and
//!   upserts its message.
//!
//! This module never emits events or touches the conversation by itself; the loop does both.
//! Start at [`PlanBoard`].

mod args;
mod board;
pub(crate) mod render;
mod resume;
mod state;

use odek_contract::quoting::quote;
use thiserror::Error;

pub use board::PLAN_TOOL_NAME;
pub use board::PlanBoard;
pub(crate) use board::PlanTool;
pub use render::{TRUNCATION_LINE, is_plan_message, plan_message, render_plan};
pub use resume::parse_plan_message;
pub use state::{PlanCounts, PlanEvent, PlanState, Status, Step};

/// Default `planning.max_steps` (steps).
const DEFAULT_MAX_STEPS: usize = 12;
/// Allowed `planning.max_steps` (steps).
const MAX_STEPS_RANGE: (usize, usize) = (1, 50);
/// Default `planning.max_render_chars` (runes).
const DEFAULT_MAX_RENDER_CHARS: usize = 2000;
/// Allowed `planning.max_render_chars` (runes).
const MAX_RENDER_CHARS_RANGE: (usize, usize) = (200, 8000);
/// Longest step id (UTF-8 bytes).
const MAX_ID_BYTES: usize = 32;
/// Longest step title after normalisation (UTF-8 bytes).
const MAX_TITLE_BYTES: usize = 200;

/// The two caps of the run's resolved `planning` configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanCaps {
    /// Most steps a plan may have.
    pub max_steps: usize,
    /// Longest render, in runes.
    pub max_render_chars: usize,
}

impl PlanCaps {
    /// The caps clamped into their ranges (the configuration layer already clamps; an embedder
    /// passing raw values gets the same guarantee).
    pub fn new(max_steps: usize, max_render_chars: usize) -> PlanCaps {
        PlanCaps {
            max_steps: max_steps.clamp(MAX_STEPS_RANGE.0, MAX_STEPS_RANGE.1),
            max_render_chars: max_render_chars.clamp(MAX_RENDER_CHARS_RANGE.0, MAX_RENDER_CHARS_RANGE.1),
        }
    }
}

impl Default for PlanCaps {
    fn default() -> PlanCaps {
        PlanCaps { max_steps: DEFAULT_MAX_STEPS, max_render_chars: DEFAULT_MAX_RENDER_CHARS }
    }
}

/// A rejected plan call. Every text is the spec's (`plan.md` §2, §4); the state is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanError {
    #[error("plan: parse args: {0}")]
    ParseArgs(String),
    #[error("plan: unknown verb {} (want create/update/complete/get)", quote(.0))]
    UnknownVerb(String),
    #[error("plan: create requires 'steps' (array of {{id,title,note}}); received keys: [{keys}]")]
    CreateRequiresSteps { keys: String },
    #[error("plan: update requires 'updates' (array of {{id,status,note}}); received keys: [{keys}]")]
    UpdateRequiresUpdates { keys: String },
    #[error("plan: create wants 1..{max_steps} steps, got {got}")]
    StepCount { max_steps: usize, got: usize },
    #[error("plan: step[{index}]: id is required")]
    IdRequired { index: usize },
    #[error("plan: step[{index}]: id is too long ({bytes} > 32 chars)")]
    IdTooLong { index: usize, bytes: usize },
    #[error("plan: step[{index}]: id {} must be a short token without whitespace or brackets", quote(.id))]
    IdNotToken { index: usize, id: String },
    #[error("plan: step[{index}]: duplicate step id {}", quote(.id))]
    DuplicateId { index: usize, id: String },
    #[error("plan: step[{index}]: title is required")]
    TitleRequired { index: usize },
    #[error("plan: step[{index}]: title is too long ({bytes} > 200 chars)")]
    TitleTooLong { index: usize, bytes: usize },
    #[error("plan: update: no updates given")]
    NoUpdates,
    #[error("plan: update: unknown step id {}", quote(.0))]
    UpdateUnknownId(String),
    #[error("plan: update: step[{index}]: unknown status {}", quote(.status))]
    UnknownStatus { index: usize, status: String },
    #[error("plan: complete: unknown step id {}", quote(.0))]
    CompleteUnknownId(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_are_clamped_into_their_ranges() {
        assert_eq!(PlanCaps::new(0, 10), PlanCaps { max_steps: 1, max_render_chars: 200 });
        assert_eq!(PlanCaps::new(99, 99_999), PlanCaps { max_steps: 50, max_render_chars: 8000 });
        assert_eq!(PlanCaps::default(), PlanCaps::new(12, 2000));
    }

    #[test]
    fn error_texts_are_the_specs() {
        let cases = [
            (PlanError::ParseArgs("boom".into()), "plan: parse args: boom"),
            (
                PlanError::UnknownVerb("del\"ete".into()),
                "plan: unknown verb \"del\\\"ete\" (want create/update/complete/get)",
            ),
            (
                PlanError::CreateRequiresSteps { keys: "title verb".into() },
                "plan: create requires 'steps' (array of {id,title,note}); received keys: [title verb]",
            ),
            (
                PlanError::UpdateRequiresUpdates { keys: "verb".into() },
                "plan: update requires 'updates' (array of {id,status,note}); received keys: [verb]",
            ),
            (PlanError::StepCount { max_steps: 12, got: 13 }, "plan: create wants 1..12 steps, got 13"),
            (PlanError::IdRequired { index: 0 }, "plan: step[0]: id is required"),
            (PlanError::IdTooLong { index: 1, bytes: 33 }, "plan: step[1]: id is too long (33 > 32 chars)"),
            (
                PlanError::IdNotToken { index: 2, id: "a b".into() },
                "plan: step[2]: id \"a b\" must be a short token without whitespace or brackets",
            ),
            (PlanError::DuplicateId { index: 3, id: "s1".into() }, "plan: step[3]: duplicate step id \"s1\""),
            (PlanError::TitleRequired { index: 4 }, "plan: step[4]: title is required"),
            (PlanError::TitleTooLong { index: 5, bytes: 201 }, "plan: step[5]: title is too long (201 > 200 chars)"),
            (PlanError::NoUpdates, "plan: update: no updates given"),
            (PlanError::UpdateUnknownId("x".into()), "plan: update: unknown step id \"x\""),
            (
                PlanError::UnknownStatus { index: 0, status: "finished".into() },
                "plan: update: step[0]: unknown status \"finished\"",
            ),
            (PlanError::CompleteUnknownId(String::new()), "plan: complete: unknown step id \"\""),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
