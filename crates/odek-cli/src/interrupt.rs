//! Stop signals. SIGINT, SIGTERM and SIGHUP each cancel a command's run the way Ctrl-C always
//! did — tools cancelled, shell process groups, sub-agents and MCP servers stopped, the session
//! saved at its last completed step — and the first one received is remembered, so the command
//! can end with the conventional exit ([`StopSignal::exit_code`], mapped in `main.rs`).
//!
//! A second stop signal, of any of the three kinds, ends the process at once with
//! `128 + <signal>`, clean-up or not.
//!
//! Start at [`cancel_on_stop_signals`]. The handlers stay installed for the life of the process
//! (tokio never removes them), as the Ctrl-C handler always did.

use std::sync::atomic::{AtomicI32, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// The first stop signal received (its number), `0` before any.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// A signal that stops a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
    Hangup,
}

impl StopSignal {
    const ALL: [StopSignal; 3] = [StopSignal::Interrupt, StopSignal::Terminate, StopSignal::Hangup];

    fn number(self) -> i32 {
        match self {
            StopSignal::Interrupt => nix::libc::SIGINT,
            StopSignal::Terminate => nix::libc::SIGTERM,
            StopSignal::Hangup => nix::libc::SIGHUP,
        }
    }

    fn kind(self) -> SignalKind {
        SignalKind::from_raw(self.number())
    }

    fn from_number(number: i32) -> Option<StopSignal> {
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

    /// The exit of a command this signal stopped: `128 + <signal>` for SIGTERM (143) and
    /// SIGHUP (129); SIGINT keeps the exit a cancelled run always had (`None`: the command's
    /// own code, `1` for a cancelled `run`, as spec README §4 says).
    pub fn exit_code(self) -> Option<u8> {
        match self {
            StopSignal::Interrupt => None,
            StopSignal::Terminate | StopSignal::Hangup => u8::try_from(128 + self.number()).ok(),
        }
    }
}

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
        let Ok(mut stream) = signal(stop.kind()) else { continue };
        let trigger = token.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if RECEIVED.compare_exchange(0, stop.number(), Ordering::AcqRel, Ordering::Acquire).is_err() {
                    // A second stop signal: the operator means it; a stuck clean-up must not
                    // leave SIGKILL as the only way out.
                    std::process::exit(128 + stop.number());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conventional_exit_codes() {
        assert_eq!(StopSignal::Terminate.exit_code(), Some(143));
        assert_eq!(StopSignal::Hangup.exit_code(), Some(129));
        assert_eq!(StopSignal::Interrupt.exit_code(), None);
        assert_eq!(StopSignal::from_number(nix::libc::SIGTERM), Some(StopSignal::Terminate));
        assert_eq!(StopSignal::from_number(0), None);
    }
}
