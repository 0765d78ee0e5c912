//! Result artifacts of sub-agents (spec `subagents.md` §9–10 and §12's artifact lines): files a
//! child delivers next to its short headline, and everything between the child writing them and
//! the parent's model reading them.
//!
//! Child side, in the order a child runs them: [`prepare_staging`] (the workspace staging
//! folder), [`relocate_staged`] (into the task's `artifact_root` at exit) and
//! [`scan_artifact_root`] (the result's `artifacts` entries and their flags).
//!
//! Parent side: [`create_artifact_root`] before spawning, then per call
//! [`register_call_artifacts`], which composes [`validate_task_artifacts`] (the
//! contract's ref rules with the task's root as the only root), the session's
//! [`ArtifactRegistry`] (first-wins ids, aliases), [`inline_previews`] and the §12 lines in
//! `render` and `notes`. Every later read of content goes through `read_verified`
//! (results-and-artifacts §8), never through the earlier validation alone.
//!
//! Deliberately not here: ref validation itself (`odek_contract::artifact_ref`, reused), the
//! child command and `delegate_tasks`.

mod call;
mod inline;
mod notes;
mod registry;
mod render;
mod scan;
mod staging;
mod validate;
mod verify;

use std::io;
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use call::{TaskArtifactInput, TaskArtifactSection, register_call_artifacts};
pub use inline::{InlinePreview, inline_previews};
pub use registry::{ArtifactRegistry, RegisteredArtifact, RegistrationCall, TaskRegistration};
pub(crate) use render::fence_child_text;
pub use render::render_artifact_block;
pub(crate) use scan::FinishedArtifact;
pub use scan::{ScanLimits, ScanReport, append_artifact_flags, scan_artifact_root, scan_artifact_root_with};
pub use staging::{STAGING_GITIGNORE, prepare_staging, relocate_staged};
pub use validate::{TaskArtifacts, validate_task_artifacts};
pub(crate) use verify::read_verified;
pub use verify::{ReadRefusal, VerificationFailure, read_ref_verified};

/// Most refs one task delivers (the scan's and the parent's cap).
const MAX_REFS_PER_TASK: usize = odek_contract::envelope::MAX_ARTIFACT_REFS;

/// Bytes one task may deliver in total (64 MiB).
const TASK_BUDGET_BYTES: u64 = 67_108_864;

/// Bytes one artifact may have (64 MiB), the contract's absolute cap.
const MAX_ARTIFACT_BYTES: u64 = odek_contract::artifact_ref::MAX_ARTIFACT_BYTES;

/// The artifacts bucket of runs whose session ID is not a safe directory name.
const UNFILED_BUCKET: &str = "unfiled";

/// Random bytes behind a task ID's hex part (8 bytes = 16 hex characters).
const TASK_ID_RANDOM_BYTES: usize = 8;

/// What can fail while setting up artifact directories (the flags of a running task are text,
/// not errors: see [`relocate_staged`] and [`scan_artifact_root`]).
#[derive(Debug, Error)]
pub enum ArtifactError {
    #[error("invalid task id {quoted}: must match ^[A-Za-z0-9][A-Za-z0-9._-]{{0,127}}$")]
    InvalidTaskId { quoted: String },
    #[error("task id: operating-system randomness unavailable: {0}")]
    Randomness(String),
    #[error("artifact root {path} is not absolute")]
    RootNotAbsolute { path: String },
    #[error("{action} {path}: {source}")]
    Io { action: &'static str, path: String, source: io::Error },
}

impl ArtifactError {
    fn io(action: &'static str, path: &Path, source: io::Error) -> ArtifactError {
        ArtifactError::Io { action, path: path.display().to_string(), source }
    }
}

/// A task ID that is safe as one path component (`task-` + 16 lowercase hex when minted).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskId(String);

impl TaskId {
    /// `task-` + 16 lowercase hex characters from the OS CSPRNG (§2 step 2).
    pub fn mint() -> Result<TaskId, ArtifactError> {
        let mut random = [0_u8; TASK_ID_RANDOM_BYTES];
        getrandom::fill(&mut random).map_err(|err| ArtifactError::Randomness(err.to_string()))?;
        Ok(TaskId(format!("task-{}", hex::encode(random))))
    }

