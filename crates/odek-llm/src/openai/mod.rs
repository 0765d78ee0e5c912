//! The OpenAI-compatible chat-completions provider: `POST <base_url>/chat/completions` with a
//! Bearer key, plain JSON or SSE streaming, retries, and errors that name the endpoint and never
//! the key. Start at [`OpenAiProvider::new`] and [`OpenAiConfig`].
//!
//! Thinking levels on the wire (our choice; the spec leaves it open): `Default` sends nothing,
//! `Enabled`/`Disabled` send `"thinking": {"type": "enabled"|"disabled"}`, `Low`/`Medium`/`High`
//! send `"reasoning_effort": "low"|"medium"|"high"`.
//!
//! Deadlines: a call with [`ChatRequest::timeout`] is bounded by it as a whole (all attempts,
//! backoff and stream). Otherwise one attempt is bounded by `request_timeout` up to the whole
//! non-streamed body (whose head may only come with the answer, and whose keep-alive blank
//! lines cannot extend the bound), and by `first_byte_timeout` up to the first byte of that
//! body (connect and response head included). A streamed attempt is bounded by the shorter of
//! `first_byte_timeout` and `stream_idle_timeout` (and `request_timeout`) up to its response
//! head, then by `stream_idle_timeout` since the last chunk that added to the answer: a long
//! answer that keeps flowing is fine, a stream of keep-alive comments or empty chunks is not.
//! The two liveness deadlines (first byte, stream idle) fail the call with an
//! [`LlmError::Timeout`] whose `silent_for` is set: the provider sent nothing, which the loop
//! reports as a stall. Each attempt gets its own first-byte deadline; a liveness deadline is
//! never retried (nor is any timeout), so a silent provider costs one deadline, not four.
//!
//! Retries (jittered exponential backoff, `Retry-After` seconds honoured up to
//! [`MAX_RETRY_AFTER`]) happen on HTTP 429, 5xx, refused and reset connections, and only before a
//! 2xx answer arrived: once a streamed body is being read, a failure is final, so the observer
//! never sees text twice. DNS, TLS, timeouts and other 4xx are not retried.
//!
//! Cancellation: the loop drops the future. Nothing is spawned, so dropping closes the
//! connection and stops everything.

mod stream;
mod wire;

use std::error::Error as _;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use serde_json::Value;
use tokio::time::{Instant, timeout, timeout_at};

use crate::error::{LlmError, TransportKind};
use crate::provider::{BoxFuture, ChatRequest, ChatResponse, NoStreamObserver, Provider, StreamObserver};
use crate::sse::{DEFAULT_MAX_EVENT_BYTES, SseDecoder};
use stream::StreamAccumulator;
use wire::WireError;

/// Default bound of one attempt: 300 s.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Default longest silence between two chunks of a streamed answer: 90 s.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Default bound from sending a request to the first byte of its answer (connect and response
/// head included): 120 s.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(120);
/// Default TCP + TLS connect bound: 10 s.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default number of retries after the first attempt.
const DEFAULT_MAX_RETRIES: u32 = 3;
/// Default first backoff: 0.5 s, doubled per retry.
const DEFAULT_RETRY_BASE_DELAY: Duration = Duration::from_millis(500);
/// Default cap of a computed backoff: 8 s.
const DEFAULT_RETRY_MAX_DELAY: Duration = Duration::from_secs(8);
/// A provider's `Retry-After` is honoured up to this: 30 s.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Largest answer body (or whole stream) read: 32 MiB (bytes). More is an invalid response.
const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;
/// Largest error body read for its message: 64 KiB (bytes); the rest is not read.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// How to reach an OpenAI-compatible endpoint. `Debug` never shows the key.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// Up to and including the version path, e.g. `https://api.openai.com/v1`; a trailing `/`
    /// is ignored.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>`; no header when empty (local servers).
    pub api_key: String,
    pub request_timeout: Duration,
    pub stream_idle_timeout: Duration,
    /// Per attempt: sending the request until the first byte of the answer's body (a streamed
    /// attempt: until its response head, bounded by `stream_idle_timeout` too).
    pub first_byte_timeout: Duration,
    pub connect_timeout: Duration,
    pub max_retries: u32,
    pub retry_base_delay: Duration,
    pub retry_max_delay: Duration,
    pub user_agent: String,
}

