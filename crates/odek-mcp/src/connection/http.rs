//! The Streamable HTTP side of a connection (spec `mcp-client.md` §14, MCP 2025-03-26): every
//! message the writer queue holds becomes one POST, and the JSON body or the event stream that
//! answers it is routed message by message exactly like a stdio line; the session id, the
//! standalone GET stream, resuming a stream with `Last-Event-ID` after its `retry` (\[beyond\]
//! SEP-1699's polling, MCP 2025-11-25) and the closing DELETE live here.
//!
//! \[beyond\] The deprecated HTTP+SSE transport (2024-11-05, `"type": "sse"`) shares all of it:
//! there the `url` is one long event stream ([`legacy_stream`]) whose `endpoint` event names
//! where messages are POSTed, and every answer comes on that stream.
//!
//! Start at [`Connection::connect_http`]. Bounds: at most `max_response_bytes + 1` bytes of one
//! POST's body or stream are read (more fails that request and drops its HTTP connection; the
//! next call goes on), each event of the GET stream is held to the same bound, at most
//! [`MAX_IN_FLIGHT`] exchanges run at once, and nothing waits without a deadline or the
//! connection's stop.

use std::sync::Arc;

use odek_contract::error_chain::one_line;
use odek_contract::event_stream::{EventStreamConfig, EventStreamParser};
use odek_contract::quoting::quote;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::*;
use crate::error::HttpFailure;
use crate::oauth::Authorizer;
use crate::remote::{Endpoint, GuardedResolver};
use crate::server_config::SecretValue;

/// Exchanges (POSTs with their answers) that may run at once on one connection.
pub(crate) const MAX_IN_FLIGHT: usize = 64;
/// How much of an error status's body is read, and how much of it is shown (characters).
const ERROR_BODY_READ_BYTES: usize = 4096;
const ERROR_BODY_CHARS: usize = 512;
/// The closing DELETE's deadline.
const DELETE_GRACE: Duration = Duration::from_secs(1);
/// The standalone stream: pause between reconnections, and how many failed attempts in a row
/// end it.
const LISTEN_RETRY: Duration = Duration::from_secs(1);
const LISTEN_ATTEMPTS: u32 = 5;
/// Shortest pause before resuming a request's stream a second time or more (a server that
/// closes its streams at once cannot make odek spin).
const MIN_REPEATED_RECONNECT_DELAY: Duration = Duration::from_millis(100);
/// Longest reconnection time a stream's `retry` field may ask for (SEP-1699).
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(30);
/// Longest session id kept (the spec wants visible ASCII; longer ones are ignored).
const MAX_SESSION_ID_BYTES: usize = 1024;
/// The first protocol version whose requests carry `MCP-Protocol-Version`.
const VERSION_HEADER_SINCE: &str = "2025-06-18";
/// \[beyond\] The stateless revision (opt-in), whose POSTs name their method and target in headers.
const STATELESS_SINCE: &str = "2026-07-28";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const LAST_EVENT_HEADER: &str = "last-event-id";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const EVENT_STREAM: &str = "text/event-stream";

/// Everything an HTTP connection needs.
pub(crate) struct HttpParams<'a> {
    pub server: &'a str,
    pub endpoint: &'a Endpoint,
    /// The bearer token `token_env` named, when it was set.
    pub token: Option<&'a SecretValue>,
    pub max_response_bytes: usize,
    pub timeout: Duration,
    pub stale: Arc<AtomicBool>,
    pub observer: Arc<dyn McpObserver>,
    /// The deprecated HTTP+SSE transport instead of Streamable HTTP.
    pub legacy_sse: bool,
    /// \[beyond\] OAuth (issue 35): the bearer of every request, renewed after a `401`.
    pub authorizer: Option<Arc<Authorizer>>,
}

