//! The file metadata calls Landlock does not mediate — `chmod`, `chown`, setting times, setting
//! and removing extended attributes — answered by the supervisor, so that a confined command
//! changes metadata only where it may write: beneath the writable paths (the workspace,
//! `$TMPDIR`, `writable`; never `~/.odek`, which they are split around), the same rule Landlock
//! applies to contents. A change to something the caller already holds open that nothing names
//! (an unlinked file, a `memfd`, a pipe or a socket) is no one else's business and goes through
//! — but only through the caller's own descriptor: a path never reaches such an object, since
//! the paths that would (`/proc/<pid>/fd/<n>`, another process's) lead through `/proc`, which the
//! supervisor does not follow (`resolve`). Setuid and setgid bits never get here: a seccomp
//! filter refuses them everywhere (`filter`).
//!
//! The race a supervisor must not lose: it reads a path from the caller's memory, and another
//! thread of the caller can rewrite that memory, swap a symlink or reuse a descriptor number
//! between the check and the call. So the supervisor never lets the kernel redo the call: it
//! reads the path once into a copy, opens what it names itself (`O_PATH`, following symlinks as
//! the call would, never a `/proc` link), judges *that open object* by the path the kernel gives
//! for it, and makes the change on the same object (through its descriptor), from a thread
//! without capabilities, so the kernel's own permission checks are the caller's. Whatever the
//! caller changes meanwhile, the object judged is the object changed. Start at [`handle`].

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use nix::fcntl::OFlag;
use nix::sys::stat::{SFlag, fstat};

use crate::denials::Denial;
use crate::notify;
use crate::resolve::{self, Unresolved, is_writable, real_path};
use crate::supervisor::Caller;

/// Every metadata call the supervisor answers (the seccomp filter sends exactly these).
pub(crate) fn metadata_calls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    calls
}

/// The object a call changes, as the caller named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// One of the caller's descriptors (`fchmod`, `futimens`…).
    Fd(i32),
    /// The path at `path` in the caller's memory, relative to its descriptor `dir` (`None`: its
    /// working directory); `follow`: a symlink at the end is followed; `empty_is_dir`: an empty
    /// path names `dir` itself (`AT_EMPTY_PATH`).
    Path { dir: Option<i32>, path: u64, follow: bool, empty_is_dir: bool },
}

/// How a call gives its two times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimesLayout {
    /// `struct timespec[2]` (`utimensat`).
    Timespec,
    /// `struct timeval[2]` (`utimes`, `futimesat`).
    Timeval,
    /// `struct utimbuf` (`utime`).
    Utimbuf,
}

/// What a call changes, its arguments still in the caller's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    Mode(u32),
    /// `u32::MAX` leaves that id as it is.
    Owner {
        uid: u32,
        gid: u32,
    },
    /// `address` 0: both times to now.
    Times {
        address: u64,
        layout: TimesLayout,
    },
    SetXattr {
        name: u64,
        value: u64,
        size: u64,
        flags: i32,
    },
    RemoveXattr {
        name: u64,
    },
}

impl Change {
    /// The operation as a [`Denial`] names it.
    fn operation(self) -> &'static str {
        match self {
            Change::Mode(_) => "chmod",
            Change::Owner { .. } => "chown",
            Change::Times { .. } => "utimes",
            Change::SetXattr { .. } => "setxattr",
            Change::RemoveXattr { .. } => "removexattr",
        }
    }
}

/// One notified metadata call, decoded from its number and registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request {
    pub target: Target,
    pub change: Change,
}

