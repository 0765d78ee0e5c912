//! Where a file tool reads or writes ([`FilePlace`]): the resolved path and, under a confinement
//! root, the root every open of it walks from ([`RootDir`]). A read opens the regular file
//! without blocking ([`FilePlace::open_file`]); a write replaces the file atomically
//! ([`FilePlace::replace`]): a temporary file made exclusively beside it, written, synced, given
//! the old file's permissions, then renamed over it — every step relative to the handle of the
//! directory that holds it, so under a root nothing is read, created or replaced outside it, even
//! when a component of the path is swapped for a symlink while the call runs.
//!
//! Not here: where the path comes from (`resolve_file_place` in `tools`) and whether it may be
//! written at all (the danger policy, in each tool).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use odek_contract::regular_file::{
    Follow, is_not_a_regular_file, is_through_a_symlink, not_a_regular_file as not_regular, open_regular_read,
};

use super::root::{OutsideRoot, RootDir};
use crate::no_follow::{EntryKind, create_file_at, open_dir, rename_at, stat_at, unlink_at};
use crate::tool::ToolError;

/// The mode of a file a write creates (an existing file keeps its own).
const NEW_FILE_MODE: u32 = 0o644;

/// Names tried for the temporary file before giving up (each is random; a clash is a fluke).
const TEMPORARY_NAME_ATTEMPTS: usize = 8;

/// A file tool's path, resolved, and the confinement root it must be opened from, when the
/// context has one.
#[derive(Debug, Clone)]
pub(crate) struct FilePlace {
    pub(crate) path: PathBuf,
    pub(crate) root: Option<Arc<RootDir>>,
}

impl FilePlace {
    /// The path as messages show it.
    pub(crate) fn shown(&self) -> String {
        self.path.display().to_string()
    }

    /// The regular file opened for reading, never blocking. Errors are the tools' own words:
    /// `no such file: <path>`, `<path> is a directory; …`, `<path> is not a regular file …`,
    /// under a root a path that changed since its check ([`OutsideRoot::Swapped`]), or the
    /// I/O error. Blocking: call it from a blocking thread.
    pub(crate) fn open_file(&self) -> Result<File, ToolError> {
        let opened = match &self.root {
            None => {
                require_file(&self.path)?;
                open_regular_read(&self.path, Follow::Symlinks)
            }
            Some(root) => root.open_regular_read(&self.path),
        };
        opened.map_err(|err| match err.kind() {
            io::ErrorKind::NotFound => ToolError::new(format!("no such file: {}", self.shown())),
            io::ErrorKind::IsADirectory => is_a_directory(&self.path),
            _ if is_not_a_regular_file(&err) => not_a_regular_file(&self.path),
            _ if is_through_a_symlink(&err) => self.swapped(),
            _ => ToolError::new(format!("cannot read {}: {err}", self.shown())),
        })
    }

    /// Replaces the file with `content` atomically, creating missing parent directories;
    /// whether something was there before. Without a root a symlink is followed (the file it
    /// points at is replaced and the link stays); under one, nothing is followed. A directory,
    /// FIFO or device is never replaced. Blocking: call it from a blocking thread.
    pub(crate) fn replace(&self, content: &[u8]) -> Result<bool, ToolError> {
        match &self.root {
            Some(root) => {
                let failed = |err| self.write_error(&self.path, err);
                let (parent, name) = root.parent_of(&self.path, true).map_err(failed)?;
                replace_in(&parent, name, content).map_err(failed)
            }
            None => {
                let target = std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
                let (Some(directory), Some(name)) = (target.parent(), target.file_name()) else {
                    return Err(ToolError::new(format!("cannot write {}: no parent directory", target.display())));
                };
                std::fs::create_dir_all(directory)
                    .map_err(|err| ToolError::new(format!("cannot create directory {}: {err}", directory.display())))?;
                let failed = |err| self.write_error(&target, err);
                let parent = open_dir(directory).map_err(failed)?;
                replace_in(&parent, name, content).map_err(failed)
            }
        }
    }

    fn write_error(&self, target: &Path, err: io::Error) -> ToolError {
        match err.kind() {
            io::ErrorKind::IsADirectory => ToolError::new(format!("{} is a directory", target.display())),
            _ if is_not_a_regular_file(&err) => not_a_regular_file(target),
            _ if is_through_a_symlink(&err) => self.swapped(),
            _ => ToolError::new(format!("cannot write {}: {err}", target.display())),
        }
    }

    /// The refusal of a path whose component became a symlink after its check.
    fn swapped(&self) -> ToolError {
        let root = self.root.as_deref().map(|root| root.path().display().to_string()).unwrap_or_default();
        ToolError::new(OutsideRoot::Swapped { path: self.shown(), root }.to_string())
    }
}

/// Replaces `name` in `dir` with `content` (a temporary file beside it, renamed over it);
/// whether an entry was there.
fn replace_in(dir: &OwnedFd, name: &OsStr, content: &[u8]) -> io::Result<bool> {
    let existing = match stat_at(dir, name) {
        Ok(stat) => Some(stat),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err),
    };
    let mode = match existing {
        None => NEW_FILE_MODE,
        Some(stat) => match stat.kind {
            EntryKind::RegularFile => stat.mode,
            // The rename replaces the link itself; nothing is written where it points.
            EntryKind::Symlink => NEW_FILE_MODE,
            EntryKind::Directory => return Err(io::Error::from_raw_os_error(nix::libc::EISDIR)),
            // A FIFO or device is never swapped out of its place.
            EntryKind::Other => return Err(not_regular()),
        },
    };
    let (mut temporary, temporary_name) = create_temporary(dir)?;
    let written = (|| {
        temporary.write_all(content)?;
        temporary.sync_all()?;
        temporary.set_permissions(std::fs::Permissions::from_mode(mode))?;
        rename_at(dir, &temporary_name, name)
    })();
    if written.is_err() {
        let _ = unlink_at(dir, &temporary_name);
    }
    written.map(|()| existing.is_some())
}

