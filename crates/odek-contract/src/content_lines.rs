//! [beyond] The metadata lines that stand in for the non-text content of a `tools/call` result
//! in the model view (docs/MODEL-VIEW.md): images, audio, resource links, embedded resources,
//! items of an unknown type, and `structuredContent` that no text item carries. Start at
//! `render_content_line`.
//!
//! What this module guarantees: a line never holds a byte of an image's or an audio clip's
//! data, nor of an embedded resource's blob; sizes of base64 data are computed from its
//! length and padding without decoding it. The text of an embedded text resource is content, not
//! metadata: `render_embedded_text` shows it under its metadata line, sanitised like any text. Every server string is cleaned like the artifact
//! fields of `results-and-artifacts.md` §5.2 (so a line is one line) and cut at a rune cap, and
//! every line starts with a prefix of `render::RENDERED_LINE_PREFIXES`,
//! never with `- artifact ` (those lines are counted as verified artifacts).

use std::borrow::Cow;
use std::fmt::Write;

use serde_json::Value;

use crate::canonical_json::to_canonical_string;
use crate::quoting::quote;
use crate::render::{MORE_ITEMS_LINE_PREFIX, STRUCTURED_LINE_PREFIX, clean_field_to, sanitise};

/// Longest uri shown, in runes, before `…`.
pub(crate) const MAX_URI_RUNES: usize = 1024;

/// Longest media type, name or content type shown, in runes, before `…`.
pub(crate) const MAX_LABEL_RUNES: usize = 256;

/// Most non-text items of one result given a metadata line (4096); the rest are counted in one
/// `- … <n> more item(s)` line, and are not even kept while the result is read (a line of
/// millions of `{}` items must not cost memory per item).
pub const MAX_CONTENT_ITEM_LINES: usize = 4096;

/// Metadata lines of non-text items kept whole ahead of the text when the view is capped (64,
/// like the artifact refs of one envelope); lines past them follow the text's fate.
pub(crate) const MAX_KEPT_CONTENT_LINES: usize = 64;

