//! Stop signals in `odek repl`, where one Ctrl-C must not end the process as it ends `odek run`
//! ([`crate::interrupt`]): SIGINT cancels the running turn only (the REPL goes on), and SIGTERM
//! or SIGHUP cancel the running turn and end the REPL once that turn is saved. A second SIGINT
//! during the turn it already stopped, and a second SIGTERM or SIGHUP at any time, end the
//! process at once ([`CommandError::StoppedAgain`]), clean-up or not.
//!
//! The approval prompts look at [`turn_stopped`] so a Ctrl-C ends a card's wait the way any
//! stop signal ends it in `odek run`. Start at [`ReplSignals::install`].

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::outcome::{CommandError, StopSignal, exit_code};

/// Whether the running turn was stopped by a signal (reset when the next turn begins).
static TURN_STOPPED: AtomicBool = AtomicBool::new(false);

/// Whether a signal stopped the REPL's running turn: no question of that turn waits for an
/// answer any longer.
pub(crate) fn turn_stopped() -> bool {
    TURN_STOPPED.load(Ordering::Acquire)
}

/// The REPL's signal handlers and what they saw.
pub(crate) struct ReplSignals {
    shared: Arc<Shared>,
}

struct Shared {
    /// The running turn's token, `None` between turns.
    turn: Mutex<Option<CancellationToken>>,
    /// The first SIGTERM or SIGHUP (its number), `0` before any.
    ending: AtomicI32,
    /// Cancelled by the first SIGTERM or SIGHUP.
    ended: CancellationToken,
}

impl ReplSignals {
    /// Installs the handlers for SIGINT, SIGTERM and SIGHUP for the life of the process. A
    /// signal whose handler cannot be installed keeps its default action.
    pub(crate) fn install() -> ReplSignals {
        let shared =
            Arc::new(Shared { turn: Mutex::new(None), ending: AtomicI32::new(0), ended: CancellationToken::new() });
        for stop in StopSignal::ALL {
            let Ok(mut stream) = signal(SignalKind::from_raw(stop.number())) else { continue };
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    shared.received(stop);
                }
            });
        }
        ReplSignals { shared }
    }

    /// A fresh token for the next turn, cancelled by the next stop signal.
    pub(crate) fn begin_turn(&self) -> CancellationToken {
        let token = CancellationToken::new();
        TURN_STOPPED.store(false, Ordering::Release);
        *self.shared.lock() = Some(token.clone());
        if self.ending().is_some() {
            token.cancel();
        }
        token
    }

    /// The turn is over: a SIGINT from now on is no longer its.
    pub(crate) fn end_turn(&self) {
        *self.shared.lock() = None;
    }

    /// The SIGTERM or SIGHUP that ends the REPL, once one arrived.
    pub(crate) fn ending(&self) -> Option<StopSignal> {
        StopSignal::from_number(self.shared.ending.load(Ordering::Acquire))
    }

    /// Resolves once SIGTERM or SIGHUP arrived (at once when one already did).
    pub(crate) async fn ended(&self) {
        self.shared.ended.cancelled().await;
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<CancellationToken>> {
        self.turn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn received(&self, stop: StopSignal) {
        if stop == StopSignal::Interrupt {
            let turn = self.lock();
            let Some(turn) = turn.as_ref() else {
                // Between turns the prompt reads Ctrl-C as a key; a SIGINT sent from elsewhere
                // while the REPL waits for input is not a turn to stop.
                return;
            };
            if turn.is_cancelled() {
                // The operator means it: a stuck clean-up must not leave SIGKILL as the only way out.
                exit_now(stop);
            }
            TURN_STOPPED.store(true, Ordering::Release);
            turn.cancel();
            return;
        }
        if self.ending.compare_exchange(0, stop.number(), Ordering::AcqRel, Ordering::Acquire).is_err() {
            exit_now(stop);
        }
        TURN_STOPPED.store(true, Ordering::Release);
        if let Some(turn) = self.lock().as_ref() {
            turn.cancel();
        }
        self.ended.cancel();
    }
}

fn exit_now(stop: StopSignal) -> ! {
    std::process::exit(i32::from(exit_code(&Err(CommandError::StoppedAgain(stop)))));
}
