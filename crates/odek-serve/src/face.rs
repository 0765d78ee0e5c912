//! What the session host tells `odek serve`, put where the API reads it: each session's
//! updates go to the run it is running (its `odek.event/v1` lines to the run's log, its usage
//! and plan to the run's state), and each approval request becomes an `approval_requested`
//! event the client answers with `POST /api/runs/{id}/approvals/{aid}`, each elicitation (an MCP
//! server asking the person for input) an `elicitation_requested` event answered with
//! `POST /api/runs/{id}/elicitations/{eid}`.

use std::sync::Arc;

use odek::BoxFuture;
use odek::host::{ApprovalAnswer, ApprovalRequest, ElicitationAnswer, ElicitationRequest, HostFace, Update};
use odek::mcp::elicitation::{ElicitationKind, FieldKind, FormField};
use odek_contract::redaction::redact;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
use serde_json::{Map, Value, json};

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

    /// The elicitation waits for the client's answer; the connection's timeout (the config's
    /// `elicitation_timeout_seconds`) or a cancelled turn ends the wait, and the stream says
    /// so. Past the bound on open elicitations, or with no run, the config's policy answers.
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'static, Option<ElicitationAnswer>> {
        let Some(run) = self.runs.of_session(&request.session) else { return Box::pin(async { None }) };
        let form = match &request.kind {
            ElicitationKind::Form(form) => Some(form.clone()),
            ElicitationKind::Url { .. } => None,
        };
        let Some(answered) = run.pend_elicitation(request.id, form) else { return Box::pin(async { None }) };
        Box::pin(async move {
            run.push_own_event("elicitation_requested", None, requested_event_data(&request));
            let pending = PendingElicitation { run, id: request.id };
            let answer = answered.await.ok();
            pending.resolved(answer.as_ref());
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

/// An elicitation waiting: when its asker stops waiting (the timeout, a cancelled turn) before
/// an answer, the run's stream says it expired.
struct PendingElicitation {
    run: Arc<Run>,
    id: u64,
}

impl PendingElicitation {
    /// `elicitation_resolved`: the action only, never what was answered.
    fn resolved(&self, answer: Option<&ElicitationAnswer>) {
        let action = answer.map_or("cancel", |answer| answer.action().as_str());
        self.run.push_own_event(
            "elicitation_resolved",
            None,
            json!({"elicitation_id": self.id, "action": action, "by": if answer.is_some() { "client" } else { "expired" }}),
        );
    }
}

impl Drop for PendingElicitation {
    fn drop(&mut self) {
        if self.run.forget_elicitation(self.id) {
            self.resolved(None);
        }
    }
}

/// Server text as the page shows it: redacted, and safe on a terminal (the page puts it in
/// `textContent` only).
fn shown(text: &str, layout: Layout) -> String {
    sanitise_for_terminal(&redact(text), layout).into_owned()
}

/// The `data` of `elicitation_requested`: the id, the server, the message, the mode, and the
/// form's fields in the schema's order (as odek-mcp read and bounded them, defaults included)
/// or the URL and its host.
fn requested_event_data(request: &ElicitationRequest) -> Value {
    let mut data = json!({
        "elicitation_id": request.id,
        "server": shown(&request.server, Layout::Line),
        "message": shown(&request.message, Layout::Lines),
    });
    match &request.kind {
        ElicitationKind::Form(form) => {
            data["mode"] = json!("form");
            data["fields"] = Value::Array(form.fields.iter().map(field_view).collect());
        }
        ElicitationKind::Url { url, .. } => {
            data["mode"] = json!("url");
            data["url"] = json!(url.as_str());
            data["host"] = json!(url.host_str().unwrap_or_default());
        }
    }
    data
}

/// One field of a form, as JSON Schema words: `type` (`string`, `number`, `integer`, `boolean`,
/// `array` for several options) and its bounds, `options` for a choice.
fn field_view(field: &FormField) -> Value {
    let mut view = Map::new();
    view.insert("name".into(), json!(field.name));
    view.insert("label".into(), json!(shown(field.label(), Layout::Line)));
    if let Some(description) = &field.description {
        view.insert("description".into(), json!(shown(description, Layout::Lines)));
    }
    view.insert("required".into(), json!(field.required));
    if let Some(default) = &field.default {
        view.insert("default".into(), default.clone());
    }
    let options = |options: &[odek::mcp::elicitation::Choice]| -> Value {
        options
            .iter()
            .map(|option| {
                let label = option.title.as_deref().filter(|title| !title.trim().is_empty()).unwrap_or(&option.value);
                json!({"value": option.value, "label": shown(label, Layout::Line)})
            })
            .collect()
    };
    let mut set = |key: &str, value: Value| {
        if !value.is_null() {
            view.insert(key.to_owned(), value);
        }
    };
    match &field.kind {
        FieldKind::Text { min_length, max_length, format } => {
            set("type", json!("string"));
            set("min_length", json!(min_length));
            set("max_length", json!(max_length));
            set("format", json!(format.map(odek::mcp::elicitation::TextFormat::as_str)));
        }
        FieldKind::Number { integer, minimum, maximum } => {
            set("type", json!(if *integer { "integer" } else { "number" }));
            set("minimum", json!(minimum));
            set("maximum", json!(maximum));
        }
        FieldKind::Boolean => set("type", json!("boolean")),
        FieldKind::Choice { options: choices } => {
            set("type", json!("string"));
            set("options", options(choices));
        }
        FieldKind::Choices { options: choices, min_items, max_items } => {
            set("type", json!("array"));
            set("options", options(choices));
            set("min_items", json!(min_items));
            set("max_items", json!(max_items));
        }
    }
    Value::Object(view)
}
