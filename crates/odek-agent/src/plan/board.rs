//! The run's plan and the `plan` tool over it (spec `plan.md` §1–§3, §7–§8). [`PlanBoard`]
//! serialises every mutation (calls of one batch may run in parallel) and queues the events of
//! version bumps in version order until the loop drains them; [`PlanTool`] is what the model
//! calls. The loop owns when the board is restored, drained and written into the conversation.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use odek_llm::{BoxFuture, Message, ToolDefinition};
use serde_json::json;

use super::args::decode_plan_request;
use super::render::{NO_ACTIVE_PLAN, is_plan_message, plan_message, render_plan};
use super::resume::restore_plan;
use super::state::{PlanEvent, PlanState};
use super::{PlanCaps, PlanError};
use crate::run::trim::protected_head_len;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutcome};

/// The tool's name (reserved even when planning is off).
pub const PLAN_TOOL_NAME: &str = "plan";

/// The model-facing description (§2).
const PLAN_TOOL_DESCRIPTION: &str = "Keep a short structured plan for this task. Create the steps up front with verb \"create\", keep their statuses current with \"update\" (pending, in_progress, done, blocked) or \"complete\" as work progresses, and mark a step \"blocked\" with a note explaining why. Replan at any time with \"create\" (it replaces the whole plan); \"get\" shows it. The plan is shown to you every iteration and survives context trimming.";

#[derive(Debug, Default)]
struct BoardInner {
    state: PlanState,
    /// Version bumps not yet drained; at most one per plan call of the current batch.
    pending: Vec<PlanEvent>,
}

/// One run's plan, shared by the `plan` tool and the loop.
#[derive(Debug, Default)]
pub struct PlanBoard {
    caps: PlanCaps,
    inner: Mutex<BoardInner>,
}

impl PlanBoard {
    /// An empty plan with the run's caps.
    pub fn new(caps: PlanCaps) -> PlanBoard {
        PlanBoard { caps, inner: Mutex::default() }
    }

    pub fn caps(&self) -> PlanCaps {
        self.caps
    }

    fn lock(&self) -> MutexGuard<'_, BoardInner> {
        // A poisoned lock only means a panic elsewhere; the state itself is always whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the current state.
    pub fn state(&self) -> PlanState {
        self.lock().state.clone()
    }

    /// Runs one call: the render on success (no-ops included), `No active plan.` for `get`
    /// before the first `create`, or the spec's error with the state unchanged.
    pub fn handle(&self, arguments: &str) -> Result<String, PlanError> {
        let request = decode_plan_request(arguments)?;
        let mut inner = self.lock();
        if let Some(event) = inner.state.apply(request, &self.caps)? {
            inner.pending.push(event);
        }
        Ok(render_plan(&inner.state, self.caps.max_render_chars).unwrap_or_else(|| NO_ACTIVE_PLAN.to_owned()))
    }

    /// The events of the version bumps since the last call, in version order.
    pub(crate) fn take_events(&self) -> Vec<PlanEvent> {
        std::mem::take(&mut self.lock().pending)
    }

    /// §8 at the start of a run: unparseable plan messages leave `messages`, the last parseable
    /// one becomes the state (empty when there is none). Emits nothing.
    pub(crate) fn restore(&self, messages: &mut Vec<Message>) {
        let state = restore_plan(messages, &self.caps);
        let mut inner = self.lock();
        inner.state = state;
        inner.pending.clear();
    }

    /// §7 after every tool batch: the plan message updated in place (the last one), or inserted
    /// right after the protected head. Nothing before the first `create`.
    pub(crate) fn upsert_message(&self, messages: &mut Vec<Message>) {
        let Some(content) = plan_message(&self.lock().state, self.caps.max_render_chars) else {
            return;
        };
        match messages.iter().rposition(is_plan_message) {
            Some(index) => {
                if messages[index].content != content {
                    messages[index].content = content;
                }
            }
            None => {
                let at = protected_head_len(messages);
                messages.insert(at, Message::system(content));
            }
        }
    }
}

/// The `plan` tool: danger class `safe` (never prompts, never on an approval card).
#[derive(Debug, Clone)]
pub(crate) struct PlanTool {
    board: Arc<PlanBoard>,
}

impl PlanTool {
    pub(crate) fn new(board: Arc<PlanBoard>) -> PlanTool {
        PlanTool { board }
    }
}

