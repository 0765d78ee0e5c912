//! Approvals of a hosted session, asked of a person through the face: the typed
//! [`ApprovalRequest`] and [`ApprovalAnswer`], the loop's batch gate over them ([`HostGate`]),
//! and the approval console the MCP start-up asks project servers and tools through
//! ([`HostConsole`]). An unanswered request is denied after `approval_timeout_seconds`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use odek_agent::run::{ApprovalItem, BatchApprover, GateAnswer};
use odek_contract::redaction::redact;
use odek_llm::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::HostFace;
use crate::approvals::Console;

/// A question for the person: may this run?
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRequest {
    /// Unique in the process.
    pub id: u64,
    /// The session asking.
    pub session: String,
    /// The tool call it is about, when it is one (its [`super::ToolStart`] came first).
    pub call_id: Option<String>,
    /// The tool's name, or `mcp server` / `mcp tool` for an MCP approval.
    pub tool: String,
    /// One line saying what would run (`Run rm -rf build`, `Start MCP server "docs"`).
    pub title: String,
    /// The command, the path, or the approval card's text.
    pub detail: String,
    /// The danger class of a tool call (`local_write`, `code_execution`, …).
    pub class: Option<String>,
    /// Whether "allow always" may be offered (never for an unclassified command).
    pub allow_always: bool,
}

/// The person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run it this once.
    AllowOnce,
    /// Run it, and the same operation again in this session without asking.
    AllowAlways,
    /// Do not run it.
    Deny,
}

static NEXT_REQUEST: AtomicU64 = AtomicU64::new(1);

/// A request id unique in the process, approvals and elicitations alike.
pub(crate) fn next_request_id() -> u64 {
    NEXT_REQUEST.fetch_add(1, Ordering::Relaxed)
}

/// Asks the person through the face; the answer is [`ApprovalAnswer::Deny`] when nobody
/// answers within `timeout`, when the face cannot ask, or when `cancel` fires first.
pub(crate) async fn ask(
    face: &Arc<dyn HostFace>,
    mut request: ApprovalRequest,
    timeout: Duration,
    cancel: &CancellationToken,
) -> ApprovalAnswer {
    request.id = next_request_id();
    let asking = face.ask(request);
    tokio::select! {
        answer = tokio::time::timeout(timeout, asking) => answer.ok().flatten().unwrap_or(ApprovalAnswer::Deny),
        () = cancel.cancelled() => ApprovalAnswer::Deny,
    }
}

/// What a session's approvals share: who asks, the deadline, the operations approved for the
/// rest of the session, the calls of the batch being asked about, and the running turn's
/// cancellation.
pub(crate) struct Asking {
    pub(crate) face: Arc<dyn HostFace>,
    pub(crate) session: String,
    /// `approval_timeout_seconds` of the session's config.
    pub(crate) timeout_seconds: AtomicU64,
    /// Operations answered "allow always", as `tool, class, operation` keys.
    pub(crate) always: Mutex<HashSet<String>>,
    /// The calls started in the current batch, `(call_id, tool, arguments)`, to name the call
    /// an approval item is about.
    pub(crate) batch: Mutex<Vec<(String, String)>>,
    pub(crate) cancel: Mutex<CancellationToken>,
    /// \[beyond\] The config's `elicitation` policy: what answers when the face cannot ask.
    pub(crate) elicitation: Mutex<odek_mcp::elicitation::ElicitationPolicy>,
}

impl Asking {
    fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_seconds.load(Ordering::Relaxed))
    }

    pub(crate) fn cancel(&self) -> CancellationToken {
        self.cancel.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The first call of the batch with this tool not yet asked about.
    fn take_call(&self, tool: &str) -> Option<String> {
        let mut batch = self.batch.lock().unwrap_or_else(PoisonError::into_inner);
        let index = batch.iter().position(|(_, name)| name == tool)?;
        Some(batch.remove(index).0)
    }
}

