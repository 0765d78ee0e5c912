//! JSON-RPC 2.0 framing: classifying one incoming line, and building outgoing lines.
//!
//! Every builder returns a complete line (compact JSON plus `\n`) so the writer can put it on the
//! pipe in one piece. Parsing happens exactly once per incoming line, in [`parse_message`].
//! Transport (threads, pipes) lives in `transport`; method semantics live in `server`.

use odek_contract::quoting::quote;
use odek_contract::render::clean_field_to;
use serde::Serialize;
use serde_json::Value;

/// Most runes of a uri repeated in a `-32002` message; a longer uri is cut there (with `…`)
/// and left out of the error's `data`, so a huge uri is never echoed whole.
pub const MAX_SHOWN_URI_RUNES: usize = 256;

/// JSON-RPC error codes this crate produces.
pub mod codes {
    /// The line is not valid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a valid JSON-RPC message.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params are wrong for the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed while handling the request.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// `resources/read` of a uri the server does not serve (MCP 2025-03-26).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message` and no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// `-32601 "method not found"`, the exact reply odek itself gives to unknown methods.
    pub fn method_not_found() -> Self {
        Self::new(codes::METHOD_NOT_FOUND, "method not found")
    }

    /// `-32602` with `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// `-32603` with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
    }

    /// `-32002 "Resource not found: \"<uri>\""` with `data` `{"uri": <uri>}`, MCP's answer to a
    /// read of a uri nobody serves. In the message the uri is cleaned as the contract cleans
    /// fields (every control or bidi-control character becomes a space), cut at
    /// [`MAX_SHOWN_URI_RUNES`] with `…`, and quoted; a uri that had to be cut is left out of
    /// `data`, so the answer never grows with the request.
    pub fn resource_not_found(uri: &str) -> Self {
        let cut = uri.chars().nth(MAX_SHOWN_URI_RUNES).is_some();
        let shown = quote(&clean_field_to(uri, MAX_SHOWN_URI_RUNES));
        let data = (!cut).then(|| serde_json::json!({ "uri": uri }));
        Self { code: codes::RESOURCE_NOT_FOUND, message: format!("Resource not found: {shown}"), data }
    }

    fn from_value(error: &Value) -> Self {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = error.get("message").and_then(Value::as_str).unwrap_or_default();
        Self { code, message: message.to_owned(), data: error.get("data").cloned() }
    }
}

/// The id of a request this server sends to the client.
///
/// JSON-RPC allows numbers and strings; a reply is matched to its request only when the reply's
/// id has the same type and value (`1.0` and `"1"` never match `1`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    Number(i64),
    String(String),
}

impl RequestId {
    /// The id as it appears on the wire.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(number) => Value::from(*number),
            Self::String(text) => Value::String(text.clone()),
        }
    }

    /// The matching key of an incoming id, or `None` for ids that can never match a request
    /// this crate sent (null, fractional numbers, booleans, objects).
    pub(crate) fn from_wire(id: &Value) -> Option<Self> {
        match id {
            Value::Number(number) => number.as_i64().map(Self::Number),
            Value::String(text) => Some(Self::String(text.clone())),
            _ => None,
        }
    }
}

impl From<i64> for RequestId {
    fn from(number: i64) -> Self {
        Self::Number(number)
    }
}

