//! \[beyond\] Elicitations of a hosted session (an MCP server asking the person for input),
//! asked through the face as typed requests: [`ElicitationRequest`] and its answer
//! ([`ElicitationAnswer`]), and the session's [`Elicitor`] over them ([`HostElicitor`]). A face
//! that cannot ask (the default) leaves the answer to the config's `elicitation` policy.

use std::sync::{Arc, PoisonError};

use odek_contract::redaction::redact;
use odek_mcp::Elicitor;
use odek_mcp::elicitation::{DeclineReason, ElicitFuture, ElicitationAction, ElicitationKind, Elicited};

/// What the person is asked to answer.
pub use odek_mcp::elicitation::ElicitationAnswer;

use super::approval::{Asking, next_request_id};

/// An MCP server's request for input, for the person of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// Unique in the process (approvals and elicitations share the numbering).
    pub id: u64,
    /// The session asking.
    pub session: String,
    /// The configured name of the server asking.
    pub server: String,
    /// What the server says it needs (redacted, the server's own text: show it terminal-safe).
    pub message: String,
    /// A form (its fields, with their defaults) or a URL to open with the person's consent.
    pub kind: ElicitationKind,
}

/// A hosted session's elicitor: asks through the face; the policy answers when the face cannot
/// ask, and `cancel` when the turn is cancelled first.
pub(crate) struct HostElicitor(pub(crate) Arc<Asking>);

impl Elicitor for HostElicitor {
    fn elicit(&self, request: odek_mcp::elicitation::ElicitationRequest) -> ElicitFuture {
        let asking = Arc::clone(&self.0);
        let policy = *asking.elicitation.lock().unwrap_or_else(PoisonError::into_inner);
        let cancel = asking.cancel();
        Box::pin(async move {
            let question = ElicitationRequest {
                id: next_request_id(),
                session: asking.session.clone(),
                server: request.server.clone(),
                message: redact(&request.message).into_owned(),
                kind: request.kind.clone(),
            };
            tokio::select! {
                answer = asking.face.elicit(question) => match answer {
                    Some(answer) => Elicited::Answered(answer),
                    None => policy.answer(&request),
                },
                () = cancel.cancelled() => Elicited::Declined { action: ElicitationAction::Cancel, reason: DeclineReason::NoAnswer },
            }
        })
    }
}
