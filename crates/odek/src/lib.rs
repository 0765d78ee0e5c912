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
pub mod task_runs;

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
pub use runtime::{Catalogue, Overrides, Restrictions, Runtime, Session, Settings, Spent, TurnControl, TurnOutcome};
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

/// What the faces use of the loop's crate (`odek-agent`), so a face depends on the runtime
/// alone: the loop's events and observers, sessions and their store, the sub-agent protocol
/// (task files, the child, its stream and result), the built-in tools' seams, and the MCP
/// resource tools. New face code should prefer the runtime's own API ([`Runtime`],
/// [`Session`], [`host`]); these are the pieces that have none yet.
pub mod agent {
    pub use odek_agent::{
        LIST_MCP_RESOURCES, READ_MCP_RESOURCE, budget, call_resource_tool, events, mcp_outcome, observer, plan, run,
        session, subagent, tool, tools,
    };
}

/// What the faces use of the MCP client (`odek-mcp`): the hub and its observer and events, the
/// server specs, limits and errors, the helpers `odek ext` and `odek mcp` show or check, and
/// \[beyond\] elicitation (a server's request for input: the form rules a face asks with).
pub mod mcp {
    pub use odek_mcp::{
        ApproveAll, CallOptions, ElicitationSettings, Elicitor, HubOptions, Limits, McpError, McpEvent, McpHub,
        McpObserver, ServerSandbox, ServerSpec, StderrObserver, ToolDescriptor, ToolOutput, Transport, bounded_lines,
        elicitation, env_allowlist, hub, oauth, remote, revision, server_config, validate_server,
    };
}

/// What the faces use of the model providers (`odek-llm`): messages, usage, the streaming
/// observer, replay scripts.
pub mod llm {
    pub use odek_llm::{BoxFuture, Message, ReplayScript, Role, StreamObserver, Usage};
}

/// What the faces use of the danger classifier (`odek-danger`): the classes approval cards show.
pub mod danger {
    pub use odek_danger::DangerClass;
}
