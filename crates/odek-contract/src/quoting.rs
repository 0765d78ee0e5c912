//! JSON-style quoting used by every message format that says `"<x>"` or `'<c>'`
//! (spec README §2): backslash and double quote escaped, control characters as `\n`, `\t`, `\r`
//! or `\u00XX`. Everything else, non-ASCII included, is kept as is.

use std::fmt::Write;

/// `x` in double quotes with JSON-style escaping.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out.push('"');
    out
}

/// The single character `c` in single quotes with the same escaping as [`quote`].
pub(crate) fn quote_char(c: char) -> String {
    let mut out = String::with_capacity(8);
    out.push('\'');
    push_escaped(&mut out, c);
    out.push('\'');
    out
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        '"' => out.push_str("\\\""),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if c.is_control() => {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_backslash_quote_and_controls() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quote("x\ny\tz\r"), r#""x\ny\tz\r""#);
        assert_eq!(quote("\u{1b}[31m\u{7f}\u{85}"), r#""\u001b[31m\u007f\u0085""#);
        assert_eq!(quote("héllo — ✓"), "\"héllo — ✓\"");
    }

    #[test]
    fn quote_char_uses_single_quotes() {
        assert_eq!(quote_char(' '), "' '");
        assert_eq!(quote_char('\n'), r"'\n'");
        assert_eq!(quote_char('"'), r#"'\"'"#);
    }
}
