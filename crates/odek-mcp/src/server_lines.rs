//! Text a server sends us for humans: stderr lines and `notifications/message` logs (spec
//! `mcp-client.md` §5 "Stderr" and §8). Each line is cleaned (terminal-safe text, secret
//! redaction, a 4096-byte cut) and printed as `[<server>] <line>` through a bounded queue of 256
//! that drops and counts when full, so a flooding server never blocks and never grows memory.
//! [beyond] A multi-line log message is forwarded line by line ([`log_message_lines`]); a
//! running call's progress, where the observer shows it, as one line ([`progress_line`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use odek_contract::terminal_text::{Layout, sanitise_for_terminal};

use crate::bounded_lines::{BoundedLineReader, Overflow};
use crate::observer::McpObserver;

/// Longest forwarded line, in bytes, before `…` is appended.
pub const MAX_SERVER_LINE_BYTES: usize = 4096;
/// Lines waiting to be printed before new ones are dropped.
pub const SERVER_LINE_QUEUE: usize = 256;
/// Raw bytes read of one stderr line before the rest is discarded: room for redaction to see a
/// secret that straddles the 4096-byte cut.
pub const RAW_SERVER_LINE_BYTES: usize = 2 * MAX_SERVER_LINE_BYTES;

/// [beyond] Most lines one `notifications/message` is forwarded as. A message with more lines
/// forwards its first 32 and then one `<level>: … <n> more line(s)` line; well under the queue
/// bound, so one message alone never fills it.
pub const MAX_LOG_MESSAGE_LINES: usize = 32;
/// [beyond] Bytes of a log message's data looked at (64 KiB): redacted as one text, so a secret
/// spread over lines (a PEM key) is seen whole, then split into lines. Lines past it are only
/// counted.
pub const LOG_MESSAGE_WINDOW_BYTES: usize = 64 * 1024;

/// The bounded queue in front of the observer. Cheap to clone; the printer thread ends when the
/// last clone is dropped.
#[derive(Clone)]
pub struct ServerLineSink {
    queue: mpsc::Sender<String>,
    dropped: Arc<AtomicU64>,
    /// \[beyond\] The last non-blank stderr line, cleaned: what a server that exits during
    /// start-up last said ([`ServerLineSink::last_stderr_line`]).
    last_stderr: Arc<Mutex<Option<String>>>,
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
        Self { queue, dropped, last_stderr: Arc::new(Mutex::new(None)) }
    }

    /// \[beyond\] The last non-blank line the server wrote on stderr, cleaned as forwarded.
    pub fn last_stderr_line(&self) -> Option<String> {
        self.last_stderr.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// A cleaned stderr line: kept as the last one (unless blank), then queued.
    fn send_stderr(&self, line: String) {
        if !line.trim().is_empty() {
            *self.last_stderr.lock().unwrap_or_else(PoisonError::into_inner) = Some(line.clone());
        }
        self.send(line);
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
        sink.send_stderr(clean_server_line(&line.bytes, line.truncated));
    }
}

