//! Filesystem access that never follows a symlink where one would let a swapped path reach a
//! foreign file: directory handles opened `O_NOFOLLOW`, entries made, moved, listed and removed
//! relative to a handle (`*at` calls), and [`open_file_without_symlinks`], which walks every
//! component of a path a registered artifact was recorded under. The sub-agents' artifacts and
//! the file tools' confinement root (`tools::RootDir`) both stand on it.
//!
//! Everything here reports plain `io::Error`s; the callers turn them into the spec's messages.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use nix::dir::Dir;
use nix::fcntl::{AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};

/// Deepest directory tree [`remove_entry_at`] descends into; deeper trees fail rather than
/// recursing without bound.
const MAX_REMOVE_DEPTH: usize = 64;

/// What an entry is, seen with `lstat` semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Directory,
    RegularFile,
    Symlink,
    Other,
}

/// One `fstatat(…, AT_SYMLINK_NOFOLLOW)` result.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryStat {
    pub(crate) kind: EntryKind,
    pub(crate) size: u64,
    /// Seconds since the epoch.
    pub(crate) modified: i64,
    /// The permission bits (`st_mode & 0o7777`).
    pub(crate) mode: u32,
}

fn kind_of(stat: &FileStat) -> EntryKind {
    let format = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits());
    if format == SFlag::S_IFDIR {
        EntryKind::Directory
    } else if format == SFlag::S_IFREG {
        EntryKind::RegularFile
    } else if format == SFlag::S_IFLNK {
        EntryKind::Symlink
    } else {
        EntryKind::Other
    }
}

/// Opens the directory at `path`, following symlinks on the way (operator-owned paths such as
/// `~/.odek/artifacts` or the working directory may legitimately contain them).
pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    Ok(nix::fcntl::open(path, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())?)
}

/// Opens the directory `name` inside `dir`; a symlink there fails (`ELOOP`, or `ENOTDIR` as
/// Linux reports it with `O_DIRECTORY`), a file fails (`ENOTDIR`).
pub(crate) fn open_dir_at(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    Ok(openat(dir, name, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())?)
}

