//! The host's face on an ACP connection: each [`Update`] becomes a `session/update`
//! notification, each [`ApprovalRequest`] a `session/request_permission` request with the
//! standard options, and when the client offers `fs` the file tools read and write the
//! session's files through it ([`ClientFiles`]). Warnings and notices go to stderr, where
//! editors keep an agent's log.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, PermissionOption, PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest, SessionNotification,
    SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind as AcpKind, WriteTextFileRequest,
};
use agent_client_protocol::{BoxFuture, Client};
use odek::EditorFiles;
use odek::host::{ApprovalAnswer, ApprovalRequest, HostFace, ToolEnd, ToolKind, ToolStart, Update};
use odek_contract::terminal_text::warning_line;

/// How long the client gets to answer an `fs` request of a file tool.
const FS_DEADLINE: Duration = Duration::from_secs(30);

/// The connection the host's updates and questions go to, bound by the first request, and the
/// client's `fs` capabilities from `initialize`.
#[derive(Default)]
pub(crate) struct AcpFace {
    connection: OnceLock<ConnectionTo<Client>>,
    reads: AtomicBool,
    writes: AtomicBool,
}

impl AcpFace {
    pub(crate) fn bind(&self, connection: &ConnectionTo<Client>) {
        let _ = self.connection.set(connection.clone());
    }

    /// Records what the client's `fs` offers (`initialize`).
    pub(crate) fn client_files(&self, reads: bool, writes: bool) {
        self.reads.store(reads, Ordering::Relaxed);
        self.writes.store(writes, Ordering::Relaxed);
    }

    pub(crate) fn notify(&self, session: &str, update: SessionUpdate) {
        if let Some(connection) = self.connection.get() {
            // The client is gone when this fails; the turn is cancelled by the close.
            let _ = connection.send_notification(SessionNotification::new(session.to_owned(), update));
        }
    }
}

impl HostFace for AcpFace {
    fn files(&self, session: &str, cwd: &Path) -> Option<Arc<dyn EditorFiles>> {
        let (reads, writes) = (self.reads.load(Ordering::Relaxed), self.writes.load(Ordering::Relaxed));
        let connection = self.connection.get()?.clone();
        (reads || writes).then(|| {
            Arc::new(ClientFiles { connection, session: session.to_owned(), root: cwd.to_path_buf(), reads, writes })
                as Arc<dyn EditorFiles>
        })
    }

    fn update(&self, session: &str, update: Update) {
        match update {
            Update::Warning(text) => log_line(warning_line(&text)),
            Update::Notice(text) => log_line(text),
            other => {
                if let Some(update) = session_update(other) {
                    self.notify(session, update);
                }
            }
        }
    }

    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, Option<ApprovalAnswer>> {
        let Some(connection) = self.connection.get().cloned() else { return Box::pin(async { None }) };
        Box::pin(async move {
            let session = request.session.clone();
            // An MCP approval is about no tool call of the model's: it is shown as a call of its own.
            let call_id = match &request.call_id {
                Some(id) => id.clone(),
                None => {
                    let id = format!("odek-approval-{}", request.id);
                    let call = ToolCall::new(id.clone(), request.title.clone())
                        .kind(AcpKind::Other)
                        .status(ToolCallStatus::Pending)
                        .content(vec![text_content(&request.detail)]);
                    let _ = connection
                        .send_notification(SessionNotification::new(session.clone(), SessionUpdate::ToolCall(call)));
                    id
                }
            };
            let fields = ToolCallUpdateFields::new().title(request.title.clone());
            let fields = match &request.class {
                Some(class) => fields.raw_input(serde_json::json!({ "operation": request.detail, "class": class })),
                None => fields,
            };
            // An MCP server's or tool's approval is remembered for this directory, as at a terminal.
            let allow =
                if request.tool.starts_with("mcp ") { "Allow (remembered for this project)" } else { "Allow once" };
            let mut options = vec![PermissionOption::new("allow-once", allow, PermissionOptionKind::AllowOnce)];
            if request.allow_always {
                options.push(PermissionOption::new(
                    "allow-always",
                    "Allow always in this session",
                    PermissionOptionKind::AllowAlways,
                ));
            }
            options.push(PermissionOption::new("reject-once", "Reject", PermissionOptionKind::RejectOnce));
            options.push(PermissionOption::new("reject-always", "Reject always", PermissionOptionKind::RejectAlways));
            let asked =
                RequestPermissionRequest::new(session.clone(), ToolCallUpdate::new(call_id.clone(), fields), options);
            let answer = match connection.send_request(asked).block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                        "allow-once" => ApprovalAnswer::AllowOnce,
                        "allow-always" if request.allow_always => ApprovalAnswer::AllowAlways,
                        _ => ApprovalAnswer::Deny,
                    },
                    _ => ApprovalAnswer::Deny,
                },
                Err(_) => ApprovalAnswer::Deny,
            };
            if request.call_id.is_none() {
                let status =
                    if answer == ApprovalAnswer::Deny { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
                let update = ToolCallUpdate::new(call_id, ToolCallUpdateFields::new().status(status));
                let _ = connection
                    .send_notification(SessionNotification::new(session, SessionUpdate::ToolCallUpdate(update)));
            }
            Some(answer)
        })
    }
}

