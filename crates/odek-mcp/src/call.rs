//! The answer to one `tools/call` (spec `mcp-client.md` §10): the decoding of its result into
//! the model-facing text via the contract's model view (docs/MODEL-VIEW.md). The request side —
//! the arguments, the params with their progress token — is `wire`'s. Start at
//! [`decode_checked_call_result`].
//!
//! A result of text items only (the usual shape) keeps the measured fast path: no vectors for
//! one item, and an escaped plain text capped while it is decoded. Every other shape is read
//! into a [`CallView`] and goes through [`model_view`], which gives text-only results the same
//! text.

use std::borrow::Cow;

use odek_contract::content_lines::{EmbeddedResource, Media, ResourceLink, ResultItem};
use odek_contract::escaped_text::{Channel, cap_escaped_text};
use odek_contract::model_view::{CallView, ModelViewError, OutputCheck, model_view};
use odek_contract::tool_result::{ResultContext, ToolOutput, decode_tool_result};
use odek_contract::truncation::apply_result_limit;
use serde::Deserialize;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::McpError;
use crate::wire::frame_scan::{CallResult, ContentItem, ItemMembers, scan_call_result};
use crate::wire::{Text, decode_literal, parse_object};

#[derive(Deserialize)]
struct WireContent<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Text<'a>>,
    /// Kept as the raw JSON literal: a large escaped text is capped while it is decoded.
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "mimeType")]
    mime_type: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    size: Option<&'a RawValue>,
    #[serde(borrow, default)]
    resource: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireCallResult<'a> {
    #[serde(borrow, default)]
    content: Option<WireItems<'a>>,
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
    #[serde(borrow, default, rename = "structuredContent")]
    structured: Option<&'a RawValue>,
}

/// The `content` array, read item by item into [`CallResult::push_item`], which keeps what the
/// scanner keeps.
struct WireItems<'a>(CallResult<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for WireItems<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Items<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Items<'a> {
            type Value = WireItems<'a>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("an array of content items")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<WireItems<'a>, A::Error> {
                let mut result = CallResult::default();
                // Each item through `parse_object`: serde would read an array as a struct by position.
                while let Some(raw) = seq.next_element::<&'a RawValue>()? {
                    let item = parse_object::<WireContent<'a>>(raw.get().as_bytes())
                        .map_err(|error| serde::de::Error::custom(format!("content item: {error}")))?;
                    result.push_item(content_item(item));
                }
                Ok(WireItems(result))
            }
        }
        deserializer.deserialize_seq(Items(std::marker::PhantomData))
    }
}

/// The result's members: by the routing scanner when it can, else by serde_json (whose reading
/// the scanner reproduces, and whose errors are the ones reported).
fn read_call_result(json: &[u8]) -> Result<CallResult<'_>, String> {
    match scan_call_result(json) {
        Some(result) => Ok(result),
        None => serde_call_result(json),
    }
}

fn serde_call_result(json: &[u8]) -> Result<CallResult<'_>, String> {
    let wire: WireCallResult<'_> = parse_object(json)?;
    let mut result = wire.content.map(|items| items.0).unwrap_or_default();
    result.is_error = wire.is_error;
    result.structured = raw_literal(wire.structured);
    Ok(result)
}

fn content_item(item: WireContent<'_>) -> ContentItem<'_> {
    let mut content = ContentItem { kind: item.kind.map(|kind| kind.0), text: raw_literal(item.text), members: None };
    let members = ItemMembers {
        data: raw_literal(item.data),
        mime_type: raw_literal(item.mime_type),
        uri: raw_literal(item.uri),
        name: raw_literal(item.name),
        size: raw_literal(item.size),
        resource: raw_literal(item.resource),
    };
    if members != ItemMembers::default() {
        content.members = Some(Box::new(members));
    }
    content
}

/// A member's raw JSON text; `null` reads as absent.
fn raw_literal(raw: Option<&RawValue>) -> Option<&str> {
    raw.map(RawValue::get).filter(|literal| *literal != "null")
}

/// The `text` literal of an item (`""` when absent or `null`); an error when it is not a JSON
/// string.
fn item_literal<'a>(item: &ContentItem<'a>) -> Result<&'a str, String> {
    match item.text {
        None => Ok("\"\""),
        Some(literal) if literal.starts_with('"') => Ok(literal),
        Some(other) => Err(format!("content text must be a string, got {}", first_chars(other, 32))),
    }
}

