//! Scripted and hostile MCP Streamable HTTP servers (protocol 2025-03-26) on loopback std threads:
//! a correct baseline server plus one knob per hostile behaviour; what odek does about them is not here.
//!
//! Start at [`McpHttpServer::start`] with an [`McpScript`]; answers to single requests are
//! [`ToolAnswer`]s. Callers need no async runtime.
//!
//! # Baseline
//!
//! Everything is served at `/mcp` ([`McpHttpServer::url`]); other paths answer 404, other methods
//! 405. Every request is recorded ([`McpHttpServer::requests`]) before it is judged.
//!
//! - `POST` needs `Content-Type: application/json` (else 415) and an `Accept` naming both
//!   `application/json` and `text/event-stream` (else 406); a body that is not JSON answers 400
//!   with JSON-RPC error -32700.
//! - `initialize` answers protocolVersion [`PROTOCOL_VERSION`] ([`McpScript::protocol_version`]),
//!   capabilities `tools.listChanged: true` (plus `resources` once a resource is configured),
//!   serverInfo and the optional `instructions`, with an `Mcp-Session-Id` header
//!   (`session-1`, `session-2`… in order of issue).
//! - Any other request without the header answers 400, with an id this server does not know (or
//!   no longer knows) 404.
//! - Notifications and client responses (`notifications/initialized`, answers to server
//!   requests) answer 202 with an empty body.
//! - `tools/list` lists the configured tools (pages of [`McpScript::tool_page_size`], cursor = the
//!   index of the page's first tool); `tools/call` asks the tool's responder closure
//!   (`Fn(&Value arguments) -> ToolAnswer`); an unknown tool is error -32602
//!   `Unknown tool: <name>`. `resources/list`, `resources/read` (unknown uri: -32002) and `ping`
//!   answer from the script; any other method is -32601 `Method not found: <method>`. A JSON-RPC
//!   batch request is answered by an array of the answers' outcomes.
//! - `GET` (with `text/event-stream` in `Accept`, else 406) opens the standalone SSE stream, which
//!   carries what the test pushes ([`McpHttpServer::push_notification`]), each message on one
//!   stream only; [`McpScript::without_get_stream`] answers 405 instead, and
//!   [`McpHttpServer::close_get_streams`] ends the open ones (a client's reconnection).
//! - Every SSE event carries `id: <stream>-<n>` (stream 0 is the standalone stream, every SSE
//!   answer to a POST gets the next number). A `GET` with `Last-Event-ID` replays what followed
//!   that event on its stream: a POST stream is replayed to its end and closed, the standalone
//!   stream goes on live; an id this server never sent answers 400.
//! - `DELETE` with a known session ends it: 200, the id then answers 404.
//!
//! Answers with a length carry `Content-Length` and keep the connection alive; streams are
//! chunked (and keep it alive) or, with [`McpScript::framing`]`(`[`Framing::Close`]`)`, end by
//! closing the connection.
//!
//! # Hostile knobs
//!
//! Per server, on [`McpScript`]:
//! - [`McpScript::storm`]`(&[500, 502, 503], Some(n))`: the first `n` POSTs answer those statuses
//!   in turn (`None`: forever), body `storm answer <k>: <status> <reason>`, then it recovers.
//! - [`McpScript::expire_session_after`]`(k)`: the first session answers `k` requests, then 404;
//!   a new `initialize` gets a new id. [`McpHttpServer::expire_sessions`] does it at any moment.
//! - [`McpScript::without_get_stream`]: `GET` answers 405. [`McpScript::without_sessions`]: no
//!   `Mcp-Session-Id` at all.
//! - [`McpScript::answer_method`]: any method (initialize, tools/list, a notification…) answered
//!   by a closure, so every per-call knob below also works at startup.
//!
//! Per answer, on [`ToolAnswer`] (returned by a tool's responder or a method override):
//! - [`ToolAnswer::huge_text`]`(n)` / [`ToolAnswer::huge_structured_content`]`(n)`: a response of
//!   exactly `n` bytes (up to 1 GiB and beyond), generated from a counter while it is sent, never
//!   held; the filler sits in the text content or in `structuredContent`.
//! - [`ToolAnswer::endless_sse_line`]: an SSE event whose `data:` line never ends.
//! - [`ToolAnswer::dribble`]`(interval)`: the body one byte per `interval` (a timer inside the
//!   server: the behaviour under test); [`ToolAnswer::dribble_head`] from the first byte of the
//!   status line.
//! - [`ToolAnswer::redirect`]`(307)`: a redirect to another origin, a second listener
//!   ([`McpHttpServer::redirect_target_url`]) that records anyone who comes
//!   ([`McpHttpServer::redirect_target_connections`]); [`ToolAnswer::redirect_to`] for any
//!   `Location`.
//! - [`ToolAnswer::content_type`]: the `Content-Type` lie — `.sse().content_type("application/json")`
//!   sends SSE labelled JSON, `.content_type("text/event-stream")` JSON labelled SSE,
//!   `.content_type("text/html")` JSON labelled HTML.
//! - [`ToolAnswer::gzip_bomb`]`(n)`: `Content-Encoding: gzip`, about a thousandth of `n` on the
//!   wire, inflating to exactly `n` bytes (a JSON-RPC response head, then spaces).
//! - [`ToolAnswer::batch`]: the response inside a JSON array (after any messages).
//! - [`ToolAnswer::unannounced`]: a body whose length is known sent without `Content-Length`.
//! - [`ToolAnswer::drop_before_response`]: an SSE answer that sends its messages, then hangs up
//!   before the response, which is then only reachable by `GET` + `Last-Event-ID`.
//! - [`ToolAnswer::never_answers`]: accepts and holds, not a byte sent, until the client leaves or
//!   the server is dropped. [`ToolAnswer::hang_up`]: closes without answering.
//! - [`ToolAnswer::huge_header`]`(n)` / [`ToolAnswer::many_headers`]`(n)`: one header with an
//!   `n`-byte value / `n` extra headers.
//! - [`ToolAnswer::http`]: any status, type and body; [`ToolAnswer::rpc_error`]; progress and any
//!   message before the response over SSE ([`ToolAnswer::with_progress`],
//!   [`ToolAnswer::with_messages`]); [`ToolAnswer::with_header`] (`Retry-After`, `WWW-Authenticate`…);
//!   [`ToolAnswer::after_release`] holds an answer on a [`Gate`].
//!
//! Sockets: [`McpHttpServer::open_connections`] counts live TCP connections (a connection is gone
//! once the server closed its socket, which it does as soon as the client closed its side, even
//! mid-hold), [`McpHttpServer::wait_for_open_connections_at_most`] waits for the count to fall.
//! Dropping the server shuts every socket down, releases every gate and joins its threads (5 s at
//! most, then leaves stragglers detached).

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use crate::openai::Gate;

/// The protocol version `initialize` answers unless the script says otherwise.
pub const PROTOCOL_VERSION: &str = "2025-03-26";

/// Largest request head read: 64 KiB (bytes); more answers 431 and closes.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body read: 16 MiB (bytes); more answers 413 and closes.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Longest chunk-size line of a chunked request body (bytes).
const MAX_CHUNK_LINE_BYTES: u64 = 1024;
/// After a refusal, how long and how much the server keeps reading before it closes.
const LINGER_TIMEOUT: Duration = Duration::from_millis(200);
const LINGER_BYTES: u64 = 1024 * 1024;
/// Connections served at once; one more is accepted and closed at once.
const MAX_CONNECTIONS: usize = 256;
/// Block size for generated bodies: what the server holds of a body of any size (bytes).
const WRITE_BLOCK_BYTES: usize = 64 * 1024;
/// How often a holding connection looks for its client closing or the server stopping.
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long dropping the server waits for its threads.
const JOIN_DEADLINE: Duration = Duration::from_secs(5);
/// The byte generated bodies are made of.
const FILLER: u8 = b'x';
/// The byte a gzip bomb inflates to after its JSON head: whitespace, so a JSON reader keeps going.
const BOMB_FILL: u8 = b' ';

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct McpHttpRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body parsed as JSON, when it parses.
    pub json: Option<Value>,
}

impl McpHttpRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
    }

    /// The `Mcp-Session-Id` header.
    pub fn session_id(&self) -> Option<&str> {
        self.header("mcp-session-id")
    }

    /// The JSON-RPC `method` of the body, when it is a single message with one.
    pub fn rpc_method(&self) -> Option<&str> {
        self.json.as_ref()?.get("method")?.as_str()
    }
}

/// How a body of unknown length is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// `Transfer-Encoding: chunked`; the connection stays open after the body.
    #[default]
    Chunked,
    /// No length: the body ends when the server closes the connection.
    Close,
}

type Respond = Arc<dyn Fn(&Value) -> ToolAnswer + Send + Sync>;
type Guard = Arc<dyn Fn(&McpHttpRequest) -> Option<ToolAnswer> + Send + Sync>;

#[derive(Debug, Clone)]
struct Storm {
    statuses: Vec<u16>,
    times: Option<usize>,
}

/// What a [`McpHttpServer`] serves: the baseline MCP server, configured, plus per-server knobs.
#[derive(Clone)]
pub struct McpScript {
    protocol_version: String,
    instructions: Option<String>,
    tools: Vec<(Value, Respond)>,
    tool_page_size: usize,
    resources: Vec<(Value, Value)>,
    methods: Vec<(String, Respond)>,
    sessions: bool,
    get_stream: bool,
    session_expires_after: Option<usize>,
    storm: Option<Storm>,
    framing: Framing,
    guard: Option<Guard>,
}

impl fmt::Debug for McpScript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpScript")
            .field("protocol_version", &self.protocol_version)
            .field("tools", &self.tools.iter().map(|(tool, _)| tool).collect::<Vec<_>>())
            .field("methods", &self.methods.iter().map(|(method, _)| method).collect::<Vec<_>>())
            .field("sessions", &self.sessions)
            .field("get_stream", &self.get_stream)
            .field("session_expires_after", &self.session_expires_after)
            .field("storm", &self.storm)
            .field("framing", &self.framing)
            .finish_non_exhaustive()
    }
}

impl Default for McpScript {
    fn default() -> McpScript {
        McpScript::new()
    }
}

impl McpScript {
    /// A server with no tools, sessions on, the standalone GET stream on, chunked streams.
    pub fn new() -> McpScript {
        McpScript {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            instructions: None,
            tools: Vec::new(),
            tool_page_size: 0,
            resources: Vec::new(),
            methods: Vec::new(),
            sessions: true,
            get_stream: true,
            session_expires_after: None,
            storm: None,
            framing: Framing::Chunked,
            guard: None,
        }
    }

    /// Every request (any path, any method) is first shown to `guard`; an answer it returns is
    /// sent instead of the baseline's (an OAuth-protected server: `oauth_server::OAuthServer::guard`).
    pub fn guard(mut self, guard: impl Fn(&McpHttpRequest) -> Option<ToolAnswer> + Send + Sync + 'static) -> McpScript {
        self.guard = Some(Arc::new(guard));
        self
    }

    /// The `protocolVersion` `initialize` answers.
    pub fn protocol_version(mut self, version: impl Into<String>) -> McpScript {
        self.protocol_version = version.into();
        self
    }

    /// The `instructions` string `initialize` answers.
    pub fn instructions(mut self, instructions: impl Into<String>) -> McpScript {
        self.instructions = Some(instructions.into());
        self
    }

    /// Lists `tool` (its JSON as `tools/list` shows it; `name` picks the responder) and answers
    /// its calls with `respond(arguments)`. `ToolAnswer::baseline()` echoes the arguments as text.
    pub fn tool(mut self, tool: Value, respond: impl Fn(&Value) -> ToolAnswer + Send + Sync + 'static) -> McpScript {
        self.tools.push((tool, Arc::new(respond)));
        self
    }

    /// `tools/list` pages of at most `size` tools (0: one page).
    pub fn tool_page_size(mut self, size: usize) -> McpScript {
        self.tool_page_size = size;
        self
    }

    /// Lists `resource` (its JSON, with a `uri`) and answers `resources/read` of that uri with
    /// `{"contents": contents}`. Turns the resources capability on.
    pub fn resource(mut self, resource: Value, contents: Value) -> McpScript {
        self.resources.push((resource, contents));
        self
    }

    /// Answers every request (or notification) of `method` with `respond(params)`, before the
    /// baseline and the tools' responders. For `initialize` a session is still opened.
    pub fn answer_method(
        mut self,
        method: impl Into<String>,
        respond: impl Fn(&Value) -> ToolAnswer + Send + Sync + 'static,
    ) -> McpScript {
        self.methods.push((method.into(), Arc::new(respond)));
        self
    }

    /// No `Mcp-Session-Id` is issued or checked; `DELETE` answers 405.
    pub fn without_sessions(mut self) -> McpScript {
        self.sessions = false;
        self
    }

    /// `GET` answers 405 Method Not Allowed: no standalone stream.
    pub fn without_get_stream(mut self) -> McpScript {
        self.get_stream = false;
        self
    }

    /// The first session answers `requests` requests carrying its id (any method), then it is
    /// forgotten: 404 from then on. Later sessions do not expire.
    pub fn expire_session_after(mut self, requests: usize) -> McpScript {
        self.session_expires_after = Some(requests);
        self
    }

    /// A 5xx storm: the first `times` POSTs (`None`: all) answer `statuses` in turn with a
    /// `text/plain` body `storm answer <k>: <status> <reason>` (k counts from 1), before any other
    /// check. An empty list storms with 503.
    pub fn storm(mut self, statuses: &[u16], times: Option<usize>) -> McpScript {
        self.storm = Some(Storm { statuses: statuses.to_vec(), times });
        self
    }

    /// How streams (SSE, unannounced bodies) are delimited.
    pub fn framing(mut self, framing: Framing) -> McpScript {
        self.framing = framing;
        self
    }

    fn method_responder(&self, method: &str) -> Option<&Respond> {
        self.methods.iter().find(|(name, _)| name == method).map(|(_, respond)| respond)
    }

    fn tool_responder(&self, name: &str) -> Option<&Respond> {
        self.tools.iter().find(|(tool, _)| tool["name"] == name).map(|(_, respond)| respond)
    }
}

#[derive(Debug, Clone)]
enum Outcome {
    Baseline,
    Result(Value),
    Error { code: i64, message: String },
}

#[derive(Debug, Clone, Copy)]
enum HugePlace {
    Text,
    StructuredContent,
}

#[derive(Debug, Clone)]
enum AnswerBody {
    Message(Outcome),
    Huge { bytes: u64, place: HugePlace },
    EndlessSseLine,
    Redirect { status: u16, location: Option<String> },
    Http { status: u16, content_type: String, body: Vec<u8> },
    GzipBomb { inflated_bytes: u64 },
    NeverAnswers,
    HangUp,
}

