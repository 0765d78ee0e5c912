//! A hosted session's [`Subscriber`]: what its runtime reports becomes the session's typed
//! [`Update`]s for the face, in order, and its approvals go through the face ([`HostGate`],
//! [`HostConsole`]). Edits are shown as the file's text before and after the call; text and
//! arguments are redacted before a face sees them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use odek_agent::observer::{CallResult, LoopEvent};
use odek_agent::plan::{PlanBoard, PlanEvent};
use odek_agent::run::BatchApprover;
use odek_contract::redaction::{redact, redact_json};

use super::approval::{Asking, HostConsole, HostGate};
use super::update::{FileDiff, ToolEnd, ToolKind, Update, UsageState, file_text, plan_steps, tool_start};
use crate::approvals::Console;
use crate::subscriber::Subscriber;

pub(crate) struct Watch {
    pub(crate) asking: Arc<Asking>,
    /// The session's working directory, canonical: diffs read files inside it only.
    pub(crate) cwd: PathBuf,
    pub(crate) plan: OnceLock<Arc<PlanBoard>>,
    pub(crate) handle: tokio::runtime::Handle,
    /// The text before the call of each running edit, by call id.
    before: Mutex<HashMap<String, (PathBuf, Option<String>)>>,
    /// Whether the running turn streamed answer text (else its answer is sent whole at its end).
    pub(crate) streamed: AtomicBool,
}

impl Watch {
    pub(crate) fn new(asking: Arc<Asking>, cwd: PathBuf, handle: tokio::runtime::Handle) -> Watch {
        Watch {
            asking,
            cwd,
            plan: OnceLock::new(),
            handle,
            before: Mutex::new(HashMap::new()),
            streamed: AtomicBool::new(false),
        }
    }

    fn send(&self, update: Update) {
        self.asking.face.update(&self.asking.session, update);
    }
}

impl Subscriber for Watch {
    fn warning(&self, text: &str) {
        self.send(Update::Warning(text.to_owned()));
    }

    fn notice(&self, text: &str) {
        self.send(Update::Notice(text.to_owned()));
    }

    fn delta(&self, text: &str, reasoning: bool) {
        let text = redact(text).into_owned();
        if !reasoning {
            self.streamed.store(true, Ordering::Relaxed);
        }
        self.send(if reasoning { Update::Reasoning(text) } else { Update::Text(text) });
    }

    fn progress(&self, event: &LoopEvent<'_>) {
        match *event {
            LoopEvent::ToolCallStarted { call_id, tool, arguments, .. } => {
                let mut start = tool_start(call_id, tool, arguments, &self.cwd);
                start.arguments = redact_json(&start.arguments);
                self.asking
                    .batch
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((call_id.to_owned(), tool.to_owned()));
                if start.kind == ToolKind::Edit
                    && let [path] = start.locations.as_slice()
                    && let Ok(old) = file_text(&self.cwd, path)
                {
                    self.before
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(call_id.to_owned(), (path.clone(), old));
                }
                self.send(Update::ToolStarted(start));
            }
            LoopEvent::ToolCallFinished { call_id, tool, duration, result, .. } => {
                let (ok, text) = match result {
                    CallResult::Completed { output, .. } => (true, output),
                    CallResult::Failed { output } => (false, output),
                };
                let before = self.before.lock().unwrap_or_else(PoisonError::into_inner).remove(call_id);
                let diff = match before {
                    Some((path, old)) if ok => match file_text(&self.cwd, &path) {
                        Ok(Some(new)) if old.as_ref() != Some(&new) => Some(FileDiff { path, old, new }),
                        _ => None,
                    },
                    _ => None,
                };
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
