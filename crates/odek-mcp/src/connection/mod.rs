//! One live connection to an MCP server (spec `mcp-client.md` §5, §7–§9, §11, §13, §14): a stdio
//! server process with the single writer and the bounded reader that routes responses by integer
//! id, or \[beyond\] a Streamable HTTP endpoint (`http`), whose POSTed answers and event streams
//! are routed the same way. Answers to server-initiated requests, deadlines with progress resets,
//! cancellation, exit detection and the shutdown sequence are shared. It knows nothing of tools:
//! `discovery` and `hub` build the protocol on top, and the frames it writes and reads are `wire`'s.
//!
//! Start at [`Connection::spawn`] (stdio), [`Connection::connect_http`] and [`Connection::request`].

mod http;

pub(crate) use http::HttpParams;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant as StdInstant};

use serde::Deserialize;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{OnceCell, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::bounded_lines::{BoundedLineReader, LineError, Overflow};
use crate::elicitation::{
    DeclineReason, ELICITATION_METHOD, ElicitationAction, ElicitationAnswer, ElicitationKind, ElicitationMode,
    ElicitationSettings, Elicited, MAX_OPEN_ELICITATIONS, read_elicitation, result_json,
};
use crate::error::{Cause, DeadlineLimit, McpError, RequestFailure};
use crate::observer::{McpEvent, McpObserver};
use crate::process::{
    ServerCommand, ServerProcess, SpawnError, exit_status, kill_process_group, os_error_text, spawn_server,
};
use crate::server_lines::{ServerLineSink, log_message_lines, progress_line};
use crate::wire::{
    Message, Params, ResultFrame, RpcError, encode_cancelled, encode_request, encode_server_request_error,
    encode_server_request_result, integer_id, progress_token, request_params, server_request_reply,
};

/// Messages the writer queue holds before senders wait.
pub(crate) const WRITER_QUEUE: usize = 32;
/// Progress can extend a request at most this long after its first dispatch (3600 s).
pub const PROGRESS_CAP: Duration = Duration::from_secs(3600);
/// Shutdown: how long the writer may take to finish (1 s).
pub(crate) const WRITER_GRACE: Duration = Duration::from_secs(1);
/// Shutdown: how long the process may take to exit after stdin closes (5 s).
pub const EXIT_GRACE: Duration = Duration::from_secs(5);
/// After the process exited, how long stdout may stay open (a grandchild holding it) before
/// waiting requests are failed anyway (1 s).
pub(crate) const EOF_AFTER_EXIT_GRACE: Duration = Duration::from_secs(1);

const QUEUED: u8 = 0;
const DISPATCHED: u8 = 1;
const CANCELLED: u8 = 2;

static CLOCK_BASE: LazyLock<StdInstant> = LazyLock::new(StdInstant::now);

fn clock_now() -> u64 {
    u64::try_from(CLOCK_BASE.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn clock_instant(nanos: u64) -> Instant {
    Instant::from_std(*CLOCK_BASE + Duration::from_nanos(nanos))
}

/// The caller's bounds on one request: an optional deadline and an optional cancellation.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    pub deadline: Option<Instant>,
    pub cancel: Option<CancellationToken>,
}

/// How a process ended: exit code, `128 + signal` when killed by a signal, `-1` when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExitInfo {
    pub status: i32,
    /// True when odek caused the exit (shutdown); such an exit never triggers a restart.
    pub caused_by_odek: bool,
}

/// Why the connection stopped taking requests.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Closed {
    /// stdout reached EOF or the process exited.
    Eof,
    /// A response line exceeded `max_response_bytes`; never reopened.
    Oversize { limit: usize },
    /// The first write error, sticky.
    WriteFailed(String),
    /// odek closed the connection.
    Shutdown,
    /// \[beyond\] An HTTP server answered 404 to a request carrying its session id: the session
    /// expired, and the next call starts a new one.
    SessionExpired,
    /// \[beyond\] HTTP+SSE: the event stream could not be opened, for this reason; nothing was
    /// sent.
    Refused(Cause),
}

impl Closed {
    /// The failure of a waiting request; `dispatched` says whether the writer began writing it.
    fn for_pending(&self, server: &str, dispatched: bool) -> RequestFailure {
        match self {
            Closed::Eof | Closed::Shutdown if dispatched => RequestFailure::OutcomeUnknown(Cause::ClosedBeforeResponse),
            Closed::Eof | Closed::Shutdown => RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch),
            Closed::Oversize { limit } => RequestFailure::ResponseTooLarge { server: server.to_owned(), limit: *limit },
            Closed::WriteFailed(error) => RequestFailure::NotDispatched(Cause::Write(error.clone())),
            Closed::SessionExpired if dispatched => RequestFailure::OutcomeUnknown(Cause::SessionExpired),
            Closed::SessionExpired => RequestFailure::NotDispatched(Cause::SessionExpired),
            Closed::Refused(cause) => RequestFailure::NotDispatched(cause.clone()),
        }
    }

    fn for_new(&self) -> RequestFailure {
        match self {
            Closed::Eof | Closed::Shutdown => RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch),
            Closed::Oversize { .. } => RequestFailure::NotDispatched(Cause::ClosedAfterOversize),
            Closed::WriteFailed(error) => RequestFailure::NotDispatched(Cause::Write(error.clone())),
            Closed::SessionExpired => RequestFailure::NotDispatched(Cause::SessionExpired),
            Closed::Refused(cause) => RequestFailure::NotDispatched(cause.clone()),
        }
    }
}

