//! What the client reports while it runs: the [beyond] `mcp_server_*` events, warnings and the
//! forwarded server stderr. The binary decides where they go (event stream, terminal).

use std::io::Write;

use odek_contract::quoting::quote;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal, warning_line};

/// The [beyond] MCP lifecycle events of spec `events.md` §3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpEvent {
    ServerStarted {
        server: String,
        tools: usize,
        duration_ms: u64,
        protocol_version: String,
    },
    ServerFailed {
        server: String,
        error_class: &'static str,
    },
    ServerRestarted {
        server: String,
        restarts: u32,
        /// Exit code, `128 + signal` when killed by a signal, `-1` when unknown; `None` for HTTP.
        exit_status: Option<i32>,
    },
    /// \[beyond\] Someone answered a server's elicitation (a person, or the `accept_defaults`
    /// policy). Never what was answered.
    ElicitationAnswered {
        server: String,
        /// `form` or `url`.
        mode: &'static str,
        /// `accept`, `decline` or `cancel`.
        action: &'static str,
    },
    /// \[beyond\] odek answered a server's elicitation itself: the policy, no answer in time, or
    /// a request it refused.
    ElicitationDeclined {
        server: String,
        /// `form` or `url`.
        mode: &'static str,
        /// What the server was told (`decline`, `cancel`); `None` when it got an error.
        action: Option<&'static str>,
        /// `policy`, `no_answer`, `invalid_request`, `too_many` or `invalid_answer`.
        reason: &'static str,
    },
}

/// Receives events, warnings and stderr lines. Implementations must not block for long: they
/// are called from the client's tasks.
pub trait McpObserver: Send + Sync {
    /// A lifecycle event.
    fn event(&self, event: McpEvent);
    /// A warning about `server`, without the `odek: warning: ` prefix.
    fn warning(&self, server: &str, text: &str);
    /// One forwarded server stderr or log line, already cut, cleaned and redacted; printed as
    /// `[<server>] <line>`.
    fn server_line(&self, server: &str, line: &str);
    /// \[beyond\] `server` showed it is working on a request (a progress notification for it):
    /// liveness only, nothing to show. Must be cheap.
    fn activity(&self, _server: &str) {}
    /// \[beyond\] Whether a running call's `notifications/progress` is shown as a line of its
    /// server ([`progress_line`](crate::server_lines::progress_line), through the same bounded
    /// queue as its stderr and log messages). `odek ext call` shows them; a run does not (its
    /// status already shows the call running, and servers may report progress many times a
    /// second).
    fn shows_progress(&self) -> bool {
        false
    }
}

/// Prints warnings and server lines on stderr, `odek: connected MCP server …` on start and a
/// note on each restart.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrObserver;

impl McpObserver for StderrObserver {
    fn event(&self, event: McpEvent) {
        let mut stderr = std::io::stderr();
        let _ = match event {
            McpEvent::ServerStarted { server, tools, .. } => {
                writeln!(stderr, "odek: connected MCP server {} ({tools} tools)", quote(&server))
            }
            McpEvent::ServerRestarted { server, restarts, exit_status } => {
                let status = exit_status.map_or_else(String::new, |status| format!(" after exit status {status}"));
                writeln!(stderr, "odek: restarted MCP server {}{status} (restart {restarts} of 3)", quote(&server))
            }
            McpEvent::ElicitationDeclined { server, mode, action, reason } => {
                let answer = action.map_or_else(|| "refused".to_owned(), |action| format!("answered {action}"));
                writeln!(stderr, "odek: MCP server {} asked for input ({mode}); {answer} ({reason})", quote(&server))
            }
            McpEvent::ServerFailed { .. } | McpEvent::ElicitationAnswered { .. } => Ok(()),
        };
    }

    fn warning(&self, _server: &str, text: &str) {
        let _ = writeln!(std::io::stderr(), "{}", warning_line(text));
    }

    /// The line is sanitised once more (a no-op for a line the sink cleaned), so no observer
    /// that forwards here can put raw server text on the terminal.
    fn server_line(&self, server: &str, line: &str) {
        let _ = writeln!(std::io::stderr(), "[{server}] {}", sanitise_for_terminal(line, Layout::Line));
    }
}
