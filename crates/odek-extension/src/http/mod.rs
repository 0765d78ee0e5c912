//! Streamable HTTP (MCP 2025-03-26, with 2025-06-18's `MCP-Protocol-Version`) for a [`Server`] (feature `http`): one endpoint (default
//! `/mcp`) on a TCP listener, served by hyper's HTTP/1.1 server, every message handled by the
//! same path as stdio's (`dispatch`). Start at [`Server::serve_http`] or [`Server::bind_http`],
//! whose doc lists the transport's rules; they return an [`HttpServer`] that knows its address
//! and shuts down gracefully. Here: the public API, the accept loop and the connections;
//! requests are `service`'s, sessions `session`'s, SSE streams `event_stream`'s.
//!
//! Not here: TLS (serve loopback, or put a proxy in front), HTTP/2, and the older HTTP+SSE
//! transport of MCP 2024-11-05.

mod access;
mod admission;
mod body;
mod event_stream;
mod options;
mod service;
mod session;

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

pub use event_stream::REPLAY_BUFFER_BYTES;
pub use options::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_HTTP_PATH, DEFAULT_KEEP_ALIVE_INTERVAL,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_SHUTDOWN_GRACE, HttpOptions,
};
pub use session::MAX_RETAINED_STREAMS;

use crate::server::log_to_stderr;
use crate::{Error, Server};
use admission::{Admission, Admissions};
use service::Service;
use session::Sessions;

/// How long the accept loop pauses after a failed `accept` (out of file descriptors, say)
/// before trying again, so the failure does not spin a core.
const ACCEPT_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

impl Server {
    /// Serves Streamable HTTP on `listener` until [`HttpServer::shutdown`]. Must be called
    /// inside a tokio runtime; fails before serving if a tool name is invalid or duplicated or
    /// an option is invalid. The stdio settings ([`Server::exit_on_eof`],
    /// [`Server::eof_grace`]) do not apply; [`Server::max_line_bytes`] bounds request bodies.
    ///
    /// What the transport does, rule by rule:
    /// - `POST` carries one JSON-RPC message or a batch (an array). Only notifications and
    ///   responses: `202 Accepted`, empty body. With requests: the answers as
    ///   `application/json` (one object, or an array for a batch) when nothing but answers
    ///   came. As soon as a request sends anything before its result (progress,
    ///   `notifications/message`, a request to the client such as `sampling/createMessage` or
    ///   `roots/list`, raw output), the response becomes a `text/event-stream` carrying those
    ///   messages, then the answers; it closes once every request of the POST is settled. The
    ///   client answers the server's requests with POSTs of their own, which reach the waiting
    ///   handler. A request that ends without an answer and without sending anything keeps its
    ///   stream open until the client cancels it or the session ends, as a stdio client would
    ///   keep waiting. A client whose `Accept` lacks `text/event-stream` always gets JSON, and
    ///   the other messages on the standalone stream.
    /// - Each line of output (what stdio would write) is the `data` of one SSE event with an
    ///   `id: <stream>-<n>`. Each stream keeps its most recent [`REPLAY_BUFFER_BYTES`] of
    ///   events, and a session its last [`MAX_RETAINED_STREAMS`] closed POST streams; a `GET`
    ///   with `Last-Event-ID` resumes that stream after that event (`410` once it is gone).
    /// - Sessions: the response to an `initialize` without a session carries `Mcp-Session-Id`
    ///   (64 hex characters from the OS's CSPRNG); every later request needs it: without it
    ///   `400`, with an unknown or ended one `404`. `DELETE` ends the session (running calls are
    ///   cancelled, streams closed): `204`. At [`HttpOptions::max_sessions`] the least recently
    ///   used idle session gives way, else `503`. Each session has its own tool list, in-flight
    ///   requests and server-initiated requests, as each stdio process does.
    /// - `GET` with `Accept: text/event-stream` opens the session's standalone stream for
    ///   messages unrelated to a request (`notifications/tools/list_changed` goes there while it
    ///   is open). One per session: a newer `GET` replaces the older one, whose response ends,
    ///   because a reconnecting client may not have seen its old connection die.
    ///   [`HttpOptions::get_stream`] `false` answers `GET` with `405`.
    /// - Checks, in this order: a foreign `Origin` `403`; a missing or wrong bearer token (when
    ///   configured) `401` with `WWW-Authenticate: Bearer`; another path `404`; an
    ///   `MCP-Protocol-Version` header naming a revision the server does not speak `400` (no
    ///   header: any, as MCP 2025-06-18 says for older clients); another method `405`; a body over [`Server::max_line_bytes`] `413`, without reading past the limit; a
    ///   body slower than [`HttpOptions::body_read_timeout`] `408`; headers slower than
    ///   [`HttpOptions::header_read_timeout`] close the connection. Every error status carries
    ///   a JSON-RPC error body naming the reason. `notifications/cancelled`, `ping`,
    ///   pagination, unknown methods and interceptors behave as on stdio.
    /// - Connections: at most [`HttpOptions::max_connections`] at once. One that has not yet
    ///   made a request past the origin and token checks gives way — the oldest such one is
    ///   dropped — when all are taken and a new connection comes, so connections that never
    ///   send a request, or only refused ones, cannot keep others out.
    pub fn serve_http(self, listener: TcpListener, options: HttpOptions) -> Result<HttpServer, Error> {
        options.validate()?;
        let runtime = Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let prepared = self.prepare()?;
        let local_addr = listener.local_addr().map_err(|error| Error::io("read the listener's address", error))?;
        let path = options.path.clone();
        let shutdown = CancellationToken::new();
        let service = Arc::new(Service {
            blueprint: prepared.blueprint,
            sessions: Sessions::new(options.max_sessions),
            max_body_bytes: prepared.max_line_bytes,
            options,
            runtime: runtime.clone(),
        });
        let task = runtime.spawn(accept_loop(listener, service, shutdown.clone()));
        Ok(HttpServer { local_addr, path, shutdown, task: Some(task) })
    }

