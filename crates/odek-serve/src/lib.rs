//! `odek serve`: odek over HTTP for orchestrators, a thin adapter over the runtime's session
//! host ([`odek::host`]): a run is one turn of a hosted session, so every limit, approval,
//! redaction and event of `odek run` holds. On axum (hyper, tokio).
//!
//! - Every request passes [`auth`] first: `Host`/`Origin` (403), then the bearer token or the
//!   page's cookie (401). The listener is loopback unless the operator allows remote clients.
//! - `POST /api/runs` starts a run (429 past the bound on running runs); its `odek.event/v1`
//!   stream is `GET /api/runs/{id}/events` (Server-Sent Events, the sequence number as the SSE
//!   `id`, resumable with `Last-Event-ID` from the run's bounded log); approvals it waits on
//!   are `approval_requested` events answered by `POST /api/runs/{id}/approvals/{aid}`, and
//!   an MCP server's requests for input `elicitation_requested` events answered by
//!   `POST /api/runs/{id}/elicitations/{eid}`.
//! - Sessions are odek's session store: listed, shown, deleted.
//!
//! Start at [`serve`]; the runs and their logs are [`runs`], the host's face [`face`].

mod acp_socket;
pub mod api;
mod auth;
mod face;
mod listener;
mod openapi;
mod page;
mod runs;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::Stream;
use odek::host::{
    ApprovalAnswer, ElicitationAnswer, Host, HostError, HostFace, HostSettings, SessionOptions, StopReason, TurnEnd,
    new_run_id,
};
use odek_contract::outcome::Outcome;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

pub use acp_socket::{AcpConnector, AcpInput, AcpOutput, MAX_ACP_CONNECTIONS};
pub use auth::{Token, TokenError};
pub use openapi::{OPENAPI_PATH, document_text as openapi_document_text};

use api::{
    Cancelling, Decided, Decision, DecisionKind, ElicitationActionKind, ElicitationReplied, ElicitationReply,
    ErrorBody, Health, Limits, RunList, RunStarted, SessionList, StartRun, UsageTotals,
};
use face::ServeFace;
use runs::{ElicitationRefusal, Read, Run, Runs};

/// The default address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7420";

/// Default bound on runs running at once.
pub const DEFAULT_MAX_CONCURRENT_RUNS: usize = 4;

/// The largest request body, in bytes (a task is at most the host's prompt limit, 1 MiB).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Event streams open at once in the process.
const MAX_SUBSCRIBERS: usize = 512;

/// Artifact downloads served at once.
const MAX_DOWNLOADS: usize = 4;

/// Media types an artifact is served as; any other (HTML, SVG, script…) goes out as
/// `application/octet-stream`, so nothing a tool wrote runs in the page's origin.
const SERVED_MEDIA_TYPES: &[&str] = &[
    "text/plain",
    "text/markdown",
    "text/csv",
    "application/json",
    "application/pdf",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
];

/// How often an idle event stream sends a heartbeat comment.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// What `Retry-After` says past the bound on running runs (seconds).
const RETRY_AFTER_SECONDS: &str = "5";

/// How `odek serve` is set up.
#[derive(Clone)]
pub struct ServeSettings {
    /// The sessions' host: home, environment, the face's flags.
    pub host: HostSettings,
    /// Where to listen.
    pub addr: SocketAddr,
    /// Listen on a non-loopback address (the operator's proxy terminates TLS).
    pub allow_remote: bool,
    /// The token every request must carry.
    pub token: Token,
    /// Whether the token is shown on stderr (not when the operator provisioned it).
    pub show_token: bool,
    /// Runs running at once.
    pub max_concurrent_runs: usize,
    /// The working directory of a run that names none.
    pub cwd: PathBuf,
    /// Open the page in the system's browser once listening.
    pub open: bool,
    /// The ACP face `/acp` serves each WebSocket connection with (`None`: no `/acp`).
    pub acp: Option<AcpConnector>,
}

/// Why `odek serve` could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A non-loopback address without `--allow-remote`.
    #[error(
        "--addr {0}: not a loopback address; odek serve runs agents, so it listens on loopback unless \
         --allow-remote is given (every request still needs the token)"
    )]
    NotLoopback(SocketAddr),
    /// The address cannot be bound, or serving failed.
    #[error("serve: {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
}