impl OpenAiConfig {
    /// A config with every documented default.
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            retry_base_delay: DEFAULT_RETRY_BASE_DELAY,
            retry_max_delay: DEFAULT_RETRY_MAX_DELAY,
            user_agent: concat!("odek/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OpenAiConfig")
            .field("base_url", &display_endpoint(&self.base_url))
            .field("api_key", &if self.api_key.is_empty() { "<none>" } else { "<set>" })
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("retry_max_delay", &self.retry_max_delay)
            .field("user_agent", &self.user_agent)
            .finish()
    }
}

/// An OpenAI-compatible chat-completions endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    client: reqwest::Client,
    config: OpenAiConfig,
    url: reqwest::Url,
    /// The URL as errors show it: no user info, no query, redacted.
    endpoint: String,
}

/// A failed attempt and whether another may follow.
struct AttemptFailure {
    error: LlmError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl AttemptFailure {
    fn final_error(error: LlmError) -> AttemptFailure {
        AttemptFailure { error, retryable: false, retry_after: None }
    }
}

impl OpenAiProvider {
    /// Checks the base URL and builds the HTTP client (rustls).
    pub fn new(config: OpenAiConfig) -> Result<OpenAiProvider, LlmError> {
        let endpoint_text = chat_completions_url(&config.base_url);
        let url = reqwest::Url::parse(&endpoint_text).map_err(|err| LlmError::InvalidConfig {
            detail: format!("invalid base_url \"{}\": {err}", display_endpoint(&config.base_url)),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LlmError::InvalidConfig {
                detail: format!(
                    "invalid base_url \"{}\": scheme must be http or https",
                    display_endpoint(&config.base_url)
                ),
            });
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(config.user_agent.clone())
            .build()
            .map_err(|err| LlmError::InvalidConfig { detail: format!("cannot build the HTTP client: {err}") })?;
        let endpoint = display_endpoint(url.as_str());
        Ok(OpenAiProvider { client, config, url, endpoint })
    }

    /// The endpoint URL as errors name it.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn complete_with_retries(
        &self,
        request: ChatRequest<'_>,
        observer: &dyn StreamObserver,
    ) -> Result<ChatResponse, LlmError> {
        let structured = wire::StructuredOutput::for_host(self.url.host_str());
        let body = serde_json::to_vec(&wire::request_body(&request, structured))
            .map_err(|err| LlmError::InvalidConfig { detail: format!("cannot encode the request: {err}") })?;
        let mut retries_done = 0;
        loop {
            let deadline = Instant::now() + self.config.request_timeout;
            match self.attempt(&body, request.stream, deadline, observer).await {
                Ok(response) => return Ok(response),
                Err(failure) if failure.retryable && retries_done < self.config.max_retries => {
                    let delay = retry_delay(
                        retries_done,
                        failure.retry_after,
                        self.config.retry_base_delay,
                        self.config.retry_max_delay,
                    );
                    retries_done += 1;
                    tracing::warn!(
                        "{}; retry {retries_done} of {} in {} ms",
                        failure.error,
                        self.config.max_retries,
                        delay.as_millis()
                    );
                    tokio::time::sleep(delay).await;
                }
                Err(failure) => return Err(failure.error),
            }
        }
    }

