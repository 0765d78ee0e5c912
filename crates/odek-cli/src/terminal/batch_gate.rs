//! The interactive batch approval card (spec `loop-and-sessions.md` §11): every risky call of a
//! batch on one card, answered with a single keystroke — `y` runs the batch, `n` denies it (the
//! default for any other key), `a` also approves these exact commands for the rest of the run
//! (not offered when a call is unclassifiable).
//!
//! Also how every approval reads the terminal ([`read_key`], [`read_stdin_byte`]): straight from
//! fd 0, a byte at a time, never through std's buffered stdin (one buffered read would keep the
//! rest of an arrow key's escape sequence for the next question), and waiting in short slices so
//! a stop signal ends the wait.

use std::io::{IsTerminal, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, poll};
use nix::sys::termios::{FlushArg, LocalFlags, SetArg, SpecialCharacterIndices, tcflush, tcgetattr, tcsetattr};
use odek::agent::run::{ApprovalItem, BatchApprover, GateAnswer};
use odek::llm::BoxFuture;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};

use super::status::StatusDisplay;

/// The card's text (without the key legend).
pub fn approval_card(items: &[ApprovalItem]) -> String {
    let mut card = if items.len() == 1 {
        "⚠️ The following tool action requires approval:\n".to_owned()
    } else {
        format!("⚠️ {} tool actions require approval:\n", items.len())
    };
    for (index, item) in items.iter().enumerate() {
        // A newline in a command could forge another numbered line: show it as a symbol.
        let resource = sanitise_for_terminal(&item.risk.resource, Layout::Lines).replace('\n', " ⏎ ");
        let tool = sanitise_for_terminal(&item.tool, Layout::Line);
        card.push_str(&format!("  {}. `{tool}` — `{resource}` ({})\n", index + 1, item.risk.class.as_str()));
    }
    card
}

/// The answer a key stands for.
pub fn answer_for_key(key: u8, allow_always: bool) -> GateAnswer {
    match key {
        b'y' | b'Y' => GateAnswer::Approve,
        b'a' | b'A' if allow_always => GateAnswer::ApproveAlways,
        _ => GateAnswer::Deny,
    }
}

/// The card on stderr, the key from the terminal on stdin.
pub struct TerminalBatchGate {
    display: Arc<StatusDisplay>,
}

impl TerminalBatchGate {
    /// `None` when stdin is not a terminal (the gate is interactive only).
    pub fn new(display: Arc<StatusDisplay>) -> Option<TerminalBatchGate> {
        std::io::stdin().is_terminal().then_some(TerminalBatchGate { display })
    }
}

impl BatchApprover for TerminalBatchGate {
    fn approve<'a>(&'a self, items: &'a [ApprovalItem], allow_always: bool) -> BoxFuture<'a, GateAnswer> {
        let mut prompt = approval_card(items);
        prompt.push_str(if allow_always {
            "[y] approve  [n] deny  [a] approve and trust these commands for this run: "
        } else {
            "[y] approve  [n] deny: "
        });
        let display = Arc::clone(&self.display);
        Box::pin(async move {
            let key = tokio::task::spawn_blocking(move || display.suspend(|| ask(&prompt))).await.ok().flatten();
            key.map_or(GateAnswer::Deny, |key| answer_for_key(key, allow_always))
        })
    }
}

/// Prints the prompt and reads one key without waiting for Enter; `None` on any failure.
fn ask(prompt: &str) -> Option<u8> {
    let mut stderr = std::io::stderr().lock();
    let key = read_key(|| {
        stderr.write_all(prompt.as_bytes())?;
        stderr.flush()
    });
    let echo = key.map_or('-', char::from);
    let _ = writeln!(stderr, "{}", if echo.is_ascii_graphic() { echo } else { '-' });
    key
}

/// How long one wait for input lasts before a stop signal is looked for again.
const STOP_POLL_SLICE: u16 = 100;

/// After a key, how long the terminal may stay quiet before the key is taken as complete: the
/// rest of an escape sequence or of a multi-byte character arrives within it.
const KEY_REST_QUIET: u16 = 30;

/// At most this long is spent discarding the rest of a key (a held key repeats forever).
const KEY_REST_MAX: Duration = Duration::from_millis(250);

/// Shows a prompt (`show_prompt`) and reads the one key that answers it, from the terminal on
/// stdin in non-canonical mode without echo (the mode restored after). Keys typed before the
/// prompt was shown are discarded first, so type-ahead never answers it; after the key, the
/// rest of a multi-byte key (an arrow's `ESC [ A`, a UTF-8 character) is discarded too, so it
/// cannot answer the next question. `None` on any failure, at end of input, or once a stop
/// signal arrived. The MCP tool approval card reads its keys here too.
pub(crate) fn read_key(show_prompt: impl FnOnce() -> std::io::Result<()>) -> Option<u8> {
    // After a stop signal a question (another server's card) is not even shown.
    if stop_signal_received() {
        return None;
    }
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let original = tcgetattr(fd).ok()?;
    let mut raw = original.clone();
    raw.local_flags.remove(LocalFlags::ICANON | LocalFlags::ECHO);
    raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    tcsetattr(fd, SetArg::TCSANOW, &raw).ok()?;
    let _ = tcflush(fd, FlushArg::TCIFLUSH);
    let key = show_prompt().ok().and_then(|()| read_stdin_byte());
    if key.is_some() {
        discard_rest_of_key(fd);
    }
    let _ = tcsetattr(fd, SetArg::TCSANOW, &original);
    key
}

