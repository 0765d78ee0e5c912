//! Sinks for the event tests: one that records lines, one that holds the consumer until the
//! test lets it go, one that fails or panics on chosen lines.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use odek_agent::events::{EventEmitter, EventSink, RunId};

pub const RUN_ID: &str = "0123456789abcdef0123456789abcdef";
pub const TIMESTAMP: &str = "2026-08-07T12:00:00Z";

pub fn run_id() -> RunId {
    RunId::parse(RUN_ID).unwrap()
}

/// Records every line it is given.
#[derive(Clone, Default)]
pub struct MemorySink {
    pub lines: Arc<Mutex<Vec<String>>>,
}

impl MemorySink {
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl EventSink for MemorySink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        self.lines.lock().unwrap().push(line.to_owned());
        Ok(())
    }
}

/// An emitter over a fresh [`MemorySink`].
pub fn memory_emitter(include_args: bool) -> (EventEmitter, MemorySink) {
    let sink = MemorySink::default();
    let emitter = EventEmitter::start(Box::new(sink.clone()), run_id(), include_args).unwrap();
    (emitter, sink)
}

/// On its first line, tells the test it has started and then waits until the test releases it.
pub struct GateSink {
    pub inner: MemorySink,
    entered: Sender<()>,
    release: Option<Receiver<()>>,
}

pub struct Gate {
    pub entered: Receiver<()>,
    pub release: Sender<()>,
}

impl GateSink {
    pub fn new(inner: MemorySink) -> (GateSink, Gate) {
        let (entered_tx, entered_rx) = channel();
        let (release_tx, release_rx) = channel();
        (
            GateSink { inner, entered: entered_tx, release: Some(release_rx) },
            Gate { entered: entered_rx, release: release_tx },
        )
    }
}

impl EventSink for GateSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        if let Some(release) = self.release.take() {
            self.entered.send(()).unwrap();
            release.recv().unwrap();
        }
        self.inner.write_line(line)
    }
}

/// Panics on lines containing `"panic"`, fails on lines containing `"fail"`, records the rest.
pub struct FaultySink {
    pub inner: MemorySink,
}

impl EventSink for FaultySink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        assert!(!line.contains("panic"), "sink panicked on purpose");
        if line.contains("fail") {
            return Err(std::io::Error::other("disk on fire"));
        }
        self.inner.write_line(line)
    }
}
