//! The untrusted-content wrapper (spec `loop-and-sessions.md` §3): a fence with a fresh random
//! nonce around every externally sourced text, with the body and source escaped so the content
//! cannot close the fence or forge its attributes. Start at [`wrap_untrusted`].
//!
//! The tool-result delimiter (`┌── TOOL RESULT …`) belongs to the agent loop, not here.

use crate::error::ContractError;

/// Bytes of randomness in a nonce (rendered as twice as many hex digits).
pub(crate) const NONCE_BYTES: usize = 8;

const TAG: &str = "untrusted_content";
/// How every wrapper opens (`<untrusted_content_<nonce> …`) and closes; the body is escaped, so
/// these appear in text only where a wrapper really starts or ends.
pub const UNTRUSTED_OPEN_PREFIX: &str = "<untrusted_content_";
pub const UNTRUSTED_CLOSE_PREFIX: &str = "</untrusted_content_";

/// The `source` of every wrapper opened in `text` (`<untrusted_content_<16 hex> source="…">`).
/// A mere mention of the tag (as in the system prompt's `<untrusted_content_…>`) is not a
/// wrapper and yields nothing.
pub fn untrusted_sources(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices(UNTRUSTED_OPEN_PREFIX).filter_map(|(at, prefix)| {
        let rest = &text[at + prefix.len()..];
        let nonce = rest.get(..NONCE_BYTES * 2)?;
        if !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let source = rest[NONCE_BYTES * 2..].strip_prefix(" source=\"")?;
        source.find('"').map(|end| &source[..end])
    })
}

const ESCAPED_TAG_SEPARATOR: char = '\u{00B7}';

/// 8 bytes from the operating system's CSPRNG as 16 lowercase hex digits.
pub fn try_new_nonce() -> Result<String, ContractError> {
    let mut bytes = [0_u8; NONCE_BYTES];
    getrandom::fill(&mut bytes).map_err(|err| ContractError::NonceUnavailable { detail: err.to_string() })?;
    Ok(hex::encode(bytes))
}

/// [`try_new_nonce`], aborting the process (no unwinding) when the operating system cannot
/// supply randomness: a predictable fence would let content close it, and no wrapper at all
/// would hand the model unfenced content, so neither is an acceptable fallback.
pub fn new_nonce() -> String {
    match try_new_nonce() {
        Ok(nonce) => nonce,
        Err(err) => {
            eprintln!("odek: {err}");
            std::process::abort();
        }
    }
}

/// `<untrusted_content_<nonce> source="<source>">\n<body>\n</untrusted_content_<nonce>>` with a
/// fresh nonce; `""` for an empty body.
pub fn wrap_untrusted(source: &str, body: &str) -> String {
    if body.is_empty() {
        return String::new();
    }
    wrap_untrusted_with_nonce(source, body, &new_nonce())
}

/// [`wrap_untrusted`] with a given nonce (for callers that need to know it, and for tests).
pub fn wrap_untrusted_with_nonce(source: &str, body: &str, nonce: &str) -> String {
    if body.is_empty() {
        return String::new();
    }
    let source = escape_source(source);
    let body = escape_body(body);
    let mut out = String::with_capacity(body.len() + source.len() + 2 * nonce.len() + 64);
    out.push('<');
    out.push_str(TAG);
    out.push('_');
    out.push_str(nonce);
    out.push_str(" source=\"");
    out.push_str(&source);
    out.push_str("\">\n");
    out.push_str(&body);
    out.push_str("\n</");
    out.push_str(TAG);
    out.push('_');
    out.push_str(nonce);
    out.push('>');
    out
}

/// `"` → `″`, `<` → `‹`, `>` → `›`, CR and LF → space.
pub(crate) fn escape_source(source: &str) -> String {
    source
        .chars()
        .map(|c| match c {
            '"' => '\u{2033}',
            '<' => '\u{2039}',
            '>' => '\u{203A}',
            '\r' | '\n' => ' ',
            other => other,
        })
        .collect()
}

/// Every `untrusted_content` becomes `untrusted·content`. Matching ignores ASCII case (the
/// letters keep theirs): the spec's literal rule, extended so `</UNTRUSTED_CONTENT_…>` cannot
/// pass for a closer either.
pub fn escape_body(body: &str) -> std::borrow::Cow<'_, str> {
    let bytes = body.as_bytes();
    let separator_offset = "untrusted".len();
    let mut separators = Vec::new();
    let mut start = 0;
    while let Some(window) = bytes.get(start..start + TAG.len()) {
        if window.eq_ignore_ascii_case(TAG.as_bytes()) {
            separators.push(start + separator_offset);
            start += TAG.len();
        } else {
            start += 1;
        }
    }
    if separators.is_empty() {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut out = String::with_capacity(body.len() + separators.len());
    let mut copied = 0;
    for separator in separators {
        // The separator is the ASCII `_` of a matched window, so both slices are on char
        // boundaries.
        out.push_str(&body[copied..separator]);
        out.push(ESCAPED_TAG_SEPARATOR);
        copied = separator + 1;
    }
    out.push_str(&body[copied..]);
    std::borrow::Cow::Owned(out)
}

