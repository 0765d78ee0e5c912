//! A hosted session's [`Subscriber`]: what its runtime reports becomes the session's typed
//! [`Update`]s for the face, in order, and its approvals go through the face ([`HostGate`],
//! [`HostConsole`]). Edits come as the file's text before and after, as the tool saw it; text
//! and arguments are redacted before a face sees them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError};

use odek_agent::observer::{CallResult, LoopEvent};
use odek_agent::plan::{PlanBoard, PlanEvent};
use odek_agent::run::BatchApprover;
use odek_contract::redaction::redact;

use super::approval::{Asking, HostConsole, HostGate};
use super::update::{FileDiff, ToolEnd, Update, UsageState, plan_steps, tool_start};
use crate::approvals::Console;
use crate::subscriber::Subscriber;

pub(crate) struct Watch {
    pub(crate) asking: Arc<Asking>,
    /// The session's working directory, canonical.
    pub(crate) cwd: PathBuf,
    pub(crate) plan: OnceLock<Arc<PlanBoard>>,
    pub(crate) handle: tokio::runtime::Handle,
    /// Whether the running turn streamed answer text (else its answer is sent whole at its end).
    pub(crate) streamed: AtomicBool,
    /// Calls of the running batch the policy or the sandbox refused: shown as failed.
    denied: std::sync::Mutex<Vec<String>>,
    /// Streamed text not sent yet, `(answer, reasoning)`: held from its last white space on, so
    /// a secret split between two deltas is redacted whole.
    held: std::sync::Mutex<(String, String)>,
}

/// Longest run of streamed text without white space held back before it is sent anyway.
const MAX_HELD_BYTES: usize = 4096;

impl Watch {
    pub(crate) fn new(asking: Arc<Asking>, cwd: PathBuf, handle: tokio::runtime::Handle) -> Watch {
        Watch {
            asking,
            cwd,
            plan: OnceLock::new(),
            handle,
            streamed: AtomicBool::new(false),
            denied: std::sync::Mutex::new(Vec::new()),
            held: std::sync::Mutex::new((String::new(), String::new())),
        }
    }

    fn send(&self, update: Update) {
        self.asking.face.update(&self.asking.session, update);
    }

    /// Sends the streamed text still held back (at the end of a turn, and before anything else
    /// the turn shows, so the order stays the model's).
    pub(crate) fn flush(&self) {
        let (answer, reasoning) = std::mem::take(&mut *self.held.lock().unwrap_or_else(PoisonError::into_inner));
        if !reasoning.is_empty() {
            self.send(Update::Reasoning(redact(&reasoning).into_owned()));
        }
        if !answer.is_empty() {
            self.send(Update::Text(redact(&answer).into_owned()));
        }
    }
}

/// What of `held` can be sent now: up to and with its last white space, or all of it past
/// [`MAX_HELD_BYTES`]; the rest stays held.
fn ready_part(held: &mut String) -> Option<String> {
    let cut = match held.rfind(char::is_whitespace) {
        Some(at) => at + held[at..].chars().next().map_or(1, char::len_utf8),
        None if held.len() > MAX_HELD_BYTES => held.len(),
        None => return None,
    };
    let rest = held.split_off(cut);
    Some(std::mem::replace(held, rest))
}

impl Subscriber for Watch {
    fn warning(&self, text: &str) {
        self.send(Update::Warning(text.to_owned()));
    }

    fn notice(&self, text: &str) {
        self.send(Update::Notice(text.to_owned()));
    }

    fn delta(&self, text: &str, reasoning: bool) {
        if !reasoning {
            self.streamed.store(true, Ordering::Relaxed);
        }
        let ready = {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            let held = if reasoning { &mut held.1 } else { &mut held.0 };
            held.push_str(text);
            ready_part(held)
        };
        if let Some(ready) = ready {
            let ready = redact(&ready).into_owned();
            self.send(if reasoning { Update::Reasoning(ready) } else { Update::Text(ready) });
        }
    }

    fn progress(&self, event: &LoopEvent<'_>) {
        match *event {
            LoopEvent::ToolCallStarted { call_id, tool, arguments, .. } => {
                self.flush();
                let start = tool_start(call_id, tool, arguments, &self.cwd);
                self.asking
                    .batch
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((call_id.to_owned(), tool.to_owned()));
                self.send(Update::ToolStarted(start));
            }
            LoopEvent::OperationDenied { call_id, .. } => {
                self.denied.lock().unwrap_or_else(PoisonError::into_inner).push(call_id.to_owned());
            }
            LoopEvent::ToolCallFinished { call_id, tool, duration, result, edit, .. } => {
                let refused = {
                    let mut denied = self.denied.lock().unwrap_or_else(PoisonError::into_inner);
                    let before = denied.len();
                    denied.retain(|id| id != call_id);
                    denied.len() != before
                };
                let (ok, text) = match result {
                    CallResult::Completed { output, .. } => (!refused, output),
                    CallResult::Failed { output } => (false, output),
                };
                // What the model wrote into the file is shown redacted like everything else.
                let diff = edit.filter(|edit| edit.old.as_deref() != Some(&edit.new)).map(|edit| FileDiff {
                    path: edit.path.clone(),
                    old: edit.old.as_deref().map(|old| redact(old).into_owned()),
                    new: redact(&edit.new).into_owned(),
                });
                self.asking.batch.lock().unwrap_or_else(PoisonError::into_inner).clear();
                self.send(Update::ToolFinished(ToolEnd {
                    call_id: call_id.to_owned(),
                    tool: tool.to_owned(),
                    ok,
                    text: text.to_owned(),
                    diff,
                    duration,
                }));
            }
            LoopEvent::ModelResponded { totals, .. } => self.send(Update::Usage(UsageState { turn: totals })),
            LoopEvent::Warning { text } => self.send(Update::Warning(text.to_owned())),
            LoopEvent::BudgetExceeded { exceeded, .. } => self.send(Update::Warning(exceeded.to_string())),
            _ => {}
        }
    }

    fn wants_edits(&self) -> bool {
        true
    }

    fn plan(&self, _event: &PlanEvent) {
        if let Some(board) = self.plan.get() {
            self.send(Update::Plan(plan_steps(board)));
        }
    }

    fn console(&self) -> Option<Arc<dyn Console>> {
        Some(Arc::new(HostConsole { asking: Arc::clone(&self.asking), handle: self.handle.clone() }))
    }

    fn batch_approver(&self) -> Option<Arc<dyn BatchApprover>> {
        Some(Arc::new(HostGate(Arc::clone(&self.asking))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_is_held_from_its_last_white_space_red() {
        let mut held = String::new();
        held.push_str("the key is sk-ab");
        assert_eq!(ready_part(&mut held).as_deref(), Some("the key is "));
        assert_eq!(held, "sk-ab");
        held.push_str("cdef0123");
        assert_eq!(ready_part(&mut held), None, "a secret split between deltas is held whole");
        held.push_str(" done");
        assert_eq!(ready_part(&mut held).as_deref(), Some("sk-abcdef0123 "));
        held.clear();
        held.push_str(&"x".repeat(MAX_HELD_BYTES + 1));
        assert_eq!(ready_part(&mut held).map(|ready| ready.len()), Some(MAX_HELD_BYTES + 1));
    }
}
