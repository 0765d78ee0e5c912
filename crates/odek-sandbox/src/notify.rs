//! The system calls the supervisor is made of, each behind a small safe function: receiving a
//! seccomp notification, checking it is still pending, answering it, reading the caller's memory,
//! taking a duplicate of the caller's file descriptor, and `connect`/`bind` on raw addresses.
//! No decisions here (those are `supervisor`'s). Start at [`receive`].

#![allow(unsafe_code)] // ioctl, process_vm_readv, pidfd and socket calls on raw buffers; each block says why it is sound.

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

/// Reads `len` bytes at `address` in process `pid` into a new buffer (at most 256 bytes: a
/// socket address is never longer).
pub(crate) fn read_memory(pid: u32, address: u64, len: usize) -> io::Result<Vec<u8>> {
    let len = len.min(256);
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

/// A pidfd for `pid`.
pub(crate) fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open with integer arguments; a non-negative result is a new fd we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(last_error());
    }
    // SAFETY: `fd` was just returned by the kernel and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A duplicate of the caller's descriptor `target_fd`: the same open socket.
pub(crate) fn take_fd(pidfd: &OwnedFd, target_fd: u64) -> io::Result<OwnedFd> {
    let target = i32::try_from(target_fd).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
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
