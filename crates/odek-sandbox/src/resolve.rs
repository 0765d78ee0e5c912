//! How the supervisor finds the object a caller's path names, and where that object lies. The
//! supervisor resolves paths for a confined caller (a metadata call, a Unix socket) with odek's
//! own reach: outside Landlock, and able to follow the `/proc` links of odek and of any process
//! of the user — `/proc/<pid>/fd/<n>`, `…/root`, `…/cwd`, `…/exe` — which a confined process
//! cannot. So it never follows one: paths are opened with `openat2(RESOLVE_NO_MAGICLINKS)` (or,
//! where an outer filter refuses `openat2`, one component at a time, refusing every symlink in
//! `/proc`), and a path that leads through `/proc` is refused ([`Unresolved::ThroughProc`]). The
//! caller's *own* descriptors, named the way the C library and shells name them
//! (`/proc/self/fd/3`, `/dev/fd/3`, `/dev/stdout`), are recognised first
//! ([`callers_descriptor`]) and taken from the caller itself. Start at [`open_path`].

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, OFlag, OpenHow, ResolveFlag, openat, openat2, readlinkat};
use nix::sys::stat::{Mode, SFlag, fstat};
use nix::sys::statfs::{PROC_SUPER_MAGIC, fstatfs};

use crate::notify;

/// Why a path names nothing the supervisor may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unresolved {
    /// The path leads through a symlink in `/proc` (a magic link: `/proc/<pid>/fd/<n>`,
    /// `/proc/<pid>/root`…): followed by the supervisor, it would reach what another process
    /// holds.
    ThroughProc,
    /// The kernel's answer (`ENOENT`, `ENOTDIR`, `ELOOP`…), the caller's too.
    Errno(i32),
}

impl Unresolved {
    /// The reason a refusal gives for a path that leads through `/proc`.
    pub(crate) const THROUGH_PROC: &'static str = "it leads through a /proc link, which the sandbox does not follow";
}

/// Symlinks followed on one path at most, as the kernel (`MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Opens (`O_PATH`: no device opened, no FIFO waited on) what `path` names — relative to `base`
/// when it is relative, which a caller always gives then — with `flags` (`O_NOFOLLOW`,
/// `O_DIRECTORY`) as the call would, and no `/proc` link followed on the way.
pub(crate) fn open_path(base: Option<&OwnedFd>, path: &[u8], flags: OFlag) -> Result<OwnedFd, Unresolved> {
    let flags = flags | OFlag::O_PATH | OFlag::O_CLOEXEC;
    let how = OpenHow::new().flags(flags).resolve(ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let dir = base.map_or(AT_FDCWD, AsFd::as_fd);
    match openat2(dir, OsStr::from_bytes(path), how) {
        Ok(object) => Ok(object),
        // A magic link, or a loop: the walk tells them apart (a loop is a loop there too).
        Err(Errno::ELOOP) => match walk(base, path, flags) {
            Err(Unresolved::ThroughProc) => Err(Unresolved::ThroughProc),
            _ => Err(Unresolved::Errno(libc::ELOOP)),
        },
        // No openat2 here (refused by an outer filter).
        Err(Errno::ENOSYS | Errno::EPERM) => walk(base, path, flags),
        Err(errno) => Err(Unresolved::Errno(errno as i32)),
    }
}

/// Resolves `path` one component at a time, as the kernel does, but refusing every symlink in a
/// `/proc` directory (magic or not): where `openat2` is unavailable, and to tell why it answered
/// `ELOOP`. Each symlink is read through the descriptor it was opened as, so a swap meanwhile
/// changes the text followed, never leads through `/proc`.
fn walk(base: Option<&OwnedFd>, path: &[u8], flags: OFlag) -> Result<OwnedFd, Unresolved> {
    let errno = |errno: Errno| Unresolved::Errno(errno as i32);
    let directory = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let root = || nix::fcntl::open("/", directory, Mode::empty()).map_err(errno);
    let trailing_slash = path.ends_with(b"/");
    let follow_last = !flags.contains(OFlag::O_NOFOLLOW) || trailing_slash;
    let mut current = match base {
        _ if path.starts_with(b"/") => root()?,
        Some(base) => openat(base, ".", directory, Mode::empty()).map_err(errno)?,
        None => openat(AT_FDCWD, ".", directory, Mode::empty()).map_err(errno)?,
    };
    let mut pending = components(path);
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        let last = pending.is_empty();
        let step = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let next = openat(&current, OsStr::from_bytes(&name), step, Mode::empty()).map_err(errno)?;
        if kind(&next).map_err(errno)? == SFlag::S_IFLNK && (!last || follow_last) {
            if fstatfs(&current).map_err(errno)?.filesystem_type() == PROC_SUPER_MAGIC {
                return Err(Unresolved::ThroughProc);
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(Unresolved::Errno(libc::ELOOP));
            }
            let target = readlinkat(&next, "").map_err(errno)?;
            let target = target.as_bytes();
            if target.starts_with(b"/") {
                current = root()?;
            }
            let mut expanded = components(target);
            expanded.extend(pending);
            pending = expanded;
            continue;
        }
        current = next;
    }
    let needs_directory = flags.contains(OFlag::O_DIRECTORY) || trailing_slash;
    if needs_directory && kind(&current).map_err(errno)? != SFlag::S_IFDIR {
        return Err(Unresolved::Errno(libc::ENOTDIR));
    }
    Ok(current)
}