/// The loop's batch gate for a hosted session: each item of a batch is asked on its own, in
/// order; the first denial denies the batch (spec `loop-and-sessions.md` §11). An operation
/// answered "allow always" is not asked again in this session.
pub(crate) struct HostGate(pub(crate) Arc<Asking>);

impl BatchApprover for HostGate {
    fn approve<'a>(&'a self, items: &'a [ApprovalItem], allow_always: bool) -> BoxFuture<'a, GateAnswer> {
        Box::pin(async move {
            let asking = &self.0;
            for item in items {
                let call_id = asking.take_call(&item.tool);
                let resource = &item.risk.resource;
                // "Always" is for this tool, class and operation only, and never for what no
                // rule classifies.
                let item_always = allow_always && item.risk.class != odek_danger::DangerClass::Unknown;
                let key = format!("{}\u{1f}{}\u{1f}{resource}", item.tool, item.risk.class);
                if item_always && asking.always.lock().unwrap_or_else(PoisonError::into_inner).contains(&key) {
                    continue;
                }
                let request = ApprovalRequest {
                    id: 0,
                    session: asking.session.clone(),
                    call_id,
                    tool: item.tool.clone(),
                    title: redact(&format!("{} {}", verb(&item.tool), first_line(resource))).into_owned(),
                    detail: redact(resource).into_owned(),
                    class: Some(item.risk.class.to_string()),
                    allow_always: item_always,
                };
                match ask(&asking.face, request, asking.timeout(), &asking.cancel()).await {
                    ApprovalAnswer::Deny => return GateAnswer::Deny,
                    ApprovalAnswer::AllowAlways if item_always => {
                        asking.always.lock().unwrap_or_else(PoisonError::into_inner).insert(key);
                    }
                    ApprovalAnswer::AllowOnce | ApprovalAnswer::AllowAlways => {}
                }
            }
            // The session's own keys say what is always allowed; the loop's per-turn set is
            // not fed.
            GateAnswer::Approve
        })
    }
}

fn verb(tool: &str) -> &'static str {
    match tool {
        "shell" => "Run",
        "write_file" => "Write",
        "patch" => "Edit",
        _ => "Allow",
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// The approval console of a hosted session: the MCP start-up's questions (a project server,
/// an MCP tool) become approval requests. It is called on a blocking thread and waits there
/// for the answer, within the deadline.
pub(crate) struct HostConsole {
    pub(crate) asking: Arc<Asking>,
    pub(crate) handle: tokio::runtime::Handle,
}

impl HostConsole {
    /// A server's card is asked for a line ([`Console::prompt`]), a tool card for a key
    /// ([`Console::prompt_key`]); the card's text is already terminal-safe. Either is one
    /// request: an answer is persisted as a terminal's is, so "allow always" is not offered.
    fn answer(&self, text: &str, server: bool) -> ApprovalAnswer {
        let asking = &self.asking;
        let request = ApprovalRequest {
            id: 0,
            session: asking.session.clone(),
            call_id: None,
            tool: if server { "mcp server" } else { "mcp tool" }.to_owned(),
            title: redact(first_line(text.trim_start()).trim_end_matches(':')).into_owned(),
            detail: redact(text.trim()).into_owned(),
            class: None,
            allow_always: false,
        };
        self.handle.block_on(ask(&asking.face, request, asking.timeout(), &asking.cancel()))
    }
}

impl Console for HostConsole {
    fn is_interactive(&self) -> bool {
        true
    }

    fn prompt(&self, text: &str) -> Option<String> {
        match self.answer(text, true) {
            ApprovalAnswer::Deny => Some("n".to_owned()),
            _ => Some("y".to_owned()),
        }
    }

    /// The answer covers the whole card: every tool it lists (`a`), or none (`N`).
    fn prompt_key(&self, text: &str) -> Option<char> {
        Some(match self.answer(text, false) {
            ApprovalAnswer::Deny => 'N',
            ApprovalAnswer::AllowOnce | ApprovalAnswer::AllowAlways => 'a',
        })
    }

    fn warn(&self, text: &str) {
        self.asking.face.update(&self.asking.session, super::Update::Warning(text.to_owned()));
    }
}
