//! Sub-agents (spec `subagents.md`): separate `odek subagent` processes running one focused
//! task each. The child side: the task file and share-mode budget ([`task`]), what the child is
//! told ([`prompt`]), its result object and status ([`result`]; the exit code is the binary's) and its protocol-2 progress
//! stream ([`stream`]). The parent side: `delegate_tasks` ([`delegate`]), spawning and reading a
//! child ([`spawn`]), rendering the results (`render`). Both sides: the result artifacts
//! ([`artifacts`], §9–§10) and `artifact_read` ([`artifact_read`], §11). The `odek subagent`
//! command in odek-cli puts the child side together.

pub mod artifact_read;
pub mod artifacts;
pub mod confine;
pub mod delegate;
pub mod prompt;
mod render;
pub mod result;
pub mod spawn;
pub mod stream;
pub mod task;