    /// One HTTP exchange. Retryable failures are only those before a 2xx answer arrived.
    async fn attempt(
        &self,
        body: &[u8],
        stream: bool,
        deadline: Instant,
        observer: &dyn StreamObserver,
    ) -> Result<ChatResponse, AttemptFailure> {
        // A streamed answer starts at once, so a silent head is a dead call: the idle bound
        // covers it too. A plain answer's head may only come with the whole answer, so only
        // the first-byte bound does.
        let head_limit = if stream {
            self.config.first_byte_timeout.min(self.config.stream_idle_timeout)
        } else {
            self.config.first_byte_timeout
        };
        let first_byte_deadline = Instant::now() + head_limit;
        let head_deadline = deadline.min(first_byte_deadline);
        let response = match timeout_at(head_deadline, self.request(body, stream).send()).await {
            Err(_) if head_deadline < deadline => {
                return Err(AttemptFailure::final_error(self.head_silent_error(head_limit)));
            }
            Err(_) => return Err(AttemptFailure::final_error(self.timeout_error(self.config.request_timeout))),
            Ok(Err(err)) => {
                let error = self.transport_error(&err);
                let retryable = matches!(
                    error,
                    LlmError::Transport { kind: TransportKind::ConnectionRefused | TransportKind::Other, .. }
                );
                return Err(AttemptFailure { error, retryable, retry_after: None });
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            return Err(self.status_failure(response, deadline).await);
        }
        let is_event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.to_ascii_lowercase().starts_with("text/event-stream"));
        let result = if stream && is_event_stream {
            self.read_stream(response, observer).await
        } else {
            self.read_completion(response, first_byte_deadline.min(deadline), deadline).await
        };
        result.map_err(AttemptFailure::final_error)
    }

    fn request(&self, body: &[u8], stream: bool) -> reqwest::RequestBuilder {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(if stream { "text/event-stream" } else { "application/json" }));
        if !self.config.api_key.is_empty()
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", self.config.api_key))
        {
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        self.client.post(self.url.clone()).headers(headers).body(body.to_vec())
    }

    /// A non-2xx answer: its status, the provider's message and whether to retry.
    async fn status_failure(&self, response: reqwest::Response, deadline: Instant) -> AttemptFailure {
        let status = response.status().as_u16();
        let retry_after =
            response.headers().get(RETRY_AFTER).and_then(|value| value.to_str().ok()).and_then(parse_retry_after);
        let body = timeout_at(deadline, read_bounded(response, Vec::new(), MAX_ERROR_BODY_BYTES))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|read| read.bytes)
            .unwrap_or_default();
        let message = self.scrub(&wire::error_message_from_body(&body));
        let detail = match (status_hint(status), message.is_empty()) {
            (Some(hint), true) => hint.to_owned(),
            (Some(hint), false) => format!("{hint}: {message}"),
            (None, true) => "(empty body)".to_owned(),
            (None, false) => message,
        };
        AttemptFailure {
            error: LlmError::Status { endpoint: self.endpoint.clone(), status, detail },
            retryable: status == 429 || status >= 500,
            retry_after,
        }
    }

    /// A plain answer's body: its first byte by `first_byte_deadline`, all of it by `deadline`.
    async fn read_completion(
        &self,
        mut response: reqwest::Response,
        first_byte_deadline: Instant,
        deadline: Instant,
    ) -> Result<ChatResponse, LlmError> {
        let first = match timeout_at(first_byte_deadline, response.chunk()).await {
            Err(_) if first_byte_deadline < deadline => {
                return Err(self.first_byte_error(self.config.first_byte_timeout));
            }
            Err(_) => return Err(self.timeout_error(self.config.request_timeout)),
            Ok(Err(err)) => return Err(self.transport_error(&err)),
            Ok(Ok(first)) => first.unwrap_or_default(),
        };
        let read = match timeout_at(deadline, read_bounded(response, first.to_vec(), MAX_RESPONSE_BYTES)).await {
            Err(_) => return Err(self.timeout_error(self.config.request_timeout)),
            Ok(Err(err)) => return Err(self.transport_error(&err)),
            Ok(Ok(read)) => read,
        };
        if read.truncated {
            return Err(self.invalid(format!("answer body exceeds {MAX_RESPONSE_BYTES} bytes")));
        }
        self.decode_completion_body(&read.bytes)
    }

