//! How a command ended, typed — [`CommandError`], in which nothing is an exit code — and the one
//! function that chooses the process's exit code from it, [`exit_code`]. `main.rs` prints what an
//! outcome still has to say and exits with that code. Libraries hand back outcomes (a run's
//! [`Outcome`], a check's [`Verdict`], a sub-agent's [`SubagentResult`]), never codes; this
//! module maps them.
//!
//! The codes: 0 success; 1 a failure (spec README §4: model, tool, start-up, any other error);
//! 2 `odek ext check` with warnings only, and a sub-agent that concluded on its time budget or
//! was stopped at its hard deadline; 3 a sub-agent's setup error; 4 an exhausted execution budget
//! (spec README §4, `subagents.md` §7); \[beyond\] 5 a final answer that never matched
//! `--output-schema` or checks that still failed, 6 a stalled run, 7 a denial under `--strict`;
//! `128 + <signal>` for a command stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129), and for
//! any second stop signal — except that a sub-agent stopped by SIGINT reports an error result
//! and exits 1 (`subagents.md` §7).

use odek::agent::subagent::result::SubagentResult;
use odek_conformance::Verdict;
use odek_contract::outcome::Outcome;

/// How a command failed.
#[derive(Debug)]
pub enum CommandError {
    /// A fatal error to print as `odek: <error>`.
    Fatal(String),
    /// The command already printed what went wrong: a failure without another message.
    Reported,
    /// A run (a turn of `run`, `continue`, `repl`) that ended in `outcome`, printed as
    /// `odek: <message>`.
    Run { outcome: Outcome, message: String },
    /// A run that ended in `outcome`, which the command already printed (`odek repl`'s last
    /// turn).
    ReportedRun(Outcome),
    /// A fatal error whose text is the whole line (`odek continue: …`), printed without the
    /// `odek: ` prefix.
    Verbatim(String),
    /// `odek ext check` printed its report, whose verdict is not a pass.
    Check(Verdict),
    /// `odek subagent` reported its result, and the run did not conclude.
    Subagent(SubagentEnd),
    /// The command failed after a stop signal (SIGINT, SIGTERM, SIGHUP) cancelled it: `error`
    /// is reported as usual, the exit is the signal's.
    Stopped { signal: StopSignal, error: Box<CommandError> },
    /// A second stop signal: the process ends at once, clean-up or not.
    StoppedAgain(StopSignal),
}

impl<E: std::fmt::Display> From<E> for CommandError {
    fn from(error: E) -> Self {
        CommandError::Fatal(error.to_string())
    }
}

/// How an `odek subagent` run that did not conclude ended (spec `subagents.md` §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubagentEnd {
    /// A setup error, before the loop started (its result says so).
    SetupFailed,
    /// The execution budget was exhausted, or the share-mode spawn gate found it spent.
    BudgetExhausted,
    /// The run concluded on its time budget, or the hard deadline stopped it.
    TimedOut,
    /// Any other error.
    Failed,
}

impl SubagentEnd {
    /// How the run behind `result` ended, or `None` when it concluded (a success, or a summary
    /// on the iteration budget).
    pub fn of(result: &SubagentResult) -> Option<SubagentEnd> {
        match (result.status.as_str(), result.partial_reason.as_str()) {
            ("success", _) | ("partial", "iteration_budget") => None,
            ("partial", "time_budget") => Some(SubagentEnd::TimedOut),
            ("budget_exhausted", _) => Some(SubagentEnd::BudgetExhausted),
            ("error", _) if result.hard_timeout => Some(SubagentEnd::TimedOut),
            _ => Some(SubagentEnd::Failed),
        }
    }
}

/// A signal that stops a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
    Hangup,
}

impl StopSignal {
    pub(crate) const ALL: [StopSignal; 3] = [StopSignal::Interrupt, StopSignal::Terminate, StopSignal::Hangup];

    pub(crate) fn number(self) -> i32 {
        match self {
            StopSignal::Interrupt => nix::libc::SIGINT,
            StopSignal::Terminate => nix::libc::SIGTERM,
            StopSignal::Hangup => nix::libc::SIGHUP,
        }
    }

    pub(crate) fn from_number(number: i32) -> Option<StopSignal> {
        StopSignal::ALL.into_iter().find(|signal| signal.number() == number)
    }

    /// The signal's name, for the final error line.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
            StopSignal::Hangup => "SIGHUP",
        }
    }

    /// `128 + <signal>`, the shell's convention for a process a signal ended.
    fn conventional_exit(self) -> u8 {
        u8::try_from(128 + self.number()).unwrap_or(u8::MAX)
    }
}

/// The process exit code of a command's outcome.
pub fn exit_code(outcome: &Result<(), CommandError>) -> u8 {
    match outcome {
        Ok(()) => 0,
        Err(error) => failure_code(error),
    }
}

/// The exit code of a run that ended in `outcome` (README "How a run ended").
pub fn outcome_code(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Success => 0,
        Outcome::ModelError | Outcome::ToolError | Outcome::Error => 1,
        Outcome::BudgetExceeded => 4,
        Outcome::InvalidOutput | Outcome::ChecksFailed => 5,
        Outcome::Stalled => 6,
        Outcome::Denied => 7,
        Outcome::Cancelled => StopSignal::Interrupt.conventional_exit(),
    }
}