/// The names of `path` (`.` and empty ones left out; `..` kept, which the kernel resolves).
fn components(path: &[u8]) -> VecDeque<Vec<u8>> {
    path.split(|byte| *byte == b'/').filter(|name| !name.is_empty() && *name != b".").map(<[u8]>::to_vec).collect()
}

fn kind(object: &OwnedFd) -> Result<SFlag, Errno> {
    Ok(SFlag::from_bits_truncate(fstat(object)?.st_mode) & SFlag::S_IFMT)
}

/// When `path` names one of the caller's own descriptors the way the C library and shells do —
/// `/proc/self/fd/<n>`, `/proc/thread-self/fd/<n>`, `/dev/fd/<n>`, `/proc/<id>/fd/<n>` with an
/// `id` that `is_own` (the caller's thread or process), `/dev/stdin`, `/dev/stdout`,
/// `/dev/stderr` — that descriptor and the rest of the path (empty, or starting with `/`).
pub(crate) fn callers_descriptor<'p>(path: &'p [u8], is_own: &dyn Fn(u32) -> bool) -> Option<(i32, &'p [u8])> {
    for (name, fd) in [(&b"/dev/stdin"[..], 0), (b"/dev/stdout", 1), (b"/dev/stderr", 2)] {
        if path == name {
            return Some((fd, b""));
        }
    }
    let numbered = if let Some(rest) = path.strip_prefix(b"/dev/fd/") {
        rest
    } else {
        let rest = path.strip_prefix(b"/proc/")?;
        let (owner, rest) = split_name(rest);
        let owned = match owner {
            b"self" | b"thread-self" => true,
            id => number(id).and_then(|id| u32::try_from(id).ok()).is_some_and(is_own),
        };
        if !owned {
            return None;
        }
        rest.strip_prefix(b"/fd/")?
    };
    let (fd, rest) = split_name(numbered);
    Some((number(fd)?, rest))
}

/// The first name of `path` and what follows it (empty, or starting with `/`).
fn split_name(path: &[u8]) -> (&[u8], &[u8]) {
    let end = path.iter().position(|byte| *byte == b'/').unwrap_or(path.len());
    path.split_at(end)
}