impl From<&str> for RequestId {
    fn from(text: &str) -> Self {
        Self::String(text.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(text: String) -> Self {
        Self::String(text)
    }
}

/// One classified incoming line.
#[derive(Debug)]
pub(crate) enum Message {
    /// Has a string `method` and a non-null `id`.
    Request { id: Value, method: String, params: Option<Value> },
    /// Has a string `method` and no (or a `null`) id.
    Notification { method: String, params: Option<Value> },
    /// Has no `method`, and a `result`, an `error` or an id (possibly `null`, which matches
    /// nothing); `error` takes precedence over `result`.
    Response { id: Value, outcome: Result<Value, RpcError> },
    /// Valid JSON that is not a JSON-RPC message; answered with `-32600` when it has an id.
    Invalid { id: Option<Value> },
}

/// Members are `Some` when present, even when `null` (`"result":null` is still a response).
#[derive(serde::Deserialize)]
struct WireMessage {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(deserializer).map(Some)
}

/// Parses one line. `Err` means it is not JSON (blank lines are the caller's business); JSON
/// that is not an object (`42`, `[1,2]`, a batch) is [`Message::Invalid`].
pub(crate) fn parse_message(line: &[u8]) -> Result<Message, serde_json::Error> {
    // Derived struct deserialisers also accept arrays; only objects are messages.
    if line.iter().find(|byte| !byte.is_ascii_whitespace()) != Some(&b'{') {
        serde_json::from_slice::<serde::de::IgnoredAny>(line)?;
        return Ok(Message::Invalid { id: None });
    }
    let wire: WireMessage = serde_json::from_slice(line)?;
    let id = wire.id.filter(|id| !id.is_null());
    let is_response = wire.result.is_some() || wire.error.is_some();
    Ok(match (wire.method, id) {
        (Some(Value::String(method)), Some(id)) => Message::Request { id, method, params: wire.params },
        (Some(Value::String(method)), None) => Message::Notification { method, params: wire.params },
        (None, id) if is_response || id.is_some() => {
            let outcome = match wire.error {
                Some(error) => Err(RpcError::from_value(&error)),
                None => Ok(wire.result.unwrap_or(Value::Null)),
            };
            Message::Response { id: id.unwrap_or(Value::Null), outcome }
        }
        (_, id) => Message::Invalid { id },
    })
}

#[derive(Serialize)]
struct ResultLine<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: &'a T,
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: &'a RpcError,
}

#[derive(Serialize)]
struct NotificationLine<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

#[derive(Serialize)]
struct RequestLine<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

const VERSION: &str = "2.0";

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}\n`.
pub(crate) fn result_line<T: Serialize>(id: &Value, result: &T) -> Vec<u8> {
    to_line(&ResultLine { jsonrpc: VERSION, id, result })
        .unwrap_or_else(|error| error_line(id, &RpcError::internal(format!("serialise result: {error}"))))
}

/// `{"jsonrpc":"2.0","id":<id>,"error":{"code":…,"message":…}}\n`.
pub(crate) fn error_line(id: &Value, error: &RpcError) -> Vec<u8> {
    let line = to_line(&ErrorLine { jsonrpc: VERSION, id, error });
    // Only a `data` member can fail to serialise; drop it rather than lose the reply.
    line.unwrap_or_else(|_| {
        let bare = RpcError::new(error.code, error.message.clone());
        to_line(&ErrorLine { jsonrpc: VERSION, id, error: &bare }).unwrap_or_default()
    })
}

/// `{"jsonrpc":"2.0","method":<method>[,"params":<params>]}\n`.
pub(crate) fn notification_line(method: &str, params: Option<&Value>) -> Vec<u8> {
    to_line(&NotificationLine { jsonrpc: VERSION, method, params }).unwrap_or_default()
}

/// `{"jsonrpc":"2.0","id":<id>,"method":<method>[,"params":<params>]}\n`.
pub(crate) fn request_line(id: &Value, method: &str, params: Option<&Value>) -> Vec<u8> {
    to_line(&RequestLine { jsonrpc: VERSION, id, method, params }).unwrap_or_default()
}

fn to_line<T: Serialize>(message: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = Vec::with_capacity(128);
    serde_json::to_writer(&mut line, message)?;
    line.push(b'\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_requests_notifications_and_responses() {
        let request = parse_message(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert!(matches!(request, Message::Request { ref method, .. } if method == "ping"));

        let notification = parse_message(br#"{"jsonrpc":"2.0","id":null,"method":"notifications/x"}"#).unwrap();
        assert!(matches!(notification, Message::Notification { .. }));

        let response =
            parse_message(br#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":-1,"message":"m"}}"#).unwrap();
        match response {
            Message::Response { id, outcome } => {
                assert_eq!(id, json!(3));
                assert_eq!(outcome, Err(RpcError::new(-1, "m")));
            }
            other => panic!("unexpected {other:?}"),
        }

        let null_id = parse_message(br#"{"jsonrpc":"2.0","id":null,"result":null}"#).unwrap();
        assert!(matches!(null_id, Message::Response { id: Value::Null, outcome: Ok(Value::Null) }));
        assert!(matches!(parse_message(b"{}").unwrap(), Message::Invalid { id: None }));

        let invalid = parse_message(br#"{"jsonrpc":"2.0","id":4,"method":5}"#).unwrap();
        assert!(matches!(invalid, Message::Invalid { id: Some(_) }));
        assert!(matches!(parse_message(b"[1,2]"), Ok(Message::Invalid { id: None })));
        assert!(matches!(parse_message(b" 42"), Ok(Message::Invalid { id: None })));
        assert!(parse_message(b"not json").is_err());
        assert!(parse_message(b"{\"id\":1").is_err());
    }

    #[test]
    fn only_integer_and_string_ids_match() {
        assert_eq!(RequestId::from_wire(&json!(1)), Some(RequestId::Number(1)));
        assert_eq!(RequestId::from_wire(&json!("1")), Some(RequestId::String("1".into())));
        let fractional: Value = serde_json::from_str("1.0").unwrap();
        assert_eq!(RequestId::from_wire(&fractional), None);
        let exponent: Value = serde_json::from_str("1e0").unwrap();
        assert_eq!(RequestId::from_wire(&exponent), None);
        assert_eq!(RequestId::from_wire(&Value::Null), None);
    }

    #[test]
    fn resource_not_found_shows_the_uri_cleaned_and_never_echoes_a_huge_one() {
        assert_eq!(
            RpcError::resource_not_found("a://x\ny\u{202e}\"z\\"),
            RpcError {
                code: -32002,
                message: "Resource not found: \"a://x y \\\"z\\\\\"".into(),
                data: Some(json!({"uri":"a://x\ny\u{202e}\"z\\"})),
            }
        );
        let exact = "e".repeat(MAX_SHOWN_URI_RUNES);
        assert_eq!(RpcError::resource_not_found(&exact).data, Some(json!({"uri": exact})));
        let huge = "u".repeat(1_000_000);
        let error = RpcError::resource_not_found(&huge);
        assert_eq!(error.message, format!("Resource not found: \"{}…\"", "u".repeat(MAX_SHOWN_URI_RUNES)));
        assert_eq!(error.data, None);
    }

    #[test]
    fn lines_are_compact_and_newline_terminated() {
        assert_eq!(result_line(&json!(1), &json!({})), b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
        assert_eq!(
            error_line(&json!("a"), &RpcError::method_not_found()),
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n"
        );
        assert_eq!(
            notification_line("notifications/tools/list_changed", None),
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n"
        );
        assert_eq!(request_line(&json!(0), "ping", None), b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}\n");
    }
}
