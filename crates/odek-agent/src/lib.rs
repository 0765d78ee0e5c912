//! The odek agent loop: iterations, tool execution, wrappers, context trimming, the system
//! prompt, sessions and the built-in tools (spec `loop-and-sessions.md`).
//!
//! Start at [`tool::Tool`] (what a tool gives the loop) and the `run` module (the loop).

pub mod budget;
pub mod danger;
pub mod events;
pub mod mcp_tool;
pub mod observer;
pub mod prompt;
pub mod run;
pub mod session;
pub mod subagent;
pub mod tool;
pub mod tools;
