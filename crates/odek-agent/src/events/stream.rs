//! The event stream as the rest of odek sees it: [`EventStream`] maps the loop's
//! [`LoopEvent`]s and the MCP client's [`McpEvent`]s to `odek.event/v1` events and offers the
//! run-level events the binary emits itself. [`Fanout`] lets the loop report to the terminal
//! display and the stream at once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use odek_contract::outcome::Outcome;
use odek_llm::{StreamObserver, Usage};
use odek_mcp::{McpEvent, McpObserver};

use super::args::args_summary;
use super::dispatch::EventEmitter;
use super::event::Event;
use crate::finish::output_file::OutputWritten;
use crate::liveness::Liveness;
use crate::observer::{CallResult, LoopEvent, LoopObserver};
use crate::plan::PlanEvent;

/// One run's event stream. `Send + Sync`; no method waits on the sink except
/// [`EventStream::close`].
pub struct EventStream {
    emitter: EventEmitter,
    cwd: PathBuf,
    odek_home: PathBuf,
    /// Receives every MCP event, warning and server line too, so the terminal keeps showing them.
    mcp_terminal: Arc<dyn McpObserver>,
    /// The run's liveness, told about MCP activity.
    liveness: std::sync::OnceLock<Liveness>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").field("emitter", &self.emitter).field("cwd", &self.cwd).finish()
    }
}

impl EventStream {
    /// `cwd` and `odek_home` anchor the danger classes of `args_summary`; `mcp_terminal` is the
    /// MCP observer the hub would have had without events (e.g. `odek_mcp::StderrObserver`).
    pub fn new(emitter: EventEmitter, cwd: &Path, odek_home: &Path, mcp_terminal: Arc<dyn McpObserver>) -> EventStream {
        EventStream {
            emitter,
            cwd: cwd.to_path_buf(),
            odek_home: odek_home.to_path_buf(),
            mcp_terminal,
            liveness: std::sync::OnceLock::new(),
        }
    }

    /// Queues `event` (see [`EventEmitter::emit`]).
    pub(crate) fn emit(&self, event: Event) {
        self.emitter.emit(event);
    }

    /// Stamps the session ID on every later event.
    pub fn set_session_id(&self, id: &str) {
        self.emitter.set_session_id(id);
    }

    pub fn run_started(&self, model: &str, sandbox: bool, max_iterations: u32) {
        self.emit(Event::run_started(model, sandbox, max_iterations));
    }

    /// `usage` holds the run totals; `output` what `--output-file` wrote, if anything.
    pub fn run_completed(&self, duration: Duration, usage: Usage, outcome: Outcome, output: Option<&OutputWritten>) {
        self.emit(Event::run_completed(duration, usage.input_tokens, usage.output_tokens, outcome, output));
    }

    /// `phase` is the phase that stalled, for a stall.
    pub fn run_failed(&self, duration: Duration, error_class: &str, outcome: Outcome, phase: Option<&str>) {
        self.emit(Event::run_failed(duration, error_class, outcome, phase));
    }

    /// MCP activity (progress notifications, server lines) counts as progress of `liveness`.
    /// Set once per stream; later calls are ignored.
    pub fn track_liveness(&self, liveness: &Liveness) {
        let _ = self.liveness.set(liveness.clone());
    }

    fn note_mcp_activity(&self) {
        if let Some(liveness) = self.liveness.get() {
            liveness.note_progress();
        }
    }

    /// Drains and stops the stream; see [`EventEmitter::close`].
    pub fn close(&self) -> u64 {
        self.emitter.close()
    }