    /// Reads an SSE answer chunk by chunk. A stream that ends without `[DONE]` and without a
    /// finish reason is an error, never a silently truncated answer. The idle bound runs from
    /// the last chunk that added to the answer: keep-alive comments (`: ping`) and empty chunks
    /// arrive, but they do not restart it, so a provider that only keeps the connection alive
    /// cannot hold the call forever.
    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        observer: &dyn StreamObserver,
    ) -> Result<ChatResponse, LlmError> {
        let mut body = StreamBody::default();
        let mut idle_since = Instant::now();
        loop {
            let chunk = match timeout_at(idle_since + self.config.stream_idle_timeout, response.chunk()).await {
                Err(_) => return Err(self.stream_idle_error()),
                Ok(Err(err)) => {
                    return Err(LlmError::Transport {
                        endpoint: self.endpoint.clone(),
                        kind: TransportKind::Other,
                        detail: self.scrub(&format!("stream ended mid-message: {}", error_chain(&err))),
                    });
                }
                Ok(Ok(chunk)) => chunk,
            };
            let at_end = chunk.is_none();
            let progress = body.accumulator.progress();
            if self.take_stream_bytes(&mut body, chunk.as_deref(), observer)? || at_end {
                break;
            }
            if body.accumulator.progress() != progress {
                idle_since = Instant::now();
                observer.on_progress();
            }
        }
        self.finish_stream(body)
    }

    /// No data within the idle bound after the last chunk that carried some.
    fn stream_idle_error(&self) -> LlmError {
        let limit = self.config.stream_idle_timeout;
        LlmError::Timeout {
            endpoint: self.endpoint.clone(),
            detail: format!("stream idle for more than {} (no data from the provider)", describe_duration(limit)),
            silent_for: Some(limit),
        }
    }

    /// A request whose response head did not come within `limit` (the first-byte bound, for a
    /// streamed call also the idle bound).
    fn head_silent_error(&self, limit: Duration) -> LlmError {
        LlmError::Timeout {
            endpoint: self.endpoint.clone(),
            detail: format!("no response head within {} (no data from the provider)", describe_duration(limit)),
            silent_for: Some(limit),
        }
    }

    /// A plain answer whose head came but whose body did not start within `limit`.
    fn first_byte_error(&self, limit: Duration) -> LlmError {
        LlmError::Timeout {
            endpoint: self.endpoint.clone(),
            detail: format!("no answer byte within {} (no data from the provider)", describe_duration(limit)),
            silent_for: Some(limit),
        }
    }

    /// One body chunk of a stream (`None` at the end of the body) through the SSE decoder and
    /// the accumulator; `true` once `[DONE]` was seen.
    fn take_stream_bytes(
        &self,
        body: &mut StreamBody,
        bytes: Option<&[u8]>,
        observer: &dyn StreamObserver,
    ) -> Result<bool, LlmError> {
        let framed = match bytes {
            None => body.decoder.finish(&mut body.events),
            Some(bytes) => {
                body.total_bytes = body.total_bytes.saturating_add(bytes.len());
                if body.total_bytes > MAX_RESPONSE_BYTES {
                    return Err(self.invalid(format!("stream exceeds {MAX_RESPONSE_BYTES} bytes")));
                }
                body.decoder.push(bytes, &mut body.events)
            }
        };
        // The events completed before a framing error come first, so the outcome never depends
        // on how the body was cut into reads: a `[DONE]` among them ends the stream (whatever
        // follows it is ignored) and a bad chunk among them is the error reported.
        body.done = self.apply_events(&mut body.events, &mut body.accumulator, observer)?;
        if !body.done {
            framed.map_err(|err| self.invalid(err.to_string()))?;
        }
        Ok(body.done)
    }

    /// The answer once the stream stopped. A stream that ended without `[DONE]` and without a
    /// finish reason is an error, never a silently truncated answer.
    fn finish_stream(&self, body: StreamBody) -> Result<ChatResponse, LlmError> {
        if !body.done && !body.accumulator.finished() {
            return Err(LlmError::Transport {
                endpoint: self.endpoint.clone(),
                kind: TransportKind::Other,
                detail: "stream ended mid-message".to_owned(),
            });
        }
        body.accumulator.into_response().map_err(|err| self.wire_error(err))
    }

    /// The completion parser without HTTP: what [`Provider::complete`] makes of a non-streamed
    /// body. For the fuzz targets in `fuzz/`; not part of the API.
    #[doc(hidden)]
    pub fn decode_completion_body(&self, body: &[u8]) -> Result<ChatResponse, LlmError> {
        wire::parse_completion(body).map_err(|err| self.wire_error(err))
    }

    /// The stream parser without HTTP: what [`Provider::complete`] makes of an SSE body that
    /// arrives as `chunks`. For the fuzz targets in `fuzz/`; not part of the API.
    #[doc(hidden)]
    pub fn decode_stream_body(&self, chunks: &[&[u8]]) -> Result<ChatResponse, LlmError> {
        let mut body = StreamBody::default();
        let mut chunks = chunks.iter().map(|chunk| Some(*chunk)).chain([None]);
        while let Some(chunk) = chunks.next()
            && !self.take_stream_bytes(&mut body, chunk, &NoStreamObserver)?
        {}
        self.finish_stream(body)
    }

    /// Applies decoded events; `true` once `[DONE]` was seen (later events are ignored).
    fn apply_events(
        &self,
        events: &mut Vec<String>,
        accumulator: &mut StreamAccumulator,
        observer: &dyn StreamObserver,
    ) -> Result<bool, LlmError> {
        for data in events.drain(..) {
            if data.trim() == "[DONE]" {
                return Ok(true);
            }
            if data.trim().is_empty() {
                continue;
            }
            let chunk: Value =
                serde_json::from_str(&data).map_err(|err| self.invalid(format!("stream chunk is not JSON: {err}")))?;
            accumulator.apply(&chunk, observer).map_err(|err| self.wire_error(err))?;
        }
        Ok(false)
    }

    fn wire_error(&self, err: WireError) -> LlmError {
        match err {
            WireError::Invalid(detail) => self.invalid(detail),
            WireError::Provider(message) => {
                LlmError::StreamError { endpoint: self.endpoint.clone(), detail: self.scrub(&message) }
            }
        }
    }

    fn invalid(&self, detail: String) -> LlmError {
        LlmError::InvalidResponse { endpoint: self.endpoint.clone(), detail: self.scrub(&detail) }
    }

    fn timeout_error(&self, limit: Duration) -> LlmError {
        LlmError::Timeout {
            endpoint: self.endpoint.clone(),
            detail: format!("no answer within {}", describe_duration(limit)),
            silent_for: None,
        }
    }

    /// A `send()` or body-read failure, classified for `error_class`.
    fn transport_error(&self, err: &reqwest::Error) -> LlmError {
        let chain = error_chain(err);
        if err.is_timeout() {
            return LlmError::Timeout {
                endpoint: self.endpoint.clone(),
                detail: self.scrub(&format!("timed out: {chain}")),
                silent_for: None,
            };
        }
        let kind = classify_transport(err);
        let what = match kind {
            TransportKind::Dns => "DNS lookup failed",
            TransportKind::ConnectionRefused => "connection refused",
            TransportKind::Tls => "TLS failure",
            TransportKind::Other => "connection failed",
        };
        LlmError::Transport { endpoint: self.endpoint.clone(), kind, detail: self.scrub(&format!("{what}: {chain}")) }
    }

    /// Removes the key (even if the process-wide redactor does not know it) and anything else
    /// secret-looking from provider-supplied text.
    fn scrub(&self, text: &str) -> String {
        let without_key = if self.config.api_key.trim().len() >= 4 {
            text.replace(self.config.api_key.trim(), odek_contract::redaction::REDACTED)
        } else {
            text.to_owned()
        };
        odek_contract::redaction::redact(&without_key).into_owned()
    }
}

