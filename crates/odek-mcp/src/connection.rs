//! One live stdio connection to an MCP server process (spec `mcp-client.md` §5, §7–§9, §11, §13):
//! the single writer, the bounded reader that routes responses by integer id, answers to
//! server-initiated requests, deadlines with progress resets, cancellation, exit detection and
//! the shutdown sequence. It knows nothing of tools; `server.rs` builds the protocol on top.
//!
//! Start at [`Connection::spawn`] and [`Connection::request`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant as StdInstant};

use serde::Deserialize;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{OnceCell, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::bounded_lines::{BoundedLineReader, LineError, Overflow};
use crate::call::{decode_literal, push_call_params};
use crate::error::{Cause, McpError, RequestFailure};
use crate::frame_scan::index_frame;
use crate::observer::McpObserver;
use crate::server_lines::{ServerLineSink, log_message_lines};

/// Messages the writer queue holds before senders wait.
pub const WRITER_QUEUE: usize = 32;
/// Progress can extend a request at most this long after its first dispatch (3600 s).
pub const PROGRESS_CAP: Duration = Duration::from_secs(3600);
/// Shutdown: how long the writer may take to finish (1 s).
pub const WRITER_GRACE: Duration = Duration::from_secs(1);
/// Shutdown: how long the process may take to exit after stdin closes (5 s).
pub const EXIT_GRACE: Duration = Duration::from_secs(5);
/// After the process exited, how long stdout may stay open (a grandchild holding it) before
/// waiting requests are failed anyway (1 s).
pub const EOF_AFTER_EXIT_GRACE: Duration = Duration::from_secs(1);

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
pub struct ExitInfo {
    pub status: i32,
    /// True when odek caused the exit (shutdown); such an exit never triggers a restart.
    pub caused_by_odek: bool,
}

/// A successful JSON-RPC response: the whole line and where its `result` sits in it, so a large
/// result is decoded in place instead of copied.
#[derive(Debug)]
pub struct ResultFrame {
    line: Vec<u8>,
    result: Range<usize>,
}

impl ResultFrame {
    /// The raw JSON text of `result` (`null` when absent).
    pub fn result_json(&self) -> &[u8] {
        if self.result.is_empty() { b"null" } else { &self.line[self.result.clone()] }
    }
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
}

impl Closed {
    /// The failure of a waiting request; `dispatched` says whether the writer began writing it.
    fn for_pending(&self, server: &str, dispatched: bool) -> RequestFailure {
        match self {
            Closed::Eof | Closed::Shutdown if dispatched => RequestFailure::OutcomeUnknown(Cause::ClosedBeforeResponse),
            Closed::Eof | Closed::Shutdown => RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch),
            Closed::Oversize { limit } => RequestFailure::ResponseTooLarge { server: server.to_owned(), limit: *limit },
            Closed::WriteFailed(error) => RequestFailure::NotDispatched(Cause::Write(error.clone())),
        }
    }

    fn for_new(&self) -> RequestFailure {
        match self {
            Closed::Eof | Closed::Shutdown => RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch),
            Closed::Oversize { .. } => RequestFailure::NotDispatched(Cause::ClosedAfterOversize),
            Closed::WriteFailed(error) => RequestFailure::NotDispatched(Cause::Write(error.clone())),
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
    lines: ServerLineSink,
    writer: mpsc::Sender<Outgoing>,
    /// Cancelled when odek closes the connection: the writer stops (closing stdin) and the
    /// process owner starts the exit grace period.
    stop: CancellationToken,
    exit: watch::Sender<Option<ExitInfo>>,
}

impl Shared {
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

    /// Queues a message without waiting (replies to server requests, cancellations). When the
    /// 32-message queue is full the message is dropped: a server that does not read its stdin
    /// gets no answers, and odek's memory stays bounded whatever it sends.
    fn send_detached(&self, bytes: Vec<u8>) {
        let _ = self.writer.try_send(Outgoing { bytes, request: None });
    }
}

/// A running server process and its pipes.
pub struct Connection {
    shared: Arc<Shared>,
    next_id: AtomicI64,
    pid: Option<u32>,
    exit: watch::Receiver<Option<ExitInfo>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    writer_task: Mutex<Option<JoinHandle<()>>>,
    shutdown_once: OnceCell<()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("server", &self.shared.server).field("pid", &self.pid).finish()
    }
}

