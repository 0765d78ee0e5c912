//! The commands of the `odek` binary. Each returns `Ok(())` or a [`CommandError`] (the typed
//! outcome of [`crate::outcome`], which also chooses the exit code).

pub mod acp;
pub mod ext;
pub mod mcp;
pub mod repl;
pub mod run;
pub mod serve;
pub mod session;
pub mod subagent;

use crate::cli::Command;
use crate::interrupt::received_stop_signal;
use odek_contract::outcome::Outcome;

use crate::outcome::{CommandError, StopSignal};

/// `--max-concurrent-runs`: `default` when not given, else an integer from 1 to `max`.
pub(crate) fn max_concurrent_runs(value: Option<&str>, default: usize, max: usize) -> Result<usize, CommandError> {
    let Some(value) = value else { return Ok(default) };
    value.trim().parse::<usize>().ok().filter(|runs| (1..=max).contains(runs)).ok_or_else(|| {
        CommandError::Fatal(format!(
            "--max-concurrent-runs: want an integer from 1 to {max}, got {}",
            odek_contract::quoting::quote(value)
        ))
    })
}

/// Runs one parsed command.
pub async fn run(command: Command) -> Result<(), CommandError> {
    let outcome = match command {
        Command::Ext(command) => ext::run(command).await,
        Command::Run(args) => run::run(args).await,
        Command::Continue(args) => run::continue_session(args).await,
        Command::Repl(args) => repl::run(args).await,
        Command::Session(command) => session::run(command).await,
        Command::Subagent(args) => subagent::run(&args.flags).await,
        Command::Mcp(args) => mcp::run(args).await,
        Command::Acp(args) => acp::run(&args).await,
        Command::Serve(args) => serve::run(&args).await,
    };
    outcome.map_err(stopped_by_signal)
}

/// A failure after a stop signal is the signal's failure (a command that finished despite the
/// signal keeps its success, and a budget stop keeps exit 4). The error line names the signal
/// unless it was SIGINT, whose line stays what a cancelled run always printed.
fn stopped_by_signal(error: CommandError) -> CommandError {
    let Some(signal) = received_stop_signal() else {
        return error;
    };
    // Exit 4 means the budget and only the budget (spec README §4), signal or not.
    if matches!(
        error,
        CommandError::Run { outcome: Outcome::BudgetExceeded, .. } | CommandError::ReportedRun(Outcome::BudgetExceeded)
    ) {
        return error;
    }
    let named = |text: String| format!("{text} ({})", signal.name());
    let error = match error {
        CommandError::Fatal(text) if signal != StopSignal::Interrupt => CommandError::Fatal(named(text)),
        CommandError::Run { outcome, message } if signal != StopSignal::Interrupt => {
            CommandError::Run { outcome, message: named(message) }
        }
        other => other,
    };
    CommandError::Stopped { signal, error: Box::new(error) }
}
