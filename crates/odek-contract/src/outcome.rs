//! A run's outcome \[beyond\]: the one word an operator's script reads to know how a run ended,
//! carried by `run_completed` / `run_failed` (`data.outcome`), the `--json` result object and
//! `odek subagent` results. Which outcome a run has is decided where the run ends (the agent and
//! the runtime); which exit code it gives is the binary's one exit-code function. This module
//! owns the words.

use serde::{Serialize, Serializer};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The run gave its final answer (and, when asked, it validated and the checks passed).
    Success,
    /// An execution budget ran out (`budget_exceeded` was emitted).
    BudgetExceeded,
    /// A phase deadline fired: no progress in the model, tools, MCP start-up or checks.
    Stalled,
    /// Under `--strict`: an operation was denied, an MCP server failed to start, or a tool the
    /// task named was not available.
    Denied,
    /// The final answer never matched `--output-schema`.
    InvalidOutput,
    /// A `--check` still failed when the check cycles ran out.
    ChecksFailed,
    /// The run was cancelled (a stop signal, a REPL's Ctrl-C, an embedder's token).
    Cancelled,
    /// The provider failed (after its retries): HTTP, transport, or a malformed answer.
    ModelError,
    /// A tool failed in a way that ends the run.
    ToolError,
    /// Anything else: configuration, start-up, the iteration cap without an answer, a save.
    Error,
}

impl Outcome {
    /// Every outcome, in the order the docs list them.
    pub const ALL: [Outcome; 10] = [
        Outcome::Success,
        Outcome::BudgetExceeded,
        Outcome::Stalled,
        Outcome::Denied,
        Outcome::InvalidOutput,
        Outcome::ChecksFailed,
        Outcome::Cancelled,
        Outcome::ModelError,
        Outcome::ToolError,
        Outcome::Error,
    ];

    /// The outcome's word on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::BudgetExceeded => "budget_exceeded",
            Outcome::Stalled => "stalled",
            Outcome::Denied => "denied",
            Outcome::InvalidOutput => "invalid_output",
            Outcome::ChecksFailed => "checks_failed",
            Outcome::Cancelled => "cancelled",
            Outcome::ModelError => "model_error",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
        }
    }

    /// The outcome named `word`, if any.
    pub fn parse(word: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|outcome| outcome.as_str() == word)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_one_word_that_parses_back() {
        let words: std::collections::BTreeSet<&str> = Outcome::ALL.iter().map(|outcome| outcome.as_str()).collect();
        assert_eq!(words.len(), Outcome::ALL.len());
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
            assert_eq!(serde_json::to_value(outcome).unwrap(), outcome.as_str());
        }
        assert_eq!(Outcome::parse("Success"), None);
    }
}
