//! The MCP wire format as odek writes and reads it (spec `mcp-client.md` §6–§9): one JSON-RPC
//! message per line. Here are the lines odek writes (its requests with their ids and
//! `tools/call` params and arguments, its notifications, its answers to server requests), the reading of a
//! stdout line into a [`Message`] through the validating scanner of [`frame_scan`], error
//! objects, progress tokens, and the JSON helpers every reader of a frame uses.
//!
//! A leaf: it imports nothing else of the crate. The client's connection and `odek ext check`'s
//! probe both write and read through it, so they send and accept exactly the same frames. It
//! does not route, wait or decide what a result means: that is the connection's and the call
//! pipeline's. Start at [`encode_request`] and [`Message::read`].

pub mod frame_scan;

use std::borrow::Cow;
use std::ops::Range;

use odek_contract::canonical_json::canonicalize_text;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};

/// `notifications/initialized`, the line that ends the handshake (spec §6 step 4).
pub const INITIALIZED: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// The `params` member of a request line.
#[derive(Debug, Clone, Copy)]
pub enum Params<'a> {
    /// No `params` key.
    Absent,
    /// Ready-made JSON.
    Json(&'a str),
    /// `tools/call`: the tool's [`tool_call_prefix`] and the encoded arguments; the request id
    /// becomes the progress token.
    ToolCall { prefix: &'a str, arguments: &'a str },
}

/// \[beyond\] A request line of a stateless revision (2026-07-28): `meta`'s members added to its
/// `params._meta` (created when absent; a member the request has, such as `progressToken`, is
/// kept). A line that is not an object with object params is returned as it was.
pub fn with_request_meta(line: Vec<u8>, meta: &serde_json::Map<String, serde_json::Value>) -> Vec<u8> {
    let Ok(serde_json::Value::Object(mut request)) = serde_json::from_slice::<serde_json::Value>(&line) else {
        return line;
    };
    let params = request.entry("params").or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    let Some(params) = params.as_object_mut() else { return line };
    let own = params.entry("_meta").or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    let Some(own) = own.as_object_mut() else { return line };
    for (key, value) in meta {
        own.insert(key.clone(), value.clone());
    }
    match serde_json::to_vec(&request) {
        Ok(mut encoded) => {
            encoded.push(b'\n');
            encoded
        }
        Err(_) => line,
    }
}

/// One request line, written into a single buffer sized up front (no intermediate strings).
/// `method` is one of odek's own constants, written unescaped.
pub fn encode_request(id: i64, method: &'static str, params: Params<'_>) -> Vec<u8> {
    let params_len = match params {
        Params::Absent => 0,
        Params::Json(json) => json.len(),
        Params::ToolCall { prefix, arguments } => prefix.len() + arguments.len() + 48,
    };
    let mut out = Vec::with_capacity(64 + method.len() + params_len);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_integer(&mut out, id);
    // Methods are odek's own constants: plain ASCII that needs no escaping.
    out.extend_from_slice(b",\"method\":\"");
    out.extend_from_slice(method.as_bytes());
    out.push(b'"');
    match params {
        Params::Absent => {}
        Params::Json(json) => {
            out.extend_from_slice(b",\"params\":");
            out.extend_from_slice(json.as_bytes());
        }
        Params::ToolCall { prefix, arguments } => {
            out.extend_from_slice(b",\"params\":");
            push_call_params(&mut out, prefix, arguments, id);
        }
    }
    out.extend_from_slice(b"}\n");
    out
}

/// The model's argument string as sent: parsed and re-serialised with sorted keys; empty ⇒
/// `null`; not JSON ⇒ the text as a JSON string.
pub fn encode_arguments(arguments: &str) -> String {
    if arguments.is_empty() {
        return "null".to_owned();
    }
    canonicalize_text(arguments).unwrap_or_else(|| json_string(arguments))
}

/// `{"name":<raw tool name as JSON>,"arguments":` — the start of every `tools/call` params,
/// computed once per tool.
pub fn tool_call_prefix(raw_name: &str) -> String {
    format!("{{\"name\":{},\"arguments\":", json_string(raw_name))
}

/// Appends `{"name":<raw tool>,"arguments":<args>,"_meta":{"progressToken":<request id>}}`
/// from the tool's [`tool_call_prefix`].
fn push_call_params(out: &mut Vec<u8>, prefix: &str, encoded_arguments: &str, request_id: i64) {
    out.extend_from_slice(prefix.as_bytes());
    out.extend_from_slice(encoded_arguments.as_bytes());
    out.extend_from_slice(b",\"_meta\":{\"progressToken\":");
    push_integer(out, request_id);
    out.extend_from_slice(b"}}");
}