/// What every handler shares.
struct App {
    host: Arc<Host>,
    runs: Arc<Runs>,
    token: Token,
    origins: auth::Origins,
    max_concurrent_runs: usize,
    cwd: PathBuf,
    /// Places for event streams (at most [`MAX_SUBSCRIBERS`] open).
    subscribers: Arc<Semaphore>,
    /// Artifact downloads at once (each holds its file, up to 64 MiB, in memory).
    downloads: Arc<Semaphore>,
    acp: Option<AcpConnector>,
    /// Places for ACP connections (at most [`MAX_ACP_CONNECTIONS`] open).
    acp_connections: Arc<Semaphore>,
    /// Cancelled when serving stops: the ACP connections end their input.
    stop: CancellationToken,
}

/// Serves until `stop` is cancelled; then every running turn is cancelled and every session
/// saved and closed.
pub async fn serve(settings: ServeSettings, stop: CancellationToken) -> Result<(), ServeError> {
    if !settings.addr.ip().is_loopback() && !settings.allow_remote {
        return Err(ServeError::NotLoopback(settings.addr));
    }
    let listener =
        tokio::net::TcpListener::bind(settings.addr).await.map_err(|error| ServeError::Listen(settings.addr, error))?;
    let addr = listener.local_addr().map_err(|error| ServeError::Listen(settings.addr, error))?;
    let runs = Arc::new(Runs::default());
    let face = Arc::new(ServeFace { runs: Arc::clone(&runs) });
    // Every run the API admits runs at once; none waits behind the host's own bound.
    let mut host_settings = settings.host.clone();
    host_settings.max_running_turns = host_settings.max_running_turns.max(settings.max_concurrent_runs);
    host_settings.max_sessions = host_settings.max_sessions.max(settings.max_concurrent_runs);
    let host = Arc::new(Host::new(host_settings, face as Arc<dyn HostFace>));
    let app = Arc::new(App {
        host: Arc::clone(&host),
        runs,
        token: settings.token.clone(),
        origins: auth::Origins::new(addr, settings.allow_remote),
        max_concurrent_runs: settings.max_concurrent_runs.max(1),
        cwd: settings.cwd.clone(),
        subscribers: Arc::new(Semaphore::new(MAX_SUBSCRIBERS)),
        downloads: Arc::new(Semaphore::new(MAX_DOWNLOADS)),
        acp: settings.acp.clone(),
        acp_connections: Arc::new(Semaphore::new(MAX_ACP_CONNECTIONS)),
        stop: stop.clone(),
    });
    if settings.allow_remote {
        eprintln!(
            "odek: warning: odek serve listens on {addr} for remote clients: put a TLS-terminating proxy in front of it"
        );
    }
    eprintln!("odek serve: listening on http://{addr}/");
    let page = page::address(addr, settings.show_token.then_some(&settings.token));
    if settings.show_token {
        // Once, on stderr; never written anywhere else.
        eprintln!(
            "odek serve: the page: {page} (shown once: the token after ?token=; API clients send it as \"Authorization: Bearer <token>\")"
        );
    } else {
        eprintln!("odek serve: the page: {page} (open it with ?token=<the token of --token-file>)");
    }
    if settings.open {
        let home = settings.host.home.clone();
        tokio::spawn(async move {
            if let Err(failed) = page::open_in_browser(&home, &page).await {
                eprintln!("odek: warning: --open: {failed}; open the page's address by hand");
            }
        });
    }
    let served =
        axum::serve(listener::Bounded::new(listener), router(app)).with_graceful_shutdown(stop.cancelled_owned()).await;
    host.close_all().await;
    served.map_err(|error| ServeError::Listen(addr, error))
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(page_file))
        .route("/assets/{name}", get(page_file))
        .route("/healthz", get(healthz))
        .route("/api/runs", post(start_run).get(list_runs))
        .route("/api/runs/{id}", get(show_run))
        .route("/api/runs/{id}/cancel", post(cancel_run))
        .route("/api/runs/{id}/events", get(run_events))
        .route("/api/runs/{id}/approvals/{approval}", post(answer_approval))
        .route("/api/runs/{id}/elicitations/{elicitation}", post(answer_elicitation))
        .route("/api/runs/{id}/artifacts/{artifact}", get(run_artifact))
        .route("/api/sessions", get(list_sessions))
        .route("/api/sessions/{id}", get(show_session).delete(delete_session))
        .route("/api/limits", get(limits))
        .route("/api/usage", get(usage))
        .route("/api/openapi.json", get(openapi_document))
        .route("/acp", get(acp))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(Arc::clone(&app), guard))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(app)
}

