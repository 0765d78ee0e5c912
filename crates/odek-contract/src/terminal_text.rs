//! Terminal-safe text: the one rule for showing text that came from outside the process — a
//! server's warnings, stderr and log lines, a model's tool calls, a session file, a config value
//! — on a terminal, so that it can neither drive the terminal (escape sequences: colours, cursor
//! moves, window titles, hyperlinks) nor read differently from what it is (bidirectional
//! controls).
//!
//! [`sanitise_for_terminal`] is the rule; a [`Layout`] says what becomes of tab, CR and LF.
//! [`shorten_line`] fits text on one bounded line, and [`warning_line`] is the
//! `odek: warning: <text>` line every face prints. Nothing here writes, and nothing here
//! redacts: a caller whose text may hold a secret redacts it first ([`crate::redaction`]).

use std::borrow::Cow;
use std::ops::RangeInclusive;

/// What every warning line starts with.
pub const WARNING_PREFIX: &str = "odek: warning: ";

/// What a control character that cannot be shown becomes.
pub const REPLACEMENT: char = '\u{FFFD}';

const ESC: char = '\u{1b}';

/// What [`sanitise_for_terminal`] does with tab, CR and LF; every other control character is
/// replaced in every layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Tab, CR and LF kept: a block shown as written (the tool description of spec `config.md`
    /// §13.2).
    Block,
    /// Tab and LF kept, CR replaced: lines that cannot return to their own start and overwrite
    /// what precedes them on it (warnings, error lines, message bodies).
    Lines,
    /// Tab kept, CR and LF replaced: a value on a line of its own, which can neither overwrite
    /// nor forge a line (a server's stderr or log line, a prompt field).
    Line,
    /// Tab and LF become spaces, CR is replaced: text run into one line (a record of a tool
    /// call, a listing row).
    Flat,
}

