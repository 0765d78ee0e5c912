//! Sub-agents (spec `subagents.md`): separate `odek subagent` processes running one focused
//! task each. This module owns the result artifacts a child hands back (`artifacts`, §9–10,
//! §12's artifact lines) and the parent's `artifact_read` tool (§11); the child command and
//! `delegate_tasks` live in sibling modules.

pub mod artifact_read;
pub mod artifacts;