/// Everything a connection needs besides the command line.
pub struct SpawnParams<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a std::collections::BTreeMap<String, String>,
    pub max_response_bytes: usize,
    pub timeout: Duration,
    pub stale: Arc<AtomicBool>,
    pub observer: Arc<dyn McpObserver>,
}

impl Connection {
    /// Spawns the server (no shell, own process group, scrubbed environment, piped stdio) and
    /// starts its writer, reader, stderr and process-owner tasks. No protocol message is sent yet.
    pub fn spawn(params: SpawnParams<'_>) -> Result<Arc<Connection>, McpError> {
        let mut command = Command::new(params.command);
        command
            .args(params.args)
            .env_clear()
            .envs(params.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|err| McpError::Spawn { server: params.server.to_owned(), error: err.to_string() })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.start_kill();
            return Err(McpError::Spawn { server: params.server.to_owned(), error: "stdio pipes unavailable".into() });
        };

        let (writer_tx, writer_rx) = mpsc::channel(WRITER_QUEUE);
        let (exit_tx, exit_rx) = watch::channel(None);
        let lines = ServerLineSink::new(params.server, Arc::clone(&params.observer));
        let shared = Arc::new(Shared {
            server: params.server.to_owned(),
            max_response_bytes: params.max_response_bytes,
            timeout: params.timeout,
            pending: Mutex::new(PendingMap::default()),
            closed: Mutex::new(None),
            stale: params.stale,
            lines: lines.clone(),
            writer: writer_tx,
            stop: CancellationToken::new(),
            exit: exit_tx,
        });

        let writer_task = tokio::spawn(run_writer(Arc::clone(&shared), stdin, writer_rx));
        let reader_task = tokio::spawn(run_reader(Arc::clone(&shared), stdout));
        let stderr_task = tokio::spawn(crate::server_lines::forward_stderr(stderr, lines));
        let exit_task = tokio::spawn(own_process(Arc::clone(&shared), child));