/// Decodes a metadata call the way the kernel reads its arguments (an `int` is the low 32 bits
/// of its register); a flag the call does not know is `EINVAL`, as in the kernel.
pub(crate) fn decode(syscall: i64, args: &[u64; 6]) -> Result<Request, i32> {
    let int = |index: usize| args[index] as u32 as i32;
    let uint = |index: usize| args[index] as u32;
    let dir = |index: usize| Some(int(index)).filter(|fd| *fd != libc::AT_FDCWD);
    let path = |dir, path, follow| Target::Path { dir, path, follow, empty_is_dir: false };
    let at_path = |dir_index: usize, path_index: usize, flags: i32| -> Result<Target, i32> {
        if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
            return Err(libc::EINVAL);
        }
        Ok(Target::Path {
            dir: dir(dir_index),
            path: args[path_index],
            follow: flags & libc::AT_SYMLINK_NOFOLLOW == 0,
            empty_is_dir: flags & libc::AT_EMPTY_PATH != 0,
        })
    };
    // `utimensat` and `futimesat` without a path change the descriptor `dir` itself.
    let fd_or_path = |dir_index: usize, path_index: usize, flags: i32| -> Result<Target, i32> {
        if args[path_index] != 0 {
            return at_path(dir_index, path_index, flags);
        }
        match dir(dir_index) {
            None => Err(libc::EFAULT),
            Some(_) if flags != 0 => Err(libc::EINVAL),
            Some(fd) => Ok(Target::Fd(fd)),
        }
    };
    let set_xattr = |value_index: usize| Change::SetXattr {
        name: args[value_index - 1],
        value: args[value_index],
        size: args[value_index + 1],
        flags: int(value_index + 2),
    };
    let (target, change) = match syscall {
        libc::SYS_fchmod => (Target::Fd(int(0)), Change::Mode(uint(1))),
        libc::SYS_fchmodat => (path(dir(0), args[1], true), Change::Mode(uint(2))),
        libc::SYS_fchown => (Target::Fd(int(0)), Change::Owner { uid: uint(1), gid: uint(2) }),
        libc::SYS_fchownat => (at_path(0, 1, int(4))?, Change::Owner { uid: uint(2), gid: uint(3) }),
        libc::SYS_utimensat => {
            (fd_or_path(0, 1, int(3))?, Change::Times { address: args[2], layout: TimesLayout::Timespec })
        }
        libc::SYS_setxattr => (path(None, args[0], true), set_xattr(2)),
        libc::SYS_lsetxattr => (path(None, args[0], false), set_xattr(2)),
        libc::SYS_fsetxattr => (Target::Fd(int(0)), set_xattr(2)),
        libc::SYS_removexattr => (path(None, args[0], true), Change::RemoveXattr { name: args[1] }),
        libc::SYS_lremovexattr => (path(None, args[0], false), Change::RemoveXattr { name: args[1] }),
        libc::SYS_fremovexattr => (Target::Fd(int(0)), Change::RemoveXattr { name: args[1] }),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_chmod => (path(None, args[0], true), Change::Mode(uint(1))),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_chown => (path(None, args[0], true), Change::Owner { uid: uint(1), gid: uint(2) }),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_lchown => (path(None, args[0], false), Change::Owner { uid: uint(1), gid: uint(2) }),
        #[cfg(target_arch = "x86_64")]
        libc::SYS_utime => {
            (path(None, args[0], true), Change::Times { address: args[1], layout: TimesLayout::Utimbuf })
        }
        #[cfg(target_arch = "x86_64")]
        libc::SYS_utimes => {
            (path(None, args[0], true), Change::Times { address: args[1], layout: TimesLayout::Timeval })
        }
        #[cfg(target_arch = "x86_64")]
        libc::SYS_futimesat => (fd_or_path(0, 1, 0)?, Change::Times { address: args[2], layout: TimesLayout::Timeval }),
        _ => return Err(libc::ENOSYS),
    };
    Ok(Request { target, change })
}

/// A change with its arguments copied out of the caller's memory.
#[derive(Debug)]
enum Copied {
    Mode(u32),
    Owner {
        uid: u32,
        gid: u32,
    },
    /// `None`: both to now.
    Times(Option<[libc::timespec; 2]>),
    SetXattr {
        name: CString,
        value: Vec<u8>,
        flags: i32,
    },
    RemoveXattr {
        name: CString,
    },
}

/// `XATTR_NAME_MAX + 1`: the longest attribute name, its NUL counted.
const XATTR_NAME_SPACE: usize = 256;

/// Copies what `change` points to, with the kernel's bounds and errors.
fn copy_change(caller: &Caller<'_>, change: Change) -> Result<Copied, i32> {
    let name = |address: u64| -> Result<CString, i32> {
        let bytes = caller.read_string(address, XATTR_NAME_SPACE, libc::ERANGE)?;
        if bytes.is_empty() {
            return Err(libc::ERANGE);
        }
        CString::new(bytes).map_err(|_| libc::ERANGE)
    };
    Ok(match change {
        Change::Mode(mode) => Copied::Mode(mode),
        Change::Owner { uid, gid } => Copied::Owner { uid, gid },
        Change::Times { address: 0, .. } => Copied::Times(None),
        Change::Times { address, layout } => Copied::Times(Some(copy_times(caller, address, layout)?)),
        Change::SetXattr { name: name_address, value, size, flags } => {
            let size = usize::try_from(size).map_err(|_| libc::E2BIG)?;
            if size > notify::MAX_READ {
                return Err(libc::E2BIG);
            }
            let bytes = caller.read(value, size)?;
            if bytes.len() != size {
                return Err(libc::EFAULT);
            }
            Copied::SetXattr { name: name(name_address)?, value: bytes, flags }
        }
        Change::RemoveXattr { name: name_address } => Copied::RemoveXattr { name: name(name_address)? },
    })
}

