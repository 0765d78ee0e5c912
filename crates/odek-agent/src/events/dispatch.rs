//! Bounded, non-blocking dispatch (spec `events.md` §10): [`EventEmitter::emit`] stamps an
//! event with its time and session on the caller's thread and pushes it onto a FIFO of
//! [`EVENT_QUEUE_CAPACITY`] events; one dedicated consumer thread redacts, renders and writes
//! them, so the loop pays for neither redaction nor serialisation.
//!
//! At the limit the new event is dropped and counted — the caller never waits. A sink that
//! fails or panics costs that one line; the consumer goes on with the next. Closing drains the
//! queue, waits for the consumer (unless called from it) and reports the dropped count.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::{JoinHandle, ThreadId};

use chrono::{DateTime, SecondsFormat, Utc};

use super::EventError;
use super::event::{Event, RunId, render_event_line};
use super::sink::{EventSink, write_failed_message};

/// Capacity of the dispatch queue, in events.
pub const EVENT_QUEUE_CAPACITY: usize = 1024;

/// The stderr warning printed by [`EventEmitter::close`] when `dropped` > 0.
fn dropped_events_warning(dropped: u64) -> String {
    odek_contract::terminal_text::warning_line(&format!("events: {dropped} event(s) dropped (queue full)"))
}

/// The producer side of one run's event stream. `Send + Sync`; every method returns without
/// waiting on the sink except [`EventEmitter::close`].
pub struct EventEmitter {
    run_id: RunId,
    include_args: bool,
    session_id: RwLock<Option<Arc<str>>>,
    /// `None` once closed; dropping it lets the consumer finish after the queued events.
    sender: RwLock<Option<SyncSender<Stamped>>>,
    closed: AtomicBool,
    dropped: AtomicU64,
    warned: AtomicBool,
    consumer: Mutex<Option<JoinHandle<()>>>,
    consumer_id: ThreadId,
}

impl std::fmt::Debug for EventEmitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventEmitter").field("run_id", &self.run_id).field("include_args", &self.include_args).finish()
    }
}

impl EventEmitter {
    /// Starts the consumer thread that owns `sink`. `include_args` is `--events-include-args`.
    pub fn start(sink: Box<dyn EventSink>, run_id: RunId, include_args: bool) -> Result<EventEmitter, EventError> {
        let (sender, receiver) = sync_channel(EVENT_QUEUE_CAPACITY);
        let consumer = std::thread::Builder::new()
            .name("odek-events".to_owned())
            .spawn({
                let run_id = run_id.clone();
                move || drain_queue(receiver, sink, &run_id)
            })
            .map_err(EventError::ConsumerThread)?;
        Ok(EventEmitter {
            run_id,
            include_args,
            session_id: RwLock::new(None),
            sender: RwLock::new(Some(sender)),
            closed: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            warned: AtomicBool::new(false),
            consumer_id: consumer.thread().id(),
            consumer: Mutex::new(Some(consumer)),
        })
    }

    /// Whether `tool_call_started` carries the (redacted) raw arguments.
    pub fn include_args(&self) -> bool {
        self.include_args
    }

    /// Stamps `id` on every event emitted from now on.
    pub fn set_session_id(&self, id: &str) {
        *self.session_id.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(id));
    }

    /// Events dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues `event`, stamped now with the time and the session ID; the consumer writes it
    /// redacted. Never blocks; drops and counts the event when the queue is full; does nothing
    /// after [`EventEmitter::close`].
    pub fn emit(&self, event: Event) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let session_id = self.session_id.read().unwrap_or_else(PoisonError::into_inner).clone();
        let stamped = Stamped { event, session_id, at: Utc::now() };
        let sender = self.sender.read().unwrap_or_else(PoisonError::into_inner);
        let Some(sender) = sender.as_ref() else {
            return;
        };
        match sender.try_send(stamped) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            // The consumer is gone (it cannot be, short of an abort): nothing to deliver to.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Stops accepting events, lets the consumer write what is queued and waits for it —
    /// except on the consumer thread itself (a sink calling close), which returns at once.
    /// Returns the dropped count and prints `dropped_events_warning` on stderr (once) when
    /// it is above zero. Calling it again is harmless.
    pub fn close(&self) -> u64 {
        self.closed.store(true, Ordering::Release);
        drop(self.sender.write().unwrap_or_else(PoisonError::into_inner).take());
        if std::thread::current().id() != self.consumer_id {
            let mut consumer = self.consumer.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(handle) = consumer.take() {
                // The consumer contains sink panics itself; a join error cannot carry one.
                let _ = handle.join();
            }
        }
        let dropped = self.dropped();
        if dropped > 0 && !self.warned.swap(true, Ordering::AcqRel) {
            eprintln!("{}", dropped_events_warning(dropped));
        }
        dropped
    }
}

impl Drop for EventEmitter {
    fn drop(&mut self) {
        self.close();
    }
}

/// An event as queued: what the loop knew when it emitted it.
struct Stamped {
    event: Event,
    session_id: Option<Arc<str>>,
    at: DateTime<Utc>,
}

impl Stamped {
    /// The redacted event as its JSONL line.
    fn render(&self, run_id: &RunId) -> Option<String> {
        let timestamp = self.at.to_rfc3339_opts(SecondsFormat::Micros, true);
        render_event_line(&self.event.redacted(), run_id, self.session_id.as_deref(), &timestamp)
    }
}

/// The consumer: renders and writes each event, reports write errors, contains panics, and
/// ends (dropping — closing — the sink) once the queue is closed and empty.
fn drain_queue(receiver: Receiver<Stamped>, mut sink: Box<dyn EventSink>, run_id: &RunId) {
    for stamped in receiver {
        let written = catch_unwind(AssertUnwindSafe(|| match stamped.render(run_id) {
            Some(line) => sink.write_line(&line),
            None => Ok(()),
        }));
        match written {
            Ok(Ok(())) => {}
            Ok(Err(error)) => eprintln!("{}", write_failed_message(&error)),
            // The panic hook has already reported it; the stream goes on with the next line.
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_warning_text() {
        assert_eq!(dropped_events_warning(3), "odek: warning: events: 3 event(s) dropped (queue full)");
    }
}