impl Provider for OpenAiProvider {
    fn id(&self) -> &str {
        "openai"
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            match request.timeout {
                Some(limit) => timeout(limit, self.complete_with_retries(request, observer))
                    .await
                    .unwrap_or_else(|_| Err(self.timeout_error(limit))),
                None => self.complete_with_retries(request, observer).await,
            }
        })
    }
}

/// `<base_url>/chat/completions`, whatever trailing slashes the base URL has.
fn chat_completions_url(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim().trim_end_matches('/'))
}

/// A URL as errors and `Debug` show it: user info and query removed, then redacted.
fn display_endpoint(url: &str) -> String {
    let shown = match reqwest::Url::parse(url.trim()) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.trim().to_owned(),
    };
    odek_contract::redaction::redact(&shown).into_owned()
}

/// What a status means for the user, before the provider's own message.
fn status_hint(status: u16) -> Option<&'static str> {
    match status {
        401 => Some("unauthorized (check the API key)"),
        403 => Some("forbidden (check the API key and its permissions)"),
        404 => Some("not found (check the base URL and the model name)"),
        429 => Some("rate limited"),
        500.. => Some("server error"),
        _ => None,
    }
}

/// Which transport failure this is, from the error's source chain.
fn classify_transport(err: &reqwest::Error) -> TransportKind {
    let mut source: Option<&dyn std::error::Error> = Some(err);
    let mut kind = TransportKind::Other;
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return TransportKind::ConnectionRefused;
        }
        let text = current.to_string().to_ascii_lowercase();
        if text.contains("dns error")
            || text.contains("failed to lookup address")
            || text.contains("name or service not known")
        {
            return TransportKind::Dns;
        }
        if text.contains("certificate") || text.contains("tls") || text.contains("handshake") {
            kind = TransportKind::Tls;
        }
        if text.contains("connection refused") && kind == TransportKind::Other {
            kind = TransportKind::ConnectionRefused;
        }
        source = current.source();
    }
    kind
}

