//! Provider errors. Every variant names the endpoint (never the key); the agent classifies them
//! for `run_failed.error_class` with [`LlmError::class`].

use thiserror::Error;

/// A failed chat call.
#[derive(Debug, Error)]
pub enum LlmError {
    /// HTTP status other than 2xx. `detail` is the provider's error message, bounded and redacted.
    #[error("{endpoint}: HTTP {status}: {detail}")]
    Status { endpoint: String, status: u16, detail: String },
    /// Transport failure (connect, DNS, TLS, reset) before an answer arrived.
    #[error("{endpoint}: {detail}")]
    Transport { endpoint: String, kind: TransportKind, detail: String },
    /// The request or the stream went quiet for too long. `silent_for` is `Some(limit)` when
    /// a liveness deadline fired (no first byte, or a stream idle, for `limit`): the provider
    /// sent nothing at all, which the loop reports as a stall rather than a slow answer.
    #[error("{endpoint}: {detail}")]
    Timeout { endpoint: String, detail: String, silent_for: Option<std::time::Duration> },
    /// The provider answered with something that is not a valid chat completion.
    #[error("{endpoint}: invalid response: {detail}")]
    InvalidResponse { endpoint: String, detail: String },
    /// The provider reported an error inside an accepted (HTTP 200) stream. `detail` is its
    /// message, bounded and redacted, kept verbatim so context-length texts stay matchable.
    #[error("{endpoint}: provider error in stream: {detail}")]
    StreamError { endpoint: String, detail: String },
    /// The replay script cannot be loaded or cannot answer this conversation.
    #[error("replay {path}: {detail}")]
    Replay { path: String, detail: String },
    /// The recording provider could not write its script file.
    #[error("record {path}: {detail}")]
    Record { path: String, detail: String },
    /// The provider cannot be built from its configuration (bad base URL, HTTP client setup).
    #[error("{detail}")]
    InvalidConfig { detail: String },
    /// The call was cancelled by the run.
    #[error("request cancelled")]
    Cancelled,
}

/// What kind of transport failure (it decides [`LlmError::class`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    Dns,
    ConnectionRefused,
    Tls,
    Other,
}

impl LlmError {
    /// How long the provider sent nothing when a liveness deadline ended the call (see
    /// [`LlmError::Timeout`]); `None` for every other failure.
    pub fn silence(&self) -> Option<std::time::Duration> {
        match self {
            LlmError::Timeout { silent_for, .. } => *silent_for,
            _ => None,
        }
    }

    /// `run_failed.error_class` (spec `events.md` §8) for this error.
    pub fn class(&self) -> &'static str {
        match self {
            LlmError::Status { status: 401 | 403, .. } => "provider_auth",
            LlmError::Status { status: 429, .. } => "rate_limited",
            LlmError::Status { status, .. } if *status >= 500 => "provider_unavailable",
            LlmError::StreamError { .. } => "provider_unavailable",
            LlmError::Status { .. } => "provider_request",
            LlmError::Timeout { .. } => "network_timeout",
            LlmError::Transport { kind: TransportKind::Dns, .. } => "dns_failure",
            LlmError::Transport { kind: TransportKind::ConnectionRefused, .. } => "connection_refused",
            LlmError::Transport { kind: TransportKind::Tls, .. } => "tls_certificate",
            LlmError::InvalidResponse { .. } => "invalid_json",
            LlmError::Cancelled => "context_canceled",
            LlmError::Transport { .. }
            | LlmError::Replay { .. }
            | LlmError::Record { .. }
            | LlmError::InvalidConfig { .. } => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> LlmError {
        LlmError::Status { endpoint: "http://h/v1/chat/completions".into(), status, detail: "d".into() }
    }

    #[test]
    fn classes_follow_events_spec_section_8() {
        let transport = |kind| LlmError::Transport { endpoint: "e".into(), kind, detail: "d".into() };
        let cases = [
            (status(401), "provider_auth"),
            (status(403), "provider_auth"),
            (status(429), "rate_limited"),
            (status(500), "provider_unavailable"),
            (status(404), "provider_request"),
            (status(400), "provider_request"),
            (LlmError::Timeout { endpoint: "e".into(), detail: "d".into(), silent_for: None }, "network_timeout"),
            (transport(TransportKind::Dns), "dns_failure"),
            (transport(TransportKind::ConnectionRefused), "connection_refused"),
            (transport(TransportKind::Tls), "tls_certificate"),
            (transport(TransportKind::Other), "error"),
            (LlmError::InvalidResponse { endpoint: "e".into(), detail: "d".into() }, "invalid_json"),
            (LlmError::Cancelled, "context_canceled"),
            (LlmError::Replay { path: "p".into(), detail: "d".into() }, "error"),
        ];
        for (error, class) in cases {
            assert_eq!(error.class(), class, "{error}");
        }
        assert_eq!(status(429).to_string(), "http://h/v1/chat/completions: HTTP 429: d");
    }
}
