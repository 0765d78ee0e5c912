//! Stop signals. SIGINT, SIGTERM and SIGHUP each cancel a command's run the way Ctrl-C always
//! did — tools cancelled, shell process groups, sub-agents and MCP servers stopped, the session
//! saved at its last completed step — and the first one received is remembered, so the command
//! can end with the conventional exit ([`CommandError::Stopped`], mapped by
//! [`crate::outcome::exit_code`]).
//!
//! A second stop signal, of any of the three kinds, ends the process at once
//! ([`CommandError::StoppedAgain`]: `128 + <signal>`), clean-up or not.
//!
//! Start at [`cancel_on_stop_signals`]. The handlers stay installed for the life of the process
//! (tokio never removes them), as the Ctrl-C handler always did.

use std::sync::atomic::{AtomicI32, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::outcome::{CommandError, StopSignal, exit_code};

/// The first stop signal received (its number), `0` before any.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// A token cancelled by the first SIGINT, SIGTERM or SIGHUP this process receives. A signal
/// whose handler cannot be installed keeps its default action. Every call returns the same
/// token: the handlers are installed once, so one signal is never counted twice.
pub(crate) fn cancel_on_stop_signals() -> CancellationToken {
    static TOKEN: std::sync::OnceLock<CancellationToken> = std::sync::OnceLock::new();
    TOKEN.get_or_init(install_handlers).clone()
}

fn install_handlers() -> CancellationToken {
    let token = CancellationToken::new();
    for stop in StopSignal::ALL {
        let Ok(mut stream) = signal(SignalKind::from_raw(stop.number())) else { continue };
        let trigger = token.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if RECEIVED.compare_exchange(0, stop.number(), Ordering::AcqRel, Ordering::Acquire).is_err() {
                    // A second stop signal: the operator means it; a stuck clean-up must not
                    // leave SIGKILL as the only way out.
                    std::process::exit(i32::from(exit_code(&Err(CommandError::StoppedAgain(stop)))));
                }
                trigger.cancel();
            }
        });
    }
    token
}

/// The first stop signal this process received, if any.
pub fn received_stop_signal() -> Option<StopSignal> {
    StopSignal::from_number(RECEIVED.load(Ordering::Acquire))
}