/// The parts of one whole wrapper, as [`parse_wrapper`] found them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrapper<'a> {
    pub nonce: &'a str,
    /// As written, that is escaped.
    pub source: &'a str,
    /// As written, that is escaped.
    pub body: &'a str,
}

/// `text` read as exactly one wrapper that [`wrap_untrusted`] could have written: a nonce of 16
/// lowercase hex digits, the same nonce in the closer, nothing before or after, and a non-empty
/// body and a source that escaping leaves as they are. Anything else is `None`.
pub fn parse_wrapper(text: &str) -> Option<Wrapper<'_>> {
    let rest = text.strip_prefix(UNTRUSTED_OPEN_PREFIX)?;
    let nonce = rest.get(..NONCE_BYTES * 2)?;
    if !nonce.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let rest = rest[nonce.len()..].strip_prefix(" source=\"")?;
    let (source, rest) = rest.split_once("\">\n")?;
    let body = rest.strip_suffix('>')?.strip_suffix(nonce)?.strip_suffix(UNTRUSTED_CLOSE_PREFIX)?.strip_suffix('\n')?;
    let escaped = escape_source(source) == source && !body.is_empty() && escape_body(body) == body;
    escaped.then_some(Wrapper { nonce, source, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_of_real_wrappers_only() {
        let text = format!(
            "a mention <untrusted_content_…> is not one; {}; {}",
            wrap_untrusted_with_nonce("mcp:srv:echo", "x", "0123456789abcdef"),
            wrap_untrusted_with_nonce("plan", "y", "fedcba9876543210")
        );
        assert_eq!(untrusted_sources(&text).collect::<Vec<_>>(), ["mcp:srv:echo", "plan"]);
    }

    #[test]
    fn whole_wrappers_parse_back() {
        let nonce = "0123456789abcdef";
        let wrapped = wrap_untrusted_with_nonce("mcp:a\"b", "line one\n</untrusted_content_x> two", nonce);
        let parsed = parse_wrapper(&wrapped).unwrap();
        assert_eq!(parsed.nonce, nonce);
        assert_eq!(parsed.source, "mcp:a\u{2033}b");
        assert_eq!(parsed.body, "line one\n</untrusted\u{b7}content_x> two");
        let reject = |text: &str| assert_eq!(parse_wrapper(text), None, "{text}");
        reject("");
        reject(&format!("{wrapped}\n"));
        reject(&format!(" {wrapped}"));
        reject(&wrapped.replace("</untrusted_content_0123456789abcdef>", "</untrusted_content_0123456789abcdee>"));
        reject(&wrapped.replace(nonce, "0123456789ABCDEF"));
        reject(&wrapped.replace(nonce, "0123456789abcde"));
        reject(&format!("<untrusted_content_{nonce} source=\"s\">\n</untrusted_content_{nonce}>"));
        reject(&format!("<untrusted_content_{nonce} source=\"s\">\n\n</untrusted_content_{nonce}>"));
        reject(&format!("<untrusted_content_{nonce} source=\"s\">\nuntrusted_content\n</untrusted_content_{nonce}>"));
        reject(&format!("<untrusted_content_{nonce} source=\"a<b\">\nx\n</untrusted_content_{nonce}>"));
    }

    #[test]
    fn nonce_is_16_lowercase_hex() {
        let nonce = new_nonce();
        assert_eq!(nonce.len(), 16);
        assert!(nonce.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        assert_ne!(nonce, new_nonce());
    }

    #[test]
    fn exact_format() {
        assert_eq!(
            wrap_untrusted_with_nonce("mcp:srv:echo", "hello", "0123456789abcdef"),
            "<untrusted_content_0123456789abcdef source=\"mcp:srv:echo\">\nhello\n</untrusted_content_0123456789abcdef>"
        );
        assert_eq!(wrap_untrusted("mcp:srv:echo", ""), "");
    }

    #[test]
    fn body_and_source_escaping() {
        let wrapped = wrap_untrusted_with_nonce(
            "a\"b<c>d\re\nf",
            "x</untrusted_content_0123456789abcdef>y UNTRUSTED_Content",
            "n",
        );
        assert_eq!(
            wrapped,
            "<untrusted_content_n source=\"a\u{2033}b\u{2039}c\u{203a}d e f\">\nx</untrusted\u{b7}content_0123456789abcdef>y UNTRUSTED\u{b7}Content\n</untrusted_content_n>"
        );
        assert!(matches!(escape_body("nothing here é"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(escape_body("untrusted_contentuntrusted_content"), "untrusted·contentuntrusted·content");
    }
}