        Ok(Arc::new(Connection {
            shared,
            next_id: AtomicI64::new(1),
            pid,
            exit: exit_rx,
            tasks: Mutex::new(vec![reader_task, stderr_task, exit_task]),
            writer_task: Mutex::new(Some(writer_task)),
            shutdown_once: OnceCell::new(),
        }))
    }

    /// The server name this connection belongs to.
    pub fn server(&self) -> &str {
        &self.shared.server
    }

    /// The process exit, once observed.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// True once the connection can no longer answer requests.
    pub fn is_dead(&self) -> bool {
        self.exit_info().is_some() || self.shared.closed_reason().is_some()
    }

    /// True when a response line exceeded the limit: the connection is closed for good.
    pub fn closed_by_oversize(&self) -> bool {
        matches!(self.shared.closed_reason(), Some(Closed::Oversize { .. }))
    }

    /// True when the server itself ended the connection (process exit or stdout EOF not caused
    /// by odek): the next call may restart it. Never after an oversized response line.
    pub fn restartable(&self) -> bool {
        let server_exited = |exit: Option<ExitInfo>| exit.is_some_and(|exit| !exit.caused_by_odek);
        match self.shared.closed_reason() {
            Some(Closed::Oversize { .. } | Closed::Shutdown) => false,
            Some(Closed::WriteFailed(_)) => server_exited(self.exit_info()),
            Some(Closed::Eof) => self.exit_info().is_none_or(|exit| !exit.caused_by_odek),
            None => server_exited(self.exit_info()),
        }
    }

    /// Sends a notification (no id, no reply) through the writer queue, waiting at most until
    /// the server timeout for room.
    pub async fn notify(&self, bytes: Vec<u8>) {
        if self.shared.closed_reason().is_some() {
            return;
        }
        let _ =
            tokio::time::timeout(self.shared.timeout, self.shared.writer.send(Outgoing { bytes, request: None })).await;
    }

    /// Sends one request and waits for its response. `method` is one of odek's protocol methods
    /// (written unescaped); `params` is written into the same line buffer.
    pub async fn request(
        &self,
        method: &'static str,
        params: Params<'_>,
        options: &CallOptions,
    ) -> Result<ResultFrame, RequestFailure> {
        if let Some(reason) = self.shared.closed_reason() {
            return Err(reason.for_new());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let bytes = encode_request(id, method, params);
        let enqueued_at = clock_now();
        let state = Arc::new(RequestState {
            phase: AtomicU8::new(QUEUED),
            dispatched_at: AtomicU64::new(0),
            activity: AtomicU64::new(enqueued_at),
            accepts_progress: method == "tools/call",
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

        let timeout = self.shared.timeout;
        let outgoing = Outgoing { bytes, request: Some(Arc::clone(&state)) };
        // The queue usually has room: only a full queue needs the deadline-bounded wait.
        let sent = match self.shared.writer.try_send(outgoing) {
            Ok(()) => Ok(Ok(())),
            Err(mpsc::error::TrySendError::Closed(_)) => Ok(Err(())),
            Err(mpsc::error::TrySendError::Full(outgoing)) => {
                let enqueue_deadline = earliest(options.deadline, clock_instant(enqueued_at) + timeout);
                let send = self.shared.writer.send(outgoing);
                tokio::select! {
                    biased;
                    () = cancelled(options.cancel.as_ref()) => return Err(guard.give_up(Cause::Canceled)),
                    sent = tokio::time::timeout_at(enqueue_deadline, send) => sent.map(|sent| sent.map_err(|_| ())),
                }
            }
        };
        match sent {
            Err(_elapsed) => return Err(guard.give_up(Cause::DeadlineExceeded)),
            Ok(Err(())) => {
                guard.forget();
                return Err(RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch));
            }
            Ok(Ok(())) => {}
        }

        loop {
            let deadline = request_deadline(&state, options.deadline, timeout);
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
                    if request_deadline(&state, options.deadline, timeout) <= Instant::now() {
                        return Err(guard.give_up(Cause::DeadlineExceeded));
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

    async fn shutdown_inner(&self) {
        self.shared.close(Closed::Shutdown);
        self.shared.stop.cancel();
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
        self.shared.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
        if self.state.phase.compare_exchange(QUEUED, CANCELLED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return RequestFailure::NotDispatched(cause);
        }
        let reason = if cause == Cause::DeadlineExceeded { "timeout" } else { "cancelled" };
        self.shared.send_detached(encode_cancelled(self.id, reason));
        RequestFailure::OutcomeUnknown(cause)
    }

    fn forget(&mut self) {
        self.settled = true;
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

fn earliest(caller: Option<Instant>, own: Instant) -> Instant {
    caller.map_or(own, |caller| caller.min(own))
}

/// `min(caller deadline, last activity + timeout, first dispatch + 3600 s)`.
fn request_deadline(state: &RequestState, caller: Option<Instant>, timeout: Duration) -> Instant {
    let activity = clock_instant(state.activity.load(Ordering::Acquire)) + timeout;
    let dispatched_at = state.dispatched_at.load(Ordering::Acquire);
    let own = if dispatched_at == 0 { activity } else { activity.min(clock_instant(dispatched_at) + PROGRESS_CAP) };
    earliest(caller, own)
}

/// The `params` member of a request line.
#[derive(Debug, Clone, Copy)]
pub enum Params<'a> {
    /// No `params` key.
    Absent,
    /// Ready-made JSON.
    Json(&'a str),
    /// `tools/call`: the route's precomputed `{"name":…,"arguments":` prefix and the encoded
    /// arguments; the request id becomes the progress token.
    ToolCall { prefix: &'a str, arguments: &'a str },
}

/// One request line, written into a single buffer sized up front (no intermediate strings).
pub fn encode_request(id: i64, method: &'static str, params: Params<'_>) -> Vec<u8> {
    let params_len = match params {
        Params::Absent => 0,
        Params::Json(json) => json.len(),
        Params::ToolCall { prefix, arguments } => prefix.len() + arguments.len() + 48,
    };
    let mut out = Vec::with_capacity(64 + method.len() + params_len);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    push_integer(&mut out, id);
    // Methods are odek's own constants: plain ASCII that needs no escaping.
    out.extend_from_slice(b",\"method\":\"");
    out.extend_from_slice(method.as_bytes());
    out.push(b'"');
    match params {
        Params::Absent => {}
        Params::Json(json) => {
            out.extend_from_slice(b",\"params\":");
            out.extend_from_slice(json.as_bytes());
        }
        Params::ToolCall { prefix, arguments } => {
            out.extend_from_slice(b",\"params\":");
            push_call_params(&mut out, prefix, arguments, id);
        }
    }
    out.extend_from_slice(b"}\n");
    out
}

/// Appends `value` in decimal, as JSON writes an integer.
pub(crate) fn push_integer(out: &mut Vec<u8>, value: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value.unsigned_abs();
    loop {
        at -= 1;
        // `rest % 10` is below 10, so the cast cannot truncate.
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

fn encode_cancelled(id: i64, reason: &str) -> Vec<u8> {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id},\"reason\":\"{reason}\"}}}}\n"
    )
    .into_bytes()
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

#[derive(Deserialize, Default)]
struct WireError {
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<serde_json::Value>,
}

enum Routed {
    Ignore,
    Response { id: i64, reply: Result<Range<usize>, RequestFailure> },
}

/// Spec §7: blank, non-JSON and non-object lines are skipped; a non-empty string `method` makes
/// it a server message (§8); otherwise it is a response whose id must be a JSON integer.
fn route_line(shared: &Shared, line: Vec<u8>) {
    let Some(index) = index_frame(&line) else { return };
    let text = |range: &Option<Range<usize>>| {
        range.clone().and_then(|range| std::str::from_utf8(&line[range]).ok()).filter(|text| *text != "null")
    };
    let routed = if let Some(method) = text(&index.method).and_then(|raw| decode_literal(raw).ok())
        && !method.is_empty()
    {
        handle_server_message(shared, &method, text(&index.id), text(&index.params));
        Routed::Ignore
    } else {
        match text(&index.id).and_then(|id| serde_json::from_str::<i64>(id).ok()) {
            None => Routed::Ignore,
            Some(id) => {
                let reply = match text(&index.error) {
                    Some(error) => Err(rpc_failure(error)),
                    None => Ok(index.result.unwrap_or(0..0)),
                };
                Routed::Response { id, reply }
            }
        }
    };
    let Routed::Response { id, reply } = routed else { return };
    let waiting = shared.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    // Unknown or finished ids (late replies after a timeout) are dropped silently.
    if let Some(waiting) = waiting {
        let _ = waiting.reply.send(reply.map(|result| ResultFrame { line, result }));
    }
}

fn rpc_failure(raw: &str) -> RequestFailure {
    let error: WireError = serde_json::from_str(raw).unwrap_or_default();
    let code = error.code.as_ref().and_then(serde_json::Value::as_i64).unwrap_or(0);
    let message = match error.message {
        Some(serde_json::Value::String(message)) => message,
        Some(other) if !other.is_null() => other.to_string(),
        _ => String::new(),
    };
    RequestFailure::Rpc { code, message }
}

/// Spec §8: server requests are answered (ping → `{}`, anything else → -32601) with the id
/// echoed verbatim; notifications update state or are logged; nothing here is a response.
fn handle_server_message(shared: &Shared, method: &str, id: Option<&str>, params: Option<&str>) {
    let request_id = id.filter(|text| {
        text.starts_with('"') || text.starts_with('-') || text.starts_with(|c: char| c.is_ascii_digit())
    });
    if let Some(id) = request_id {
        let reply = if method == "ping" {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n")
        } else {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32601,\"message\":\"method not found\"}}}}\n"
            )
        };
        shared.send_detached(reply.into_bytes());
        return;
    }
    if id.is_some() {
        // An id of another JSON type: neither a valid request nor a notification.
        return;
    }
    match method {
        "notifications/tools/list_changed" => shared.stale.store(true, Ordering::Release),
        "notifications/progress" => note_progress(shared, params),
        "notifications/message" => log_message(shared, params),
        _ => {}
    }
}

fn note_progress(shared: &Shared, params: Option<&str>) {
    #[derive(Deserialize)]
    struct Progress {
        #[serde(rename = "progressToken")]
        progress_token: serde_json::Value,
    }
    let Some(token) = params
        .and_then(|raw| serde_json::from_str::<Progress>(raw).ok())
        .and_then(|progress| progress.progress_token.as_i64())
    else {
        return;
    };
    let pending = shared.pending.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(waiting) = pending.get(&token)
        && waiting.state.accepts_progress
        && waiting.state.phase.load(Ordering::Acquire) == DISPATCHED
    {
        waiting.state.activity.store(clock_now(), Ordering::Release);
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
        Some(other) => other.to_string(),
        None => String::new(),
    };
    for line in log_message_lines(&level, &data) {
        shared.lines.send(line);
    }
}

/// Owns the child process: publishes its exit, and when odek closes the connection runs the
/// end of the shutdown sequence (stdin is closed by the writer; the process gets 1 s + 5 s to
/// exit, then its process group is killed) and reaps it.
async fn own_process(shared: Arc<Shared>, mut child: Child) {
    let pid = child.id().and_then(|pid| i32::try_from(pid).ok()).map(nix::unistd::Pid::from_raw);
    let status = tokio::select! {
        status = child.wait() => status,
        () = shared.stop.cancelled() => {
            // An exit that already happened was the server's own, not odek's doing.
            if let Ok(Some(status)) = child.try_wait() {
                kill_group(pid);
                publish_exit(&shared, Ok(status), false);
                return;
            }
            match tokio::time::timeout(WRITER_GRACE + EXIT_GRACE, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    kill_group(pid);
                    child.wait().await
                }
            }
        }
    };
    // Whatever the leader left behind in its group goes with it.
    kill_group(pid);
    let caused_by_odek = shared.stop.is_cancelled();
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
    let status = match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            status.code().or_else(|| status.signal().map(|signal| 128 + signal)).unwrap_or(-1)
        }
        Err(_) => -1,
    };
    shared.exit.send_replace(Some(ExitInfo { status, caused_by_odek }));
}

/// SIGKILL to the server's process group (it was spawned as the group leader).
fn kill_group(pid: Option<nix::unistd::Pid>) {
    if let Some(pid) = pid {
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_request_is_one_line() {
        let line = encode_request(
            42,
            "tools/call",
            Params::ToolCall { prefix: r#"{"name":"echo","arguments":"#, arguments: r#"{"text":"hi"}"# },
        );
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"},\"_meta\":{\"progressToken\":42}}}\n"
        );
    }

    #[test]
    fn integers_are_written_as_json_writes_them() {
        for value in [0, 7, 10, 99, 1_000_000, -1, -45, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            push_integer(&mut out, value);
            assert_eq!(out, serde_json::to_vec(&value).unwrap());
        }
    }
}