/// A JSON error answer.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(ErrorBody { error: message.into() })).into_response()
}

/// Every request: the `Host`/`Origin` rules, then the token; every answer: [`page::harden`].
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let mut response = admitted(&app, request, next).await;
    page::harden(response.headers_mut());
    response
}

async fn admitted(app: &App, request: Request, next: Next) -> Response {
    if let Some(reason) = app.origins.refuses(request.headers()) {
        return error(StatusCode::FORBIDDEN, reason);
    }
    let path = request.uri().path();
    let for_the_page = request.method() == Method::GET && (path == "/" || path.starts_with("/assets/"));
    if for_the_page && let Some(offered) = page::query_token(request.uri()) {
        return if app.token.matches(offered) { page::admit(&app.token) } else { page::locked() };
    }
    if !app.token.admits(request.headers()) {
        if for_the_page {
            return page::locked();
        }
        let mut response = error(StatusCode::UNAUTHORIZED, "a valid token is required (Authorization: Bearer <token>)");
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    // A body announced too large is refused before a byte of it is read.
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if announced.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return error(StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is larger than {MAX_BODY_BYTES} bytes"));
    }
    next.run(request).await
}

/// `GET /` and `GET /assets/…`: the page.
async fn page_file(uri: Uri) -> Response {
    page::asset(uri.path()).unwrap_or_else(|| error(StatusCode::NOT_FOUND, "no such route"))
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "no such route")
}

async fn healthz(State(app): State<Arc<App>>) -> Response {
    axum::Json(Health { status: "ok".to_owned(), running_runs: app.runs.running_count() }).into_response()
}

/// A request body as JSON of type `T` (unknown fields ignored), or the error answer.
fn body<T: for<'de> Deserialize<'de>>(body: Result<Bytes, BytesRejection>) -> Result<T, Refusal> {
    let bytes = body.map_err(|rejection| Refusal(rejection.status(), rejection.body_text()))?;
    serde_json::from_slice(&bytes)
        .map_err(|parse| Refusal(StatusCode::BAD_REQUEST, format!("invalid JSON body: {parse}")))
}

/// A request refused before its handler's work: the status and the error's text.
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        error(self.0, self.1)
    }
}

async fn start_run(State(app): State<Arc<App>>, raw: Result<Bytes, BytesRejection>) -> Response {
    let request: StartRun = match body(raw) {
        Ok(request) => request,
        Err(refused) => return refused.into_response(),
    };
    if let Some(reason) = request.refused() {
        return error(StatusCode::BAD_REQUEST, reason);
    }
    if app.runs.running_count() >= app.max_concurrent_runs {
        return too_many_runs(app.max_concurrent_runs);
    }
    let options = SessionOptions {
        model: request.model.clone(),
        planning: request.planning,
        limits: request.limits,
        output_schema: request.output_schema.clone(),
        checks: request.checks.clone(),
    };
    let cwd = request.cwd.clone().unwrap_or_else(|| app.cwd.clone());
    let opened = match &request.session_id {
        None => app.host.create_with(cwd, Default::default(), &options).await,
        Some(id) => {
            if app.host.is_running(id) || app.runs.of_session(id).is_some() {
                return error(
                    StatusCode::CONFLICT,
                    format!("session {id} is running a turn (or closing after one); retry when its run ends"),
                );
            }
            // Reopened, so the run's model and budgets apply to it.
            let _ = app.host.close(id).await;
            app.host.load_with(id, cwd, Default::default(), &options).await
        }
    };
    let opened = match opened {
        Ok(opened) => opened,
        Err(refused) => return host_error(&refused),
    };
    let run_id = match new_run_id() {
        Ok(run_id) => run_id,
        Err(failed) => return host_error(&failed),
    };
    let claim = match app.host.begin_turn(&opened.id) {
        Ok(claim) => claim,
        Err(refused) => return host_error(&refused),
    };
    let run = Run::new(run_id.clone(), opened.id.clone(), &request.task, opened.limits, opened.prices);
    if !app.runs.start(&run, app.max_concurrent_runs) {
        return too_many_runs(app.max_concurrent_runs);
    }
    // "allow_for_run" holds for this run only.
    let _ = app.host.forget_always(&opened.id);
    let (host, runs) = (Arc::clone(&app.host), Arc::clone(&app.runs));
    tokio::spawn(async move {
        let end = match host.run_as(claim, &request.task, &[], Some(&run.id)).await {
            Ok(end) => end,
            Err(failed) => TurnEnd {
                outcome: Outcome::Error,
                stop: StopReason::EndTurn,
                answer: String::new(),
                usage: Default::default(),
                error: Some(failed.to_string()),
                budget: None,
            },
        };
        // Saved at every step; closed now, so an idle finished run holds its record only (and
        // its servers stop), and its slot is given back before anyone can see it finished: a
        // client that starts the next run on the last event never meets the bound or a busy
        // session.
        let _ = host.close(&run.session_id).await;
        runs.ended(&run);
        run.finish(end);
    });
    (StatusCode::ACCEPTED, axum::Json(RunStarted { run_id, session_id: opened.id })).into_response()
}