fn first_chars(text: &str, n: usize) -> &str {
    text.char_indices().nth(n).map_or(text, |(end, _)| &text[..end])
}

/// [`decode_checked_call_result`] for a tool that declared no `outputSchema`.
pub fn decode_call_result(result_json: &[u8], context: &ResultContext<'_>) -> Result<ToolOutput, McpError> {
    decode_checked_call_result(result_json, context, None)
}

/// Spec §10 with the model view of docs/MODEL-VIEW.md: `isError` becomes
/// [`McpError::ToolReturnedError`] with the error view (capped); success goes through envelope
/// detection, artifact validation, the metadata lines of non-text items, the `structuredContent`
/// check against `output_schema`, rendering and the cap.
pub fn decode_checked_call_result(
    result_json: &[u8],
    context: &ResultContext<'_>,
    output_schema: Option<&dyn OutputCheck>,
) -> Result<ToolOutput, McpError> {
    let result = read_call_result(result_json).map_err(|error| parse_error(context, error))?;
    decode_read_result(result, result_json, context, output_schema)
}

/// [`decode_checked_call_result`] when it cannot block: `None` when the result holds work that
/// belongs off the async workers ([`decode_may_block`]), for the caller to run elsewhere. The
/// decision is made on the decoded members, never on a byte search of the line.
pub(crate) fn decode_unless_blocking(
    result_json: &[u8],
    context: &ResultContext<'_>,
    output_schema: Option<&dyn OutputCheck>,
) -> Option<Result<ToolOutput, McpError>> {
    let result = match read_call_result(result_json) {
        Ok(result) => result,
        Err(error) => return Some(Err(parse_error(context, error))),
    };
    if decode_may_block(&result, output_schema.is_some()) {
        return None;
    }
    Some(decode_read_result(result, result_json, context, output_schema))
}

/// Whether decoding a successful result may do blocking work: artifact refs are stat'ed and
/// hashed (only an envelope carries them, and an envelope is a text starting with `{`), and a
/// `structuredContent` is checked against a declared schema (bounded, but up to
/// [`crate::output_schema::MAX_CHECK_STEPS`] steps).
pub(crate) fn decode_may_block(result: &CallResult<'_>, schema_declared: bool) -> bool {
    if result.is_error == Some(true) {
        return false;
    }
    (schema_declared && result.structured.is_some())
        || result.content.iter().any(|item| item.is_text() && item.text.is_some_and(text_may_be_an_envelope))
}

/// Whether a text literal, decoded, starts like an envelope (§2 steps 1-2: whitespace, one
/// BOM, then `{`). Reads only as far as the first other character.
fn text_may_be_an_envelope(literal: &str) -> bool {
    let mut chars = JsonStringChars { rest: literal.strip_prefix('"').unwrap_or(literal) };
    let mut first = chars.next();
    while first.is_some_and(char::is_whitespace) {
        first = chars.next();
    }
    if first == Some('\u{feff}') {
        first = chars.next();
    }
    first == Some('{')
}

/// The characters of a JSON string literal's body (after its opening quote), escapes decoded;
/// ends at the closing quote or at anything malformed.
struct JsonStringChars<'a> {
    rest: &'a str,
}

