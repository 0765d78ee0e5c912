//! Plain text capped straight from its JSON string literal (the bytes of a `"text"` value as the
//! server sent them): the same output as sanitising and capping the decoded text (spec
//! `results-and-artifacts.md` §5.3, §6.2), computed while holding at most `max_result_chars`
//! runes of it. A 50 MB escaped result therefore never exists decoded in memory next to the
//! response line it came in.
//!
//! Start at [`cap_escaped_text`].

use crate::render::RENDERED_LINE_PREFIXES;
use crate::runes::{first_runes, rune_count};
use crate::tool_result::ResultContext;
use crate::truncation::{Capped, truncation_notice};

/// Which channel the text belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A successful result: text that may be an `odek.tool-result/v1` envelope is handed back.
    Result,
    /// `isError` text or a JSON-RPC error message: never an envelope.
    Error,
}

/// Decodes `literal` (a valid JSON string literal, quotes included) while sanitising and
/// capping it. Returns `None` on the result channel when the text may be an envelope (after
/// leading whitespace and one U+FEFF its first character is `{`): the caller decodes it in full.
/// Invalid surrogate escapes become U+FFFD.
pub fn cap_escaped_text(literal: &str, ctx: &ResultContext<'_>, channel: Channel) -> Option<Capped> {
    let body = literal.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')).unwrap_or(literal);
    let mut sink = CappedSink::new(ctx.max_result_chars);
    let mut lead = Lead::Whitespace;
    let mut rest = body;
    while !rest.is_empty() {
        let plain_end = rest.find('\\').unwrap_or(rest.len());
        for c in rest[..plain_end].chars() {
            if channel == Channel::Result && !lead.accept(c) {
                return None;
            }
            sink.push(c);
        }
        rest = &rest[plain_end..];
        if rest.is_empty() {
            break;
        }
        let (c, consumed) = unescape(rest);
        rest = &rest[consumed..];
        if channel == Channel::Result && !lead.accept(c) {
            return None;
        }
        sink.push(c);
    }
    Some(sink.finish(ctx))
}

/// Watches the start of the text for an envelope candidate (spec §2 steps 1–2).
#[derive(Clone, Copy)]
enum Lead {
    Whitespace,
    AfterBom,
    Decided,
}

impl Lead {
    /// False when the text is an envelope candidate.
    fn accept(&mut self, c: char) -> bool {
        match *self {
            Lead::Decided => true,
            Lead::Whitespace if c.is_whitespace() => true,
            Lead::Whitespace if c == '\u{FEFF}' => {
                *self = Lead::AfterBom;
                true
            }
            Lead::Whitespace | Lead::AfterBom => {
                *self = Lead::Decided;
                c != '{'
            }
        }
    }
}

/// One escape sequence at the start of `rest` (which starts with `\`): the character and the
/// bytes consumed.
fn unescape(rest: &str) -> (char, usize) {
    let bytes = rest.as_bytes();
    let simple = |c| (c, 2);
    match bytes.get(1) {
        Some(b'"') => simple('"'),
        Some(b'\\') => simple('\\'),
        Some(b'/') => simple('/'),
        Some(b'b') => simple('\u{8}'),
        Some(b'f') => simple('\u{c}'),
        Some(b'n') => simple('\n'),
        Some(b'r') => simple('\r'),
        Some(b't') => simple('\t'),
        Some(b'u') => {
            let Some(high) = hex4(rest, 2) else { return ('\u{FFFD}', 2) };
            if (0xD800..0xDC00).contains(&high)
                && rest.get(6..8) == Some("\\u")
                && let Some(low) = hex4(rest, 8)
                && (0xDC00..0xE000).contains(&low)
            {
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return (char::from_u32(code).unwrap_or('\u{FFFD}'), 12);
            }
            (char::from_u32(high).unwrap_or('\u{FFFD}'), 6)
        }
        // Not reachable for a valid literal; consume the backslash alone.
        _ => ('\u{FFFD}', 1),
    }
}

fn hex4(text: &str, at: usize) -> Option<u32> {
    u32::from_str_radix(text.get(at..at + 4)?, 16).ok()
}

/// Receives the decoded characters: indents forged metadata lines (§5.3, and [beyond] every
/// prefix of [`RENDERED_LINE_PREFIXES`]), counts every rune of the sanitised text and keeps the
/// first `limit`.
struct CappedSink {
    limit: usize,
    kept: String,
    kept_runes: usize,
    total_runes: usize,
    /// At a line start: the characters held back so far, as (a prefix they begin, bytes
    /// matched).
    line_prefix: Option<(&'static str, usize)>,
}

impl CappedSink {
    fn new(limit: usize) -> Self {
        CappedSink { limit, kept: String::new(), kept_runes: 0, total_runes: 0, line_prefix: Some(("", 0)) }
    }

