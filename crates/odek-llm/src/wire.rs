//! The rules every wire format shares: why a 2xx body is not an answer ([`WireError`]), the
//! provider's error message from a body (bounded), tool-call arguments as raw text, and token
//! counts read from untrusted numbers. Each API's own shapes live in its module.

use serde_json::Value;

/// Provider error messages are cut to this many characters before they enter an error.
pub(crate) const MAX_ERROR_DETAIL_CHARS: usize = 500;

/// At most this many tool calls are accepted in one answer; more is an invalid response.
pub(crate) const MAX_TOOL_CALLS: usize = 1024;

/// Why a 2xx body is not a usable answer.
#[derive(Debug)]
pub(crate) enum WireError {
    /// Not an answer of this API (bad JSON, missing fields).
    Invalid(String),
    /// A well-formed error object instead of an answer; the message is bounded.
    Provider(String),
}

/// A 2xx body as JSON.
pub(crate) fn body_json(body: &[u8]) -> Result<Value, WireError> {
    serde_json::from_slice(body).map_err(|err| WireError::Invalid(format!("body is not JSON: {err}")))
}

/// One SSE event's data as JSON; `None` for data that is empty or blank (skipped by every API).
pub(crate) fn event_json(data: &str) -> Result<Option<Value>, WireError> {
    let data = data.trim();
    if data.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(data).map(Some).map_err(|err| WireError::Invalid(format!("stream event is not JSON: {err}")))
}

/// Tool-call arguments as the raw string the tool receives: a string is kept verbatim, an
/// absent or `null` value is empty, anything else (an object some servers send) is serialised.
pub(crate) fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        // Compact with sorted keys, whatever order `serde_json` keeps.
        Some(other) => odek_contract::canonical_json::to_canonical_string(other),
    }
}

/// A token count at `field`: an integer as given; a non-negative finite float (some gateways)
/// rounded down and saturated; a negative number, a non-number or nothing is `None`. A count
/// beyond 2^53 is kept (saturating at `u64::MAX`), so a broken count can only exhaust a
/// budget, never hide spend.
pub(crate) fn count(usage: &Value, field: &str) -> Option<u64> {
    let value = usage.get(field)?;
    value.as_u64().or_else(|| {
        let float = value.as_f64()?;
        // `as` saturates at `u64::MAX`.
        (float.is_finite() && float >= 0.0).then_some(float as u64)
    })
}

/// A `{"error": {"message": …}}` (or `{"error": "…"}`) object, if the value is one.
pub(crate) fn provider_error_in(value: &Value) -> Option<String> {
    let error = value.get("error").filter(|error| !error.is_null())?;
    let message = match error {
        Value::String(text) => text.clone(),
        other => other.get("message").and_then(Value::as_str).map_or_else(|| other.to_string(), str::to_owned),
    };
    Some(bound_detail(&message))
}

/// The provider's message from an error body: `error.message` when the body is the usual JSON
/// object, nothing for another JSON object, otherwise the body text itself; bounded to
/// [`MAX_ERROR_DETAIL_CHARS`].
pub(crate) fn error_message_from_body(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        if let Some(message) = provider_error_in(&value) {
            return message;
        }
        if let Some(message) = value.get("message").and_then(Value::as_str) {
            return bound_detail(message);
        }
        if value.is_object() {
            // A JSON object without a message says nothing a user can act on.
            return String::new();
        }
    }
    bound_detail(String::from_utf8_lossy(body).trim())
}

/// Cuts text to [`MAX_ERROR_DETAIL_CHARS`] characters, marking the cut with `…`.
pub(crate) fn bound_detail(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_DETAIL_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn object_arguments_are_serialised() {
        assert_eq!(arguments_text(Some(&json!({"command": "ls"}))), r#"{"command":"ls"}"#);
        assert_eq!(arguments_text(Some(&json!("{\"a\": 1}"))), "{\"a\": 1}");
        assert_eq!(arguments_text(None), "");
    }

    #[test]
    fn error_detail_is_bounded() {
        let long = "x".repeat(2000);
        let detail = error_message_from_body(format!(r#"{{"error":{{"message":"{long}"}}}}"#).as_bytes());
        assert_eq!(detail.chars().count(), MAX_ERROR_DETAIL_CHARS + 1);
        assert_eq!(error_message_from_body(b"plain text\n"), "plain text");
        let anthropic = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(error_message_from_body(anthropic), "Overloaded");
    }

    #[test]
    fn hostile_counts_never_hide_spend_red() {
        let usage = json!({"a": -5, "b": 1e300, "c": "7", "d": 9_007_199_254_740_993_u64, "e": 12.9, "f": null});
        assert_eq!(count(&usage, "a"), None);
        assert_eq!(count(&usage, "b"), Some(u64::MAX));
        assert_eq!(count(&usage, "c"), None);
        assert_eq!(count(&usage, "d"), Some(9_007_199_254_740_993));
        assert_eq!(count(&usage, "e"), Some(12));
        assert_eq!(count(&usage, "f"), None);
        assert_eq!(count(&usage, "missing"), None);
    }
}
