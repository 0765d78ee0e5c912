//! The `max_result_chars` cap (spec `results-and-artifacts.md` §6): the exact truncation notice,
//! the result floor of `mcp-client.md` §2, the rune-exact cut for plain text and error channels
//! ([`apply_result_limit`]) and for rendered envelopes ([`cap_envelope`]). Counting is in runes
//! (Unicode scalar values); a cut never splits a character, and no output is ever longer than
//! the limit.

use std::borrow::Cow;

use crate::artifact_ref::ArtifactRef;
use crate::quoting::quote;
use crate::render::render_envelope;
use crate::runes::{first_runes, rune_count};

/// The notice appended to a cut result, leading line feed included. Free of angle brackets so
/// it cannot be confused with the untrusted-content wrapper.
pub fn truncation_notice(server: &str, tool: &str, observed: usize, limit: usize) -> String {
    format!(
        "\n[odek: result truncated \u{2014} server {} tool {} produced {observed} chars, exceeding the configured max_result_chars={limit}; the full result is available via the retained artifact references, if any]",
        quote(server),
        quote(tool)
    )
}

/// The smallest effective `max_result_chars` for a server: the notice rendered with a 64-rune
/// tool name, observed 1000000 and limit 2147483647, plus 64 runes of room for content.
pub fn result_floor(server: &str) -> usize {
    let widest_tool = "t".repeat(64);
    rune_count(&truncation_notice(server, &widest_tool, 1_000_000, 2_147_483_647)) + 64
}

/// Text after the cap, and the observed rune count when the cap cut it (spec §6.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    pub text: String,
    /// `Some(observed)` exactly when the text was cut.
    pub observed: Option<usize>,
}

/// Spec §6.2 for plain results and error channels: unchanged when within `limit`; otherwise the
/// first `limit − runes(notice)` runes plus the notice (exactly `limit` runes), or the first
/// `limit` runes of the notice when even the notice does not fit.
pub fn apply_result_limit(text: &str, server: &str, tool: &str, limit: usize) -> Capped {
    cap_text(Cow::Borrowed(text), server, tool, limit)
}

/// [`apply_result_limit`] that reuses an owned text instead of copying it when nothing is cut.
pub(crate) fn cap_text(text: Cow<'_, str>, server: &str, tool: &str, limit: usize) -> Capped {
    // Fast path: a text with no more bytes than the limit cannot have more runes.
    if text.len() <= limit {
        return Capped { text: text.into_owned(), observed: None };
    }
    let observed = rune_count(&text);
    if observed <= limit {
        return Capped { text: text.into_owned(), observed: None };
    }
    let notice = truncation_notice(server, tool, observed, limit);
    let notice_runes = rune_count(&notice);
    let text = if notice_runes > limit {
        first_runes(&notice, limit).to_owned()
    } else {
        let body = first_runes(&text, limit - notice_runes);
        let mut out = String::with_capacity(body.len() + notice.len());
        out.push_str(body);
        out.push_str(&notice);
        out
    };
    Capped { text, observed: Some(observed) }
}

/// Spec §6.3 for envelopes. `R` is the full rendering of `sanitised_text` and `refs`, `O` its
/// runes (metadata lines included), `N` the notice with `observed = O`:
/// 1. `O ≤ limit` ⇒ `R` unchanged;
/// 2. `runes(N) > limit` ⇒ the first `limit` runes of `N`;
/// 3. otherwise the text is cut to `limit − (O − T) − runes(N)` runes (`T` = runes of the text)
///    and re-rendered, so the metadata lines survive whenever they fit; if they do not, the
///    body is cut to `limit − runes(N)` runes. Output = body + `N`, never more than `limit`.
pub fn cap_envelope(sanitised_text: &str, refs: &[ArtifactRef], server: &str, tool: &str, limit: usize) -> Capped {
    let lines = render_envelope("", refs);
    cap_with_trailer(sanitised_text, &Trailer { lines, tail: String::new() }, server, tool, limit)
}

/// [beyond] What follows the text part of a view, as odek rendered it (docs/MODEL-VIEW.md):
/// each part is lines joined by `\n`, empty for none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Trailer {
    /// Metadata lines kept whole ahead of the text (§6.3's artifact lines, and the first
    /// content lines): bounded in number and length.
    pub lines: String,
    /// What comes last and is cut first: the content lines past the kept ones and
    /// `structuredContent` — content, unbounded, never worth more than the text.
    pub tail: String,
}

impl Trailer {
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.tail.is_empty()
    }
}

/// §6.3's rule for any text followed by a [`Trailer`]: the rendering is the text, the trailer's
/// lines and its tail, each non-empty part after a `\n`. Cut, the lines survive whenever they
/// fit (if they do not, the body is cut to `limit − runes(notice)` runes, §6.3's last resort);
/// then the text is kept as far as it fits; the tail takes what room is left, cut at its end.
/// With an empty tail this is exactly §6.3, and with an empty trailer exactly §6.2
/// ([`cap_text`]).
pub(crate) fn cap_with_trailer(text: &str, trailer: &Trailer, server: &str, tool: &str, limit: usize) -> Capped {
    let rendered = render_parts(&[text, &trailer.lines, &trailer.tail]);
    if rendered.len() <= limit {
        return Capped { text: rendered, observed: None };
    }
    let observed = rune_count(&rendered);
    if observed <= limit {
        return Capped { text: rendered, observed: None };
    }
    let notice = truncation_notice(server, tool, observed, limit);
    let notice_runes = rune_count(&notice);
    if notice_runes > limit {
        return Capped { text: first_runes(&notice, limit).to_owned(), observed: Some(observed) };
    }
    let room = limit - notice_runes;
    let lines_runes = rune_count(&trailer.lines);
    let mut body = if lines_runes > room {
        first_runes(&trailer.lines, room).to_owned()
    } else {
        // A part after another costs its `\n` too.
        let separator = |before: bool| usize::from(before);
        let mut left = room - lines_runes;
        let text_room = left.saturating_sub(separator(!trailer.lines.is_empty()));
        let kept_text = first_runes(text, text_room);
        left -= rune_count(kept_text) + separator(!kept_text.is_empty() && !trailer.lines.is_empty());
        let tail_room = left.saturating_sub(separator(!kept_text.is_empty() || !trailer.lines.is_empty()));
        render_parts(&[kept_text, &trailer.lines, first_runes(&trailer.tail, tail_room)])
    };
    body.push_str(&notice);
    Capped { text: body, observed: Some(observed) }
}

