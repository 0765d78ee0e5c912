//! The file metadata calls Landlock does not mediate — `chmod`, `chown`, setting times, setting
//! and removing extended attributes — answered by the supervisor, so that a confined command
//! changes metadata only where it may write: beneath the writable paths (the workspace,
//! `$TMPDIR`, `writable`; never `~/.odek`, which they are split around), the same rule Landlock
//! applies to contents. A change to a file nothing names any more (unlinked, a `memfd`) or to a
//! pipe or socket is no one else's business and goes through. Setuid and setgid bits never get
//! here: a seccomp filter refuses them everywhere (`filter`).
//!
//! The race a supervisor must not lose: it reads a path from the caller's memory, and another
//! thread of the caller can rewrite that memory, swap a symlink or reuse a descriptor number
//! between the check and the call. So the supervisor never lets the kernel redo the call: it
//! reads the path once into a copy, opens what it names itself (`O_PATH`, following symlinks as
//! the call would), judges *that open object* by the path the kernel gives for it, and makes the
//! change on the same object (through its descriptor), from a thread without capabilities, so
//! the kernel's own permission checks are the caller's. Whatever the caller changes meanwhile,
//! the object judged is the object changed. Start at [`handle`].

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, SFlag, fstat};

use crate::notify;
use crate::supervisor::{Caller, Denial, is_writable, real_path};

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

/// `/proc/self/…`, `/proc/thread-self/…`, `/dev/fd/…` and `/dev/std{in,out,err}` as the caller
/// means them: the supervisor resolving them itself would reach its own. (Only a convenience —
/// the C library's `lchmod` goes through `/proc/self/fd` — never a guard: whatever a path
/// leads to is judged as the object it is.)
fn in_callers_terms(path: &[u8], tid: u32) -> Vec<u8> {
    let own = format!("/proc/{tid}");
    let replacements: [(&[u8], String); 6] = [
        (b"/proc/self", own.clone()),
        (b"/proc/thread-self", own.clone()),
        (b"/dev/fd", format!("{own}/fd")),
        (b"/dev/stdin", format!("{own}/fd/0")),
        (b"/dev/stdout", format!("{own}/fd/1")),
        (b"/dev/stderr", format!("{own}/fd/2")),
    ];
    for (prefix, replacement) in replacements {
        if let Some(rest) = path.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with(b"/"))
        {
            let mut rewritten = replacement.into_bytes();
            rewritten.extend_from_slice(rest);
            return rewritten;
        }
    }
    path.to_vec()
}

/// Whether the object `object` holds may change: it lies beneath a writable path, or nothing
/// names it (unlinked, a `memfd`, a pipe or a socket). `Err` with the path it lies at.
fn changeable(object: &OwnedFd, writable: &[PathBuf]) -> Result<(), PathBuf> {
    let unknown = || PathBuf::from("(unknown)");
    let status = fstat(object).map_err(|_| unknown())?;
    if status.st_nlink == 0 {
        return Ok(());
    }
    let real = real_path(object).ok_or_else(unknown)?;
    if !real.is_absolute() || is_writable(&real, writable) { Ok(()) } else { Err(real) }
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
    // Everything read from the caller and its descriptors taken while it may still be reached,
    // then on as the caller: the path opened and the change made without capabilities.
    let (object, by_path, shown) = match target {
        Target::Fd(fd) => {
            caller.still_pending()?;
            let taken = caller.take_fd(fd)?;
            caller.act_as_caller()?;
            (taken, false, format!("fd {fd}"))
        }
        Target::Path { dir, path, follow, empty_is_dir } => {
            let given = caller.read_string(path, libc::PATH_MAX as usize, libc::ENAMETOOLONG)?;
            let named = in_callers_terms(&given, caller.tid());
            if named.is_empty() && !empty_is_dir {
                return Err(libc::ENOENT);
            }
            let relative = !named.starts_with(b"/");
            let cwd = if relative && dir.is_none() { Some(caller.cwd()?) } else { None };
            caller.still_pending()?;
            let base = match dir {
                Some(fd) if relative => Some(caller.take_fd(fd)?),
                _ => cwd,
            };
            caller.act_as_caller()?;
            let object = match base {
                Some(base) if named.is_empty() => base,
                base => open_object(base.as_ref(), &named, follow)?,
            };
            (object, true, String::from_utf8_lossy(&given).into_owned())
        }
    };
    if let Err(real) = changeable(&object, writable) {
        record(Denial {
            operation: change.operation(),
            target: shown,
            reason: format!("{} is outside the writable paths", real.display()),
        });
        return Err(libc::EACCES);
    }
    perform(&object, copied, by_path).map(|()| 0)
}

/// Opens what `path` names (relative to `base`, else the supervisor's own root, which is the
/// caller's) without opening the file itself (`O_PATH`: no device is opened, no FIFO blocks).
fn open_object(base: Option<&OwnedFd>, path: &[u8], follow: bool) -> Result<OwnedFd, i32> {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(path));
    let mut flags = OFlag::O_PATH | OFlag::O_CLOEXEC;
    if !follow {
        flags |= OFlag::O_NOFOLLOW;
    }
    let opened = match base {
        Some(base) => openat(base, path, flags, Mode::empty()),
        None => nix::fcntl::open(path, flags, Mode::empty()),
    };
    opened.map_err(|errno| errno as i32)
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
    fn the_callers_own_proc_entries_are_its_own() {
        assert_eq!(in_callers_terms(b"/proc/self/fd/3", 42), b"/proc/42/fd/3");
        assert_eq!(in_callers_terms(b"/proc/thread-self/cwd", 42), b"/proc/42/cwd");
        assert_eq!(in_callers_terms(b"/dev/fd/5", 42), b"/proc/42/fd/5");
        assert_eq!(in_callers_terms(b"/dev/stdout", 42), b"/proc/42/fd/1");
        assert_eq!(in_callers_terms(b"/proc/selfish", 42), b"/proc/selfish");
        assert_eq!(in_callers_terms(b"notes.txt", 42), b"notes.txt");
    }

    #[test]
    fn only_objects_beneath_the_writable_paths_or_nameless_ones_may_change_red() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let inside = root.join("work/file");
        std::fs::create_dir_all(root.join("work")).unwrap();
        std::fs::write(&inside, "x").unwrap();
        std::fs::write(root.join("outside"), "y").unwrap();
        let writable = [root.join("work")];
        let open = |path: &Path| open_object(None, path.as_os_str().as_encoded_bytes(), true).unwrap();
        assert_eq!(changeable(&open(&inside), &writable), Ok(()));
        assert_eq!(changeable(&open(&root.join("outside")), &writable), Err(root.join("outside")));
        let unlinked = open(&root.join("outside"));
        std::fs::remove_file(root.join("outside")).unwrap();
        assert_eq!(changeable(&unlinked, &writable), Ok(()), "nothing names it any more");
        let (reader, _writer) = std::io::pipe().unwrap();
        assert_eq!(changeable(&OwnedFd::from(reader), &writable), Ok(()));
        assert_eq!(changeable(&open(Path::new("/dev/null")), &writable), Err(PathBuf::from("/dev/null")));
    }
}