/// How the server answers one request: a JSON-RPC outcome and how it is delivered, or a raw
/// HTTP behaviour. Modifiers that do not apply to an answer are ignored (documented on each).
#[derive(Debug, Clone)]
pub struct ToolAnswer {
    body: AnswerBody,
    sse: bool,
    progress: usize,
    messages: Vec<Value>,
    drop_before_response: bool,
    polled: Option<u64>,
    batch: bool,
    content_type: Option<String>,
    unannounced: bool,
    dribble: Option<Duration>,
    dribble_head: bool,
    headers: Vec<(String, String)>,
    huge_header: Option<u64>,
    many_headers: Option<usize>,
    gate: Option<Gate>,
}

impl ToolAnswer {
    fn from_body(body: AnswerBody) -> ToolAnswer {
        ToolAnswer {
            body,
            sse: false,
            progress: 0,
            messages: Vec::new(),
            drop_before_response: false,
            polled: None,
            batch: false,
            content_type: None,
            unannounced: false,
            dribble: None,
            dribble_head: false,
            headers: Vec::new(),
            huge_header: None,
            many_headers: None,
            gate: None,
        }
    }

    /// What the baseline server answers (for `tools/call` of a listed tool: its arguments echoed
    /// as text), so an override can keep the answer and change only its delivery.
    pub fn baseline() -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::Message(Outcome::Baseline))
    }

    /// A JSON-RPC result, verbatim.
    pub fn result(result: Value) -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::Message(Outcome::Result(result)))
    }

    /// A tool result of one text block.
    pub fn text(text: impl Into<String>) -> ToolAnswer {
        ToolAnswer::result(json!({"content": [{"type": "text", "text": text.into()}]}))
    }

    /// A tool result of one text block with `isError: true`.
    pub fn tool_error(text: impl Into<String>) -> ToolAnswer {
        ToolAnswer::result(json!({"content": [{"type": "text", "text": text.into()}], "isError": true}))
    }

    /// A JSON-RPC error.
    pub fn rpc_error(code: i64, message: impl Into<String>) -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::Message(Outcome::Error { code, message: message.into() }))
    }

    /// A JSON response of exactly `bytes` bytes (at least the ~80 of its frame) whose filler is
    /// the text content, generated while sent. `Content-Length` unless [`ToolAnswer::unannounced`];
    /// [`ToolAnswer::sse`] sends it as one event (the message, not the frame, is `bytes` long).
    pub fn huge_text(bytes: u64) -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::Huge { bytes, place: HugePlace::Text })
    }

    /// Like [`ToolAnswer::huge_text`] with the filler in `structuredContent.blob`.
    pub fn huge_structured_content(bytes: u64) -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::Huge { bytes, place: HugePlace::StructuredContent })
    }

    /// An SSE answer whose one event starts a response (`data: {"jsonrpc":"2.0","id":…,"result":
    /// {"content":[{"type":"text","text":"xxx…`) and never ends: no newline, bytes forever.
    pub fn endless_sse_line() -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::EndlessSseLine)
    }

    /// A redirect (`status` 301/302/307/308) to the same path on another origin: the server's
    /// second listener, [`McpHttpServer::redirect_target_url`].
    pub fn redirect(status: u16) -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::Redirect { status, location: None })
    }

    /// A redirect to any `Location`.
    pub fn redirect_to(status: u16, location: impl Into<String>) -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::Redirect { status, location: Some(location.into()) })
    }

    /// Any status, content type and body, with a `Content-Length`.
    pub fn http(status: u16, content_type: impl Into<String>, body: impl Into<Vec<u8>>) -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::Http { status, content_type: content_type.into(), body: body.into() })
    }

    /// 200, `application/json`, `Content-Encoding: gzip`: a body of about `inflated_bytes / 1032`
    /// bytes (with `Content-Length`) that inflates to exactly `inflated_bytes` (at least the ~40
    /// of its head): `{"jsonrpc":"2.0","id":<id>,"result":` and then spaces, never closed.
    pub fn gzip_bomb(inflated_bytes: u64) -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::GzipBomb { inflated_bytes })
    }

    /// Reads the request and sends nothing, not even a status line, until the client closes its
    /// side or the server is dropped.
    pub fn never_answers() -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::NeverAnswers)
    }

    /// Reads the request and closes the connection without a byte.
    pub fn hang_up() -> ToolAnswer {
        ToolAnswer::from_body(AnswerBody::HangUp)
    }

    /// Delivers a JSON-RPC answer as an SSE stream: messages first, the response last, then the
    /// stream ends. Applies to outcomes and [`ToolAnswer::huge_text`].
    pub fn sse(mut self) -> ToolAnswer {
        self.sse = true;
        self
    }

    /// Before the response, `count` `notifications/progress` for the request's progress token
    /// (none when the request has no token). Implies SSE (even with no token) unless
    /// [`ToolAnswer::batch`].
    pub fn with_progress(mut self, count: usize) -> ToolAnswer {
        self.progress = count;
        self
    }

    /// Before the response (after progress), these messages verbatim: notifications, server
    /// requests, junk. Implies SSE unless [`ToolAnswer::batch`].
    pub fn with_messages(mut self, messages: Vec<Value>) -> ToolAnswer {
        self.messages.extend(messages);
        self
    }

    /// An SSE answer that sends every event but the response, then closes the connection (a cut
    /// chunked body, or an early end with [`Framing::Close`]). The whole stream stays replayable
    /// by `GET` with `Last-Event-ID`. With no messages there is no event id to resume from.
    pub fn drop_before_response(mut self) -> ToolAnswer {
        self.drop_before_response = true;
        self.sse = true;
        self
    }

    /// SEP-1699 polling: the SSE answer is one priming event (id `<stream>-0`, `retry:
    /// <retry_ms>`, empty data), then the stream ends, cleanly. Each `GET` with `Last-Event-ID`
    /// `<stream>-<n>` gets the one event after it (with the same `retry`) and ends too, so a
    /// client reaches the response after one resumption per message before it.
    pub fn polled(mut self, retry_ms: u64) -> ToolAnswer {
        self.polled = Some(retry_ms);
        self.sse = true;
        self
    }

    /// The response inside a JSON array, after any messages: a batch answering a single request.
    pub fn batch(mut self) -> ToolAnswer {
        self.batch = true;
        self
    }

    /// Sends this `Content-Type` whatever the body is: the content-type lie.
    pub fn content_type(mut self, content_type: impl Into<String>) -> ToolAnswer {
        self.content_type = Some(content_type.into());
        self
    }

    /// A body with a known length is sent as a stream instead (no `Content-Length`).
    pub fn unannounced(mut self) -> ToolAnswer {
        self.unannounced = true;
        self
    }

    /// Sends the body one byte per `interval` (each byte its own chunk when chunked).
    pub fn dribble(mut self, interval: Duration) -> ToolAnswer {
        self.dribble = Some(interval);
        self
    }

    /// Sends the whole answer, status line included, one byte per `interval`.
    pub fn dribble_head(mut self, interval: Duration) -> ToolAnswer {
        self.dribble = Some(interval);
        self.dribble_head = true;
        self
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> ToolAnswer {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Adds `X-Huge: aaa…` with a value of `bytes` bytes, generated while sent.
    pub fn huge_header(mut self, bytes: u64) -> ToolAnswer {
        self.huge_header = Some(bytes);
        self
    }

    /// Adds `count` headers `X-Filler-<i>: <i>` (i from 1).
    pub fn many_headers(mut self, count: usize) -> ToolAnswer {
        self.many_headers = Some(count);
        self
    }

    /// Holds the answer (nothing sent) until `gate` is released, the client leaves or the server
    /// is dropped.
    pub fn after_release(mut self, gate: &Gate) -> ToolAnswer {
        self.gate = Some(gate.clone());
        self
    }
}

/// One piece of a response: small bytes held, large ones generated while written.
#[derive(Debug, Clone)]
enum Piece {
    Bytes(Vec<u8>),
    Repeat { byte: u8, count: u64 },
    Endless(u8),
    ManyHeaders(usize),
    Gzip(GzipBomb),
    HangUp,
}

impl Piece {
    /// Bytes this piece sends; `None` when it never ends or cuts the answer.
    fn length(&self) -> Option<u64> {
        match self {
            Piece::Bytes(bytes) => Some(bytes.len() as u64),
            Piece::Repeat { count, .. } => Some(*count),
            Piece::Gzip(bomb) => Some(bomb.len()),
            Piece::Endless(_) | Piece::ManyHeaders(_) | Piece::HangUp => None,
        }
    }
}

#[derive(Debug, Clone)]
struct Response {
    status: u16,
    content_type: Option<String>,
    headers: Vec<(String, String)>,
    /// Generated header lines, after `headers`.
    head_pieces: Vec<Piece>,
    body: Vec<Piece>,
    announce_length: bool,
    dribble: Option<Duration>,
    dribble_head: bool,
    gate: Option<Gate>,
}

impl Response {
    fn new(status: u16, content_type: Option<&str>, body: Vec<Piece>) -> Response {
        Response {
            status,
            content_type: content_type.map(str::to_owned),
            headers: Vec::new(),
            head_pieces: Vec::new(),
            body,
            announce_length: true,
            dribble: None,
            dribble_head: false,
            gate: None,
        }
    }

    fn json(status: u16, body: &Value) -> Response {
        Response::new(status, Some("application/json"), vec![Piece::Bytes(body.to_string().into_bytes())])
    }

    fn plain(status: u16, text: &str) -> Response {
        Response::new(status, Some("text/plain"), vec![Piece::Bytes(text.as_bytes().to_vec())])
    }

    fn accepted() -> Response {
        Response::new(202, None, Vec::new())
    }

    fn rpc_error(status: u16, code: i64, message: &str) -> Response {
        Response::json(status, &json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}))
    }

    fn with_header(mut self, name: &str, value: impl Into<String>) -> Response {
        self.headers.push((name.to_owned(), value.into()));
        self
    }
}

/// What a connection does with a request: answer it, or not.
enum Reply {
    Http(Response),
    Hold,
    HangUp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    KeepAlive,
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Mcp,
    RedirectTarget,
}

#[derive(Debug)]
struct Session {
    id: String,
    served: usize,
    expires_after: Option<usize>,
}

#[derive(Default)]
struct State {
    requests: Vec<McpHttpRequest>,
    redirect_target_requests: Vec<McpHttpRequest>,
    redirect_target_connections: usize,
    open_connections: usize,
    accepted_connections: usize,
    live_threads: usize,
    threads: Vec<JoinHandle<()>>,
    /// A clone of every live socket, so dropping the server can shut them all down.
    sockets: Vec<(u64, TcpStream)>,
    next_socket: u64,
    gates: Vec<Gate>,
    sessions: Vec<Session>,
    sessions_issued: usize,
    storm_answers: usize,
    /// The events of every SSE answer to a POST, by stream number, for `Last-Event-ID`.
    post_streams: HashMap<u64, Vec<String>>,
    /// The streams answered by polling ([`ToolAnswer::polled`]), with their `retry`.
    polled_streams: HashMap<u64, u64>,
    next_stream: u64,
    /// Every message pushed to the standalone stream, serialized.
    pushed: Vec<String>,
    /// How many of `pushed` some GET stream has taken.
    delivered: usize,
    get_generation: u64,
    shutdown: bool,
}

struct Shared {
    script: McpScript,
    redirect_target: SocketAddr,
    state: Mutex<State>,
    changed: Condvar,
    shutdown: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
}

/// A scripted MCP Streamable HTTP server on `127.0.0.1:<ephemeral>`; see the module docs.
pub struct McpHttpServer {
    address: SocketAddr,
    redirect_target: SocketAddr,
    shared: Arc<Shared>,
}

impl fmt::Debug for McpHttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpHttpServer")
            .field("address", &self.address)
            .field("redirect_target", &self.redirect_target)
            .finish_non_exhaustive()
    }
}

impl McpHttpServer {
    /// Binds the server and its redirect target on ephemeral loopback ports and starts serving.
    /// Panics when it cannot bind (a broken test machine, not a test outcome).
    pub fn start(script: McpScript) -> McpHttpServer {
        let bind = || TcpListener::bind("127.0.0.1:0").unwrap_or_else(|err| panic!("bind 127.0.0.1:0: {err}"));
        let (listener, target) = (bind(), bind());
        let local = |listener: &TcpListener| listener.local_addr().unwrap_or_else(|err| panic!("local address: {err}"));
        let (address, redirect_target) = (local(&listener), local(&target));
        let shared = Arc::new(Shared {
            script,
            redirect_target,
            state: Mutex::new(State { next_stream: 1, ..State::default() }),
            changed: Condvar::new(),
            shutdown: AtomicBool::new(false),
        });
        for (listener, role) in [(listener, Role::Mcp), (target, Role::RedirectTarget)] {
            let acceptor_shared = Arc::clone(&shared);
            let mut state = shared.lock();
            let spawned = spawn_tracked(&shared, &mut state, move |_| accept_loop(&acceptor_shared, &listener, role));
            assert!(spawned, "could not start the MCP HTTP server's acceptor thread");
        }
        McpHttpServer { address, redirect_target, shared }
    }

    /// `http://127.0.0.1:<port>/mcp`, the URL a client is configured with.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:<other port>/mcp`: where [`ToolAnswer::redirect`] points. It answers
    /// 200 with a tool result `redirect followed` (so following shows) and records everything.
    pub fn redirect_target_url(&self) -> String {
        format!("http://{}/mcp", self.redirect_target)
    }

    /// Requests that reached the redirect target.
    pub fn redirect_target_requests(&self) -> Vec<McpHttpRequest> {
        self.shared.lock().redirect_target_requests.clone()
    }

    /// TCP connections the redirect target accepted, whether or not a request followed.
    pub fn redirect_target_connections(&self) -> usize {
        self.shared.lock().redirect_target_connections
    }

    /// Every request received at the MCP listener so far, in arrival order.
    pub fn requests(&self) -> Vec<McpHttpRequest> {
        self.shared.lock().requests.clone()
    }

    /// Blocks until at least `count` requests arrived; panics after `limit` (a test failure, not
    /// a synchronisation sleep).
    pub fn wait_for_requests(&self, count: usize, limit: Duration) -> Vec<McpHttpRequest> {
        let state = self.wait_for(
            limit,
            |state| state.requests.len() >= count,
            |state| format!("{count} requests (got {})", state.requests.len()),
        );
        state.requests.clone()
    }

    /// Live TCP connections to the MCP listener right now.
    pub fn open_connections(&self) -> usize {
        self.shared.lock().open_connections
    }

    /// TCP connections the MCP listener accepted since it started.
    pub fn accepted_connections(&self) -> usize {
        self.shared.lock().accepted_connections
    }

    /// Blocks until at most `count` connections are open; panics after `limit`. With 0: proof
    /// that the client closed every socket it opened.
    pub fn wait_for_open_connections_at_most(&self, count: usize, limit: Duration) {
        let _state = self.wait_for(
            limit,
            |state| state.open_connections <= count,
            |state| format!("at most {count} open connections (still {})", state.open_connections),
        );
    }

