//! One `tools/call` on the wire and back (spec `mcp-client.md` §9–§10): argument encoding, the
//! params with their progress token, and decoding of the result into the model-facing text via
//! the contract's pipeline. Start at [`decode_call_result`].

use std::borrow::Cow;

use odek_contract::canonical_json::canonicalize_text;
use odek_contract::escaped_text::{Channel, cap_escaped_text};
use odek_contract::tool_result::{ResultContext, ToolOutput, decode_tool_result};
use odek_contract::truncation::apply_result_limit;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::discovery::json_string;
use crate::error::McpError;
use crate::frame_scan::{CallResult, ContentItem, scan_call_result};

/// The model's argument string as sent: parsed and re-serialised with sorted keys; empty ⇒
/// `null`; not JSON ⇒ the text as a JSON string.
pub fn encode_arguments(arguments: &str) -> String {
    if arguments.is_empty() {
        return "null".to_owned();
    }
    canonicalize_text(arguments).unwrap_or_else(|| json_string(arguments))
}

/// Appends `{"name":<raw tool>,"arguments":<args>,"_meta":{"progressToken":<request id>}}`,
/// from the route's precomputed `{"name":…,"arguments":` prefix.
pub fn push_call_params(out: &mut Vec<u8>, params_prefix: &str, encoded_arguments: &str, request_id: i64) {
    out.extend_from_slice(params_prefix.as_bytes());
    out.extend_from_slice(encoded_arguments.as_bytes());
    out.extend_from_slice(b",\"_meta\":{\"progressToken\":");
    crate::connection::push_integer(out, request_id);
    out.extend_from_slice(b"}}");
}

/// A text that borrows from the response line when it has no escapes.
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
struct WireContent<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Text<'a>>,
    /// Kept as the raw JSON literal: a large escaped text is capped while it is decoded.
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireCallResult<'a> {
    #[serde(borrow, default)]
    content: Option<Vec<WireContent<'a>>>,
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
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
    let content = wire
        .content
        .unwrap_or_default()
        .into_iter()
        .map(|item| ContentItem {
            is_text: item.kind.is_some_and(|kind| kind.0 == "text"),
            text: item.text.map(RawValue::get).filter(|literal| *literal != "null"),
        })
        .collect();
    Ok(CallResult { content, is_error: wire.is_error })
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

/// Decodes a JSON string literal (already validated as part of its frame), borrowing when it
/// has no escapes; any other JSON value is an error.
pub(crate) fn decode_literal(literal: &str) -> Result<Cow<'_, str>, String> {
    if !literal.contains('\\')
        && let Some(inner) = literal.strip_prefix('"').and_then(|rest| rest.strip_suffix('"'))
    {
        return Ok(Cow::Borrowed(inner));
    }
    serde_json::from_str::<Text<'_>>(literal).map(|text| text.0).map_err(|err| err.to_string())
}

/// Spec §10: `isError` becomes [`McpError::ToolReturnedError`] with the first text item (capped);
/// success goes through envelope detection, artifact validation, rendering and the cap.
pub fn decode_call_result(result_json: &[u8], context: &ResultContext<'_>) -> Result<ToolOutput, McpError> {
    let parse_error = |error| McpError::ResultParse { server: context.server.to_owned(), error };
    let result = read_call_result(result_json).map_err(parse_error)?;
    let content = result.content;
    if result.is_error == Some(true) {
        let message = match content.first() {
            None => "unknown error".to_owned(),
            Some(item) if item.is_text => {
                // The error channel never carries an envelope, so this always answers.
                let literal = item_literal(item).map_err(parse_error)?;
                cap_escaped_text(literal, context, Channel::Error).map(|capped| capped.text).unwrap_or_default()
            }
            Some(_) => String::new(),
        };
        return Err(McpError::ToolReturnedError {
            server: context.server.to_owned(),
            tool: context.tool.to_owned(),
            message,
        });
    }
    let contract_error = |err: odek_contract::ContractError| McpError::ToolResult {
        server: context.server.to_owned(),
        tool: context.tool.to_owned(),
        detail: apply_result_limit(&err.to_string(), context.server, context.tool, context.max_result_chars).text,
    };
    let mut text_items = content.iter().filter(|item| item.is_text);
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
        return decode_tool_result(&[&text], context).map_err(contract_error);
    }
    let texts: Vec<Cow<'_, str>> = content
        .iter()
        .filter(|item| item.is_text)
        .map(|item| item_literal(item).and_then(decode_literal))
        .collect::<Result<_, _>>()
        .map_err(parse_error)?;
    let texts: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
    decode_tool_result(&texts, context).map_err(contract_error)
}

