//! What the child does between `fork` and `exec` to confine itself, in this order: join its
//! `pids` cgroup, set its resource limits, drop every capability (when it has any: odek runs as
//! root), set `no_new_privs`, enforce the Landlock ruleset, install the seccomp filters (the
//! last one handing back a listener), and pass the listener to odek over a socket. Start at
//! [`ChildPlan::confine_self`].
//!
//! This runs in a forked copy of a multithreaded process: everything is prepared by the parent,
//! and nothing here allocates, locks or logs — only system calls on ready-made data. Every
//! failure aborts the spawn with the OS error (the command never runs unconfined).

#![allow(unsafe_code)] // Raw system calls between fork and exec; each block says why it is sound.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use landlock::RulesetCreated;
use seccompiler::BpfProgram;

/// `_LINUX_CAPABILITY_VERSION_3`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// `PR_CAP_AMBIENT_CLEAR_ALL`.
const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Everything the child needs, prepared by the parent.
pub(crate) struct ChildPlan {
    /// `cgroup.procs` of the command's cgroup, to write `0` into.
    pub cgroup_procs: Option<OwnedFd>,
    /// `(resource, limit)` pairs for `setrlimit`.
    pub rlimits: Vec<(libc::__rlimit_resource_t, libc::rlim_t)>,
    /// The highest capability number the kernel knows (`/proc/sys/kernel/cap_last_cap`).
    pub cap_last: u32,
    pub ruleset: Option<RulesetCreated>,
    pub filters: Vec<BpfProgram>,
    /// The last filter asks for a listener, sent over `listener_channel`.
    pub notify: bool,
    /// The child's end of the socket pair the listener goes back on.
    pub listener_channel: Option<OwnedFd>,
}

impl ChildPlan {
    /// Confines the calling process (the forked child, before `exec`). Consumes the one-shot
    /// parts; a second call fails.
    pub(crate) fn confine_self(&mut self) -> io::Result<()> {
        if let Some(procs) = &self.cgroup_procs {
            write_all(procs.as_raw_fd(), b"0\n")?;
        }
        for (resource, limit) in &self.rlimits {
            let value = libc::rlimit { rlim_cur: *limit, rlim_max: *limit };
            // SAFETY: setrlimit reads a valid, initialised struct.
            check(unsafe { libc::setrlimit(*resource, &value) })?;
        }
        drop_capabilities(self.cap_last)?;
        // SAFETY: prctl with integer arguments only.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) })?;
        let ruleset = self.ruleset.take().ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        ruleset.restrict_self().map_err(|_| io::Error::last_os_error())?;
        let count = self.filters.len();
        for (index, program) in self.filters.iter().enumerate() {
            let last = index + 1 == count;
            if last && self.notify {
                let listener = install_filter(program, true)?;
                let channel =
                    self.listener_channel.as_ref().ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
                let sent = send_fd(channel.as_raw_fd(), listener);
                // SAFETY: closing the listener fd this function owns; odek holds its own copy now.
                unsafe { libc::close(listener) };
                sent?;
            } else {
                install_filter(program, false)?;
            }
        }
        Ok(())
    }
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn write_all(fd: libc::c_int, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: writes from a live slice of the given length.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        bytes = &bytes[written as usize..];
    }
    Ok(())
}

/// Whether the calling thread holds any capability (effective, permitted or inheritable).
fn has_capabilities() -> io::Result<bool> {
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capget writes two CapData structs for version 3, which `data` holds.
    check(unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } as libc::c_int)?;
    Ok(data.iter().any(|part| part.effective != 0 || part.permitted != 0 || part.inheritable != 0))
}

/// Empties the effective, permitted and inheritable sets of the calling thread (credentials are
/// per thread).
fn clear_capability_sets() -> io::Result<()> {
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let empty = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capset reads two CapData structs for version 3.
    check(unsafe { libc::syscall(libc::SYS_capset, &mut header, empty.as_ptr()) } as libc::c_int)
}

/// \[supervisor\] Leaves the calling thread — a worker of the supervisor, which acts for confined
/// callers that have none — without capabilities, so the kernel judges what it does as it would
/// the callers' (odek run as root may `chown` anything; its confined commands may not). The
/// thread must be one of the supervisor's own, serving only such calls: nothing gives them back.
pub(crate) fn drop_thread_capabilities() -> io::Result<()> {
    if has_capabilities()? { clear_capability_sets() } else { Ok(()) }
}

/// Empties the bounding and ambient sets, then the effective, permitted and inheritable sets.
/// A process without capabilities (odek not run as root) has nothing to drop: the calls that
/// need `CAP_SETPCAP` are skipped.
fn drop_capabilities(cap_last: u32) -> io::Result<()> {
    if !has_capabilities()? {
        return Ok(());
    }
    for capability in 0..=cap_last {
        // SAFETY: prctl with integer arguments only. EINVAL (a number this kernel lacks) is fine.
        let result = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) };
        if result < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: prctl with integer arguments only (kernels without ambient sets answer EINVAL).
    unsafe { libc::prctl(libc::PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    clear_capability_sets()
}

/// Installs one filter; with `listener`, returns the listener fd (asking the kernel to keep a
/// notified call waiting through non-fatal signals where it can).
pub(crate) fn install_filter(program: &BpfProgram, listener: bool) -> io::Result<libc::c_int> {
    let fprog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        // The compiler's instruction layout is the kernel's (code, jt, jf, k).
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    let attempts: &[libc::c_ulong] = if listener {
        &[
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
        ]
    } else {
        &[0]
    };
    let mut last = io::Error::from_raw_os_error(libc::EINVAL);
    for flags in attempts {
        // SAFETY: seccomp reads the program through `fprog`, which borrows `program` for the call.
        let result =
            unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER as libc::c_ulong, *flags, &fprog) };
        if result >= 0 {
            return Ok(result as libc::c_int);
        }
        last = io::Error::last_os_error();
        if last.raw_os_error() != Some(libc::EINVAL) {
            break;
        }
    }
    Err(last)
}

/// Sends `fd` as `SCM_RIGHTS` with one data byte over `channel`, with stack buffers only.
fn send_fd(channel: libc::c_int, fd: libc::c_int) -> io::Result<()> {
    // Space for one cmsghdr carrying one int, aligned as the kernel expects.
    #[repr(C, align(8))]
    struct Control([u8; 64]);
    let mut control = Control([0; 64]);
    let mut byte = [0_u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    // SAFETY: msghdr is plain data; every pointer set below outlives the sendmsg call.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.0.as_mut_ptr().cast();
    message.msg_controllen = space as _;
    // SAFETY: the control buffer is large enough for one header with one int (`space` ≤ 64), so
    // CMSG_FIRSTHDR is non-null and CMSG_DATA points inside it.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>(), fd);
    }
    loop {
        // SAFETY: sendmsg reads the message built above.
        let sent = unsafe { libc::sendmsg(channel, &message, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}