    /// Queues `message` (any JSON-RPC message) for the standalone GET stream; a stream open now or
    /// later sends it. Returns its event id (`0-<n>`).
    pub fn push_notification(&self, message: Value) -> String {
        let mut state = self.shared.lock();
        state.pushed.push(message.to_string());
        self.shared.changed.notify_all();
        format!("0-{}", state.pushed.len())
    }

    /// How many pushed messages a GET stream has taken to send.
    pub fn delivered_notifications(&self) -> usize {
        self.shared.lock().delivered
    }

    /// Blocks until `count` pushed messages were taken by a GET stream; panics after `limit`.
    pub fn wait_for_delivered_notifications(&self, count: usize, limit: Duration) {
        let _state = self.wait_for(
            limit,
            |state| state.delivered >= count,
            |state| format!("{count} delivered notifications (got {})", state.delivered),
        );
    }

    /// Forgets every session now: their ids answer 404 from the next request on.
    pub fn expire_sessions(&self) {
        self.shared.lock().sessions.clear();
    }

    /// Ids of the sessions the server knows now, oldest first.
    pub fn live_sessions(&self) -> Vec<String> {
        self.shared.lock().sessions.iter().map(|session| session.id.clone()).collect()
    }

    /// Ends every open GET stream cleanly (within the poll interval); later GETs open new ones.
    pub fn close_get_streams(&self) {
        self.shared.lock().get_generation += 1;
    }

    fn wait_for(
        &self,
        limit: Duration,
        ready: impl Fn(&State) -> bool,
        describe: impl Fn(&State) -> String,
    ) -> MutexGuard<'_, State> {
        let deadline = Instant::now() + limit;
        let mut state = self.shared.lock();
        while !ready(&state) {
            let now = Instant::now();
            assert!(now < deadline, "waited {limit:?} for {}", describe(&state));
            state = self.shared.changed.wait_timeout(state, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
        state
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.shutdown = true;
            self.shared.shutdown.store(true, Ordering::SeqCst);
            for gate in &state.gates {
                gate.release();
            }
            for (_, socket) in &state.sockets {
                let _ = socket.shutdown(Shutdown::Both);
            }
            self.shared.changed.notify_all();
        }
        // Wake the blocking accepts so the acceptors see the flag.
        for address in [self.address, self.redirect_target] {
            let _ = TcpStream::connect_timeout(&address, Duration::from_secs(1));
        }
        let deadline = Instant::now() + JOIN_DEADLINE;
        let mut state = self.shared.lock();
        while state.live_threads > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self.shared.changed.wait_timeout(state, deadline - now).unwrap_or_else(PoisonError::into_inner).0;
        }
        let threads = std::mem::take(&mut state.threads);
        drop(state);
        for thread in threads {
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// Counts a thread alive until it ends, however it ends.
struct ThreadAlive<'a>(&'a Shared);

impl Drop for ThreadAlive<'_> {
    fn drop(&mut self) {
        self.0.lock().live_threads -= 1;
        self.0.changed.notify_all();
    }
}

/// Counts a connection open until its thread let go of the socket.
struct OpenConnection<'a> {
    shared: &'a Shared,
    socket: u64,
    role: Role,
}

impl Drop for OpenConnection<'_> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.sockets.retain(|(socket, _)| *socket != self.socket);
        if self.role == Role::Mcp {
            state.open_connections -= 1;
        }
        self.shared.changed.notify_all();
    }
}

/// Spawns `work` on a thread the server joins on drop; false when no thread could be made.
fn spawn_tracked(shared: &Arc<Shared>, state: &mut State, work: impl FnOnce(&Shared) + Send + 'static) -> bool {
    let thread_shared = Arc::clone(shared);
    state.live_threads += 1;
    let spawned = std::thread::Builder::new().name("mcp-http-server".to_owned()).spawn(move || {
        let _alive = ThreadAlive(&thread_shared);
        work(&thread_shared);
    });
    match spawned {
        Ok(thread) => {
            state.threads.push(thread);
            true
        }
        Err(_) => {
            state.live_threads -= 1;
            false
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener, role: Role) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            if shared.is_shut_down() {
                break;
            }
            // Out of descriptors or the like: do not spin.
            std::thread::sleep(POLL_INTERVAL);
            continue;
        };
        let mut state = shared.lock();
        if state.shutdown {
            break;
        }
        state.threads.retain(|thread| !thread.is_finished());
        if role == Role::RedirectTarget {
            state.redirect_target_connections += 1;
        } else {
            state.accepted_connections += 1;
        }
        if state.sockets.len() >= MAX_CONNECTIONS {
            continue;
        }
        let Ok(registered) = stream.try_clone() else { continue };
        let socket = state.next_socket;
        state.next_socket += 1;
        state.sockets.push((socket, registered));
        if role == Role::Mcp {
            state.open_connections += 1;
        }
        let spawned = spawn_tracked(shared, &mut state, move |shared| {
            let _open = OpenConnection { shared, socket, role };
            match role {
                Role::Mcp => serve_connection(stream, shared),
                Role::RedirectTarget => serve_redirect_target(stream, shared),
            }
        });
        if !spawned {
            state.sockets.retain(|(registered, _)| *registered != socket);
            if role == Role::Mcp {
                state.open_connections -= 1;
            }
        }
        shared.changed.notify_all();
    }
}

/// Serves requests on one connection until the client closes it, an answer ends it or the
/// server stops.
fn serve_connection(stream: TcpStream, shared: &Shared) {
    // A head and a body written apart must not wait for the client's delayed ACK (40 ms a
    // round trip): the server would measure the kernel, not the client.
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    loop {
        if shared.is_shut_down() || stream.set_read_timeout(None).is_err() {
            break;
        }
        let request = match read_request(&mut reader) {
            Ok(request) => request,
            Err(failure) => {
                if let Some(response) = failure.response() {
                    let _ = send(&stream, shared, &response);
                    linger(&stream, &mut reader);
                }
                break;
            }
        };
        let client_closes = request.header("connection").is_some_and(|value| value.eq_ignore_ascii_case("close"));
        {
            shared.lock().requests.push(request.clone());
            shared.changed.notify_all();
        }
        let flow = route(&stream, shared, &request);
        if flow == Flow::Close || client_closes {
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// After refusing a request: stops sending and reads (and drops) what the client still sends, a
/// bounded amount for a bounded time, so closing with unread bytes does not reset the connection
/// and destroy the refusal before the client reads it.
fn linger(stream: &TcpStream, reader: &mut BufReader<TcpStream>) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + LINGER_TIMEOUT;
    let mut left = LINGER_BYTES;
    let mut buffer = [0u8; 8192];
    while left > 0 {
        let now = Instant::now();
        if now >= deadline || stream.set_read_timeout(Some(deadline - now)).is_err() {
            return;
        }
        match reader.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => left = left.saturating_sub(read as u64),
        }
    }
}

/// The redirect target: records each request and answers with a tool result, so a client that
/// follows the redirect gets a visibly different outcome.
fn serve_redirect_target(stream: TcpStream, shared: &Shared) {
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    if let Ok(request) = read_request(&mut reader) {
        let id = request.json.as_ref().and_then(|message| message.get("id").cloned()).unwrap_or(Value::Null);
        {
            shared.lock().redirect_target_requests.push(request);
            shared.changed.notify_all();
        }
        let answer =
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "redirect followed"}]}});
        let _ = send(&stream, shared, &Response::json(200, &answer).with_header("Connection", "close"));
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn route(stream: &TcpStream, shared: &Shared, request: &McpHttpRequest) -> Flow {
    if let Some(guard) = &shared.script.guard
        && let Some(refusal) = guard(request)
    {
        let call = Call { id: None, method: "", params: &Value::Null, session: None };
        return answer(stream, shared, render(shared, &refusal, &call));
    }
    let path = request.path.split('?').next().unwrap_or_default();
    if path != "/mcp" {
        return answer(stream, shared, Reply::Http(Response::plain(404, "no MCP endpoint at this path")));
    }
    match request.method.as_str() {
        "POST" => post(stream, shared, request),
        "GET" => get(stream, shared, request),
        "DELETE" => answer(stream, shared, Reply::Http(delete(shared, request))),
        _ => answer(
            stream,
            shared,
            Reply::Http(Response::plain(405, "method not allowed").with_header("Allow", "GET, POST, DELETE")),
        ),
    }
}

/// Writes a reply; what the connection does next.
fn answer(stream: &TcpStream, shared: &Shared, reply: Reply) -> Flow {
    match reply {
        Reply::HangUp => Flow::Close,
        Reply::Hold => {
            let _ = hold(stream, shared, None, || false);
            Flow::Close
        }
        Reply::Http(response) => {
            if let Some(gate) = &response.gate {
                shared.lock().gates.push(gate.clone());
                if hold(stream, shared, None, || gate.is_open()) != Held::Done {
                    return Flow::Close;
                }
            }
            send(stream, shared, &response).unwrap_or(Flow::Close)
        }
    }
}

fn header_lists(request: &McpHttpRequest, name: &str, wanted: &str) -> bool {
    request.header(name).is_some_and(|value| value.to_ascii_lowercase().contains(wanted))
}

fn post(stream: &TcpStream, shared: &Shared, request: &McpHttpRequest) -> Flow {
    let refusal = if let Some(response) = storm_answer(shared) {
        Some(response)
    } else if !header_lists(request, "content-type", "application/json") {
        Some(Response::rpc_error(415, -32000, "Unsupported Media Type: Content-Type must be application/json"))
    } else if !header_lists(request, "accept", "application/json")
        || !header_lists(request, "accept", "text/event-stream")
    {
        Some(Response::rpc_error(
            406,
            -32000,
            "Not Acceptable: Accept must list application/json and text/event-stream",
        ))
    } else {
        None
    };
    if let Some(response) = refusal {
        return answer(stream, shared, Reply::Http(response));
    }
    let Some(message) = &request.json else {
        return answer(stream, shared, Reply::Http(Response::rpc_error(400, -32700, "Parse error")));
    };
    if let Value::Array(messages) = message {
        return answer(stream, shared, Reply::Http(answer_batch(shared, request, messages)));
    }
    if !message.is_object() {
        return answer(stream, shared, Reply::Http(Response::rpc_error(400, -32600, "Invalid Request")));
    }
    let method = message.get("method").and_then(Value::as_str);
    let session = match open_or_check_session(shared, request, method == Some("initialize")) {
        Ok(session) => session,
        Err(response) => return answer(stream, shared, Reply::Http(*response)),
    };
    let Some(method) = method else {
        let is_response =
            message.get("id").is_some() && (message.get("result").is_some() || message.get("error").is_some());
        let response =
            if is_response { Response::accepted() } else { Response::rpc_error(400, -32600, "Invalid Request") };
        return answer(stream, shared, Reply::Http(response));
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let call = Call { id: message.get("id").cloned(), method, params: &params, session };
    let tool_answer = answer_for(&shared.script, method, &params);
    answer(stream, shared, render(shared, &tool_answer, &call))
}

/// The request being answered.
struct Call<'a> {
    /// `None` for a notification.
    id: Option<Value>,
    method: &'a str,
    params: &'a Value,
    /// The session id to announce (on `initialize`).
    session: Option<String>,
}

/// The method override, else the tool's responder for `tools/call`, else the baseline.
fn answer_for(script: &McpScript, method: &str, params: &Value) -> ToolAnswer {
    if let Some(respond) = script.method_responder(method) {
        return respond(params);
    }
    if method == "tools/call"
        && let Some(respond) = params.get("name").and_then(Value::as_str).and_then(|name| script.tool_responder(name))
    {
        let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
        return respond(&arguments);
    }
    ToolAnswer::baseline()
}

/// The storm's answer to this POST, while the storm lasts.
fn storm_answer(shared: &Shared) -> Option<Response> {
    let storm = shared.script.storm.as_ref()?;
    let mut state = shared.lock();
    if storm.times.is_some_and(|times| state.storm_answers >= times) {
        return None;
    }
    let answered = state.storm_answers;
    state.storm_answers += 1;
    let status = if storm.statuses.is_empty() { 503 } else { storm.statuses[answered % storm.statuses.len()] };
    Some(Response::plain(status, &format!("storm answer {}: {status} {}", answered + 1, reason_phrase(status))))
}

/// On `initialize` opens a session (its id to announce); otherwise checks the request's session:
/// missing 400, unknown or expired 404.
fn open_or_check_session(
    shared: &Shared,
    request: &McpHttpRequest,
    initialize: bool,
) -> Result<Option<String>, Box<Response>> {
    if !shared.script.sessions {
        return Ok(None);
    }
    let mut state = shared.lock();
    if initialize {
        state.sessions_issued += 1;
        let id = format!("session-{}", state.sessions_issued);
        let expires_after = if state.sessions_issued == 1 { shared.script.session_expires_after } else { None };
        state.sessions.push(Session { id: id.clone(), served: 0, expires_after });
        return Ok(Some(id));
    }
    check_session(&mut state, request).map(|()| None)
}

fn check_session(state: &mut State, request: &McpHttpRequest) -> Result<(), Box<Response>> {
    let Some(id) = request.session_id() else {
        return Err(Box::new(Response::rpc_error(400, -32000, "Bad Request: Mcp-Session-Id header is required")));
    };
    let not_found = || Box::new(Response::rpc_error(404, -32001, "Session not found"));
    let Some(index) = state.sessions.iter().position(|session| session.id == id) else { return Err(not_found()) };
    let session = &mut state.sessions[index];
    if session.expires_after.is_some_and(|limit| session.served >= limit) {
        state.sessions.remove(index);
        return Err(not_found());
    }
    session.served += 1;
    Ok(())
}

fn delete(shared: &Shared, request: &McpHttpRequest) -> Response {
    if !shared.script.sessions {
        return Response::plain(405, "sessions are not used").with_header("Allow", "GET, POST");
    }
    let mut state = shared.lock();
    if let Err(response) = check_session(&mut state, request) {
        return *response;
    }
    state.sessions.retain(|session| Some(session.id.as_str()) != request.session_id());
    Response::new(200, None, Vec::new())
}