    /// Binds `address` as given (`127.0.0.1:0` picks a free loopback port) and serves it; see
    /// [`Server::serve_http`].
    pub async fn bind_http(self, address: SocketAddr, options: HttpOptions) -> Result<HttpServer, Error> {
        let listener = TcpListener::bind(address).await.map_err(|error| Error::io(format!("bind {address}"), error))?;
        self.serve_http(listener, options)
    }
}

/// A running HTTP server. Dropping it shuts the server down in the background; to wait for
/// the end, call [`HttpServer::shutdown`] or [`HttpServer::wait`].
#[derive(Debug)]
pub struct HttpServer {
    local_addr: SocketAddr,
    path: String,
    shutdown: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// The address the listener is bound to (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint's URL, `http://<ip>:<port><path>` (IPv6 in brackets).
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr, self.path)
    }

    /// A handle that shuts the server down from anywhere (a signal handler, another task).
    pub fn shutdown_handle(&self) -> HttpShutdown {
        HttpShutdown(self.shutdown.clone())
    }

    /// Shuts down and waits: no new connection is accepted, every session ends (running calls
    /// are cancelled, streams closed), and open connections get
    /// [`HttpOptions::shutdown_grace`] to finish before they are dropped.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        self.join().await;
    }

    /// Waits until the server has shut down, after a [`HttpShutdown::shutdown`].
    pub async fn wait(mut self) {
        self.join().await;
    }

    async fn join(&mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Shuts an [`HttpServer`] down; cheap to clone.
#[derive(Clone, Debug)]
pub struct HttpShutdown(CancellationToken);

impl HttpShutdown {
    /// Starts the shutdown described at [`HttpServer::shutdown`]; idempotent, never blocks.
    pub fn shutdown(&self) {
        self.0.cancel();
    }
}

async fn accept_loop(listener: TcpListener, service: Arc<Service>, shutdown: CancellationToken) {
    let connection_slots = Arc::new(Semaphore::new(service.options.max_connections));
    let admissions = Arc::new(Admissions::default());
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                log_to_stderr(format_args!("accept an HTTP connection: {error}"));
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(ACCEPT_RETRY_PAUSE) => {}
                }
                continue;
            }
        };
        let slot = match Arc::clone(&connection_slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(TryAcquireError::Closed) => break,
            Err(TryAcquireError::NoPermits) => {
                // Room is made by the oldest connection not yet admitted; with none, the new
                // one waits for an admitted connection to end.
                admissions.drop_oldest();
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    slot = Arc::clone(&connection_slots).acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                }
            }
        };
        let admission = admissions.enter();
        connections.spawn(serve_connection(stream, Arc::clone(&service), shutdown.clone(), slot, admission));
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    service.sessions.end_all();
    let _ = tokio::time::timeout(service.options.shutdown_grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
}

/// One TCP connection: HTTP/1.1 with keep-alive and the header deadline, until the client
/// closes it, it is dropped to make room before it was admitted, or the server shuts down
/// (then the response in progress may finish).
async fn serve_connection(
    stream: TcpStream,
    service: Arc<Service>,
    shutdown: CancellationToken,
    _slot: OwnedSemaphorePermit,
    admission: Admission,
) {
    let _ = stream.set_nodelay(true);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(service.options.header_read_timeout);
    let admission = Arc::new(admission);
    let handler = service_fn({
        let admission = Arc::clone(&admission);
        move |request| {
            let (service, admission) = (Arc::clone(&service), Arc::clone(&admission));
            async move { Ok::<_, std::convert::Infallible>(service.respond(request, &admission).await) }
        }
    });
    let connection = builder.serve_connection(TokioIo::new(stream), handler);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = admission.dropped() => {}
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}
