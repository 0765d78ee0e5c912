//! One HTTP request in, one response out ([`Service::respond`]): the checks every request
//! passes (origin, bearer token, path, method), then `POST` (messages into the session's
//! message path, answers back as JSON or as an SSE stream), `GET` (the standalone stream, or a
//! stream resumed from `Last-Event-ID`) and `DELETE` (the session ends).
//!
//! Every status this transport answers is chosen here, each with a JSON-RPC error body naming
//! the reason. Not here: sockets and connections (`mod.rs`), the streams (`event_stream`).

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{
    ALLOW, CACHE_CONTROL, CONNECTION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, ORIGIN, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::mpsc;

use super::access::{Accepts, bearer_token_matches, origin_allowed};
use super::admission::Admission;
use super::body::{BodyError, Messages, ParseError, ResponseBody, parse_messages, read_request_body};
use super::event_stream::{EventBody, pump};
use super::options::HttpOptions;
use super::session::{CreateError, Lookup, SESSION_ID_HEADER, Session, Sessions};
use crate::dispatch::{Blueprint, Route, expects_reply, handle_message};
use crate::jsonrpc::{self, Message, RpcError, codes};
use crate::transport::{OUTGOING_QUEUE_MESSAGES, Outgoing};

/// The header a reconnecting SSE client names the last event it got with.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The header a client names the negotiated protocol revision with (MCP 2025-06-18 and later).
const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// The JSON-RPC code of errors about the HTTP exchange itself (JSON-RPC's server-error range).
const TRANSPORT_ERROR: i64 = -32000;

/// Everything one HTTP server serves with.
pub(crate) struct Service {
    pub(crate) blueprint: Blueprint,
    pub(crate) options: HttpOptions,
    pub(crate) max_body_bytes: usize,
    pub(crate) sessions: Sessions,
    pub(crate) runtime: Handle,
}

impl Service {
    /// Answers one request. Origin and token come first, so a refused caller learns nothing
    /// about paths or sessions; a request past them admits its connection (`admission`).
    pub(crate) async fn respond(
        self: Arc<Self>,
        request: Request<Incoming>,
        admission: &Admission,
    ) -> Response<ResponseBody> {
        let headers = request.headers();
        if let Some(origin) = headers.get(ORIGIN)
            && !origin_allowed(origin, &self.options.allowed_origins)
        {
            return error_response(StatusCode::FORBIDDEN, TRANSPORT_ERROR, "origin not allowed");
        }
        if let Some(token) = &self.options.bearer_token
            && !bearer_token_matches(headers, token)
        {
            let mut response =
                error_response(StatusCode::UNAUTHORIZED, TRANSPORT_ERROR, "missing or invalid bearer token");
            response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        admission.admit();
        if request.uri().path() != self.options.path {
            return error_response(StatusCode::NOT_FOUND, TRANSPORT_ERROR, "not found");
        }
        if let Some(version) = request.headers().get(PROTOCOL_VERSION_HEADER)
            && !version.to_str().is_ok_and(|version| self.blueprint.identity.protocol_version.accepts_header(version))
        {
            return error_response(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "unsupported MCP-Protocol-Version");
        }
        match *request.method() {
            Method::POST => self.post(request).await,
            Method::GET if self.options.get_stream => self.get(request.headers()),
            Method::DELETE => self.delete(request.headers()),
            _ => self.method_not_allowed(),
        }
    }

    fn method_not_allowed(&self) -> Response<ResponseBody> {
        let mut response = error_response(StatusCode::METHOD_NOT_ALLOWED, TRANSPORT_ERROR, "method not allowed");
        let allowed = if self.options.get_stream { "GET, POST, DELETE" } else { "POST, DELETE" };
        response.headers_mut().insert(ALLOW, HeaderValue::from_static(allowed));
        response
    }

    async fn post(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let accepts = Accepts::of(&parts.headers);
        if !accepts.json && !accepts.event_stream {
            return error_response(
                StatusCode::NOT_ACCEPTABLE,
                TRANSPORT_ERROR,
                "Accept must allow application/json or text/event-stream",
            );
        }
        if !is_json(&parts.headers) {
            return error_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                TRANSPORT_ERROR,
                "Content-Type must be application/json",
            );
        }
        // An unknown session is refused before its body is read.
        let lookup = self.sessions.lookup(&parts.headers);
        if matches!(lookup, Lookup::Unknown) {
            return unknown_session();
        }
        let body = match read_request_body(body, self.max_body_bytes, self.options.body_read_timeout).await {
            Ok(body) => body,
            Err(error) => return body_error_response(&error, self.max_body_bytes, self.options.body_read_timeout),
        };
        let Messages { messages, batch } = match parse_messages(&body) {
            Ok(messages) => messages,
            Err(ParseError::NotJson) => {
                return error_response(StatusCode::BAD_REQUEST, codes::PARSE_ERROR, "parse error");
            }
            Err(ParseError::EmptyBatch) => {
                return error_response(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, "empty batch");
            }
        };
        drop(body);
        let (session, created) = match lookup {
            Lookup::Found(session) => (session, false),
            Lookup::Missing if messages.iter().any(is_initialize) => {
                match self.sessions.create(&self.blueprint, &self.runtime) {
                    Ok(session) => (session, true),
                    Err(CreateError::Full) => {
                        return error_response(StatusCode::SERVICE_UNAVAILABLE, TRANSPORT_ERROR, "too many sessions");
                    }
                    Err(CreateError::Random(error)) => {
                        let message = format!("cannot create a session id: {error}");
                        return error_response(StatusCode::INTERNAL_SERVER_ERROR, TRANSPORT_ERROR, &message);
                    }
                }
            }
            Lookup::Missing => {
                return error_response(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "missing Mcp-Session-Id header");
            }
            Lookup::Unknown => return unknown_session(),
        };
        session.touch();

        let (outgoing, answers) = mpsc::channel(OUTGOING_QUEUE_MESSAGES);
        let route = Route { outgoing, hold_unanswered: true };
        let shared = Arc::clone(&session.shared);
        if !messages.iter().any(expects_reply) {
            for message in messages {
                handle_message(&shared, message, &route).await;
            }
            return status_response(StatusCode::ACCEPTED);
        }
        // Handled in a task of its own while this one reads the answers, so a batch with more
        // answers than the queue holds never waits for itself.
        self.runtime.spawn(async move {
            for message in messages {
                handle_message(&shared, message, &route).await;
            }
        });
        let mut response = self.answer(&session, answers, accepts, batch).await;
        if created && let Ok(id) = HeaderValue::from_str(&session.id) {
            response.headers_mut().insert(SESSION_ID_HEADER, id);
        }
        response
    }

    /// The response to a POST with requests. Answers are collected while nothing else comes:
    /// if every request is answered that way, they go back as `application/json` (an array
    /// for a batch). The first message of another kind (progress, a log message, a request to
    /// the client, raw output) turns the response into an SSE stream, with the answers
    /// collected so far as its first events, that closes once every request is settled. A
    /// client that does not accept SSE gets those other messages on the standalone stream.
    async fn answer(
        &self,
        session: &Arc<Session>,
        mut answers: mpsc::Receiver<Outgoing>,
        accepts: Accepts,
        batch: bool,
    ) -> Response<ResponseBody> {
        let mut replies = Vec::new();
        loop {
            let message = tokio::select! {
                message = answers.recv() => message,
                () = session.ended.cancelled() => None,
            };
            match message {
                None => return json_response(replies, batch),
                Some(Outgoing::Reply(line)) if accepts.json => replies.push(line),
                Some(Outgoing::Flush(done)) => {
                    let _ = done.send(());
                }
                Some(Outgoing::Shutdown) => {}
                Some(other) if accepts.event_stream => {
                    let stream = session.open_stream();
                    let reader = stream.attach(Some(0));
                    let mut first: Vec<Outgoing> = replies.into_iter().map(Outgoing::Reply).collect();
                    first.push(other);
                    let body = EventBody::new(Arc::clone(&stream), reader, self.options.keep_alive_interval);
                    self.runtime.spawn(pump(stream, first, answers, session.ended.clone()));
                    return event_stream_response(body);
                }
                Some(other) => {
                    let _ = session.shared.connection.outgoing.send(other).await;
                }
            }
        }
    }

    /// `GET`: the session's standalone stream (a newer `GET` replaces an older one, whose
    /// response ends), or with `Last-Event-ID` the stream that id belongs to, from the event
    /// after it.
    fn get(&self, headers: &HeaderMap) -> Response<ResponseBody> {
        if !Accepts::of(headers).event_stream {
            return error_response(StatusCode::NOT_ACCEPTABLE, TRANSPORT_ERROR, "Accept must allow text/event-stream");
        }
        let session = match self.sessions.lookup(headers) {
            Lookup::Found(session) => session,
            Lookup::Missing => {
                return error_response(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "missing Mcp-Session-Id header");
            }
            Lookup::Unknown => return unknown_session(),
        };
        session.touch();
        let (stream, after_event) = match headers.get(LAST_EVENT_ID) {
            None => (Arc::clone(&session.standalone), None),
            Some(value) => {
                let Some((key, event)) = value.to_str().ok().and_then(parse_event_id) else {
                    return error_response(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "malformed Last-Event-ID");
                };
                let Some(stream) = session.stream(key) else {
                    return error_response(StatusCode::GONE, TRANSPORT_ERROR, "the stream of Last-Event-ID is gone");
                };
                (stream, Some(event))
            }
        };
        let reader = stream.attach(after_event);
        event_stream_response(EventBody::new(stream, reader, self.options.keep_alive_interval))
    }

    /// `DELETE`: ends the session, cancelling its running calls.
    fn delete(&self, headers: &HeaderMap) -> Response<ResponseBody> {
        match self.sessions.lookup(headers) {
            Lookup::Found(session) => {
                self.sessions.end(&session);
                status_response(StatusCode::NO_CONTENT)
            }
            Lookup::Missing => {
                error_response(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "missing Mcp-Session-Id header")
            }
            Lookup::Unknown => unknown_session(),
        }
    }
}

fn is_initialize(message: &Result<Message, serde_json::Error>) -> bool {
    matches!(message, Ok(Message::Request { method, .. }) if method == "initialize")
}

/// `Content-Type: application/json`, parameters (a charset) allowed.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// `<key>-<event>`, as the streams number their events.
fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (key, event) = id.trim().split_once('-')?;
    Some((key.parse().ok()?, event.parse().ok()?))
}

