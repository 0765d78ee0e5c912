//! Text a server sends us for humans: stderr lines and `notifications/message` logs (spec
//! `mcp-client.md` §5 "Stderr" and §8). Each line is cleaned (control characters, secret
//! redaction, a 4096-byte cut) and printed as `[<server>] <line>` through a bounded queue of 256
//! that drops and counts when full, so a flooding server never blocks and never grows memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use crate::bounded_lines::{BoundedLineReader, Overflow};
use crate::observer::McpObserver;

/// Longest forwarded line, in bytes, before `…` is appended.
pub const MAX_SERVER_LINE_BYTES: usize = 4096;
/// Lines waiting to be printed before new ones are dropped.
pub const SERVER_LINE_QUEUE: usize = 256;
/// Raw bytes read of one stderr line before the rest is discarded: room for redaction to see a
/// secret that straddles the 4096-byte cut.
pub const RAW_SERVER_LINE_BYTES: usize = 2 * MAX_SERVER_LINE_BYTES;

/// The bounded queue in front of the observer. Cheap to clone; the printer thread ends when the
/// last clone is dropped.
#[derive(Clone)]
pub struct ServerLineSink {
    queue: mpsc::Sender<String>,
    dropped: Arc<AtomicU64>,
}

impl ServerLineSink {
    /// Starts the printer for `server`. It runs on its own thread so a blocked terminal never
    /// stalls the async runtime.
    pub fn new(server: &str, observer: Arc<dyn McpObserver>) -> Self {
        let (queue, mut lines) = mpsc::channel::<String>(SERVER_LINE_QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&dropped);
        let server = server.to_owned();
        let printer = move || {
            let report_drops = |observer: &dyn McpObserver| {
                let count = counter.swap(0, Ordering::AcqRel);
                if count > 0 {
                    observer.server_line(&server, &format!("\u{2026} {count} stderr line(s) dropped"));
                }
            };
            while let Some(line) = lines.blocking_recv() {
                observer.server_line(&server, &line);
                if lines.is_empty() {
                    report_drops(observer.as_ref());
                }
            }
            report_drops(observer.as_ref());
        };
        if std::thread::Builder::new().name("odek-mcp-stderr".into()).spawn(printer).is_err() {
            tracing::warn!("could not start the MCP stderr printer thread; server lines are dropped");
        }
        Self { queue, dropped }
    }

    /// Queues a cleaned line; never waits. A full queue drops the line and counts it.
    pub fn send(&self, line: String) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.queue.try_send(line) {
            self.dropped.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// Forwards a server's stderr until EOF, including a final unterminated line.
pub async fn forward_stderr<R: AsyncRead + Unpin>(stderr: R, sink: ServerLineSink) {
    let mut reader = BoundedLineReader::new(stderr, RAW_SERVER_LINE_BYTES, Overflow::Truncate);
    while let Ok(Some(line)) = reader.next_line().await {
        sink.send(clean_server_line(&line.bytes, line.truncated));
    }
}

/// Control characters other than TAB become U+FFFD (invalid UTF-8 too), secrets are redacted,
/// and the result is cut to 4096 bytes at a character boundary with `…` appended when anything
/// was cut (here or by the reader, `already_cut`).
pub fn clean_server_line(raw: &[u8], already_cut: bool) -> String {
    let text: String = String::from_utf8_lossy(raw)
        .chars()
        .map(|c| if c.is_control() && c != '\t' { '\u{FFFD}' } else { c })
        .collect();
    let redacted = odek_contract::redaction::redact(&text);
    let mut cut = already_cut;
    let mut end = redacted.len();
    if end > MAX_SERVER_LINE_BYTES {
        end = MAX_SERVER_LINE_BYTES;
        while !redacted.is_char_boundary(end) {
            end -= 1;
        }
        cut = true;
    }
    let mut line = redacted[..end].to_owned();
    if cut {
        line.push('\u{2026}');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_replacement_red() {
        assert_eq!(clean_server_line(b"a\x1b[31mred\tx\r", false), "a\u{FFFD}[31mred\tx\u{FFFD}");
        assert_eq!(clean_server_line(b"bad \xff byte", false), "bad \u{FFFD} byte");
    }

    #[test]
    fn long_lines_are_cut_at_a_character_boundary() {
        let line = "é".repeat(3000); // 6000 bytes
        let cleaned = clean_server_line(line.as_bytes(), false);
        assert!(cleaned.ends_with('\u{2026}'));
        assert_eq!(cleaned.len(), 4096 + '\u{2026}'.len_utf8());
        assert_eq!(clean_server_line(b"short", true), "short\u{2026}");
    }

    #[test]
    fn secrets_in_server_lines_are_redacted_red() {
        let cleaned = clean_server_line(b"token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB leaked", false);
        assert!(!cleaned.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"), "{cleaned}");
        assert!(cleaned.contains("[REDACTED]"));
    }
}
