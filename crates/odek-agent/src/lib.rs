//! The odek agent loop: iterations, tool execution, wrappers, context trimming, the system
//! prompt, sessions, the built-in tools (spec `loop-and-sessions.md`), the `plan` tool
//! (`plan.md`), budgets (`budgets.md`), the event stream (`events.md`) and sub-agents
//! (`subagents.md`).
//!
//! The public surface is what the runtime crate `odek` and the faces put together:
//! [`run`] is the loop ([`run::Agent`] with its [`run::ToolSet`] and [`run::LoopSettings`],
//! returning a [`run::RunOutcome`] or a [`run::RunError`]); [`tool`] is the seam every tool
//! implements ([`tool::Tool`]); [`tools`] builds the built-in tools; [`mcp_outcome`] turns an MCP
//! call result into a tool outcome; \[beyond\] the resource tools ([`LIST_MCP_RESOURCES`],
//! [`READ_MCP_RESOURCE`]) join them while a server offers resources; [`observer`] is what the loop reports while it runs;
//! [`events`] turns those reports into `odek.event/v1` lines; [`budget`] holds the limits and the
//! share a sub-agent gets; [`liveness`] tracks a run's phase and progress for `run_heartbeat`
//! and types a stall; [`prompt`] composes the system prompt and the task's attachments;
//! [`session`] stores conversations; [`plan`] is the plan kept across a run; [`subagent`] is both
//! sides of a sub-agent (the task file, the child's result and stream, `delegate_tasks`,
//! artifacts and `artifact_read`); \[beyond\] [`finish`] holds the gates on the final answer
//! (`--output-schema`, `--check`) and `--output-file`. Everything else is internal to the crate.

pub mod budget;
pub mod events;
pub mod finish;
pub mod liveness;
mod mcp_resources;
mod mcp_tool;
mod no_follow;
pub mod observer;
pub mod plan;
pub mod prompt;
pub mod run;
pub mod session;
pub mod subagent;
pub mod tool;
pub mod tools;

pub use mcp_resources::{LIST_MCP_RESOURCES, READ_MCP_RESOURCE, call_resource_tool};
pub use mcp_tool::mcp_outcome;
