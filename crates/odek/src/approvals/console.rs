//! The operator's terminal as approvals see it: whether stdin is a terminal, a prompt that
//! reads one answer line (server approval), a prompt that reads one key (the tool approval card,
//! in the batch approval card's single-key style), and a sink for warnings. [`StdConsole`] is the
//! real one; tests script a [`Console`] of their own. Server-supplied text in a prompt is
//! terminal-safe text ([`odek_contract::terminal_text`]), so it cannot repaint or hide what the
//! operator is approving.

use std::io::{IsTerminal, Write};

use crate::terminal::batch_gate::{read_key, read_stdin_byte, stop_signal_received};
use crate::terminal::print_warning;

/// Longest answer line read from stdin (bytes); the rest of a longer line is not read.
pub const MAX_ANSWER_BYTES: usize = 4096;

/// Longest description shown in a tool prompt (bytes, `...` included).
pub const MAX_PROMPT_DESCRIPTION_BYTES: usize = 200;

/// Where approvals ask and warn.
pub trait Console: Send + Sync {
    /// True when stdin is a terminal, i.e. a prompt can be answered.
    fn is_interactive(&self) -> bool;
    /// Prints `text` on stdout exactly as given (no newline added) and reads one answer line.
    /// `None` on end of input, a read error or a stop signal (treated as "no").
    fn prompt(&self, text: &str) -> Option<String>;
    /// Prints `text` on stdout exactly as given and reads one key, without waiting for Enter.
    /// `None` on end of input, a read error or a stop signal (treated as "no"). The default, for consoles that
    /// cannot read single keys, reads an answer line and takes its first character.
    fn prompt_key(&self, text: &str) -> Option<char> {
        self.prompt(text).and_then(|answer| answer.chars().next())
    }
    /// Reports a warning (text without the `odek: warning: ` prefix).
    fn warn(&self, text: &str) {
        print_warning(text);
    }
}

/// The process's stdin, stdout and stderr.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdConsole;

impl Console for StdConsole {
    fn is_interactive(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    /// The line is read from fd 0 a byte at a time ([`read_answer_line`]), so nothing past it is
    /// taken from the terminal, and a stop signal ends the wait with no answer.
    fn prompt(&self, text: &str) -> Option<String> {
        if stop_signal_received() {
            return None;
        }
        {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes()).ok()?;
            stdout.flush().ok()?;
        }
        read_answer_line()
    }

    /// Read the way the batch approval card reads its key ([`read_key`]): type-ahead (the rest
    /// of an earlier answer line, keys pressed while a server started) is discarded before, the
    /// rest of a multi-byte key after, so an approval is only ever answered by the key pressed
    /// for it. The key is echoed (`-` when it is not printable) so the record on screen shows
    /// every answer.
    fn prompt_key(&self, text: &str) -> Option<char> {
        let mut stdout = std::io::stdout().lock();
        let key = read_key(|| {
            stdout.write_all(text.as_bytes())?;
            stdout.flush()
        })
        .map(char::from);
        let echo = key.filter(char::is_ascii_graphic).unwrap_or('-');
        let _ = writeln!(stdout, "{echo}");
        let _ = stdout.flush();
        key
    }
}

/// One answer line from stdin: the bytes up to and including `\n`, at most [`MAX_ANSWER_BYTES`]
/// (the rest of a longer line is not read), decoded lossily. `None` when nothing was read before
/// end of input, an error or a stop signal — and after a stop signal whatever was typed is no
/// answer either.
fn read_answer_line() -> Option<String> {
    let mut line = Vec::new();
    while line.len() < MAX_ANSWER_BYTES {
        let Some(byte) = read_stdin_byte() else { break };
        line.push(byte);
        if byte == b'\n' {
            break;
        }
    }
    if line.is_empty() || stop_signal_received() {
        return None;
    }
    Some(String::from_utf8_lossy(&line).into_owned())
}

/// `y` or `yes`, case-insensitive, surrounding whitespace ignored. Anything else is "no".
pub fn is_yes(answer: &str) -> bool {
    let answer = answer.trim();
    answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes")
}

/// Cuts `text` to at most [`MAX_PROMPT_DESCRIPTION_BYTES`] bytes; a cut text ends with `...`
/// (the total, `...` included, stays within the limit, and never splits a character).
pub fn cut_for_prompt(text: &str) -> String {
    if text.len() <= MAX_PROMPT_DESCRIPTION_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_PROMPT_DESCRIPTION_BYTES - "...".len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yes_answers() {
        for answer in ["y", "Y", "yes", "YES", " Yes \n", "y\r\n"] {
            assert!(is_yes(answer), "{answer:?}");
        }
        for answer in ["", "n", "no", "yess", "y y", "ja", "\n"] {
            assert!(!is_yes(answer), "{answer:?}");
        }
    }

    #[test]
    fn cut_keeps_at_most_200_bytes_on_a_char_boundary() {
        assert_eq!(cut_for_prompt(&"a".repeat(200)), "a".repeat(200));
        let cut = cut_for_prompt(&"a".repeat(201));
        assert_eq!(cut, format!("{}...", "a".repeat(197)));
        assert_eq!(cut.len(), 200);
        let cut = cut_for_prompt(&"é".repeat(150));
        assert!(cut.len() <= 200 && cut.ends_with("..."));
        assert_eq!(cut, format!("{}...", "é".repeat(98)));
    }
}
