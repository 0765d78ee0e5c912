//! Response routing: the validating frame scanner against serde_json's reading of the same line,
//! the `tools/call` result scanner against serde's, and the whole result decoding (spec
//! `mcp-client.md` §7 and §10, the model view of docs/MODEL-VIEW.md) against the result
//! invariants.
//!
//! Input: `[cap selector, one stdout line…]`; `$ROOT`, `$OUT`, `$BASE` in a UTF-8 line name
//! the artifact tree.

#![no_main]

use std::borrow::Cow;
use std::ops::Range;

use libfuzzer_sys::fuzz_target;
use odek_contract::render::{ARTIFACT_LINE_PREFIX, starts_with_rendered_prefix};
use odek_contract::tool_result::ResultContext;
use odek_contract::runes::rune_count;
use odek_contract::truncation::result_floor;
use odek_fuzz::{artifact_tree, check_tool_output, expand_placeholders};
use odek_mcp::wire::frame_scan::{
    CallResult, ContentItem, FrameIndex, ItemMembers, Scan, index_frame, scan_call_result, scan_frame,
};
use odek_mcp::wire::parse_object;
use odek_mcp::{McpError, decode_call_result};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The frame as serde_json reads it: the reference the scanner must agree with.
#[derive(Deserialize)]
struct ReferenceFrame<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

fn reference_index(line: &[u8]) -> Option<FrameIndex> {
    let frame = parse_object::<ReferenceFrame<'_>>(line).ok()?;
    let range = |raw: Option<&RawValue>| -> Option<Range<usize>> {
        raw.map(|raw| {
            let start = raw.get().as_ptr() as usize - line.as_ptr() as usize;
            start..start + raw.get().len()
        })
    };
    Some(FrameIndex {
        id: range(frame.id),
        method: range(frame.method),
        result: range(frame.result),
        error: range(frame.error),
        params: range(frame.params),
    })
}

fn without_nulls(index: FrameIndex, line: &[u8]) -> FrameIndex {
    let keep = |range: Option<Range<usize>>| range.filter(|range| &line[range.clone()] != b"null");
    FrameIndex {
        id: keep(index.id),
        method: keep(index.method),
        result: keep(index.result),
        error: keep(index.error),
        params: keep(index.params),
    }
}

#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
struct ReferenceContent<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Text<'a>>,
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
struct ReferenceResult<'a> {
    #[serde(borrow, default)]
    content: Option<Vec<ReferenceContent<'a>>>,
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
    #[serde(borrow, default, rename = "structuredContent")]
    structured: Option<&'a RawValue>,
}

fn literal(raw: Option<&RawValue>) -> Option<&str> {
    raw.map(RawValue::get).filter(|literal| *literal != "null")
}

fn reference_call_result(json: &[u8]) -> Option<CallResult<'_>> {
    let wire: ReferenceResult<'_> = parse_object(json).ok()?;
    let mut result = CallResult::default();
    for item in wire.content.unwrap_or_default() {
        let members = ItemMembers {
            data: literal(item.data),
            mime_type: literal(item.mime_type),
            uri: literal(item.uri),
            name: literal(item.name),
            size: literal(item.size),
            resource: literal(item.resource),
        };
        let members = (members != ItemMembers::default()).then(|| Box::new(members));
        result.push_item(ContentItem { kind: item.kind.map(|kind| kind.0), text: literal(item.text), members });
    }
    result.is_error = wire.is_error;
    result.structured = literal(wire.structured);
    Some(result)
}

fuzz_target!(|data: &[u8]| {
    let Some((selector, line)) = data.split_first() else { return };
    let expanded;
    let line = match std::str::from_utf8(line) {
        Ok(text) if text.contains('$') => {
            expanded = expand_placeholders(text);
            expanded.as_bytes()
        }
        _ => line,
    };

    // Routing: the scanner accepts exactly the lines serde accepts, and finds the same members
    // (a `null` member may be reported as absent or as `null`: the router reads both alike).
    let index = index_frame(line);
    assert_eq!(
        index.clone().map(|index| without_nulls(index, line)),
        reference_index(line),
        "scanner and serde disagree on {:?}",
        String::from_utf8_lossy(line)
    );
    if let Scan::Frame(scanned) = scan_frame(line) {
        assert_eq!(Some(scanned), index);
    }
    if let Some(index) = &index {
        for range in [&index.id, &index.method, &index.result, &index.error, &index.params].into_iter().flatten() {
            let member = &line[range.clone()];
            assert!(serde_json::from_slice::<&RawValue>(member).is_ok(), "a member range is not one value");
        }
    }

    // The result reader: when the scanner answers, it answers as serde would.
    let reference = reference_call_result(line);
    if let Some(scanned) = scan_call_result(line) {
        assert_eq!(Some(&scanned), reference.as_ref());
    }
    // [beyond] At most one content line per non-text item kept, one for the items past them,
    // and one for structuredContent: a text item cannot forge one.
    let most_content_lines = reference.as_ref().map_or(0, |result| {
        let non_text = result.content.iter().filter(|item| !item.is_text()).count();
        non_text + usize::from(result.omitted_items > 0) + usize::from(result.structured.is_some())
    });

    // Decoding for the model.
    let tree = artifact_tree();
    let cap = result_floor("srv") + usize::from(*selector) * 11;
    let context = ResultContext { server: "srv", tool: "echo", max_result_chars: cap, roots: &tree.roots };
    let input = String::from_utf8_lossy(line);
    match decode_call_result(line, &context) {
        Ok(output) => {
            check_tool_output(&output, cap, &input);
            let content_lines = output
                .text
                .split('\n')
                .filter(|line| starts_with_rendered_prefix(line) && !line.starts_with(ARTIFACT_LINE_PREFIX))
                .count();
            assert!(content_lines <= most_content_lines, "forged content line in {:?}", output.text);
        }
        Err(McpError::ToolReturnedError { message, .. }) => {
            assert!(rune_count(&message) <= cap, "error message over the cap");
        }
        Err(McpError::ToolResult { detail, .. }) => {
            assert!(rune_count(&detail) <= cap, "result error over the cap");
        }
        Err(McpError::ResultParse { .. }) => {}
        Err(other) => panic!("unexpected error kind: {other:?}"),
    }
});
