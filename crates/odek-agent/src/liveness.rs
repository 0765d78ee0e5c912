//! Liveness of a run \[beyond\]: which phase it is in, which tool calls are running, and when
//! anything last moved ([`Liveness`]); the `run_heartbeat` events that report it
//! ([`spawn_heartbeat`]); and the typed stall a phase deadline ends a run with ([`Stall`]).
//!
//! The loop enters phases and registers calls, the provider's stream and the MCP client report
//! progress (a chunk that added to the answer, a tool result, a progress notification, a server
//! line), and the heartbeat task reads it all every `events.heartbeat_seconds`. The hot path —
//! [`Liveness::note_progress`], once per streamed chunk — is one clock read and one atomic
//! store; a tracker that is off ([`Liveness::off`], the default) does nothing at all.
//!
//! This module does not decide when a phase stalls: the deadlines live with what they bound
//! (the provider's first-byte and stream-idle bounds, an MCP server's start-up deadline), and
//! the loop or the runtime turns the one that fired into a [`Stall`].

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::events::{Event, EventStream};

/// What a run is doing (`run_heartbeat.phase`, `run_failed.phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for or reading the model's answer.
    Model,
    /// Running a batch of tool calls.
    Tools,
    /// Starting the MCP servers.
    McpStartup,
    /// Writing the final (partial-summary) answer after a deadline or a cap.
    Finalizing,
    /// Running the verification checks after the final answer.
    Checks,
}

impl Phase {
    pub(crate) const ALL: [Phase; 5] =
        [Phase::Model, Phase::Tools, Phase::McpStartup, Phase::Finalizing, Phase::Checks];

    /// The name events and messages use.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Model => "model",
            Phase::Tools => "tools",
            Phase::McpStartup => "mcp_startup",
            Phase::Finalizing => "finalizing",
            Phase::Checks => "checks",
        }
    }

    fn code(self) -> u8 {
        match self {
            Phase::Model => 0,
            Phase::Tools => 1,
            Phase::McpStartup => 2,
            Phase::Finalizing => 3,
            Phase::Checks => 4,
        }
    }

    fn from_code(code: u8) -> Phase {
        Phase::ALL.into_iter().find(|phase| phase.code() == code).unwrap_or(Phase::Model)
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A phase deadline that fired: `phase` made no progress for `idle`, its limit being `limit`.
/// Shown as `run stalled: no progress in <phase> for <n>s (limit <limit>s)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub phase: Phase,
    pub idle: Duration,
    pub limit: Duration,
}

impl std::fmt::Display for Stall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run stalled: no progress in {} for {}s (limit {}s)",
            self.phase,
            self.idle.as_secs(),
            self.limit.as_secs()
        )
    }
}

/// A run's liveness tracker: a cheap handle, clones share one state. [`Liveness::off`] (the
/// default) tracks nothing and costs nothing.
#[derive(Debug, Clone, Default)]
pub struct Liveness(Option<Arc<Tracker>>);

#[derive(Debug)]
struct Tracker {
    origin: Instant,
    phase: AtomicU8,
    /// Nanoseconds after `origin` of the last progress of any kind.
    last_progress: AtomicU64,
    /// The running tool calls, in start order. Changed twice per call, read per heartbeat:
    /// never on the streaming path.
    calls: Mutex<Vec<String>>,
}

/// What one heartbeat reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulse {
    pub phase: Phase,
    pub call_ids: Vec<String>,
    /// Since the last progress of any kind.
    pub idle: Duration,
}

impl Liveness {
    /// A tracker that is on, in `phase`, with progress "now".
    pub fn new(phase: Phase) -> Liveness {
        Liveness(Some(Arc::new(Tracker {
            origin: Instant::now(),
            phase: AtomicU8::new(phase.code()),
            last_progress: AtomicU64::new(0),
            calls: Mutex::new(Vec::new()),
        })))
    }

    /// A tracker that records nothing (heartbeats off).
    pub fn off() -> Liveness {
        Liveness(None)
    }

    /// Whether this tracker records anything.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// The run moved to `phase` (one atomic store; entering is not progress by itself).
    /// Public so that a phase added later (the checks after the final answer) is entered by the
    /// code that runs it.
    pub fn enter(&self, phase: Phase) {
        if let Some(tracker) = &self.0 {
            tracker.phase.store(phase.code(), Ordering::Relaxed);
        }
    }

    /// Something moved: a chunk of the answer, a tool result, an MCP progress notification or
    /// server line.
    pub fn note_progress(&self) {
        if let Some(tracker) = &self.0 {
            tracker.touch();
        }
    }