/// The error and its sources as one line, without the repetitions reqwest and hyper add.
fn error_chain(err: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source: Option<&dyn std::error::Error> = err.source();
    while let Some(current) = source {
        let text = current.to_string();
        // hyper's "client error (Connect)" only says which stage failed; the next source says why.
        if !text.starts_with("client error (") && !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        source = current.source();
    }
    if parts.is_empty() {
        parts.push(err.to_string());
    }
    parts.join(": ")
}

/// The backoff before retry `retries_done + 1`: the provider's `Retry-After` when given (capped
/// at [`MAX_RETRY_AFTER`]); otherwise `base × 2^retries_done` capped at `max`, jittered into
/// its upper half so concurrent clients spread out.
fn retry_delay(retries_done: u32, retry_after: Option<Duration>, base: Duration, max: Duration) -> Duration {
    if let Some(asked) = retry_after {
        return asked.min(MAX_RETRY_AFTER);
    }
    let exponential = base.saturating_mul(2u32.saturating_pow(retries_done.min(16))).min(max);
    let half = exponential / 2;
    let jitter_nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
    let random = getrandom::u64().unwrap_or(0);
    half + Duration::from_nanos(random.checked_rem(jitter_nanos).unwrap_or(0))
}

/// `Retry-After` in (possibly fractional) seconds; HTTP dates are ignored.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(MAX_RETRY_AFTER.as_secs_f64())))
}

fn describe_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// A body read up to a cap.
/// A streamed body being decoded: the SSE framing, the answer so far, and the bytes seen.
struct StreamBody {
    decoder: SseDecoder,
    accumulator: StreamAccumulator,
    events: Vec<String>,
    total_bytes: usize,
    /// `[DONE]` was seen.
    done: bool,
}

