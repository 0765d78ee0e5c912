//! A scripted OpenAI-compatible chat-completions server for tests: real HTTP/1.1 on an
//! ephemeral loopback port, plain std threads (callers need no async runtime), serving a queue
//! of scripted [`Reply`]s in arrival order and recording every request. Start at
//! [`ScriptedServer::start`].
//!
//! It answers any method and path with the next reply, so tests assert on
//! [`ScriptedServer::requests`] instead of the server refusing. An empty queue answers HTTP 500
//! with a `script exhausted` error body. JSON replies keep the connection alive (reqwest reuses
//! it); streamed replies are sent without a length and end by closing the connection, so a cut
//! stream looks to the client exactly like a clean end of body.
//!
//! Ordering without sleeps: [`Reply::after_release`] holds a reply until the test calls
//! [`Gate::release`], [`Reply::hold_mid_stream`] stops a stream half way until then, and
//! [`ScriptedServer::wait_for_requests`] blocks until requests have arrived. [`Reply::delay`]
//! exists for timeout tests only.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Largest request head read: 64 KiB (bytes).
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest request body read: 64 MiB (bytes).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Characters per streamed text delta.
const TEXT_DELTA_CHARS: usize = 4;
/// Characters per streamed tool-argument fragment.
const ARGUMENT_FRAGMENT_CHARS: usize = 5;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON, `Null` when it is not JSON.
    pub body: Value,
    pub raw_body: String,
}

impl RecordedRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
    }
}

