//! The terminal experience of `odek run` / `odek continue` (all on stderr): the live status line
//! and the record of each tool call ([`status`]), and the single-keystroke batch approval card
//! ([`batch_gate`]), and in the REPL an MCP server's request for input ([`elicitation_form`]).
//! stdout never carries anything but the final answer.
//!
//! Also the binary's warning printer ([`print_warning`]). What text from outside may look like
//! on a terminal is one rule of the contract ([`odek_contract::terminal_text`]); this module only
//! adds secret redaction and writes.

pub mod batch_gate;
pub mod console;
pub mod elicitation_form;
pub mod face;
pub mod repl_face;
pub mod status;

use odek_contract::terminal_text::{shorten_line, warning_line};

/// Whether colour may be used: not when `NO_COLOR` is set (any value) or `ODEK_NO_COLOR` is true.
pub fn colour_allowed(env: &std::collections::BTreeMap<String, String>) -> bool {
    let no_color = env.get("NO_COLOR").is_some_and(|value| !value.is_empty());
    let odek_no_color =
        env.get("ODEK_NO_COLOR").is_some_and(|value| value == "1" || value.eq_ignore_ascii_case("true"));
    !(no_color || odek_no_color)
}

/// Text from outside (arguments, outputs, errors) made safe to print: secrets redacted, then
/// [`shorten_line`]: terminal-safe, one line, at most `max_chars` characters.
pub fn one_line(text: &str, max_chars: usize) -> String {
    shorten_line(&odek_contract::redaction::redact(text), max_chars)
}

/// Prints `odek: warning: <text>` ([`warning_line`]: the text terminal-safe) on stderr. A failed
/// write is ignored: after a hangup the terminal is gone, and a warning must not end the process.
pub fn print_warning(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{}", warning_line(text));
}

/// [`print_warning`] for each of `warnings`, in order.
pub fn print_warnings(warnings: &[String]) {
    for warning in warnings {
        print_warning(warning);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_flattens_cuts_and_redacts() {
        assert_eq!(one_line("a\nb\tc", 10), "a b c");
        assert_eq!(one_line("abcdef", 4), "abc…");
        let secret = format!("ghp_{}", "x".repeat(40));
        assert_eq!(one_line(&format!("token {secret}"), 100), "token [REDACTED]");
        assert_eq!(one_line("\u{1b}[2Jclear", 100), "clear");
    }

    #[test]
    fn no_color_is_honoured() {
        let mut env = std::collections::BTreeMap::new();
        assert!(colour_allowed(&env));
        env.insert("NO_COLOR".to_owned(), "1".to_owned());
        assert!(!colour_allowed(&env));
        env.clear();
        env.insert("ODEK_NO_COLOR".to_owned(), "true".to_owned());
        assert!(!colour_allowed(&env));
    }
}