/// The non-empty parts joined by `\n` (§5.1's layout).
fn render_parts(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|part| part.len() + 1).sum());
    for part in parts.iter().filter(|part| !part.is_empty()) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notice_is_exact() {
        let notice = truncation_notice("limited", "large_result", 5000, 1000);
        assert_eq!(
            notice,
            "\n[odek: result truncated — server \"limited\" tool \"large_result\" produced 5000 chars, exceeding the configured max_result_chars=1000; the full result is available via the retained artifact references, if any]"
        );
        assert_eq!(rune_count(&notice), 207);
        assert!(!notice.contains('<') && !notice.contains('>'));
    }

    #[test]
    fn floor_matches_spec_examples() {
        assert_eq!(result_floor("srv"), 328);
        assert_eq!(result_floor("tiny-srv"), 333);
        assert_eq!(result_floor("limited"), 325 + 7);
    }

    #[test]
    fn plain_text_cut_is_rune_exact() {
        let capped = apply_result_limit(&"x".repeat(5000), "limited", "large_result", 1000);
        assert_eq!(capped.observed, Some(5000));
        assert_eq!(rune_count(&capped.text), 1000);
        assert!(capped.text.starts_with(&"x".repeat(793)));
        assert!(!capped.text.starts_with(&"x".repeat(794)));
        assert!(capped.text.ends_with("if any]"));
    }

    #[test]
    fn multibyte_text_is_counted_in_runes() {
        let text = "é".repeat(1000);
        assert_eq!(apply_result_limit(&text, "s", "t", 1000).observed, None);
        let text = "é".repeat(1001);
        let capped = apply_result_limit(&text, "s", "t", 1000);
        assert_eq!(capped.observed, Some(1001));
        assert_eq!(rune_count(&capped.text), 1000);
    }

    /// Before: the metadata lines did not fit with the structured line among them, so the text
    /// was dropped and the view was a cut `- structured content {…`.
    #[test]
    fn a_long_structured_line_is_cut_after_the_text_red() {
        let summary = "Sunny in Paris.";
        let trailer = Trailer {
            lines: "- image (image/png, 3 bytes)".to_owned(),
            tail: format!("- structured content {{\"x\":\"{}\"}}", "y".repeat(300_000)),
        };
        let capped = cap_with_trailer(summary, &trailer, "s", "t", 200_000);
        assert_eq!(rune_count(&capped.text), 200_000);
        assert!(
            capped.text.starts_with("Sunny in Paris.\n- image (image/png, 3 bytes)\n- structured content {\"x\":\"yyy")
        );
        assert!(capped.text.ends_with("if any]"));
        let observed = summary.len() + 1 + trailer.lines.len() + 1 + trailer.tail.len();
        assert_eq!(capped.observed, Some(observed));
        // A long text keeps the lines, and the tail goes first.
        let text = "t".repeat(5000);
        let capped = cap_with_trailer(&text, &trailer, "s", "t", 1000);
        assert_eq!(rune_count(&capped.text), 1000);
        assert!(capped.text.contains("t\n- image (image/png, 3 bytes)\n[odek: result truncated"), "{}", capped.text);
        // Lines that do not fit are cut, as §6.3 says.
        let lines = Trailer { lines: "- image (".to_owned() + &"x".repeat(900) + ")", tail: String::new() };
        let capped = cap_with_trailer("text", &lines, "s", "t", 400);
        assert!(capped.text.starts_with("- image (xxx"), "{}", capped.text);
        assert_eq!(rune_count(&capped.text), 400);
    }

    #[test]
    fn the_tail_fills_only_the_room_left() {
        let trailer = Trailer { lines: String::new(), tail: "z".repeat(600) };
        for text in ["", "short", &"t".repeat(300)] {
            let capped = cap_with_trailer(text, &trailer, "s", "t", 500);
            assert_eq!(rune_count(&capped.text), 500, "{text:?}");
            assert!(capped.text.starts_with(text));
        }
        assert_eq!(cap_with_trailer("a", &trailer, "s", "t", 1000).text, format!("a\n{}", "z".repeat(600)));
        let empty = Trailer::default();
        assert_eq!(
            cap_with_trailer(&"x".repeat(5000), &empty, "s", "t", 1000),
            apply_result_limit(&"x".repeat(5000), "s", "t", 1000)
        );
    }

    #[test]
    fn notice_longer_than_limit_is_itself_cut() {
        let capped = apply_result_limit(&"x".repeat(500), "s", "t", 100);
        assert_eq!(rune_count(&capped.text), 100);
        assert!(capped.text.starts_with("\n[odek: result truncated"));
    }
}