/// A latch a test opens once; every reply waiting on it then proceeds. Dropping the server
/// opens every gate its replies use, so no server thread stays blocked.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    pub fn release(&self) {
        let (open, changed) = &*self.0;
        *open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        changed.notify_all();
    }

    /// Whether [`Gate::release`] was called (the MCP HTTP server polls it while it also watches
    /// its client's socket).
    pub(crate) fn is_open(&self) -> bool {
        *self.0.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait(&self) {
        let (open, changed) = &*self.0;
        let mut is_open = open.lock().unwrap_or_else(PoisonError::into_inner);
        while !*is_open {
            is_open = changed.wait(is_open).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// An assistant answer a reply renders, as JSON or as a stream.
#[derive(Debug, Clone, Default)]
struct Completion {
    content: Option<String>,
    reasoning: Option<String>,
    /// `(id, name, arguments)`.
    tool_calls: Vec<(String, String, String)>,
    usage: Option<(u64, u64)>,
    finish_reason: Option<String>,
}

#[derive(Debug, Clone)]
enum ReplyBody {
    Json(Completion),
    Stream { completion: Completion, cut: bool },
    Events(Vec<String>),
    Frames(Vec<String>),
    Raw { status: u16, content_type: String, body: Vec<u8> },
}

/// Builds the reply from the request it answers.
#[derive(Clone)]
struct Responder(Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>);

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder")
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    body: ReplyBody,
    headers: Vec<(String, String)>,
    release_gate: Option<Gate>,
    mid_stream_gate: Option<Gate>,
    delay: Option<Duration>,
    responder: Option<Responder>,
}

impl Reply {
    fn from_body(body: ReplyBody) -> Reply {
        Reply { body, headers: Vec::new(), release_gate: None, mid_stream_gate: None, delay: None, responder: None }
    }

    /// An answer computed from the request it answers (for callers whose requests carry values
    /// the script cannot know in advance, such as a sub-agent's task id).
    pub fn responding(respond: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) -> Reply {
        Reply { responder: Some(Responder(Arc::new(respond))), ..Reply::from_body(ReplyBody::Events(Vec::new())) }
    }

    /// A final answer with this content (`finish_reason: "stop"`).
    pub fn text(content: impl Into<String>) -> Reply {
        Reply::from_body(ReplyBody::Json(Completion { content: Some(content.into()), ..Completion::default() }))
    }

    /// An answer calling tools: `(id, name, arguments_json_string)` each
    /// (`finish_reason: "tool_calls"`, `content: null`).
    pub fn tool_calls<I, N, A>(calls: Vec<(I, N, A)>) -> Reply
    where
        I: Into<String>,
        N: Into<String>,
        A: Into<String>,
    {
        let tool_calls =
            calls.into_iter().map(|(id, name, arguments)| (id.into(), name.into(), arguments.into())).collect();
        Reply::from_body(ReplyBody::Json(Completion { tool_calls, ..Completion::default() }))
    }

    /// An HTTP error (or any status) with a JSON body.
    pub fn status(code: u16, body: impl Into<String>) -> Reply {
        Reply::raw(code, "application/json", body.into().into_bytes())
    }

    /// Any status, content type and body (malformed JSON, HTML error pages…).
    pub fn raw(status: u16, content_type: impl Into<String>, body: impl Into<Vec<u8>>) -> Reply {
        Reply::from_body(ReplyBody::Raw { status, content_type: content_type.into(), body: body.into() })
    }

    /// The same answer streamed as SSE: text in small deltas, tool-call arguments fragmented
    /// across chunks, a finish chunk, a usage chunk (when usage is set) and `[DONE]`.
    pub fn sse(reply: Reply) -> Reply {
        reply.into_stream(false)
    }

    /// Like [`Reply::sse`] but the connection closes about half way, before any finish reason.
    pub fn sse_cut(reply: Reply) -> Reply {
        reply.into_stream(true)
    }

    /// A stream of these exact `data:` payloads (no `[DONE]` added), then the connection closes.
    pub fn sse_events<S: Into<String>>(events: Vec<S>) -> Reply {
        Reply::from_body(ReplyBody::Events(events.into_iter().map(Into::into).collect()))
    }

    /// A stream of these exact SSE frames, each written verbatim (for APIs that name their
    /// events: `"event: message_start\ndata: {…}\n\n"`), then the connection closes.
    /// [`Reply::hold_mid_stream`] holds it before the middle frame.
    pub fn sse_frames<S: Into<String>>(frames: Vec<S>) -> Reply {
        Reply::from_body(ReplyBody::Frames(frames.into_iter().map(Into::into).collect()))
    }

    fn into_stream(mut self, cut: bool) -> Reply {
        self.body = match self.body {
            ReplyBody::Json(completion) | ReplyBody::Stream { completion, .. } => ReplyBody::Stream { completion, cut },
            other => other,
        };
        self
    }

    fn completion_mut(&mut self) -> Option<&mut Completion> {
        match &mut self.body {
            ReplyBody::Json(completion) | ReplyBody::Stream { completion, .. } => Some(completion),
            _ => None,
        }
    }

    /// Reports this usage (`prompt_tokens`, `completion_tokens`).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Reply {
        if let Some(completion) = self.completion_mut() {
            completion.usage = Some((input_tokens, output_tokens));
        }
        self
    }

    /// Adds `reasoning_content`.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Reply {
        if let Some(completion) = self.completion_mut() {
            completion.reasoning = Some(reasoning.into());
        }
        self
    }

    /// Overrides the finish reason.
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Reply {
        if let Some(completion) = self.completion_mut() {
            completion.finish_reason = Some(reason.into());
        }
        self
    }

    /// Adds a response header (e.g. `Retry-After`).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Holds the whole reply until `gate` is released.
    pub fn after_release(mut self, gate: &Gate) -> Reply {
        self.release_gate = Some(gate.clone());
        self
    }

    /// For streamed replies: sends the first half of the chunks, then waits for `gate`.
    pub fn hold_mid_stream(mut self, gate: &Gate) -> Reply {
        self.mid_stream_gate = Some(gate.clone());
        self
    }

    /// Accepts the request and never sends a byte, not even a response head, until the server
    /// is dropped: a provider that hangs (liveness tests).
    pub fn never_answers() -> Reply {
        Reply::text("never sent").after_release(&Gate::new())
    }

    /// A streamed answer of `content` that sends its response head and the first half of its
    /// chunks, then nothing more until the server is dropped: a stream that stalls mid-answer.
    pub fn stalls_mid_stream(content: impl Into<String>) -> Reply {
        Reply::sse(Reply::text(content)).hold_mid_stream(&Gate::new())
    }

    /// Waits this long before answering. For timeout tests only; order tests use gates.
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = Some(delay);
        self
    }

    fn gates(&self) -> impl Iterator<Item = &Gate> {
        self.release_gate.iter().chain(self.mid_stream_gate.iter())
    }
}

#[derive(Debug, Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    gates: Vec<Gate>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    request_arrived: Condvar,
    shutdown: AtomicBool,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running server. Dropping it stops accepting and releases every gate.