/// Shared between a waiting caller, the writer and the reader.
#[derive(Debug)]
struct RequestState {
    phase: AtomicU8,
    /// Clock nanos of the first dispatch (0 until dispatched).
    dispatched_at: AtomicU64,
    /// Clock nanos of the latest dispatch or progress notification.
    activity: AtomicU64,
    /// Only `tools/call` carries a progress token; progress for other ids is ignored.
    accepts_progress: bool,
    /// Cancelled once the caller stopped waiting (an HTTP exchange then drops its response).
    abandoned: CancellationToken,
}

type Reply = Result<ResultFrame, RequestFailure>;

#[derive(Debug)]
struct Pending {
    reply: oneshot::Sender<Reply>,
    state: Arc<RequestState>,
}

/// Waiting requests by id. Keys are only ever inserted by odek (its own sequential ids); a
/// server's ids are only looked up, so a flood of crafted ids cannot build long probe chains and
/// a multiplicative hash (no SipHash) is enough.
type PendingMap = HashMap<i64, Pending, BuildHasherDefault<RequestIdHasher>>;

/// Fibonacci hashing of one `i64`: consecutive ids land far apart.
#[derive(Default)]
struct RequestIdHasher(u64);

impl Hasher for RequestIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, id: i64) {
        self.0 = id.cast_unsigned().wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[derive(Debug)]
struct Outgoing {
    bytes: Vec<u8>,
    /// The request's id (`None` for notifications and answers): an HTTP exchange fails it.
    id: Option<i64>,
    /// Set for requests: the writer skips the message if the caller gave up while it was queued.
    request: Option<Arc<RequestState>>,
}

struct Shared {
    server: String,
    max_response_bytes: usize,
    timeout: Duration,
    pending: Mutex<PendingMap>,
    closed: Mutex<Option<Closed>>,
    stale: Arc<AtomicBool>,
    /// Told about progress notifications, for the run's liveness.
    observer: Arc<dyn McpObserver>,
    lines: ServerLineSink,
    writer: mpsc::Sender<Outgoing>,
    /// Cancelled when odek closes the connection: the writer stops (closing stdin) and the
    /// process owner starts the exit grace period.
    stop: CancellationToken,
    exit: watch::Sender<Option<ExitInfo>>,
    /// \[beyond\] Itself, for the tasks a line starts (an elicitation waits for its answer).
    this: Weak<Shared>,
    /// \[beyond\] Who answers `elicitation/create`; unset: `-32601` as for any other method.
    elicitation: OnceLock<ElicitationSettings>,
    /// \[beyond\] Elicitations waiting for their answer: while one is, the server's own timeout
    /// of a dispatched `tools/call` does not run out (a person is answering).
    asking: AtomicUsize,
}

impl Shared {
    /// The state of a new connection (`limits`: `max_response_bytes`, the request timeout), the
    /// writer queue's receiving end and the exit watch.
    fn new(
        server: &str,
        limits: (usize, Duration),
        stale: Arc<AtomicBool>,
        observer: Arc<dyn McpObserver>,
        lines: ServerLineSink,
    ) -> (Arc<Shared>, mpsc::Receiver<Outgoing>, watch::Receiver<Option<ExitInfo>>) {
        let (writer, writer_rx) = mpsc::channel(WRITER_QUEUE);
        let (exit, exit_rx) = watch::channel(None);
        let (max_response_bytes, timeout) = limits;
        let shared = Arc::new_cyclic(|this| Shared {
            server: server.to_owned(),
            max_response_bytes,
            timeout,
            pending: Mutex::new(PendingMap::default()),
            closed: Mutex::new(None),
            stale,
            observer,
            lines,
            writer,
            stop: CancellationToken::new(),
            exit,
            this: this.clone(),
            elicitation: OnceLock::new(),
            asking: AtomicUsize::new(0),
        });
        (shared, writer_rx, exit_rx)
    }

    /// Marks the connection closed (first reason wins) and fails every waiting request.
    fn close(&self, reason: Closed) {
        {
            let mut closed = self.closed.lock().unwrap_or_else(PoisonError::into_inner);
            if closed.is_none() {
                *closed = Some(reason);
            }
        }
        self.fail_pending();
    }

