//! The operator's terminal as approvals see it: whether stdin is a terminal, a prompt that
//! reads one answer line (server approval), a prompt that reads one key (the tool approval card,
//! in the batch approval card's single-key style), and a sink for warnings. A face supplies the
//! real one (the binary's is `odek_cli::terminal::console::StdConsole`); tests script their own.
//! Server-supplied text in a prompt is terminal-safe text ([`odek_contract::terminal_text`]), so it cannot repaint or hide what the
//! operator is approving.

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
    fn warn(&self, text: &str);
}

/// `y` or `yes`, case-insensitive, surrounding whitespace ignored. Anything else is "no".
pub fn is_yes(answer: &str) -> bool {
    let answer = answer.trim();
    answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes")
}

/// \[beyond\] `u` or `unconfined`, case-insensitive, surrounding whitespace ignored: approve a
/// project server to run outside the sandbox (only where its card offers it).
pub fn is_unconfined(answer: &str) -> bool {
    let answer = answer.trim();
    answer.eq_ignore_ascii_case("u") || answer.eq_ignore_ascii_case("unconfined")
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
    fn unconfined_answers() {
        for answer in ["u", "U", " unconfined\n", "Unconfined\r\n"] {
            assert!(is_unconfined(answer), "{answer:?}");
            assert!(!is_yes(answer), "{answer:?}");
        }
        for answer in ["", "y", "uu", "un", "yes", "\n"] {
            assert!(!is_unconfined(answer), "{answer:?}");
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