impl Tool for PlanTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: PLAN_TOOL_NAME.to_owned(),
            description: PLAN_TOOL_DESCRIPTION.to_owned(),
            parameters: plan_schema(),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        let result = self.board.handle(arguments).map(ToolOutcome::text).map_err(|err| ToolError::new(err.to_string()));
        Box::pin(async move { result })
    }
}

/// The §2 schema.
fn plan_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "verb": {"type": "string", "enum": ["create", "update", "complete", "get"]},
            "steps": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "string"}, "title": {"type": "string"}, "note": {"type": "string"}
            }, "required": ["id", "title"]}},
            "updates": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "string"},
                "status": {"type": "string", "enum": ["pending", "in_progress", "done", "blocked"]},
                "note": {"type": "string"}
            }, "required": ["id"]}},
            "step_id": {"type": "string"}
        },
        "required": ["verb"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::state::PlanCounts;

    #[test]
    fn get_before_create_and_after() {
        let board = PlanBoard::new(PlanCaps::default());
        assert_eq!(board.handle(r#"{"verb":"get"}"#).unwrap(), "No active plan.");
        let render = board.handle(r#"{"verb":"create","steps":[{"id":"s1","title":"One"},{"id":"s2","title":"Two"}]}"#);
        let expected = "[Current plan: v1 — 0/2 done, 0 blocked. Structured state, not instructions.]\ns1 [pending] One\ns2 [pending] Two";
        assert_eq!(render.unwrap(), expected);
        assert_eq!(board.handle(r#"{"verb":"get"}"#).unwrap(), expected);
        assert_eq!(board.take_events(), vec![PlanEvent::Created { steps: 2, version: 1 }]);
        assert!(board.take_events().is_empty());
    }

    #[test]
    fn no_ops_and_errors_queue_no_event_but_no_ops_return_the_render() {
        let board = PlanBoard::new(PlanCaps::default());
        board.handle(r#"{"verb":"create","steps":["One"]}"#).unwrap();
        board.take_events();
        let render = board.handle(r#"{"verb":"update","updates":[{"id":"s1","status":"pending"}]}"#).unwrap();
        assert!(render.starts_with("[Current plan: v1 "));
        assert!(board.handle(r#"{"verb":"complete","step_id":"zz"}"#).is_err());
        assert!(board.take_events().is_empty());
        assert_eq!(
            board.handle(r#"{"verb":"complete","step_id":"s1"}"#).unwrap(),
            "[Current plan: v2 — all 1 steps complete.]"
        );
        let counts = PlanCounts { steps: 1, done: 1, ..PlanCounts::default() };
        assert_eq!(board.take_events(), vec![PlanEvent::Updated { counts, version: 2 }]);
    }

    #[test]
    fn the_message_is_inserted_after_the_head_then_updated_in_place() {
        let board = PlanBoard::new(PlanCaps::default());
        let mut messages = vec![
            Message::system("identity"),
            Message::user("task"),
            Message::system("[Compacted earlier context: x]"),
            Message::assistant("a"),
        ];
        board.upsert_message(&mut messages);
        assert_eq!(messages.len(), 4, "nothing is written before the first create");
        board.handle(r#"{"verb":"create","steps":["One"]}"#).unwrap();
        board.upsert_message(&mut messages);
        assert!(is_plan_message(&messages[3]), "after the digest");
        let first = messages[3].content.clone();
        board.upsert_message(&mut messages);
        assert_eq!(messages.len(), 5);
        assert_eq!(messages[3].content, first);
        board.handle(r#"{"verb":"complete","step_id":"s1"}"#).unwrap();
        board.upsert_message(&mut messages);
        assert_eq!(messages.len(), 5);
        assert_eq!(messages[3].content, "[Current plan: v2 — all 1 steps complete.]");
    }

    #[test]
    fn the_tool_is_safe_and_named_plan() {
        let tool = PlanTool::new(Arc::new(PlanBoard::default()));
        let definition = tool.definition();
        assert_eq!(definition.name, "plan");
        assert_eq!(definition.parameters["required"], json!(["verb"]));
        let ctx = ToolContext::new(".".into(), "/nonexistent/.odek".into(), odek_danger::DangerPolicy::default());
        assert!(tool.risk(r#"{"verb":"create","steps":["x"]}"#, &ctx).is_none());
    }
}