fn unknown_session() -> Response<ResponseBody> {
    error_response(StatusCode::NOT_FOUND, TRANSPORT_ERROR, "unknown session")
}

fn body_error_response(error: &BodyError, max_bytes: usize, deadline: Duration) -> Response<ResponseBody> {
    let mut response = match error {
        BodyError::TooLarge => error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            TRANSPORT_ERROR,
            &format!("request body exceeds max_line_bytes={max_bytes}"),
        ),
        BodyError::TimedOut => error_response(
            StatusCode::REQUEST_TIMEOUT,
            TRANSPORT_ERROR,
            &format!("request body not received within {} ms", deadline.as_millis()),
        ),
        BodyError::Broken => error_response(StatusCode::BAD_REQUEST, TRANSPORT_ERROR, "request body unreadable"),
    };
    // The rest of the body is never read, so the connection cannot carry another request.
    response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A status with a JSON-RPC error body `{"jsonrpc":"2.0","id":null,"error":{…}}`.
fn error_response(status: StatusCode, code: i64, message: &str) -> Response<ResponseBody> {
    let mut line = jsonrpc::error_line(&Value::Null, &RpcError::new(code, message));
    line.pop();
    with_body(status, "application/json", ResponseBody::from(line))
}

fn status_response(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::empty());
    *response.status_mut() = status;
    response
}

