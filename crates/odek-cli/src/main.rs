//! The `odek` binary: parses the command line, runs the command from the library, and maps the
//! outcome to an exit code in one place ([`exit_code`]). Everything else lives in `odek_cli`.

use std::process::ExitCode;

use odek_cli::cli::{Parsed, parse_args, take_directory_flags};
use odek_cli::commands::{self, CommandError};

fn main() -> ExitCode {
    init_tracing();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let args = match take_directory_flags(&args) {
        Ok((None, args)) => args,
        Ok((Some(directory), args)) => match std::env::set_current_dir(&directory) {
            Ok(()) => args,
            Err(err) => {
                let shown = odek_contract::quoting::quote(&directory.to_string_lossy());
                final_line(&format!("odek: -C {}: {err}", printable(&shown)));
                return ExitCode::from(1);
            }
        },
        Err(error) => {
            final_line(&format!("odek: {error}"));
            return ExitCode::from(1);
        }
    };
    let command = match parse_args(&args) {
        Parsed::Command(command) => command,
        Parsed::Exit { stdout, stderr, code } => {
            print!("{stdout}");
            eprint!("{stderr}");
            return ExitCode::from(code);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            final_line(&format!("odek: start async runtime: {err}"));
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(commands::run(*command));
    // Server processes are reaped by the commands; don't wait on stray blocking tasks (an
    // approval prompt abandoned mid-read) at exit.
    runtime.shutdown_background();
    exit_code(outcome)
}

/// The single mapping from a command's outcome to the process exit code (spec README §4).
fn exit_code(outcome: Result<(), CommandError>) -> ExitCode {
    ExitCode::from(report(outcome))
}

/// Prints what the outcome still has to say and returns its exit code.
fn report(outcome: Result<(), CommandError>) -> u8 {
    match outcome {
        Ok(()) => 0,
        Err(CommandError::Reported) => 1,
        Err(CommandError::Exit(code)) => code,
        Err(CommandError::Budget(error)) => {
            final_line(&format!("odek: {}", printable(&error)));
            4
        }
        Err(CommandError::Verbatim(line)) => {
            final_line(&printable(&line));
            1
        }
        Err(CommandError::Fatal(error)) => {
            final_line(&format!("odek: {}", printable(&error)));
            1
        }
        // 128 + the signal for SIGTERM and SIGHUP; SIGINT keeps the command's own code.
        Err(CommandError::Stopped { signal, error }) => {
            let code = report(Err(*error));
            signal.exit_code().unwrap_or(code)
        }
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
    let redacted = odek_contract::redaction::redact(line);
    odek_contract::terminal_text::sanitise_for_terminal(&redacted, odek_contract::terminal_text::Layout::Lines)
        .into_owned()
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