/// The two times at `address` as `timespec`s (microseconds out of range are `EINVAL`).
fn copy_times(caller: &Caller<'_>, address: u64, layout: TimesLayout) -> Result<[libc::timespec; 2], i32> {
    let timespec = |seconds, nanoseconds| libc::timespec { tv_sec: seconds, tv_nsec: nanoseconds };
    Ok(match layout {
        TimesLayout::Timespec => caller.read_plain::<[libc::timespec; 2]>(address)?,
        TimesLayout::Timeval => {
            let values = caller.read_plain::<[libc::timeval; 2]>(address)?;
            if values.iter().any(|value| !(0..1_000_000).contains(&value.tv_usec)) {
                return Err(libc::EINVAL);
            }
            values.map(|value| timespec(value.tv_sec, value.tv_usec * 1000))
        }
        TimesLayout::Utimbuf => {
            let value = caller.read_plain::<libc::utimbuf>(address)?;
            [timespec(value.actime, 0), timespec(value.modtime, 0)]
        }
    })
}

/// The object a call will change, and how it was reached.
struct Reached {
    object: OwnedFd,
    /// Reached by a path (the path calls' semantics apply), not as the caller's open file.
    by_path: bool,
    /// Taken from the caller's own descriptor table: an object it already holds.
    own: bool,
}

/// Reaches what the path `given` names for the caller: one of its own descriptors when the path
/// names one the way the C library does ([`resolve::callers_descriptor`]), else what the path
/// leads to from `dir` (the caller's descriptor) or its working directory, through no `/proc`
/// link. Everything read from the caller and its descriptors taken while it may still be
/// reached; then on as the caller, without capabilities.
fn reach_path(
    caller: &Caller<'_>,
    dir: Option<i32>,
    given: &[u8],
    follow: bool,
    empty_is_dir: bool,
) -> Result<Reached, Unresolved> {
    let flags = if follow { OFlag::empty() } else { OFlag::O_NOFOLLOW };
    if given.is_empty() && !empty_is_dir {
        return Err(Unresolved::Errno(libc::ENOENT));
    }
    let is_own = |id: u32| id == caller.tid() || caller.tgid() == Some(id);
    if let Some((fd, rest)) = resolve::callers_descriptor(given, &is_own) {
        if rest.is_empty() && !follow {
            // The `/proc` link itself, not what it leads to.
            return Err(Unresolved::ThroughProc);
        }
        caller.still_pending().map_err(Unresolved::Errno)?;
        let base = caller.take_fd(fd).map_err(Unresolved::Errno)?;
        caller.act_as_caller().map_err(Unresolved::Errno)?;
        if rest.is_empty() {
            return Ok(Reached { object: base, by_path: true, own: true });
        }
        // `/proc/self/fd/3/notes.txt`: a name in the directory the caller holds open.
        let inside = &rest[rest.iter().position(|byte| *byte != b'/').unwrap_or(rest.len())..];
        let inside: &[u8] = if inside.is_empty() { b"./" } else { inside };
        let object = resolve::open_path(Some(&base), inside, flags)?;
        return Ok(Reached { object, by_path: true, own: false });
    }
    let relative = !given.starts_with(b"/");
    let cwd = if relative && dir.is_none() { Some(caller.cwd().map_err(Unresolved::Errno)?) } else { None };
    caller.still_pending().map_err(Unresolved::Errno)?;
    let base = match dir {
        Some(fd) if relative => Some(caller.take_fd(fd).map_err(Unresolved::Errno)?),
        _ => cwd,
    };
    caller.act_as_caller().map_err(Unresolved::Errno)?;
    match base {
        Some(base) if given.is_empty() => Ok(Reached { object: base, by_path: true, own: dir.is_some() }),
        base => Ok(Reached { object: resolve::open_path(base.as_ref(), given, flags)?, by_path: true, own: false }),
    }
}

