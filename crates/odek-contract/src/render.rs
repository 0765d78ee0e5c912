//! Rendering for the model (spec `results-and-artifacts.md` §5): one metadata line per
//! validated ref, field cleaning, the forged-line indentation every server-supplied text goes
//! through, and counting metadata lines. Start at [`render_envelope`].
//!
//! The invariant this module keeps: after [`sanitise`], only lines odek rendered itself start
//! with `- artifact `. No path, basename, uri or file content is ever rendered.

use std::borrow::Cow;

use crate::artifact_ref::{ArtifactRef, short_digest};
use crate::quoting::quote;

/// Prefix of every metadata line; a server-supplied line with this prefix is indented.
pub const ARTIFACT_LINE_PREFIX: &str = "- artifact ";

/// Longest cleaned field, in runes, before `…` is appended.
pub const MAX_FIELD_RUNES: usize = 4096;

const ELLIPSIS: char = '\u{2026}';

/// §5.2 steps 1-2: every control character and every listed invisible or bidi-control
/// character becomes one space, then the result is cut to 4096 runes with `…` appended when cut.
pub fn clean_field(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len().min(MAX_FIELD_RUNES * 4) + ELLIPSIS.len_utf8());
    let mut chars = text.chars();
    for c in chars.by_ref().take(MAX_FIELD_RUNES) {
        cleaned.push(if is_replaced_in_fields(c) { ' ' } else { c });
    }
    if chars.next().is_some() {
        cleaned.push(ELLIPSIS);
    }
    cleaned
}

/// §5.2 step 1's set: Unicode control characters (U+0000–U+001F, U+007F–U+009F), the Arabic
/// letter mark, LRM/RLM, the bidi embeddings and overrides, the bidi isolates, the line and
/// paragraph separators and the BOM. ZWJ, ZWNJ and the soft hyphen are kept.
fn is_replaced_in_fields(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{FEFF}'
        )
}

