//! The odek agent loop: iterations, tool execution, wrappers, context trimming, the system
//! prompt, sessions, the built-in tools (spec `loop-and-sessions.md`) and the `plan` tool
//! (`plan.md`).
//!
//! Start at [`tool::Tool`] (what a tool gives the loop) and the `run` module (the loop).

pub mod budget;
pub mod events;
pub mod mcp_tool;
pub mod observer;
pub mod plan;
pub mod prompt;
pub mod run;
pub mod session;
pub mod subagent;
pub mod tool;
pub mod tools;
