//! The odek runtime: what turns config files, the environment and a caller's settings into a
//! running agent, used by every face of odek (`odek run`, `continue`, `subagent`, `repl`, the
//! `ext` commands) and by programs that embed odek.
//!
//! - [`Runtime`] loads the layered config exactly as `odek run` does (global file, project file
//!   with its restrictions, `secrets.env`, `ODEK_*`, then the caller's typed [`Overrides`]) and
//!   hands out [`Session`]s; a session starts the MCP servers with their approvals and the
//!   provider on its first turn, and [`Session::turn`] runs one task to a [`TurnOutcome`] or a
//!   [`RuntimeError`] under that turn's budgets, cancellable by a token.
//! - A face observes and answers through its [`Subscriber`]: every `odek.event/v1` event,
//!   streamed text, tool-call progress, MCP server lines, and the approval requests.
//! - [`config`] and [`approvals`] are the rules underneath (spec `config.md`); [`setup`] is the
//!   shared start of every face that starts MCP servers; [`parts`] the pieces a face that
//!   assembles its own loop (`odek subagent`) builds from.

#![warn(missing_docs)]
mod agent_parts;
pub mod approvals;
pub mod child;
pub mod config;
mod denials;
mod error;
mod finish;
pub mod host;
mod run_sandbox;
mod runtime;
pub mod setup;
mod subscriber;

pub use denials::{DENIALS_LISTED, Denials, DeniedOperation};
pub use error::RuntimeError;
pub use finish::FinishOverrides;
/// What an embedder needs from the crates underneath, so `odek` is the one dependency.
pub use odek_agent::budget::BudgetLimits;
pub use odek_agent::finish::checks::{CheckReport, CheckStatus};
pub use odek_agent::finish::output_file::OutputWritten;
pub use odek_agent::observer::{CallResult, LoopEvent};
pub use odek_agent::plan::{PlanBoard, PlanEvent};
pub use odek_agent::tool::{EditorFiles, FileEdit, Risk, Tool, ToolContext, ToolError, ToolOutcome};
pub use odek_llm::{BoxFuture, Message, ToolDefinition, Usage};
pub use odek_mcp::{McpEvent, ServerInfo};
pub use runtime::{Catalogue, Overrides, Runtime, Session, Settings, Spent, TurnControl, TurnOutcome};
pub use subscriber::Subscriber;
pub use tokio_util::sync::CancellationToken;

/// The pieces every face builds its agent from: the provider, budget limits, built-in tool and
/// `delegate_tasks` settings.
pub mod parts {
    pub use crate::agent_parts::{
        DEPTH_VARIABLE, OPENAI_PROVIDER, REPLAY_PROVIDER, budget_limits, build_provider, builtin_settings,
        delegate_settings, delegation_depth, this_program,
    };
}
