//! Sub-agents (spec `subagents.md`): the task file and share-mode budget ([`task`]), what the
//! child is told ([`prompt`]), its result object and exit code ([`result`]) and its protocol-2
//! progress stream ([`stream`]). The `odek subagent` command in odek-cli puts them together.

pub mod delegate;
pub mod prompt;
pub mod render;
pub mod result;
pub mod spawn;
pub mod stream;
pub mod task;