impl Default for StreamBody {
    fn default() -> StreamBody {
        StreamBody {
            decoder: SseDecoder::new(DEFAULT_MAX_EVENT_BYTES),
            accumulator: StreamAccumulator::default(),
            events: Vec::new(),
            total_bytes: 0,
            done: false,
        }
    }
}

struct BoundedBody {
    bytes: Vec<u8>,
    /// More bytes followed the cap and were not read.
    truncated: bool,
}

/// The rest of `response` after `bytes` (already read), up to `cap` in all.
async fn read_bounded(
    mut response: reqwest::Response,
    mut bytes: Vec<u8>,
    cap: usize,
) -> Result<BoundedBody, reqwest::Error> {
    if bytes.len() > cap {
        bytes.truncate(cap);
        return Ok(BoundedBody { bytes, truncated: true });
    }
    while let Some(chunk) = response.chunk().await? {
        if bytes.len() + chunk.len() > cap {
            let room = cap - bytes.len();
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(BoundedBody { bytes, truncated: true });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(BoundedBody { bytes, truncated: false })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> OpenAiProvider {
        OpenAiProvider::new(OpenAiConfig::new("http://127.0.0.1:9/v1", "sk-test")).unwrap()
    }

    /// Found by the `provider_sse` fuzz target: bytes after `[DONE]` failed the answer when they
    /// arrived in the same read as `[DONE]`, and were ignored when they came in a later one.
    #[test]
    fn junk_after_done_in_the_same_read_is_ignored_red() {
        let head: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n";
        let junk: &[u8] = b"\xff\xfe not utf-8\n";
        let whole = [head, junk].concat();
        let one_read = provider().decode_stream_body(&[&whole]).unwrap();
        let two_reads = provider().decode_stream_body(&[head, junk]).unwrap();
        assert_eq!(one_read, two_reads);
        assert_eq!(one_read.message.content, "hi");
    }

    /// The same fuzz finding: with a bad chunk and then a bad line, the error reported depended
    /// on where the reads were cut; the earlier defect is reported either way.
    #[test]
    fn first_defect_is_reported_whatever_the_reads_red() {
        let head: &[u8] = b"data: {\"choices\":oops}\n\n";
        let tail: &[u8] = b"data: \xff\n\n";
        let whole = [head, tail].concat();
        let one_read = provider().decode_stream_body(&[&whole]).unwrap_err().to_string();
        let two_reads = provider().decode_stream_body(&[head, tail]).unwrap_err().to_string();
        assert_eq!(one_read, two_reads);
        assert!(one_read.contains("stream chunk is not JSON"), "{one_read}");
    }

    #[test]
    fn trailing_slashes_of_the_base_url_are_ignored() {
        assert_eq!(chat_completions_url("http://h/v1/"), "http://h/v1/chat/completions");
        assert_eq!(chat_completions_url("http://h/v1"), "http://h/v1/chat/completions");
    }

    #[test]
    fn endpoint_display_drops_user_info_and_query() {
        assert_eq!(display_endpoint("https://user:pw@h.example/v1?key=abc"), "https://h.example/v1");
    }

    #[test]
    fn config_debug_never_shows_the_key_red() {
        let config = OpenAiConfig::new("http://h/v1", "sk-very-secret-value-0123456789");
        assert!(!format!("{config:?}").contains("very-secret"));
    }

    #[test]
    fn backoff_grows_caps_and_honours_retry_after() {
        let base = Duration::from_millis(500);
        let max = Duration::from_secs(8);
        for retries_done in 0..10 {
            let delay = retry_delay(retries_done, None, base, max);
            let full = base.saturating_mul(2u32.pow(retries_done)).min(max);
            assert!(delay >= full / 2 && delay <= full, "{delay:?} outside [{:?}, {full:?}]", full / 2);
        }
        assert_eq!(retry_delay(0, Some(Duration::from_secs(2)), base, max), Duration::from_secs(2));
        assert_eq!(retry_delay(0, Some(Duration::from_secs(999)), base, max), MAX_RETRY_AFTER);
        assert_eq!(parse_retry_after("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