/// One content item of a `tools/call` result. Strings are the decoded JSON strings of the
/// item's members (borrowed from the response when unescaped); a member that is absent, `null`
/// or not of the expected JSON type reads as `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultItem<'a> {
    /// `{"type":"text","text":…}`.
    Text(Cow<'a, str>),
    /// `{"type":"image","data":<base64>,"mimeType":…}`.
    Image(Media<'a>),
    /// `{"type":"audio","data":<base64>,"mimeType":…}`.
    Audio(Media<'a>),
    /// `{"type":"resource_link","uri","name","mimeType","size",…}`.
    ResourceLink(ResourceLink<'a>),
    /// `{"type":"resource","resource":{"uri","mimeType","text"|"blob"}}`.
    EmbeddedResource(EmbeddedResource<'a>),
    /// Any other `type`, or none.
    Unknown { kind: Option<Cow<'a, str>> },
}

/// An image or audio item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Media<'a> {
    pub media_type: Option<Cow<'a, str>>,
    /// The base64 text, never rendered.
    pub data: Option<Cow<'a, str>>,
}

/// A `resource_link` item: a pointer the model may ask about, never read by odek.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceLink<'a> {
    pub uri: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub media_type: Option<Cow<'a, str>>,
    /// `size` when it is a non-negative integer.
    pub size: Option<u64>,
}

/// An embedded `resource` item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbeddedResource<'a> {
    pub uri: Option<Cow<'a, str>>,
    pub media_type: Option<Cow<'a, str>>,
    /// The resource's text, shown as content under the resource's line (`render_embedded_text`).
    pub text: Option<Cow<'a, str>>,
    /// The resource's base64 blob, never rendered.
    pub blob: Option<Cow<'a, str>>,
}

/// The metadata line of one non-text item, without a line feed; `None` for a text item.
///
/// - `- image (<media type>, <n> bytes)` and `- audio (…)`: `<n>` is the decoded size; `invalid
///   base64 data` or `no data` instead when that is what the item holds.
/// - `- resource link "<uri>" (name "<name>", <media type>, <size> bytes)`; `(no uri, …)` in
///   place of a missing uri.
/// - `- resource "<uri>" (<media type>, embedded text of <n> chars)` (or `embedded blob of <n>
///   bytes`, `invalid base64 blob`, `no contents`).
/// - `- content of type "<type>"`, or `- content without a type`.
///
/// Parts the item does not give are left out (with their comma; empty parentheses too).
pub(crate) fn render_content_line(item: &ResultItem<'_>) -> Option<String> {
    Some(match item {
        ResultItem::Text(_) => return None,
        ResultItem::Image(media) => render_media_line("- image", media),
        ResultItem::Audio(media) => render_media_line("- audio", media),
        ResultItem::ResourceLink(link) => render_resource_link_line(link),
        ResultItem::EmbeddedResource(resource) => render_embedded_resource_line(resource),
        ResultItem::Unknown { kind } => render_unknown_content_line(kind.as_deref()),
    })
}

fn render_media_line(head: &str, media: &Media<'_>) -> String {
    let mut parts = Vec::with_capacity(2);
    parts.extend(label(media.media_type.as_deref()));
    parts.push(match media.data.as_deref().map(base64_decoded_len) {
        None => "no data".to_owned(),
        Some(None) => "invalid base64 data".to_owned(),
        Some(Some(bytes)) => format!("{bytes} bytes"),
    });
    with_parts(head.to_owned(), &parts)
}

fn render_resource_link_line(link: &ResourceLink<'_>) -> String {
    let mut line = "- resource link".to_owned();
    let mut parts = Vec::with_capacity(4);
    if !push_uri(&mut line, link.uri.as_deref()) {
        parts.push("no uri".to_owned());
    }
    if let Some(name) = link.name.as_deref().filter(|name| !name.is_empty()) {
        parts.push(format!("name {}", quote(&clean_field_to(name, MAX_LABEL_RUNES))));
    }
    parts.extend(label(link.media_type.as_deref()));
    if let Some(size) = link.size {
        parts.push(format!("{size} bytes"));
    }
    with_parts(line, &parts)
}

fn render_embedded_resource_line(resource: &EmbeddedResource<'_>) -> String {
    let mut line = "- resource".to_owned();
    push_uri(&mut line, resource.uri.as_deref());
    let mut parts = Vec::with_capacity(2);
    parts.extend(label(resource.media_type.as_deref()));
    parts.push(match (resource.text.as_deref(), resource.blob.as_deref()) {
        (Some(text), _) => format!("embedded text of {} chars", text.chars().count()),
        (None, Some(blob)) => match base64_decoded_len(blob) {
            Some(bytes) => format!("embedded blob of {bytes} bytes"),
            None => "invalid base64 blob".to_owned(),
        },
        (None, None) => "no contents".to_owned(),
    });
    with_parts(line, &parts)
}

/// [beyond] An embedded text resource as the model view shows it (docs/MODEL-VIEW.md): its
/// metadata line followed by `:`, then, from the next line, its text, sanitised as every server
/// text is (a forged rendered line is indented), so the resource's text cannot end its section or
/// open another. `None` for every other item, a blob included (it keeps its metadata line).
pub(crate) fn render_embedded_text(item: &ResultItem<'_>) -> Option<String> {
    let ResultItem::EmbeddedResource(resource) = item else { return None };
    let text = resource.text.as_deref()?;
    let mut section = render_embedded_resource_line(resource);
    section.push(':');
    if !text.is_empty() {
        section.push('\n');
        section.push_str(&sanitise(text));
    }
    Some(section)
}

fn render_unknown_content_line(kind: Option<&str>) -> String {
    match kind {
        Some(kind) => format!("- content of type {}", quote(&clean_field_to(kind, MAX_LABEL_RUNES))),
        None => "- content without a type".to_owned(),
    }
}

/// `- … <n> more item(s)`: the non-text items past [`MAX_CONTENT_ITEM_LINES`].
pub(crate) fn render_more_items_line(more: usize) -> String {
    format!("{MORE_ITEMS_LINE_PREFIX}{more} more item(s)")
}

/// `- structured content <compact JSON>`: canonical JSON (keys sorted), one line because a line
/// feed inside a JSON string is written `\n`.
pub(crate) fn render_structured_line(structured: &Value) -> String {
    let mut line = STRUCTURED_LINE_PREFIX.to_owned();
    line.push_str(&to_canonical_string(structured));
    line
}

/// The decoded length of standard base64 (RFC 4648 §4, `+` and `/`), from the length and the
/// padding alone; `None` when `data` is not base64. Unpadded data is accepted.
pub(crate) fn base64_decoded_len(data: &str) -> Option<u64> {
    let bytes = data.as_bytes();
    let unpadded = bytes.strip_suffix(b"==").or_else(|| bytes.strip_suffix(b"=")).unwrap_or(bytes);
    if unpadded.len() != bytes.len() && !bytes.len().is_multiple_of(4) {
        return None;
    }
    if !unpadded.iter().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/')) {
        return None;
    }
    let whole = (unpadded.len() / 4) as u64 * 3;
    match unpadded.len() % 4 {
        0 => Some(whole),
        1 => None,
        remainder => Some(whole + remainder as u64 - 1),
    }
}

/// A cleaned, cut media type, when one is given.
fn label(media_type: Option<&str>) -> Option<String> {
    media_type.filter(|media_type| !media_type.is_empty()).map(|media_type| clean_field_to(media_type, MAX_LABEL_RUNES))
}

/// Appends ` "<uri>"` when there is one; whether there was.
fn push_uri(line: &mut String, uri: Option<&str>) -> bool {
    let Some(uri) = uri.filter(|uri| !uri.is_empty()) else { return false };
    let _ = write!(line, " {}", quote(&clean_field_to(uri, MAX_URI_RUNES)));
    true
}

fn with_parts(mut line: String, parts: &[String]) -> String {
    if !parts.is_empty() {
        line.push_str(" (");
        line.push_str(&parts.join(", "));
        line.push(')');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::starts_with_rendered_prefix;

    fn owned(text: &str) -> Option<Cow<'static, str>> {
        Some(Cow::Owned(text.to_owned()))
    }

    #[test]
    fn base64_sizes_from_length_and_padding() {
        assert_eq!(base64_decoded_len(""), Some(0));
        assert_eq!(base64_decoded_len("AA=="), Some(1));
        assert_eq!(base64_decoded_len("AAA="), Some(2));
        assert_eq!(base64_decoded_len("AAAA"), Some(3));
        assert_eq!(base64_decoded_len("AA"), Some(1), "unpadded");
        assert_eq!(base64_decoded_len("AAA"), Some(2), "unpadded");
        assert_eq!(base64_decoded_len("aGVsbG8gd29ybGQ="), Some(11));
        for invalid in ["A", "AAAAA", "AA=A", "A===", "AA=", "AA AA", "AA-_", "AAA\n", "=", "AA==AA=="] {
            assert_eq!(base64_decoded_len(invalid), None, "{invalid:?}");
        }
    }

    #[test]
    fn media_lines() {
        let image = Media { media_type: owned("image/png"), data: owned("iVBORw0KGgo=") };
        assert_eq!(render_content_line(&ResultItem::Image(image)).unwrap(), "- image (image/png, 8 bytes)");
        let audio = Media { media_type: None, data: owned("not base64!") };
        assert_eq!(render_content_line(&ResultItem::Audio(audio)).unwrap(), "- audio (invalid base64 data)");
        assert_eq!(render_content_line(&ResultItem::Image(Media::default())).unwrap(), "- image (no data)");
    }

    #[test]
    fn resource_lines() {
        let link = ResourceLink {
            uri: owned("file:///tmp/a \"b\".txt"),
            name: owned("a\nb"),
            media_type: owned("text/plain"),
            size: Some(42),
        };
        assert_eq!(
            render_content_line(&ResultItem::ResourceLink(link)).unwrap(),
            r#"- resource link "file:///tmp/a \"b\".txt" (name "a b", text/plain, 42 bytes)"#
        );
        assert_eq!(
            render_content_line(&ResultItem::ResourceLink(ResourceLink::default())).unwrap(),
            "- resource link (no uri)"
        );
        let named = ResourceLink { name: owned("n"), ..ResourceLink::default() };
        assert_eq!(
            render_content_line(&ResultItem::ResourceLink(named)).unwrap(),
            "- resource link (no uri, name \"n\")"
        );
        let embedded = EmbeddedResource {
            uri: owned("test://static/resource/1"),
            media_type: owned("text/plain"),
            text: owned("héllo"),
            blob: None,
        };
        assert_eq!(
            render_content_line(&ResultItem::EmbeddedResource(embedded)).unwrap(),
            r#"- resource "test://static/resource/1" (text/plain, embedded text of 5 chars)"#
        );
        let blob = EmbeddedResource { blob: owned("AAAA"), ..EmbeddedResource::default() };
        assert_eq!(
            render_content_line(&ResultItem::EmbeddedResource(blob)).unwrap(),
            "- resource (embedded blob of 3 bytes)"
        );
        let empty = EmbeddedResource::default();
        assert_eq!(render_content_line(&ResultItem::EmbeddedResource(empty)).unwrap(), "- resource (no contents)");
    }

    #[test]
    fn unknown_and_structured_lines() {
        assert_eq!(
            render_content_line(&ResultItem::Unknown { kind: owned("video\u{202e}") }).unwrap(),
            r#"- content of type "video ""#
        );
        assert_eq!(render_content_line(&ResultItem::Unknown { kind: None }).unwrap(), "- content without a type");
        assert_eq!(render_content_line(&ResultItem::Text(Cow::Borrowed("x"))), None);
        let value = serde_json::json!({"b": "x\ny", "a": [1, 2.5, null]});
        assert_eq!(render_structured_line(&value), r#"- structured content {"a":[1,2.5,null],"b":"x\ny"}"#);
    }

    /// Every rendered line is one line, carries a rendered prefix, is never an artifact line,
    /// and long server strings are cut.
    #[test]
    fn lines_are_single_capped_and_prefixed() {
        let long = "u\n".repeat(5000);
        let items = [
            ResultItem::Image(Media { media_type: Some(Cow::Borrowed(&long)), data: None }),
            ResultItem::Audio(Media::default()),
            ResultItem::ResourceLink(ResourceLink { uri: Some(Cow::Borrowed(&long)), ..ResourceLink::default() }),
            ResultItem::EmbeddedResource(EmbeddedResource {
                uri: Some(Cow::Borrowed(&long)),
                ..EmbeddedResource::default()
            }),
            ResultItem::Unknown { kind: Some(Cow::Borrowed(&long)) },
        ];
        for item in &items {
            let line = render_content_line(item).unwrap();
            assert!(!line.contains('\n'), "{line:?}");
            assert!(starts_with_rendered_prefix(&line), "{line:?}");
            assert!(!line.starts_with(crate::render::ARTIFACT_LINE_PREFIX));
            assert!(line.chars().count() < MAX_URI_RUNES + 64, "{}", line.chars().count());
        }
        assert!(starts_with_rendered_prefix(&render_structured_line(&Value::Null)));
        assert!(starts_with_rendered_prefix(&render_more_items_line(7)));
        assert!(starts_with_rendered_prefix(
            &render_content_line(&ResultItem::ResourceLink(ResourceLink::default())).unwrap()
        ));
        assert!(starts_with_rendered_prefix(
            &render_content_line(&ResultItem::EmbeddedResource(EmbeddedResource::default())).unwrap()
        ));
    }
}
