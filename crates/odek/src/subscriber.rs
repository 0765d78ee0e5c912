//! What a face sees of a running turn and how it answers: the [`Subscriber`] trait, and the
//! adapters that turn one subscriber into what the loop, the MCP hub and the event stream each
//! talk to (a [`LoopObserver`], an [`McpObserver`], an [`EventSink`]). Every method but
//! [`Subscriber::warning`] has a default, so an embedder implements only what it shows.

use std::sync::{Arc, PoisonError, RwLock};

use odek_agent::events::{EventSink, EventStream};
use odek_agent::observer::{LoopEvent, LoopObserver};
use odek_agent::plan::PlanEvent;
use odek_agent::run::BatchApprover;
use odek_llm::StreamObserver;
use odek_mcp::{McpEvent, McpObserver};

use crate::approvals::Console;

/// Observes a runtime and answers its approval requests. Calls come from the runtime's tasks
/// and threads: implementations must not block, except the approval methods, which may wait
/// for an answer.
pub trait Subscriber: Send + Sync {
    /// A warning for the operator, without the `odek: warning: ` prefix.
    fn warning(&self, text: &str);

    /// A line for the operator that is not a warning (`odek: session was sandboxed — …`),
    /// given whole. Ignored by default.
    fn notice(&self, _text: &str) {}

    /// One `odek.event/v1` event as its JSON line (without the newline). Called only when
    /// [`Subscriber::wants_events`] is true or `events_jsonl` is set, from the event thread.
    fn event(&self, _line: &str) {}

    /// Whether the runtime should build the event stream for this subscriber even when no
    /// `events_jsonl` target is set.
    fn wants_events(&self) -> bool {
        false
    }

    /// Streamed answer text (`reasoning` false) or reasoning, as it arrives.
    fn delta(&self, _text: &str, _reasoning: bool) {}

    /// The loop's progress: iterations, tool calls starting and finishing, trims, saves,
    /// budget stops and the loop's warnings.
    fn progress(&self, _event: &LoopEvent<'_>) {}

    /// \[beyond\] Whether [`Subscriber::progress`] should carry each file edit's text before
    /// and after (`ToolCallFinished.edit`), for a face that shows diffs. Off by default: the
    /// file tools then read nothing extra.
    fn wants_edits(&self) -> bool {
        false
    }

    /// A plan change (`plan.md` §5).
    fn plan(&self, _event: &PlanEvent) {}

    /// An MCP server started, failed or was restarted.
    fn mcp_event(&self, _event: McpEvent) {}

    /// A warning about an MCP server; by default an ordinary [`Subscriber::warning`].
    fn mcp_warning(&self, _server: &str, text: &str) {
        self.warning(text);
    }

    /// One line an MCP server wrote on stderr or logged, already cut, cleaned and redacted.
    fn server_line(&self, _server: &str, _line: &str) {}

    /// Where project-server and MCP-tool approvals are asked. `None` (the default): nobody can
    /// answer, so the non-interactive rules decide (`ODEK_APPROVE_MCP`, persisted approvals,
    /// `auto_approve`) and anything else is refused with the spec's message.
    fn console(&self) -> Option<Arc<dyn Console>> {
        None
    }

    /// \[beyond\] Who asks the person an MCP server's elicitation (a request for input) is for.
    /// `None` (the default): nobody can answer, so the config's `elicitation` policy does
    /// (`decline` unless set). Asked once, when the runtime is built.
    fn elicitor(&self) -> Option<Arc<dyn odek_mcp::Elicitor>> {
        None
    }

    /// The MCP servers are up and the loop is about to start: a face may begin its display.
    fn loop_started(&self) {}

    /// Who approves a batch of `prompt`-class built-in calls; asked after
    /// [`Subscriber::loop_started`]. `None`: the non-interactive policy decides.
    fn batch_approver(&self) -> Option<Arc<dyn BatchApprover>> {
        None
    }

    /// The loop ended (answer or error), before the turn's outcome is returned.
    fn loop_finished(&self) {}
}

/// A subscriber seen as the loop's observer.
pub(crate) struct LoopView(pub(crate) Arc<dyn Subscriber>);

impl StreamObserver for LoopView {
    fn on_delta(&self, text: &str, reasoning: bool) {
        self.0.delta(text, reasoning);
    }
}

impl LoopObserver for LoopView {
    fn on_event(&self, event: &LoopEvent<'_>) {
        self.0.progress(event);
    }

    fn on_plan_event(&self, event: &PlanEvent) {
        self.0.plan(event);
    }
}

/// The MCP hub's observer for the life of a session: MCP events of a turn go to that turn's
/// event stream (which passes them on to the subscriber), and to the subscriber alone between
/// turns.
pub(crate) struct McpRoute {
    between_turns: McpView,
    turn: RwLock<Option<Arc<EventStream>>>,
}

impl McpRoute {
    pub(crate) fn new(subscriber: Arc<dyn Subscriber>) -> McpRoute {
        McpRoute { between_turns: McpView(subscriber), turn: RwLock::new(None) }
    }

    /// Routes MCP events to `stream` until the next call (`None`: to the subscriber alone).
    pub(crate) fn route_to(&self, stream: Option<Arc<EventStream>>) {
        *self.turn.write().unwrap_or_else(PoisonError::into_inner) = stream;
    }

    /// Calls `deliver` on where MCP events go now: the turn's stream, or the subscriber between
    /// turns. The stream is cloned out of the lock first, so delivery never holds it.
    fn deliver(&self, deliver: impl FnOnce(&dyn McpObserver)) {
        let turn = self.turn.read().unwrap_or_else(PoisonError::into_inner).clone();
        match &turn {
            Some(stream) => deliver(stream.as_ref()),
            None => deliver(&self.between_turns),
        }
    }
}

impl McpObserver for McpRoute {
    fn event(&self, event: McpEvent) {
        self.deliver(|target| target.event(event));
    }

    fn warning(&self, server: &str, text: &str) {
        self.deliver(|target| target.warning(server, text));
    }

    fn server_line(&self, server: &str, line: &str) {
        self.deliver(|target| target.server_line(server, line));
    }

    fn activity(&self, server: &str) {
        self.deliver(|target| target.activity(server));
    }
}

/// The subscriber seen as the MCP observer an event stream passes MCP events on to.
pub(crate) struct McpView(pub(crate) Arc<dyn Subscriber>);

impl McpObserver for McpView {
    fn event(&self, event: McpEvent) {
        self.0.mcp_event(event);
    }

    fn warning(&self, server: &str, text: &str) {
        self.0.mcp_warning(server, text);
    }

    fn server_line(&self, server: &str, line: &str) {
        self.0.server_line(server, line);
    }
}

/// The event sink of a turn: each line to the subscriber, then to the `events_jsonl` target
/// when there is one (whose write errors are the sink's errors, as the spec reports them).
pub(crate) struct TeeSink {
    pub(crate) subscriber: Arc<dyn Subscriber>,
    pub(crate) file: Option<Box<dyn EventSink>>,
}

impl EventSink for TeeSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        self.subscriber.event(line.strip_suffix('\n').unwrap_or(line));
        match &mut self.file {
            Some(file) => file.write_line(line),
            None => Ok(()),
        }
    }
}

/// The console of a subscriber that has none: nobody to ask; warnings go to the subscriber.
pub(crate) struct Unattended(pub(crate) Arc<dyn Subscriber>);

impl Console for Unattended {
    fn is_interactive(&self) -> bool {
        false
    }

    fn prompt(&self, _text: &str) -> Option<String> {
        None
    }

    fn warn(&self, text: &str) {
        self.0.warning(text);
    }
}