    /// Tool call `call_id` started running: the model's answer that asked for it was progress.
    pub fn call_started(&self, call_id: &str) {
        if let Some(tracker) = &self.0 {
            tracker.calls.lock().unwrap_or_else(PoisonError::into_inner).push(call_id.to_owned());
            tracker.touch();
        }
    }

    /// Tool call `call_id` ended (its result is progress).
    pub fn call_finished(&self, call_id: &str) {
        if let Some(tracker) = &self.0 {
            let mut calls = tracker.calls.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(index) = calls.iter().position(|id| id == call_id) {
                calls.remove(index);
            }
            drop(calls);
            tracker.touch();
        }
    }

    /// The current phase, the running calls and the time since the last progress; `None` when
    /// the tracker is off.
    pub fn pulse(&self) -> Option<Pulse> {
        let tracker = self.0.as_ref()?;
        let phase = Phase::from_code(tracker.phase.load(Ordering::Relaxed));
        let call_ids = tracker.calls.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let last = Duration::from_nanos(tracker.last_progress.load(Ordering::Relaxed));
        let idle = tracker.origin.elapsed().saturating_sub(last);
        Some(Pulse { phase, call_ids, idle })
    }
}

impl Tracker {
    fn touch(&self) {
        let nanos = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // A plain store, not a read-modify-write: two racing notes can only leave the older of
        // two recent times, which no heartbeat can tell apart.
        self.last_progress.store(nanos, Ordering::Relaxed);
    }
}

/// The heartbeat task of one run; dropping it stops the heartbeats.
#[derive(Debug)]
pub struct Heartbeat(tokio::task::JoinHandle<()>);

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Emits `run_heartbeat` on `events` every `every` (the first one `every` after now) until the
/// returned handle is dropped. `None` when `liveness` is off or `every` is zero.
pub fn spawn_heartbeat(liveness: &Liveness, events: &Arc<EventStream>, every: Duration) -> Option<Heartbeat> {
    if !liveness.is_on() || every.is_zero() {
        return None;
    }
    let (liveness, events) = (liveness.clone(), Arc::clone(events));
    let task = tokio::spawn(async move {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        // A stalled runtime worker must not be followed by a burst of stale heartbeats.
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Some(pulse) = liveness.pulse() {
                events.emit(Event::run_heartbeat(pulse.phase.as_str(), &pulse.call_ids, pulse.idle));
            }
        }
    });
    Some(Heartbeat(task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stall_message_is_the_exact_text() {
        let stall = Stall { phase: Phase::Model, idle: Duration::from_millis(2_400), limit: Duration::from_secs(2) };
        assert_eq!(stall.to_string(), "run stalled: no progress in model for 2s (limit 2s)");
        let stall = Stall { phase: Phase::McpStartup, idle: Duration::from_secs(30), limit: Duration::from_secs(30) };
        assert_eq!(stall.to_string(), "run stalled: no progress in mcp_startup for 30s (limit 30s)");
    }

    #[test]
    fn phases_round_trip_through_their_codes() {
        for phase in Phase::ALL {
            assert_eq!(Phase::from_code(phase.code()), phase);
        }
        let names: Vec<&str> = Phase::ALL.iter().map(|phase| phase.as_str()).collect();
        assert_eq!(names, ["model", "tools", "mcp_startup", "finalizing", "checks"]);
    }

    #[test]
    fn calls_are_tracked_until_they_finish() {
        let liveness = Liveness::new(Phase::Model);
        liveness.enter(Phase::Tools);
        liveness.call_started("a");
        liveness.call_started("b");
        liveness.call_finished("a");
        let pulse = liveness.pulse().unwrap();
        assert_eq!(pulse.phase, Phase::Tools);
        assert_eq!(pulse.call_ids, ["b"]);
        liveness.call_finished("b");
        assert!(liveness.pulse().unwrap().call_ids.is_empty());
    }

    #[test]
    fn an_off_tracker_reports_nothing() {
        let liveness = Liveness::off();
        liveness.enter(Phase::Tools);
        liveness.call_started("a");
        liveness.note_progress();
        assert_eq!(liveness.pulse(), None);
    }

    #[test]
    fn idle_time_restarts_at_each_progress() {
        // A tracker whose last progress was a minute ago.
        let origin = Instant::now().checked_sub(Duration::from_secs(60)).unwrap();
        let liveness = Liveness(Some(Arc::new(Tracker {
            origin,
            phase: AtomicU8::new(Phase::Model.code()),
            last_progress: AtomicU64::new(0),
            calls: Mutex::new(Vec::new()),
        })));
        assert!(liveness.pulse().unwrap().idle >= Duration::from_secs(60));
        liveness.note_progress();
        assert!(liveness.pulse().unwrap().idle < Duration::from_secs(1));
    }
}
