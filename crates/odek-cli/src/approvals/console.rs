//! The operator's terminal as approvals see it: whether stdin is a terminal, a prompt that
//! reads one answer line (server approval), a prompt that reads one key (the tool approval card,
//! in the batch approval card's single-key style), and a sink for warnings. [`StdConsole`] is the
//! real one; tests script a [`Console`] of their own.
//!
//! Also the terminal sanitiser for server-supplied text shown in prompts: escape sequences
//! cannot repaint or hide what the operator is approving.

use std::io::{IsTerminal, Write};

use crate::terminal::batch_gate::{read_key, read_stdin_byte, stop_signal_received};

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
        eprintln!("odek: warning: {text}");
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

/// Terminal sanitisation (spec `config.md` §13.2): complete ANSI escape sequences (CSI, OSC and
/// the other string sequences, two-character and nF escapes) are removed; any other control
/// character except tab, CR and LF — a lone or unfinished ESC, C1 controls such as U+009B —
/// becomes U+FFFD, and so [beyond] do the bidirectional controls that could make a command or
/// description read differently from what it is (U+061C, U+200E, U+200F, U+202A–U+202E,
/// U+2066–U+2069).
pub fn sanitize_for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\u{1b}'
            && let Some(len) = escape_sequence_len(rest.as_bytes())
        {
            rest = &rest[len..];
            continue;
        }
        if (c.is_control() && !matches!(c, '\t' | '\r' | '\n')) || is_bidi_control(c) {
            out.push('\u{fffd}');
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// [`sanitize_for_terminal`] for a value shown on one prompt line: CR and LF become U+FFFD as
/// well, so a value cannot return to the start of its line and overwrite what the operator
/// reads, nor forge a line of its own. Used for the server prompt, whose fields are all
/// single-line values; the tool description keeps CR/LF as the spec says.
pub fn sanitize_terminal_line(text: &str) -> String {
    sanitize_for_terminal(text).replace(['\r', '\n'], "\u{fffd}")
}

/// Length in bytes of the complete escape sequence at the start of `bytes` (which starts with
/// ESC), or `None` when it is not a complete sequence.
fn escape_sequence_len(bytes: &[u8]) -> Option<usize> {
    match *bytes.get(1)? {
        // CSI: parameter and intermediate bytes, then one final byte.
        b'[' => {
            for (index, &byte) in bytes.iter().enumerate().skip(2) {
                match byte {
                    0x20..=0x3f => {}
                    0x40..=0x7e => return Some(index + 1),
                    _ => return None,
                }
            }
            None
        }
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (ESC \).
        b']' | b'P' | b'X' | b'^' | b'_' => {
            for (index, &byte) in bytes.iter().enumerate().skip(2) {
                match byte {
                    0x07 => return Some(index + 1),
                    0x1b => return (bytes.get(index + 1) == Some(&b'\\')).then_some(index + 2),
                    _ => {}
                }
            }
            None
        }
        // nF: intermediate bytes, then one final byte.
        0x20..=0x2f => {
            for (index, &byte) in bytes.iter().enumerate().skip(2) {
                match byte {
                    0x20..=0x2f => {}
                    0x30..=0x7e => return Some(index + 1),
                    _ => return None,
                }
            }
            None
        }
        // Fp, Fe, Fs: ESC and one byte.
        0x30..=0x7e => Some(2),
        _ => None,
    }
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
    fn bidi_controls_cannot_disguise_a_command_red() {
        assert_eq!(
            sanitize_terminal_line("/usr/bin/safe-tool \u{202E}lmx.revres-live"),
            "/usr/bin/safe-tool \u{FFFD}lmx.revres-live"
        );
        assert_eq!(sanitize_for_terminal("a\u{2066}b\u{200F}c"), "a\u{FFFD}b\u{FFFD}c");
        assert_eq!(sanitize_for_terminal("zero\u{200D}width joiner stays"), "zero\u{200D}width joiner stays");
    }

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
    fn sanitiser_removes_escapes_and_replaces_controls() {
        for (input, want) in [
            ("plain text", "plain text"),
            ("tab\tcr\rlf\n", "tab\tcr\rlf\n"),
            ("\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}[2K\u{1b}[1Ahidden", "hidden"),
            ("\u{1b}[?25l", ""),
            ("\u{1b}]0;title\u{7}x", "x"),
            ("\u{1b}]8;;http://e\u{1b}\\link\u{1b}]8;;\u{1b}\\", "link"),
            ("\u{1b}Pdcs\u{1b}\\x", "x"),
            ("\u{1b}(Bx", "x"),
            ("\u{1b}7x\u{1b}8", "x"),
            ("\u{1b}", "\u{fffd}"),
            ("\u{1b}[31", "\u{fffd}[31"),
            ("\u{1b}]unterminated", "\u{fffd}]unterminated"),
            ("a\u{0}b\u{7}c\u{8}d\u{7f}e\u{9b}31m", "a\u{fffd}b\u{fffd}c\u{fffd}d\u{fffd}e\u{fffd}31m"),
            ("é✓\u{1b}[1mß", "é✓ß"),
        ] {
            assert_eq!(sanitize_for_terminal(input), want, "{input:?}");
        }
    }

    #[test]
    fn line_sanitiser_also_replaces_cr_and_lf() {
        assert_eq!(sanitize_terminal_line("a\rb\nc\td\u{1b}[1m"), "a\u{fffd}b\u{fffd}c\td");
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