fn too_many_runs(max: usize) -> Response {
    let mut response =
        error(StatusCode::TOO_MANY_REQUESTS, format!("{max} runs are running (the limit); retry when one ends"));
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECONDS));
    response
}

/// The host's refusal as an HTTP answer.
fn host_error(refused: &HostError) -> Response {
    let status = match refused {
        HostError::UnknownSession(_) => StatusCode::NOT_FOUND,
        HostError::Busy(_) | HostError::AlreadyOpen(_) => StatusCode::CONFLICT,
        HostError::TooManySessions(_) => StatusCode::TOO_MANY_REQUESTS,
        HostError::PromptTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        HostError::Cwd(..) | HostError::AboveOperator { .. } | HostError::NotPositive(_) => StatusCode::BAD_REQUEST,
        HostError::Runtime(odek::RuntimeError::Session(_) | odek::RuntimeError::OutputSchema(_)) => {
            StatusCode::BAD_REQUEST
        }
        HostError::Runtime(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, refused.to_string())
}

async fn list_runs(State(app): State<Arc<App>>) -> Response {
    axum::Json(RunList { runs: app.runs.list() }).into_response()
}

fn find_run(app: &App, id: &str) -> Result<Arc<Run>, Refusal> {
    app.runs.get(id).ok_or_else(|| Refusal(StatusCode::NOT_FOUND, "no run with this id".to_owned()))
}

async fn show_run(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    match find_run(&app, &id) {
        Ok(run) => axum::Json(run.view()).into_response(),
        Err(refused) => refused.into_response(),
    }
}

async fn cancel_run(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let run = match find_run(&app, &id) {
        Ok(run) => run,
        Err(refused) => return refused.into_response(),
    };
    if !run.is_running() {
        return error(StatusCode::CONFLICT, "the run is over");
    }
    match app.host.cancel(&run.session_id) {
        Ok(()) => {
            (StatusCode::ACCEPTED, axum::Json(Cancelling { run_id: run.id.clone(), cancelling: true })).into_response()
        }
        Err(refused) => host_error(&refused),
    }
}

async fn answer_approval(
    State(app): State<Arc<App>>,
    Path((id, approval)): Path<(String, String)>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let run = match find_run(&app, &id) {
        Ok(run) => run,
        Err(refused) => return refused.into_response(),
    };
    let Ok(approval) = approval.parse::<u64>() else { return error(StatusCode::NOT_FOUND, "no approval with this id") };
    let decision: Decision = match body(raw) {
        Ok(decision) => decision,
        Err(refused) => return refused.into_response(),
    };
    let answer = match decision.decision {
        DecisionKind::Allow => ApprovalAnswer::AllowOnce,
        DecisionKind::AllowForRun => ApprovalAnswer::AllowAlways,
        DecisionKind::Deny => ApprovalAnswer::Deny,
    };
    if run.answer(approval, answer) {
        axum::Json(Decided { approval_id: approval, decision: decision.decision }).into_response()
    } else {
        error(StatusCode::CONFLICT, "the approval is not waiting (answered, expired, or its run is over)")
    }
}

/// `POST /api/runs/{id}/elicitations/{eid}`: the person's answer, checked against the request
/// by odek-mcp's rules (422 with the reason, the request still open, when it does not fit).
async fn answer_elicitation(
    State(app): State<Arc<App>>,
    Path((id, elicitation)): Path<(String, String)>,
    raw: Result<Bytes, BytesRejection>,
) -> Response {
    let run = match find_run(&app, &id) {
        Ok(run) => run,
        Err(refused) => return refused.into_response(),
    };
    let Ok(elicitation) = elicitation.parse::<u64>() else {
        return error(StatusCode::NOT_FOUND, "no elicitation with this id");
    };
    let reply: ElicitationReply = match body(raw) {
        Ok(reply) => reply,
        Err(refused) => return refused.into_response(),
    };
    let answer = match reply.action {
        ElicitationActionKind::Accept => ElicitationAnswer::Accept(reply.content.unwrap_or_default()),
        ElicitationActionKind::Decline => ElicitationAnswer::Decline,
        ElicitationActionKind::Cancel => ElicitationAnswer::Cancel,
    };
    match run.answer_elicitation(elicitation, answer) {
        Ok(()) => axum::Json(ElicitationReplied { elicitation_id: elicitation, action: reply.action }).into_response(),
        Err(ElicitationRefusal::Unknown) => error(StatusCode::NOT_FOUND, "no elicitation with this id"),
        Err(ElicitationRefusal::NotWaiting) => {
            error(StatusCode::CONFLICT, "the elicitation is not waiting (answered, expired, or its run is over)")
        }
        Err(ElicitationRefusal::Invalid(reason)) => {
            error(StatusCode::UNPROCESSABLE_ENTITY, format!("the answer does not fit the request: {reason}"))
        }
    }
}

/// `GET /api/runs/{id}/artifacts/{artifact}`: the verified file, checked again now (no symlink,
/// a regular file, its size and digest unchanged), as a download under a sandboxing policy.
async fn run_artifact(State(app): State<Arc<App>>, Path((id, artifact)): Path<(String, String)>) -> Response {
    let run = match find_run(&app, &id) {
        Ok(run) => run,
        Err(refused) => return refused.into_response(),
    };
    let Some(artifact) = run.artifact(&artifact) else {
        return error(StatusCode::NOT_FOUND, "no artifact with this id in the run");
    };
    let Ok(_slot) = Arc::clone(&app.downloads).try_acquire_owned() else {
        let mut response = error(StatusCode::TOO_MANY_REQUESTS, "too many artifact downloads at once");
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    };
    let checked = artifact.clone();
    let read = tokio::task::spawn_blocking(move || odek::agent::subagent::artifacts::read_ref_verified(&checked)).await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(refused)) => return error(StatusCode::CONFLICT, format!("the artifact cannot be served: {refused}")),
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "the artifact could not be read"),
    };
    let media_type = artifact.media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let served = SERVED_MEDIA_TYPES.iter().find(|known| **known == media_type).copied();
    let file_name: String = artifact
        .id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
        .take(128)
        .collect();
    let mut response = (StatusCode::OK, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(served.unwrap_or("application/octet-stream")));
    if let Ok(disposition) = HeaderValue::from_str(&format!("attachment; filename=\"{file_name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, disposition);
    }
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("sandbox; default-src 'none'"));
    response
}

