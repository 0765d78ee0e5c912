//! The `max_result_chars` cap (spec `results-and-artifacts.md` §6): the exact truncation notice,
//! the result floor of `mcp-client.md` §2, the rune-exact cut for plain text and error channels
//! ([`apply_result_limit`]) and for rendered envelopes ([`cap_envelope`]). Counting is in runes
//! (Unicode scalar values); a cut never splits a character, and no output is ever longer than
//! the limit.

use std::borrow::Cow;

use crate::artifact_ref::ArtifactRef;
use crate::quoting::quote;
use crate::render::render_envelope;

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

/// Number of Unicode scalar values in `text`.
pub fn rune_count(text: &str) -> usize {
    text.chars().count()
}

/// The first `n` runes of `text` (all of it when shorter).
pub fn first_runes(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((byte_index, _)) => &text[..byte_index],
        None => text,
    }
}

/// `text` when it has at most `n` runes, else its first `n` runes followed by `…` (the display
/// cut of goals, headlines and summaries).
pub fn runes_with_ellipsis(text: &str, n: usize) -> std::borrow::Cow<'_, str> {
    let head = first_runes(text, n);
    if head.len() == text.len() {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(format!("{head}…"))
    }
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
pub fn cap_text(text: Cow<'_, str>, server: &str, tool: &str, limit: usize) -> Capped {
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
    cap_with_trailer(sanitised_text, &lines, server, tool, limit)
}

/// §6.3's rule for any text followed by metadata lines odek rendered (`trailer`, lines joined by
/// `\n`; [beyond] the artifact lines, and the content lines of docs/MODEL-VIEW.md): the
/// rendering is `text`, then `\n` and `trailer` when both are non-empty. The trailer survives
/// the cut whenever it fits; the text is cut first. With an empty trailer this is exactly
/// §6.2 ([`cap_text`]).
pub fn cap_with_trailer(text: &str, trailer: &str, server: &str, tool: &str, limit: usize) -> Capped {
    let rendered = render_with_trailer(text, trailer);
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
    let text_runes = rune_count(text);
    let metadata_runes = observed.saturating_sub(text_runes);
    let budget = limit.saturating_sub(metadata_runes).saturating_sub(notice_runes);
    let mut body = render_with_trailer(first_runes(text, budget), trailer);
    let body_room = limit - notice_runes;
    if rune_count(&body) > body_room {
        let kept = first_runes(&body, body_room).len();
        body.truncate(kept);
    }
    body.push_str(&notice);
    Capped { text: body, observed: Some(observed) }
}

/// `text`, then `\n` and `trailer` when both are non-empty (§5.1's layout).
fn render_with_trailer(text: &str, trailer: &str) -> String {
    let mut out = String::with_capacity(text.len() + trailer.len() + 1);
    out.push_str(text);
    if !out.is_empty() && !trailer.is_empty() {
        out.push('\n');
    }
    out.push_str(trailer);
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

    #[test]
    fn notice_longer_than_limit_is_itself_cut() {
        let capped = apply_result_limit(&"x".repeat(500), "s", "t", 100);
        assert_eq!(rune_count(&capped.text), 100);
        assert!(capped.text.starts_with("\n[odek: result truncated"));
    }
}