impl Iterator for JsonStringChars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let mut chars = self.rest.chars();
        let decoded = match chars.next()? {
            '"' => return None,
            '\\' => match chars.next()? {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'f' => '\u{c}',
                'b' => '\u{8}',
                'u' => {
                    let rest = chars.as_str();
                    let unit = u32::from_str_radix(rest.get(..4)?, 16).ok()?;
                    chars = rest[4..].chars();
                    // A surrogate (half of a pair) never decodes to whitespace, a BOM or `{`.
                    char::from_u32(unit).unwrap_or('\u{fffd}')
                }
                other => other,
            },
            other => other,
        };
        self.rest = chars.as_str();
        Some(decoded)
    }
}

fn parse_error(context: &ResultContext<'_>, error: String) -> McpError {
    McpError::ResultParse { server: context.server.to_owned(), error }
}

/// The decode of a result already read.
fn decode_read_result(
    result: CallResult<'_>,
    result_json: &[u8],
    context: &ResultContext<'_>,
    output_schema: Option<&dyn OutputCheck>,
) -> Result<ToolOutput, McpError> {
    let parse_error = |error| parse_error(context, error);
    let text_only = result.structured.is_none() && result.content.iter().all(ContentItem::is_text);
    if !text_only || (result.is_error == Some(true) && result.content.len() > 1) {
        let view = call_view(&result, result_json).map_err(parse_error)?;
        return model_view(&view, output_schema, context).map_err(|error| match error {
            ModelViewError::ToolError(message) => tool_returned_error(context, message),
            ModelViewError::Rejected(error) => contract_error(context, &error),
        });
    }
    let content = result.content;
    if result.is_error == Some(true) {
        let message = match content.first() {
            None => odek_contract::model_view::UNKNOWN_ERROR.to_owned(),
            Some(item) => {
                // The error channel never carries an envelope, so this always answers.
                let literal = item_literal(item).map_err(parse_error)?;
                cap_escaped_text(literal, context, Channel::Error).map(|capped| capped.text).unwrap_or_default()
            }
        };
        return Err(tool_returned_error(context, message));
    }
    let mut text_items = content.iter();
    if let (only, None) = (text_items.next(), text_items.next()) {
        // One text item (the usual shape): no vectors, and an escaped plain text is capped
        // while decoding, so a large one is never held decoded in full.
        let literal = only.map_or(Ok("\"\""), item_literal).map_err(parse_error)?;
        if literal.contains('\\')
            && let Some(capped) = cap_escaped_text(literal, context, Channel::Result)
        {
            return Ok(ToolOutput { text: capped.text, artifacts: Vec::new(), observed_chars: capped.observed });
        }
        let text = decode_literal(literal).map_err(parse_error)?;
        return decode_tool_result(&[&text], context).map_err(|error| contract_error(context, &error));
    }
    let texts: Vec<Cow<'_, str>> = content
        .iter()
        .map(|item| item_literal(item).and_then(decode_literal))
        .collect::<Result<_, _>>()
        .map_err(parse_error)?;
    let texts: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
    decode_tool_result(&texts, context).map_err(|error| contract_error(context, &error))
}

fn tool_returned_error(context: &ResultContext<'_>, message: String) -> McpError {
    McpError::ToolReturnedError { server: context.server.to_owned(), tool: context.tool.to_owned(), message }
}

pub(crate) fn contract_error(context: &ResultContext<'_>, error: &odek_contract::ContractError) -> McpError {
    McpError::ToolResult {
        server: context.server.to_owned(),
        tool: context.tool.to_owned(),
        detail: apply_result_limit(&error.to_string(), context.server, context.tool, context.max_result_chars).text,
    }
}