    /// The v1 event for a loop event; `None` for those the stream does not carry.
    fn loop_event_to_event(&self, event: &LoopEvent<'_>) -> Option<Event> {
        match *event {
            LoopEvent::IterationStarted { .. } | LoopEvent::ModelResponded { .. } | LoopEvent::Warning { .. } => None,
            LoopEvent::ToolCallStarted { iteration, call_id, tool, arguments, risk: _ } => {
                let summary = args_summary(tool, arguments, &self.cwd, &self.odek_home);
                Some(Event::tool_call_started(
                    iteration,
                    tool,
                    call_id,
                    arguments,
                    summary,
                    self.emitter.include_args(),
                ))
            }
            LoopEvent::OperationDenied { iteration, call_id, tool, denial } => {
                Some(Event::operation_denied(iteration, tool, call_id, denial.class.as_str(), &denial.reason))
            }
            LoopEvent::ToolCallFinished { iteration, call_id, tool, duration, result, .. } => Some(match result {
                CallResult::Completed { output, observed_chars } => {
                    Event::tool_call_completed(iteration, tool, call_id, duration, output, observed_chars)
                }
                CallResult::Failed { .. } => Event::tool_call_failed(iteration, tool, call_id, duration),
            }),
            LoopEvent::ContextTrimmed { iteration, mode, dropped_groups, truncated_results } => {
                Some(Event::context_trimmed(iteration, mode.as_str(), dropped_groups, truncated_results))
            }
            LoopEvent::SessionSaved { iteration, message_count } => {
                Some(Event::session_saved(iteration, message_count))
            }
            LoopEvent::ProviderFallback { iteration, fallback } => Some(Event::provider_fallback(iteration, fallback)),
            LoopEvent::BudgetExceeded { iteration, exceeded } => {
                Some(Event::budget_exceeded(iteration, exceeded.limit_name.as_str(), exceeded.observed, exceeded.limit))
            }
            LoopEvent::IterationCompleted { iteration, totals, tools_called } => {
                Some(Event::iteration_completed(iteration, totals.input_tokens, totals.output_tokens, tools_called))
            }
            LoopEvent::CheckStarted { iteration, check_id, cycle } => {
                Some(Event::check_started(iteration, check_id, cycle))
            }
            LoopEvent::CheckCompleted { iteration, check } => Some(Event::check_completed(iteration, check)),
        }
    }
}

/// `plan_created` / `plan_updated`: counts and the version only, no `iteration`.
fn plan_event_to_event(event: &PlanEvent) -> Event {
    match *event {
        PlanEvent::Created { steps, version } => Event::plan_created(steps, version),
        PlanEvent::Updated { counts, version } => {
            Event::plan_updated(counts.steps, counts.done, counts.in_progress, counts.blocked, counts.pending, version)
        }
    }
}

/// The v1 event for an MCP lifecycle event.
fn mcp_event_to_event(event: &McpEvent) -> Event {
    match event {
        McpEvent::ServerStarted { server, tools, duration_ms, protocol_version } => {
            Event::mcp_server_started(server, *tools, *duration_ms, protocol_version)
        }
        McpEvent::ServerFailed { server, error_class } => Event::mcp_server_failed(server, error_class),
        McpEvent::ServerRestarted { server, restarts, exit_status } => {
            Event::mcp_server_restarted(server, *restarts, *exit_status)
        }
        McpEvent::ElicitationAnswered { server, mode, action } => Event::elicitation_answered(server, mode, action),
        McpEvent::ElicitationDeclined { server, mode, action, reason } => {
            Event::elicitation_declined(server, mode, *action, reason)
        }
    }
}

impl StreamObserver for EventStream {}

impl LoopObserver for EventStream {
    fn on_event(&self, event: &LoopEvent<'_>) {
        if let Some(event) = self.loop_event_to_event(event) {
            self.emit(event);
        }
    }

    fn on_plan_event(&self, event: &PlanEvent) {
        self.emit(plan_event_to_event(event));
    }
}

impl McpObserver for EventStream {
    fn event(&self, event: McpEvent) {
        self.note_mcp_activity();
        self.emit(mcp_event_to_event(&event));
        self.mcp_terminal.event(event);
    }

    fn warning(&self, server: &str, text: &str) {
        self.mcp_terminal.warning(server, text);
    }

    fn server_line(&self, server: &str, line: &str) {
        self.note_mcp_activity();
        self.mcp_terminal.server_line(server, line);
    }

    fn activity(&self, server: &str) {
        self.note_mcp_activity();
        self.mcp_terminal.activity(server);
    }

    fn shows_progress(&self) -> bool {
        self.mcp_terminal.shows_progress()
    }
}

/// Forwards every loop event and stream delta to each observer, in order.
#[derive(Clone, Default)]
pub struct Fanout {
    observers: Vec<Arc<dyn LoopObserver>>,
}

impl Fanout {
    pub fn new(observers: Vec<Arc<dyn LoopObserver>>) -> Fanout {
        Fanout { observers }
    }
}

impl StreamObserver for Fanout {
    fn on_delta(&self, text: &str, reasoning: bool) {
        for observer in &self.observers {
            observer.on_delta(text, reasoning);
        }
    }

    fn on_progress(&self) {
        for observer in &self.observers {
            observer.on_progress();
        }
    }
}

impl LoopObserver for Fanout {
    fn on_event(&self, event: &LoopEvent<'_>) {
        for observer in &self.observers {
            observer.on_event(event);
        }
    }

    fn on_plan_event(&self, event: &PlanEvent) {
        for observer in &self.observers {
            observer.on_plan_event(event);
        }
    }
}
