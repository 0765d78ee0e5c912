//! The commands of the `odek` binary. Each returns `Ok(())` or a [`CommandError`]; `main.rs`
//! maps that to the exit code.

pub mod ext;
pub mod session;

use crate::cli::Command;

/// How a command failed.
#[derive(Debug)]
pub enum CommandError {
    /// A fatal error to print as `odek: <error>`.
    Fatal(String),
    /// The command already printed what went wrong; exit 1 without another message.
    Reported,
}

impl<E: std::fmt::Display> From<E> for CommandError {
    fn from(error: E) -> Self {
        CommandError::Fatal(error.to_string())
    }
}

/// Runs one parsed command.
pub async fn run(command: Command) -> Result<(), CommandError> {
    match command {
        Command::Ext(command) => ext::run(command).await,
        Command::Session(command) => session::run(command).await,
    }
}