/// Appends `value` in decimal, as JSON writes an integer.
fn push_integer(out: &mut Vec<u8>, value: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        // `rest % 10` is below 10, so the cast cannot truncate.
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// `notifications/cancelled` for request `id` that odek gave up on (spec §9); `reason` is
/// `timeout` or `cancelled`.
pub fn encode_cancelled(id: i64, reason: &str) -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id},\"reason\":\"{reason}\"}}}}\n"
    )
    .into_bytes()
}

/// Spec §8: the answer to a request from the server, its id echoed verbatim: `ping` gets an
/// empty result, any other method `-32601`.
pub fn server_request_reply(id: &str, method: &str) -> Vec<u8> {
    let reply = if method == "ping" {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n")
    } else {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32601,\"message\":\"method not found\"}}}}\n")
    };
    reply.into_bytes()
}

/// \[beyond\] A result answering the server's request `id` (echoed verbatim): `result` is
/// compact JSON.
pub fn encode_server_request_result(id: &str, result: &serde_json::Value) -> Vec<u8> {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}\n").into_bytes()
}

/// \[beyond\] An error answering the server's request `id` (echoed verbatim).
pub fn encode_server_request_error(id: &str, code: i64, message: &str) -> Vec<u8> {
    let message = json_string(message);
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":{code},\"message\":{message}}}}}\n").into_bytes()
}

/// \[beyond\] The raw `params` of a request line (`None` when absent or `null`), for the one
/// server request whose params odek reads (`elicitation/create`).
pub fn request_params(line: &[u8]) -> Option<&str> {
    let range = frame_scan::index_frame(line)?.params?;
    std::str::from_utf8(line.get(range)?).ok().filter(|text| *text != "null")
}

/// One stdout line read as JSON-RPC (spec §7–§8), borrowing from the line. An `id`, `method`,
/// `error` or `params` that is `null` reads as absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'l> {
    /// A non-empty string `method` with a string or number `id`: a request from the server, to
    /// be answered with [`server_request_reply`]. Never a response, whatever its id.
    Request { method: Cow<'l, str>, id: &'l str },
    /// A non-empty string `method` without an `id`.
    Notification { method: Cow<'l, str>, params: Option<&'l str> },
    /// A non-empty string `method` whose `id` is neither a string nor a number: neither a
    /// request nor a notification, so it is ignored.
    Unanswerable,
    /// Anything else: a response, matched by its `id` ([`integer_id`]); an `error` takes
    /// precedence over `result` (where that member sits in the line, for a [`ResultFrame`]).
    Response { id: Option<&'l str>, error: Option<&'l str>, result: Option<Range<usize>> },
}

impl Message<'_> {
    /// The message of one line, or `None` when the line is skipped: blank, not JSON, not a
    /// JSON object, or a known member given twice (spec §7).
    pub fn read(line: &[u8]) -> Option<Message<'_>> {
        let index = frame_scan::index_frame(line)?;
        let text = |range: &Option<Range<usize>>| {
            range.clone().and_then(|range| std::str::from_utf8(&line[range]).ok()).filter(|text| *text != "null")
        };
        let id = text(&index.id);
        if let Some(method) = text(&index.method).and_then(|raw| decode_literal(raw).ok())
            && !method.is_empty()
        {
            return Some(match id {
                None => Message::Notification { method, params: text(&index.params) },
                Some(id)
                    if id.starts_with('"') || id.starts_with('-') || id.starts_with(|c: char| c.is_ascii_digit()) =>
                {
                    Message::Request { method, id }
                }
                Some(_) => Message::Unanswerable,
            });
        }
        Some(Message::Response { id, error: text(&index.error), result: index.result })
    }
}

/// Spec §7: a response's id must be a JSON integer (not a string, not fractional).
pub fn integer_id(id: &str) -> Option<i64> {
    serde_json::from_str::<i64>(id).ok()
}

/// A successful response: the whole line and where its `result` sits in it, so a large result
/// is decoded in place instead of copied.
#[derive(Debug)]
pub struct ResultFrame {
    line: Vec<u8>,
    result: Range<usize>,
}

impl ResultFrame {
    /// The frame of `line` whose `result` is at `result` (an empty range: none).
    pub fn new(line: Vec<u8>, result: Range<usize>) -> ResultFrame {
        ResultFrame { line, result }
    }

