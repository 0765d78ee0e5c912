//! The run's progress on stderr. On a terminal: a live status line (iteration, running tool,
//! elapsed time, tokens) with a readable record of each tool call printed above it. Elsewhere
//! (CI logs): one plain line per tool call. `--quiet`: warnings only.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use odek::agent::observer::{CallResult, LoopEvent, LoopObserver};
use odek::llm::{StreamObserver, Usage};
use odek_contract::terminal_text::warning_line;

use super::one_line;

/// How the run reports progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMode {
    /// Live status line and coloured records (stderr is a terminal).
    Live { colour: bool },
    /// One plain line per tool call.
    Plain,
    /// Warnings only.
    Quiet,
}

/// Longest argument or error text shown in a record (characters).
const RECORD_TEXT_CHARS: usize = 120;
/// Characters of a tool name shown (exposed names are at most 64; a model may send anything).
const TOOL_NAME_CHARS: usize = 80;

/// Artifact metadata lines shown under a tool call at most.
const MAX_SHOWN_ARTIFACTS: usize = 5;

/// The validated artifact metadata lines of a result (the contract renders each as a line
/// starting `- artifact `; sanitising guarantees no other line does).
fn artifact_lines(output: &str) -> impl Iterator<Item = &str> {
    output.lines().filter(|line| line.starts_with("- artifact ")).take(MAX_SHOWN_ARTIFACTS)
}

struct State {
    iteration: u32,
    running: Vec<String>,
    totals: Usage,
    streamed_chars: usize,
}

/// The [`LoopObserver`] of the terminal.
pub struct StatusDisplay {
    mode: StatusMode,
    bar: Option<ProgressBar>,
    started: Instant,
    state: Mutex<State>,
}

impl StatusDisplay {
    pub fn new(mode: StatusMode) -> StatusDisplay {
        let bar = match mode {
            StatusMode::Live { .. } => {
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                let style = ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
                bar.set_style(style);
                bar.enable_steady_tick(Duration::from_millis(120));
                Some(bar)
            }
            StatusMode::Plain | StatusMode::Quiet => None,
        };
        StatusDisplay {
            mode,
            bar,
            started: Instant::now(),
            state: Mutex::new(State { iteration: 0, running: Vec::new(), totals: Usage::default(), streamed_chars: 0 }),
        }
    }

    /// Removes the status line (before the answer is printed or an error reported).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Takes the live status line off the screen until [`StatusDisplay::resume`]: answer text
    /// streamed onto the same terminal must not share its line (each redraw would erase it).
    pub fn pause(&self) {
        if let Some(bar) = &self.bar
            && !bar.is_finished()
        {
            bar.finish_and_clear();
        }
    }

    /// Shows the live status line again after [`StatusDisplay::pause`].
    pub fn resume(&self) {
        if let Some(bar) = &self.bar
            && bar.is_finished()
        {
            bar.reset();
            bar.enable_steady_tick(Duration::from_millis(120));
            self.refresh(&self.lock());
        }
    }

