//! One Streamable HTTP (or \[beyond\] HTTP+SSE) connection for a caller that speaks the protocol
//! itself — `odek ext check` — with every rule the client applies to a remote server (spec
//! `mcp-client.md` §14): the checked [`Endpoint`] and bearer token, the HTTP client (no
//! redirects, link-local addresses refused), at most `max_response_bytes` of one JSON body or
//! event stream, the request timeout moved by progress for `tools/call`, server requests
//! answered as odek answers them, the session id, and the closing `DELETE`. It is the HTTP side
//! of `connection` behind a small handle: nothing of tools or discovery (the caller sends
//! `initialize`, `tools/list` and `tools/call` itself).
//!
//! Start at [`RemoteSession::connect`].

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::connection::{CallOptions, Connection, HttpParams};
use crate::error::{McpError, RequestFailure};
use crate::observer::McpObserver;
use crate::remote::Endpoint;
use crate::server_config::SecretValue;
use crate::wire::{Params, ResultFrame};

/// What [`RemoteSession::connect`] needs.
pub struct RemoteParams<'a> {
    /// The server name, in errors and forwarded log lines.
    pub server: &'a str,
    /// The URL and headers, checked by [`crate::remote::check_endpoint`].
    pub endpoint: &'a Endpoint,
    /// The bearer token ([`crate::remote::bearer_token`]), sent as `Authorization: Bearer`.
    pub token: Option<&'a SecretValue>,
    /// The deprecated HTTP+SSE transport (`"type": "sse"`) instead of Streamable HTTP.
    pub legacy_sse: bool,
    /// Largest JSON body or event stream read for one request (bytes).
    pub max_response_bytes: usize,
    /// Per-request timeout; progress moves it for `tools/call`, up to an hour after dispatch.
    pub timeout: Duration,
    /// Receives warnings and the server's `notifications/message` log lines.
    pub observer: Arc<dyn McpObserver>,
}

/// A live remote connection. Dropping it stops its exchanges; [`RemoteSession::shutdown`] also
/// ends the session with `DELETE`.
#[derive(Debug)]
pub struct RemoteSession {
    connection: Arc<Connection>,
}

impl RemoteSession {
    /// Builds the HTTP client and the connection's writer. Sends nothing yet, so it fails only
    /// when the client cannot be built (the server is first reached by the first request).
    pub fn connect(params: RemoteParams<'_>) -> Result<RemoteSession, McpError> {
        let connection = Connection::connect_http(HttpParams {
            server: params.server,
            endpoint: params.endpoint,
            token: params.token,
            max_response_bytes: params.max_response_bytes,
            timeout: params.timeout,
            stale: Arc::new(AtomicBool::new(false)),
            observer: params.observer,
            legacy_sse: params.legacy_sse,
            authorizer: None,
        })?;
        Ok(RemoteSession { connection })
    }

    /// Sends one request (ids start at 1 per session) and waits for its answer within the
    /// timeout. Cancel-safe: dropping the future gives the request up as odek does
    /// (`notifications/cancelled` once dispatched). Any number may be in flight at once.
    pub async fn request(&self, method: &'static str, params: Params<'_>) -> Result<ResultFrame, RequestFailure> {
        self.connection.request(method, params, &CallOptions::default()).await
    }

    /// Sends a notification and waits, within the timeout, for its POST to be answered.
    pub async fn notify(&self, message: &[u8]) {
        self.connection.notify(message.to_vec()).await;
    }

    /// After `initialize`: the protocol version the server answered (sent as
    /// `MCP-Protocol-Version` from 2025-06-18 on).
    pub fn set_protocol_version(&self, version: &str) {
        self.connection.set_protocol_version(version);
    }

    /// After `notifications/initialized`: opens the server's standalone event stream (GET) when
    /// it offers one, as odek does.
    pub fn open_server_stream(&self) {
        self.connection.open_server_stream();
    }

    /// Whether the server issued an `Mcp-Session-Id` (on `initialize`).
    pub fn session_issued(&self) -> bool {
        self.connection.session_issued()
    }

    /// True once the session can carry no more requests (the server ended it with a 404, or it
    /// was shut down): a new session needs a new `RemoteSession`.
    pub fn is_closed(&self) -> bool {
        self.connection.is_dead()
    }

    /// Fails waiting requests, stops the exchanges and the event stream, and ends the session
    /// with `DELETE` (best effort, at most 1 s). Idempotent.
    pub async fn shutdown(&self) {
        self.connection.shutdown().await;
    }
}