/// The endpoint of one connection and the state its exchanges share.
pub(crate) struct HttpLink {
    /// Taken at shutdown: dropping the client closes its pooled connections at once.
    client: Mutex<Option<reqwest::Client>>,
    url: reqwest::Url,
    /// The configured headers and the bearer token, every value marked sensitive.
    headers: HeaderMap,
    session: Mutex<Option<HeaderValue>>,
    protocol_version: Mutex<Option<HeaderValue>>,
    in_flight: Arc<Semaphore>,
    /// HTTP+SSE only: where messages are POSTed, once the stream's `endpoint` event named it.
    legacy_endpoint: Option<watch::Sender<Option<reqwest::Url>>>,
    authorizer: Option<Arc<Authorizer>>,
    /// Set once the standalone stream's first `GET` was answered (or failed, or gave up).
    stream_settled: watch::Sender<bool>,
}

impl Connection {
    /// Opens a Streamable HTTP connection: builds the client (rustls with the system's roots,
    /// no redirects, link-local addresses refused) and starts the writer that POSTs each
    /// message. No protocol message is sent yet.
    pub fn connect_http(params: HttpParams<'_>) -> Result<Arc<Connection>, McpError> {
        let spawn_error = |error: String| McpError::Spawn { server: params.server.to_owned(), error };
        let link = Arc::new(HttpLink::new(&params).map_err(spawn_error)?);
        let lines = ServerLineSink::new(params.server, Arc::clone(&params.observer));
        let limits = (params.max_response_bytes, params.timeout);
        let (shared, writer_rx, exit_rx) = Shared::new(params.server, limits, params.stale, params.observer, lines);
        let writer_task = tokio::spawn(run_poster(Arc::clone(&shared), Arc::clone(&link), writer_rx));
        let tasks = match link.legacy_endpoint {
            Some(_) => vec![tokio::spawn(legacy_stream(Arc::clone(&shared), Arc::clone(&link)))],
            None => Vec::new(),
        };
        Ok(Arc::new(Connection {
            shared,
            next_id: AtomicI64::new(1),
            pid: None,
            exit: exit_rx,
            tasks: Mutex::new(tasks),
            writer_task: Mutex::new(Some(writer_task)),
            shutdown_once: OnceCell::new(),
            http: Some(link),
            request_meta: std::sync::OnceLock::new(),
        }))
    }
}