/// The collected answers: one, or an array for a batch; `202` when none came (every request
/// was cancelled).
fn json_response(mut replies: Vec<Vec<u8>>, batch: bool) -> Response<ResponseBody> {
    if replies.is_empty() {
        return status_response(StatusCode::ACCEPTED);
    }
    for reply in &mut replies {
        if reply.last() == Some(&b'\n') {
            reply.pop();
        }
    }
    let body = if !batch && replies.len() == 1 {
        replies.pop().unwrap_or_default()
    } else {
        let mut array = Vec::with_capacity(replies.iter().map(|reply| reply.len() + 1).sum::<usize>() + 1);
        array.push(b'[');
        for (index, reply) in replies.iter().enumerate() {
            if index > 0 {
                array.push(b',');
            }
            array.extend_from_slice(reply);
        }
        array.push(b']');
        array
    };
    with_body(StatusCode::OK, "application/json", ResponseBody::from(body))
}

fn event_stream_response(body: EventBody) -> Response<ResponseBody> {
    let mut response = with_body(StatusCode::OK, "text/event-stream", ResponseBody::Events(Box::new(body)));
    response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn with_body(status: StatusCode, content_type: &'static str, body: ResponseBody) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_and_content_types() {
        assert_eq!(parse_event_id("3-17"), Some((3, 17)));
        assert_eq!(parse_event_id("0-1"), Some((0, 1)));
        assert_eq!(parse_event_id("3"), None);
        assert_eq!(parse_event_id("a-1"), None);
        assert_eq!(parse_event_id("1--1"), None);

        let mut headers = HeaderMap::new();
        assert!(!is_json(&headers));
        for (value, json) in
            [("application/json", true), ("Application/JSON; charset=utf-8", true), ("text/plain", false)]
        {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(value));
            assert_eq!(is_json(&headers), json, "{value}");
        }
    }

    #[test]
    fn answers_are_one_object_or_an_array() {
        let one = json_response(vec![b"{\"id\":1}\n".to_vec()], false);
        assert_eq!(one.status(), StatusCode::OK);
        assert!(matches!(one.body(), ResponseBody::Bytes(Some(bytes)) if &bytes[..] == b"{\"id\":1}"));
        let batch = json_response(vec![b"{\"id\":1}\n".to_vec(), b"{\"id\":2}\n".to_vec()], true);
        assert!(matches!(batch.body(), ResponseBody::Bytes(Some(bytes)) if &bytes[..] == b"[{\"id\":1},{\"id\":2}]"));
        assert_eq!(json_response(Vec::new(), true).status(), StatusCode::ACCEPTED);
    }
}