    /// The raw JSON text of `result` (`null` when absent).
    pub fn result_json(&self) -> &[u8] {
        match self.line.get(self.result.clone()) {
            Some(result) if !result.is_empty() => result,
            _ => b"null",
        }
    }
}

/// A JSON-RPC error object as odek reports it: `code` 0 when it is not an integer, `message`
/// as-is when a string, as compact JSON when another value, empty when absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    /// The error object of a response, from its raw JSON; what does not read as one is
    /// code 0 with an empty message.
    pub fn read(raw: &str) -> RpcError {
        #[derive(Deserialize, Default)]
        struct WireError {
            #[serde(default)]
            code: Option<serde_json::Value>,
            #[serde(default)]
            message: Option<serde_json::Value>,
        }
        let error: WireError = serde_json::from_str(raw).unwrap_or_default();
        let code = error.code.as_ref().and_then(serde_json::Value::as_i64).unwrap_or(0);
        let message = match error.message {
            Some(serde_json::Value::String(message)) => message,
            Some(other) if !other.is_null() => other.to_string(),
            _ => String::new(),
        };
        RpcError { code, message }
    }
}

/// The integer `progressToken` of a `notifications/progress`'s params (spec §9); any other
/// token matches no request.
pub fn progress_token(params: &str) -> Option<i64> {
    #[derive(Deserialize)]
    struct Progress {
        #[serde(rename = "progressToken")]
        progress_token: serde_json::Value,
    }
    serde_json::from_str::<Progress>(params).ok()?.progress_token.as_i64()
}

/// A JSON string in a borrowed frame: borrows from the line when it has no escapes.
#[derive(Deserialize)]
pub(crate) struct Text<'a>(#[serde(borrow)] pub(crate) Cow<'a, str>);

/// Decodes a JSON string literal (already validated as part of its frame), borrowing when it
/// has no escapes; any other JSON value is an error.
pub fn decode_literal(literal: &str) -> Result<Cow<'_, str>, String> {
    if !literal.contains('\\')
        && let Some(inner) = literal.strip_prefix('"').and_then(|rest| rest.strip_suffix('"'))
    {
        return Ok(Cow::Borrowed(inner));
    }
    serde_json::from_str::<Text<'_>>(literal).map(|text| text.0).map_err(|err| err.to_string())
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

/// A JSON array of which at most `MAX` elements are built; the others are skipped unparsed and
/// only counted, so a page of a million tiny elements costs a counter.
pub(crate) struct CappedSeq<T, const MAX: usize> {
    /// The first `MAX` elements.
    pub kept: Vec<T>,
    /// The elements past them, counted only.
    pub omitted: usize,
}

impl<T, const MAX: usize> Default for CappedSeq<T, MAX> {
    fn default() -> Self {
        CappedSeq { kept: Vec::new(), omitted: 0 }
    }
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Deserialize<'de> for CappedSeq<T, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CappedVisitor<T, const MAX: usize>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for CappedVisitor<T, MAX> {
            type Value = CappedSeq<T, MAX>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("an array")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CappedSeq<T, MAX>, A::Error> {
                let mut kept = Vec::new();
                while kept.len() < MAX {
                    match seq.next_element::<T>()? {
                        Some(element) => kept.push(element),
                        None => return Ok(CappedSeq { kept, omitted: 0 }),
                    }
                }
                let mut omitted = 0_usize;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    omitted = omitted.saturating_add(1);
                }
                Ok(CappedSeq { kept, omitted })
            }
        }
        deserializer.deserialize_seq(CappedVisitor::<T, MAX>(std::marker::PhantomData))
    }
}