/// An open event stream's places among all streams and among its run's; given back with it.
type Subscription = (OwnedSemaphorePermit, OwnedSemaphorePermit);

async fn run_events(State(app): State<Arc<App>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let run = match find_run(&app, &id) {
        Ok(run) => run,
        Err(refused) => return refused.into_response(),
    };
    let Ok(total) = Arc::clone(&app.subscribers).try_acquire_owned() else {
        return error(StatusCode::TOO_MANY_REQUESTS, "too many event streams are open");
    };
    let Ok(per_run) = run.subscribers().try_acquire_owned() else {
        return error(StatusCode::TOO_MANY_REQUESTS, "too many event streams of this run are open");
    };
    let subscription = (total, per_run);
    let after = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .unwrap_or(0);
    Sse::new(event_stream(run, after, subscription))
        .keep_alive(KeepAlive::new().interval(HEARTBEAT).text("heartbeat"))
        .into_response()
}

/// The run's events after `after`, as SSE messages, until its last one.
fn event_stream(
    run: Arc<Run>,
    after: u64,
    subscription: Subscription,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let written = run.subscribe();
    let state = (run, after, written, std::collections::VecDeque::<Event>::new(), subscription);
    futures_util::stream::unfold(state, |(run, mut after, mut written, mut ready, subscription)| async move {
        loop {
            if let Some(event) = ready.pop_front() {
                return Some((Ok(event), (run, after, written, ready, subscription)));
            }
            // Seen before the read: a line written after it wakes the wait below.
            written.borrow_and_update();
            match run.read(after) {
                Read::Lines { lines, lost } => {
                    if lost > 0 {
                        ready.push_back(Event::default().event("lost").data(json!({"lost": lost}).to_string()));
                    }
                    for (seq, line) in lines {
                        after = seq;
                        ready.push_back(Event::default().id(seq.to_string()).data(&*line));
                    }
                }
                Read::Ended => return None,
                Read::Nothing => {
                    if written.changed().await.is_err() {
                        return None;
                    }
                }
            }
        }
    })
}