    fn fail_pending(&self) {
        let Some(reason) = self.closed_reason() else { return };
        let drained: Vec<Pending> = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.drain().map(|(_, waiting)| waiting).collect()
        };
        for waiting in drained {
            // A request still queued is withdrawn so the writer can never send it later.
            let withdrawn =
                waiting.state.phase.compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire).is_ok();
            let _ = waiting.reply.send(Err(reason.for_pending(&self.server, !withdrawn)));
        }
    }

    fn closed_reason(&self) -> Option<Closed> {
        self.closed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Fails the waiting request `id` (an HTTP exchange that ended without its answer).
    fn fail_request(&self, id: i64, failure: RequestFailure) {
        let waiting = self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        if let Some(waiting) = waiting {
            let _ = waiting.reply.send(Err(failure));
        }
    }

    /// Whether request `id` still waits for its answer.
    fn is_pending(&self, id: i64) -> bool {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).contains_key(&id)
    }

    /// Queues a message without waiting (replies to server requests, cancellations). When the
    /// 32-message queue is full the message is dropped: a server that does not read its stdin
    /// gets no answers, and odek's memory stays bounded whatever it sends.
    fn send_detached(&self, bytes: Vec<u8>) {
        let _ = self.writer.try_send(Outgoing { bytes, id: None, request: None });
    }
}

/// A running server process and its pipes.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    next_id: AtomicI64,
    pid: Option<u32>,
    exit: watch::Receiver<Option<ExitInfo>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    writer_task: Mutex<Option<JoinHandle<()>>>,
    shutdown_once: OnceCell<()>,
    /// \[beyond\] The HTTP endpoint, for a Streamable HTTP server (no process then).
    http: Option<Arc<http::HttpLink>>,
    /// \[beyond\] A stateless revision's `_meta` members, merged into every request's params.
    request_meta: std::sync::OnceLock<serde_json::Map<String, serde_json::Value>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("server", &self.shared.server).field("pid", &self.pid).finish()
    }
}

/// Everything a connection needs besides the command line.
pub(crate) struct SpawnParams<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a std::collections::BTreeMap<String, String>,
    pub max_response_bytes: usize,
    pub timeout: Duration,
    pub stale: Arc<AtomicBool>,
    pub observer: Arc<dyn McpObserver>,
    /// \[beyond\] The sandbox this start of the server is confined in (a fresh one per start).
    pub sandbox: Option<odek_sandbox::Sandbox>,
    /// \[beyond\] The server's working directory; `None`: odek's own.
    pub cwd: Option<&'a std::path::Path>,
}

impl Connection {
    /// Spawns the server (no shell, own process group, scrubbed environment, piped stdio) and
    /// starts its writer, reader, stderr and process-owner tasks. No protocol message is sent yet.
    pub fn spawn(params: SpawnParams<'_>) -> Result<Arc<Connection>, McpError> {
        let command = ServerCommand { command: params.command, args: params.args, env: params.env, cwd: params.cwd };
        let ServerProcess { child, stdin, stdout, lines, stderr_task, confinement } =
            spawn_server(params.server, command, Arc::clone(&params.observer), params.sandbox.as_ref()).map_err(
                |err| match err {
                    SpawnError::Start(error) => McpError::StartCommand {
                        server: params.server.to_owned(),
                        command: params.command.to_owned(),
                        error: os_error_text(&error),
                    },
                    other => McpError::Spawn { server: params.server.to_owned(), error: other.to_string() },
                },
            )?;
        let pid = child.id();

        let limits = (params.max_response_bytes, params.timeout);
        let (shared, writer_rx, exit_rx) = Shared::new(params.server, limits, params.stale, params.observer, lines);

        let writer_task = tokio::spawn(run_writer(Arc::clone(&shared), stdin, writer_rx));
        let reader_task = tokio::spawn(run_reader(Arc::clone(&shared), stdout));
        let exit_task = tokio::spawn(own_process(Arc::clone(&shared), child, confinement));

        Ok(Arc::new(Connection {
            shared,
            next_id: AtomicI64::new(1),
            pid,
            exit: exit_rx,
            tasks: Mutex::new(vec![reader_task, stderr_task, exit_task]),
            writer_task: Mutex::new(Some(writer_task)),
            shutdown_once: OnceCell::new(),
            http: None,
            request_meta: std::sync::OnceLock::new(),
        }))
    }

    /// \[beyond\] Has `settings` answer the server's `elicitation/create` requests (once; a
    /// later call changes nothing). Without it they get `-32601`.
    pub fn answer_elicitations(&self, settings: ElicitationSettings) {
        let _ = self.shared.elicitation.set(settings);
    }

    /// The server name this connection belongs to.
    pub fn server(&self) -> &str {
        &self.shared.server
    }

    /// Whether this is a Streamable HTTP connection (no process, no exit status).
    pub fn is_remote(&self) -> bool {
        self.http.is_some()
    }

    /// Tells an HTTP connection the protocol version `initialize` settled on (sent as
    /// `MCP-Protocol-Version` from 2025-06-18 on); nothing for stdio.
    /// \[beyond\] A stateless revision (2026-07-28): every later request carries `meta` in its
    /// `params._meta`; set once, before the first request.
    pub fn set_request_meta(&self, meta: serde_json::Map<String, serde_json::Value>) {
        let _ = self.request_meta.set(meta);
    }

    pub fn set_protocol_version(&self, version: &str) {
        if let Some(http) = &self.http {
            http.set_protocol_version(version);
        }
    }

    /// After the handshake: an HTTP connection opens the server's standalone event stream (GET),
    /// when the server offers one; nothing for stdio.
    pub fn open_server_stream(&self) {
        if let Some(http) = self.http.as_ref().filter(|http| !http.is_legacy()) {
            let task = tokio::spawn(http::listen(Arc::clone(&self.shared), Arc::clone(http)));
            self.tasks.lock().unwrap_or_else(PoisonError::into_inner).push(task);
        }
    }