    /// A task ID from a task file; anything that is not one safe path component is refused.
    pub fn parse(id: &str) -> Result<TaskId, ArtifactError> {
        if is_safe_component(id) {
            Ok(TaskId(id.to_owned()))
        } else {
            Err(ArtifactError::InvalidTaskId { quoted: odek_contract::quoting::quote(id) })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`: the shape of an artifacts bucket and a task ID. It can
/// never be `.`, `..` or contain a separator.
fn is_safe_component(name: &str) -> bool {
    let bytes = name.as_bytes();
    matches!(bytes.first(), Some(first) if first.is_ascii_alphanumeric())
        && bytes.len() <= 128
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// §2 step 2: the session ID when it is a safe directory name, else `unfiled`.
fn artifact_bucket(session_id: Option<&str>) -> &str {
    match session_id {
        Some(id) if is_safe_component(id) => id,
        _ => UNFILED_BUCKET,
    }
}

/// §2 step 2: creates `<artifacts_dir>/<bucket>/<task_id>/` (missing parents too, mode 0700) and
/// returns it — the task's `artifact_root`. `artifacts_dir` is normally `~/.odek/artifacts`.
pub fn create_artifact_root(
    artifacts_dir: &Path,
    session_id: Option<&str>,
    task_id: &TaskId,
) -> Result<PathBuf, ArtifactError> {
    use std::os::unix::fs::DirBuilderExt;
    if !artifacts_dir.is_absolute() {
        return Err(ArtifactError::RootNotAbsolute { path: artifacts_dir.display().to_string() });
    }
    let root = artifacts_dir.join(artifact_bucket(session_id)).join(task_id.as_str());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&root)
        .map_err(|err| ArtifactError::io("create artifact root", &root, err))?;
    Ok(root)
}

/// §10 last rule: deleting a session removes `<artifacts_dir>/<session_id>/`. Nothing is
/// followed: a symlink planted there is removed itself, and the tree is removed through
/// directory handles that never follow a link. The shared `unfiled` bucket and IDs that are not
/// a bucket name (their artifacts went to `unfiled`) are left alone. A missing directory is
/// not an error.
pub(crate) fn remove_session_artifacts(artifacts_dir: &Path, session_id: &str) -> io::Result<()> {
    if !is_safe_component(session_id) || session_id == UNFILED_BUCKET {
        return Ok(());
    }
    let parent = match crate::no_follow::open_dir(artifacts_dir) {
        Ok(parent) => parent,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    match crate::no_follow::remove_entry_at(&parent, session_id) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn buckets() {
        assert_eq!(artifact_bucket(Some("20260101-abc")), "20260101-abc");
        assert_eq!(artifact_bucket(Some("a.b_c-d")), "a.b_c-d");
        assert_eq!(artifact_bucket(Some(".hidden")), "unfiled");
        assert_eq!(artifact_bucket(Some("has space")), "unfiled");
        assert_eq!(artifact_bucket(Some(&"a".repeat(129))), "unfiled");
        assert_eq!(artifact_bucket(Some(&"a".repeat(128))), "a".repeat(128));
        assert_eq!(artifact_bucket(Some("")), "unfiled");
        assert_eq!(artifact_bucket(None), "unfiled");
    }

    #[test]
    fn task_ids() {
        let minted = TaskId::mint().unwrap();
        assert_eq!(minted.as_str().len(), 21);
        assert!(minted.as_str().starts_with("task-"));
        assert!(minted.as_str()[5..].bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
        assert!(TaskId::parse("task-0123456789abcdef").is_ok());
        assert_eq!(
            TaskId::parse("../x").unwrap_err().to_string(),
            "invalid task id \"../x\": must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
        );
        assert!(TaskId::parse("..").is_err());
        assert!(TaskId::parse("a/b").is_err());
    }
}
