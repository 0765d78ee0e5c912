//! The child's staging folder (spec `subagents.md` §9, first two rules): children cannot write
//! under `~/.odek`, so they stage deliverables in `<cwd>/.odek-artifacts/<task_id>/`, and at exit
//! the runner moves them into the task's `artifact_root`. Start at [`prepare_staging`] and
//! [`relocate_staged`].
//!
//! The workspace is the child's to write, so every step works through directory handles and
//! never follows a symlink: a staged link is moved as a link (the scan then skips it), a
//! staging folder replaced by a link is a lookup failure, and nothing outside the staging
//! folder is ever moved or removed.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use odek_contract::quoting::quote;

use super::{ArtifactError, MAX_ARTIFACT_BYTES, TaskId};
use crate::no_follow::{
    EntryKind, create_file_at, list_dir, make_dir_at, open_dir, open_dir_at, open_file_at, remove_entry_at,
    rename_between, stat_at, unlink_at,
};

/// The staging root's name inside the child's working directory.
const STAGING_DIR_NAME: &str = ".odek-artifacts";

/// The staging root's `.gitignore`: everything in it but itself.
pub const STAGING_GITIGNORE: &str = "*\n!.gitignore\n";

/// Sibling staging folders older than this (by mtime) are removed at child start.
const STALE_STAGING_AGE: Duration = Duration::from_secs(24 * 60 * 60);

const GITIGNORE_NAME: &str = ".gitignore";
const PRIVATE_DIR_MODE: u32 = 0o700;
const PRIVATE_FILE_MODE: u32 = 0o600;
const GITIGNORE_MODE: u32 = 0o644;

/// §9 child start: creates `<cwd>/.odek-artifacts/` (0700) with its `.gitignore`, removes sibling
/// folders whose mtime is older than 24 h (never this task's), creates
/// `.odek-artifacts/<task_id>/` (0700) and returns it. A staging root that is a symlink or a
/// file is an error; a stale sibling that cannot be removed is skipped.
pub fn prepare_staging(cwd: &Path, task_id: &TaskId) -> Result<PathBuf, ArtifactError> {
    let staging_root = cwd.join(STAGING_DIR_NAME);
    let fail = |err| ArtifactError::io("prepare artifact staging", &staging_root, err);
    let cwd_dir = open_dir(cwd).map_err(fail)?;
    let root = ensure_staging_root(&cwd_dir).map_err(fail)?;
    remove_stale_staging(&root, task_id, SystemTime::now());
    let task_name = OsStr::new(task_id.as_str());
    make_dir_at(&root, task_name, PRIVATE_DIR_MODE).map_err(fail)?;
    open_dir_at(&root, task_name).map_err(fail)?;
    Ok(staging_root.join(task_id.as_str()))
}

/// Creates the staging root if missing, refuses anything but a real directory, and rewrites
/// its `.gitignore` (a link or a foreign file in its place is replaced, not followed).
fn ensure_staging_root(cwd: &OwnedFd) -> io::Result<OwnedFd> {
    let name = OsStr::new(STAGING_DIR_NAME);
    make_dir_at(cwd, name, PRIVATE_DIR_MODE)?;
    let root = open_dir_at(cwd, name)?;
    write_gitignore(&root)?;
    Ok(root)
}

fn write_gitignore(root: &OwnedFd) -> io::Result<()> {
    let name = OsStr::new(GITIGNORE_NAME);
    match unlink_at(root, name) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    let mut file = create_file_at(root, name, GITIGNORE_MODE)?;
    file.write_all(STAGING_GITIGNORE.as_bytes())
}

