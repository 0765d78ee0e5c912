//! One model API endpoint over HTTP, whatever its wire format: the client (rustls), the request
//! headers, deadlines, retries, bounded bodies, SSE reading and errors that name the endpoint
//! and never the key. Each wire format is a [`Dialect`]; start at [`Endpoint::call`].
//!
//! Deadlines: a call with a `timeout` ([`crate::ChatRequest::timeout`]) is bounded by it as a
//! whole (all attempts, backoff and stream). Otherwise one attempt is bounded by
//! `request_timeout` up to the whole non-streamed body (whose head may only come with the
//! answer, and whose keep-alive blank lines cannot extend the bound), and by
//! `first_byte_timeout` up to the first byte of that body (connect and response head
//! included). A streamed attempt is bounded by the shorter of `first_byte_timeout` and
//! `stream_idle_timeout` (and `request_timeout`) up to its response head, then by
//! `stream_idle_timeout` since the last event that added to the answer: a long answer that
//! keeps flowing is fine, a stream of keep-alive comments or pings is not. The two liveness
//! deadlines (first byte, stream idle) fail the call with an [`LlmError::Timeout`] whose
//! `silent_for` is set: the provider sent nothing, which the loop reports as a stall. Each
//! attempt gets its own first-byte deadline; a liveness deadline is never retried (nor is any
//! timeout), so a silent provider costs one deadline, not four.
//!
//! Retries (jittered exponential backoff, `Retry-After` seconds honoured up to
//! [`MAX_RETRY_AFTER`]) happen on HTTP 429, 5xx (Anthropic's 529 `overloaded_error` among
//! them), refused and reset connections, and only before a 2xx answer arrived: once a streamed
//! body is being read, a failure is final, so the observer never sees text twice. DNS, TLS,
//! timeouts and other 4xx are not retried.
//!
//! Cancellation: the loop drops the future. Nothing is spawned, so dropping closes the
//! connection and stops everything.

use std::time::Duration;

use odek_contract::error_chain::one_line;
use odek_contract::event_stream::{EventStreamConfig, EventStreamParser, StreamEvent, UnterminatedEvent};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use tokio::time::{Instant, timeout, timeout_at};

use crate::error::{LlmError, TransportKind};
use crate::provider::{ChatRequest, ChatResponse, NoStreamObserver, StreamObserver};
use crate::wire::{WireError, error_message_from_body};

/// Default bound of one attempt: 300 s.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Default longest silence between two events of a streamed answer: 90 s.
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