/// A decimal number as `/proc` spells one (no sign, no leading zero).
fn number(text: &[u8]) -> Option<i32> {
    let canonical = !text.is_empty() && text.iter().all(u8::is_ascii_digit) && (text == b"0" || text[0] != b'0');
    if !canonical {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// Whether `real` (a canonical path) lies beneath one of the `writable` paths.
pub(crate) fn is_writable(real: &Path, writable: &[PathBuf]) -> bool {
    writable.iter().any(|area| real.starts_with(area))
}

/// The path the kernel gives for the object `fd` holds (`pipe:[…]` and the like for what has
/// none), or `None` when it cannot be read.
pub(crate) fn real_path(fd: &OwnedFd) -> Option<PathBuf> {
    std::fs::read_link(OsStr::from_bytes(notify::through_fd(fd).as_bytes())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(id: u32) -> bool {
        id == 42 || id == 40
    }

    #[test]
    fn the_callers_own_descriptors_are_recognised_by_the_names_the_c_library_uses() {
        let descriptor = |path: &'static str| callers_descriptor(path.as_bytes(), &own);
        assert_eq!(descriptor("/proc/self/fd/3"), Some((3, &b""[..])));
        assert_eq!(descriptor("/proc/thread-self/fd/12/sub/file"), Some((12, &b"/sub/file"[..])));
        assert_eq!(descriptor("/dev/fd/0"), Some((0, &b""[..])));
        assert_eq!(descriptor("/dev/stdout"), Some((1, &b""[..])));
        assert_eq!(descriptor("/proc/42/fd/5"), Some((5, &b""[..])), "the caller's thread");
        assert_eq!(descriptor("/proc/40/fd/5/"), Some((5, &b"/"[..])), "the caller's process");
        for other in [
            "/proc/41/fd/5",
            "/proc/self/root/etc",
            "/proc/self/cwd/notes.txt",
            "/proc/self/fd/03",
            "/proc/self/fd/x",
            "/proc/self/fd/99999999999",
            "/proc/042/fd/5",
            "/proc/selfish/fd/3",
            "/dev/stdout/x",
            "/dev/fdx/3",
            "notes.txt",
        ] {
            assert_eq!(descriptor(other), None, "{other}");
        }
    }

    fn opened(base: &Path, path: &str, flags: OFlag) -> Result<PathBuf, Unresolved> {
        let base = nix::fcntl::open(base, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty()).unwrap();
        open_path(Some(&base), path.as_bytes(), flags).map(|object| real_path(&object).unwrap())
    }

    fn walked(base: &Path, path: &str, flags: OFlag) -> Result<PathBuf, Unresolved> {
        let base = nix::fcntl::open(base, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty()).unwrap();
        walk(Some(&base), path.as_bytes(), flags | OFlag::O_PATH).map(|object| real_path(&object).unwrap())
    }

    #[test]
    fn a_path_through_a_proc_link_is_refused_red() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/file"), "x").unwrap();
        std::os::unix::fs::symlink("sub/file", root.join("link")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        let (reader, _writer) = std::io::pipe().unwrap();
        let pipe = std::os::fd::AsRawFd::as_raw_fd(&reader);
        std::os::unix::fs::symlink(format!("/proc/self/fd/{pipe}"), root.join("to-a-pipe")).unwrap();
        std::os::unix::fs::symlink("/proc/self/root", root.join("to-the-root")).unwrap();
        let none = OFlag::empty();
        for resolve in [opened, walked] {
            assert_eq!(resolve(&root, "link", none), Ok(root.join("sub/file")));
            assert_eq!(resolve(&root, "sub/../link", none), Ok(root.join("sub/file")));
            assert_eq!(resolve(&root, "link", OFlag::O_NOFOLLOW), Ok(root.join("link")), "the link itself");
            assert_eq!(resolve(&root, "sub/", OFlag::O_DIRECTORY), Ok(root.join("sub")));
            assert_eq!(resolve(&root, "link/", none), Err(Unresolved::Errno(libc::ENOTDIR)));
            assert_eq!(resolve(&root, "loop", none), Err(Unresolved::Errno(libc::ELOOP)));
            assert_eq!(resolve(&root, "missing", none), Err(Unresolved::Errno(libc::ENOENT)));
            assert_eq!(resolve(&root, "to-a-pipe", none), Err(Unresolved::ThroughProc), "odek's own pipe");
            assert_eq!(resolve(&root, "to-the-root/etc", none), Err(Unresolved::ThroughProc));
            let through = format!("/proc/{}/fd/{pipe}", std::process::id());
            assert_eq!(resolve(&root, &through, none), Err(Unresolved::ThroughProc));
            let cwd = format!("/proc/{}/cwd/x", std::process::id());
            assert_eq!(resolve(&root, &cwd, none), Err(Unresolved::ThroughProc));
        }
        drop(reader);
    }
}