impl HttpLink {
    fn new(params: &HttpParams<'_>) -> Result<HttpLink, String> {
        let mut headers = HeaderMap::new();
        for (name, value) in &params.endpoint.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|err| format!("header {name}: {err}"))?;
            headers.insert(name, sensitive(value.expose())?);
        }
        if let Some(token) = params.token {
            headers.insert(AUTHORIZATION, sensitive(&format!("Bearer {}", token.expose()))?);
        }
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_native_certs(true)
            .tls_built_in_webpki_certs(false)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(params.timeout)
            .dns_resolver(Arc::new(GuardedResolver))
            .user_agent(concat!("odek/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| format!("build the HTTP client: {}", one_line(&err)))?;
        Ok(HttpLink {
            client: Mutex::new(Some(client)),
            url: params.endpoint.url.clone(),
            headers,
            session: Mutex::new(None),
            protocol_version: Mutex::new(None),
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            legacy_endpoint: params.legacy_sse.then(|| watch::channel(None).0),
            authorizer: params.authorizer.clone(),
            stream_settled: watch::channel(false).0,
        })
    }

    /// Waits, at most `limit`, until the standalone stream's first `GET` has its answer: a call
    /// made after that cannot overtake the stream a server may answer it on (SEP-1699).
    pub(crate) async fn stream_settled(&self, limit: Duration) {
        let mut settled = self.stream_settled.subscribe();
        let _ = tokio::time::timeout(limit, settled.wait_for(|settled| *settled)).await;
    }

    /// Whether this is the deprecated HTTP+SSE transport.
    pub(crate) fn is_legacy(&self) -> bool {
        self.legacy_endpoint.is_some()
    }

    /// \[beyond\] Whether the connection speaks a stateless revision (2026-07-28), whose POSTs
    /// carry `Mcp-Method` and `Mcp-Name`.
    fn is_stateless(&self) -> bool {
        let version = self.protocol_version.lock().unwrap_or_else(PoisonError::into_inner);
        version.as_ref().is_some_and(|version| version.as_bytes() == STATELESS_SINCE.as_bytes())
    }

    pub(crate) fn set_protocol_version(&self, version: &str) {
        let sent = (version >= VERSION_HEADER_SINCE).then(|| HeaderValue::from_str(version).ok()).flatten();
        *self.protocol_version.lock().unwrap_or_else(PoisonError::into_inner) = sent;
    }

    pub(crate) fn session(&self) -> Option<HeaderValue> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Keeps the session id the server assigns (on `initialize`); a later or malformed one is
    /// ignored.
    fn note_session(&self, response: &reqwest::Response) {
        let Some(id) = response.headers().get(SESSION_HEADER) else { return };
        let visible = id.as_bytes().iter().all(|byte| (0x21..=0x7e).contains(byte));
        if !visible || id.is_empty() || id.len() > MAX_SESSION_ID_BYTES {
            return;
        }
        let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        if session.is_none() {
            let mut id = id.clone();
            id.set_sensitive(true);
            *session = Some(id);
        }
    }

    /// A request to the endpoint with every header this connection sends; `None` once the
    /// connection was shut down.
    fn request(&self, method: reqwest::Method) -> Option<reqwest::RequestBuilder> {
        self.request_to(method, self.url.clone())
    }

    fn request_to(&self, method: reqwest::Method, url: reqwest::Url) -> Option<reqwest::RequestBuilder> {
        let client = self.client.lock().unwrap_or_else(PoisonError::into_inner).clone()?;
        let mut headers = self.headers.clone();
        if let Some(session) = self.session() {
            headers.insert(SESSION_HEADER, session);
        }
        if let Some(version) = self.protocol_version.lock().unwrap_or_else(PoisonError::into_inner).clone() {
            headers.insert(VERSION_HEADER, version);
        }
        Some(client.request(method, url).headers(headers))
    }

    /// Sends `request`, through the server's authorizer when it has one (its bearer, and one
    /// retry after a `401`); the outer error is the authorizer's.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Result<reqwest::Response, reqwest::Error>, HttpFailure> {
        match &self.authorizer {
            Some(authorizer) => {
                authorizer.send(request).await.map_err(|error| HttpFailure::Authorization { error: error.to_string() })
            }
            None => Ok(request.send().await),
        }
    }

    /// Shutdown: ends the session with `DELETE`, best effort, within [`DELETE_GRACE`], then
    /// drops the client, which closes every connection it pooled.
    pub(crate) async fn end_session(&self) {
        if self.session().is_some()
            && let Some(delete) = self.request(reqwest::Method::DELETE)
        {
            let _ = tokio::time::timeout(DELETE_GRACE, self.send(delete)).await;
        }
        self.client.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

fn sensitive(value: &str) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_str(value).map_err(|_| "a header value is not valid".to_owned())?;
    value.set_sensitive(true);
    Ok(value)
}

/// The writer of an HTTP connection: each queued message is one exchange of its own, so calls
/// run in parallel; a request is dispatched when its exchange starts (spec §14).
async fn run_poster(shared: Arc<Shared>, link: Arc<HttpLink>, mut queue: mpsc::Receiver<Outgoing>) {
    loop {
        let message = tokio::select! {
            biased;
            () = shared.stop.cancelled() => return,
            message = queue.recv() => match message {
                Some(message) => message,
                None => return,
            },
        };
        let permit = match &message.request {
            Some(state) => {
                let permit = tokio::select! {
                    biased;
                    () = shared.stop.cancelled() => return,
                    () = state.abandoned.cancelled() => continue,
                    permit = Arc::clone(&link.in_flight).acquire_owned() => permit,
                };
                let Ok(permit) = permit else { return };
                if state.phase.compare_exchange(QUEUED, DISPATCHED, Ordering::AcqRel, Ordering::Acquire).is_err() {
                    continue;
                }
                let now = clock_now();
                state.dispatched_at.store(now, Ordering::Release);
                state.activity.store(now, Ordering::Release);
                permit
            }
            // Notifications and answers never wait: with every slot taken they are dropped, as
            // a full stdio queue drops them.
            None => match Arc::clone(&link.in_flight).try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => continue,
            },
        };
        tokio::spawn(exchange(Arc::clone(&shared), Arc::clone(&link), message, permit));
    }
}