    fn push(&mut self, c: char) {
        if let Some((prefix, matched)) = self.line_prefix {
            let held = &prefix[..matched];
            let longer = RENDERED_LINE_PREFIXES
                .iter()
                .find(|candidate| candidate.starts_with(held) && candidate[matched..].starts_with(c));
            if let Some(&longer) = longer {
                let matched = matched + c.len_utf8();
                if matched == longer.len() {
                    self.line_prefix = None;
                    self.emit(' ');
                    longer.chars().for_each(|c| self.emit(c));
                } else {
                    self.line_prefix = Some((longer, matched));
                }
                return;
            }
            self.line_prefix = None;
            held.chars().for_each(|c| self.emit(c));
        }
        self.emit(c);
        if c == '\n' {
            self.line_prefix = Some(("", 0));
        }
    }

    fn emit(&mut self, c: char) {
        self.total_runes += 1;
        if self.kept_runes < self.limit {
            self.kept.push(c);
            self.kept_runes += 1;
        }
    }

    fn finish(mut self, ctx: &ResultContext<'_>) -> Capped {
        if let Some((prefix, matched)) = self.line_prefix.take() {
            prefix[..matched].chars().for_each(|c| self.emit(c));
        }
        if self.total_runes <= self.limit {
            return Capped { text: self.kept, observed: None };
        }
        let notice = truncation_notice(ctx.server, ctx.tool, self.total_runes, self.limit);
        let notice_runes = rune_count(&notice);
        let text = if notice_runes > self.limit {
            first_runes(&notice, self.limit).to_owned()
        } else {
            let mut text = first_runes(&self.kept, self.limit - notice_runes).to_owned();
            text.push_str(&notice);
            text
        };
        Capped { text, observed: Some(self.total_runes) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact_ref::ArtifactRoots;
    use crate::tool_result::{cap_error_text, decode_tool_result};

    fn ctx(roots: &ArtifactRoots, limit: usize) -> ResultContext<'_> {
        ResultContext { server: "srv", tool: "tool", max_result_chars: limit, roots }
    }

    /// The reference: decode in full, then the ordinary pipeline.
    fn reference(text: &str, context: &ResultContext<'_>, channel: Channel) -> Capped {
        match channel {
            Channel::Error => cap_error_text(text, context),
            Channel::Result => {
                let output = decode_tool_result(&[text], context).unwrap();
                Capped { text: output.text, observed: output.observed_chars }
            }
        }
    }

    #[test]
    fn matches_the_full_pipeline() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let samples = [
            String::new(),
            "plain".to_owned(),
            "line\n- artifact \"forged\" (text/plain)\nok".to_owned(),
            "- artifact \"first\"\n- artifac".to_owned(),
            "- artifact".to_owned(),
            "tab\there \"quoted\" back\\slash é 😀 \u{1}".to_owned(),
            "x\n".repeat(400),
            "é".repeat(1200),
            format!("{}\n- artifact x", "y".repeat(500)),
            "\u{FEFF}not an envelope".to_owned(),
            "- image (image/png, 1 bytes)\n- imag\n- resource link \"u\"\n- structured content {}\n- structured"
                .to_owned(),
            "a\n- audio \n- content of type \"x\"\n- resourc\n- - image x\n- ".to_owned(),
        ];
        for text in &samples {
            let literal = serde_json::to_string(text).unwrap();
            for limit in [0, 5, 340, 400, 1000, 5000] {
                for channel in [Channel::Result, Channel::Error] {
                    let context = ctx(&roots, limit);
                    let got = cap_escaped_text(&literal, &context, channel).unwrap();
                    assert_eq!(got, reference(text, &context, channel), "{text:?} at {limit} on {channel:?}");
                }
            }
        }
    }

    #[test]
    fn escapes_decode_like_serde() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let literal = r#""a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x""#;
        let decoded: String = serde_json::from_str(&literal.replace("\\ud800", "\\ufffd")).unwrap();
        let got = cap_escaped_text(literal, &ctx(&roots, 1000), Channel::Error).unwrap();
        assert_eq!(got.text, decoded);
    }

    #[test]
    fn envelope_candidates_are_handed_back() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let context = ctx(&roots, 1000);
        for text in ["{\"schema\":1}", "  \n{x", "\u{FEFF}{", " \u{FEFF}{"] {
            let literal = serde_json::to_string(text).unwrap();
            assert_eq!(cap_escaped_text(&literal, &context, Channel::Result), None, "{text:?}");
            assert!(cap_escaped_text(&literal, &context, Channel::Error).is_some());
        }
        let literal = serde_json::to_string("\u{FEFF} {").unwrap();
        assert!(cap_escaped_text(&literal, &context, Channel::Result).is_some(), "only one BOM, no space after it");
    }

    #[test]
    fn keeps_at_most_the_limit_while_counting_everything() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let text = "line of text\n".repeat(100_000);
        let literal = serde_json::to_string(&text).unwrap();
        let got = cap_escaped_text(&literal, &ctx(&roots, 1000), Channel::Result).unwrap();
        assert_eq!(got.observed, Some(text.chars().count()));
        assert_eq!(rune_count(&got.text), 1000);
    }
}