/// How to reach a model endpoint, whichever API it speaks. `Debug` never shows the key nor a
/// header value.
#[derive(Clone)]
pub struct EndpointConfig {
    /// Up to and including the version path, e.g. `https://api.openai.com/v1`; a trailing `/`
    /// is ignored.
    pub base_url: String,
    /// Sent as the API wants it (`Authorization: Bearer`, `x-api-key`); nothing when empty
    /// (local servers).
    pub api_key: String,
    /// \[beyond\] Extra request headers (a named provider's `headers`), sent as given and
    /// marked sensitive. A name or value that is not a valid header fails the provider's build.
    pub headers: Vec<(String, String)>,
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

impl EndpointConfig {
    /// A config with every documented default.
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> EndpointConfig {
        EndpointConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            headers: Vec::new(),
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

impl std::fmt::Debug for EndpointConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        formatter
            .debug_struct("EndpointConfig")
            .field("base_url", &display_endpoint(&self.base_url))
            .field("api_key", &if self.api_key.is_empty() { "<none>" } else { "<set>" })
            .field("headers", &header_names)
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

/// What one wire format adds to the shared HTTP handling: its authentication headers, how a
/// plain answer body reads, and how its event stream is put back together.
pub(crate) trait Dialect: Sync {
    type Stream: StreamDecoder;

    /// The API's own headers (authentication, version), besides content type and accept.
    fn headers(&self, api_key: &str, headers: &mut HeaderMap);

    /// A non-streamed 2xx body.
    fn parse_body(&self, body: &[u8]) -> Result<ChatResponse, WireError>;

    /// An empty stream decoder for one attempt.
    fn new_stream(&self) -> Self::Stream;
}

/// A streamed answer being put back together, one SSE event's data at a time.
pub(crate) trait StreamDecoder: Send {
    /// Applies one event's data; `true` once the stream's end marker came (whatever follows is
    /// ignored).
    fn apply(&mut self, data: &str, observer: &dyn StreamObserver) -> Result<bool, WireError>;

    /// Counts the events that added to the answer; the idle timer restarts only when it moves.
    fn progress(&self) -> u64;

    /// The answer is whole even though the body ended before the end marker.
    fn finished(&self) -> bool;

    fn into_response(self) -> Result<ChatResponse, WireError>;
}

/// A model endpoint: one URL, one HTTP client.
#[derive(Debug)]
pub(crate) struct Endpoint {
    client: reqwest::Client,
    config: EndpointConfig,
    url: reqwest::Url,
    /// The configured extra headers, checked.
    extra_headers: HeaderMap,
    /// The URL as errors show it: no user info, no query, redacted.
    display: String,
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

impl Endpoint {
    /// `<base_url>/<path>`; checks the URL and the extra headers and builds the HTTP client.
    pub(crate) fn new(config: EndpointConfig, path: &str) -> Result<Endpoint, LlmError> {
        let endpoint_text = format!("{}/{path}", config.base_url.trim().trim_end_matches('/'));
        let invalid_base = |why: String| LlmError::InvalidConfig {
            detail: format!("invalid base_url \"{}\": {why}", display_endpoint(&config.base_url)),
        };
        let url = reqwest::Url::parse(&endpoint_text).map_err(|err| invalid_base(err.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid_base("scheme must be http or https".to_owned()));
        }
        let mut extra_headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let shown = odek_contract::quoting::quote(name);
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| LlmError::InvalidConfig { detail: format!("header {shown}: not a valid header name") })?;
            let mut value = HeaderValue::from_str(value).map_err(|_| LlmError::InvalidConfig {
                detail: format!(
                    "header {shown}: the value is not a valid header value (no newlines or control characters)"
                ),
            })?;
            value.set_sensitive(true);
            extra_headers.insert(header, value);
        }
        let mut builder =
            reqwest::Client::builder().connect_timeout(config.connect_timeout).user_agent(config.user_agent.clone());
        if url.scheme() == "http" {
            builder = builder.tls_built_in_root_certs(false).redirect(plain_http_redirects());
        }
        let client = builder
            .build()
            .map_err(|err| LlmError::InvalidConfig { detail: format!("cannot build the HTTP client: {err}") })?;
        let display = display_endpoint(url.as_str());
        Ok(Endpoint { client, config, url, extra_headers, display })
    }

    /// The endpoint URL as errors name it.
    pub(crate) fn display(&self) -> &str {
        &self.display
    }

    /// The URL's host, for dialects that adapt to a known vendor.
    pub(crate) fn host(&self) -> Option<&str> {
        self.url.host_str()
    }

    /// One model call: `body` posted with retries, streamed when `request.stream`, within
    /// `request.timeout` when given.
    pub(crate) async fn call<D: Dialect>(
        &self,
        dialect: &D,
        body: &serde_json::Value,
        request: &ChatRequest<'_>,
        observer: &dyn StreamObserver,
    ) -> Result<ChatResponse, LlmError> {
        let body = serde_json::to_vec(body)
            .map_err(|err| LlmError::InvalidConfig { detail: format!("cannot encode the request: {err}") })?;
        let stream = request.stream;
        match request.timeout {
            Some(limit) => timeout(limit, self.call_with_retries(dialect, &body, stream, observer))
                .await
                .unwrap_or_else(|_| Err(self.timeout_error(limit))),
            None => self.call_with_retries(dialect, &body, stream, observer).await,
        }
    }

    async fn call_with_retries<D: Dialect>(
        &self,
        dialect: &D,
        body: &[u8],
        stream: bool,
        observer: &dyn StreamObserver,
    ) -> Result<ChatResponse, LlmError> {
        let mut retries_done = 0;
        loop {
            let deadline = Instant::now() + self.config.request_timeout;
            match self.attempt(dialect, body, stream, deadline, observer).await {
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
    async fn attempt<D: Dialect>(
        &self,
        dialect: &D,
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
        let response = match timeout_at(head_deadline, self.request(dialect, body, stream).send()).await {
            Err(_) if head_deadline < deadline => {
                return Err(AttemptFailure::final_error(self.silence_error("no response head", head_limit)));
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
        if !response.status().is_success() {
            return Err(self.status_failure(response, deadline).await);
        }
        let is_event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.to_ascii_lowercase().starts_with("text/event-stream"));
        let result = if stream && is_event_stream {
            self.read_stream(dialect, response, observer).await
        } else {
            self.read_completion(dialect, response, first_byte_deadline.min(deadline), deadline).await
        };
        result.map_err(AttemptFailure::final_error)
    }

    fn request<D: Dialect>(&self, dialect: &D, body: &[u8], stream: bool) -> reqwest::RequestBuilder {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static(if stream { "text/event-stream" } else { "application/json" }));
        dialect.headers(&self.config.api_key, &mut headers);
        for (name, value) in &self.extra_headers {
            headers.insert(name.clone(), value.clone());
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
        let message = self.scrub(&error_message_from_body(&body));
        let detail = match (status_hint(status), message.is_empty()) {
            (Some(hint), true) => hint.to_owned(),
            (Some(hint), false) => format!("{hint}: {message}"),
            (None, true) => "(empty body)".to_owned(),
            (None, false) => message,
        };
        AttemptFailure {
            error: LlmError::Status { endpoint: self.display.clone(), status, detail },
            retryable: status == 429 || status >= 500,
            retry_after,
        }
    }

    /// A plain answer's body: its first byte by `first_byte_deadline`, all of it by `deadline`.
    async fn read_completion<D: Dialect>(
        &self,
        dialect: &D,
        mut response: reqwest::Response,
        first_byte_deadline: Instant,
        deadline: Instant,
    ) -> Result<ChatResponse, LlmError> {
        let first = match timeout_at(first_byte_deadline, response.chunk()).await {
            Err(_) if first_byte_deadline < deadline => {
                return Err(self.silence_error("no answer byte", self.config.first_byte_timeout));
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
        self.decode_completion(dialect, &read.bytes)
    }

    /// Reads an SSE answer chunk by chunk. A stream that ends before its end marker without
    /// the answer being whole is an error, never a silently truncated answer. The idle bound
    /// runs from the last event that added to the answer: keep-alive comments and pings
    /// arrive, but they do not restart it, so a provider that only keeps the connection alive
    /// cannot hold the call forever.
    async fn read_stream<D: Dialect>(
        &self,
        dialect: &D,
        mut response: reqwest::Response,
        observer: &dyn StreamObserver,
    ) -> Result<ChatResponse, LlmError> {
        let mut body = StreamBody::new(dialect.new_stream());
        let mut idle_since = Instant::now();
        loop {
            let chunk = match timeout_at(idle_since + self.config.stream_idle_timeout, response.chunk()).await {
                Err(_) => return Err(self.stream_idle_error()),
                Ok(Err(err)) => {
                    return Err(LlmError::Transport {
                        endpoint: self.display.clone(),
                        kind: TransportKind::Other,
                        detail: self.scrub(&format!("stream ended mid-message: {}", one_line(&err))),
                    });
                }
                Ok(Ok(chunk)) => chunk,
            };
            let at_end = chunk.is_none();
            let progress = body.decoder.progress();
            if self.take_stream_bytes(&mut body, chunk.as_deref(), observer)? || at_end {
                break;
            }
            if body.decoder.progress() != progress {
                idle_since = Instant::now();
                observer.on_progress();
            }
        }
        self.finish_stream(body)
    }

    /// One body chunk of a stream (`None` at the end of the body) through the SSE framing and
    /// the decoder; `true` once the end marker was seen.
    fn take_stream_bytes<S: StreamDecoder>(
        &self,
        body: &mut StreamBody<S>,
        bytes: Option<&[u8]>,
        observer: &dyn StreamObserver,
    ) -> Result<bool, LlmError> {
        if let Some(bytes) = bytes {
            body.total_bytes = body.total_bytes.saturating_add(bytes.len());
            if body.total_bytes > MAX_RESPONSE_BYTES {
                return Err(self.invalid(format!("stream exceeds {MAX_RESPONSE_BYTES} bytes")));
            }
        }
        // Each event is applied as the framing completes it, so the events before a framing
        // error come first and the outcome never depends on how the body was cut into reads:
        // an end marker ends the stream (whatever follows it is ignored) and the first bad
        // event is the error reported.
        let mut applied = Ok(());
        let mut apply = |event: StreamEvent<'_, str>| {
            if !body.done && applied.is_ok() {
                match body.decoder.apply(event.data, observer) {
                    Ok(done) => body.done = done,
                    Err(err) => applied = Err(err),
                }
            }
        };
        let framed = match bytes {
            None => body.framing.finish(&mut apply),
            Some(bytes) => body.framing.feed(bytes, &mut apply),
        };
        applied.map_err(|err| self.wire_error(err))?;
        if !body.done {
            framed.map_err(|err| self.invalid(err.to_string()))?;
        }
        Ok(body.done)
    }

    /// The answer once the stream stopped. A stream that ended without its end marker and
    /// without a whole answer is an error, never a silently truncated answer.
    fn finish_stream<S: StreamDecoder>(&self, body: StreamBody<S>) -> Result<ChatResponse, LlmError> {
        if !body.done && !body.decoder.finished() {
            return Err(LlmError::Transport {
                endpoint: self.display.clone(),
                kind: TransportKind::Other,
                detail: "stream ended mid-message".to_owned(),
            });
        }
        body.decoder.into_response().map_err(|err| self.wire_error(err))
    }

    /// What a non-streamed 2xx `body` makes (for the fuzz targets too).
    pub(crate) fn decode_completion<D: Dialect>(&self, dialect: &D, body: &[u8]) -> Result<ChatResponse, LlmError> {
        dialect.parse_body(body).map_err(|err| self.wire_error(err))
    }

    /// What an SSE body arriving as `chunks` makes (for the fuzz targets).
    pub(crate) fn decode_stream<D: Dialect>(&self, dialect: &D, chunks: &[&[u8]]) -> Result<ChatResponse, LlmError> {
        let mut body = StreamBody::new(dialect.new_stream());
        let mut chunks = chunks.iter().map(|chunk| Some(*chunk)).chain([None]);
        while let Some(chunk) = chunks.next()
            && !self.take_stream_bytes(&mut body, chunk, &NoStreamObserver)?
        {}
        self.finish_stream(body)
    }

    fn wire_error(&self, err: WireError) -> LlmError {
        match err {
            WireError::Invalid(detail) => self.invalid(detail),
            WireError::Provider(message) => {
                LlmError::StreamError { endpoint: self.display.clone(), detail: self.scrub(&message) }
            }
        }
    }

    /// An invalid-response error naming this endpoint.
    pub(crate) fn invalid(&self, detail: String) -> LlmError {
        LlmError::InvalidResponse { endpoint: self.display.clone(), detail: self.scrub(&detail) }
    }

    fn timeout_error(&self, limit: Duration) -> LlmError {
        LlmError::Timeout {
            endpoint: self.display.clone(),
            detail: format!("no answer within {}", describe_duration(limit)),
            silent_for: None,
        }
    }

    /// A liveness deadline: `what` did not come within `limit` (the first-byte bound, for a
    /// streamed head also the idle bound).
    fn silence_error(&self, what: &str, limit: Duration) -> LlmError {
        LlmError::Timeout {
            endpoint: self.display.clone(),
            detail: format!("{what} within {} (no data from the provider)", describe_duration(limit)),
            silent_for: Some(limit),
        }
    }

    /// No data within the idle bound after the last event that carried some.
    fn stream_idle_error(&self) -> LlmError {
        let limit = self.config.stream_idle_timeout;
        LlmError::Timeout {
            endpoint: self.display.clone(),
            detail: format!("stream idle for more than {} (no data from the provider)", describe_duration(limit)),
            silent_for: Some(limit),
        }
    }

    /// A `send()` or body-read failure, classified for `error_class`.
    fn transport_error(&self, err: &reqwest::Error) -> LlmError {
        let chain = one_line(err);
        if err.is_timeout() {
            return LlmError::Timeout {
                endpoint: self.display.clone(),
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
        LlmError::Transport { endpoint: self.display.clone(), kind, detail: self.scrub(&format!("{what}: {chain}")) }
    }

    /// Removes the key and the extra header values (even if the process-wide redactor does not
    /// know them) and anything else secret-looking from provider-supplied text.
    fn scrub(&self, text: &str) -> String {
        let secrets = std::iter::once(self.config.api_key.as_str())
            .chain(self.config.headers.iter().map(|(_, value)| value.as_str()));
        let mut scrubbed = text.to_owned();
        for secret in secrets.map(str::trim).filter(|secret| secret.len() >= 4) {
            scrubbed = scrubbed.replace(secret, odek_contract::redaction::REDACTED);
        }
        odek_contract::redaction::redact(&scrubbed).into_owned()
    }
}

/// A streamed body being decoded: the SSE framing, the answer so far, and the bytes seen.
struct StreamBody<S> {
    /// Text only (a line that is not UTF-8 fails the answer), 4 MiB a line or an event, and a
    /// last event without its closing blank line still counts.
    framing: EventStreamParser<String>,
    decoder: S,
    total_bytes: usize,
    /// The end marker was seen.
    done: bool,
}

impl<S> StreamBody<S> {
    fn new(decoder: S) -> StreamBody<S> {
        StreamBody {
            framing: EventStreamParser::new(EventStreamConfig {
                unterminated_event: UnterminatedEvent::Dispatch,
                ..EventStreamConfig::default()
            }),
            decoder,
            total_bytes: 0,
            done: false,
        }
    }
}

/// A URL as errors and `Debug` show it: user info and query removed, then redacted.
pub(crate) fn display_endpoint(url: &str) -> String {
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
        529 => Some("overloaded"),
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

/// Redirects of an endpoint on plain HTTP (a local model server), which loads no trust store —
/// reading the system's certificates cost every start-up about 2 ms of CPU (docs/BENCHMARKS.md,
/// "The cost of what was added"): reqwest's usual limit of 10, and none to `https`, which this
/// client could not verify; the error names the way out.
fn plain_http_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        if attempt.url().scheme() == "https" {
            attempt.error(PLAIN_HTTP_TO_HTTPS)
        } else if attempt.previous().len() >= 10 {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

/// Why an `http` base_url was not followed to `https`.
const PLAIN_HTTP_TO_HTTPS: &str = "the http base_url redirects to https; set base_url to the https address";

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

    #[test]
    fn endpoint_display_drops_user_info_and_query() {
        assert_eq!(display_endpoint("https://user:pw@h.example/v1?key=abc"), "https://h.example/v1");
    }

    #[test]
    fn trailing_slashes_of_the_base_url_are_ignored() {
        let endpoint = Endpoint::new(EndpointConfig::new("http://h/v1/", ""), "chat/completions").unwrap();
        assert_eq!(endpoint.display(), "http://h/v1/chat/completions");
    }

    #[test]
    fn config_debug_never_shows_the_key_nor_header_values_red() {
        let config = EndpointConfig {
            headers: vec![("x-team-token".into(), "team-secret-value-0123".into())],
            ..EndpointConfig::new("http://h/v1", "sk-very-secret-value-0123456789")
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("very-secret") && !shown.contains("team-secret"), "{shown}");
        assert!(shown.contains("x-team-token"));
    }

    #[test]
    fn a_header_value_with_a_newline_is_refused_red() {
        let config = EndpointConfig {
            headers: vec![("x-a".into(), "one\r\nx-injected: two".into())],
            ..EndpointConfig::new("http://h/v1", "")
        };
        let err = Endpoint::new(config, "responses").unwrap_err().to_string();
        assert!(err.contains("header \"x-a\"") && !err.contains("injected"), "{err}");
    }

    #[test]
    fn header_values_are_scrubbed_from_provider_text_red() {
        let config = EndpointConfig {
            headers: vec![("x-team-token".into(), "team-secret-value-0123".into())],
            ..EndpointConfig::new("http://h/v1", "sk-key-0123456789")
        };
        let endpoint = Endpoint::new(config, "messages").unwrap();
        let scrubbed = endpoint.scrub("bad token team-secret-value-0123 and key sk-key-0123456789");
        assert!(!scrubbed.contains("team-secret") && !scrubbed.contains("sk-key"), "{scrubbed}");
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
