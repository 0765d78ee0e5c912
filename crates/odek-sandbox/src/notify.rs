//! The system calls the supervisor is made of, each behind a small safe function: receiving a
//! seccomp notification, checking it is still pending, answering it, reading the caller's memory
//! (bounded), taking a duplicate of the caller's file descriptor, `connect`/`bind` on raw
//! addresses, and the metadata calls on an object the supervisor resolved (`chmod`, `chown`,
//! times, extended attributes). No decisions here (those are `supervisor`'s and `metadata`'s).
//! Start at [`receive`].

#![allow(unsafe_code)] // ioctl, process_vm_readv, pidfd and socket calls on raw buffers; each block says why it is sound.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// One notified call: which call, by whom, with which arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Notification {
    pub id: u64,
    pub pid: u32,
    pub syscall: i64,
    pub args: [u64; 6],
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// Waits for the next notification on `listener` (blocking; the caller polls first).
pub(crate) fn receive(listener: RawFd) -> io::Result<Notification> {
    // SAFETY: seccomp_notif is plain data; the kernel requires it zeroed before RECV.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: RECV writes one seccomp_notif into `notif`.
    let result = unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut notif) };
    if result < 0 {
        return Err(last_error());
    }
    Ok(Notification { id: notif.id, pid: notif.pid, syscall: i64::from(notif.data.nr), args: notif.data.args })
}

/// Whether the call `id` still waits for its answer (the caller was not killed, the pid not
/// reused): checked after reading the caller's memory and opening its pidfd.
pub(crate) fn still_pending(listener: RawFd, id: u64) -> bool {
    // SAFETY: ID_VALID reads one u64.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 }
}

/// Answers the call `id`: `Ok(value)` as its return value, `Err(errno)` as its error. An answer
/// to a call that is gone is ignored (`ENOENT`).
pub(crate) fn answer(listener: RawFd, id: u64, outcome: Result<i64, i32>) {
    let (val, error) = match outcome {
        Ok(value) => (value, 0),
        Err(errno) => (0, -errno),
    };
    let mut response = libc::seccomp_notif_resp { id, val, error, flags: 0 };
    // SAFETY: SEND reads one seccomp_notif_resp.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response) };
}

/// The most the supervisor reads from a caller at once: an extended attribute's value (the
/// kernel's `XATTR_SIZE_MAX`); a socket address or a path is far shorter.
pub(crate) const MAX_READ: usize = 64 * 1024;

/// Reads up to `len` bytes (at most [`MAX_READ`]) at `address` in thread `pid` into a new
/// buffer; fewer when the range ends in memory the caller cannot read.
pub(crate) fn read_memory(pid: u32, address: u64, len: usize) -> io::Result<Vec<u8>> {
    let len = len.min(MAX_READ);
    let mut buffer = vec![0_u8; len];
    if len == 0 {
        return Ok(buffer);
    }
    let local = libc::iovec { iov_base: buffer.as_mut_ptr().cast(), iov_len: len };
    let remote = libc::iovec { iov_base: address as usize as *mut libc::c_void, iov_len: len };
    // SAFETY: the kernel writes at most `len` bytes into `buffer` (local) and only reads the
    // other process's memory (remote); an invalid remote address fails with EFAULT.
    let read = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if read < 0 {
        return Err(last_error());
    }
    buffer.truncate(read as usize);
    Ok(buffer)
}

/// Reads the NUL-terminated string at `address` in thread `pid`, page by page (the string may
/// end just before memory the caller cannot read): its bytes without the NUL. `EFAULT` when
/// nothing is readable there, `too_long` when no NUL comes within `max` bytes (the NUL counted).
pub(crate) fn read_c_string(pid: u32, address: u64, max: usize, too_long: i32) -> Result<Vec<u8>, i32> {
    const PAGE: u64 = 4096;
    let mut bytes = Vec::new();
    let mut at = address;
    while bytes.len() < max {
        let to_page_end = (PAGE - at % PAGE) as usize;
        let chunk = read_memory(pid, at, to_page_end.min(max - bytes.len())).map_err(|_| libc::EFAULT)?;
        if chunk.is_empty() {
            return Err(libc::EFAULT);
        }
        if let Some(end) = chunk.iter().position(|byte| *byte == 0) {
            bytes.extend_from_slice(&chunk[..end]);
            return Ok(bytes);
        }
        bytes.extend_from_slice(&chunk);
        at = at.checked_add(chunk.len() as u64).ok_or(libc::EFAULT)?;
    }
    Err(too_long)
}