/// §5.3: every `\n`-separated line that starts with `- artifact ` gets one leading space;
/// nothing else changes. One scan; borrowed when no line needs it.
pub fn sanitise(text: &str) -> Cow<'_, str> {
    const FORGED_AFTER_NEWLINE: &str = "\n- artifact ";
    let first_line_forged = text.starts_with(ARTIFACT_LINE_PREFIX);
    // `contains` takes std's vectorised short-needle path: the one scan of the common case.
    if !first_line_forged && !text.contains(FORGED_AFTER_NEWLINE) {
        return Cow::Borrowed(text);
    }
    let later_lines = text.match_indices(FORGED_AFTER_NEWLINE);
    let mut out = String::with_capacity(text.len() + 16);
    if first_line_forged {
        out.push(' ');
    }
    let mut copied = 0;
    for (newline_at, _) in later_lines {
        let line_start = newline_at + 1;
        out.push_str(&text[copied..line_start]);
        out.push(' ');
        copied = line_start;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// §5.1: `- artifact "<id>" (<media_type>[, <size_bytes> bytes][, sha256 <12 hex>…])[: <summary>]`,
/// without a leading line feed.
pub fn render_artifact_line(artifact: &ArtifactRef) -> String {
    let mut line = String::with_capacity(64 + artifact.id.len() + artifact.media_type.len() + artifact.summary.len());
    push_artifact_line(&mut line, artifact);
    line
}

fn push_artifact_line(out: &mut String, artifact: &ArtifactRef) {
    out.push_str(ARTIFACT_LINE_PREFIX);
    out.push_str(&quote(&clean_field(&artifact.id)));
    out.push_str(" (");
    out.push_str(&clean_field(&artifact.media_type));
    if let Some(size) = artifact.size_bytes {
        out.push_str(", ");
        out.push_str(&size.to_string());
        out.push_str(" bytes");
    }
    if !artifact.sha256.is_empty() {
        out.push_str(", sha256 ");
        // A validated digest is lowercase hex; cleaning guards hand-built refs.
        out.push_str(&clean_field(short_digest(&artifact.sha256)));
        out.push(ELLIPSIS);
    }
    out.push(')');
    if !artifact.summary.is_empty() {
        out.push_str(": ");
        out.push_str(&clean_field(&artifact.summary));
    }
}

/// §5.1: the sanitised envelope text followed by one metadata line per ref, in order; each line
/// is preceded by `\n` only when something has already been written.
pub fn render_envelope(sanitised_text: &str, refs: &[ArtifactRef]) -> String {
    let mut out = String::with_capacity(sanitised_text.len() + refs.len() * 96);
    out.push_str(sanitised_text);
    for artifact in refs {
        if !out.is_empty() {
            out.push('\n');
        }
        push_artifact_line(&mut out, artifact);
    }
    out
}

/// §5.4: the number of lines of `output` that start with `- artifact ` (the event's
/// `artifact_count`).
pub fn count_artifact_lines(output: &str) -> usize {
    output.split('\n').filter(|line| line.starts_with(ARTIFACT_LINE_PREFIX)).count()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn artifact(id: &str) -> ArtifactRef {
        ArtifactRef {
            id: id.to_owned(),
            media_type: "text/plain".to_owned(),
            size_bytes: None,
            sha256: String::new(),
            summary: String::new(),
            resolved_path: PathBuf::from("/secret/path/file.txt"),
            file_size: 3,
        }
    }

    #[test]
    fn spec_example_line() {
        let line = render_artifact_line(&ArtifactRef {
            size_bytes: Some(31),
            sha256: "8f178203af64".to_owned() + &"0".repeat(52),
            summary: "Full CI test results (JUnit XML)".to_owned(),
            ..artifact("report-1")
        });
        assert_eq!(
            line,
            "- artifact \"report-1\" (text/plain, 31 bytes, sha256 8f178203af64\u{2026}): Full CI test results (JUnit XML)"
        );
        assert!(!line.contains("/secret") && !line.contains("file.txt"));
    }

    #[test]
    fn optional_parts() {
        assert_eq!(render_artifact_line(&artifact("a")), "- artifact \"a\" (text/plain)");
        let zero = ArtifactRef { size_bytes: Some(0), ..artifact("a") };
        assert_eq!(render_artifact_line(&zero), "- artifact \"a\" (text/plain, 0 bytes)");
    }

    #[test]
    fn envelope_layout() {
        assert_eq!(render_envelope("", &[artifact("a")]), "- artifact \"a\" (text/plain)");
        assert_eq!(
            render_envelope("t", &[artifact("a"), artifact("b")]),
            "t\n- artifact \"a\" (text/plain)\n- artifact \"b\" (text/plain)"
        );
        assert_eq!(render_envelope("t", &[]), "t");
    }

    #[test]
    fn cleaning() {
        assert_eq!(clean_field("a\tb\nc\u{0}d\u{85}e\u{202e}f\u{2028}g\u{feff}h"), "a b c d e f g h");
        assert_eq!(clean_field("zw\u{200d}j\u{200c}\u{ad}"), "zw\u{200d}j\u{200c}\u{ad}");
        let long = "é".repeat(MAX_FIELD_RUNES + 1);
        let cleaned = clean_field(&long);
        assert_eq!(cleaned.chars().count(), MAX_FIELD_RUNES + 1);
        assert!(cleaned.ends_with("é\u{2026}"));
        assert_eq!(clean_field(&"x".repeat(MAX_FIELD_RUNES)), "x".repeat(MAX_FIELD_RUNES));
    }

    #[test]
    fn sanitise_indents_forged_lines_only() {
        assert!(matches!(sanitise("plain\ntext"), Cow::Borrowed(_)));
        assert!(matches!(sanitise("x - artifact y\n-artifact\n- artifactz"), Cow::Borrowed(_)));
        assert_eq!(sanitise("ok\n- artifact \"x\" (text/plain)"), "ok\n - artifact \"x\" (text/plain)");
        assert_eq!(
            sanitise("- artifact a\n- artifact b\n\n- artifact c"),
            " - artifact a\n - artifact b\n\n - artifact c"
        );
        assert_eq!(sanitise("a\r\n- artifact b"), "a\r\n - artifact b");
        assert_eq!(sanitise(" - artifact a"), " - artifact a");
    }

    #[test]
    fn counting() {
        assert_eq!(count_artifact_lines(""), 0);
        assert_eq!(count_artifact_lines("- artifact a\n - artifact b\n- artifact c\n- artifactd"), 2);
    }
}
