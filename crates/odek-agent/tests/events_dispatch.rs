//! Bounded, non-blocking dispatch (spec `events.md` §10): a full queue drops and counts, sink
//! failures and panics are contained, close drains and never deadlocks.

#![allow(clippy::unwrap_used)]

mod events_support;

use odek_contract::outcome::Outcome;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

use odek_agent::events::{EVENT_QUEUE_CAPACITY, Event, EventEmitter, EventSink, EventStream, Fanout};

use events_support::*;

fn versions(lines: &[String]) -> Vec<u64> {
    lines
        .iter()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["data"]["version"].as_u64().unwrap())
        .collect()
}

#[test]
fn full_queue_drops_and_counts_without_blocking() {
    let memory = MemorySink::default();
    let (sink, gate) = GateSink::new(memory.clone());
    let emitter = EventEmitter::start(Box::new(sink), run_id(), false).unwrap();

    emitter.emit(Event::plan_created(1, 0));
    // The consumer now holds event 0 and waits; the queue itself is empty.
    gate.entered.recv().unwrap();
    for version in 1..=(EVENT_QUEUE_CAPACITY as u64 + 5) {
        emitter.emit(Event::plan_created(1, version));
    }
    assert_eq!(emitter.dropped(), 5);

    gate.release.send(()).unwrap();
    assert_eq!(emitter.close(), 5);
    let lines = memory.lines();
    assert_eq!(lines.len(), EVENT_QUEUE_CAPACITY + 1);
    // FIFO, and the dropped ones are the newest.
    assert_eq!(versions(&lines), (0..=EVENT_QUEUE_CAPACITY as u64).collect::<Vec<_>>());
}

#[test]
fn failing_or_panicking_sink_does_not_stop_the_stream() {
    let memory = MemorySink::default();
    let emitter = EventEmitter::start(Box::new(FaultySink { inner: memory.clone() }), run_id(), false).unwrap();
    emitter.emit(Event::run_started("before", false, 1));
    emitter.emit(Event::run_failed(std::time::Duration::ZERO, "panic", Outcome::Error, None));
    emitter.emit(Event::run_failed(std::time::Duration::ZERO, "fail", Outcome::Error, None));
    emitter.emit(Event::run_started("after", false, 1));
    assert_eq!(emitter.close(), 0);
    let lines = memory.lines();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("\"before\""));
    assert!(lines[1].contains("\"after\""));
}

/// Waits for the test, then closes the emitter from inside the consumer and reports back.
struct ClosingSink {
    inner: MemorySink,
    gate: GateSink,
    emitter: Arc<OnceLock<Arc<EventEmitter>>>,
    closed: Sender<u64>,
    done: bool,
}

impl EventSink for ClosingSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        if self.done {
            return self.inner.write_line(line);
        }
        self.done = true;
        self.gate.write_line(line)?;
        let dropped = self.emitter.get().unwrap().close();
        self.closed.send(dropped).unwrap();
        Ok(())
    }
}

#[test]
fn close_from_inside_the_consumer_does_not_deadlock() {
    let memory = MemorySink::default();
    let (gate_sink, gate) = GateSink::new(memory.clone());
    let slot = Arc::new(OnceLock::new());
    let (closed_tx, closed_rx) = channel();
    let sink =
        ClosingSink { inner: memory.clone(), gate: gate_sink, emitter: slot.clone(), closed: closed_tx, done: false };
    let emitter = Arc::new(EventEmitter::start(Box::new(sink), run_id(), false).unwrap());
    slot.set(emitter.clone()).unwrap();

    emitter.emit(Event::plan_created(1, 1));
    gate.entered.recv().unwrap();
    emitter.emit(Event::plan_created(1, 2));
    emitter.emit(Event::plan_created(1, 3));
    gate.release.send(()).unwrap();

    // Close returned on the consumer thread without waiting for itself.
    assert_eq!(closed_rx.recv().unwrap(), 0);
    emitter.emit(Event::plan_created(1, 4));
    assert_eq!(emitter.close(), 0);
    // What was queued before the close is still written; what came after is not.
    assert_eq!(versions(&memory.lines()), vec![1, 2, 3]);
}

#[test]
fn emit_after_close_does_nothing_and_close_is_repeatable() {
    let (emitter, sink) = memory_emitter(false);
    emitter.emit(Event::plan_created(1, 1));
    assert_eq!(emitter.close(), 0);
    emitter.emit(Event::plan_created(1, 2));
    assert_eq!(emitter.close(), 0);
    assert_eq!(versions(&sink.lines()), vec![1]);
}

#[test]
fn many_threads_emit_at_once() {
    let (emitter, sink) = memory_emitter(false);
    let emitter = Arc::new(emitter);
    let seen = Arc::new(Mutex::new(0));
    std::thread::scope(|scope| {
        for thread in 0..8u64 {
            let emitter = emitter.clone();
            let seen = seen.clone();
            scope.spawn(move || {
                for index in 0..50 {
                    emitter.emit(Event::plan_created(1, thread * 100 + index));
                }
                *seen.lock().unwrap() += 50;
            });
        }
    });
    assert_eq!(emitter.close(), 0);
    assert_eq!(sink.lines().len(), *seen.lock().unwrap());
}

#[test]
fn stream_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<EventEmitter>();
    send_sync::<EventStream>();
    send_sync::<Fanout>();
}