/// Removes every sibling directory (never a link, never this task's) whose mtime is older than
/// [`STALE_STAGING_AGE`] at `now`. Best effort: what cannot be removed stays.
fn remove_stale_staging(root: &OwnedFd, task_id: &TaskId, now: SystemTime) {
    let Ok(now_secs) = now.duration_since(UNIX_EPOCH).map(|since| since.as_secs()) else {
        return;
    };
    let cutoff = i64::try_from(now_secs.saturating_sub(STALE_STAGING_AGE.as_secs())).unwrap_or(i64::MAX);
    let Ok(names) = list_dir(root) else {
        return;
    };
    for name in names {
        if name == OsStr::new(task_id.as_str()) {
            continue;
        }
        let Ok(stat) = stat_at(root, &name) else {
            continue;
        };
        if stat.kind == EntryKind::Directory
            && stat.modified < cutoff
            && let Some(name) = name.to_str()
            && let Err(err) = remove_entry_at(root, name)
        {
            tracing::warn!("remove stale artifact staging {name}: {err}");
        }
    }
}

/// §9 child exit: moves every top-level non-directory entry of `.odek-artifacts/<task_id>/` into
/// `artifact_root` (rename; a regular file on another filesystem is copied with mode 0600 and
/// deleted), discards directories, removes the staging subtree and recreates the staging root.
/// Returns the flags to append to the summary, one per failure:
/// `[artifact] staging lookup failed: <error>` / `[artifact] staging relocation failed: <error>`.
pub fn relocate_staged(cwd: &Path, task_id: &TaskId, artifact_root: &Path) -> Vec<String> {
    let mut flags = Vec::new();
    let cwd_dir = match open_dir(cwd) {
        Ok(dir) => dir,
        Err(err) => {
            flags.push(lookup_failed(format!("open {}: {err}", cwd.display())));
            return flags;
        }
    };
    let task_name = OsStr::new(task_id.as_str());
    match open_dir_at(&cwd_dir, OsStr::new(STAGING_DIR_NAME)) {
        Ok(root) => {
            match open_dir_at(&root, task_name) {
                Ok(staged) => move_staged_entries(&staged, artifact_root, &mut flags),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => flags.push(lookup_failed(format!("open {STAGING_DIR_NAME}/{task_id}: {err}"))),
            }
            match remove_entry_at(&root, task_id.as_str()) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => {
                    flags.push(relocation_failed(format!("remove {STAGING_DIR_NAME}/{task_id}: {err}")));
                }
                _ => {}
            }
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => {
            flags.push(lookup_failed(format!("open {STAGING_DIR_NAME}: {err}")));
            return flags;
        }
    }
    if let Err(err) = ensure_staging_root(&cwd_dir) {
        flags.push(relocation_failed(format!("recreate {STAGING_DIR_NAME}: {err}")));
    }
    flags
}

fn lookup_failed(error: String) -> String {
    format!("[artifact] staging lookup failed: {error}")
}

fn relocation_failed(error: String) -> String {
    format!("[artifact] staging relocation failed: {error}")
}

fn move_staged_entries(staged: &OwnedFd, artifact_root: &Path, flags: &mut Vec<String>) {
    let names = match list_dir(staged) {
        Ok(names) => names,
        Err(err) => {
            flags.push(lookup_failed(format!("list staged files: {err}")));
            return;
        }
    };
    let root = match open_dir(artifact_root) {
        Ok(root) => root,
        Err(err) => {
            flags.push(relocation_failed(format!("open artifact root: {err}")));
            return;
        }
    };
    for name in names {
        let shown = quote(&name.to_string_lossy());
        let stat = match stat_at(staged, &name) {
            Ok(stat) => stat,
            Err(err) => {
                flags.push(relocation_failed(format!("stat {shown}: {err}")));
                continue;
            }
        };
        if stat.kind == EntryKind::Directory {
            continue;
        }
        match rename_between(staged, &root, &name) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::CrossesDevices && stat.kind == EntryKind::RegularFile => {
                if let Some(flag) = copy_then_delete(staged, &root, &name) {
                    flags.push(flag);
                }
            }
            Err(err) => flags.push(relocation_failed(format!("rename {shown}: {err}"))),
        }
    }
}