/// Whether the object `object` holds may change: it lies beneath a writable path, or — only
/// when it came from the caller's own descriptor table (`own`) — nothing names it (unlinked, a
/// `memfd`, a pipe or a socket). `Err` with the path it lies at.
fn changeable(object: &OwnedFd, writable: &[PathBuf], own: bool) -> Result<(), PathBuf> {
    let unknown = || PathBuf::from("(unknown)");
    if own && fstat(object).map_err(|_| unknown())?.st_nlink == 0 {
        return Ok(());
    }
    let real = real_path(object).ok_or_else(unknown)?;
    let nameless = !real.is_absolute();
    if (own && nameless) || (!nameless && is_writable(&real, writable)) { Ok(()) } else { Err(real) }
}

/// Answers one notified metadata call of `caller`: only on an object beneath `writable` (see
/// the module's note for why the object changed is the object judged); a refusal is `EACCES`
/// and goes to `record`.
pub(crate) fn handle(caller: &Caller<'_>, writable: &[PathBuf], record: &dyn Fn(Denial)) -> Result<i64, i32> {
    let Request { target, change } = decode(caller.syscall(), caller.args())?;
    let copied = copy_change(caller, change)?;
    if let Copied::Times(Some([access, modification])) = &copied
        && access.tv_nsec == libc::UTIME_OMIT
        && modification.tv_nsec == libc::UTIME_OMIT
    {
        // The kernel does nothing, and looks at no path, for two omitted times.
        return Ok(0);
    }
    let refuse = |target: String, reason: String| {
        record(Denial { operation: change.operation(), target, reason });
        Err(libc::EACCES)
    };
    let (reached, shown) = match target {
        Target::Fd(fd) => {
            caller.still_pending()?;
            let object = caller.take_fd(fd)?;
            caller.act_as_caller()?;
            (Reached { object, by_path: false, own: true }, format!("fd {fd}"))
        }
        Target::Path { dir, path, follow, empty_is_dir } => {
            let given = caller.read_string(path, libc::PATH_MAX as usize, libc::ENAMETOOLONG)?;
            let shown = String::from_utf8_lossy(&given).into_owned();
            match reach_path(caller, dir, &given, follow, empty_is_dir) {
                Ok(reached) => (reached, shown),
                Err(Unresolved::ThroughProc) => return refuse(shown, Unresolved::THROUGH_PROC.to_owned()),
                Err(Unresolved::Errno(errno)) => return Err(errno),
            }
        }
    };
    if let Err(real) = changeable(&reached.object, writable, reached.own) {
        return refuse(shown, format!("{} is outside the writable paths", real.display()));
    }
    perform(&reached.object, copied, reached.by_path).map(|()| 0)
}