/// One POST and its answer, until the answer is routed, the caller gives up, or the connection
/// stops; a message without an id (notification, answer) is bounded by the server timeout.
async fn exchange(shared: Arc<Shared>, link: Arc<HttpLink>, message: Outgoing, _permit: OwnedSemaphorePermit) {
    let abandoned = message.request.as_ref().map(|state| state.abandoned.clone());
    let timeout = shared.timeout;
    let work = post(&shared, &link, message.bytes, message.id);
    tokio::select! {
        biased;
        () = shared.stop.cancelled() => {}
        () = cancelled(abandoned.as_ref()) => {}
        _ = async {
            match message.id {
                Some(_) => work.await,
                None => { let _ = tokio::time::timeout(timeout, work).await; }
            }
        } => {}
    }
}

/// One notification POSTed and its answer awaited, within the server timeout.
pub(crate) async fn notify(shared: &Shared, link: &HttpLink, bytes: Vec<u8>) {
    let _ = tokio::time::timeout(shared.timeout, async {
        tokio::select! {
            biased;
            () = shared.stop.cancelled() => {}
            () = post(shared, link, bytes, None) => {}
        }
    })
    .await;
}

async fn post(shared: &Shared, link: &HttpLink, bytes: Vec<u8>, id: Option<i64>) {
    let fail = |failure: RequestFailure| {
        if let Some(id) = id {
            shared.fail_request(id, failure);
        }
    };
    let had_session = link.session().is_some();
    let target = match &link.legacy_endpoint {
        // HTTP+SSE: the message waits (within the server timeout) for the endpoint event.
        Some(endpoint) => {
            let mut endpoint = endpoint.subscribe();
            let named = tokio::time::timeout(shared.timeout, endpoint.wait_for(Option::is_some)).await;
            match named.ok().and_then(Result::ok).and_then(|url| url.clone()) {
                Some(url) => url,
                None => return fail(RequestFailure::NotDispatched(Cause::NoEndpoint)),
            }
        }
        None => link.url.clone(),
    };
    let Some(mut request) = link.request_to(reqwest::Method::POST, target) else {
        return fail(RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch));
    };
    if link.is_stateless() {
        for (name, value) in standard_headers(&bytes) {
            request = request.header(name, value);
        }
    }
    let sent =
        link.send(request.header(CONTENT_TYPE, "application/json").header(ACCEPT, ACCEPT_BOTH).body(bytes)).await;
    let response = match sent {
        Ok(Ok(response)) => response,
        Ok(Err(error)) => return fail(transport_failure(error)),
        Err(failure) => return fail(RequestFailure::Http(failure)),
    };
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND && had_session {
        // The session expired: this request and every waiting one fail, the next call starts over.
        shared.close(Closed::SessionExpired);
        return;
    }
    link.note_session(&response);
    if !status.is_success() {
        let html = content_type(&response) == "text/html";
        let body = read_capped(response, ERROR_BODY_READ_BYTES).await.unwrap_or_default();
        let body = if html || looks_like_html(&body) { HTML_BODY.to_owned() } else { cut_body(&body) };
        return fail(RequestFailure::Http(HttpFailure::Status { code: status.as_u16(), body }));
    }
    let Some(id) = id.filter(|_| link.legacy_endpoint.is_none()) else {
        // A notification's or an answer's 202 (and over HTTP+SSE every message's, the answer
        // coming on the stream): whatever body comes is read up to the cap and dropped.
        let _ = read_capped(response, shared.max_response_bytes).await;
        return;
    };
    match content_type(&response).as_str() {
        "application/json" => {
            let limit = shared.max_response_bytes;
            match read_capped(response, limit).await {
                Ok(body) if body.len() > limit => fail(RequestFailure::Http(HttpFailure::TooLarge { limit })),
                Ok(body) => route_body(shared, id, body),
                Err(failure) => fail(failure),
            }
        }
        EVENT_STREAM => {
            if let Some(failure) = follow_stream(shared, link, id, response).await {
                fail(failure);
            }
        }
        other => fail(RequestFailure::Http(HttpFailure::ContentType { content_type: other.to_owned() })),
    }
}