fn answer_batch(shared: &Shared, request: &McpHttpRequest, messages: &[Value]) -> Response {
    let initialize = messages.iter().any(|message| message.get("method").and_then(Value::as_str) == Some("initialize"));
    let session = match open_or_check_session(shared, request, initialize) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    let mut answers = Vec::new();
    for message in messages {
        let (Some(method), Some(id)) = (message.get("method").and_then(Value::as_str), message.get("id")) else {
            continue;
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let outcome = match answer_for(&shared.script, method, &params).body {
            AnswerBody::Message(outcome) => outcome,
            _ => Outcome::Error { code: -32603, message: "this answer cannot be part of a batch".to_owned() },
        };
        answers.push(response_message(id, resolve(&shared.script, &outcome, method, &params)));
    }
    let mut response =
        if answers.is_empty() { Response::accepted() } else { Response::json(200, &Value::Array(answers)) };
    if let Some(session) = session {
        response = response.with_header("Mcp-Session-Id", session);
    }
    response
}

type RpcOutcome = Result<Value, (i64, String)>;

fn resolve(script: &McpScript, outcome: &Outcome, method: &str, params: &Value) -> RpcOutcome {
    match outcome {
        Outcome::Baseline => baseline_outcome(script, method, params),
        Outcome::Result(result) => Ok(result.clone()),
        Outcome::Error { code, message } => Err((*code, message.clone())),
    }
}

fn response_message(id: &Value, outcome: RpcOutcome) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    }
}

/// What a correct MCP server answers.
fn baseline_outcome(script: &McpScript, method: &str, params: &Value) -> RpcOutcome {
    match method {
        "initialize" => Ok(initialize_result(script)),
        "ping" => Ok(json!({})),
        "tools/list" => tools_page(script, params),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
            if script.tool_responder(name).is_none() {
                return Err((-32602, format!("Unknown tool: {name}")));
            }
            let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
            Ok(json!({"content": [{"type": "text", "text": arguments.to_string()}]}))
        }
        "resources/list" => {
            Ok(json!({"resources": script.resources.iter().map(|(resource, _)| resource.clone()).collect::<Vec<_>>()}))
        }
        "resources/read" => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or_default();
            match script.resources.iter().find(|(resource, _)| resource["uri"] == uri) {
                Some((_, contents)) => Ok(json!({"contents": contents})),
                None => Err((-32002, format!("Resource not found: {uri}"))),
            }
        }
        _ => Err((-32601, format!("Method not found: {method}"))),
    }
}

fn initialize_result(script: &McpScript) -> Value {
    let mut capabilities = json!({"tools": {"listChanged": true}});
    if !script.resources.is_empty() {
        capabilities["resources"] = json!({"listChanged": false});
    }
    let mut result = json!({
        "protocolVersion": script.protocol_version,
        "capabilities": capabilities,
        "serverInfo": {"name": "odek-test-mcp-http", "version": env!("CARGO_PKG_VERSION")},
    });
    if let Some(instructions) = &script.instructions {
        result["instructions"] = Value::from(instructions.as_str());
    }
    result
}

fn tools_page(script: &McpScript, params: &Value) -> RpcOutcome {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(cursor) => match cursor.as_str().and_then(|cursor| cursor.parse::<usize>().ok()) {
            Some(start) if start <= script.tools.len() => start,
            _ => return Err((-32602, format!("Invalid cursor: {cursor}"))),
        },
    };
    let size = if script.tool_page_size == 0 { script.tools.len() } else { script.tool_page_size };
    let end = start.saturating_add(size).min(script.tools.len());
    let tools: Vec<Value> = script.tools[start..end].iter().map(|(tool, _)| tool.clone()).collect();
    let mut page = json!({"tools": tools});
    if end < script.tools.len() {
        page["nextCursor"] = Value::from(end.to_string());
    }
    Ok(page)
}

/// One SSE event with its id.
fn sse_frame(stream: u64, sequence: usize, data: &str) -> Vec<u8> {
    format!("event: message\nid: {stream}-{sequence}\ndata: {data}\n\n").into_bytes()
}

fn next_stream_number(shared: &Shared) -> u64 {
    let mut state = shared.lock();
    let stream = state.next_stream;
    state.next_stream += 1;
    stream
}