/// A pidfd for the thread `tid` that made a notified call (a notification names the thread, not
/// its process): the thread itself where the kernel can open one for a thread (`PIDFD_THREAD`,
/// Linux 6.9), else its thread group — whose descriptor table the thread shares unless it was
/// cloned without `CLONE_FILES`, which no threading library does.
pub(crate) fn pidfd_of_thread(tid: u32) -> io::Result<OwnedFd> {
    match pidfd_open(tid, libc::PIDFD_THREAD) {
        Err(error) if error.raw_os_error() == Some(libc::EINVAL) => pidfd_open(thread_group(tid)?, 0),
        opened => opened,
    }
}

fn pidfd_open(pid: u32, flags: libc::c_uint) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open with integer arguments; a non-negative result is a new fd we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, flags) };
    if fd < 0 {
        return Err(last_error());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// The process (thread group) of thread `tid`, from `/proc/<tid>/status`. The caller checks
/// the notification is still pending afterwards: the thread was alive throughout, so its group
/// cannot have been another.
pub(crate) fn thread_group(tid: u32) -> io::Result<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|value| value.trim().parse().ok())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))
}

/// A duplicate of the caller's descriptor `target_fd`: the same open socket.
pub(crate) fn take_fd(pidfd: &OwnedFd, target: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_getfd with integer arguments; a non-negative result is a new fd we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), target, 0) };
    if fd < 0 {
        return Err(last_error());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `connect(socket, address)`: `Ok(())` or the errno (`EINPROGRESS` for a non-blocking socket
/// is an errno like any other: the caller gets it as its own call's answer).
pub(crate) fn connect_raw(socket: &OwnedFd, address: &[u8]) -> Result<(), i32> {
    // SAFETY: connect reads `address.len()` bytes of a live buffer.
    let result =
        unsafe { libc::connect(socket.as_raw_fd(), address.as_ptr().cast(), address.len() as libc::socklen_t) };
    if result < 0 { Err(errno()) } else { Ok(()) }
}

/// `bind(socket, address)`: `Ok(())` or the errno.
pub(crate) fn bind_raw(socket: &OwnedFd, address: &[u8]) -> Result<(), i32> {
    // SAFETY: bind reads `address.len()` bytes of a live buffer.
    let result = unsafe { libc::bind(socket.as_raw_fd(), address.as_ptr().cast(), address.len() as libc::socklen_t) };
    if result < 0 { Err(errno()) } else { Ok(()) }
}

/// `shutdown(socket, SHUT_RDWR)`: aborts a connect under way in another thread.
pub(crate) fn shutdown(socket: RawFd) {
    // SAFETY: shutdown with integer arguments; a stale fd fails harmlessly.
    unsafe { libc::shutdown(socket, libc::SHUT_RDWR) };
}

/// A plain C struct of integers (every bit pattern is a value), which [`read_plain`] may build
/// from a caller's bytes.
pub(crate) trait Plain: Copy {}
impl Plain for [libc::timespec; 2] {}
impl Plain for [libc::timeval; 2] {}
impl Plain for libc::utimbuf {}

/// Reads one `T` at `address` in thread `pid`: `EFAULT` unless all of it is readable.
pub(crate) fn read_plain<T: Plain>(pid: u32, address: u64) -> Result<T, i32> {
    let size = std::mem::size_of::<T>();
    let bytes = read_memory(pid, address, size).map_err(|_| libc::EFAULT)?;
    if bytes.len() != size {
        return Err(libc::EFAULT);
    }
    // SAFETY: `bytes` holds exactly `size_of::<T>()` bytes, and `T: Plain` is made of integers
    // only, so any bytes are a valid `T`; the read is unaligned-safe.
    Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

/// `/proc/thread-self/fd/<fd>`: a name for exactly the object `fd` holds (the kernel follows it
/// to that object, not to whatever now has its path).
pub(crate) fn through_fd(fd: &OwnedFd) -> std::ffi::CString {
    let path = format!("/proc/thread-self/fd/{}", fd.as_raw_fd());
    // A decimal number holds no NUL.
    std::ffi::CString::new(path).unwrap_or_default()
}

fn outcome(result: libc::c_int) -> Result<(), i32> {
    if result < 0 { Err(errno()) } else { Ok(()) }
}

/// `fchmod(fd, mode)`: on the caller's own open file.
pub(crate) fn fchmod(fd: &OwnedFd, mode: u32) -> Result<(), i32> {
    // SAFETY: fchmod with integer arguments.
    outcome(unsafe { libc::fchmod(fd.as_raw_fd(), mode) })
}

/// `chmod` of the object `object` holds (opened with `O_PATH`, never a symlink).
pub(crate) fn chmod_object(object: &OwnedFd, mode: u32) -> Result<(), i32> {
    let path = through_fd(object);
    // SAFETY: chmod reads a live C string.
    outcome(unsafe { libc::chmod(path.as_ptr(), mode) })
}

/// `fchownat(fd, "", uid, gid, AT_EMPTY_PATH)`: the object `fd` holds, whatever it is (a symlink
/// included); `u32::MAX` leaves that id as it is.
pub(crate) fn chown_object(fd: &OwnedFd, uid: u32, gid: u32) -> Result<(), i32> {
    // SAFETY: fchownat reads an empty C string.
    outcome(unsafe { libc::fchownat(fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH) })
}

/// `fchown(fd, uid, gid)`: on the caller's own open file.
pub(crate) fn fchown(fd: &OwnedFd, uid: u32, gid: u32) -> Result<(), i32> {
    // SAFETY: fchown with integer arguments.
    outcome(unsafe { libc::fchown(fd.as_raw_fd(), uid, gid) })
}

/// Sets the times of the object `fd` holds: with `by_path`, as a path call would
/// (`utimensat(fd, "", times, AT_EMPTY_PATH)`); without, as `futimens(fd, times)` on the caller's
/// own open file. `None`: both to now.
pub(crate) fn set_times(fd: &OwnedFd, times: Option<&[libc::timespec; 2]>, by_path: bool) -> Result<(), i32> {
    let times = times.map_or(std::ptr::null(), |times| times.as_ptr());
    // SAFETY: utimensat reads an empty C string, futimens nothing but the two timespecs (or none),
    // which outlive the call. (The C library's utimensat refuses a null path: futimens is that.)
    outcome(unsafe {
        if by_path {
            libc::utimensat(fd.as_raw_fd(), c"".as_ptr(), times, libc::AT_EMPTY_PATH)
        } else {
            libc::futimens(fd.as_raw_fd(), times)
        }
    })
}

/// Sets the extended attribute `name` of the object `fd` holds: with `by_path` through
/// [`through_fd`] (never a symlink), else `fsetxattr` on the caller's own open file.
pub(crate) fn set_xattr(fd: &OwnedFd, name: &CStr, value: &[u8], flags: i32, by_path: bool) -> Result<(), i32> {
    let value_ptr = value.as_ptr().cast();
    // SAFETY: (f)setxattr reads a C string and `value.len()` bytes of a live buffer.
    outcome(unsafe {
        if by_path {
            libc::setxattr(through_fd(fd).as_ptr(), name.as_ptr(), value_ptr, value.len(), flags)
        } else {
            libc::fsetxattr(fd.as_raw_fd(), name.as_ptr(), value_ptr, value.len(), flags)
        }
    })
}

/// Removes the extended attribute `name` of the object `fd` holds (as [`set_xattr`]).
pub(crate) fn remove_xattr(fd: &OwnedFd, name: &CStr, by_path: bool) -> Result<(), i32> {
    // SAFETY: (f)removexattr reads live C strings.
    outcome(unsafe {
        if by_path {
            libc::removexattr(through_fd(fd).as_ptr(), name.as_ptr())
        } else {
            libc::fremovexattr(fd.as_raw_fd(), name.as_ptr())
        }
    })
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Whether this kernel has everything the supervisor needs: the user-notification action and
/// `pidfd_getfd`.
pub(crate) fn supervisor_supported() -> bool {
    let action = libc::SECCOMP_RET_USER_NOTIF;
    // SAFETY: GET_ACTION_AVAIL reads one u32.
    let notif = unsafe {
        libc::syscall(libc::SYS_seccomp, libc::SECCOMP_GET_ACTION_AVAIL as libc::c_ulong, 0 as libc::c_ulong, &action)
    } == 0;
    notif && pidfd_getfd_errno() == libc::EBADF
}

/// What `pidfd_getfd` on fd -1 answers: `EBADF` when the call exists, `ENOSYS` when it does not,
/// `EPERM` when a seccomp filter refuses it (inside an odek sandbox, which refuses it).
pub(crate) fn pidfd_getfd_errno() -> i32 {
    // SAFETY: pidfd_getfd on fd -1 fails at once without touching anything.
    let result = unsafe { libc::syscall(libc::SYS_pidfd_getfd, -1, 0, 0) };
    if result < 0 { errno() } else { 0 }
}

/// The Landlock ABI version of this kernel; `0` without Landlock.
pub(crate) fn landlock_abi() -> u32 {
    /// `LANDLOCK_CREATE_RULESET_VERSION`.
    const VERSION: libc::c_ulong = 1;
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns a number.
    let version = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0, VERSION) };
    u32::try_from(version).unwrap_or(0)
}