/// A JSON string literal.
pub fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stateless_request_carries_the_meta_beside_its_own() {
        let meta = serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        let meta = meta.as_object().unwrap();
        let call =
            encode_request(7, "tools/call", Params::ToolCall { prefix: &tool_call_prefix("t"), arguments: "{}" });
        let line = with_request_meta(call, meta);
        assert!(line.ends_with(b"\n"));
        let sent: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(sent["params"]["_meta"]["progressToken"], 7);
        assert_eq!(sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        assert_eq!(sent["params"]["name"], "t");
        let list = with_request_meta(encode_request(8, "tools/list", Params::Absent), meta);
        let sent: serde_json::Value = serde_json::from_slice(&list).unwrap();
        assert_eq!(sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        assert_eq!(with_request_meta(b"not json\n".to_vec(), meta), b"not json\n");
    }

    #[test]
    fn tool_call_request_is_one_line() {
        let line = encode_request(
            42,
            "tools/call",
            Params::ToolCall { prefix: r#"{"name":"echo","arguments":"#, arguments: r#"{"text":"hi"}"# },
        );
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"},\"_meta\":{\"progressToken\":42}}}\n"
        );
    }

    #[test]
    fn integers_are_written_as_json_writes_them() {
        for value in [0, 7, 10, 99, 1_000_000, -1, -45, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            push_integer(&mut out, value);
            assert_eq!(out, serde_json::to_vec(&value).unwrap());
        }
    }

    /// The exact lines of spec §6 step 4, §8 and §9.
    #[test]
    fn odek_s_own_lines_are_the_spec_s() {
        assert_eq!(INITIALIZED, b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        assert_eq!(server_request_reply("\"a\"", "ping"), b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}\n");
        assert_eq!(
            server_request_reply("7", "sampling/createMessage"),
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n"
        );
        assert_eq!(
            encode_cancelled(3, "timeout"),
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3,\"reason\":\"timeout\"}}\n"
        );
        assert_eq!(
            encode_request(2, "tools/list", Params::Absent),
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
        );
        assert_eq!(tool_call_prefix("a\"b"), r#"{"name":"a\"b","arguments":"#);
    }

    /// Spec §8: a method with a string or number id is a request, without one (or with `null`)
    /// a notification, with any other id neither; everything else is a response.
    #[test]
    fn lines_read_as_requests_notifications_and_responses() {
        let read = |line: &'static str| Message::read(line.as_bytes());
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":"x","method":"ping"}"#),
            Some(Message::Request { method: "ping".into(), id: "\"x\"" })
        );
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":-4,"method":"roots/list"}"#),
            Some(Message::Request { method: "roots/list".into(), id: "-4" })
        );
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":null,"method":"notifications/progress","params":{"progressToken":2}}"#),
            Some(Message::Notification {
                method: "notifications/progress".into(),
                params: Some(r#"{"progressToken":2}"#)
            })
        );
        for id in ["true", "{}", "[1]"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert_eq!(Message::read(line.as_bytes()), Some(Message::Unanswerable), "{line}");
        }
        let line = r#"{"jsonrpc":"2.0","id":5,"method":"","result":{"a":1}}"#;
        let Some(Message::Response { id: Some("5"), error: None, result: Some(result) }) = read(line) else {
            panic!("{line}")
        };
        assert_eq!(&line[result], r#"{"a":1}"#);
        let Some(Message::Response { id: Some("1"), error: Some(r#"{"code":-1}"#), .. }) =
            read(r#"{"id":1,"error":{"code":-1},"result":null}"#)
        else {
            panic!("an error response")
        };
        for skipped in ["", "  ", "not json", "[1,2]", r#"{"id":1,"id":2}"#] {
            assert_eq!(Message::read(skipped.as_bytes()), None, "{skipped:?}");
        }
    }

    #[test]
    fn ids_error_objects_and_progress_tokens() {
        assert_eq!(integer_id("12"), Some(12));
        for not_integer in ["\"12\"", "1.5", "null", "1e3", "99999999999999999999"] {
            assert_eq!(integer_id(not_integer), None, "{not_integer}");
        }
        assert_eq!(
            RpcError::read(r#"{"code":-32000,"message":"boom"}"#),
            RpcError { code: -32000, message: "boom".into() }
        );
        assert_eq!(
            RpcError::read(r#"{"code":"x","message":{"a":1}}"#),
            RpcError { code: 0, message: r#"{"a":1}"#.into() }
        );
        assert_eq!(RpcError::read("7"), RpcError { code: 0, message: String::new() });
        assert_eq!(progress_token(r#"{"progressToken":9,"progress":1}"#), Some(9));
        assert_eq!(progress_token(r#"{"progressToken":"9"}"#), None);
        assert_eq!(progress_token(r#"{"progress":1}"#), None);
    }

    /// A frame never slices outside its line, whatever range it is given.
    #[test]
    fn result_frames_read_null_outside_their_line() {
        assert_eq!(ResultFrame::new(b"{\"result\":1}".to_vec(), 10..11).result_json(), b"1");
        assert_eq!(ResultFrame::new(b"{}".to_vec(), 0..0).result_json(), b"null");
        assert_eq!(ResultFrame::new(b"{}".to_vec(), 1..40).result_json(), b"null");
    }

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
}