/// \[beyond\] SEP-2243's headers of one of odek's own messages: `Mcp-Method` always, `Mcp-Name`
/// for the calls that name a target (a tool's name, a resource's URI, a prompt's name). A value
/// that cannot be a header value is left out.
fn standard_headers(message: &[u8]) -> Vec<(&'static str, HeaderValue)> {
    #[derive(serde::Deserialize)]
    struct Named {
        method: Option<String>,
        params: Option<Target>,
    }
    #[derive(serde::Deserialize)]
    struct Target {
        name: Option<String>,
        uri: Option<String>,
    }
    let Ok(named) = serde_json::from_slice::<Named>(message) else { return Vec::new() };
    let Some(method) = named.method else { return Vec::new() };
    let target = named.params.and_then(|params| match method.as_str() {
        "tools/call" | "prompts/get" => params.name,
        "resources/read" => params.uri,
        _ => None,
    });
    let mut headers = Vec::new();
    if let Ok(value) = HeaderValue::from_str(&method) {
        headers.push((METHOD_HEADER, value));
    }
    if let Some(value) = target.and_then(|target| HeaderValue::from_str(&target).ok()) {
        headers.push((NAME_HEADER, value));
    }
    headers
}

/// A request's event stream, followed until it answers `id` (`None`) or fails. A stream that
/// ends first — broken, or closed by a server that polls (SEP-1699: it sends an event id and a
/// `retry`, then closes) — is resumed with `GET` and `Last-Event-ID` after the stream's `retry`
/// (capped at [`MAX_RECONNECT_DELAY`]; none given: at once, and [`MIN_REPEATED_RECONNECT_DELAY`]
/// from the second resumption on), again for as long as each stream brings a new event id; one
/// that ends with nothing new means the answer is not coming. The caller's deadline bounds it all.
async fn follow_stream(
    shared: &Shared,
    link: &HttpLink,
    id: i64,
    mut response: reqwest::Response,
) -> Option<RequestFailure> {
    let mut retry: Option<Duration> = None;
    let mut resumed_from: Option<String> = None;
    loop {
        let resume_from = match read_stream(shared, Some(id), response, StreamBound::Total).await {
            StreamEnd::Answered => return None,
            StreamEnd::Failed(failure) => return Some(failure),
            StreamEnd::Ended { last_event_id: None, .. } => break,
            StreamEnd::Ended { last_event_id: Some(last_event_id), retry: asked } => {
                retry = asked.or(retry);
                last_event_id
            }
        };
        if resumed_from.as_ref() == Some(&resume_from) {
            break;
        }
        let mut delay = retry.unwrap_or(Duration::ZERO).min(MAX_RECONNECT_DELAY);
        if resumed_from.is_some() {
            delay = delay.max(MIN_REPEATED_RECONNECT_DELAY);
        }
        resumed_from = Some(resume_from.clone());
        tokio::select! {
            biased;
            () = shared.stop.cancelled() => return None,
            () = tokio::time::sleep(delay) => {}
        }
        match resume(link, &resume_from).await {
            Some(resumed) => response = resumed,
            None => break,
        }
    }
    Some(RequestFailure::OutcomeUnknown(Cause::ClosedBeforeResponse))
}

/// A JSON body is one JSON-RPC message, routed like a stdio line; a body that is not the
/// answer to `id` fails it.
fn route_body(shared: &Shared, id: i64, body: Vec<u8>) {
    let error = match serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
        Err(error) => Some(error.to_string()),
        Ok(_) if body.trim_ascii_start().starts_with(b"[") => {
            Some("a JSON-RPC batch is not an answer to a single request".to_owned())
        }
        Ok(_) => None,
    };
    if error.is_none() {
        route_line(shared, body);
    }
    if shared.is_pending(id) {
        let error = error.unwrap_or_else(|| format!("the body holds no response to request {id}"));
        shared.fail_request(id, RequestFailure::Http(HttpFailure::Parse { error }));
    }
}