    /// After [`Connection::open_server_stream`]: waits, at most `limit`, until the standalone
    /// stream's first `GET` was answered; at once for stdio and HTTP+SSE.
    pub async fn server_stream_settled(&self, limit: Duration) {
        if let Some(http) = self.http.as_ref().filter(|http| !http.is_legacy()) {
            http.stream_settled(limit).await;
        }
    }

    /// \[beyond\] Whether this Streamable HTTP connection's url serves the deprecated HTTP+SSE
    /// transport instead (see `HttpLink::serves_legacy_sse`); `false` for stdio and HTTP+SSE.
    pub async fn serves_legacy_sse(&self, limit: Duration) -> bool {
        match self.http.as_ref().filter(|http| !http.is_legacy()) {
            Some(http) => http.serves_legacy_sse(limit).await,
            None => false,
        }
    }

    /// Whether an HTTP server issued a session id (on `initialize`); never for stdio.
    pub fn session_issued(&self) -> bool {
        self.http.as_ref().is_some_and(|http| http.session().is_some())
    }

    /// The process exit, once observed.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// \[beyond\] The process exit, waited for at most `limit`; `None` when it did not come by
    /// then, and at once over HTTP (no process).
    pub async fn exit_within(&self, limit: Duration) -> Option<ExitInfo> {
        if self.http.is_some() {
            return None;
        }
        let mut exit = self.exit.clone();
        let exited = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
        exited.ok().and_then(|exit| exit.ok().and_then(|info| *info))
    }

    /// \[beyond\] The last non-blank line the server wrote on stderr, as it was forwarded
    /// (cleaned, redacted); `None` for a server that wrote none, and over HTTP.
    pub fn last_stderr_line(&self) -> Option<String> {
        self.shared.lines.last_stderr_line()
    }

    /// True once the connection can no longer answer requests.
    pub fn is_dead(&self) -> bool {
        self.exit_info().is_some() || self.shared.closed_reason().is_some()
    }

    /// True when the server itself ended the connection (process exit or stdout EOF not caused
    /// by odek): the next call may restart it. Never after an oversized response line.
    pub fn restartable(&self) -> bool {
        let server_exited = |exit: Option<ExitInfo>| exit.is_some_and(|exit| !exit.caused_by_odek);
        match self.shared.closed_reason() {
            Some(Closed::Oversize { .. } | Closed::Shutdown) => false,
            Some(Closed::SessionExpired | Closed::Refused(_)) => true,
            Some(Closed::WriteFailed(_)) => server_exited(self.exit_info()),
            Some(Closed::Eof) => self.exit_info().is_none_or(|exit| !exit.caused_by_odek),
            None => server_exited(self.exit_info()),
        }
    }

    /// Sends a notification (no id, no reply) through the writer queue, waiting at most until
    /// the server timeout for room (over HTTP: until its POST was answered, as long at most).
    pub async fn notify(&self, bytes: Vec<u8>) {
        if self.shared.closed_reason().is_some() {
            return;
        }
        if let Some(http) = &self.http {
            // Over HTTP the notification's own exchange is awaited, so what follows it
            // (`notifications/initialized`, then the listing) reaches the server in that order.
            return http::notify(&self.shared, http, bytes).await;
        }
        let _ = tokio::time::timeout(
            self.shared.timeout,
            self.shared.writer.send(Outgoing { bytes, id: None, request: None }),
        )
        .await;
    }

    /// Sends one request and waits for its response, within the server's `timeout_seconds`
    /// (progress extends a `tools/call`) and the caller's bounds. `method` is one of odek's
    /// protocol methods (written unescaped); `params` is written into the same line buffer.
    pub async fn request(
        &self,
        method: &'static str,
        params: Params<'_>,
        options: &CallOptions,
    ) -> Result<ResultFrame, RequestFailure> {
        self.request_bounded(method, params, options, Some(self.shared.timeout)).await
    }

    /// \[beyond\] As [`Connection::request`], bounded by `deadline` alone, not by the server's
    /// `timeout_seconds`: the start-up requests (`initialize`, `tools/list`), which the
    /// start-up deadline bounds as a whole.
    pub async fn request_until(
        &self,
        method: &'static str,
        params: Params<'_>,
        deadline: Instant,
    ) -> Result<ResultFrame, RequestFailure> {
        let options = CallOptions { deadline: Some(deadline), cancel: None };
        self.request_bounded(method, params, &options, None).await
    }