/// Every item and `structuredContent` decoded for [`model_view`], with the `content` array as
/// JSON when `structuredContent` could mirror it. A text item whose `text` is not a string, and
/// `structuredContent` nested too deep for serde_json, are parse errors; any other member of
/// another item that is not what MCP says reads as absent.
fn call_view<'a>(result: &CallResult<'a>, result_json: &[u8]) -> Result<CallView<'a>, String> {
    let items = result.content.iter().map(result_item).collect::<Result<_, _>>()?;
    let structured = result
        .structured
        .map(|raw| serde_json::from_str::<Value>(raw).map_err(|err| format!("structuredContent: {err}")))
        .transpose()?;
    let content = match &structured {
        Some(structured) if may_mirror_content(structured, result) => content_value(result_json),
        _ => None,
    };
    Ok(CallView {
        items,
        omitted_items: result.omitted_items,
        structured,
        content,
        is_error: result.is_error == Some(true),
    })
}

/// Whether `structured` could be a mirror of the whole `content` array
/// ([`odek_contract::model_view::structured_is_carried`]): an object of one member whose value is
/// an array of as many items. Only then is the array read a second time, as JSON; a result with
/// items past the kept ones is never read so.
fn may_mirror_content(structured: &Value, result: &CallResult<'_>) -> bool {
    let wrapped = match structured {
        Value::Object(members) if members.len() == 1 => members.values().next(),
        _ => None,
    };
    result.omitted_items == 0
        && wrapped.and_then(Value::as_array).is_some_and(|items| items.len() == result.content.len())
}

/// The result's `content` member as JSON (`None` when it cannot be read as such).
fn content_value(result_json: &[u8]) -> Option<Value> {
    #[derive(Deserialize)]
    struct ContentMember<'a> {
        #[serde(borrow, default)]
        content: Option<&'a RawValue>,
    }
    let member = parse_object::<ContentMember<'_>>(result_json).ok()?.content?;
    serde_json::from_str(member.get()).ok()
}

fn result_item<'a>(item: &ContentItem<'a>) -> Result<ResultItem<'a>, String> {
    let members = item.members();
    let media = || Media { media_type: string_member(members.mime_type), data: string_member(members.data) };
    Ok(match item.kind.as_deref() {
        Some("text") => ResultItem::Text(decode_literal(item_literal(item)?)?),
        Some("image") => ResultItem::Image(media()),
        Some("audio") => ResultItem::Audio(media()),
        Some("resource_link") => ResultItem::ResourceLink(ResourceLink {
            uri: string_member(members.uri),
            name: string_member(members.name),
            media_type: string_member(members.mime_type),
            size: members.size.and_then(|literal| literal.parse::<u64>().ok()),
        }),
        Some("resource") => ResultItem::EmbeddedResource(members.resource.map(embedded_resource).unwrap_or_default()),
        _ => ResultItem::Unknown { kind: item.kind.clone() },
    })
}

/// A member's JSON string, decoded; `None` when it is anything else.
fn string_member(literal: Option<&str>) -> Option<Cow<'_, str>> {
    literal.filter(|literal| literal.starts_with('"')).and_then(|literal| decode_literal(literal).ok())
}

#[derive(Deserialize)]
struct WireResource<'a> {
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "mimeType")]
    mime_type: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    blob: Option<&'a RawValue>,
}

/// The embedded `resource` object; one that is not an object (or repeats a member) reads as
/// an empty resource.
fn embedded_resource(literal: &str) -> EmbeddedResource<'_> {
    let Ok(wire) = parse_object::<WireResource<'_>>(literal.as_bytes()) else { return EmbeddedResource::default() };
    EmbeddedResource {
        uri: string_member(raw_literal(wire.uri)),
        media_type: string_member(raw_literal(wire.mime_type)),
        text: string_member(raw_literal(wire.text)),
        blob: string_member(raw_literal(wire.blob)),
    }
}

#[cfg(test)]
mod tests {
    use odek_contract::artifact_ref::ArtifactRoots;

    use super::*;