/// How an event stream is bounded: a POST's stream as a whole (spec §14), the standalone
/// stream event by event (it lives as long as the connection).
#[derive(Clone, Copy, PartialEq, Eq)]
enum StreamBound {
    Total,
    PerEvent,
}

enum StreamEnd {
    /// The request's answer was routed (or its caller stopped waiting).
    Answered,
    Failed(RequestFailure),
    /// The stream ended first; what it said of resuming it.
    Ended {
        last_event_id: Option<String>,
        retry: Option<Duration>,
    },
}

/// Routes every event of `response` until request `id` is answered (for the standalone stream,
/// `id` is `None`: until the stream ends).
async fn read_stream(
    shared: &Shared,
    id: Option<i64>,
    mut response: reqwest::Response,
    bound: StreamBound,
) -> StreamEnd {
    let limit = shared.max_response_bytes;
    let too_large = || StreamEnd::Failed(RequestFailure::Http(HttpFailure::TooLarge { limit }));
    // Any bytes: each event's data is routed like a stdio line, which judges it.
    let mut parser =
        EventStreamParser::<Vec<u8>>::new(EventStreamConfig { max_event_bytes: limit, ..EventStreamConfig::default() });
    let mut total = 0_usize;
    loop {
        let Ok(Some(chunk)) = response.chunk().await else {
            return StreamEnd::Ended {
                last_event_id: parser.last_event_id().map(str::to_owned),
                retry: parser.retry(),
            };
        };
        total = total.saturating_add(chunk.len());
        if bound == StreamBound::Total && total > limit {
            return too_large();
        }
        if parser.feed(&chunk, |event| route_line(shared, event.data.to_vec())).is_err() {
            return too_large();
        }
        if let Some(id) = id
            && !shared.is_pending(id)
        {
            return StreamEnd::Answered;
        }
    }
}

/// A `GET` for an event stream, resumed after `last_event_id` when given; `None` once the
/// connection was shut down.
fn stream_request(link: &HttpLink, last_event_id: Option<HeaderValue>) -> Option<reqwest::RequestBuilder> {
    let request = link.request(reqwest::Method::GET)?.header(ACCEPT, EVENT_STREAM);
    Some(match last_event_id {
        Some(id) => request.header(LAST_EVENT_HEADER, id),
        None => request,
    })
}

/// A 2xx answer that is an event stream.
fn is_event_stream(response: &reqwest::Response) -> bool {
    response.status().is_success() && content_type(response) == EVENT_STREAM
}

/// `GET` with `Last-Event-ID`: the server may replay what the broken stream would have sent.
async fn resume(link: &HttpLink, last_event_id: &str) -> Option<reqwest::Response> {
    let last_event_id = HeaderValue::from_str(last_event_id).ok()?;
    let response = link.send(stream_request(link, Some(last_event_id))?).await.ok()?.ok()?;
    is_event_stream(&response).then_some(response)
}

