//! The terminal experience of `odek run` / `odek continue` (all on stderr): the live status line
//! and the record of each tool call ([`status`]), and the single-keystroke batch approval card
//! ([`batch_gate`]). stdout never carries anything but the final answer.

pub mod batch_gate;
pub mod status;

/// Whether colour may be used: not when `NO_COLOR` is set (any value) or `ODEK_NO_COLOR` is true.
pub fn colour_allowed(env: &std::collections::BTreeMap<String, String>) -> bool {
    let no_color = env.get("NO_COLOR").is_some_and(|value| !value.is_empty());
    let odek_no_color =
        env.get("ODEK_NO_COLOR").is_some_and(|value| value == "1" || value.eq_ignore_ascii_case("true"));
    !(no_color || odek_no_color)
}

/// Text from outside (arguments, outputs, errors) made safe to print: secrets redacted, control
/// characters neutralised, one line, at most `max_chars` characters.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let redacted = odek_contract::redaction::redact(text);
    let safe = odek_mcp::observer::terminal_safe(&redacted);
    let flat: String = safe.chars().map(|c| if c == '\n' || c == '\t' { ' ' } else { c }).collect();
    let flat = flat.trim();
    if flat.chars().count() <= max_chars {
        return flat.to_owned();
    }
    let mut cut: String = flat.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
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
        assert_eq!(one_line("\u{1b}[2Jclear", 100), "\u{FFFD}[2Jclear");
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