/// The line made terminal-safe as one line ([`Layout::Line`]: escape sequences removed, control
/// characters other than TAB and bidirectional controls become U+FFFD, invalid UTF-8 too),
/// secrets redacted, and the result cut to 4096 bytes at a character boundary with `…` appended
/// when anything was cut (here or by the reader, `already_cut`).
pub fn clean_server_line(raw: &[u8], already_cut: bool) -> String {
    let decoded = String::from_utf8_lossy(raw);
    let text = sanitise_for_terminal(&decoded, Layout::Line);
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

/// [beyond] A `notifications/message` as forwarded lines, spec §8 applied per line: the data is
/// split on `\n`, `\r\n` and `\r` (a final line terminator ends the last line, it does not
/// start an empty one), and each line becomes `<level>: <line>`, cleaned, redacted and cut as a
/// stderr line is. At most [`MAX_LOG_MESSAGE_LINES`] lines, then `<level>: … <n> more line(s)`.
///
/// Redaction first runs over the first [`LOG_MESSAGE_WINDOW_BYTES`] of the data as a whole, so it
/// never sees what lies past the window: the line the window cuts is not printed (its tail may
/// hold the rest of a secret), nor is anything from a private key whose END is past the window
/// on; both count among the `<n> more`, as do the lines past the window.
pub fn log_message_lines(level: &str, data: &str) -> Vec<String> {
    let level = &level[..floor_char_boundary(level, RAW_SERVER_LINE_BYTES)];
    let window_end = floor_char_boundary(data, LOG_MESSAGE_WINDOW_BYTES);
    let (window, rest) = data.split_at(window_end);
    let redacted = odek_contract::redaction::redact(window);
    let mut pieces = split_log_lines(&redacted);
    let mut withheld = 0;
    if !rest.is_empty() && !window.ends_with(['\n', '\r']) {
        pieces.pop();
        withheld += 1;
    }
    if let Some(first) = pieces.iter().position(|piece| opens_unterminated_private_key(piece)) {
        withheld += pieces.len() - first;
        pieces.truncate(first);
    }
    let mut lines = Vec::with_capacity(pieces.len().min(MAX_LOG_MESSAGE_LINES) + 1);
    for piece in pieces.iter().take(MAX_LOG_MESSAGE_LINES) {
        let piece_end = floor_char_boundary(piece, RAW_SERVER_LINE_BYTES);
        let raw = format!("{level}: {}", &piece[..piece_end]);
        lines.push(clean_server_line(raw.as_bytes(), piece_end < piece.len()));
    }
    let more = pieces.len().saturating_sub(MAX_LOG_MESSAGE_LINES) + withheld + lines_past_the_window(window, rest);
    if more > 0 {
        lines.push(clean_server_line(format!("{level}: \u{2026} {more} more line(s)").as_bytes(), false));
    }
    lines
}

/// [beyond] A `notifications/progress` as a forwarded line: `progress <progress>[/<total>][:
/// <message>]`, cleaned, redacted and cut as a stderr line is. `None` when `params` carry no
/// numeric `progress` (nothing to show).
pub fn progress_line(params: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Progress {
        progress: serde_json::Value,
        #[serde(default)]
        total: Option<serde_json::Value>,
        #[serde(default)]
        message: Option<serde_json::Value>,
    }
    let Progress { progress, total, message } = serde_json::from_str(params).ok()?;
    let mut line = format!("progress {}", progress.as_f64()?);
    if let Some(total) = total.as_ref().and_then(serde_json::Value::as_f64) {
        line.push_str(&format!("/{total}"));
    }
    if let Some(message) = message.as_ref().and_then(serde_json::Value::as_str).filter(|text| !text.is_empty()) {
        let end = floor_char_boundary(message, RAW_SERVER_LINE_BYTES);
        line.push_str(": ");
        line.push_str(&message[..end]);
        return Some(clean_server_line(line.as_bytes(), end < message.len()));
    }
    Some(clean_server_line(line.as_bytes(), false))
}

/// Whether a line of redacted text still holds a private key's BEGIN line: redaction replaces a
/// whole key, so one left is a key whose END it did not see.
fn opens_unterminated_private_key(line: &str) -> bool {
    line.match_indices("-----BEGIN ").any(|(at, _)| line[at..].contains("PRIVATE KEY"))
}

/// `text` split on `\n`, `\r\n` and `\r`; a terminator at the very end adds no empty line,
/// and empty text is one empty line.
fn split_log_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\n' => {
                pieces.push(&text[start..at]);
                at += 1;
                start = at;
            }
            b'\r' => {
                pieces.push(&text[start..at]);
                at += if bytes.get(at + 1) == Some(&b'\n') { 2 } else { 1 };
                start = at;
            }
            _ => at += 1,
        }
    }
    if start < bytes.len() || pieces.is_empty() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Lines that begin in `rest`, the data after `window`: its first bytes start a line only when
/// the window ended one (a `\r\n` the window splits ends it once).
fn lines_past_the_window(window: &str, rest: &str) -> usize {
    let rest = if window.ends_with('\r') { rest.strip_prefix('\n').unwrap_or(rest) } else { rest };
    let starts_a_line = !rest.is_empty() && window.ends_with(['\n', '\r']);
    usize::from(starts_a_line) + lines_started_in(rest)
}