/// Decodes a JSON object into `T`; any other JSON value is an error (serde would otherwise
/// accept an array for a struct).
pub fn parse_object<'a, T: Deserialize<'a>>(json: &'a [u8]) -> Result<T, String> {
    let first = json.iter().copied().find(|byte| !byte.is_ascii_whitespace());
    if first != Some(b'{') {
        let found = match first {
            Some(b'[') => "an array",
            Some(b'"') => "a string",
            Some(b'n') => "null",
            Some(b't' | b'f') => "a boolean",
            None => "nothing",
            Some(_) => "a number",
        };
        return Err(format!("expected a JSON object, found {found}"));
    }
    serde_json::from_slice(json).map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use odek_contract::artifact_ref::ArtifactRoots;

    use super::*;

    #[test]
    fn arguments_are_canonical() {
        assert_eq!(encode_arguments(""), "null");
        assert_eq!(encode_arguments(r#"{"b":1,"a":{"d":2,"c":3}}"#), r#"{"a":{"c":3,"d":2},"b":1}"#);
        assert_eq!(encode_arguments("not json"), r#""not json""#);
        assert_eq!(encode_arguments("[1, 2]"), "[1,2]");
    }

    #[test]
    fn params_carry_the_progress_token() {
        let mut params = Vec::new();
        push_call_params(&mut params, r#"{"name":"echo","arguments":"#, r#"{"text":"hi"}"#, 7);
        assert_eq!(params, br#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7}}"#);
    }

    fn limits(roots: &ArtifactRoots) -> ResultContext<'_> {
        ResultContext { server: "fx", tool: "t", max_result_chars: 1000, roots }
    }

    #[test]
    fn text_items_are_joined_and_others_ignored() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let json = br#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"xx","mimeType":"image/png"},{"type":"text","text":"b\nc"}],"structuredContent":{"x":1}}"#;
        let output = decode_call_result(json, &limits(&roots)).unwrap();
        assert_eq!(output.text, "a\nb\nc");
        assert_eq!(output.observed_chars, None);
    }

    #[test]
    fn is_error_uses_the_first_item() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let err = decode_call_result(br#"{"content":[{"type":"text","text":"boom"}],"isError":true}"#, &limits(&roots))
            .unwrap_err();
        assert_eq!(err.to_string(), "mcpclient fx: tool t returned error: boom");
        let err = decode_call_result(br#"{"content":[],"isError":true}"#, &limits(&roots)).unwrap_err();
        assert_eq!(err.to_string(), "mcpclient fx: tool t returned error: unknown error");
        let err = decode_call_result(br#"{"content":[{"type":"image"}],"isError":true}"#, &limits(&roots)).unwrap_err();
        assert_eq!(err.to_string(), "mcpclient fx: tool t returned error: ");
    }

    /// Wherever the scanner reads a result, serde_json reads the same members.
    #[test]
    fn scanned_results_agree_with_serde() {
        let seeds: [&[u8]; 4] = [
            br#"{"content":[{"type":"text","text":"hello"}]}"#,
            br#"{"content":[{"type":"text","text":"a\"b\u00e9","x":[1,{}]},{"type":"image","data":"zz"}],"isError":false}"#,
            br#" { "isError" : true , "content" : [ { "text" : null , "type" : null } ] , "structuredContent" : { "k" : 1 } } "#,
            br#"{"content":null,"isError":null}"#,
        ];
        let mut scanned = 0;
        for seed in seeds {
            assert!(scan_call_result(seed).is_some(), "{}", String::from_utf8_lossy(seed));
            for json in crate::frame_scan::mutations(seed, 4000) {
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
            br#"{"isError":1}"#,
            b"[]",
        ] {
            assert_eq!(scan_call_result(json), None, "{}", String::from_utf8_lossy(json));
        }
    }

    #[test]
    fn malformed_results_are_parse_errors() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        for json in [&b"[]"[..], br#"{"content":"x"}"#, b"null"] {
            let err = decode_call_result(json, &limits(&roots)).unwrap_err();
            assert!(err.to_string().starts_with("mcpclient fx: parse result: "), "{err}");
        }
        assert_eq!(decode_call_result(b"{}", &limits(&roots)).unwrap().text, "");
    }
}