fn failure_code(error: &CommandError) -> u8 {
    match error {
        CommandError::Fatal(_) | CommandError::Reported | CommandError::Verbatim(_) => 1,
        CommandError::Run { outcome, .. } | CommandError::ReportedRun(outcome) => outcome_code(*outcome),
        CommandError::Check(Verdict::Pass) => 0,
        CommandError::Check(Verdict::Fail) => 1,
        CommandError::Check(Verdict::Warn) => 2,
        CommandError::Subagent(SubagentEnd::Failed) => 1,
        CommandError::Subagent(SubagentEnd::TimedOut) => 2,
        CommandError::Subagent(SubagentEnd::SetupFailed) => 3,
        CommandError::Subagent(SubagentEnd::BudgetExhausted) => 4,
        // A sub-agent stopped by SIGINT reports an error result, and exits as one (§7).
        CommandError::Stopped { signal: StopSignal::Interrupt, error }
            if matches!(**error, CommandError::Subagent(_)) =>
        {
            failure_code(error)
        }
        CommandError::Stopped { signal, .. } => signal.conventional_exit(),
        CommandError::StoppedAgain(signal) => signal.conventional_exit(),
    }
}

#[cfg(test)]
mod tests {
    use odek::agent::subagent::result::RunEnd;
    use odek::llm::Usage;

    use super::*;

    fn stopped(signal: StopSignal, error: CommandError) -> u8 {
        exit_code(&Err(CommandError::Stopped { signal, error: Box::new(error) }))
    }

    #[test]
    fn failures_budgets_and_success() {
        assert_eq!(exit_code(&Ok(())), 0);
        assert_eq!(exit_code(&Err(CommandError::Fatal("boom".into()))), 1);
        assert_eq!(exit_code(&Err(CommandError::Reported)), 1);
        assert_eq!(exit_code(&Err(CommandError::Verbatim("odek continue: no session".into()))), 1);
        let run = |outcome| exit_code(&Err(CommandError::Run { outcome, message: "it ended".into() }));
        assert_eq!(run(Outcome::BudgetExceeded), 4);
        assert_eq!(exit_code(&Err(CommandError::ReportedRun(Outcome::BudgetExceeded))), 4);
    }

    /// The outcome table of the README, one row per outcome.
    #[test]
    fn every_outcome_has_its_exit_code() {
        let codes = Outcome::ALL.map(|outcome| (outcome.as_str(), outcome_code(outcome)));
        assert_eq!(
            codes,
            [
                ("success", 0),
                ("budget_exceeded", 4),
                ("stalled", 6),
                ("denied", 7),
                ("invalid_output", 5),
                ("checks_failed", 5),
                ("cancelled", 130),
                ("model_error", 1),
                ("tool_error", 1),
                ("error", 1),
            ]
        );
    }

    /// Moved from `interrupt.rs` (`StopSignal::exit_code`): the same codes, through the one map.
    #[test]
    fn conventional_exit_codes() {
        assert_eq!(stopped(StopSignal::Terminate, CommandError::Reported), 143);
        assert_eq!(stopped(StopSignal::Hangup, CommandError::Reported), 129);
        assert_eq!(stopped(StopSignal::Interrupt, CommandError::Reported), 130);
        assert_eq!(
            stopped(StopSignal::Interrupt, CommandError::Subagent(SubagentEnd::Failed)),
            1,
            "a sub-agent keeps §7's code"
        );
        assert_eq!(stopped(StopSignal::Interrupt, CommandError::Subagent(SubagentEnd::TimedOut)), 2);
        assert_eq!(StopSignal::from_number(nix::libc::SIGTERM), Some(StopSignal::Terminate));
        assert_eq!(StopSignal::from_number(0), None);
        assert_eq!(exit_code(&Err(CommandError::StoppedAgain(StopSignal::Interrupt))), 130);
        assert_eq!(exit_code(&Err(CommandError::StoppedAgain(StopSignal::Terminate))), 143);
    }

    /// The verdict of `odek ext check` (the test moved here with the mapping).
    #[test]
    fn ext_check_verdicts() {
        assert_eq!(
            [Verdict::Pass, Verdict::Fail, Verdict::Warn].map(|verdict| exit_code(&Err(CommandError::Check(verdict)))),
            [0, 1, 2],
            "0 all pass, 1 any fail, 2 warnings only"
        );
    }

    /// Moved from `odek::agent::subagent::result` (`exit_code_for`): the §7 codes of the same
    /// classified runs.
    #[test]
    fn subagent_results() {
        let code = |end: RunEnd| {
            let result = SubagentResult::from_run(&end, &[], Usage::default(), 1.0);
            SubagentEnd::of(&result).map_or(0, |end| exit_code(&Err(CommandError::Subagent(end))))
        };
        use odek::agent::run::{ITERATION_SUMMARY_PREFIX, TIME_SUMMARY_PREFIX};
        assert_eq!(code(RunEnd::Answer("done".into())), 0);
        assert_eq!(code(RunEnd::Answer(format!("{TIME_SUMMARY_PREFIX}\n\nx"))), 2);
        assert_eq!(code(RunEnd::Answer(format!("{ITERATION_SUMMARY_PREFIX}\n\nx"))), 0);
        assert_eq!(code(RunEnd::HardTimeout { seconds: 30 }), 2);
        assert_eq!(code(RunEnd::Cancelled), 1);
        assert_eq!(code(RunEnd::Failed("iteration 1: boom".into(), Outcome::ModelError)), 1);
        assert_eq!(code(RunEnd::Budget("execution budget exceeded: tool_calls observed 3 (limit 2)".into())), 4);
        assert_eq!(exit_code(&Err(CommandError::Subagent(SubagentEnd::SetupFailed))), 3, "setup errors are 3");
    }
}
