//! The shell-command classifier: given a command line, the class of every simple command (its
//! program, options and the paths it writes), of every redirection, substitution and nested
//! script (`bash -c`, `eval`, `xargs`, `find -exec`, `sudo …`), and the pipeline rules
//! (`curl … | sh`, fork bombs). The class of the line is the highest of its parts, with that
//! part's reason. Programs not listed are `unknown`.
//!
//! Entry points: [`classify_command`] and [`classify_command_in`]. The walk over the parsed line
//! is in `walker`; what one program is, in `programs`, which hands it to its family (`packages`,
//! `infra`, `files`, `text`, `system`, `network`, `git`, `builtins`, `wrappers`,
//! `interpreters`); shared argument rules in `args`; the denylist's view of a line in `forms`.

mod args;
mod builtins;
mod directory;
mod files;
mod forms;
mod git;
mod infra;
mod interpreters;
mod network;
mod packages;
mod programs;
mod system;
mod text;
mod verdict;
mod walker;
mod wrappers;

use std::path::Path;

use crate::class::{Classification, DangerClass};
use crate::file_write::Places;
use crate::shell_syntax;

use DangerClass::{Safe, Unknown};
use walker::Classifier;

/// Longest command line classified (longer ⇒ `unknown`), in bytes.
const MAX_COMMAND_BYTES: usize = 256 * 1024;

/// Classifies a shell command line without knowing where it runs: relative paths count as
/// inside the working directory, absolute ones outside it. Prefer [`classify_command_in`].
pub fn classify_command(command: &str) -> Classification {
    classify(command, &Places::unanchored())
}

/// Classifies a shell command line run in `cwd` (paths it writes are classified like
/// [`classify_write`](crate::classify_write)). The overall class is the highest of its parts.
pub fn classify_command_in(command: &str, cwd: &Path, odek_home: &Path) -> Classification {
    classify(command, &Places::anchored(cwd, odek_home))
}

/// Classifies a command line (see the module doc).
pub(crate) fn classify(command: &str, places: &Places) -> Classification {
    if command.len() > MAX_COMMAND_BYTES {
        return Classification::new(Unknown, "command is too long to classify");
    }
    if command.trim().is_empty() {
        return Classification::new(Safe, "nothing to run");
    }
    let verdict = Classifier::new(places).line(command);
    Classification::new(verdict.class, verdict.reason)
}

/// The simple commands of a line as token lists, for denylist matching: each command as
/// written (assignments dropped), with wrappers stripped, and with the program's base name.
pub(crate) fn command_forms(command: &str) -> Vec<Vec<String>> {
    let mut forms = Vec::new();
    if let Ok(script) = shell_syntax::parse(command) {
        forms::collect_forms(&script, &mut forms, 0);
    }
    forms
}