/// A new, empty file with a random name beginning `.odek-write-` in `dir`, made exclusively.
fn create_temporary(dir: &OwnedFd) -> io::Result<(File, OsString)> {
    for _ in 0..TEMPORARY_NAME_ATTEMPTS {
        let mut random = [0_u8; 8];
        getrandom::fill(&mut random).map_err(|err| io::Error::other(err.to_string()))?;
        let name = OsString::from(format!(".odek-write-{}", hex::encode(random)));
        match create_file_at(dir, &name, 0o600) {
            Ok(file) => return Ok((file, name)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free name for a temporary file"))
}

/// `no such file: <path>` / `<path> is a directory` / `<path> is not a regular file` / the I/O
/// error, for a path that must be an existing regular file (no confinement root: by name).
fn require_file(path: &Path) -> Result<std::fs::Metadata, ToolError> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => Err(is_a_directory(path)),
        Ok(metadata) if !metadata.is_file() => Err(not_a_regular_file(path)),
        Ok(metadata) => Ok(metadata),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Err(ToolError::new(format!("no such file: {shown}"))),
        Err(err) => Err(ToolError::new(format!("cannot read {shown}: {err}"))),
    }
}

fn is_a_directory(path: &Path) -> ToolError {
    ToolError::new(format!("{} is a directory; use search_files with mode \"files\" to list it", path.display()))
}

/// A FIFO, device or socket where a file tool needs a file: reading it could block forever or
/// never end, and replacing it would swap a special file out of its place.
pub(crate) fn not_a_regular_file(path: &Path) -> ToolError {
    ToolError::new(format!(
        "{} is not a regular file (a FIFO, device or socket); file tools only use regular files",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;
    use crate::tools::confine_to_root;
    use crate::tools::root::tests::{Tree, tree};

    /// The tree of the root's tests and the place of `inner/file.txt` as checked under its root.
    fn confined() -> (Tree, PathBuf, PathBuf, FilePlace) {
        let tree = tree();
        let (root, outside) = (tree.root.clone(), tree.outside.clone());
        let path = confine_to_root(&root.join("inner/file.txt"), &root).unwrap();
        let place = FilePlace { path, root: Some(Arc::new(RootDir::open(&root).unwrap())) };
        (tree, root, outside, place)
    }

    #[test]
    fn a_write_keeps_the_mode_and_says_whether_the_file_existed() {
        let (_dir, root, _outside, place) = confined();
        std::fs::set_permissions(root.join("inner/file.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(place.replace(b"new").unwrap());
        assert_eq!(std::fs::read_to_string(root.join("inner/file.txt")).unwrap(), "new");
        let mode = std::fs::metadata(root.join("inner/file.txt")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let fresh = FilePlace { path: root.join("inner/deeper/fresh.txt"), root: place.root.clone() };
        assert!(!fresh.replace(b"x").unwrap());
        let leftovers: Vec<_> = std::fs::read_dir(root.join("inner"))
            .unwrap()
            .filter(|entry| entry.as_ref().unwrap().file_name().to_string_lossy().starts_with(".odek-write-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let directory = FilePlace { path: root.join("inner"), root: place.root };
        assert_eq!(
            directory.replace(b"x").unwrap_err().message,
            format!("{} is a directory", root.join("inner").display())
        );
    }

    /// The file itself swapped for a symlink to outside after the check: the rename replaces
    /// the link inside the root; the file it pointed at is untouched, and is never read.
    #[test]
    fn a_file_swapped_for_a_symlink_after_the_check_is_never_followed_red() {
        let (_dir, root, outside, place) = confined();
        std::fs::remove_file(root.join("inner/file.txt")).unwrap();
        symlink(outside.join("secret.txt"), root.join("inner/file.txt")).unwrap();
        let refused = place.open_file().unwrap_err().message;
        assert!(refused.starts_with("refused: ") && refused.contains("changed while it was used"), "{refused}");
        assert!(place.replace(b"planted").unwrap());
        assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "out");
        assert!(!std::fs::symlink_metadata(root.join("inner/file.txt")).unwrap().file_type().is_symlink());
    }

    /// A directory on the way swapped for a symlink to outside after the check: refused, and
    /// nothing is written outside.
    #[test]
    fn a_directory_swapped_for_a_symlink_after_the_check_writes_nothing_outside_red() {
        let (_dir, root, outside, place) = confined();
        std::fs::rename(root.join("inner"), root.join("moved")).unwrap();
        symlink(&outside, root.join("inner")).unwrap();
        let refused = place.replace(b"planted").unwrap_err().message;
        assert_eq!(
            refused,
            format!(
                "refused: {} changed while it was used (a symlink appeared on the way); only files under {} can be used",
                place.path.display(),
                root.display()
            )
        );
        assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "out");
        assert!(place.open_file().unwrap_err().message.starts_with("refused: "));
    }
}