#[derive(Debug)]
pub struct ScriptedServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Binds `127.0.0.1:0` and serves `replies` in order.
    pub fn start(replies: Vec<Reply>) -> ScriptedServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|err| panic!("bind 127.0.0.1:0: {err}"));
        let address = listener.local_addr().unwrap_or_else(|err| panic!("local address: {err}"));
        let shared = Arc::new(Shared::default());
        for reply in replies {
            push_reply(&shared, reply);
        }
        let acceptor_shared = Arc::clone(&shared);
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if acceptor_shared.shutdown.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let connection_shared = Arc::clone(&acceptor_shared);
                std::thread::spawn(move || serve_connection(stream, &connection_shared));
            }
        });
        ScriptedServer { address, shared, acceptor: Some(acceptor) }
    }

    /// `http://127.0.0.1:<port>/v1`, the base URL a provider is configured with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Appends a reply to the queue.
    pub fn push(&self, reply: Reply) {
        push_reply(&self.shared, reply);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Replies still queued.
    pub fn remaining(&self) -> usize {
        self.shared.lock().replies.len()
    }

    /// Blocks until at least `count` requests arrived; panics after `limit` (a test failure,
    /// not a synchronisation sleep).
    pub fn wait_for_requests(&self, count: usize, limit: Duration) -> Vec<RecordedRequest> {
        let deadline = Instant::now() + limit;
        let mut state = self.shared.lock();
        while state.requests.len() < count {
            let now = Instant::now();
            assert!(now < deadline, "only {} of {count} requests arrived within {limit:?}", state.requests.len());
            state = self
                .shared
                .request_arrived
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state.requests.clone()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        for gate in &self.shared.lock().gates {
            gate.release();
        }
        // Wake the blocking accept so the acceptor sees the flag.
        let _ = TcpStream::connect(self.address);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn push_reply(shared: &Shared, reply: Reply) {
    let mut state = shared.lock();
    let gates: Vec<Gate> = reply.gates().cloned().collect();
    state.gates.extend(gates);
    state.replies.push_back(reply);
}

/// Serves requests on one connection until the client closes it or a reply ends it.
fn serve_connection(stream: TcpStream, shared: &Shared) {
    let Ok(write_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let mut writer = write_half;
    loop {
        let Some(request) = read_request(&mut reader) else { return };
        let client_closes = request.header("connection").is_some_and(|value| value.eq_ignore_ascii_case("close"));
        let (reply, request_number) = {
            let mut state = shared.lock();
            state.requests.push(request.clone());
            shared.request_arrived.notify_all();
            let number = state.requests.len();
            (state.replies.pop_front(), number)
        };
        let reply = reply.unwrap_or_else(|| exhausted_reply(request_number));
        let reply = match &reply.responder {
            Some(Responder(respond)) => respond(&request),
            None => reply,
        };
        if let Some(gate) = &reply.release_gate {
            gate.wait();
        }
        if let Some(delay) = reply.delay {
            std::thread::sleep(delay);
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let keep_alive = write_reply(&mut writer, &reply, request_number).is_ok_and(|keep| keep);
        if !keep_alive || client_closes {
            let _ = writer.shutdown(Shutdown::Both);
            return;
        }
    }
}

fn exhausted_reply(request_number: usize) -> Reply {
    let message = format!("scripted server: script exhausted (request {request_number} has no scripted reply)");
    Reply::status(500, json!({"error": {"message": message, "type": "server_error"}}).to_string())
}

/// Reads one request (head + `Content-Length` body); `None` at end of connection or on a
/// request this server cannot read.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<RecordedRequest> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let read = reader.by_ref().take((MAX_HEAD_BYTES - head.len()) as u64).read_until(b'\n', &mut head).ok()?;
        if read == 0 {
            return None;
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            if before == 0 {
                head.clear();
                continue;
            }
            break;
        }
        if head.len() >= MAX_HEAD_BYTES {
            return None;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.lines();
    let mut request_line = lines.next()?.split_whitespace();
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    if length > MAX_BODY_BYTES {
        return None;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(RecordedRequest {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw_body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Writes the reply; `Ok(true)` when the connection may serve another request.
fn write_reply(writer: &mut TcpStream, reply: &Reply, request_number: usize) -> std::io::Result<bool> {
    match &reply.body {
        ReplyBody::Json(completion) => {
            let body = completion_json(completion, request_number).to_string();
            write_full(writer, 200, "application/json", &reply.headers, body.as_bytes())?;
            Ok(true)
        }
        ReplyBody::Raw { status, content_type, body } => {
            write_full(writer, *status, content_type, &reply.headers, body)?;
            Ok(true)
        }
        ReplyBody::Stream { completion, cut } => {
            let mut events = stream_chunks(completion, request_number);
            if *cut {
                // Everything before the finish chunk, cut in half: never a finish reason.
                let before_finish =
                    events.iter().position(|event| event.contains("\"finish_reason\":\"")).unwrap_or(events.len());
                events.truncate(before_finish.div_ceil(2).max(1));
            }
            write_stream(writer, reply, &data_frames(&events))?;
            Ok(false)
        }
        ReplyBody::Events(events) => {
            write_stream(writer, reply, &data_frames(events))?;
            Ok(false)
        }
        ReplyBody::Frames(frames) => {
            write_stream(writer, reply, frames)?;
            Ok(false)
        }
    }
}

fn write_full(
    writer: &mut TcpStream,
    status: u16,
    content_type: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: keep-alive\r\n",
        reason_phrase(status),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes())?;
    writer.write_all(body)?;
    writer.flush()
}

/// Each payload as one unnamed SSE event.
fn data_frames(events: &[String]) -> Vec<String> {
    events.iter().map(|event| format!("data: {event}\n\n")).collect()
}

/// Writes the stream head, then `frames` verbatim.
fn write_stream(writer: &mut TcpStream, reply: &Reply, frames: &[String]) -> std::io::Result<()> {
    let mut head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n"
            .to_owned();
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes())?;
    writer.flush()?;
    let hold_at = reply.mid_stream_gate.as_ref().map(|gate| (frames.len().div_ceil(2), gate));
    for (index, frame) in frames.iter().enumerate() {
        if let Some((at, gate)) = hold_at
            && index == at
        {
            gate.wait();
        }
        writer.write_all(frame.as_bytes())?;
        writer.flush()?;
    }
    Ok(())
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn finish_reason_of(completion: &Completion) -> String {
    completion
        .finish_reason
        .clone()
        .unwrap_or_else(|| if completion.tool_calls.is_empty() { "stop" } else { "tool_calls" }.to_owned())
}

fn usage_json((input, output): (u64, u64)) -> Value {
    json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
}

fn completion_json(completion: &Completion, request_number: usize) -> Value {
    let mut message = json!({"role": "assistant", "content": completion.content});
    if let Some(reasoning) = &completion.reasoning {
        message["reasoning_content"] = Value::from(reasoning.as_str());
    }
    if !completion.tool_calls.is_empty() {
        message["tool_calls"] = completion
            .tool_calls
            .iter()
            .map(|(id, name, arguments)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}))
            .collect();
    }
    let mut body = json!({
        "id": format!("chatcmpl-scripted-{request_number}"),
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason_of(completion)}],
    });
    if let Some(usage) = completion.usage {
        body["usage"] = usage_json(usage);
    }
    body
}

/// The `data:` payloads of a streamed completion, `[DONE]` last.
fn stream_chunks(completion: &Completion, request_number: usize) -> Vec<String> {
    let chunk = |delta: Value, finish_reason: Value| {
        json!({
            "id": format!("chatcmpl-scripted-{request_number}"),
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
        .to_string()
    };
    let mut events = vec![chunk(json!({"role": "assistant"}), Value::Null)];
    if let Some(reasoning) = &completion.reasoning {
        for piece in pieces(reasoning, TEXT_DELTA_CHARS) {
            events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
        }
    }
    if let Some(content) = &completion.content {
        for piece in pieces(content, TEXT_DELTA_CHARS) {
            events.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (index, (id, name, arguments)) in completion.tool_calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in pieces(arguments, ARGUMENT_FRAGMENT_CHARS) {
            events
                .push(chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), Value::Null));
        }
    }
    events.push(chunk(json!({}), Value::from(finish_reason_of(completion))));
    if let Some(usage) = completion.usage {
        events.push(
            json!({
                "id": format!("chatcmpl-scripted-{request_number}"),
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "scripted",
                "choices": [],
                "usage": usage_json(usage),
            })
            .to_string(),
        );
    }
    events.push("[DONE]".to_owned());
    events
}

/// `text` in pieces of at most `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|piece| piece.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(server: &ScriptedServer, body: &str) -> String {
        let mut stream = TcpStream::connect(server.address()).unwrap();
        write!(stream, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    #[test]
    fn serves_in_order_records_and_reports_exhaustion() {
        let server = ScriptedServer::start(vec![Reply::text("one").with_usage(3, 4)]);
        let first = post(&server, r#"{"model":"m"}"#);
        assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
        assert!(first.contains(r#""content":"one""#) && first.contains(r#""prompt_tokens":3"#), "{first}");
        let second = post(&server, "not json");
        assert!(second.starts_with("HTTP/1.1 500") && second.contains("script exhausted"), "{second}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].path, "/v1/chat/completions");
        assert_eq!(requests[0].header("Authorization"), Some("Bearer k"));
        assert_eq!(requests[0].body["model"], "m");
        assert_eq!(requests[1].body, Value::Null);
        assert_eq!(requests[1].raw_body, "not json");
    }

    #[test]
    fn streams_fragment_arguments_and_cut_streams_have_no_finish() {
        let completion = Completion {
            content: Some("hello world".into()),
            tool_calls: vec![("c1".into(), "shell".into(), r#"{"command":"ls -la"}"#.into())],
            usage: Some((1, 2)),
            ..Completion::default()
        };
        let events = stream_chunks(&completion, 1);
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
        let fragments = events
            .iter()
            .filter(|event| event.contains(r#""arguments":""#) && !event.contains(r#""arguments":"""#))
            .count();
        assert!(fragments > 1, "{events:?}");
        let server = ScriptedServer::start(vec![Reply::sse_cut(Reply::text("a fairly long answer text"))]);
        let answer = post(&server, "{}");
        assert!(
            answer.contains("data: ") && !answer.contains("finish_reason\":\"") && !answer.contains("[DONE]"),
            "{answer}"
        );
    }
}