/// The files of one session as the client holds them: `fs/read_text_file` and
/// `fs/write_text_file`, each answered within [`FS_DEADLINE`]. Only paths inside the session's
/// working directory come here (the file tools check the rest as ever).
struct ClientFiles {
    connection: ConnectionTo<Client>,
    session: String,
    root: PathBuf,
    reads: bool,
    writes: bool,
}

impl EditorFiles for ClientFiles {
    fn root(&self) -> &Path {
        &self.root
    }

    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    fn read_text<'a>(&'a self, path: &'a Path) -> odek::BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let asked = self.connection.send_request(ReadTextFileRequest::new(self.session.clone(), path)).block_task();
            answered("fs/read_text_file", asked).await.map(|response| response.content)
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, text: &'a str) -> odek::BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let asked =
                self.connection.send_request(WriteTextFileRequest::new(self.session.clone(), path, text)).block_task();
            answered("fs/write_text_file", asked).await.map(|_| ())
        })
    }
}

/// The client's answer to an `fs` request, within [`FS_DEADLINE`]; a refusal or the silence as
/// the file tool's error text.
async fn answered<T>(
    method: &str,
    asked: impl std::future::Future<Output = Result<T, agent_client_protocol::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(FS_DEADLINE, asked).await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(error)) => Err(format!("the editor refused {method}: {}", error.message)),
        Err(_) => Err(format!("the editor did not answer {method} within {}s", FS_DEADLINE.as_secs())),
    }
}

/// Lines the stderr writer holds at most; past it lines are dropped (and counted) rather than
/// blocking the runtime's tasks on a client that does not drain stderr.
const MAX_QUEUED_LOG_LINES: usize = 256;

/// Writes `line` to stderr from a thread of its own, never blocking the caller.
fn log_line(line: String) {
    static WRITER: OnceLock<std::sync::mpsc::SyncSender<String>> = OnceLock::new();
    static DROPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let sender = WRITER.get_or_init(|| {
        let (sender, lines) = std::sync::mpsc::sync_channel::<String>(MAX_QUEUED_LOG_LINES);
        let spawned = std::thread::Builder::new().name("odek-acp-stderr".into()).spawn(move || {
            use std::io::Write;
            for line in lines {
                let mut stderr = std::io::stderr().lock();
                let dropped = DROPPED.swap(0, Ordering::Relaxed);
                if dropped > 0 {
                    let _ = writeln!(stderr, "odek: {dropped} log line(s) dropped: stderr was not read");
                }
                let _ = writeln!(stderr, "{line}");
            }
        });
        if spawned.is_err() {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        sender
    });
    if sender.try_send(line).is_err() {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// The ACP update of one host update (`None`: nothing ACP shows).
pub(crate) fn session_update(update: Update) -> Option<SessionUpdate> {
    Some(match update {
        Update::UserText(text) => SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::from(text))),
        Update::Text(text) => SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text))),
        Update::Reasoning(text) => SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(text))),
        Update::ToolStarted(start) => SessionUpdate::ToolCall(tool_call(start)),
        Update::ToolFinished(end) => SessionUpdate::ToolCallUpdate(tool_call_end(end)),
        Update::Plan(steps) => SessionUpdate::Plan(Plan::new(
            steps
                .into_iter()
                .map(|step| {
                    let status = match step.status {
                        "done" => PlanEntryStatus::Completed,
                        "in_progress" => PlanEntryStatus::InProgress,
                        _ => PlanEntryStatus::Pending,
                    };
                    PlanEntry::new(step.title, PlanEntryPriority::Medium, status)
                })
                .collect(),
        )),
        Update::Usage(_) | Update::Warning(_) | Update::Notice(_) | Update::Event(_) => return None,
    })
}

fn kind(kind: ToolKind) -> AcpKind {
    match kind {
        ToolKind::Read => AcpKind::Read,
        ToolKind::Edit => AcpKind::Edit,
        ToolKind::Delete => AcpKind::Delete,
        ToolKind::Move => AcpKind::Move,
        ToolKind::Search => AcpKind::Search,
        ToolKind::Execute => AcpKind::Execute,
        ToolKind::Think => AcpKind::Think,
        ToolKind::Fetch => AcpKind::Fetch,
        ToolKind::Other => AcpKind::Other,
    }
}

fn tool_call(start: ToolStart) -> ToolCall {
    ToolCall::new(start.call_id, start.title)
        .kind(kind(start.kind))
        .status(ToolCallStatus::InProgress)
        .locations(start.locations.into_iter().map(ToolCallLocation::new).collect())
        .raw_input(start.arguments)
}

fn tool_call_end(end: ToolEnd) -> ToolCallUpdate {
    let status = if end.ok { ToolCallStatus::Completed } else { ToolCallStatus::Failed };
    let mut content = Vec::new();
    if let Some(diff) = end.diff {
        content.push(ToolCallContent::Diff(Diff::new(diff.path, diff.new).old_text(diff.old)));
    }
    if !end.text.is_empty() {
        content.push(text_content(&end.text));
    }
    ToolCallUpdate::new(end.call_id, ToolCallUpdateFields::new().status(status).content(content))
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text.to_owned()))
}
