//! Counting and cutting text in runes (Unicode scalar values), the unit every length limit of
//! the contract is written in: `max_result_chars`, the field caps of rendering, digest prefixes,
//! summaries. A cut never splits a character. A leaf: it uses nothing else of the crate, so any
//! rule can use it.

use std::borrow::Cow;

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
pub fn runes_with_ellipsis(text: &str, n: usize) -> Cow<'_, str> {
    let head = first_runes(text, n);
    if head.len() == text.len() { Cow::Borrowed(text) } else { Cow::Owned(format!("{head}…")) }
}