    fn limits(roots: &ArtifactRoots) -> ResultContext<'_> {
        ResultContext { server: "fx", tool: "t", max_result_chars: 1000, roots }
    }

    /// Text items are joined as the spec says; [beyond] every other item, and structuredContent
    /// no text item carries, follows as a metadata line (the spec ignored them).
    #[test]
    fn text_items_are_joined_and_other_items_become_metadata_lines() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let json = br#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"xx","mimeType":"image/png"},{"type":"text","text":"b\nc"}],"structuredContent":{"x":1}}"#;
        let output = decode_call_result(json, &limits(&roots)).unwrap();
        assert_eq!(output.text, "a\nb\nc\n- image (image/png, 1 bytes)\n- structured content {\"x\":1}");
        assert_eq!(output.observed_chars, None);
        let json = br#"{"content":[{"type":"text","text":"{\"x\": 1}"}],"structuredContent":{"x":1}}"#;
        assert_eq!(decode_call_result(json, &limits(&roots)).unwrap().text, r#"{"x": 1}"#, "carried, not shown twice");
        let mirrored = br#"{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":{"content":[{"mimeType":"image/png","type":"image","data":"AAAA"}]}}"#;
        assert_eq!(decode_call_result(mirrored, &limits(&roots)).unwrap().text, "- image (image/png, 3 bytes)");
    }

    #[test]
    fn every_item_shape_has_its_line() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let json = br#"{"content":[
            {"type":"audio","data":"AAAA","mimeType":"audio/wav"},
            {"type":"resource_link","uri":"file:///x.txt","name":"x.txt","mimeType":"text/plain","size":12},
            {"type":"resource_link","uri":5,"size":-1},
            {"type":"resource","resource":{"uri":"test://r","mimeType":"text/plain","text":"shown text"}},
            {"type":"resource","resource":{"uri":"test://b","blob":"AAAA"}},
            {"type":"resource","resource":"not an object"},
            {"type":"video","data":"AAAA"},
            {"text":"typeless"},
            {"type":"image","data":"not base64","mimeType":"image/png"}
        ]}"#;
        let output = decode_call_result(json, &limits(&roots)).unwrap();
        assert_eq!(
            output.text,
            [
                "- audio (audio/wav, 3 bytes)",
                r#"- resource link "file:///x.txt" (name "x.txt", text/plain, 12 bytes)"#,
                "- resource link (no uri)",
                r#"- resource "test://b" (embedded blob of 3 bytes)"#,
                "- resource (no contents)",
                r#"- content of type "video""#,
                "- content without a type",
                "- image (image/png, invalid base64 data)",
                r#"- resource "test://r" (text/plain, embedded text of 10 chars):"#,
                "shown text",
            ]
            .join("\n")
        );
        assert!(!output.text.contains("typeless"));
    }

    /// [beyond] The error text carries every item: an image-first error is no longer empty, and
    /// every text item counts (the spec took the first item only).
    #[test]
    fn is_error_shows_every_item() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let err = decode_call_result(br#"{"content":[{"type":"text","text":"boom"}],"isError":true}"#, &limits(&roots))
            .unwrap_err();
        assert_eq!(err.to_string(), "mcpclient fx: tool t returned error: boom");
        let err = decode_call_result(br#"{"content":[],"isError":true}"#, &limits(&roots)).unwrap_err();
        assert_eq!(err.to_string(), "mcpclient fx: tool t returned error: unknown error");
        let err = decode_call_result(br#"{"content":[{"type":"image"}],"isError":true}"#, &limits(&roots)).unwrap_err();
        assert_eq!(err.to_string(), "mcpclient fx: tool t returned error: - image (no data)");
        let err = decode_call_result(
            br#"{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"bad"},{"type":"text","text":"worse"}],"isError":true}"#,
            &limits(&roots),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "mcpclient fx: tool t returned error: bad\nworse\n- image (image/png, 3 bytes)");
    }

    struct Reject;

    impl OutputCheck for Reject {
        fn check(&self, _: &Value) -> Result<(), odek_contract::model_view::OutputCheckFailure> {
            Err(odek_contract::model_view::OutputCheckFailure::Mismatch(odek_contract::model_view::SchemaMismatch {
                pointer: "/a".into(),
                message: "wrong".into(),
            }))
        }
    }

    #[test]
    fn structured_content_is_checked_against_the_schema() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let json = br#"{"content":[],"structuredContent":{"a":1}}"#;
        let err = decode_checked_call_result(json, &limits(&roots), Some(&Reject)).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"mcpclient fx: tool t: structuredContent does not match the tool's outputSchema at "/a": wrong"#
        );
        let plain = br#"{"content":[{"type":"text","text":"x"}]}"#;
        assert_eq!(decode_checked_call_result(plain, &limits(&roots), Some(&Reject)).unwrap().text, "x");
        let error = br#"{"content":[],"structuredContent":{"a":1},"isError":true}"#;
        let err = decode_checked_call_result(error, &limits(&roots), Some(&Reject)).unwrap_err();
        assert!(matches!(err, McpError::ToolReturnedError { .. }), "errors are not checked: {err}");
        let deep = format!(r#"{{"content":[],"structuredContent":{}1{}}}"#, "[".repeat(200), "]".repeat(200));
        let err = decode_call_result(deep.as_bytes(), &limits(&roots)).unwrap_err();
        assert!(err.to_string().starts_with("mcpclient fx: parse result: structuredContent: recursion limit"), "{err}");
    }

    /// Non-text items past the cap are counted, not kept (scanner and serde alike); every text
    /// item is kept wherever it sits.
    #[test]
    fn items_past_the_cap_are_counted_in_one_line() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let context = ResultContext { server: "fx", tool: "t", max_result_chars: 1_000_000, roots: &roots };
        let items = vec!["{}"; 4100].join(",");
        for key in ["content", "\\u0063ontent"] {
            let json = format!(r#"{{"{key}":[{items},{{"type":"text","text":"last words"}}]}}"#);
            let result = read_call_result(json.as_bytes()).unwrap();
            assert_eq!((result.content.len(), result.omitted_items), (4097, 4));
            let text = decode_call_result(json.as_bytes(), &context).unwrap().text;
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[0], "last words");
            assert_eq!(lines.iter().filter(|line| **line == "- content without a type").count(), 4096);
            assert_eq!(lines.last(), Some(&"- \u{2026} 4 more item(s)"), "{key}");
        }
    }

    /// Whether decoding may block is read from the decoded members: an escaped key or an
    /// escaped brace does not hide a schema check or an envelope.
    #[test]
    fn the_blocking_decision_reads_decoded_members_red() {
        let may_block = |json: &[u8], schema| decode_may_block(&read_call_result(json).unwrap(), schema);
        assert!(!may_block(br#"{"content":[{"type":"text","text":"plain {"}]}"#, true));
        assert!(may_block(br#"{"content":[{"type":"text","text":" \n\u00a0\ufeff{\"schema\":1}"}]}"#, false));
        assert!(may_block(br#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"\u007b"}]}"#, false));
        assert!(!may_block(br#"{"content":[{"type":"text","text":"\ufeff\ufeff{"}]}"#, false), "one BOM is stripped");
        assert!(may_block(br#"{"content":[],"structured\u0043ontent":{}}"#, true));
        assert!(!may_block(br#"{"content":[],"structuredContent":{}}"#, false));
        assert!(!may_block(br#"{"content":[{"type":"text","text":"{"}],"structuredContent":{},"isError":true}"#, true));
    }

    /// The fast path for text items only gives the model view's text.
    #[test]
    fn the_text_fast_path_agrees_with_the_model_view() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let context = ResultContext { server: "fx", tool: "t", max_result_chars: 400, roots: &roots };
        for json in [
            &br#"{"content":[{"type":"text","text":"plain"}]}"#[..],
            br#"{"content":[{"type":"text","text":"esc\u00e9\n- artifact \"x\"\n- image y"}]}"#,
            br#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
            br#"{"content":[]}"#,
            b"{}",
            br#"{"content":[{"type":"text","text":"boom"}],"isError":true}"#,
        ] {
            let result = read_call_result(json).unwrap();
            let view = model_view(&call_view(&result, json).unwrap(), None, &context).map_err(|error| match error {
                ModelViewError::ToolError(message) => tool_returned_error(&context, message),
                ModelViewError::Rejected(error) => contract_error(&context, &error),
            });
            assert_eq!(decode_call_result(json, &context), view, "{}", String::from_utf8_lossy(json));
        }
        let long = format!(r#"{{"content":[{{"type":"text","text":"{}"}}]}}"#, "\\n".repeat(2000));
        let result = read_call_result(long.as_bytes()).unwrap();
        let view = model_view(&call_view(&result, long.as_bytes()).unwrap(), None, &context).unwrap();
        assert_eq!(decode_call_result(long.as_bytes(), &context).unwrap(), view);
    }

    /// Wherever the scanner reads a result, serde_json reads the same members.
    #[test]
    fn scanned_results_agree_with_serde() {
        let seeds: [&[u8]; 6] = [
            br#"{"content":[{"type":"text","text":"hello"}]}"#,
            br#"{"content":[{"type":"text","text":"a\"b\u00e9","x":[1,{}]},{"type":"image","data":"zz"}],"isError":false}"#,
            br#" { "isError" : true , "content" : [ { "text" : null , "type" : null } ] , "structuredContent" : { "k" : 1 } } "#,
            br#"{"content":null,"isError":null}"#,
            br#"{"content":[{"type":"resource_link","uri":"file:///a","name":"a","mimeType":"text/plain","size":3},{"type":"audio","data":"AA==","mimeType":"audio/wav"}],"structuredContent":[1,"x"]}"#,
            br#"{"content":[{"type":"resource","resource":{"uri":"u","text":"t","blob":null}}],"structuredContent":null}"#,
        ];
        let mut scanned = 0;
        for seed in seeds {
            assert!(scan_call_result(seed).is_some(), "{}", String::from_utf8_lossy(seed));
            for json in crate::wire::frame_scan::mutations(seed, 4000) {
                if let Some(result) = scan_call_result(&json) {
                    scanned += 1;
                    assert_eq!(Ok(result), serde_call_result(&json), "{:?}", String::from_utf8_lossy(&json));
                }
            }
        }
        assert!(scanned > 1000, "{scanned}");
        for json in [
            &br#"{"content":[{"type":"text","type":"text"}]}"#[..],
            br#"{"content":[],"content":[]}"#,
            br#"{"content":[["text","\"hi\""]]}"#,
            br#"{"content":[{"type":"te\u0078t","text":"hi"}]}"#,
            br#"{"content":[{"type":"image","data":"a","data":"b"}]}"#,
            br#"{"structuredContent":1,"structuredContent":2}"#,
            br#"{"isError":1}"#,
            b"[]",
        ] {
            assert_eq!(scan_call_result(json), None, "{}", String::from_utf8_lossy(json));
        }
    }

    #[test]
    fn malformed_results_are_parse_errors() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        for json in [
            &b"[]"[..],
            br#"{"content":"x"}"#,
            b"null",
            br#"{"content":[["text","\"hi\""]]}"#,
            br#"{"content":[[]]}"#,
            br#"{"content":[1]}"#,
            br#"{"content":[{"type":7}]}"#,
            br#"{"content":[{"type":"image","data":"a","data":"b"}]}"#,
            br#"{"content":[],"isError":"yes"}"#,
            br#"{"content":[],"content":[]}"#,
        ] {
            let err = decode_call_result(json, &limits(&roots)).unwrap_err();
            assert!(err.to_string().starts_with("mcpclient fx: parse result: "), "{err}");
        }
        assert_eq!(decode_call_result(b"{}", &limits(&roots)).unwrap().text, "");
    }
}