/// The rename fallback for a regular file across filesystems: copy into a new file (mode 0600,
/// never over an existing entry), then delete the staged file. A file over the per-artifact cap
/// is not copied; it gets the scan's `dropped` flag. Returns the flag of a failure.
fn copy_then_delete(staged: &OwnedFd, root: &OwnedFd, name: &OsStr) -> Option<String> {
    let shown = quote(&name.to_string_lossy());
    let copy = || -> io::Result<Option<String>> {
        let source = open_file_at(staged, name)?;
        let metadata = source.metadata()?;
        if !metadata.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        if metadata.len() > MAX_ARTIFACT_BYTES {
            return Ok(Some(format!(
                "[artifact] dropped {shown}: {} bytes exceeds the per-artifact cap",
                metadata.len()
            )));
        }
        let mut target = create_file_at(root, name, PRIVATE_FILE_MODE)?;
        let copied = io::copy(&mut source.take(MAX_ARTIFACT_BYTES + 1), &mut target);
        if let Err(err) = copied {
            let _ = unlink_at(root, name);
            return Err(err);
        }
        unlink_at(staged, name)?;
        Ok(None)
    };
    copy().unwrap_or_else(|err| Some(relocation_failed(format!("copy {shown}: {err}"))))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn copy_fallback_writes_a_private_copy_and_deletes_the_staged_file() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::create_dir(temp.path().join("staged")).unwrap();
        std::fs::create_dir(temp.path().join("root")).unwrap();
        std::fs::write(temp.path().join("staged/report.md"), "# Report\n").unwrap();
        let staged = open_dir(&temp.path().join("staged")).unwrap();
        let root = open_dir(&temp.path().join("root")).unwrap();
        assert_eq!(copy_then_delete(&staged, &root, OsStr::new("report.md")), None);
        assert!(!temp.path().join("staged/report.md").exists());
        let copied = temp.path().join("root/report.md");
        assert_eq!(std::fs::read_to_string(&copied).unwrap(), "# Report\n");
        assert_eq!(std::fs::metadata(&copied).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn copy_fallback_never_writes_over_an_existing_entry() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::create_dir(temp.path().join("staged")).unwrap();
        std::fs::create_dir(temp.path().join("root")).unwrap();
        std::fs::write(temp.path().join("staged/a.txt"), "new").unwrap();
        std::fs::write(temp.path().join("elsewhere"), "foreign").unwrap();
        std::os::unix::fs::symlink(temp.path().join("elsewhere"), temp.path().join("root/a.txt")).unwrap();
        let staged = open_dir(&temp.path().join("staged")).unwrap();
        let root = open_dir(&temp.path().join("root")).unwrap();
        let flag = copy_then_delete(&staged, &root, OsStr::new("a.txt")).unwrap();
        assert!(flag.starts_with("[artifact] staging relocation failed: copy \"a.txt\": "), "{flag}");
        assert_eq!(std::fs::read_to_string(temp.path().join("elsewhere")).unwrap(), "foreign");
    }

    #[test]
    fn copy_fallback_drops_a_file_over_the_cap() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::create_dir(temp.path().join("staged")).unwrap();
        std::fs::create_dir(temp.path().join("root")).unwrap();
        let big = std::fs::File::create(temp.path().join("staged/big.bin")).unwrap();
        big.set_len(MAX_ARTIFACT_BYTES + 1).unwrap();
        let staged = open_dir(&temp.path().join("staged")).unwrap();
        let root = open_dir(&temp.path().join("root")).unwrap();
        assert_eq!(
            copy_then_delete(&staged, &root, OsStr::new("big.bin")).unwrap(),
            "[artifact] dropped \"big.bin\": 67108865 bytes exceeds the per-artifact cap"
        );
        assert!(!temp.path().join("root/big.bin").exists());
    }
}
