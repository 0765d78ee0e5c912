//! The interactive batch approval card (spec `loop-and-sessions.md` §11): every risky call of a
//! batch on one card, answered with a single keystroke — `y` runs the batch, `n` denies it (the
//! default for any other key), `a` also approves these exact commands for the rest of the run
//! (not offered when a call is unclassifiable).

use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::sync::Arc;

use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
use odek_agent::run::{ApprovalItem, BatchApprover, GateAnswer};
use odek_llm::BoxFuture;

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
        let resource = odek_mcp::observer::terminal_safe(&item.risk.resource).replace('\n', " ⏎ ");
        card.push_str(&format!("  {}. `{}` — `{}` ({})\n", index + 1, item.tool, resource, item.risk.class.as_str()));
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
    stderr.write_all(prompt.as_bytes()).ok()?;
    stderr.flush().ok()?;
    let key = read_key();
    let echo = key.map_or('-', char::from);
    let _ = writeln!(stderr, "{}", if echo.is_ascii_graphic() { echo } else { '-' });
    key
}

/// One byte from the terminal on stdin, in non-canonical mode without echo (the mode restored
/// after); `None` on any failure. The MCP tool approval card reads its keys here too.
pub(crate) fn read_key() -> Option<u8> {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let original = tcgetattr(fd).ok()?;
    let mut raw = original.clone();
    raw.local_flags.remove(LocalFlags::ICANON | LocalFlags::ECHO);
    tcsetattr(fd, SetArg::TCSANOW, &raw).ok()?;
    let mut byte = [0_u8; 1];
    let read = stdin.lock().read(&mut byte);
    let _ = tcsetattr(fd, SetArg::TCSANOW, &original);
    matches!(read, Ok(1)).then_some(byte[0])
}

#[cfg(test)]
mod tests {
    use odek_agent::danger::DangerClass;
    use odek_agent::tool::Risk;

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
}