    /// The one request path: `timeout` is the per-request limit (`None`: the caller's deadline
    /// alone, which must then be set).
    async fn request_bounded(
        &self,
        method: &'static str,
        params: Params<'_>,
        options: &CallOptions,
        timeout: Option<Duration>,
    ) -> Result<ResultFrame, RequestFailure> {
        if let Some(reason) = self.shared.closed_reason() {
            return Err(reason.for_new());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let bytes = encode_request(id, method, params);
        let bytes = match self.request_meta.get() {
            Some(meta) => crate::wire::with_request_meta(bytes, meta),
            None => bytes,
        };
        let enqueued_at = clock_now();
        let state = Arc::new(RequestState {
            phase: AtomicU8::new(QUEUED),
            dispatched_at: AtomicU64::new(0),
            activity: AtomicU64::new(enqueued_at),
            accepts_progress: method == "tools/call",
            abandoned: CancellationToken::new(),
        });
        let (reply_tx, mut reply_rx) = oneshot::channel();
        self.shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Pending { reply: reply_tx, state: Arc::clone(&state) });
        // From here on, every exit path goes through the guard, which settles the request.
        let mut guard = PendingGuard { shared: &self.shared, id, state: &state, settled: false };

        // A reader that closed the connection between the check above and the insert has
        // already drained the map; fail fast instead of waiting for a deadline.
        if let Some(reason) = self.shared.closed_reason() {
            guard.forget();
            return Err(reason.for_new());
        }

        let outgoing = Outgoing { bytes, id: Some(id), request: Some(Arc::clone(&state)) };
        // The queue usually has room: only a full queue needs the deadline-bounded wait.
        let sent = match self.shared.writer.try_send(outgoing) {
            Ok(()) => Ok(Ok(())),
            Err(mpsc::error::TrySendError::Closed(_)) => Ok(Err(())),
            Err(mpsc::error::TrySendError::Full(outgoing)) => {
                let enqueue_deadline = request_deadline(&state, options.deadline, timeout);
                let send = self.shared.writer.send(outgoing);
                tokio::select! {
                    biased;
                    () = cancelled(options.cancel.as_ref()) => return Err(guard.give_up(Cause::Canceled)),
                    sent = tokio::time::timeout_at(enqueue_deadline.at, send) => sent.map(|sent| sent.map_err(|_| ())),
                }
            }
        };
        match sent {
            Err(_elapsed) => {
                let limit = request_deadline(&state, options.deadline, timeout).limit;
                return Err(guard.give_up(Cause::DeadlineExceeded(limit)));
            }
            Ok(Err(())) => {
                guard.forget();
                return Err(RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch));
            }
            Ok(Ok(())) => {}
        }

        loop {
            let deadline = request_deadline(&state, options.deadline, timeout).at;
            tokio::select! {
                biased;
                reply = &mut reply_rx => {
                    guard.settled = true;
                    return match reply {
                        Ok(reply) => reply,
                        Err(_dropped) => Err(RequestFailure::OutcomeUnknown(Cause::ClosedBeforeResponse)),
                    };
                }
                () = cancelled(options.cancel.as_ref()) => return Err(guard.give_up(Cause::Canceled)),
                () = tokio::time::sleep_until(deadline) => {
                    // A progress notification may have moved the deadline while we slept.
                    let deadline = request_deadline(&state, options.deadline, timeout);
                    if deadline.at <= Instant::now() && held_for_a_person(&self.shared, &state, deadline.limit) {
                        state.activity.store(clock_now(), Ordering::Release);
                    } else if deadline.at <= Instant::now() {
                        return Err(guard.give_up(Cause::DeadlineExceeded(deadline.limit)));
                    }
                }
            }
        }
    }

    /// Spec §13, idempotent: fail waiting requests, close stdin, give the writer 1 s and the
    /// process 5 s, then SIGKILL its process group and reap it. Concurrent callers all wait for
    /// the one shutdown.
    pub async fn shutdown(&self) {
        self.shutdown_once.get_or_init(|| self.shutdown_inner()).await;
    }

    /// [`Connection::shutdown`] without the grace periods: the process group is killed at
    /// once (a server that stalled its start-up), then reaped.
    pub async fn kill(&self) {
        self.kill_group();
        self.shutdown().await;
    }

    /// Marks the connection closed and kills the server's process group now, without waiting
    /// for the reap (the process owner does that): the end of an expired shutdown drain.
    pub fn kill_group(&self) {
        self.shared.close(Closed::Shutdown);
        self.shared.stop.cancel();
        crate::process::kill_process_group(self.pid);
    }

    async fn shutdown_inner(&self) {
        self.shared.close(Closed::Shutdown);
        self.shared.stop.cancel();
        if let Some(http) = &self.http {
            // No process: stop the exchanges and the event stream, then end the session.
            let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
            let writer = self.writer_task.lock().unwrap_or_else(PoisonError::into_inner).take();
            for task in tasks.into_iter().chain(writer) {
                task.abort();
            }
            http.end_session().await;
            return;
        }
        let writer = self.writer_task.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(mut writer) = writer
            && tokio::time::timeout(WRITER_GRACE, &mut writer).await.is_err()
        {
            // Blocked on a full pipe: aborting drops stdin, which is what closing means here.
            writer.abort();
        }
        // The process owner gives the process its grace period, then kills its group; it
        // publishes the exit once the process is reaped.
        let mut exit = self.exit.clone();
        let _ = exit.wait_for(Option::is_some).await;
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        for task in tasks {
            // The reader and stderr tasks end at EOF, which the exit guarantees; bounded anyway.
            let abort = task.abort_handle();
            if tokio::time::timeout(WRITER_GRACE, task).await.is_err() {
                abort.abort();
            }
        }
    }
}

