//! The terminal as a runtime subscriber ([`TerminalFace`]): what `odek run`, `odek continue`
//! and `odek repl` show on stderr while a turn runs — warnings, MCP server lines, the status
//! line and call records of each turn — and where they ask for approvals (the process's own
//! terminal, when stdin is one).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use odek::Subscriber;
use odek::agent::observer::{LoopEvent, LoopObserver};
use odek::agent::plan::PlanEvent;
use odek::agent::run::BatchApprover;
use odek::approvals::Console;
use odek::llm::StreamObserver;
use odek::mcp::{Elicitor, McpEvent, McpObserver, StderrObserver};

use super::batch_gate::TerminalBatchGate;
use super::console::StdConsole;
use super::elicitation_form::{SharedDisplay, TerminalElicitor};
use super::print_warning;
use super::status::{StatusDisplay, StatusMode};

/// The terminal face: one status display per turn, created when the loop starts.
pub struct TerminalFace {
    /// `--quiet`: warnings only (no MCP lifecycle lines, no server stderr, no status).
    quiet: bool,
    /// Whether the live status line may use colour; set once the settings are known.
    colour: OnceLock<bool>,
    display: SharedDisplay,
}

impl TerminalFace {
    pub fn new(quiet: bool) -> TerminalFace {
        TerminalFace { quiet, colour: OnceLock::new(), display: Arc::new(Mutex::new(None)) }
    }

    /// Colour for the live status line (`NO_COLOR`, `ODEK_NO_COLOR`); without a call, none.
    pub fn set_colour(&self, colour: bool) {
        let _ = self.colour.set(colour);
    }

    /// Runs `f` with the running turn's status line hidden (for output on stdout while it runs).
    pub fn suspended<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.display() {
            Some(display) => display.suspend(f),
            None => f(),
        }
    }

    /// Takes the running turn's live status line off the screen while answer text streams onto
    /// it ([`StatusDisplay::pause`]); [`TerminalFace::resume_status`] brings it back.
    pub fn pause_status(&self) {
        if let Some(display) = self.display() {
            display.pause();
        }
    }

    pub fn resume_status(&self) {
        if let Some(display) = self.display() {
            display.resume();
        }
    }

    /// \[beyond\] Asks MCP servers' elicitations on this terminal (the REPL's; `odek run` leaves
    /// them to the config's policy); `None` when stdin is not a terminal.
    pub fn form_elicitor(&self) -> Option<Arc<dyn Elicitor>> {
        let elicitor = TerminalElicitor::new(Arc::clone(&self.display))?;
        Some(Arc::new(elicitor))
    }

    fn mode(&self) -> StatusMode {
        if self.quiet {
            StatusMode::Quiet
        } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            StatusMode::Live { colour: self.colour.get().copied().unwrap_or(false) }
        } else {
            StatusMode::Plain
        }
    }

    fn display(&self) -> Option<Arc<StatusDisplay>> {
        self.display.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Subscriber for TerminalFace {
    fn warning(&self, text: &str) {
        print_warning(text);
    }

    fn notice(&self, text: &str) {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr().lock(),
            "{}",
            odek_contract::terminal_text::sanitise_for_terminal(text, odek_contract::terminal_text::Layout::Lines)
        );
    }

    fn delta(&self, text: &str, reasoning: bool) {
        if let Some(display) = self.display() {
            display.on_delta(text, reasoning);
        }
    }

    fn progress(&self, event: &LoopEvent<'_>) {
        if let Some(display) = self.display() {
            display.on_event(event);
        }
    }

    fn plan(&self, event: &PlanEvent) {
        if let Some(display) = self.display() {
            display.on_plan_event(event);
        }
    }

    fn mcp_event(&self, event: McpEvent) {
        if !self.quiet {
            StderrObserver.event(event);
        }
    }

    fn mcp_warning(&self, server: &str, text: &str) {
        StderrObserver.warning(server, text);
    }

    fn server_line(&self, server: &str, line: &str) {
        if !self.quiet {
            StderrObserver.server_line(server, line);
        }
    }

    fn console(&self) -> Option<Arc<dyn Console>> {
        Some(Arc::new(StdConsole))
    }

    fn loop_started(&self) {
        *self.display.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(StatusDisplay::new(self.mode())));
    }

    fn batch_approver(&self) -> Option<Arc<dyn BatchApprover>> {
        let gate = TerminalBatchGate::new(self.display()?)?;
        Some(Arc::new(gate))
    }

    fn loop_finished(&self) {
        if let Some(display) = self.display.lock().unwrap_or_else(PoisonError::into_inner).take() {
            display.finish();
        }
    }
}
