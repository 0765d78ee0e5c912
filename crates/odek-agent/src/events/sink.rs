//! Where rendered event lines go: the [`EventSink`] trait, the `--events-jsonl <path>` file
//! ([`JsonlSink`], spec `events.md` §12) and `--events-jsonl -` ([`StdoutSink`]).
//!
//! Opening the file is three separate steps so each can be tested on its own, including a
//! symlink swapped in between them: [`check_events_path`] (the spec's refusals),
//! [`open_events_file`] (the `O_NOFOLLOW` open that makes the check race-free) and
//! [`harden_events_file`] (mode `0600` on the open descriptor, never on the path).

use std::fs::{File, Permissions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use odek_contract::regular_file::{is_not_a_regular_file, open_regular_append};

use super::SinkError;

/// Mode of the events file.
const EVENTS_FILE_MODE: u32 = 0o600;

/// Receives rendered lines, one call per event, from the dispatch consumer thread only.
pub trait EventSink: Send {
    /// Writes `line` (one event, ending in `\n`). Returns when the line is as durable as the
    /// sink promises.
    fn write_line(&mut self, line: &str) -> std::io::Result<()>;
}

/// The stderr text for a failed write: `odek: events-jsonl write failed: <error>`.
pub(crate) fn write_failed_message(error: &std::io::Error) -> String {
    format!("odek: events-jsonl write failed: {error}")
}

/// The sink for a `--events-jsonl` value: `-` is standard output, anything else a file opened
/// with [`JsonlSink::open`].
pub fn open_sink(target: &str) -> Result<Box<dyn EventSink>, SinkError> {
    if target == "-" {
        return Ok(Box::new(StdoutSink));
    }
    Ok(Box::new(JsonlSink::open(target)?))
}

/// An append-only JSONL file; every line is fsynced before [`EventSink::write_line`] returns.
#[derive(Debug)]
pub struct JsonlSink {
    file: File,
}

impl JsonlSink {
    /// Checks, opens and hardens `path` (§12). Existing content is kept.
    pub fn open(path: &str) -> Result<JsonlSink, SinkError> {
        check_events_path(path)?;
        let file = open_events_file(path)?;
        harden_events_file(&file)?;
        Ok(JsonlSink { file })
    }
}

impl EventSink for JsonlSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        // One buffer, one write; then to stable storage.
        self.file.write_all(line.as_bytes())?;
        self.file.sync_data()
    }
}

/// Standard output, flushed after every line.
#[derive(Debug, Clone, Copy, Default)]
struct StdoutSink;

impl EventSink for StdoutSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(line.as_bytes())?;
        stdout.flush()
    }
}

/// The refusals of §12, in order: an empty path, a parent that does not exist or is not a
/// directory, an existing symlink at the path. A path without a directory part has the parent
/// `.`.
pub fn check_events_path(path: &str) -> Result<(), SinkError> {
    if path.is_empty() {
        return Err(SinkError::EmptyPath);
    }
    let parent = match Path::new(path).parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let dir = parent.display().to_string();
    match std::fs::metadata(parent) {
        Err(source) => return Err(SinkError::ParentMissing { dir, source }),
        Ok(metadata) if !metadata.is_dir() => return Err(SinkError::ParentNotDirectory { dir }),
        Ok(_) => {}
    }
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => Err(SinkError::Symlink { path: path.to_owned() }),
        // Absent (created by the open) or anything else: the open decides.
        _ => Ok(()),
    }
}

/// Opens `path` write-only, create, append, `O_NOFOLLOW`, mode `0600`: a symlink at the last
/// component (even one swapped in after [`check_events_path`]) fails the open instead of being
/// followed. The open never blocks, and anything but a regular file (a FIFO, `/dev/null`) is
/// refused before [`harden_events_file`] could change its mode. Other errors are the OS error.
pub fn open_events_file(path: &str) -> Result<File, SinkError> {
    open_regular_append(Path::new(path), EVENTS_FILE_MODE).map_err(|err| {
        if is_not_a_regular_file(&err) {
            SinkError::NotRegularFile { path: path.to_owned() }
        } else {
            SinkError::Open(err)
        }
    })
}

/// Sets mode `0600` on the open file, so an existing file with looser permissions is hardened.
pub fn harden_events_file(file: &File) -> Result<(), SinkError> {
    file.set_permissions(Permissions::from_mode(EVENTS_FILE_MODE)).map_err(SinkError::Open)
}