impl Drop for Connection {
    /// A connection dropped without [`Connection::shutdown`] (a caller cancelled mid-restart)
    /// still closes its process: the owner task runs the shutdown sequence in the background.
    fn drop(&mut self) {
        self.shared.close(Closed::Shutdown);
        self.shared.stop.cancel();
    }
}

/// Settles a request on every exit path of [`Connection::request`], including the caller
/// dropping the future (cancellation): removes it from the pending map, and if it had been
/// dispatched tells the server with `notifications/cancelled`.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: i64,
    state: &'a RequestState,
    settled: bool,
}

impl PendingGuard<'_> {
    /// The request will not be sent or waited for any longer.
    fn give_up(&mut self, cause: Cause) -> RequestFailure {
        self.settled = true;
        self.state.abandoned.cancel();
        self.shared.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
        if self.state.phase.compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return RequestFailure::NotDispatched(cause);
        }
        let reason = if matches!(cause, Cause::DeadlineExceeded(_)) { "timeout" } else { "cancelled" };
        self.shared.send_detached(encode_cancelled(self.id, reason));
        RequestFailure::OutcomeUnknown(cause)
    }

    fn forget(&mut self) {
        self.settled = true;
        self.state.abandoned.cancel();
        self.state.phase.store(CANCELLED, Ordering::Release);
        self.shared.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let _ = self.give_up(Cause::Canceled);
        }
    }
}

/// Completes when the token is cancelled; never without a token.
pub(crate) async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// When a request runs out of time, and which limit that is.
#[derive(Debug, Clone, Copy)]
struct RequestDeadline {
    at: Instant,
    limit: DeadlineLimit,
}

/// `min(caller deadline, last activity + timeout, first dispatch + 3600 s)`, with the limit that
/// gives it (the caller's when two fall at the same instant). Without a `timeout` only the
/// caller's deadline bounds the request; without either, a day does (never reached by odek's
/// own callers, which always give one of the two).
fn request_deadline(state: &RequestState, caller: Option<Instant>, timeout: Option<Duration>) -> RequestDeadline {
    const UNBOUNDED: Duration = Duration::from_secs(24 * 3600);
    let activity = clock_instant(state.activity.load(Ordering::Acquire));
    let mut own = RequestDeadline {
        at: activity + timeout.unwrap_or(UNBOUNDED),
        limit: timeout.map_or(DeadlineLimit::Caller, DeadlineLimit::Timeout),
    };
    let dispatched_at = state.dispatched_at.load(Ordering::Acquire);
    if timeout.is_some() && dispatched_at != 0 {
        let cap = clock_instant(dispatched_at) + PROGRESS_CAP;
        if cap < own.at {
            own = RequestDeadline { at: cap, limit: DeadlineLimit::ProgressCap };
        }
    }
    match caller {
        Some(caller) if caller <= own.at => RequestDeadline { at: caller, limit: DeadlineLimit::Caller },
        _ => own,
    }
}

/// The single writer: one message per write, in queue order; skips requests cancelled while
/// queued; the first write error is sticky and closes stdin.
async fn run_writer(shared: Arc<Shared>, mut stdin: ChildStdin, mut queue: mpsc::Receiver<Outgoing>) {
    let stop = shared.stop.cancelled();
    tokio::pin!(stop);
    loop {
        let message = tokio::select! {
            biased;
            () = &mut stop => break,
            message = queue.recv() => match message {
                Some(message) => message,
                None => break,
            },
        };
        if let Some(state) = &message.request {
            if state.phase.compare_exchange(QUEUED, DISPATCHED, Ordering::AcqRel, Ordering::Acquire).is_err() {
                continue;
            }
            let now = clock_now();
            state.dispatched_at.store(now, Ordering::Release);
            state.activity.store(now, Ordering::Release);
        }
        let written = tokio::select! {
            biased;
            () = &mut stop => break,
            written = stdin.write_all(&message.bytes) => written,
        };
        if let Err(err) = written {
            shared.close(Closed::WriteFailed(err.to_string()));
            break;
        }
    }
    // Dropping stdin closes the server's input.
    drop(stdin);
}

/// Reads stdout line by line through the bounded reader and routes each line.
async fn run_reader(shared: Arc<Shared>, stdout: ChildStdout) {
    let mut reader = BoundedLineReader::new(stdout, shared.max_response_bytes, Overflow::Fail);
    loop {
        match reader.next_line().await {
            Ok(Some(line)) => route_line(&shared, line.bytes),
            Ok(None) | Err(LineError::Io(_)) => {
                shared.close(Closed::Eof);
                return;
            }
            Err(LineError::TooLong { limit }) => {
                shared.close(Closed::Oversize { limit });
                // Stop reading at once (dropping stdout makes the server's writes fail) and run
                // the shutdown sequence: this connection is closed for good.
                drop(reader);
                shared.stop.cancel();
                return;
            }
        }
    }
}

