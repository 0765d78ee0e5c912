//! The commands of the `odek` binary. Each returns `Ok(())` or a [`CommandError`]; `main.rs`
//! maps that to the exit code.

pub mod ext;
pub mod interrupt;
pub mod run;
pub mod session;
pub mod subagent;

use crate::cli::Command;

/// How a command failed.
#[derive(Debug)]
pub enum CommandError {
    /// A fatal error to print as `odek: <error>`.
    Fatal(String),
    /// The command already printed what went wrong; exit 1 without another message.
    Reported,
    /// The typed execution-budget error: printed as `odek: <error>`, exit 4.
    Budget(String),
    /// The command printed everything already; exit with this code.
    Exit(u8),
    /// A fatal error whose text is the whole line (`odek continue: …`), printed without the
    /// `odek: ` prefix.
    Verbatim(String),
    /// The command failed after a stop signal (SIGINT, SIGTERM, SIGHUP) cancelled it: `error`
    /// is reported as usual, the exit is the signal's ([`interrupt::StopSignal::exit_code`]).
    Stopped { signal: interrupt::StopSignal, error: Box<CommandError> },
}

impl<E: std::fmt::Display> From<E> for CommandError {
    fn from(error: E) -> Self {
        CommandError::Fatal(error.to_string())
    }
}

/// Runs one parsed command.
pub async fn run(command: Command) -> Result<(), CommandError> {
    let outcome = match command {
        Command::Ext(command) => ext::run(command).await,
        Command::Run(args) => run::run(args).await,
        Command::Continue(args) => run::continue_session(args).await,
        Command::Session(command) => session::run(command).await,
        Command::Subagent(args) => subagent::run(&args.flags).await,
    };
    outcome.map_err(stopped_by_signal)
}

/// A failure after a stop signal is the signal's failure (a command that finished despite the
/// signal keeps its success, and a budget stop keeps exit 4). The error line names the signal unless it was SIGINT, whose line
/// stays what a cancelled run always printed.
fn stopped_by_signal(error: CommandError) -> CommandError {
    let Some(signal) = interrupt::received_stop_signal() else {
        return error;
    };
    // Exit 4 means the budget and only the budget (spec README §4), signal or not.
    if matches!(error, CommandError::Budget(_)) {
        return error;
    }
    let error = match error {
        CommandError::Fatal(text) if signal != interrupt::StopSignal::Interrupt => {
            CommandError::Fatal(format!("{text} ({})", signal.name()))
        }
        other => other,
    };
    CommandError::Stopped { signal, error: Box::new(error) }
}