    /// Runs `f` with the status line hidden (for prompts).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    fn colour(&self) -> bool {
        matches!(self.mode, StatusMode::Live { colour: true })
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour() { format!("\u{1b}[{code}m{text}\u{1b}[0m") } else { text.to_owned() }
    }

    fn print(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn refresh(&self, state: &State) {
        let Some(bar) = &self.bar else { return };
        let activity = if state.running.is_empty() {
            if state.streamed_chars > 0 {
                format!("receiving ({} chars)", state.streamed_chars)
            } else {
                "thinking".to_owned()
            }
        } else {
            format!("running {}", state.running.join(", "))
        };
        bar.set_message(format!(
            "iteration {} · {} · {} · {} in / {} out tokens",
            state.iteration,
            activity,
            odek::agent::run::format_duration(self.started.elapsed()),
            state.totals.input_tokens,
            state.totals.output_tokens
        ));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl StreamObserver for StatusDisplay {
    fn on_delta(&self, text: &str, _reasoning: bool) {
        if self.bar.is_some() {
            let mut state = self.lock();
            state.streamed_chars += text.chars().count();
            self.refresh(&state);
        }
    }
}

impl LoopObserver for StatusDisplay {
    fn on_event(&self, event: &LoopEvent<'_>) {
        if let LoopEvent::Warning { text } = event {
            self.print(&warning_line(text));
            return;
        }
        if let LoopEvent::ProviderFallback { fallback, .. } = event {
            self.print(&warning_line(&fallback.to_string()));
            return;
        }
        if self.mode == StatusMode::Quiet {
            return;
        }
        let mut state = self.lock();
        match *event {
            LoopEvent::IterationStarted { iteration } => {
                state.iteration = iteration;
                state.streamed_chars = 0;
            }
            LoopEvent::ModelResponded { totals, .. } => state.totals = totals,
            LoopEvent::ToolCallStarted { tool, arguments, risk, .. } => {
                let tool = &shown_tool(tool);
                state.running.push(tool.to_owned());
                let shown = risk.map_or(arguments, |risk| risk.resource.as_str());
                let class = risk.map(|risk| format!(" [{}]", risk.class.as_str())).unwrap_or_default();
                let line = match self.mode {
                    StatusMode::Live { .. } => {
                        format!(
                            "{} {}{} {}",
                            self.paint("36", "▸"),
                            self.paint("1", tool),
                            class,
                            one_line(shown, RECORD_TEXT_CHARS)
                        )
                    }
                    _ => format!("odek: [it {}] {tool}{class} {}", state.iteration, one_line(shown, RECORD_TEXT_CHARS)),
                };
                self.print(&line);
            }
            LoopEvent::ToolCallFinished { tool, duration, result, .. } => {
                let tool = &shown_tool(tool);
                if let Some(index) = state.running.iter().position(|name| name == tool) {
                    state.running.remove(index);
                }
                let seconds = format!("{:.1}s", duration.as_secs_f64());
                let line = match (result, self.mode) {
                    (CallResult::Completed { output, .. }, StatusMode::Live { .. }) => {
                        format!("  {} {tool} {seconds} · {} bytes", self.paint("32", "✓"), output.len())
                    }
                    (CallResult::Failed { output }, StatusMode::Live { .. }) => format!(
                        "  {} {tool} {seconds} · {}",
                        self.paint("31", "✗"),
                        one_line(output, RECORD_TEXT_CHARS)
                    ),
                    (CallResult::Completed { output, .. }, _) => {
                        format!("odek: [it {}] {tool} ok ({seconds}, {} bytes)", state.iteration, output.len())
                    }
                    (CallResult::Failed { output }, _) => {
                        format!(
                            "odek: [it {}] {tool} failed ({seconds}): {}",
                            state.iteration,
                            one_line(output, RECORD_TEXT_CHARS)
                        )
                    }
                };
                self.print(&line);
                if let CallResult::Completed { output, .. } = result {
                    for artifact in artifact_lines(output) {
                        self.print(&format!("    {}", one_line(artifact, RECORD_TEXT_CHARS)));
                    }
                }
            }
            LoopEvent::ContextTrimmed { mode, dropped_groups, truncated_results, .. } => {
                self.print(&format!(
                    "odek: context trimmed ({}): {dropped_groups} group(s) dropped, {truncated_results} output(s) truncated",
                    mode.as_str()
                ));
            }
            LoopEvent::IterationCompleted { totals, .. } => state.totals = totals,
            LoopEvent::CheckCompleted { check, .. } => {
                let exit = check.exit_code.map(|code| format!("exit {code}, ")).unwrap_or_default();
                self.print(&format!(
                    "odek: [it {}] {} {} ({exit}{:.1}s)",
                    state.iteration,
                    check.check_id,
                    check.status.as_str(),
                    check.duration.as_secs_f64()
                ));
            }
            // A denial shows as its call's result line.
            LoopEvent::SessionSaved { .. }
            | LoopEvent::Warning { .. }
            | LoopEvent::ProviderFallback { .. }
            | LoopEvent::BudgetExceeded { .. }
            | LoopEvent::OperationDenied { .. }
            | LoopEvent::CheckStarted { .. } => {}
        }
        self.refresh(&state);
    }
}

/// A tool name as the model sent it, fit for the terminal: redacted (a model can name a tool
/// like a secret), control characters neutralised, one line, bounded.
fn shown_tool(tool: &str) -> String {
    one_line(tool, TOOL_NAME_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before: the status line's tool names kept a U+202E and the text of escape sequences.
    #[test]
    fn the_live_status_line_shows_a_tool_name_terminal_safe_red() {
        let display = StatusDisplay::new(StatusMode::Live { colour: false });
        let tool = "ev\u{202E}il\u{1b}[31m\u{1b}]0;title\u{7}";
        display.on_event(&LoopEvent::ToolCallStarted {
            iteration: 1,
            call_id: "c1",
            tool,
            arguments: "{}",
            risk: None,
        });
        let message = display.bar.as_ref().map(ProgressBar::message).unwrap_or_default();
        display.finish();
        assert!(message.contains("running ev\u{FFFD}il · "), "{message:?}");
        assert!(!message.contains(['\u{202E}', '\u{1b}', '\u{7}']), "{message:?}");
    }
}
