//! The built-in tools: shell, read_file, write_file, patch, search_files — one file each — and
//! what they share: argument decoding, path resolution against the run's working directory,
//! the danger gate for writes, atomic replacement of files, and cancellation.
//!
//! Start at [`builtin_tools`]. The approval card, result framing, compression and redaction
//! belong to the loop; tools return plain text and name the untrusted source of what they read.

mod patch;
mod place;
mod read_file;
mod root;
mod search_files;
pub(crate) mod shell;
mod write_file;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use odek_contract::regular_file::{Bounded, read_to_limit};
use serde::de::DeserializeOwned;

pub use patch::PatchTool;
use place::FilePlace;
pub use read_file::ReadFileTool;
pub use root::{OutsideRoot, RootDir, confine_to_root};
pub use search_files::SearchFilesTool;
pub use shell::{DEFAULT_TIMEOUT_SECONDS as DEFAULT_SHELL_TIMEOUT_SECONDS, ShellTool};
pub use write_file::WriteFileTool;

use crate::tool::{Tool, ToolContext, ToolError, ToolOutcome};
use odek_danger::{Classification, Decision, normalize_lexically};

/// Bytes looked at to decide whether a file is binary (a NUL byte ⇒ binary).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// The operator's settings of the built-in tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinSettings {
    /// The cap on the shell's `timeout_seconds` (`limits.shell_timeout_seconds`).
    pub shell_timeout_seconds: u64,
}

impl Default for BuiltinSettings {
    fn default() -> BuiltinSettings {
        BuiltinSettings { shell_timeout_seconds: DEFAULT_SHELL_TIMEOUT_SECONDS }
    }
}

/// All five built-in tools.
pub fn builtin_tools(settings: BuiltinSettings) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ShellTool::new(settings.shell_timeout_seconds)),
        Arc::new(ReadFileTool),
        Arc::new(WriteFileTool),
        Arc::new(PatchTool),
        Arc::new(SearchFilesTool),
    ]
}

/// Decodes a tool's JSON arguments; an empty string is `{}`.
pub(crate) fn parse_arguments<T: DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, ToolError> {
    let text = if arguments.trim().is_empty() { "{}" } else { arguments };
    serde_json::from_str(text).map_err(|err| ToolError::new(format!("invalid arguments for {tool}: {err}")))
}

/// A model-supplied path made absolute: `~/` is the home directory (the parent of `~/.odek`),
/// relative paths are under the run's working directory; `.` and `..` are removed lexically.
fn resolve_path(raw: &str, ctx: &ToolContext) -> PathBuf {
    let home = ctx.odek_home.parent().map(Path::to_path_buf);
    let path = match (raw.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if raw == "~" => ctx.odek_home.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(raw)),
        _ => PathBuf::from(raw),
    };
    let absolute = if path.is_absolute() { path } else { ctx.cwd.join(path) };
    normalize_lexically(&absolute)
}

/// [`resolve_path`] for a path a file tool reads or writes: when the context has a confinement
/// root, the path must stay inside it ([`confine_to_root`]) and comes back with its symlinks
/// resolved, so the place checked is the place used.
pub fn resolve_file_path(raw: &str, ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    resolve_file_place(raw, ctx).map(|place| place.path)
}

/// [`resolve_file_path`] with the root the file tools open the path from ([`FilePlace`]).
fn resolve_file_place(raw: &str, ctx: &ToolContext) -> Result<FilePlace, ToolError> {
    let path = resolve_path(raw, ctx);
    match &ctx.path_root {
        None => Ok(FilePlace { path, root: None }),
        Some(root) => match confine_to_root(&path, root.path()) {
            Ok(path) => Ok(FilePlace { path, root: Some(Arc::clone(root)) }),
            Err(refusal) => Err(ToolError::new(refusal.to_string())),
        },
    }
}

/// A NUL byte in the first [`BINARY_SNIFF_BYTES`].
fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(BINARY_SNIFF_BYTES).any(|byte| *byte == 0)
}

/// The policy's verdict on a classified operation: `None` to proceed, or the denial (its output
/// is the exact denial text). `Prompt` reaching a tool means the batch gate did not approve it.
fn policy_denial(classification: &Classification, resource: &str, ctx: &ToolContext) -> Option<ToolOutcome> {
    let reason = match ctx.policy.decide(classification.class, resource, ctx.interactive, ctx.approved) {
        Decision::Allow => return None,
        Decision::Deny { reason } => reason,
        Decision::Prompt => "not approved".to_owned(),
    };
    Some(ToolOutcome::denied(classification.class, format!("{}; {reason}", classification.reason)))
}

/// Runs `work` unless the run is cancelled first (cancellation wins a tie).
async fn until_cancelled<T>(
    ctx: &ToolContext,
    work: impl Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    tokio::select! {
        biased;
        () = ctx.cancel.cancelled() => Err(ToolError::new("cancelled")),
        result = work => result,
    }
}

/// Replaces the file at `place` with `content` atomically ([`FilePlace::replace`]) on a
/// blocking thread; whether something was there before.
async fn write_atomically(place: &FilePlace, content: Vec<u8>) -> Result<bool, ToolError> {
    let owned = place.clone();
    match tokio::task::spawn_blocking(move || owned.replace(&content)).await {
        Ok(result) => result,
        Err(err) => Err(ToolError::new(format!("cannot write {}: {err}", place.shown()))),
    }
}

/// Runs a file tool's blocking reads on one blocking thread: one hand-off per call rather than
/// one per `stat`, `read` and `seek`, each of which costs a cross-CPU wake-up.
async fn on_blocking_thread<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(err) => Err(ToolError::new(format!("cannot read {}: {err}", path.display()))),
    }
}

/// The whole of the regular file at `place` when it holds at most `limit` bytes: the
/// contract's capped read ([`read_to_limit`]) after the never-blocking [`FilePlace::open_file`].
async fn read_whole_capped(place: &FilePlace, limit: u64) -> Result<Bounded, ToolError> {
    let owned = place.clone();
    on_blocking_thread(&place.path, move || {
        let file = owned.open_file()?;
        read_to_limit(&file, limit).map_err(|err| ToolError::new(format!("cannot read {}: {err}", owned.shown())))
    })
    .await
}

/// Cuts `text` to at most `max_chars` characters.
fn cut_chars(text: &str, max_chars: usize) -> (&str, usize) {
    match text.char_indices().nth(max_chars) {
        Some((index, _)) => (&text[..index], text[index..].chars().count()),
        None => (text, 0),
    }
}