async fn list_sessions(State(app): State<Arc<App>>) -> Response {
    let listed = app.host.store().and_then(|store| store.list().map_err(HostError::from));
    match listed {
        Ok(sessions) => axum::Json(SessionList { sessions }).into_response(),
        Err(failed) => host_error(&failed),
    }
}

/// A session id from a URL, or 404 (`../` and the like are not ids).
fn session_id(id: &str) -> Result<odek::agent::session::SessionId, Refusal> {
    odek::agent::session::SessionId::parse(id)
        .map_err(|_| Refusal(StatusCode::NOT_FOUND, "no session with this id".to_owned()))
}

async fn show_session(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let id = match session_id(&id) {
        Ok(id) => id,
        Err(refused) => return refused.into_response(),
    };
    let loaded = app.host.store().and_then(|store| store.load(&id).map_err(HostError::from));
    match loaded {
        Ok(session) => axum::Json(session).into_response(),
        Err(_) => error(StatusCode::NOT_FOUND, "no session with this id"),
    }
}

async fn delete_session(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    let id = match session_id(&id) {
        Ok(id) => id,
        Err(refused) => return refused.into_response(),
    };
    if app.host.is_running(id.as_str()) {
        return error(StatusCode::CONFLICT, "the session is running a turn; cancel it first");
    }
    let _ = app.host.close(id.as_str()).await;
    let deleted = app.host.store().and_then(|store| store.delete(&id).map_err(HostError::from));
    match deleted {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(_) => error(StatusCode::NOT_FOUND, "no session with this id"),
    }
}

async fn limits(State(app): State<Arc<App>>) -> Response {
    match app.host.limits_of(app.cwd.clone()) {
        Ok(limits) => axum::Json(Limits { limits, max_concurrent_runs: app.max_concurrent_runs }).into_response(),
        Err(failed) => host_error(&failed),
    }
}

/// `GET /acp`: a WebSocket carrying ACP.
async fn acp(State(app): State<Arc<App>>, upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>) -> Response {
    let Some(connector) = app.acp.clone() else { return error(StatusCode::NOT_FOUND, "no such route") };
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            return error(rejection.status(), format!("/acp speaks ACP over a WebSocket: {}", rejection.body_text()));
        }
    };
    let Ok(slot) = Arc::clone(&app.acp_connections).try_acquire_owned() else {
        let mut response = error(
            StatusCode::TOO_MANY_REQUESTS,
            format!("{MAX_ACP_CONNECTIONS} ACP connections are open (the limit); retry when one closes"),
        );
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECONDS));
        return response;
    };
    let stop = app.stop.clone();
    upgrade
        .max_message_size(acp_socket::MAX_ACP_MESSAGE_BYTES)
        .max_frame_size(acp_socket::MAX_ACP_MESSAGE_BYTES)
        .on_upgrade(move |socket| acp_socket::serve(socket, connector, stop, slot))
}

async fn openapi_document() -> Response {
    let mut response = openapi::document_text().into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

async fn usage(State(app): State<Arc<App>>) -> Response {
    axum::Json(UsageTotals { usage: app.runs.usage(), running_runs: app.runs.running_count() }).into_response()
}