/// The standalone stream (spec 2025-03-26 "Listening for Messages from the Server"): server
/// notifications and requests outside any call, routed like every other message. A server that
/// answers 405 (or anything but an event stream) offers none. A dropped stream is resumed from
/// its last event; [`LISTEN_ATTEMPTS`] failures in a row end it.
pub(crate) async fn listen(shared: Arc<Shared>, link: Arc<HttpLink>) {
    struct Settled<'a>(&'a watch::Sender<bool>);
    impl Drop for Settled<'_> {
        fn drop(&mut self) {
            self.0.send_replace(true);
        }
    }
    let mut settled = Some(Settled(&link.stream_settled));
    let mut last_event_id: Option<String> = None;
    let mut retry: Option<Duration> = None;
    let mut failures = 0;
    while failures < LISTEN_ATTEMPTS && !shared.stop.is_cancelled() {
        let resume_from = last_event_id.as_deref().and_then(|id| HeaderValue::from_str(id).ok());
        let Some(request) = stream_request(&link, resume_from) else { return };
        let response = tokio::select! {
            biased;
            () = shared.stop.cancelled() => return,
            response = link.send(request) => response,
        };
        settled.take();
        match response.ok().and_then(Result::ok).ok_or(()) {
            Ok(response) if is_event_stream(&response) => {
                let end = tokio::select! {
                    biased;
                    () = shared.stop.cancelled() => return,
                    end = read_stream(&shared, None, response, StreamBound::PerEvent) => end,
                };
                match end {
                    StreamEnd::Ended { last_event_id: Some(id), retry: asked } => {
                        last_event_id = Some(id);
                        retry = asked.or(retry);
                        failures = 0;
                    }
                    StreamEnd::Ended { last_event_id: None, retry: asked } => {
                        retry = asked.or(retry);
                        failures += 1;
                    }
                    _ => failures += 1,
                }
            }
            Ok(response) if response.status() == reqwest::StatusCode::NOT_FOUND && link.session().is_some() => {
                shared.close(Closed::SessionExpired);
                return;
            }
            // 405 (no stream offered), another status or another type: nothing to listen to.
            Ok(_) => return,
            Err(_) => failures += 1,
        }
        let delay = retry.map_or(LISTEN_RETRY, |asked| asked.min(MAX_RECONNECT_DELAY));
        tokio::select! {
            () = shared.stop.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// HTTP+SSE: the one stream every answer comes on. Its `endpoint` event names where messages
/// go (resolved against `url`, and refused unless it has the same origin); every other event is
/// a message, routed like a stdio line, each held to `max_response_bytes`. The stream's end
/// closes the connection (the next call restarts it).
pub(crate) async fn legacy_stream(shared: Arc<Shared>, link: Arc<HttpLink>) {
    let Some(endpoint) = &link.legacy_endpoint else { return };
    let Some(request) = stream_request(&link, None) else {
        shared.close(Closed::Eof);
        return;
    };
    let mut response = match link.send(request).await {
        Err(failure) => {
            shared.close(Closed::Refused(Cause::Transport(failure.to_string())));
            return;
        }
        Ok(Ok(response)) if is_event_stream(&response) => response,
        // Something answered, but no event stream: say what, since it is most likely a
        // Streamable HTTP endpoint configured as `"type": "sse"`.
        Ok(Ok(response)) => {
            let answer = if response.status().is_success() {
                format!("content type {}", quote(&content_type(&response)))
            } else {
                format!("http {}", response.status().as_u16())
            };
            shared.close(Closed::Refused(Cause::NotAnEventStream(answer)));
            return;
        }
        Ok(Err(error)) => {
            let cause = if error.is_connect() { Cause::Connect } else { Cause::Transport };
            shared.close(Closed::Refused(cause(request_error_text(error))));
            return;
        }
    };
    let mut parser = EventStreamParser::<Vec<u8>>::new(EventStreamConfig {
        max_event_bytes: shared.max_response_bytes,
        ..EventStreamConfig::default()
    });
    loop {
        let Ok(Some(chunk)) = response.chunk().await else { break };
        let mut foreign = false;
        let fed = parser.feed(&chunk, |event| match event.event_type {
            Some("endpoint") => match same_origin_endpoint(&link.url, event.data) {
                Some(url) => {
                    endpoint.send_replace(Some(url));
                }
                None => foreign = true,
            },
            None => route_line(&shared, event.data.to_vec()),
            Some(_) => {}
        });
        if fed.is_err() {
            shared.close(Closed::Oversize { limit: shared.max_response_bytes });
            return;
        }
        if foreign {
            break;
        }
    }
    shared.close(Closed::Eof);
}

/// An `endpoint` event's URL, resolved against the stream's, when it has the stream's origin.
fn same_origin_endpoint(stream: &reqwest::Url, data: &[u8]) -> Option<reqwest::Url> {
    let text = std::str::from_utf8(data).ok()?.trim();
    let url = stream.join(text).ok()?;
    (url.origin() == stream.origin()).then_some(url)
}

/// The media type of a response, lower-cased, without parameters.
fn content_type(response: &reqwest::Response) -> String {
    let raw = response.headers().get(CONTENT_TYPE).map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let raw = raw.unwrap_or_default();
    raw.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// Reads at most `limit + 1` bytes of the body (so that "more than `limit`" can be told); the
/// rest is never read, and dropping the response closes its connection.
async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, RequestFailure> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = (limit + 1).saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() > limit {
                    return Ok(body);
                }
            }
            Ok(None) => return Ok(body),
            Err(error) => return Err(RequestFailure::OutcomeUnknown(Cause::Transport(request_error_text(error)))),
        }
    }
}

