//! The built-in tools: shell, read_file, write_file, patch, search_files — one file each — and
//! what they share: argument decoding, path resolution against the run's working directory,
//! the danger gate for writes, atomic replacement of files, and cancellation.
//!
//! Start at [`builtin_tools`]. The approval card, result framing, compression and redaction
//! belong to the loop; tools return plain text and name the untrusted source of what they read.

mod patch;
mod read_file;
mod root;
mod search_files;
pub(crate) mod shell;
mod write_file;

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use odek_contract::regular_file::{
    Bounded, Follow, is_not_a_regular_file, open_regular_read, read_to_limit, refuse_non_regular_target,
};
use serde::de::DeserializeOwned;

pub use patch::PatchTool;
pub use read_file::ReadFileTool;
pub use root::{OutsideRoot, confine_to_root};
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
    let path = resolve_path(raw, ctx);
    match &ctx.path_root {
        None => Ok(path),
        Some(root) => confine_to_root(&path, root).map_err(|refusal| ToolError::new(refusal.to_string())),
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

/// Replaces `target` with `content` atomically (a temporary file in the same directory, then
/// a rename), keeping the permissions of the file it replaces. Symlinks are followed: the
/// file they point at is replaced and the link stays. A FIFO or device is never replaced.
async fn write_atomically(target: &Path, content: Vec<u8>) -> Result<(), ToolError> {
    let target = match tokio::fs::canonicalize(target).await {
        Ok(real) => real,
        Err(_) => target.to_path_buf(),
    };
    let shown = target.display().to_string();
    let Some(directory) = target.parent().map(Path::to_path_buf) else {
        return Err(ToolError::new(format!("cannot write {shown}: no parent directory")));
    };
    tokio::fs::create_dir_all(&directory)
        .await
        .map_err(|err| ToolError::new(format!("cannot create directory {}: {err}", directory.display())))?;
    if let Err(err) = refuse_non_regular_target(&target) {
        return Err(if is_not_a_regular_file(&err) {
            not_a_regular_file(&target)
        } else {
            ToolError::new(format!("cannot write {shown}: {err}"))
        });
    }
    let permissions = tokio::fs::metadata(&target).await.ok().map(|metadata| metadata.permissions());
    let write = move || -> std::io::Result<()> {
        let mut temporary = tempfile::Builder::new().prefix(".odek-write-").tempfile_in(&directory)?;
        temporary.write_all(&content)?;
        temporary.as_file().sync_all()?;
        let permissions = permissions.unwrap_or_else(|| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o644)
        });
        temporary.as_file().set_permissions(permissions)?;
        temporary.persist(&target).map_err(|err| err.error)?;
        Ok(())
    };
    match tokio::task::spawn_blocking(write).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(ToolError::new(format!("cannot write {shown}: {err}"))),
        Err(err) => Err(ToolError::new(format!("cannot write {shown}: {err}"))),
    }
}

/// `no such file: <path>` / `<path> is a directory` / `<path> is not a regular file` / the I/O
/// error, for a path that must be an existing regular file. Blocking: call it from
/// [`on_blocking_thread`].
fn require_file(path: &Path) -> Result<std::fs::Metadata, ToolError> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            Err(ToolError::new(format!("{shown} is a directory; use search_files with mode \"files\" to list it")))
        }
        Ok(metadata) if !metadata.is_file() => Err(not_a_regular_file(path)),
        Ok(metadata) => Ok(metadata),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(ToolError::new(format!("no such file: {shown}"))),
        Err(err) => Err(ToolError::new(format!("cannot read {shown}: {err}"))),
    }
}

/// A FIFO, device or socket where a file tool needs a file: reading it could block forever or
/// never end, and replacing it would swap a special file out of its place.
fn not_a_regular_file(path: &Path) -> ToolError {
    ToolError::new(format!(
        "{} is not a regular file (a FIFO, device or socket); file tools only use regular files",
        path.display()
    ))
}

/// `path` opened for reading as a regular file (symlinks followed), never blocking: a FIFO
/// swapped in after [`require_file`] is refused, not waited on.
fn open_file(path: &Path) -> Result<std::fs::File, ToolError> {
    match open_regular_read(path, Follow::Symlinks) {
        Ok(file) => Ok(file),
        Err(err) if is_not_a_regular_file(&err) => Err(not_a_regular_file(path)),
        Err(err) => Err(ToolError::new(format!("cannot read {}: {err}", path.display()))),
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

/// The whole of the regular file at `path` (checked by [`require_file`]) when it holds at most
/// `limit` bytes: the contract's capped read ([`read_to_limit`]) after the never-blocking
/// [`open_file`].
async fn read_whole_capped(path: &Path, limit: u64) -> Result<Bounded, ToolError> {
    let owned = path.to_owned();
    on_blocking_thread(path, move || {
        require_file(&owned)?;
        let file = open_file(&owned)?;
        read_to_limit(&file, limit).map_err(|err| ToolError::new(format!("cannot read {}: {err}", owned.display())))
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