/// Turns an answer into what the connection sends.
fn render(shared: &Shared, answer: &ToolAnswer, call: &Call<'_>) -> Reply {
    let id = call.id.clone().unwrap_or(Value::Null);
    let mut response = match &answer.body {
        AnswerBody::NeverAnswers => return Reply::Hold,
        AnswerBody::HangUp => return Reply::HangUp,
        AnswerBody::Message(outcome) => message_response(shared, answer, call, outcome),
        AnswerBody::Huge { bytes, place } => huge_response(shared, answer, &id, *bytes, *place),
        AnswerBody::EndlessSseLine => {
            let stream = next_stream_number(shared);
            let head = format!(
                r#"event: message
id: {stream}-1
data: {{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
            );
            sse_response(vec![Piece::Bytes(head.into_bytes()), Piece::Endless(FILLER)])
        }
        AnswerBody::Redirect { status, location } => {
            let location = location.clone().unwrap_or_else(|| format!("http://{}/mcp", shared.redirect_target));
            Response::plain(*status, &format!("moved to {location}")).with_header("Location", location)
        }
        AnswerBody::Http { status, content_type, body } => {
            Response::new(*status, Some(content_type), vec![Piece::Bytes(body.clone())])
        }
        AnswerBody::GzipBomb { inflated_bytes } => {
            let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#);
            let bomb = GzipBomb::new(head.as_bytes(), inflated_bytes.saturating_sub(head.len() as u64));
            Response::new(200, Some("application/json"), vec![Piece::Gzip(bomb)])
                .with_header("Content-Encoding", "gzip")
        }
    };
    if let Some(content_type) = &answer.content_type {
        response.content_type = Some(content_type.clone());
    }
    if let Some(session) = &call.session {
        response.headers.push(("Mcp-Session-Id".to_owned(), session.clone()));
    }
    response.headers.extend(answer.headers.iter().cloned());
    if let Some(bytes) = answer.huge_header {
        response.head_pieces.extend([
            Piece::Bytes(b"X-Huge: ".to_vec()),
            Piece::Repeat { byte: b'a', count: bytes },
            Piece::Bytes(b"\r\n".to_vec()),
        ]);
    }
    if let Some(count) = answer.many_headers {
        response.head_pieces.push(Piece::ManyHeaders(count));
    }
    if answer.unannounced {
        response.announce_length = false;
    }
    response.dribble = answer.dribble;
    response.dribble_head = answer.dribble_head;
    response.gate.clone_from(&answer.gate);
    Reply::Http(response)
}

fn sse_response(body: Vec<Piece>) -> Response {
    let mut response = Response::new(200, Some("text/event-stream"), body).with_header("Cache-Control", "no-cache");
    response.announce_length = false;
    response
}

fn message_response(shared: &Shared, answer: &ToolAnswer, call: &Call<'_>, outcome: &Outcome) -> Response {
    let Some(id) = &call.id else {
        if matches!(outcome, Outcome::Baseline) {
            return Response::accepted();
        }
        let message = response_message(&Value::Null, resolve(&shared.script, outcome, call.method, call.params));
        return Response::json(200, &message);
    };
    let response = response_message(id, resolve(&shared.script, outcome, call.method, call.params));
    let mut messages = progress_notifications(call.params, answer.progress);
    messages.extend(answer.messages.iter().cloned());
    if answer.batch {
        messages.push(response);
        let batch = Value::Array(messages);
        return if answer.sse { sse_stream(shared, &[batch], answer) } else { Response::json(200, &batch) };
    }
    if answer.sse || answer.progress > 0 || !messages.is_empty() {
        messages.push(response);
        return sse_stream(shared, &messages, answer);
    }
    Response::json(200, &response)
}

fn progress_notifications(params: &Value, count: usize) -> Vec<Value> {
    let Some(token) = params.pointer("/_meta/progressToken") else { return Vec::new() };
    (1..=count)
        .map(|step| {
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": token, "progress": step, "total": count}})
        })
        .collect()
}

/// An SSE answer of these messages, logged for replay: all of them, all but the last before a
/// hang-up ([`ToolAnswer::drop_before_response`]), or only a priming event
/// ([`ToolAnswer::polled`]).
fn sse_stream(shared: &Shared, messages: &[Value], answer: &ToolAnswer) -> Response {
    let frames: Vec<String> = messages.iter().map(Value::to_string).collect();
    let stream = {
        let mut state = shared.lock();
        let stream = state.next_stream;
        state.next_stream += 1;
        state.post_streams.insert(stream, frames.clone());
        if let Some(retry_ms) = answer.polled {
            state.polled_streams.insert(stream, retry_ms);
        }
        stream
    };
    if let Some(retry_ms) = answer.polled {
        return sse_response(vec![Piece::Bytes(format!("id: {stream}-0\nretry: {retry_ms}\ndata: \n\n").into_bytes())]);
    }
    let mut body: Vec<Piece> =
        frames.iter().enumerate().map(|(index, data)| Piece::Bytes(sse_frame(stream, index + 1, data))).collect();
    if answer.drop_before_response {
        body.pop();
        body.push(Piece::HangUp);
    }
    sse_response(body)
}

fn huge_response(shared: &Shared, answer: &ToolAnswer, id: &Value, bytes: u64, place: HugePlace) -> Response {
    let (head, tail) = match place {
        HugePlace::Text => {
            (format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#), r#""}]}}"#)
        }
        HugePlace::StructuredContent => (
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"see structuredContent"}}],"structuredContent":{{"blob":""#
            ),
            r#""}}}"#,
        ),
    };
    let filler = bytes.saturating_sub((head.len() + tail.len()) as u64);
    if answer.sse {
        let stream = next_stream_number(shared);
        let head = format!("event: message\nid: {stream}-1\ndata: {head}");
        return sse_response(vec![
            Piece::Bytes(head.into_bytes()),
            Piece::Repeat { byte: FILLER, count: filler },
            Piece::Bytes(format!("{tail}\n\n").into_bytes()),
        ]);
    }
    Response::new(
        200,
        Some("application/json"),
        vec![
            Piece::Bytes(head.into_bytes()),
            Piece::Repeat { byte: FILLER, count: filler },
            Piece::Bytes(tail.as_bytes().to_vec()),
        ],
    )
}

/// Where a `Last-Event-ID` points.
enum Resume {
    Standalone(usize),
    Post { stream: u64, after: usize },
}

fn parse_last_event_id(state: &State, id: &str) -> Option<Resume> {
    let (stream, sequence) = id.trim().split_once('-')?;
    let (stream, after) = (stream.parse::<u64>().ok()?, sequence.parse::<usize>().ok()?);
    if stream == 0 {
        return (after <= state.pushed.len()).then_some(Resume::Standalone(after));
    }
    let events = state.post_streams.get(&stream)?;
    (after <= events.len()).then_some(Resume::Post { stream, after })
}

fn get(stream: &TcpStream, shared: &Shared, request: &McpHttpRequest) -> Flow {
    if !header_lists(request, "accept", "text/event-stream") {
        let response = Response::rpc_error(406, -32000, "Not Acceptable: Accept must list text/event-stream");
        return answer(stream, shared, Reply::Http(response));
    }
    let resume = {
        let mut state = shared.lock();
        if shared.script.sessions
            && let Err(response) = check_session(&mut state, request)
        {
            drop(state);
            return answer(stream, shared, Reply::Http(*response));
        }
        if !shared.script.get_stream {
            drop(state);
            let response = Response::plain(405, "no standalone stream").with_header("Allow", "POST, DELETE");
            return answer(stream, shared, Reply::Http(response));
        }
        match request.header("last-event-id") {
            None => None,
            Some(id) => match parse_last_event_id(&state, id) {
                Some(resume) => Some(resume),
                None => {
                    drop(state);
                    let response = Response::plain(400, &format!("unknown Last-Event-ID {id}"));
                    return answer(stream, shared, Reply::Http(response));
                }
            },
        }
    };
    match resume {
        Some(Resume::Post { stream: number, after }) => {
            let (frames, polled) = {
                let state = shared.lock();
                let frames = state.post_streams.get(&number).cloned().unwrap_or_default();
                (frames, state.polled_streams.get(&number).copied())
            };
            let events = frames.iter().enumerate().skip(after).take(if polled.is_some() { 1 } else { usize::MAX });
            let mut body: Vec<Piece> =
                events.map(|(index, data)| Piece::Bytes(sse_frame(number, index + 1, data))).collect();
            if let Some(retry_ms) = polled {
                body.insert(0, Piece::Bytes(format!("retry: {retry_ms}\n\n").into_bytes()));
            }
            answer(stream, shared, Reply::Http(sse_response(body)))
        }
        Some(Resume::Standalone(after)) => standalone_stream(stream, shared, Some(after)),
        None => standalone_stream(stream, shared, None),
    }
}

/// The next event a standalone stream sends: a replayed one, else the oldest one no stream took.
fn next_pushed(state: &mut State, next: &mut Option<usize>) -> Option<(usize, String)> {
    if let Some(index) = *next
        && index < state.delivered
    {
        *next = Some(index + 1);
        return Some((index, state.pushed[index].clone()));
    }
    if state.delivered < state.pushed.len() {
        let index = state.delivered;
        state.delivered += 1;
        *next = Some(state.delivered);
        return Some((index, state.pushed[index].clone()));
    }
    None
}

fn standalone_stream(stream: &TcpStream, shared: &Shared, mut next: Option<usize>) -> Flow {
    let framing = shared.script.framing;
    let head = sse_response(Vec::new());
    let generation = shared.lock().get_generation;
    let Ok(mut sink) = send_head(stream, shared, &head) else { return Flow::Close };
    loop {
        let event = {
            let mut state = shared.lock();
            if state.get_generation != generation {
                drop(state);
                return match sink.finish() {
                    Ok(()) if framing == Framing::Chunked => Flow::KeepAlive,
                    _ => Flow::Close,
                };
            }
            let event = next_pushed(&mut state, &mut next);
            if event.is_some() {
                shared.changed.notify_all();
            }
            event
        };
        match event {
            Some((index, data)) => {
                if sink.body(&sse_frame(0, index + 1, &data)).is_err() {
                    return Flow::Close;
                }
            }
            None => {
                if hold(stream, shared, Some(Instant::now() + POLL_INTERVAL), || false) != Held::Elapsed {
                    return Flow::Close;
                }
            }
        }
    }
}

/// Writes the response; what the connection does next.
fn send(stream: &TcpStream, shared: &Shared, response: &Response) -> io::Result<Flow> {
    let mut sink = send_head(stream, shared, response)?;
    for piece in &response.body {
        if !write_body_piece(&mut sink, piece)? {
            return Ok(Flow::Close);
        }
    }
    sink.finish()?;
    Ok(if sink.framing == Some(Framing::Close) { Flow::Close } else { Flow::KeepAlive })
}

/// Writes the status line and headers; the sink then frames the body.
fn send_head<'a>(stream: &'a TcpStream, shared: &'a Shared, response: &Response) -> io::Result<Sink<'a>> {
    let length: Option<u64> =
        if response.announce_length { response.body.iter().map(Piece::length).sum() } else { None };
    let framing = if length.is_some() { None } else { Some(shared.script.framing) };
    let mut head = format!("HTTP/1.1 {} {}\r\n", response.status, reason_phrase(response.status));
    if let Some(content_type) = &response.content_type {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    match (length, framing) {
        (Some(length), _) => head.push_str(&format!("Content-Length: {length}\r\n")),
        (None, Some(Framing::Close)) => head.push_str("Connection: close\r\n"),
        (None, _) => head.push_str("Transfer-Encoding: chunked\r\n"),
    }
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let mut sink = Sink {
        stream,
        shared,
        dribble: response.dribble,
        dribble_head: response.dribble_head,
        framing,
        sent_any: false,
    };
    sink.head(head.as_bytes())?;
    for piece in &response.head_pieces {
        write_head_piece(&mut sink, piece)?;
    }
    sink.head(b"\r\n")?;
    Ok(sink)
}

fn write_head_piece(sink: &mut Sink<'_>, piece: &Piece) -> io::Result<()> {
    match piece {
        Piece::Bytes(bytes) => sink.head(bytes),
        Piece::Repeat { byte, count } => repeat(*byte, *count, |block| sink.head(block)),
        Piece::ManyHeaders(count) => {
            for index in 1..=*count {
                sink.head(format!("X-Filler-{index}: {index}\r\n").as_bytes())?;
            }
            Ok(())
        }
        Piece::Endless(_) | Piece::Gzip(_) | Piece::HangUp => Ok(()),
    }
}

/// Writes one body piece; false when the answer ends here by hanging up.
fn write_body_piece(sink: &mut Sink<'_>, piece: &Piece) -> io::Result<bool> {
    match piece {
        Piece::Bytes(bytes) => sink.body(bytes)?,
        Piece::Repeat { byte, count } => repeat(*byte, *count, |block| sink.body(block))?,
        Piece::Endless(byte) => {
            let block = vec![*byte; WRITE_BLOCK_BYTES];
            loop {
                sink.body(&block)?;
            }
        }
        Piece::Gzip(bomb) => bomb.write(|bytes| sink.body(bytes))?,
        Piece::ManyHeaders(_) => {}
        Piece::HangUp => return Ok(false),
    }
    Ok(true)
}

/// Hands `count` copies of `byte` to `write` in blocks of at most [`WRITE_BLOCK_BYTES`].
fn repeat(byte: u8, count: u64, mut write: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
    let block = vec![byte; WRITE_BLOCK_BYTES.min(usize::try_from(count).unwrap_or(usize::MAX))];
    let mut left = count;
    while left > 0 {
        let size = block.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        write(&block[..size])?;
        left -= size as u64;
    }
    Ok(())
}

/// Writes a response to the socket: framing, dribbling, and stopping when the server stops.
struct Sink<'a> {
    stream: &'a TcpStream,
    shared: &'a Shared,
    dribble: Option<Duration>,
    dribble_head: bool,
    /// `None` when the body has a `Content-Length`.
    framing: Option<Framing>,
    sent_any: bool,
}

impl Sink<'_> {
    fn head(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.dribble_head { self.dribbled(bytes, false) } else { self.write(bytes) }
    }

    fn body(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let chunked = self.framing == Some(Framing::Chunked);
        if self.dribble.is_some() {
            return self.dribbled(bytes, chunked);
        }
        if chunked {
            self.write(format!("{:x}\r\n", bytes.len()).as_bytes())?;
            self.write(bytes)?;
            self.write(b"\r\n")
        } else {
            self.write(bytes)
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.framing == Some(Framing::Chunked) {
            self.write(b"0\r\n\r\n")?;
        }
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.shared.is_shut_down() {
            return Err(io::Error::from(io::ErrorKind::ConnectionAborted));
        }
        let mut stream = self.stream;
        stream.write_all(bytes)?;
        self.sent_any = true;
        Ok(())
    }

    /// One byte per interval: the timer is the behaviour under test.
    fn dribbled(&mut self, bytes: &[u8], chunked: bool) -> io::Result<()> {
        let interval = self.dribble.unwrap_or_default();
        for byte in bytes {
            if self.sent_any
                && hold(self.stream, self.shared, Some(Instant::now() + interval), || false) != Held::Elapsed
            {
                return Err(io::Error::from(io::ErrorKind::ConnectionAborted));
            }
            if chunked {
                self.write(&[b'1', b'\r', b'\n', *byte, b'\r', b'\n'])?;
            } else {
                self.write(&[*byte])?;
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// The awaited condition came true.
    Done,
    /// The deadline passed.
    Elapsed,
    /// The client closed its side or the server is stopping.
    Gone,
}

/// Waits until `done()`, the deadline, the client closing its side or the server stopping,
/// whichever comes first, looking every [`POLL_INTERVAL`].
fn hold(stream: &TcpStream, shared: &Shared, until: Option<Instant>, mut done: impl FnMut() -> bool) -> Held {
    loop {
        if shared.is_shut_down() {
            return Held::Gone;
        }
        if done() {
            return Held::Done;
        }
        let mut wait = POLL_INTERVAL;
        if let Some(until) = until {
            let now = Instant::now();
            if now >= until {
                return Held::Elapsed;
            }
            wait = wait.min(until - now);
        }
        if client_gone(stream, wait) {
            return Held::Gone;
        }
    }
}

/// Waits up to `wait` for the client to close its side; true once it has.
fn client_gone(stream: &TcpStream, wait: Duration) -> bool {
    if stream.set_read_timeout(Some(wait.max(Duration::from_millis(1)))).is_err() {
        return true;
    }
    let mut probe = [0u8; 1];
    match stream.peek(&mut probe) {
        Ok(0) => true,
        Ok(_) => {
            // The client sent more (a pipelined request): it is there, and peek would not block.
            std::thread::sleep(wait);
            false
        }
        Err(err) => {
            !matches!(err.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
        }
    }
}

/// Why no request could be read.
pub(crate) enum ReadFailure {
    Closed,
    Malformed,
    HeadTooLarge,
    BodyTooLarge,
}

impl ReadFailure {
    /// What the server says before closing, if anything.
    fn response(&self) -> Option<Response> {
        match self {
            ReadFailure::Closed => None,
            ReadFailure::Malformed => {
                Some(Response::plain(400, "malformed request").with_header("Connection", "close"))
            }
            ReadFailure::HeadTooLarge => {
                Some(Response::plain(431, "request head too large").with_header("Connection", "close"))
            }
            ReadFailure::BodyTooLarge => {
                Some(Response::plain(413, "request body too large").with_header("Connection", "close"))
            }
        }
    }
}

/// Reads one request: a head of at most [`MAX_HEAD_BYTES`], a body (`Content-Length` or chunked)
/// of at most [`MAX_BODY_BYTES`].
pub(crate) fn read_request(reader: &mut BufReader<TcpStream>) -> Result<McpHttpRequest, ReadFailure> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let room = (MAX_HEAD_BYTES + 1 - head.len()) as u64;
        let read = reader.by_ref().take(room).read_until(b'\n', &mut head).map_err(|_| ReadFailure::Closed)?;
        if read == 0 {
            return Err(if head.is_empty() { ReadFailure::Closed } else { ReadFailure::Malformed });
        }
        if head.len() > MAX_HEAD_BYTES {
            return Err(ReadFailure::HeadTooLarge);
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            if before == 0 {
                head.clear();
                continue;
            }
            break;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.lines();
    let mut request_line = lines.next().unwrap_or_default().split_whitespace();
    let (Some(method), Some(path)) = (request_line.next(), request_line.next()) else {
        return Err(ReadFailure::Malformed);
    };
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let header = |name: &str| headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
    let body = if header("transfer-encoding").is_some_and(|value| value.to_ascii_lowercase().contains("chunked")) {
        read_chunked_body(reader)?
    } else {
        let length = match header("content-length") {
            None => 0,
            Some(value) => value.parse::<usize>().map_err(|_| ReadFailure::Malformed)?,
        };
        if length > MAX_BODY_BYTES {
            return Err(ReadFailure::BodyTooLarge);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).map_err(|_| ReadFailure::Closed)?;
        body
    };
    let json = serde_json::from_slice(&body).ok();
    Ok(McpHttpRequest { method: method.to_owned(), path: path.to_owned(), headers, body, json })
}

fn read_chunked_body(reader: &mut BufReader<TcpStream>) -> Result<Vec<u8>, ReadFailure> {
    let mut body = Vec::new();
    loop {
        let mut line = Vec::new();
        reader.by_ref().take(MAX_CHUNK_LINE_BYTES).read_until(b'\n', &mut line).map_err(|_| ReadFailure::Closed)?;
        let line = String::from_utf8_lossy(&line);
        let size = line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size, 16).map_err(|_| ReadFailure::Malformed)?;
        if size == 0 {
            // Trailer lines, up to the blank one.
            loop {
                let mut trailer = Vec::new();
                let read = reader
                    .by_ref()
                    .take(MAX_CHUNK_LINE_BYTES)
                    .read_until(b'\n', &mut trailer)
                    .map_err(|_| ReadFailure::Closed)?;
                if read == 0 || trailer == b"\r\n" || trailer == b"\n" {
                    return Ok(body);
                }
            }
        }
        if body.len().saturating_add(size) > MAX_BODY_BYTES {
            return Err(ReadFailure::BodyTooLarge);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).map_err(|_| ReadFailure::Closed)?;
        let mut line_end = [0u8; 2];
        reader.read_exact(&mut line_end).map_err(|_| ReadFailure::Closed)?;
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// The 10-byte gzip member header: deflate, no flags, no time, unknown OS (RFC 1952 §2.3).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
/// Length 258, the longest a deflate match copies.
const MAX_MATCH: u64 = 258;

/// A gzip member inflating to `head` then `fill` [`BOMB_FILL`] bytes, held as the few bytes
/// around a run of zero bytes that is counted, not stored.
///
/// The deflate stream (RFC 1951) is a stored block with the head, then one dynamic-Huffman block
/// whose code gives the fill literal and end-of-block two bits, length 258 one bit and distance 1
/// one bit: after one literal, every 258 fill bytes cost two zero bits.
#[derive(Debug, Clone)]
struct GzipBomb {
    head: Vec<u8>,
    zero_bytes: u64,
    tail: Vec<u8>,
}

impl GzipBomb {
    fn new(head: &[u8], fill: u64) -> GzipBomb {
        let head = &head[..head.len().min(usize::from(u16::MAX))];
        let mut bits = BitWriter::default();
        bits.bytes.extend_from_slice(&GZIP_HEADER);
        if !head.is_empty() {
            bits.put(0, 1); // BFINAL: more blocks follow
            bits.put(0, 2); // BTYPE 00: stored
            bits.align();
            let length = head.len() as u16;
            bits.bytes.extend_from_slice(&length.to_le_bytes());
            bits.bytes.extend_from_slice(&(!length).to_le_bytes());
            bits.bytes.extend_from_slice(head);
        }
        write_fill_block_header(&mut bits);
        let (matches, literals) = if fill == 0 {
            (0, 0)
        } else {
            bits.code(FILL_LITERAL_CODE);
            ((fill - 1) / MAX_MATCH, (fill - 1) % MAX_MATCH)
        };
        let mut match_bits = matches * 2;
        let to_boundary = u64::from((8 - bits.pending_bits) % 8).min(match_bits);
        for _ in 0..to_boundary {
            bits.put(0, 1);
        }
        match_bits -= to_boundary;
        let zero_bytes = if bits.pending_bits == 0 { match_bits / 8 } else { 0 };
        match_bits -= zero_bytes * 8;
        let first = std::mem::take(&mut bits.bytes);
        for _ in 0..match_bits {
            bits.put(0, 1);
        }
        for _ in 0..literals {
            bits.code(FILL_LITERAL_CODE);
        }
        bits.code(END_OF_BLOCK_CODE);
        bits.align();
        let mut tail = bits.bytes;
        let crc = !crc32_repeat(crc32_update(!0, head), BOMB_FILL, fill);
        tail.extend_from_slice(&crc.to_le_bytes());
        let inflated = (head.len() as u64).wrapping_add(fill);
        tail.extend_from_slice(&((inflated & 0xffff_ffff) as u32).to_le_bytes());
        GzipBomb { head: first, zero_bytes, tail }
    }

    fn len(&self) -> u64 {
        self.head.len() as u64 + self.zero_bytes + self.tail.len() as u64
    }

    fn write(&self, mut out: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        out(&self.head)?;
        repeat(0, self.zero_bytes, &mut out)?;
        out(&self.tail)
    }
}

/// `(code, bit length)` of the fill byte's literal in the bomb's literal/length code.
const FILL_LITERAL_CODE: (u32, u32) = (0b10, 2);
/// `(code, bit length)` of end-of-block (symbol 256).
const END_OF_BLOCK_CODE: (u32, u32) = (0b11, 2);

/// The header of the bomb's final dynamic-Huffman block (RFC 1951 §3.2.7). Literal/length code
/// lengths: fill byte 2, 256 (end of block) 2, 285 (length 258) 1; distance codes 0 and 1 both 1
/// (complete codes, canonical: 285 = `0`, fill = `10`, 256 = `11`, distance 1 = `0`). The code
/// lengths are sent with the code-length code 18 = `0` (a run of 11–138 zeros), 1 = `10`,
/// 2 = `11`; every zero run around [`BOMB_FILL`] is at least 11 long.
fn write_fill_block_header(bits: &mut BitWriter) {
    const CODE_LENGTH_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
    bits.put(1, 1); // BFINAL
    bits.put(2, 2); // BTYPE 10: dynamic Huffman
    bits.put(286 - 257, 5); // HLIT
    bits.put(2 - 1, 5); // HDIST
    bits.put(18 - 4, 4); // HCLEN: the order up to symbol 1
    for symbol in &CODE_LENGTH_ORDER[..18] {
        let length = match symbol {
            18 => 1,
            1 | 2 => 2,
            _ => 0,
        };
        bits.put(length, 3);
    }
    let mut lengths = [0u8; 288];
    lengths[usize::from(BOMB_FILL)] = 2;
    lengths[256] = 2;
    lengths[285] = 1;
    lengths[286] = 1;
    lengths[287] = 1;
    let mut index = 0;
    while index < lengths.len() {
        let length = lengths[index];
        if length != 0 {
            bits.code(if length == 1 { (0b10, 2) } else { (0b11, 2) });
            index += 1;
            continue;
        }
        let mut run = lengths[index..].iter().take_while(|length| **length == 0).count();
        index += run;
        while run > 0 {
            let take = if run > 138 { (run - 11).min(138) } else { run };
            bits.code((0, 1));
            bits.put((take - 11) as u32, 7);
            run -= take;
        }
    }
}

/// Deflate's bit order: fields least significant bit first, Huffman codes most significant first.
#[derive(Debug, Default)]
struct BitWriter {
    bytes: Vec<u8>,
    pending: u8,
    pending_bits: u32,
}

impl BitWriter {
    fn put(&mut self, value: u32, count: u32) {
        for bit in 0..count {
            self.bit((value >> bit) & 1 == 1);
        }
    }

    fn code(&mut self, (code, length): (u32, u32)) {
        for bit in (0..length).rev() {
            self.bit((code >> bit) & 1 == 1);
        }
    }

    fn bit(&mut self, set: bool) {
        if set {
            self.pending |= 1 << self.pending_bits;
        }
        self.pending_bits += 1;
        if self.pending_bits == 8 {
            self.bytes.push(self.pending);
            self.pending = 0;
            self.pending_bits = 0;
        }
    }

    fn align(&mut self) {
        while self.pending_bits != 0 {
            self.bit(false);
        }
    }
}

/// CRC-32 as gzip uses it (reflected, polynomial 0x04C11DB7).
const CRC32_POLYNOMIAL: u32 = 0xedb8_8320;

/// The raw CRC register after `bytes` (the caller starts from `!0` and inverts at the end).
fn crc32_update(register: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(register, |register, byte| crc32_byte(register, *byte))
}

fn crc32_byte(register: u32, byte: u8) -> u32 {
    let mut register = register ^ u32::from(byte);
    for _ in 0..8 {
        register = if register & 1 == 1 { (register >> 1) ^ CRC32_POLYNOMIAL } else { register >> 1 };
    }
    register
}

/// The register after `count` copies of `byte`, in O(log count): one byte's step is affine over
/// GF(2) (`r -> L(r) ^ L(byte)`), and affine maps compose and square.
fn crc32_repeat(register: u32, byte: u8, count: u64) -> u32 {
    let mut result = CrcAffine::identity();
    let mut power = CrcAffine::one_byte(byte);
    let mut left = count;
    while left > 0 {
        if left & 1 == 1 {
            result = power.after(&result);
        }
        power = power.after(&power);
        left >>= 1;
    }
    result.apply(register)
}

/// `r -> M r ^ constant` on the CRC register; `columns[i]` is `M` applied to bit `i`.
#[derive(Debug, Clone, Copy)]
struct CrcAffine {
    columns: [u32; 32],
    constant: u32,
}

impl CrcAffine {
    fn identity() -> CrcAffine {
        CrcAffine { columns: std::array::from_fn(|bit| 1 << bit), constant: 0 }
    }

    fn one_byte(byte: u8) -> CrcAffine {
        CrcAffine { columns: std::array::from_fn(|bit| crc32_byte(1 << bit, 0)), constant: crc32_byte(0, byte) }
    }

    fn linear(&self, register: u32) -> u32 {
        (0..32).filter(|bit| (register >> bit) & 1 == 1).fold(0, |sum, bit| sum ^ self.columns[bit])
    }

    fn apply(&self, register: u32) -> u32 {
        self.linear(register) ^ self.constant
    }

    /// This map applied after `first`.
    fn after(&self, first: &CrcAffine) -> CrcAffine {
        CrcAffine {
            columns: std::array::from_fn(|bit| self.linear(first.columns[bit])),
            constant: self.apply(first.constant),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every test read gives up after this: a hung server fails the test instead of hanging it.
    const LIMIT: Duration = Duration::from_secs(20);

    #[derive(Debug)]
    struct Head {
        status: u16,
        headers: Vec<(String, String)>,
    }

    impl Head {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
        }
    }

    #[derive(Debug)]
    struct Answer {
        head: Head,
        body: Vec<u8>,
        /// The body ended as its framing says (false: the connection closed mid-body).
        complete: bool,
    }

    impl Answer {
        fn json(&self) -> Value {
            serde_json::from_slice(&self.body).unwrap_or_else(|err| panic!("{err}: {}", self.text()))
        }

        fn text(&self) -> String {
            String::from_utf8_lossy(&self.body).into_owned()
        }
    }

    struct Client {
        reader: BufReader<TcpStream>,
    }

    impl Client {
        fn connect(address: SocketAddr) -> Client {
            let stream = TcpStream::connect(address).unwrap();
            stream.set_read_timeout(Some(LIMIT)).unwrap();
            Client { reader: BufReader::new(stream) }
        }

        fn send(&mut self, method: &str, headers: &[(&str, &str)], body: &[u8]) {
            let mut head = format!("{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            let stream = self.reader.get_mut();
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(body).unwrap();
        }

        fn post(&mut self, session: Option<&str>, message: &Value) {
            let mut headers =
                vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
            if let Some(session) = session {
                headers.push(("Mcp-Session-Id", session));
            }
            self.send("POST", &headers, message.to_string().as_bytes());
        }

        fn get(&mut self, session: &str, last_event_id: Option<&str>) {
            let mut headers = vec![("Accept", "text/event-stream"), ("Mcp-Session-Id", session)];
            if let Some(id) = last_event_id {
                headers.push(("Last-Event-ID", id));
            }
            self.send("GET", &headers, b"");
        }

        fn line(&mut self) -> String {
            let mut line = Vec::new();
            self.reader.by_ref().take(16 * 1024 * 1024).read_until(b'\n', &mut line).unwrap();
            String::from_utf8_lossy(&line).trim_end_matches(['\r', '\n']).to_owned()
        }

        fn head(&mut self) -> Head {
            let status_line = self.line();
            let status = status_line.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
            let mut headers = Vec::new();
            loop {
                let line = self.line();
                if line.is_empty() {
                    return Head { status, headers };
                }
                let (name, value) = line.split_once(':').unwrap();
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }

        fn body(&mut self, head: &Head) -> (Vec<u8>, bool) {
            if let Some(length) = head.header("content-length") {
                let mut body = vec![0; length.parse().unwrap()];
                let complete = self.reader.read_exact(&mut body).is_ok();
                return (body, complete);
            }
            let mut body = Vec::new();
            if head.header("transfer-encoding") == Some("chunked") {
                loop {
                    let line = self.line();
                    let Ok(size) = usize::from_str_radix(&line, 16) else { return (body, false) };
                    if size == 0 {
                        return (body, self.line().is_empty());
                    }
                    let start = body.len();
                    body.resize(start + size, 0);
                    if self.reader.read_exact(&mut body[start..]).is_err() || !self.line().is_empty() {
                        return (body, false);
                    }
                }
            }
            self.reader.read_to_end(&mut body).unwrap();
            (body, true)
        }

        fn answer(&mut self) -> Answer {
            let head = self.head();
            let (body, complete) = self.body(&head);
            Answer { head, body, complete }
        }

        /// Whether the server sends nothing for `wait` (a negative check, never a sync point).
        fn silent_for(&self, wait: Duration) -> bool {
            self.reader.get_ref().set_read_timeout(Some(wait)).unwrap();
            let mut probe = [0u8; 1];
            let silent = matches!(self.reader.get_ref().peek(&mut probe),
                Err(err) if matches!(err.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut));
            self.reader.get_ref().set_read_timeout(Some(LIMIT)).unwrap();
            silent
        }
    }

    fn request(id: u64, method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    fn notification(method: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": method})
    }

    fn initialize_request() -> Value {
        request(
            1,
            "initialize",
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        )
    }

    fn rpc(server: &McpHttpServer, session: Option<&str>, message: &Value) -> Answer {
        let mut client = Client::connect(server.address());
        client.post(session, message);
        client.answer()
    }

    /// initialize + notifications/initialized; the session id.
    fn start_session(server: &McpHttpServer) -> String {
        let answer = rpc(server, None, &initialize_request());
        assert_eq!(answer.head.status, 200, "{}", answer.text());
        let session = answer.head.header("mcp-session-id").unwrap().to_owned();
        let initialized = rpc(server, Some(&session), &notification("notifications/initialized"));
        assert_eq!(initialized.head.status, 202);
        session
    }

    fn tool_call(name: &str, arguments: Value) -> Value {
        request(2, "tools/call", json!({"name": name, "arguments": arguments, "_meta": {"progressToken": 2}}))
    }

    fn tool(name: &str) -> Value {
        json!({"name": name, "description": format!("the {name} tool"), "inputSchema": {"type": "object"}})
    }

    fn one_tool_server(answer: impl Fn(&Value) -> ToolAnswer + Send + Sync + 'static) -> McpHttpServer {
        McpHttpServer::start(McpScript::new().tool(tool("t"), answer))
    }

    /// `(id, data)` of each SSE event in `body`.
    fn sse_events(body: &[u8]) -> Vec<(String, Value)> {
        String::from_utf8_lossy(body)
            .split("\n\n")
            .filter(|frame| !frame.trim().is_empty())
            .map(|frame| {
                let field = |name: &str| {
                    frame.lines().find_map(|line| line.strip_prefix(name)).map(str::to_owned).unwrap_or_default()
                };
                (field("id: "), serde_json::from_str(&field("data: ")).unwrap_or(Value::Null))
            })
            .collect()
    }

    /// Reads exactly `head`, `filler` × [`FILLER`], `tail` from `reader` without holding the
    /// filler, failing at the first wrong byte.
    fn expect_generated(reader: &mut impl Read, head: &[u8], filler: u64, tail: &[u8]) {
        let (head_end, filler_end) = (head.len() as u64, head.len() as u64 + filler);
        let total = filler_end + tail.len() as u64;
        let block = vec![FILLER; WRITE_BLOCK_BYTES];
        let mut buffer = vec![0u8; WRITE_BLOCK_BYTES];
        let (mut seen_head, mut seen_tail) = (Vec::new(), Vec::new());
        let mut position = 0u64;
        while position < total {
            let want = (buffer.len() as u64).min(total - position) as usize;
            let read = reader.read(&mut buffer[..want]).unwrap();
            assert!(read > 0, "the body ended at byte {position} of {total}");
            let mut chunk = &buffer[..read];
            while !chunk.is_empty() {
                let take = if position < head_end {
                    let take = chunk.len().min((head_end - position) as usize);
                    seen_head.extend_from_slice(&chunk[..take]);
                    take
                } else if position < filler_end {
                    let take = chunk.len().min((filler_end - position) as usize);
                    assert!(chunk[..take] == block[..take], "a filler byte is wrong near byte {position}");
                    take
                } else {
                    seen_tail.extend_from_slice(chunk);
                    chunk.len()
                };
                position += take as u64;
                chunk = &chunk[take..];
            }
        }
        assert_eq!(String::from_utf8_lossy(&seen_head), String::from_utf8_lossy(head));
        assert_eq!(String::from_utf8_lossy(&seen_tail), String::from_utf8_lossy(tail));
    }

    /// The process's peak resident memory (bytes), from /proc.
    fn peak_resident_bytes() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    #[test]
    fn initialize_answers_a_session_capabilities_and_instructions() {
        let script = McpScript::new()
            .instructions("use the tools")
            .resource(json!({"uri": "file:///a", "name": "a"}), json!([{"uri": "file:///a", "text": "A"}]));
        let server = McpHttpServer::start(script);
        let answer = rpc(&server, None, &initialize_request());
        assert_eq!(answer.head.status, 200);
        assert_eq!(answer.head.header("content-type"), Some("application/json"));
        assert_eq!(answer.head.header("mcp-session-id"), Some("session-1"));
        let message = answer.json();
        assert_eq!(message["id"], 1);
        assert_eq!(message["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(message["result"]["capabilities"]["tools"], json!({"listChanged": true}));
        assert!(message["result"]["capabilities"]["resources"].is_object(), "{message}");
        assert_eq!(message["result"]["instructions"], "use the tools");
        let initialized = rpc(&server, Some("session-1"), &notification("notifications/initialized"));
        assert_eq!((initialized.head.status, initialized.body.len()), (202, 0));
        let requests = server.wait_for_requests(2, LIMIT);
        assert_eq!(requests[0].rpc_method(), Some("initialize"));
        assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("POST", "/mcp"));
        assert_eq!(requests[1].session_id(), Some("session-1"));
        assert_eq!(requests[1].json, Some(notification("notifications/initialized")));
        assert_eq!(requests[1].body, notification("notifications/initialized").to_string().into_bytes());
        let plain = McpHttpServer::start(McpScript::new().protocol_version("2025-06-18").without_sessions());
        let answer = rpc(&plain, None, &initialize_request());
        assert_eq!(answer.json()["result"]["protocolVersion"], "2025-06-18");
        assert!(answer.json()["result"]["capabilities"].get("resources").is_none());
        assert_eq!(answer.head.header("mcp-session-id"), None);
        assert_eq!(rpc(&plain, None, &request(2, "ping", json!({}))).json()["result"], json!({}));
    }

    #[test]
    fn sessions_missing_is_400_unknown_is_404_and_delete_ends_one() {
        let server = McpHttpServer::start(McpScript::new());
        let session = start_session(&server);
        let list = request(2, "tools/list", json!({}));
        assert_eq!(rpc(&server, None, &list).head.status, 400);
        let unknown = rpc(&server, Some("session-9"), &list);
        assert_eq!(unknown.head.status, 404);
        assert_eq!(unknown.json()["error"]["message"], "Session not found");
        assert_eq!(rpc(&server, Some(&session), &list).head.status, 200);
        let mut client = Client::connect(server.address());
        client.send("DELETE", &[("Mcp-Session-Id", &session)], b"");
        assert_eq!(client.answer().head.status, 200);
        assert_eq!(rpc(&server, Some(&session), &list).head.status, 404);
        assert!(server.live_sessions().is_empty());
        assert_eq!(server.requests().iter().filter(|request| request.method == "DELETE").count(), 1);
        assert_eq!(start_session(&server), "session-2");
        server.expire_sessions();
        assert_eq!(rpc(&server, Some("session-2"), &list).head.status, 404);
        let answer = rpc(&server, Some("session-2"), &json!({"jsonrpc": "2.0", "id": "s1", "result": {}}));
        assert_eq!(answer.head.status, 404, "a client response carries the session too");
    }

    #[test]
    fn tools_resources_ping_and_unknown_methods_answer_like_a_server() {
        let script = McpScript::new()
            .tool(tool("echo"), |_| ToolAnswer::baseline())
            .tool(tool("shout"), |arguments| {
                ToolAnswer::text(arguments["text"].as_str().unwrap_or_default().to_uppercase())
            })
            .tool(tool("fails"), |_| ToolAnswer::tool_error("it broke"))
            .tool_page_size(2)
            .resource(json!({"uri": "file:///a", "name": "a"}), json!([{"uri": "file:///a", "text": "A"}]));
        let server = McpHttpServer::start(script);
        let session = start_session(&server);
        let session = Some(session.as_str());
        let first = rpc(&server, session, &request(2, "tools/list", json!({}))).json();
        assert_eq!(first["result"]["tools"].as_array().map(Vec::len), Some(2));
        assert_eq!(first["result"]["nextCursor"], "2");
        let second = rpc(&server, session, &request(3, "tools/list", json!({"cursor": "2"}))).json();
        assert_eq!(second["result"]["tools"][0]["name"], "fails");
        assert!(second["result"].get("nextCursor").is_none());
        let bad = rpc(&server, session, &request(4, "tools/list", json!({"cursor": "x"}))).json();
        assert_eq!(bad["error"]["code"], -32602);
        let echo = rpc(&server, session, &tool_call("echo", json!({"a": 1}))).json();
        assert_eq!(echo["result"]["content"][0]["text"], r#"{"a":1}"#);
        let shout = rpc(&server, session, &tool_call("shout", json!({"text": "hi"}))).json();
        assert_eq!(shout["result"]["content"][0]["text"], "HI");
        let fails = rpc(&server, session, &tool_call("fails", json!({}))).json();
        assert_eq!(fails["result"]["isError"], true);
        let unknown = rpc(&server, session, &tool_call("nope", json!({}))).json();
        assert_eq!(unknown["error"], json!({"code": -32602, "message": "Unknown tool: nope"}));
        let resources = rpc(&server, session, &request(5, "resources/list", json!({}))).json();
        assert_eq!(resources["result"]["resources"][0]["uri"], "file:///a");
        let read = rpc(&server, session, &request(6, "resources/read", json!({"uri": "file:///a"}))).json();
        assert_eq!(read["result"]["contents"][0]["text"], "A");
        let missing = rpc(&server, session, &request(7, "resources/read", json!({"uri": "file:///b"}))).json();
        assert_eq!(missing["error"]["code"], -32002);
        assert_eq!(rpc(&server, session, &request(8, "ping", json!({}))).json()["result"], json!({}));
        let other = rpc(&server, session, &request(9, "prompts/list", json!({}))).json();
        assert_eq!(other["error"], json!({"code": -32601, "message": "Method not found: prompts/list"}));
        let reply = rpc(&server, session, &json!({"jsonrpc": "2.0", "id": "s1", "result": {}}));
        assert_eq!((reply.head.status, reply.body.len()), (202, 0));
        let batch = rpc(
            &server,
            session,
            &json!([request(10, "ping", json!({})), notification("x"), request(11, "ping", json!({}))]),
        );
        assert_eq!(
            batch.json(),
            json!([{"jsonrpc": "2.0", "id": 10, "result": {}}, {"jsonrpc": "2.0", "id": 11, "result": {}}])
        );
    }

    #[test]
    fn post_needs_json_content_type_both_accepts_and_a_json_body() {
        let server = McpHttpServer::start(McpScript::new());
        let mut client = Client::connect(server.address());
        let body = initialize_request().to_string();
        client.send(
            "POST",
            &[("Content-Type", "text/plain"), ("Accept", "application/json, text/event-stream")],
            body.as_bytes(),
        );
        assert_eq!(client.answer().head.status, 415);
        client.send("POST", &[("Content-Type", "application/json"), ("Accept", "application/json")], body.as_bytes());
        assert_eq!(client.answer().head.status, 406);
        client.send(
            "POST",
            &[("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")],
            b"{not json",
        );
        let answer = client.answer();
        assert_eq!((answer.head.status, answer.json()["error"]["code"].clone()), (400, json!(-32700)));
        client.send("PUT", &[], b"");
        assert_eq!(client.answer().head.status, 405);
        assert_eq!(server.accepted_connections(), 1, "all on one kept-alive connection");
        let mut other_path = Client::connect(server.address());
        other_path.reader.get_mut().write_all(b"GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(other_path.answer().head.status, 404);
    }

    #[test]
    fn answer_method_overrides_any_method_and_initialize_keeps_its_session() {
        let script = McpScript::new()
            .answer_method("initialize", |_| ToolAnswer::baseline().content_type("text/html"))
            .answer_method("notifications/initialized", |_| ToolAnswer::http(500, "text/plain", "no"))
            .answer_method("tools/list", |_| ToolAnswer::rpc_error(-32603, "list broke"));
        let server = McpHttpServer::start(script);
        let answer = rpc(&server, None, &initialize_request());
        assert_eq!(answer.head.header("content-type"), Some("text/html"));
        assert_eq!(answer.head.header("mcp-session-id"), Some("session-1"));
        assert_eq!(answer.json()["result"]["protocolVersion"], PROTOCOL_VERSION);
        let initialized = rpc(&server, Some("session-1"), &notification("notifications/initialized"));
        assert_eq!((initialized.head.status, initialized.text()), (500, "no".to_owned()));
        let list = rpc(&server, Some("session-1"), &request(2, "tools/list", json!({}))).json();
        assert_eq!(list["error"], json!({"code": -32603, "message": "list broke"}));
    }

    #[test]
    fn sse_answers_send_progress_and_messages_then_the_result_with_event_ids() {
        let server = one_tool_server(|_| {
            ToolAnswer::text("done")
                .with_progress(2)
                .with_messages(vec![json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"})])
        });
        let session = start_session(&server);
        let answer = rpc(&server, Some(&session), &tool_call("t", json!({})));
        assert_eq!(answer.head.header("content-type"), Some("text/event-stream"));
        assert_eq!(answer.head.header("transfer-encoding"), Some("chunked"));
        assert!(answer.complete);
        let events = sse_events(&answer.body);
        let ids: Vec<&str> = events.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["1-1", "1-2", "1-3", "1-4"]);
        assert_eq!(events[0].1["params"], json!({"progressToken": 2, "progress": 1, "total": 2}));
        assert_eq!(events[2].1["method"], "ping");
        assert_eq!(
            events[3].1,
            json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "done"}]}})
        );
        let plain = one_tool_server(|_| ToolAnswer::text("x").sse());
        let session = start_session(&plain);
        let answer = rpc(&plain, Some(&session), &tool_call("t", json!({})));
        assert_eq!(sse_events(&answer.body).len(), 1);
        let tokenless = one_tool_server(|_| ToolAnswer::text("x").with_progress(3));
        let session = start_session(&tokenless);
        let call = request(2, "tools/call", json!({"name": "t", "arguments": {}}));
        let answer = rpc(&tokenless, Some(&session), &call);
        assert_eq!(answer.head.header("content-type"), Some("text/event-stream"));
        let events = sse_events(&answer.body);
        assert_eq!(events.len(), 1, "no progress without a token: {events:?}");
        assert_eq!(events[0].1["id"], 2);
    }

    #[test]
    fn get_stream_sends_each_push_once_and_replays_after_last_event_id() {
        let server = McpHttpServer::start(McpScript::new());
        let session = start_session(&server);
        let first = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        assert_eq!(server.push_notification(first.clone()), "0-1");
        let mut stream = Client::connect(server.address());
        stream.get(&session, None);
        let head = stream.head();
        assert_eq!((head.status, head.header("content-type")), (200, Some("text/event-stream")));
        let read_event = |client: &mut Client| {
            let size = usize::from_str_radix(&client.line(), 16).unwrap();
            let mut frame = vec![0; size];
            client.reader.read_exact(&mut frame).unwrap();
            assert!(client.line().is_empty());
            sse_events(&frame).remove(0)
        };
        assert_eq!(read_event(&mut stream), ("0-1".to_owned(), first));
        let second =
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": 2}});
        server.push_notification(second.clone());
        assert_eq!(read_event(&mut stream), ("0-2".to_owned(), second.clone()));
        server.wait_for_delivered_notifications(2, LIMIT);
        let mut other = Client::connect(server.address());
        other.get(&session, None);
        assert_eq!(other.head().status, 200);
        assert!(other.silent_for(Duration::from_millis(100)), "a delivered message is not sent twice");
        let mut resumed = Client::connect(server.address());
        resumed.get(&session, Some("0-1"));
        assert_eq!(resumed.head().status, 200);
        assert_eq!(read_event(&mut resumed), ("0-2".to_owned(), second));
        server.close_get_streams();
        assert_eq!(stream.line(), "0", "a closed stream ends its chunked body");
        let mut unknown = Client::connect(server.address());
        unknown.get(&session, Some("0-9"));
        let answer = unknown.answer();
        assert_eq!((answer.head.status, answer.text()), (400, "unknown Last-Event-ID 0-9".to_owned()));
    }

    #[test]
    fn get_is_405_without_the_stream_and_406_without_accept() {
        let server = McpHttpServer::start(McpScript::new().without_get_stream());
        let session = start_session(&server);
        let mut client = Client::connect(server.address());
        client.get(&session, None);
        let answer = client.answer();
        assert_eq!((answer.head.status, answer.head.header("allow")), (405, Some("POST, DELETE")));
        client.send("GET", &[("Accept", "application/json"), ("Mcp-Session-Id", &session)], b"");
        assert_eq!(client.answer().head.status, 406);
    }

    #[test]
    fn dropped_sse_answer_is_only_reachable_by_get_with_last_event_id() {
        let server = one_tool_server(|_| ToolAnswer::text("late").with_progress(1).drop_before_response());
        let session = start_session(&server);
        let answer = rpc(&server, Some(&session), &tool_call("t", json!({})));
        assert!(!answer.complete, "the chunked body is cut");
        let events = sse_events(&answer.body);
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].0.as_str(), &events[0].1["method"]), ("1-1", &json!("notifications/progress")));
        let mut resumed = Client::connect(server.address());
        resumed.get(&session, Some("1-1"));
        let replay = resumed.answer();
        assert!(replay.complete, "the replayed stream ends");
        let events = sse_events(&replay.body);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].0, "1-2");
        assert_eq!(events[0].1["result"]["content"][0]["text"], "late");
    }

    #[test]
    fn storm_answers_its_statuses_in_turn_then_recovers_or_never() {
        let server = McpHttpServer::start(McpScript::new().storm(&[500, 502, 503], Some(4)));
        let statuses: Vec<(u16, String)> = (0..4)
            .map(|_| {
                let answer = rpc(&server, None, &initialize_request());
                (answer.head.status, answer.text())
            })
            .collect();
        assert_eq!(
            statuses,
            [
                (500, "storm answer 1: 500 Internal Server Error".to_owned()),
                (502, "storm answer 2: 502 Bad Gateway".to_owned()),
                (503, "storm answer 3: 503 Service Unavailable".to_owned()),
                (500, "storm answer 4: 500 Internal Server Error".to_owned()),
            ]
        );
        assert_eq!(start_session(&server), "session-1");
        let forever = McpHttpServer::start(McpScript::new().storm(&[503], None));
        assert!((0..20).all(|_| rpc(&forever, None, &initialize_request()).head.status == 503));
    }

    #[test]
    fn first_session_expires_after_k_requests_and_initialize_gives_a_new_one() {
        let server = McpHttpServer::start(McpScript::new().expire_session_after(2));
        let session = start_session(&server);
        let list = request(2, "tools/list", json!({}));
        assert_eq!(rpc(&server, Some(&session), &list).head.status, 200);
        assert_eq!(rpc(&server, Some(&session), &list).head.status, 404);
        assert_eq!(rpc(&server, Some(&session), &list).head.status, 404);
        let renewed = start_session(&server);
        assert_eq!(renewed, "session-2");
        assert!((0..5).all(|_| rpc(&server, Some(&renewed), &list).head.status == 200));
    }

    #[test]
    fn huge_text_of_one_gib_streams_without_the_server_holding_it() {
        const GIB: u64 = 1 << 30;
        let server = one_tool_server(|_| ToolAnswer::huge_text(GIB));
        let session = start_session(&server);
        let peak_before = peak_resident_bytes();
        let mut client = Client::connect(server.address());
        client.post(Some(&session), &tool_call("t", json!({})));
        let head = client.head();
        assert_eq!(head.header("content-length"), Some(GIB.to_string().as_str()));
        let prefix = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":""#;
        let suffix = r#""}]}}"#;
        let filler = GIB - (prefix.len() + suffix.len()) as u64;
        expect_generated(&mut client.reader, prefix.as_bytes(), filler, suffix.as_bytes());
        let grown = peak_resident_bytes().saturating_sub(peak_before);
        assert!(grown < 256 * 1024 * 1024, "peak memory grew by {grown} bytes while 1 GiB went through");
        drop(client);
        server.wait_for_open_connections_at_most(0, LIMIT);
    }

    #[test]
    fn huge_structured_content_is_exact_valid_json_up_to_100_mb() {
        let server = one_tool_server(|arguments| {
            let answer = ToolAnswer::huge_structured_content(arguments["bytes"].as_u64().unwrap_or(0));
            if arguments["sse"] == true { answer.sse() } else { answer }
        });
        let session = start_session(&server);
        let small = rpc(&server, Some(&session), &tool_call("t", json!({"bytes": 400})));
        assert_eq!(small.body.len(), 400);
        let message = small.json();
        assert_eq!(message["id"], 2);
        assert!(message["result"]["structuredContent"]["blob"].as_str().unwrap().bytes().all(|byte| byte == FILLER));
        let over_sse = rpc(&server, Some(&session), &tool_call("t", json!({"bytes": 400, "sse": true})));
        let events = sse_events(&over_sse.body);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].1.to_string().len(), 400);
        let mut client = Client::connect(server.address());
        client.post(Some(&session), &tool_call("t", json!({"bytes": 100_000_000})));
        let head = client.head();
        assert_eq!(head.header("content-length"), Some("100000000"));
        let prefix = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"see structuredContent"}],"structuredContent":{"blob":""#;
        let suffix = r#""}}}"#;
        expect_generated(
            &mut client.reader,
            prefix.as_bytes(),
            100_000_000 - (prefix.len() + suffix.len()) as u64,
            suffix.as_bytes(),
        );
        let unannounced = one_tool_server(|_| ToolAnswer::huge_text(10_000).unannounced());
        let session = start_session(&unannounced);
        let answer = rpc(&unannounced, Some(&session), &tool_call("t", json!({})));
        assert_eq!((answer.head.header("transfer-encoding"), answer.body.len()), (Some("chunked"), 10_000));
    }

    #[test]
    fn endless_sse_line_never_ends_and_its_connection_closes_when_the_client_leaves() {
        let server = one_tool_server(|_| ToolAnswer::endless_sse_line());
        let session = start_session(&server);
        let mut client = Client::connect(server.address());
        client.post(Some(&session), &tool_call("t", json!({})));
        let head = client.head();
        assert_eq!(head.header("content-type"), Some("text/event-stream"));
        let mut stream = Vec::new();
        while stream.len() < 4 * 1024 * 1024 {
            let size = usize::from_str_radix(&client.line(), 16).unwrap();
            let start = stream.len();
            stream.resize(start + size, 0);
            client.reader.read_exact(&mut stream[start..]).unwrap();
            assert!(client.line().is_empty());
        }
        let data = stream.windows(6).position(|window| window == b"data: ").unwrap();
        assert!(String::from_utf8_lossy(&stream[..data]).ends_with("id: 1-1\n"));
        assert!(!stream[data..].contains(&b'\n'), "the data line ended");
        drop(client);
        server.wait_for_open_connections_at_most(0, LIMIT);
    }

    #[test]
    fn dribble_sends_one_byte_per_interval() {
        const INTERVAL: Duration = Duration::from_millis(20);
        let server = one_tool_server(|_| ToolAnswer::text("ok").dribble(INTERVAL));
        let session = start_session(&server);
        let mut client = Client::connect(server.address());
        client.post(Some(&session), &tool_call("t", json!({})));
        let head = client.head();
        let length: usize = head.header("content-length").unwrap().parse().unwrap();
        let started = Instant::now();
        let mut body = Vec::new();
        let mut reads = 0;
        while body.len() < length {
            let mut buffer = [0u8; 64];
            let read = client.reader.read(&mut buffer).unwrap();
            assert!(read > 0);
            body.extend_from_slice(&buffer[..read]);
            reads += 1;
        }
        let elapsed = started.elapsed();
        assert!(elapsed >= INTERVAL * (length as u32 - 1), "{length} bytes in {elapsed:?}");
        assert!(reads > 1, "the body came in one read");
        assert_eq!(serde_json::from_slice::<Value>(&body).unwrap()["result"]["content"][0]["text"], "ok");
        let whole = one_tool_server(|_| ToolAnswer::text("ok").dribble_head(Duration::from_millis(5)));
        let session = start_session(&whole);
        let mut client = Client::connect(whole.address());
        let started = Instant::now();
        client.post(Some(&session), &tool_call("t", json!({})));
        assert_eq!(client.line(), "HTTP/1.1 200 OK");
        assert!(started.elapsed() >= Duration::from_millis(5) * 15, "the status line came at once");
    }

    #[test]
    fn redirect_points_at_another_origin_that_records_who_comes() {
        let server = one_tool_server(|arguments| match arguments["to"].as_str() {
            Some(location) => ToolAnswer::redirect_to(302, location),
            None => ToolAnswer::redirect(307),
        });
        let session = start_session(&server);
        let answer = rpc(&server, Some(&session), &tool_call("t", json!({})));
        assert_eq!(answer.head.status, 307);
        let location = answer.head.header("location").unwrap();
        assert_eq!(location, server.redirect_target_url());
        assert_ne!(location, server.url(), "another origin: another port");
        assert_eq!((server.redirect_target_connections(), server.redirect_target_requests().len()), (0, 0));
        let elsewhere = rpc(&server, Some(&session), &tool_call("t", json!({"to": "http://169.254.169.254/mcp"})));
        assert_eq!(
            (elsewhere.head.status, elsewhere.head.header("location")),
            (302, Some("http://169.254.169.254/mcp"))
        );
        let address: SocketAddr = location.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
        let mut follower = Client::connect(address);
        follower.post(Some(&session), &tool_call("t", json!({})));
        let followed = follower.answer();
        assert_eq!(followed.json()["result"]["content"][0]["text"], "redirect followed");
        assert_eq!(server.redirect_target_connections(), 1);
        assert_eq!(server.redirect_target_requests()[0].session_id(), Some(session.as_str()));
    }

    #[test]
    fn content_type_lies_label_sse_as_json_json_as_sse_and_json_as_html() {
        let server = one_tool_server(|arguments| match arguments["lie"].as_str() {
            Some("sse-as-json") => ToolAnswer::text("a").sse().content_type("application/json"),
            Some("json-as-sse") => ToolAnswer::text("b").content_type("text/event-stream"),
            _ => ToolAnswer::text("c").content_type("text/html"),
        });
        let session = start_session(&server);
        let call = |lie: &str| rpc(&server, Some(&session), &tool_call("t", json!({"lie": lie})));
        let sse_as_json = call("sse-as-json");
        assert_eq!(sse_as_json.head.header("content-type"), Some("application/json"));
        assert!(sse_as_json.text().starts_with("event: message\nid: 1-1\ndata: {"), "{}", sse_as_json.text());
        let json_as_sse = call("json-as-sse");
        assert_eq!(json_as_sse.head.header("content-type"), Some("text/event-stream"));
        assert_eq!(json_as_sse.json()["result"]["content"][0]["text"], "b");
        let html = call("html");
        assert_eq!(html.head.header("content-type"), Some("text/html"));
        assert_eq!(html.json()["result"]["content"][0]["text"], "c");
    }

    /// Inflates `body` as gzip (checking its CRC and length), returning the first bytes and the
    /// inflated size; fails on a byte after `head` that is not [`BOMB_FILL`].
    fn inflate_bomb(body: &[u8], head_len: usize) -> (Vec<u8>, u64) {
        let mut decoder = flate2::read::GzDecoder::new(body);
        let mut buffer = vec![0u8; WRITE_BLOCK_BYTES];
        let fill = vec![BOMB_FILL; WRITE_BLOCK_BYTES];
        let (mut head, mut total) = (Vec::new(), 0u64);
        loop {
            let read = decoder.read(&mut buffer).unwrap();
            if read == 0 {
                return (head, total);
            }
            let mut chunk = &buffer[..read];
            if head.len() < head_len {
                let take = chunk.len().min(head_len - head.len());
                head.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
            }
            assert!(chunk == &fill[..chunk.len()], "a fill byte is wrong after byte {total}");
            total += read as u64;
        }
    }

    #[test]
    fn gzip_bomb_inflates_to_exactly_its_size() {
        let head = br#"{"jsonrpc":"2.0","id":2,"result":"#;
        let server = one_tool_server(|arguments| ToolAnswer::gzip_bomb(arguments["bytes"].as_u64().unwrap_or(0)));
        let session = start_session(&server);
        let head_len = head.len() as u64;
        for size in [head_len, head_len + 1, head_len + 258, head_len + 259, head_len + 4 * 258 + 3, 1000, 8 << 20] {
            let answer = rpc(&server, Some(&session), &tool_call("t", json!({"bytes": size})));
            assert_eq!(answer.head.header("content-encoding"), Some("gzip"));
            assert_eq!(answer.head.header("content-type"), Some("application/json"));
            let (inflated_head, total) = inflate_bomb(&answer.body, head.len());
            assert_eq!((inflated_head.as_slice(), total), (head.as_slice(), size), "bomb of {size}");
        }
        let big = rpc(&server, Some(&session), &tool_call("t", json!({"bytes": 64u64 << 20})));
        assert!(big.body.len() < (64 << 20) / 1000, "{} bytes on the wire", big.body.len());
    }

    #[test]
    fn gzip_bomb_of_one_gib_is_about_a_megabyte_and_inflates_to_one_gib() {
        const GIB: u64 = 1 << 30;
        let head = br#"{"jsonrpc":"2.0","id":2,"result":"#;
        let bomb = GzipBomb::new(head, GIB - head.len() as u64);
        assert!((1_000_000..1_100_000).contains(&bomb.len()), "{} bytes", bomb.len());
        let mut wire = Vec::new();
        bomb.write(|bytes| {
            wire.extend_from_slice(bytes);
            Ok(())
        })
        .unwrap();
        assert_eq!(wire.len() as u64, bomb.len());
        let (inflated_head, total) = inflate_bomb(&wire, head.len());
        assert_eq!((inflated_head.as_slice(), total), (head.as_slice(), GIB));
    }

    #[test]
    fn crc32_of_a_run_matches_the_bytewise_crc() {
        assert_eq!(!crc32_update(!0, b"123456789"), 0xcbf4_3926, "the CRC-32 check value");
        for count in [0u64, 1, 2, 3, 255, 256, 1000, 4097] {
            let bytes = vec![BOMB_FILL; count as usize];
            assert_eq!(crc32_repeat(0x1234_5678, BOMB_FILL, count), crc32_update(0x1234_5678, &bytes), "{count}");
        }
    }

    #[test]
    fn batch_wraps_the_response_in_an_array() {
        let server = one_tool_server(|arguments| {
            let answer = ToolAnswer::text("in a batch").batch();
            if arguments["with_log"] == true {
                answer.with_messages(vec![json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})])
            } else {
                answer
            }
        });
        let session = start_session(&server);
        let alone = rpc(&server, Some(&session), &tool_call("t", json!({}))).json();
        assert_eq!(
            alone,
            json!([{"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "in a batch"}]}}])
        );
        let with_log = rpc(&server, Some(&session), &tool_call("t", json!({"with_log": true}))).json();
        assert_eq!(with_log.as_array().map(Vec::len), Some(2));
        assert_eq!(with_log[0]["method"], "notifications/message");
        assert_eq!(with_log[1]["id"], 2);
    }

    #[test]
    fn never_answers_holds_silently_until_the_client_leaves() {
        let server = one_tool_server(|_| ToolAnswer::never_answers());
        let session = start_session(&server);
        let mut client = Client::connect(server.address());
        client.post(Some(&session), &tool_call("t", json!({})));
        server.wait_for_requests(3, LIMIT);
        assert!(client.silent_for(Duration::from_millis(200)));
        assert_eq!(server.open_connections(), 1);
        drop(client);
        server.wait_for_open_connections_at_most(0, LIMIT);
    }

    #[test]
    fn hang_up_closes_without_a_byte() {
        let server = one_tool_server(|_| ToolAnswer::hang_up());
        let session = start_session(&server);
        let mut client = Client::connect(server.address());
        client.post(Some(&session), &tool_call("t", json!({})));
        let mut rest = Vec::new();
        client.reader.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn after_release_holds_the_answer_until_the_gate_opens() {
        let gate = Gate::new();
        let held = gate.clone();
        let server = one_tool_server(move |_| ToolAnswer::text("now").after_release(&held));
        let session = start_session(&server);
        let mut client = Client::connect(server.address());
        client.post(Some(&session), &tool_call("t", json!({})));
        server.wait_for_requests(3, LIMIT);
        assert!(client.silent_for(Duration::from_millis(100)));
        gate.release();
        assert_eq!(client.answer().json()["result"]["content"][0]["text"], "now");
    }

    #[test]
    fn huge_header_and_many_headers_are_sent() {
        let server = one_tool_server(|arguments| match arguments["many"].as_u64() {
            Some(count) => ToolAnswer::text("h").many_headers(count as usize),
            None => ToolAnswer::text("h").huge_header(1 << 20),
        });
        let session = start_session(&server);
        let huge = rpc(&server, Some(&session), &tool_call("t", json!({})));
        assert_eq!(huge.head.header("x-huge").map(str::len), Some(1 << 20));
        assert_eq!(huge.json()["result"]["content"][0]["text"], "h");
        let many = rpc(&server, Some(&session), &tool_call("t", json!({"many": 5000})));
        let fillers = many.head.headers.iter().filter(|(name, _)| name.starts_with("x-filler-")).count();
        assert_eq!(fillers, 5000);
        assert_eq!(many.head.header("x-filler-5000"), Some("5000"));
    }

    #[test]
    fn framing_close_ends_streams_by_closing_the_connection() {
        let script =
            McpScript::new().framing(Framing::Close).tool(tool("t"), |_| ToolAnswer::text("s").with_progress(1));
        let server = McpHttpServer::start(script);
        let session = start_session(&server);
        let answer = rpc(&server, Some(&session), &tool_call("t", json!({})));
        assert_eq!((answer.head.header("connection"), answer.head.header("transfer-encoding")), (Some("close"), None));
        assert_eq!(sse_events(&answer.body).len(), 2);
        server.wait_for_open_connections_at_most(0, LIMIT);
    }

    #[test]
    fn open_connections_counts_live_sockets() {
        let server = McpHttpServer::start(McpScript::new().without_sessions());
        let mut first = Client::connect(server.address());
        let mut second = Client::connect(server.address());
        for client in [&mut first, &mut second] {
            client.post(None, &request(1, "ping", json!({})));
            assert_eq!(client.answer().head.status, 200);
        }
        assert_eq!((server.open_connections(), server.accepted_connections()), (2, 2));
        drop(first);
        server.wait_for_open_connections_at_most(1, LIMIT);
        drop(second);
        server.wait_for_open_connections_at_most(0, LIMIT);
    }

    #[test]
    fn dropping_the_server_ends_every_hold_promptly() {
        let server = one_tool_server(|arguments| match arguments["mode"].as_str() {
            Some("never") => ToolAnswer::never_answers(),
            Some("endless") => ToolAnswer::endless_sse_line(),
            Some("gated") => ToolAnswer::text("g").after_release(&Gate::new()),
            _ => ToolAnswer::text("slow").dribble(Duration::from_secs(1)),
        });
        let session = start_session(&server);
        let mut clients: Vec<Client> = ["never", "endless", "gated", "dribble"]
            .iter()
            .map(|mode| {
                let mut client = Client::connect(server.address());
                client.post(Some(&session), &tool_call("t", json!({"mode": mode})));
                client
            })
            .collect();
        server.wait_for_requests(6, LIMIT);
        let mut get = Client::connect(server.address());
        get.get(&session, None);
        assert_eq!(get.head().status, 200);
        clients.push(get);
        let started = Instant::now();
        drop(server);
        assert!(started.elapsed() < Duration::from_secs(3), "drop took {:?}", started.elapsed());
        for mut client in clients {
            // Whatever was sent, the connection ends: EOF or a reset, never the read timeout.
            let mut rest = Vec::new();
            let ended = match client.reader.read_to_end(&mut rest) {
                Ok(_) => true,
                Err(err) => !matches!(err.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut),
            };
            assert!(ended);
        }
    }

    #[test]
    fn oversized_request_head_is_refused_red() {
        let server = McpHttpServer::start(McpScript::new());
        let mut client = Client::connect(server.address());
        let huge = "a".repeat(MAX_HEAD_BYTES + 10);
        let _ = client.reader.get_mut().write_all(format!("POST /mcp HTTP/1.1\r\nX-Big: {huge}\r\n\r\n").as_bytes());
        let answer = client.answer();
        assert_eq!((answer.head.status, answer.head.header("connection")), (431, Some("close")));
        assert!(server.requests().is_empty());
        server.wait_for_open_connections_at_most(0, LIMIT);
    }

    #[test]
    fn oversized_request_body_is_refused_unread_red() {
        let server = McpHttpServer::start(McpScript::new());
        let mut client = Client::connect(server.address());
        let head = format!("POST /mcp HTTP/1.1\r\nContent-Length: {}\r\n\r\n", MAX_BODY_BYTES + 1);
        client.reader.get_mut().write_all(head.as_bytes()).unwrap();
        assert_eq!(client.answer().head.status, 413);
        let mut chunked = Client::connect(server.address());
        let head = format!("POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n", MAX_BODY_BYTES + 1);
        chunked.reader.get_mut().write_all(head.as_bytes()).unwrap();
        assert_eq!(chunked.answer().head.status, 413, "refused before a byte of the chunk is read");
        let mut many = Client::connect(server.address());
        many.reader.get_mut().write_all(b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, "x".repeat(1 << 20));
        for _ in 0..MAX_BODY_BYTES >> 20 {
            many.reader.get_mut().write_all(chunk.as_bytes()).unwrap();
        }
        many.reader.get_mut().write_all(b"1\r\n").unwrap();
        assert_eq!(many.answer().head.status, 413, "refused once the chunks add up to more");
        assert!(server.requests().is_empty());
    }
}