/// Spec §7: blank, non-JSON and non-object lines are skipped; a non-empty string `method` makes
/// it a server message (§8); otherwise it is a response whose id must be a JSON integer.
fn route_line(shared: &Shared, line: Vec<u8>) {
    let (id, reply) = match Message::read(&line) {
        None | Some(Message::Unanswerable) => return,
        Some(Message::Request { method, id }) => {
            match (shared.elicitation.get(), shared.this.upgrade()) {
                (Some(settings), Some(owner)) if method == ELICITATION_METHOD => {
                    let params = request_params(&line).map(str::to_owned);
                    tokio::spawn(answer_elicitation(owner, settings.clone(), id.to_owned(), params));
                }
                _ => shared.send_detached(server_request_reply(id, &method)),
            }
            return;
        }
        Some(Message::Notification { method, params }) => {
            handle_notification(shared, &method, params);
            return;
        }
        Some(Message::Response { id, error, result }) => {
            let Some(id) = id.and_then(integer_id) else { return };
            let reply = match error {
                Some(error) => {
                    let RpcError { code, message } = RpcError::read(error);
                    Err(RequestFailure::Rpc { code, message })
                }
                None => Ok(result.unwrap_or(0..0)),
            };
            (id, reply)
        }
    };
    let waiting = shared.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    // Unknown or finished ids (late replies after a timeout) are dropped silently.
    if let Some(waiting) = waiting {
        let _ = waiting.reply.send(reply.map(|result| ResultFrame::new(line, result)));
    }
}

/// Whether a dispatched `tools/call` whose own timeout ran out waits on: a person is answering
/// an elicitation of its server. The caller's deadline and the progress cap still hold.
fn held_for_a_person(shared: &Shared, state: &RequestState, limit: DeadlineLimit) -> bool {
    state.accepts_progress
        && matches!(limit, DeadlineLimit::Timeout(_))
        && state.phase.load(Ordering::Acquire) == DISPATCHED
        && shared.asking.load(Ordering::Acquire) > 0
}

/// Counts one open elicitation for as long as it lives; when it ends, every dispatched
/// `tools/call` of the connection gets its full timeout again from now (the answer is what the
/// server waited for).
struct Asking<'a>(&'a Shared);

impl<'a> Asking<'a> {
    /// `None` when [`MAX_OPEN_ELICITATIONS`] are open already.
    fn open(shared: &'a Shared) -> Option<Asking<'a>> {
        let opened = shared.asking.fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
            (open < MAX_OPEN_ELICITATIONS).then_some(open + 1)
        });
        opened.is_ok().then_some(Asking(shared))
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        let shared = self.0;
        let now = clock_now();
        {
            let pending = shared.pending.lock().unwrap_or_else(PoisonError::into_inner);
            for waiting in pending.values().filter(|waiting| waiting.state.accepts_progress) {
                waiting.state.activity.store(now, Ordering::Release);
            }
        }
        shared.asking.fetch_sub(1, Ordering::AcqRel);
        shared.observer.activity(&shared.server);
    }
}

/// \[beyond\] Answers one `elicitation/create` (request `id`, its raw `params`): a request
/// outside the rules, or one past [`MAX_OPEN_ELICITATIONS`], gets an error and a warning;
/// otherwise the elicitor answers within the settings' timeout (else `cancel`), an accepted form
/// is checked against the form, and the event says how it ended — never what was answered.
async fn answer_elicitation(shared: Arc<Shared>, settings: ElicitationSettings, id: String, params: Option<String>) {
    let server = shared.server.clone();
    let mode = params.as_deref().map_or(ElicitationMode::Form, mode_of);
    let refuse = |reason: DeclineReason, code: i64, text: String| {
        shared.observer.warning(
            &server,
            &format!("mcp server {}: elicitation refused: {text}", odek_contract::quoting::quote(&server)),
        );
        declined(&shared, mode, None, reason);
        shared.send_detached(encode_server_request_error(&id, code, &text));
    };
    let Some(asking) = Asking::open(&shared) else {
        refuse(DeclineReason::TooMany, -32603, format!("more than {MAX_OPEN_ELICITATIONS} elicitations are open"));
        return;
    };
    let request = match read_elicitation(&server, params.as_deref()) {
        Ok(request) => request,
        Err(error) => return refuse(DeclineReason::InvalidRequest, -32602, error.to_string()),
    };
    let form = match &request.kind {
        ElicitationKind::Form(form) => Some(form.clone()),
        ElicitationKind::Url { .. } => None,
    };
    let elicited = tokio::select! {
        () = shared.stop.cancelled() => return,
        elicited = tokio::time::timeout(settings.timeout, settings.elicitor.elicit(request)) => elicited
            .unwrap_or(Elicited::Declined { action: ElicitationAction::Cancel, reason: DeclineReason::NoAnswer }),
    };
    let elicited = match (elicited, &form) {
        (Elicited::Answered(ElicitationAnswer::Accept(content)), Some(form)) => match form.check_answer(&content) {
            Ok(()) => Elicited::Answered(ElicitationAnswer::Accept(content)),
            Err(problem) => {
                shared
                    .observer
                    .warning(&server, &format!("elicitation answer does not fit the form ({problem}); cancelled"));
                Elicited::Declined { action: ElicitationAction::Cancel, reason: DeclineReason::InvalidAnswer }
            }
        },
        (elicited, _) => elicited,
    };
    drop(asking);
    let answer = match elicited {
        Elicited::Answered(answer) => {
            shared.observer.event(McpEvent::ElicitationAnswered {
                server: server.clone(),
                mode: mode.as_str(),
                action: answer.action().as_str(),
            });
            answer
        }
        Elicited::Declined { action, reason } => {
            declined(&shared, mode, Some(action), reason);
            match action {
                ElicitationAction::Cancel => ElicitationAnswer::Cancel,
                ElicitationAction::Accept | ElicitationAction::Decline => ElicitationAnswer::Decline,
            }
        }
    };
    shared.send_detached(encode_server_request_result(&id, &result_json(&answer, mode)));
}

