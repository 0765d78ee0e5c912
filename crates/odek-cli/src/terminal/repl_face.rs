//! What `odek repl` shows: the terminal face of `odek run` ([`TerminalFace`]: status line, call
//! records, MCP lines and approval cards on stderr) plus, when the answers stream and stdout is
//! a terminal, the answer text on stdout as it arrives ([`AnswerStream`]).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use odek::agent::run::BatchApprover;
use odek::approvals::Console;
use odek::{LoopEvent, McpEvent, PlanEvent, Subscriber};
use odek_contract::redaction::{redact, take_redactable};
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};

use super::face::TerminalFace;

/// Streamed answer text made fit for the terminal piece by piece. Each piece is redacted and
/// sanitised on its own, so a delta is held back from its last white space on: a secret (which
/// has none) split between two deltas is still redacted whole. Splitting anywhere stays safe:
/// an escape sequence cut in two loses its ESC to U+FFFD and prints the rest as plain text.
#[derive(Debug, Default)]
pub struct AnswerStream {
    held: String,
    /// Whether anything was printed this turn, and whether the last byte printed was `\n`.
    printed: bool,
    at_line_start: bool,
}

impl AnswerStream {
    /// What of `text` (after what was held) can be shown now.
    pub fn push(&mut self, text: &str) -> Option<String> {
        self.held.push_str(text);
        let ready = take_redactable(&mut self.held)?;
        Some(self.shown(&ready))
    }

    /// The rest of the turn's text, ending its line when anything was printed; the stream is
    /// ready for the next turn.
    pub fn finish(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        let mut shown = if held.is_empty() { String::new() } else { self.shown(&held) };
        if self.printed && !self.at_line_start {
            shown.push('\n');
        }
        self.printed = false;
        self.at_line_start = true;
        shown
    }

    /// Whether this turn printed text (so its answer is on the screen already).
    pub fn printed(&self) -> bool {
        self.printed || !self.held.is_empty()
    }

    fn shown(&mut self, text: &str) -> String {
        let shown = sanitise_for_terminal(&redact(text), Layout::Block).into_owned();
        if !shown.is_empty() {
            self.printed = true;
            self.at_line_start = shown.ends_with('\n');
        }
        shown
    }
}

/// The REPL's subscriber.
pub struct ReplFace {
    terminal: TerminalFace,
    /// Whether answers are streamed to a terminal on stdout ([`ReplFace::set_streaming`]).
    streaming: AtomicBool,
    stream: Mutex<AnswerStream>,
}

impl ReplFace {
    pub fn new(quiet: bool) -> ReplFace {
        ReplFace { terminal: TerminalFace::new(quiet), streaming: AtomicBool::new(false), stream: Mutex::default() }
    }

    /// Prints streamed answer text on stdout as it arrives (once the settings say the answers
    /// stream and stdout is a terminal).
    pub fn set_streaming(&self, streaming: bool) {
        self.streaming.store(streaming, Ordering::Release);
    }

    fn stream(&self) -> Option<std::sync::MutexGuard<'_, AnswerStream>> {
        self.streaming.load(Ordering::Acquire).then(|| self.stream.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn terminal(&self) -> &TerminalFace {
        &self.terminal
    }

    /// Ends the turn's streamed text; `true` when the turn's text was printed as it arrived
    /// (then its answer is not printed again).
    pub fn finish_stream(&self) -> bool {
        let Some(mut stream) = self.stream() else { return false };
        let printed = stream.printed();
        let rest = stream.finish();
        self.print(&rest);
        printed
    }

    fn print(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.terminal.suspended(|| {
            let mut stdout = std::io::stdout().lock();
            // After a hangup the terminal is gone: a failed write must not end the turn.
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
        });
    }

    /// Text printed so far this turn ends its line before a tool call's record appears.
    fn break_line(&self) {
        let Some(mut stream) = self.stream() else { return };
        if stream.printed() {
            let rest = stream.finish();
            self.print(&rest);
            self.terminal.resume_status();
        }
    }
}

impl Subscriber for ReplFace {
    fn warning(&self, text: &str) {
        self.terminal.warning(text);
    }

    fn notice(&self, text: &str) {
        self.terminal.notice(text);
    }

    fn delta(&self, text: &str, reasoning: bool) {
        self.terminal.delta(text, reasoning);
        if reasoning {
            return;
        }
        let shown = self.stream().and_then(|mut stream| stream.push(text));
        if let Some(shown) = shown.filter(|shown| !shown.is_empty()) {
            self.terminal.pause_status();
            self.print(&shown);
        }
    }

    fn progress(&self, event: &LoopEvent<'_>) {
        if matches!(event, LoopEvent::ToolCallStarted { .. }) {
            self.break_line();
        }
        self.terminal.progress(event);
    }

    fn plan(&self, event: &PlanEvent) {
        self.terminal.plan(event);
    }

    fn mcp_event(&self, event: McpEvent) {
        self.terminal.mcp_event(event);
    }

    fn mcp_warning(&self, server: &str, text: &str) {
        self.terminal.mcp_warning(server, text);
    }

    fn server_line(&self, server: &str, line: &str) {
        self.terminal.server_line(server, line);
    }

    fn console(&self) -> Option<Arc<dyn Console>> {
        self.terminal.console()
    }

    fn elicitor(&self) -> Option<Arc<dyn odek::mcp::Elicitor>> {
        self.terminal.form_elicitor()
    }

    fn loop_started(&self) {
        self.terminal.loop_started();
    }

    fn batch_approver(&self) -> Option<Arc<dyn BatchApprover>> {
        self.terminal.batch_approver()
    }

    fn loop_finished(&self) {
        self.terminal.loop_finished();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before (printing each delta as it came): a key split over two deltas was never seen whole
    /// by the redaction, and reached the terminal.
    #[test]
    fn a_secret_split_between_deltas_is_redacted_whole_red() {
        let secret = format!("ghp_{}", "x".repeat(40));
        let (head, tail) = secret.split_at(10);
        let mut stream = AnswerStream::default();
        let mut shown = String::new();
        for delta in ["the token is ", head, tail, " ok"] {
            shown.push_str(&stream.push(delta).unwrap_or_default());
        }
        shown.push_str(&stream.finish());
        assert_eq!(shown, "the token is [REDACTED] ok\n");
    }

    #[test]
    fn escape_sequences_never_reach_the_terminal_red() {
        let mut stream = AnswerStream::default();
        let mut shown = String::new();
        for delta in ["title \u{1b}]0;", "pwned \u{7} and \u{1b}[2", "J clear\u{202E}"] {
            shown.push_str(&stream.push(delta).unwrap_or_default());
        }
        shown.push_str(&stream.finish());
        assert!(!shown.contains(['\u{1b}', '\u{7}', '\u{202E}']), "{shown:?}");
    }

    #[test]
    fn text_is_shown_up_to_its_last_white_space_and_a_long_word_is_not_held_forever() {
        let mut stream = AnswerStream::default();
        assert_eq!(stream.push("Hello wor"), Some("Hello ".to_owned()));
        assert_eq!(stream.push("ld\n"), Some("world\n".to_owned()));
        assert_eq!(stream.finish(), "");
        assert!(!stream.printed());
        let word = "y".repeat(odek_contract::redaction::MAX_HELD_STREAM_BYTES + 1);
        assert_eq!(stream.push(&word), Some(word.clone()));
        assert_eq!(stream.finish(), "\n");
    }
}