/// Makes `change` on the object `object` holds: `by_path`, as the path calls do (any kind of
/// descriptor, a symlink included); otherwise as the descriptor calls do on the caller's own
/// open file (an `O_PATH` one is `EBADF`, as in the kernel).
fn perform(object: &OwnedFd, change: Copied, by_path: bool) -> Result<(), i32> {
    let symlink = || {
        fstat(object).is_ok_and(|status| SFlag::from_bits_truncate(status.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK)
    };
    match change {
        // Never reached with these bits (the filter refuses them first); kept as the rule's floor.
        Copied::Mode(mode) if mode & (libc::S_ISUID | libc::S_ISGID) != 0 => Err(libc::EPERM),
        Copied::Mode(mode) if by_path => notify::chmod_object(object, mode),
        Copied::Mode(mode) => notify::fchmod(object, mode),
        Copied::Owner { uid, gid } if by_path => notify::chown_object(object, uid, gid),
        Copied::Owner { uid, gid } => notify::fchown(object, uid, gid),
        Copied::Times(times) => notify::set_times(object, times.as_ref(), by_path),
        // The kernel refuses user attributes on a symlink, and the others need capabilities.
        Copied::SetXattr { .. } | Copied::RemoveXattr { .. } if by_path && symlink() => Err(libc::EPERM),
        Copied::SetXattr { name, value, flags } => notify::set_xattr(object, &name, &value, flags, by_path),
        Copied::RemoveXattr { name } => notify::remove_xattr(object, &name, by_path),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn args(values: &[u64]) -> [u64; 6] {
        let mut all = [0_u64; 6];
        all[..values.len()].copy_from_slice(values);
        all
    }

    const AT_FDCWD: u64 = libc::AT_FDCWD as u32 as u64;

    #[test]
    fn calls_decode_to_their_target_and_change() {
        let request = decode(libc::SYS_fchmodat, &args(&[AT_FDCWD, 0x1000, 0o644])).unwrap();
        assert_eq!(request.target, Target::Path { dir: None, path: 0x1000, follow: true, empty_is_dir: false });
        assert_eq!(request.change, Change::Mode(0o644));
        let request = decode(libc::SYS_fchownat, &args(&[7, 0x1000, 1000, u64::from(u32::MAX), 0x1100])).unwrap();
        assert_eq!(request.target, Target::Path { dir: Some(7), path: 0x1000, follow: false, empty_is_dir: true });
        assert_eq!(request.change, Change::Owner { uid: 1000, gid: u32::MAX });
        // An int argument is the register's low half, whatever the high one holds.
        let request = decode(libc::SYS_fchmod, &args(&[0xdead_0000_0003, 0xffff_0000_0000_01ed])).unwrap();
        assert_eq!(request, Request { target: Target::Fd(3), change: Change::Mode(0o755) });
        let request = decode(libc::SYS_fsetxattr, &args(&[4, 0x10, 0x20, 5, 1])).unwrap();
        assert_eq!(request.change, Change::SetXattr { name: 0x10, value: 0x20, size: 5, flags: 1 });
        let request = decode(libc::SYS_lremovexattr, &args(&[0x10, 0x20])).unwrap();
        assert_eq!(request.target, Target::Path { dir: None, path: 0x10, follow: false, empty_is_dir: false });
    }

    #[test]
    fn utimensat_without_a_path_changes_its_descriptor() {
        let request = decode(libc::SYS_utimensat, &args(&[5, 0, 0x2000, 0])).unwrap();
        assert_eq!(request.target, Target::Fd(5));
        assert_eq!(request.change, Change::Times { address: 0x2000, layout: TimesLayout::Timespec });
        assert_eq!(decode(libc::SYS_utimensat, &args(&[AT_FDCWD, 0, 0, 0])), Err(libc::EFAULT));
        assert_eq!(decode(libc::SYS_utimensat, &args(&[5, 0, 0, libc::AT_SYMLINK_NOFOLLOW as u64])), Err(libc::EINVAL));
        assert_eq!(decode(libc::SYS_utimensat, &args(&[5, 0x10, 0, 0x8000_0000])), Err(libc::EINVAL));
        assert_eq!(decode(libc::SYS_read, &args(&[])), Err(libc::ENOSYS));
    }

    #[test]
    fn every_answered_call_decodes() {
        for call in metadata_calls() {
            let decoded = decode(call, &args(&[3, 0x1000, 0x2000, 0, 0, 0]));
            assert!(decoded.is_ok(), "{call}: {decoded:?}");
        }
    }

    #[test]
    fn only_objects_beneath_the_writable_paths_or_the_callers_own_nameless_ones_may_change_red() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let inside = root.join("work/file");
        std::fs::create_dir_all(root.join("work")).unwrap();
        std::fs::write(&inside, "x").unwrap();
        std::fs::write(root.join("outside"), "y").unwrap();
        let writable = [root.join("work")];
        let open = |path: &Path| resolve::open_path(None, path.as_os_str().as_encoded_bytes(), OFlag::empty()).unwrap();
        for own in [false, true] {
            assert_eq!(changeable(&open(&inside), &writable, own), Ok(()));
            assert_eq!(changeable(&open(&root.join("outside")), &writable, own), Err(root.join("outside")));
            assert_eq!(changeable(&open(Path::new("/dev/null")), &writable, own), Err(PathBuf::from("/dev/null")));
        }
        let unlinked = open(&root.join("outside"));
        std::fs::remove_file(root.join("outside")).unwrap();
        assert_eq!(changeable(&unlinked, &writable, true), Ok(()), "the caller's own: nothing names it any more");
        assert!(changeable(&unlinked, &writable, false).is_err(), "reached by a path, it is judged by where it was");
        let (reader, _writer) = std::io::pipe().unwrap();
        let pipe = OwnedFd::from(reader);
        assert_eq!(changeable(&pipe, &writable, true), Ok(()), "the caller's own pipe");
        assert!(changeable(&pipe, &writable, false).is_err(), "a pipe reached by a path is someone else's");
    }
}