/// Text made safe for a terminal (spec `config.md` §13.2's terminal sanitisation, applied to
/// every text from outside the process): complete escape sequences (CSI, OSC and the other
/// string sequences, nF and two-character escapes) are removed; every other control character —
/// a lone or unfinished ESC, C0 and C1 controls such as U+009B, DEL — becomes U+FFFD unless the
/// `layout` keeps it, and so [beyond] do the bidirectional controls that could make text read
/// differently from what it is (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069). Text that
/// needs none of this is returned as it is.
pub fn sanitise_for_terminal(text: &str, layout: Layout) -> Cow<'_, str> {
    if !text.chars().any(|c| shown_as(c, layout) != Some(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == ESC
            && let Some(len) = escape_sequence_len(rest.as_bytes())
        {
            rest = &rest[len..];
            continue;
        }
        out.push(shown_as(c, layout).unwrap_or(REPLACEMENT));
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// Text on one line of at most `max_chars` characters: sanitised as [`Layout::Flat`], surrounding
/// white space trimmed, and a longer text cut to `max_chars - 1` characters followed by `…`.
pub fn shorten_line(text: &str, max_chars: usize) -> String {
    let flat = sanitise_for_terminal(text, Layout::Flat);
    let flat = flat.trim();
    if flat.chars().count() <= max_chars {
        return flat.to_owned();
    }
    let mut cut: String = flat.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The warning line for `text` (given without the prefix): `odek: warning: <text>`, the text
/// sanitised as [`Layout::Lines`].
pub fn warning_line(text: &str) -> String {
    format!("{WARNING_PREFIX}{}", sanitise_for_terminal(text, Layout::Lines))
}

/// How `c` is shown in `layout`: itself, another character, or `None` when it is replaced.
fn shown_as(c: char, layout: Layout) -> Option<char> {
    match (c, layout) {
        ('\t' | '\n', Layout::Flat) => Some(' '),
        ('\t', _) | ('\n', Layout::Block | Layout::Lines) | ('\r', Layout::Block) => Some(c),
        _ if c.is_control() || is_bidi_control(c) => None,
        _ => Some(c),
    }
}

/// The bidirectional controls: embeddings, overrides and isolates, and the implicit marks.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Length in bytes of the complete escape sequence at the start of `bytes` (which starts with
/// ESC), or `None` when it is not a complete sequence. A string sequence ends at the first ESC
/// that is not its terminator, so no byte is scanned twice on the way through a text.
fn escape_sequence_len(bytes: &[u8]) -> Option<usize> {
    match *bytes.get(1)? {
        // CSI: parameter and intermediate bytes, then one final byte.
        b'[' => sequence_end(bytes, 0x20..=0x3f, 0x40..=0x7e),
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
        0x20..=0x2f => sequence_end(bytes, 0x20..=0x2f, 0x30..=0x7e),
        // Fp, Fe, Fs: ESC and one byte.
        0x30..=0x7e => Some(2),
        _ => None,
    }
}

/// The end of a sequence whose bytes after ESC and its introducer are all in `middle` but the
/// last, which is in `last`; `None` for any other byte, or at the end of the text.
fn sequence_end(bytes: &[u8], middle: RangeInclusive<u8>, last: RangeInclusive<u8>) -> Option<usize> {
    for (index, byte) in bytes.iter().enumerate().skip(2) {
        if !middle.contains(byte) {
            return last.contains(byte).then_some(index + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUTS: [Layout; 4] = [Layout::Block, Layout::Lines, Layout::Line, Layout::Flat];

    #[test]
    fn bidi_controls_cannot_disguise_a_command_red() {
        assert_eq!(
            sanitise_for_terminal("/usr/bin/safe-tool \u{202E}lmx.revres-live", Layout::Line),
            "/usr/bin/safe-tool \u{FFFD}lmx.revres-live"
        );
        assert_eq!(sanitise_for_terminal("a\u{2066}b\u{200F}c", Layout::Block), "a\u{FFFD}b\u{FFFD}c");
        assert_eq!(
            sanitise_for_terminal("zero\u{200D}width joiner stays", Layout::Block),
            "zero\u{200D}width joiner stays"
        );
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
            assert_eq!(sanitise_for_terminal(input, Layout::Block), want, "{input:?}");
        }
    }

    #[test]
    fn line_sanitiser_also_replaces_cr_and_lf() {
        assert_eq!(sanitise_for_terminal("a\rb\nc\td\u{1b}[1m", Layout::Line), "a\u{fffd}b\u{fffd}c\td");
    }

    #[test]
    fn each_layout_says_what_becomes_of_tab_cr_and_lf() {
        let text = "a\tb\rc\nd";
        assert_eq!(sanitise_for_terminal(text, Layout::Block), "a\tb\rc\nd");
        assert_eq!(sanitise_for_terminal(text, Layout::Lines), "a\tb\u{FFFD}c\nd");
        assert_eq!(sanitise_for_terminal(text, Layout::Line), "a\tb\u{FFFD}c\u{FFFD}d");
        assert_eq!(sanitise_for_terminal(text, Layout::Flat), "a b\u{FFFD}c d");
    }

    #[test]
    fn clean_text_is_borrowed() {
        for layout in LAYOUTS {
            assert!(matches!(sanitise_for_terminal("plain é ✓ text", layout), Cow::Borrowed(_)));
        }
        assert!(matches!(sanitise_for_terminal("a\tb\nc", Layout::Lines), Cow::Borrowed(_)));
    }

    /// Whatever the input, nothing that drives a terminal or reorders text is left: no ESC, no
    /// control but the ones the layout keeps, no bidirectional control.
    #[test]
    fn no_input_leaves_a_terminal_control_red() {
        let pieces = [
            "\u{1b}",
            "[",
            "]",
            "0;",
            "31m",
            "\u{7}",
            "\\",
            "P",
            "(",
            "B",
            "8;;http://x",
            "\t",
            "\r",
            "\n",
            "\u{9b}",
            "\u{85}",
            "\u{7f}",
            "\u{0}",
            "\u{202E}",
            "\u{2066}",
            "\u{200F}",
            "\u{61C}",
            "é",
            "x",
            " ",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..4000 {
            let mut text = String::new();
            for _ in 0..(seed % 24) {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                text.push_str(pieces[usize::try_from(seed >> 33).unwrap() % pieces.len()]);
            }
            for layout in LAYOUTS {
                let shown = sanitise_for_terminal(&text, layout);
                let bad = shown.chars().find(|&c| {
                    let kept = match layout {
                        Layout::Block => matches!(c, '\t' | '\r' | '\n'),
                        Layout::Lines => matches!(c, '\t' | '\n'),
                        Layout::Line => c == '\t',
                        Layout::Flat => false,
                    };
                    (c.is_control() && !kept) || is_bidi_control(c)
                });
                assert_eq!(bad, None, "{layout:?} {text:?} -> {shown:?}");
            }
        }
    }

    #[test]
    fn a_long_run_of_unfinished_sequences_is_linear() {
        let text = "\u{1b}]".repeat(200_000);
        let started = std::time::Instant::now();
        let shown = sanitise_for_terminal(&text, Layout::Line);
        assert_eq!(shown.chars().filter(|&c| c == REPLACEMENT).count(), 200_000);
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn shorten_line_flattens_trims_and_cuts() {
        assert_eq!(shorten_line("a\nb\tc", 10), "a b c");
        assert_eq!(shorten_line("abcdef", 4), "abc…");
        assert_eq!(shorten_line("abcd", 4), "abcd");
        assert_eq!(shorten_line("  padded \n", 20), "padded");
        assert_eq!(shorten_line("\u{1b}[2Jclear\u{202E}", 100), "clear\u{FFFD}");
        assert_eq!(shorten_line(&"é".repeat(10), 5), format!("{}…", "é".repeat(4)));
    }

    #[test]
    fn warning_lines_are_prefixed_and_sanitised() {
        assert_eq!(warning_line("disk low"), "odek: warning: disk low");
        assert_eq!(
            warning_line("a\u{1b}]0;title\u{7}b\r\u{202E}c\nd"),
            "odek: warning: ab\u{FFFD}\u{FFFD}c\nd",
            "escapes removed, CR and bidi replaced, the line feed kept"
        );
    }
}
