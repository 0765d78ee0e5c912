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
use odek_contract::redaction::{redact, take_redactable};

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

impl Subscriber for Watch {
    fn warning(&self, text: &str) {
        self.send(Update::Warning(text.to_owned()));
    }

    fn elicitor(&self) -> Option<Arc<dyn odek_mcp::Elicitor>> {
        Some(Arc::new(super::elicitation::HostElicitor(Arc::clone(&self.asking))))
    }

    fn wants_events(&self) -> bool {
        self.asking.face.wants_events()
    }

    fn event(&self, line: &str) {
        self.send(Update::Event(line.trim_end_matches('\n').to_owned()));
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
            take_redactable(held)
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
            LoopEvent::ToolCallFinished { call_id, tool, duration, result, edit, artifacts, .. } => {
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
                    artifacts: artifacts.to_vec(),
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