/// Lines that begin inside `text` after its first one: every line terminator (`\r\n` counted
/// once) except one at the very end. Counted in place, so a flood of line feeds costs no memory.
fn lines_started_in(text: &str) -> usize {
    let bytes = text.as_bytes();
    let terminators = memchr::memchr2_iter(b'\n', b'\r', bytes)
        .filter(|&at| !(bytes[at] == b'\n' && at > 0 && bytes[at - 1] == b'\r'))
        .count();
    terminators - usize::from(text.ends_with(['\n', '\r']))
}

/// The largest index `<= max` that is a character boundary of `text`.
fn floor_char_boundary(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_replacement_red() {
        assert_eq!(clean_server_line(b"a\x1b[31mred\tx\r", false), "ared\tx\u{FFFD}");
        assert_eq!(clean_server_line(b"bad \xff byte", false), "bad \u{FFFD} byte");
        assert_eq!(clean_server_line(b"lone \x1b", false), "lone \u{FFFD}");
    }

    /// Before: only control characters were replaced, so a U+202E reordered the line and the
    /// rest of an OSC sequence (a window title, a hyperlink) was printed after the U+FFFD.
    #[test]
    fn bidi_controls_and_escape_sequences_never_reach_the_terminal_red() {
        let raw = "\u{202E}evil \u{1b}]0;title\u{7}\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\ done";
        assert_eq!(clean_server_line(raw.as_bytes(), false), "\u{FFFD}evil link done");
        assert_eq!(log_message_lines("info", raw), ["info: \u{FFFD}evil link done"]);
    }

    #[test]
    fn progress_is_one_clean_line_red() {
        let line = |params: &str| progress_line(params);
        assert_eq!(
            line(r#"{"progressToken":1,"progress":50,"total":300,"message":"sleeping"}"#).unwrap(),
            "progress 50/300: sleeping"
        );
        assert_eq!(line(r#"{"progressToken":1,"progress":0.5}"#).unwrap(), "progress 0.5");
        let hostile = r#"{"progress":1,"message":"\u202eevil\u001b]0;title\u0007 ok\nnext"}"#;
        assert_eq!(line(hostile).unwrap(), "progress 1: \u{FFFD}evil ok\u{FFFD}next");
        let long = format!(r#"{{"progress":1,"message":"{}"}}"#, "x".repeat(10_000));
        assert_eq!(line(&long).unwrap().len(), 4096 + '\u{2026}'.len_utf8());
        assert_eq!(line(r#"{"progressToken":1}"#), None);
        assert_eq!(line(r#"{"progress":"half"}"#), None);
        assert_eq!(line("not json"), None);
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
    fn multi_line_log_messages_are_forwarded_line_by_line() {
        assert_eq!(
            log_message_lines("info", "one\ntwo\r\nthree\rfour\n"),
            ["info: one", "info: two", "info: three", "info: four"]
        );
        assert_eq!(log_message_lines("warning", ""), ["warning: "]);
        assert_eq!(log_message_lines("info", "a\n\nb"), ["info: a", "info: ", "info: b"]);
        assert_eq!(log_message_lines("info", "tab\there \u{1b}[31m"), ["info: tab\there "]);
        assert_eq!(log_message_lines("in\nfo", "x"), ["in\u{FFFD}fo: x"]);
    }

    #[test]
    fn log_messages_forward_at_most_32_lines_then_a_count() {
        let data: Vec<String> = (1..=40).map(|n| format!("line {n}")).collect();
        let lines = log_message_lines("debug", &data.join("\n"));
        assert_eq!(lines.len(), MAX_LOG_MESSAGE_LINES + 1);
        assert_eq!(lines[31], "debug: line 32");
        assert_eq!(lines[32], "debug: \u{2026} 8 more line(s)");
        let exactly: Vec<String> = (1..=32).map(|n| format!("l{n}")).collect();
        assert_eq!(log_message_lines("info", &exactly.join("\n")).len(), 32);
    }

    #[test]
    fn log_message_lines_are_cut_and_the_window_is_bounded() {
        let long = "x".repeat(10_000);
        let lines = log_message_lines("info", &format!("{long}\nshort"));
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), MAX_SERVER_LINE_BYTES + '\u{2026}'.len_utf8());
        assert_eq!(lines[1], "info: short");
        // Past the 64 KiB window lines are only counted; the line the window cuts is counted, not
        // printed (its tail is past the window).
        let data = format!("{}\n{}\nafter 1\nafter 2\n", "a".repeat(100), "b".repeat(LOG_MESSAGE_WINDOW_BYTES));
        let lines = log_message_lines("info", &data);
        assert_eq!(lines, [format!("info: {}", "a".repeat(100)), "info: \u{2026} 3 more line(s)".to_owned()]);
        // A window that ends exactly at a line's end cuts nothing.
        let data = format!("{}\n{}\nafter\r\n", "a".repeat(LOG_MESSAGE_WINDOW_BYTES - 7), "b".repeat(5));
        let lines = log_message_lines("info", &data);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1..], ["info: bbbbb".to_owned(), "info: \u{2026} 1 more line(s)".to_owned()]);
    }

    #[test]
    fn lines_past_the_window_are_counted_in_place() {
        assert_eq!(lines_started_in(""), 0);
        assert_eq!(lines_started_in("tail"), 0);
        assert_eq!(lines_started_in("tail\n"), 0);
        assert_eq!(lines_started_in("tail\nnext"), 1);
        assert_eq!(lines_started_in("a\r\nb\rc\n\nd\r\n"), 4);
        assert_eq!(lines_started_in(&"\n".repeat(10 << 20)), (10 << 20) - 1);
        // The `\r\n` the window splits is one terminator.
        let data = format!("{}\r\nnext", "a".repeat(LOG_MESSAGE_WINDOW_BYTES - 1));
        assert_eq!(log_message_lines("info", &data)[1], "info: \u{2026} 1 more line(s)");
    }

    /// Before: redaction saw only the window, and the cut line was printed with the head of a
    /// token whose tail was past it (19 of its 36 characters).
    #[test]
    fn a_token_straddling_the_window_is_never_printed_red() {
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let head = LOG_MESSAGE_WINDOW_BYTES - "first\n".len() - "token ".len() - 19;
        let data = format!("first\n{}token {token} tail\nlast", "x".repeat(head));
        let lines = log_message_lines("info", &data);
        assert_eq!(lines, ["info: first", "info: \u{2026} 2 more line(s)"]);
        assert!(lines.iter().all(|line| !line.contains("ghp_")), "{lines:?}");
    }

    /// Before: a private key whose END was past the window printed its BEGIN line and body.
    #[test]
    fn a_private_key_whose_end_is_past_the_window_is_withheld_red() {
        let body: String = (0..2000).map(|n| format!("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{n:06}\n")).collect();
        let data = format!("loaded\nkey: -----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----\ndone");
        let lines = log_message_lines("error", &data);
        assert_eq!(lines, ["error: loaded".to_owned(), "error: \u{2026} 2003 more line(s)".to_owned()]);
        // A whole key inside the window is redacted, not withheld.
        let small = "loaded\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\ndone";
        assert_eq!(log_message_lines("error", small), ["error: loaded", "error: [REDACTED]", "error: done"]);
    }

    #[test]
    fn a_secret_spread_over_log_lines_is_redacted_red() {
        let key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----";
        let lines = log_message_lines("error", &format!("loaded key\n{key}\ndone"));
        assert_eq!(lines, ["error: loaded key", "error: [REDACTED]", "error: done"]);
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB";
        let lines = log_message_lines("info", &format!("first\ntoken {token}"));
        assert_eq!(lines, ["info: first", "info: token [REDACTED]"]);
    }

    #[test]
    fn secrets_in_server_lines_are_redacted_red() {
        let cleaned = clean_server_line(b"token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB leaked", false);
        assert!(!cleaned.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"), "{cleaned}");
        assert!(cleaned.contains("[REDACTED]"));
    }
}