fn declined(shared: &Shared, mode: ElicitationMode, action: Option<ElicitationAction>, reason: DeclineReason) {
    shared.observer.event(McpEvent::ElicitationDeclined {
        server: shared.server.clone(),
        mode: mode.as_str(),
        action: action.map(ElicitationAction::as_str),
        reason: reason.as_str(),
    });
}

/// The mode a request's params name (`url`, else form), for the events of one that is refused.
fn mode_of(params: &str) -> ElicitationMode {
    #[derive(Deserialize)]
    struct Mode {
        #[serde(default)]
        mode: Option<String>,
    }
    match serde_json::from_str::<Mode>(params) {
        Ok(Mode { mode: Some(mode) }) if mode == "url" => ElicitationMode::Url,
        _ => ElicitationMode::Form,
    }
}

/// Spec §8: notifications update state or are logged; nothing here is a response.
fn handle_notification(shared: &Shared, method: &str, params: Option<&str>) {
    match method {
        "notifications/tools/list_changed" => shared.stale.store(true, Ordering::Release),
        "notifications/progress" => note_progress(shared, params),
        "notifications/message" => log_message(shared, params),
        _ => {}
    }
}

fn note_progress(shared: &Shared, params: Option<&str>) {
    let Some(token) = params.and_then(progress_token) else { return };
    let pending = shared.pending.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(waiting) = pending.get(&token)
        && waiting.state.accepts_progress
        && waiting.state.phase.load(Ordering::Acquire) == DISPATCHED
    {
        waiting.state.activity.store(clock_now(), Ordering::Release);
        drop(pending);
        shared.observer.activity(&shared.server);
        if shared.observer.shows_progress()
            && let Some(line) = params.and_then(progress_line)
        {
            shared.lines.send(line);
        }
    }
}

fn log_message(shared: &Shared, params: Option<&str>) {
    #[derive(Deserialize, Default)]
    struct LogParams {
        #[serde(default)]
        level: Option<serde_json::Value>,
        #[serde(default)]
        data: Option<serde_json::Value>,
    }
    let params: LogParams = params.and_then(|raw| serde_json::from_str(raw).ok()).unwrap_or_default();
    let level = match params.level {
        Some(serde_json::Value::String(level)) if !level.is_empty() => level,
        _ => "info".to_owned(),
    };
    let data = match params.data {
        Some(serde_json::Value::String(text)) => text,
        // Compact with sorted keys, whatever order the server wrote them in.
        Some(other) => odek_contract::canonical_json::to_canonical_string(&other),
        None => String::new(),
    };
    for line in log_message_lines(&level, &data) {
        shared.lines.send(line);
    }
}

/// Owns the child process: publishes its exit, and when odek closes the connection runs the
/// end of the shutdown sequence (stdin is closed by the writer; the process gets 1 s + 5 s to
/// exit, then its process group is killed) and reaps it.
async fn own_process(shared: Arc<Shared>, mut child: Child, confinement: Option<odek_sandbox::Confinement>) {
    let pid = child.id();
    // Whether odek ended it is decided here, by which came first: a process that exited on its
    // own stays the server's doing even when odek closes the connection right after (a server
    // that dies during start-up is then reported with its exit status).
    let (status, caused_by_odek) = tokio::select! {
        status = child.wait() => (status, false),
        () = shared.stop.cancelled() => {
            // An exit that already happened was the server's own, not odek's doing.
            if let Ok(Some(status)) = child.try_wait() {
                kill_process_group(pid);
                publish_exit(&shared, Ok(status), false);
                return;
            }
            let status = match tokio::time::timeout(WRITER_GRACE + EXIT_GRACE, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    kill_process_group(pid);
                    child.wait().await
                }
            };
            (status, true)
        }
    };
    // Whatever the leader left behind in its group goes with it (and, confined, its whole cgroup).
    kill_process_group(pid);
    if let Some(confinement) = confinement {
        crate::process::finish_confinement(&shared.server, confinement, shared.observer.as_ref()).await;
    }
    publish_exit(&shared, status, caused_by_odek);
    if shared.closed_reason().is_none() {
        // Normally stdout reaches EOF right after the exit; a grandchild may hold it open.
        tokio::select! {
            () = tokio::time::sleep(EOF_AFTER_EXIT_GRACE) => {}
            () = shared.stop.cancelled() => {}
        }
        shared.close(Closed::Eof);
    }
}

fn publish_exit(shared: &Shared, status: std::io::Result<std::process::ExitStatus>, caused_by_odek: bool) {
    let status = status.map_or(-1, |status| exit_status(&status));
    shared.exit.send_replace(Some(ExitInfo { status, caused_by_odek }));
}
