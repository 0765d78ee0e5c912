//! odek's danger classifier (spec `loop-and-sessions.md` §11, `config.md` §8): the danger
//! classes, the shell-command and file-write classifiers, and the policy that turns a class into
//! allow / prompt / deny. It knows nothing of the agent loop, tools or configuration files; the
//! loop and the binary depend on it.
//!
//! Start at [`classify_command`] / [`classify_write`] (what a call risks) and
//! [`DangerPolicy::decide`] (what the configuration says about it). The classes are in `class`,
//! the shell grammar in [`shell_syntax`] (public, for the fuzz target), the per-program rules
//! in `command_class`, the path rules in `file_write`, the policy in `policy`. The batch
//! approval card and the `args_summary` event field belong to the loop; this crate only
//! supplies [`argv0`] and the classes. Everything here fails closed: what cannot be understood
//! is `unknown`.

mod args_summary;
mod class;
mod command_class;
mod file_write;
mod policy;
pub mod shell_syntax;

pub use args_summary::argv0;
pub use class::{Action, Classification, DangerClass, NonInteractive};
pub use command_class::{classify_command, classify_command_in};
pub use file_write::{classify_write, normalize_lexically};
pub use policy::{DangerPolicy, Decision, PolicySettings, denial_output, denylist_matches};