/// \[beyond\] What an error status's body shows when it is an HTML page (a web server's or a
/// framework's error page): nothing of it, markup says nothing the status does not.
const HTML_BODY: &str = "[an HTML page, not shown]";

/// Whether a body without an HTML content type is an HTML page all the same.
fn looks_like_html(body: &[u8]) -> bool {
    let start = body.trim_ascii_start();
    let head = &start[..start.len().min(16)];
    [b"<!doctype html".as_slice(), b"<html"]
        .iter()
        .any(|tag| head.len() >= tag.len() && head[..tag.len()].eq_ignore_ascii_case(tag))
}

/// An error status's body as the error shows it: lossy UTF-8, cut to 512 characters with `...`.
fn cut_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut chars = text.chars();
    let shown: String = chars.by_ref().take(ERROR_BODY_CHARS).collect();
    if chars.next().is_some() { format!("{shown}...") } else { shown }
}

impl HttpLink {
    /// \[beyond\] Whether the url serves the deprecated HTTP+SSE transport: a GET for an event
    /// stream, without a session, is answered with one (within `limit`). Asked when an entry
    /// configured as Streamable HTTP had its `initialize` refused, to name the `type` to set.
    pub(crate) async fn serves_legacy_sse(&self, limit: Duration) -> bool {
        let Some(request) = stream_request(self, None) else { return false };
        matches!(tokio::time::timeout(limit, self.send(request)).await, Ok(Ok(Ok(response))) if is_event_stream(&response))
    }
}

/// A failed send: nothing went out when no connection was made; otherwise the outcome is unknown.
fn transport_failure(error: reqwest::Error) -> RequestFailure {
    if error.is_connect() {
        RequestFailure::NotDispatched(Cause::Connect(request_error_text(error)))
    } else {
        RequestFailure::OutcomeUnknown(Cause::Transport(request_error_text(error)))
    }
}

/// A failed exchange's error as a call's error shows it (to the model too): without the URL,
/// which may carry a credential in its path or query; the server's name already says where.
fn request_error_text(error: reqwest::Error) -> String {
    one_line(&error.without_url())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_event_is_resolved_and_must_keep_the_origin_red() {
        let stream = reqwest::Url::parse("http://127.0.0.1:8080/sse").unwrap();
        let resolved = |data: &str| same_origin_endpoint(&stream, data.as_bytes()).map(|url| url.to_string());
        assert_eq!(resolved("/message?sessionId=abc").as_deref(), Some("http://127.0.0.1:8080/message?sessionId=abc"));
        assert_eq!(resolved("http://127.0.0.1:8080/m").as_deref(), Some("http://127.0.0.1:8080/m"));
        assert_eq!(resolved("http://127.0.0.1:9999/m"), None);
        assert_eq!(resolved("https://evil.example/m"), None);
        assert_eq!(resolved("//evil.example/m"), None);
    }

    #[test]
    fn error_bodies_are_cut_to_512_characters() {
        assert_eq!(cut_body(b"short"), "short");
        let long = "é".repeat(600);
        let cut = cut_body(long.as_bytes());
        assert_eq!(cut.chars().count(), 515);
        assert!(cut.ends_with("..."));
        assert_eq!(cut_body(&[0xff, b'a']), "\u{fffd}a");
    }

    #[test]
    fn html_pages_are_told_by_their_start() {
        assert!(looks_like_html(b"  <!DOCTYPE html><html><body><pre>Cannot POST /sse</pre>"));
        assert!(looks_like_html(b"<HTML><head>"));
        assert!(!looks_like_html(b"{\"error\": \"<html>\"}"));
        assert!(!looks_like_html(b"<!doc"));
        assert!(!looks_like_html(b""));
    }
}