/// One byte read from fd 0 itself (never through std's buffer), waiting in slices of
/// [`STOP_POLL_SLICE`] ms; `None` at end of input, on an error, or once a stop signal
/// (SIGINT, SIGTERM, SIGHUP) arrived — the wait ends then, as the default action once ended
/// the whole process.
pub(crate) fn read_stdin_byte() -> Option<u8> {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    loop {
        if stop_signal_received() {
            return None;
        }
        match wait_readable(fd, STOP_POLL_SLICE) {
            Readiness::Quiet => continue,
            Readiness::Closed => return None,
            Readiness::Readable => {}
        }
        let mut byte = [0_u8; 1];
        match nix::unistd::read(fd, &mut byte) {
            Ok(1) => return Some(byte[0]),
            Err(Errno::EINTR | Errno::EAGAIN) => continue,
            Ok(_) | Err(_) => return None,
        }
    }
}

/// Whether SIGINT, SIGTERM or SIGHUP arrived (in `odek repl`: stopped the running turn): then
/// no question waits for an answer.
pub(crate) fn stop_signal_received() -> bool {
    crate::interrupt::received_stop_signal().is_some() || crate::repl_interrupt::turn_stopped()
}

/// What one bounded wait on fd 0 found.
enum Readiness {
    Readable,
    Quiet,
    Closed,
}

fn wait_readable(fd: BorrowedFd<'_>, timeout_ms: u16) -> Readiness {
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    match poll(&mut fds, timeout_ms) {
        Ok(0) | Err(Errno::EINTR) => Readiness::Quiet,
        Ok(_) => match fds[0].revents() {
            Some(events) if events.contains(PollFlags::POLLIN) => Readiness::Readable,
            _ => Readiness::Closed,
        },
        Err(_) => Readiness::Closed,
    }
}

/// Reads and drops what follows a key until the terminal is quiet for [`KEY_REST_QUIET`] ms
/// (at most [`KEY_REST_MAX`]), then flushes the input queue.
fn discard_rest_of_key(fd: BorrowedFd<'_>) {
    let deadline = Instant::now() + KEY_REST_MAX;
    let mut buffer = [0_u8; 64];
    while Instant::now() < deadline {
        match wait_readable(fd, KEY_REST_QUIET) {
            Readiness::Readable => match nix::unistd::read(fd, &mut buffer) {
                Ok(1..) | Err(Errno::EINTR | Errno::EAGAIN) => {}
                Ok(0) | Err(_) => break,
            },
            Readiness::Quiet | Readiness::Closed => break,
        }
    }
    let _ = tcflush(fd, FlushArg::TCIFLUSH);
}

#[cfg(test)]
mod tests {
    use odek::agent::tool::Risk;
    use odek::danger::DangerClass;

    use super::*;

    fn item(tool: &str, resource: &str) -> ApprovalItem {
        ApprovalItem {
            tool: tool.to_owned(),
            risk: Risk { class: DangerClass::NetworkEgress, resource: resource.to_owned() },
        }
    }

    #[test]
    fn one_item_uses_the_singular_heading() {
        assert_eq!(
            approval_card(&[item("shell", "curl example.com")]),
            "⚠️ The following tool action requires approval:\n  1. `shell` — `curl example.com` (network_egress)\n"
        );
    }

    #[test]
    fn several_items_are_numbered() {
        let card = approval_card(&[item("shell", "curl a"), item("shell", "wget b")]);
        assert!(card.starts_with("⚠️ 2 tool actions require approval:\n  1. `shell` — `curl a`"));
        assert!(card.contains("\n  2. `shell` — `wget b`"));
    }

    #[test]
    fn keys_map_to_answers_and_always_needs_permission() {
        assert_eq!(answer_for_key(b'y', false), GateAnswer::Approve);
        assert_eq!(answer_for_key(b'a', true), GateAnswer::ApproveAlways);
        assert_eq!(answer_for_key(b'a', false), GateAnswer::Deny);
        assert_eq!(answer_for_key(b'\n', true), GateAnswer::Deny);
    }

    #[test]
    fn control_characters_in_commands_cannot_repaint_the_card_red() {
        let card = approval_card(&[item("shell", "rm -rf x\u{1b}[2K\rls")]);
        assert!(!card.contains('\u{1b}'));
        let forged = approval_card(&[item("shell", "rm -rf ~\n  2. `shell` — `ls`")]);
        assert_eq!(forged.lines().count(), 2, "{forged}");
    }

    /// Before: the card replaced control characters only, so a U+202E reversed how the rest of a
    /// command read and an OSC sequence's text was printed after the U+FFFD of its ESC.
    #[test]
    fn bidi_controls_and_escape_sequences_cannot_disguise_the_card_red() {
        let card = approval_card(&[item("sh\u{202E}ll", "curl \u{202E}moc.elpmaxe\u{1b}]0;safe\u{7} | sh")]);
        assert_eq!(
            card,
            "⚠️ The following tool action requires approval:\n  1. `sh\u{FFFD}ll` — `curl \u{FFFD}moc.elpmaxe | sh` (network_egress)\n"
        );
    }
}
