//! The `odek` binary: parses the command line, runs the command from the library, prints what
//! the outcome still has to say ([`report`]) and exits with the code the one mapping chooses
//! ([`odek_cli::outcome::exit_code`]). Everything else lives in `odek_cli`.

use std::process::ExitCode;

use odek_cli::cli::{Parsed, parse_args, take_directory_flags};
use odek_cli::commands;
use odek_cli::outcome::{CommandError, exit_code};

fn main() -> ExitCode {
    init_tracing();
    let outcome = run();
    report(&outcome);
    ExitCode::from(exit_code(&outcome))
}

/// Everything between the arguments and the outcome.
fn run() -> Result<(), CommandError> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let args = match take_directory_flags(&args) {
        Ok((None, args)) => args,
        Ok((Some(directory), args)) => {
            std::env::set_current_dir(&directory).map_err(|err| {
                let shown = odek_contract::quoting::quote(&directory.to_string_lossy());
                CommandError::Fatal(format!("-C {shown}: {err}"))
            })?;
            args
        }
        Err(error) => return Err(CommandError::Fatal(error)),
    };
    let command = match parse_args(&args) {
        Parsed::Command(command) => command,
        Parsed::Exit { stdout, stderr, outcome } => {
            print!("{stdout}");
            eprint!("{stderr}");
            return outcome;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CommandError::Fatal(format!("start async runtime: {err}")))?;
    let outcome = runtime.block_on(commands::run(*command));
    // Server processes are reaped by the commands; don't wait on stray blocking tasks (an
    // approval prompt abandoned mid-read) at exit.
    runtime.shutdown_background();
    outcome
}

/// Prints what the outcome still has to say: the final error line, if any.
fn report(outcome: &Result<(), CommandError>) {
    if let Err(error) = outcome {
        report_error(error);
    }
}

fn report_error(error: &CommandError) {
    match error {
        CommandError::Fatal(error) | CommandError::Run { message: error, .. } => {
            final_line(&format!("odek: {}", printable(error)));
        }
        CommandError::Verbatim(line) => final_line(&printable(line)),
        CommandError::Stopped { error, .. } => report_error(error),
        // Printed by the command already.
        CommandError::Reported
        | CommandError::ReportedRun(_)
        | CommandError::Check(_)
        | CommandError::Subagent(_)
        | CommandError::StoppedAgain(_) => {}
    }
}

/// Writes the final error line to stderr. A failed write is ignored: after a hangup the terminal
/// is gone and writes fail with EIO, where `eprintln!` would panic and turn the exit into 101.
fn final_line(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A final error line as it may reach the terminal: errors can quote server text (it must not
/// drive the terminal) and config values, which `${VAR}` may have filled with a secret (an
/// invalid `thinking` or `provider` is quoted back), so known secrets are redacted.
fn printable(line: &str) -> String {
    use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
    sanitise_for_terminal(&odek_contract::redaction::redact(line), Layout::Lines).into_owned()
}

/// Logs go to stderr, filtered by `ODEK_LOG` (default: warnings from odek crates).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ODEK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .try_init();
}