/// `mkdir <name>` inside `dir` with `mode`; an existing entry is not an error (the caller opens
/// it with [`open_dir_at`], which refuses anything but a real directory).
pub(crate) fn make_dir_at(dir: &OwnedFd, name: &OsStr, mode: u32) -> io::Result<()> {
    match mkdirat(dir, name, Mode::from_bits_truncate(mode)) {
        Ok(()) | Err(nix::errno::Errno::EEXIST) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

/// `lstat` of `name` inside `dir`.
pub(crate) fn stat_at(dir: &OwnedFd, name: &OsStr) -> io::Result<EntryStat> {
    let stat = fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
    Ok(EntryStat {
        kind: kind_of(&stat),
        size: u64::try_from(stat.st_size).unwrap_or(0),
        modified: stat.st_mtime,
        mode: stat.st_mode & 0o7777,
    })
}

/// Names in `dir` (without `.` and `..`), sorted bytewise so every caller reports in a stable
/// order.
pub(crate) fn list_dir(dir: &OwnedFd) -> io::Result<Vec<OsString>> {
    let mut listing = Dir::from_fd(dir.try_clone()?)?;
    let mut names = Vec::new();
    for entry in listing.iter() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    names.sort();
    Ok(names)
}

/// Opens `name` inside `dir` for reading without following a symlink and without blocking on
/// a FIFO swapped in.
pub(crate) fn open_file_at(dir: &OwnedFd, name: &OsStr) -> io::Result<File> {
    let fd =
        openat(dir, name, OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC, Mode::empty())?;
    Ok(File::from(fd))
}

/// Creates `name` inside `dir` for writing with `mode`; an existing entry (a symlink included)
/// fails.
pub(crate) fn create_file_at(dir: &OwnedFd, name: &OsStr, mode: u32) -> io::Result<File> {
    let fd = openat(
        dir,
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(mode),
    )?;
    Ok(File::from(fd))
}

/// Renames `name` from one directory handle to another; a symlink is moved as the link.
pub(crate) fn rename_between(from: &OwnedFd, to: &OwnedFd, name: &OsStr) -> io::Result<()> {
    Ok(renameat(from, name, to, name)?)
}

/// Renames `from` to `to` inside `dir`, replacing what `to` names (a symlink there is
/// replaced, not followed).
pub(crate) fn rename_at(dir: &OwnedFd, from: &OsStr, to: &OsStr) -> io::Result<()> {
    Ok(renameat(dir, from, dir, to)?)
}

/// Unlinks the non-directory `name` inside `dir`.
pub(crate) fn unlink_at(dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    Ok(unlinkat(dir, name, UnlinkatFlags::NoRemoveDir)?)
}

/// Removes `name` inside `dir`: a directory with everything below it, anything else (a symlink
/// included) as itself. No link is ever followed.
pub(crate) fn remove_entry_at(dir: &OwnedFd, name: &str) -> io::Result<()> {
    remove_at(dir, OsStr::new(name), 0)
}

fn remove_at(dir: &OwnedFd, name: &OsStr, depth: usize) -> io::Result<()> {
    if stat_at(dir, name)?.kind != EntryKind::Directory {
        return unlink_at(dir, name);
    }
    if depth >= MAX_REMOVE_DEPTH {
        return Err(io::Error::other(format!("directory tree deeper than {MAX_REMOVE_DEPTH} levels")));
    }
    let child = open_dir_at(dir, name)?;
    for entry in list_dir(&child)? {
        remove_at(&child, &entry, depth + 1)?;
    }
    Ok(unlinkat(dir, name, UnlinkatFlags::RemoveDir)?)
}

/// Opens the file at the absolute `path` with no symlink anywhere: each directory component is
/// opened `O_NOFOLLOW` relative to the previous one, the last one `O_NOFOLLOW | O_NONBLOCK`.
/// A recorded artifact path is fully resolved at registration, so a link on it now means a
/// swap; the open fails (`ELOOP` or `ENOTDIR`) instead of reaching the link's target.
pub(crate) fn open_file_without_symlinks(path: &Path) -> io::Result<File> {
    let mut components = path.components();
    if components.next() != Some(Component::RootDir) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "path is not absolute"));
    }
    let names: Vec<&OsStr> = components
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "path is not clean")),
        })
        .collect::<io::Result<_>>()?;
    let Some((file_name, directories)) = names.split_last() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "path names no file"));
    };
    let mut dir = open_dir(Path::new("/"))?;
    for name in directories {
        dir = open_dir_at(&dir, name)?;
    }
    open_file_at(&dir, file_name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn open_refuses_a_symlinked_directory_component() {
        let temp = tempfile::tempdir().unwrap();
        let real = temp.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("dir")).unwrap();
        std::fs::write(real.join("dir/file"), "x").unwrap();
        std::os::unix::fs::symlink(real.join("dir"), real.join("link")).unwrap();
        assert!(open_file_without_symlinks(&real.join("dir/file")).is_ok());
        assert!(open_file_without_symlinks(&real.join("link/file")).is_err());
        std::os::unix::fs::symlink(real.join("dir/file"), real.join("file-link")).unwrap();
        assert!(open_file_without_symlinks(&real.join("file-link")).is_err());
        assert!(open_file_without_symlinks(Path::new("relative")).is_err());
        assert!(open_file_without_symlinks(&real.join("dir/../dir/file")).is_err());
    }

    #[test]
    fn remove_does_not_follow_links() {
        let temp = tempfile::tempdir().unwrap();
        let outside = temp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        let tree = temp.path().join("tree");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::fs::write(tree.join("a/b/f"), "x").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("a/link")).unwrap();
        let dir = open_dir(temp.path()).unwrap();
        remove_entry_at(&dir, "tree").unwrap();
        assert!(!tree.exists());
        assert!(outside.join("keep").exists());
    }
}
