//! The host's face on an ACP connection: each [`Update`] becomes a `session/update`
//! notification, each [`ApprovalRequest`] a `session/request_permission` request with the four
//! standard options. Warnings and notices go to stderr, where editors keep an agent's log.

use std::sync::OnceLock;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, PermissionOption, PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind as AcpKind,
};
use agent_client_protocol::{BoxFuture, Client};
use odek::host::{ApprovalAnswer, ApprovalRequest, HostFace, ToolEnd, ToolKind, ToolStart, Update};
use odek_contract::terminal_text::warning_line;

/// The connection the host's updates and questions go to, bound by the first request.
#[derive(Default)]
pub(crate) struct AcpFace {
    connection: OnceLock<ConnectionTo<Client>>,
}

impl AcpFace {
    pub(crate) fn bind(&self, connection: &ConnectionTo<Client>) {
        let _ = self.connection.set(connection.clone());
    }

    pub(crate) fn notify(&self, session: &str, update: SessionUpdate) {
        if let Some(connection) = self.connection.get() {
            // The client is gone when this fails; the turn is cancelled by the close.
            let _ = connection.send_notification(SessionNotification::new(session.to_owned(), update));
        }
    }
}

impl HostFace for AcpFace {
    fn update(&self, session: &str, update: Update) {
        match update {
            Update::Warning(text) => eprintln!("{}", warning_line(&text)),
            Update::Notice(text) => eprintln!("{text}"),
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
            let mut options = vec![PermissionOption::new("allow-once", "Allow once", PermissionOptionKind::AllowOnce)];
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
        Update::Usage(_) | Update::Warning(_) | Update::Notice(_) => return None,
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
