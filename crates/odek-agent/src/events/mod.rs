//! The structured runtime event stream `odek.event/v1` (spec `events.md`): the event model and
//! its one-line JSON shape, the argument digests and `args_summary`, redaction, the bounded
//! non-blocking dispatcher and the JSONL / stdout sinks.
//!
//! Start at [`EventStream`]: the binary opens a sink with [`open_sink`], starts an
//! [`EventEmitter`] on it and wraps that in an [`EventStream`], which the loop sees as a
//! [`crate::observer::LoopObserver`] (combine it with the terminal display through [`Fanout`])
//! and the MCP hub as an [`odek_mcp::McpObserver`]. This module does not decide *when* run-level
//! events happen (`run_started`, `budget_exceeded`, `run_completed`, `run_failed`): the binary
//! calls them. It does not classify run errors into `error_class` either.

mod args;
mod data;
mod dispatch;
mod event;
mod schema;
mod sink;
mod stream;

pub use args::{MAX_SUMMARY_ITEMS, MAX_SUMMARY_STRING_BYTES, args_bytes, args_sha256, args_summary, artifact_count};
pub use dispatch::{EVENT_QUEUE_CAPACITY, EventEmitter};
pub use event::{Event, RunId, SubagentOutcome, render_event_line};
pub use schema::{EVENT_SCHEMA_PATH, event_schema, event_schema_text};
pub use sink::{EventSink, JsonlSink, check_events_path, harden_events_file, open_events_file, open_sink};
pub use stream::{EventStream, Fanout};

/// What can go wrong setting up the event stream. Open errors of the JSONL sink are
/// [`SinkError`]; the binary prints each as `odek: events-jsonl: <error>`.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("cannot generate run ID: {0}")]
    Randomness(String),
    #[error("cannot start the event consumer thread: {0}")]
    ConsumerThread(std::io::Error),
}

/// Why the JSONL sink could not be opened (spec `events.md` §12; the texts are exact).
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("empty path")]
    EmptyPath,
    #[error("parent directory {dir} must already exist: {source}")]
    ParentMissing { dir: String, source: std::io::Error },
    #[error("parent path {dir} is not a directory")]
    ParentNotDirectory { dir: String },
    #[error("refusing to write events to symlink {path}")]
    Symlink { path: String },
    /// [beyond] A FIFO, a device or a socket at the path: opening it could block, fsync fails
    /// on it, and hardening it to `0600` would change a file that is not ours (`/dev/null`).
    #[error("refusing to write events to {path}: not a regular file")]
    NotRegularFile { path: String },
    #[error("{0}")]
    Open(std::io::Error),
}
