//! What the session host tells `odek serve`, put where the API reads it: each session's
//! updates go to the run it is running (its `odek.event/v1` lines to the run's log, its usage
//! and plan to the run's state), and each approval request becomes an `approval_requested`
//! event the client answers with `POST /api/runs/{id}/approvals/{aid}`.

use std::sync::Arc;

use odek::BoxFuture;
use odek::host::{ApprovalAnswer, ApprovalRequest, HostFace, Update};
use odek_contract::redaction::redact;
use serde_json::json;

use crate::runs::{Run, Runs};

/// How long an approval's event waits for its call's `tool_call_started` to be in the log.
const CALL_EVENT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// The host's face for `odek serve`.
pub struct ServeFace {
    pub runs: Arc<Runs>,
}

impl HostFace for ServeFace {
    fn update(&self, session: &str, update: Update) {
        let Some(run) = self.runs.of_session(session) else { return };
        match update {
            Update::Event(line) => run.push_event(&line),
            Update::Usage(usage) => run.set_usage(usage.turn),
            Update::ToolFinished(end) if !end.artifacts.is_empty() => run.add_artifacts(&end.tool, end.artifacts),
            Update::Plan(steps) => run.set_plan(&steps),
            _ => {}
        }
    }

    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, Option<ApprovalAnswer>> {
        let Some(run) = self.runs.of_session(&request.session) else { return Box::pin(async { None }) };
        let answered = run.pend(request.id);
        Box::pin(async move {
            if let Some(call_id) = &request.call_id {
                run.wait_for_call(call_id, CALL_EVENT_DEADLINE).await;
            }
            run.push_own_event(
                "approval_requested",
                Some(&request.tool),
                json!({
                    "approval_id": request.id,
                    "call_id": request.call_id,
                    "class": request.class,
                    "summary": redact(&request.title),
                    "detail": redact(&request.detail),
                    "allow_for_run": request.allow_always,
                }),
            );
            // From here on, an asker that gives up before an answer leaves an expiry behind.
            let pending = Pending { run, id: request.id, tool: request.tool };
            let answer = answered.await.ok();
            pending.resolved(answer);
            answer
        })
    }

    fn wants_events(&self) -> bool {
        true
    }
}

/// An approval waiting: when its asker stops waiting (the timeout, a cancelled turn) before an
/// answer, the run's stream says it was denied.
struct Pending {
    run: Arc<Run>,
    id: u64,
    tool: String,
}

impl Pending {
    fn resolved(&self, answer: Option<ApprovalAnswer>) {
        let decision = match answer {
            Some(ApprovalAnswer::AllowOnce) => "allow",
            Some(ApprovalAnswer::AllowAlways) => "allow_for_run",
            Some(ApprovalAnswer::Deny) | None => "deny",
        };
        self.run.push_own_event(
            "approval_resolved",
            Some(&self.tool),
            json!({"approval_id": self.id, "decision": decision, "by": if answer.is_some() { "client" } else { "expired" }}),
        );
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // Still registered: nobody answered before the asker gave up.
        if self.run.forget(self.id) {
            self.resolved(None);
        }
    }
}
