//! The one error type of the runtime API, [`RuntimeError`]: every way loading, starting or
//! running a turn can fail, each with the text the spec gives it. A face turns it into what it
//! shows and, for the binary, into an exit code; [`RuntimeError::is_budget`] is the one failure
//! with a code of its own.

use odek_agent::events::{EventError, SinkError};
use odek_agent::finish::output_file::OutputFileError;
use odek_agent::finish::output_schema::OutputSchemaError;
use odek_agent::liveness::{Phase, Stall};
use odek_agent::prompt::PromptError;
use odek_agent::run::RunError;
use odek_agent::session::SessionError;
use odek_contract::outcome::Outcome;
use odek_llm::LlmError;
use odek_mcp::McpError;

use crate::approvals::ApprovalError;
use crate::config::ConfigError;

/// Why the runtime could not load, start or finish a turn.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A config file, the environment or a flag broke a rule of spec `config.md`.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An MCP server or tool was not approved, or the approvals file could not be used.
    #[error(transparent)]
    Approval(#[from] ApprovalError),
    /// An MCP server could not be validated or started.
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// The provider could not be built (before any model call; a model call's failure is
    /// [`RuntimeError::Run`]).
    #[error(transparent)]
    Provider(#[from] LlmError),
    /// A session could not be locked, loaded or saved.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The system prompt's files (`IDENTITY.md`, `AGENTS.md`, `--ctx`, `@path`) could not be read.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The event stream refused its settings.
    #[error(transparent)]
    Events(#[from] EventError),
    /// The `--events-jsonl` target could not be opened.
    #[error("events-jsonl: {0}")]
    EventsSink(#[from] SinkError),
    /// A setup rule of the runtime itself (provider choice, a missing key, a bad setting).
    #[error("{0}")]
    Setup(String),
    /// \[beyond\] `--strict` refused the turn before its first model call: an MCP server did not
    /// start, or a named tool is not available.
    #[error("{0}")]
    Strict(String),
    /// The loop failed; [`RunError::Budget`] is the typed execution-budget stop.
    #[error(transparent)]
    Run(#[from] RunError),
    /// \[beyond\] A required MCP server did not finish its start-up within its deadline: the
    /// stall's text, then the server's error (`run stalled: no progress in mcp_startup for <n>s
    /// (limit <n>s); mcp server "<name>": …`).
    #[error("{stall}; {source}")]
    StartupStalled {
        /// The `mcp_startup` stall.
        stall: Stall,
        /// The start-up error naming the server.
        source: Box<McpError>,
    },
    /// \[beyond\] `--output-schema` could not be read or does not compile (before the run).
    #[error(transparent)]
    OutputSchema(#[from] OutputSchemaError),
    /// \[beyond\] `--output-file` is refused, or the answer could not be written to it.
    #[error(transparent)]
    OutputFile(#[from] OutputFileError),
}

impl RuntimeError {
    /// True for the execution-budget stop (spec README §4: the binary exits 4 on this and only
    /// this).
    pub fn is_budget(&self) -> bool {
        matches!(self, RuntimeError::Run(RunError::Budget(_)))
    }

    /// How a turn that failed with this error ended: the loop's outcome, `error` for a failure
    /// before or around the loop (config, start-up, sessions, events).
    pub fn outcome(&self) -> Outcome {
        match self {
            RuntimeError::Run(error) => error.outcome(),
            RuntimeError::Strict(_) => Outcome::Denied,
            RuntimeError::StartupStalled { .. } => Outcome::Stalled,
            _ => Outcome::Error,
        }
    }

    /// `run_failed.error_class` (spec `events.md` §8): the loop's class, `error` for the rest.
    pub fn error_class(&self) -> &'static str {
        match self {
            RuntimeError::Run(error) => error.class(),
            RuntimeError::Strict(_) => "denied",
            RuntimeError::StartupStalled { .. } => "stalled",
            _ => "error",
        }
    }

    /// The phase that stalled, when the turn ended in a stall (`run_failed.phase`).
    pub fn stalled_phase(&self) -> Option<Phase> {
        match self {
            RuntimeError::Run(RunError::Stalled(stall)) | RuntimeError::StartupStalled { stall, .. } => {
                Some(stall.phase)
            }
            _ => None,
        }
    }

    /// An MCP start-up failure: a server whose start-up deadline fired is a stall of the
    /// `mcp_startup` phase; anything else keeps the spec's start-up error.
    pub fn from_mcp_startup(source: McpError) -> RuntimeError {
        match source.startup_stall() {
            Some(limit) => {
                let stall = Stall { phase: Phase::McpStartup, idle: limit, limit };
                RuntimeError::StartupStalled { stall, source: Box::new(source) }
            }
            None => RuntimeError::Mcp(source),
        }
    }
}
