//! The system-call half of the confinement, as seccomp filters compiled in the parent and
//! installed last in the child: calls a confined command has no business with fail with `EPERM`
//! (tracing or reading other processes, mounts, kexec, bpf, keyrings, perf, modules, reboot,
//! namespaces, io_uring, leaving the process group, faking terminal input, inode flags, setuid
//! and setgid bits…); IP sockets the network mode forbids, and Unix datagram sockets, fail with
//! `EACCES`; `connect`, `bind` and the metadata calls Landlock does not mediate go to odek's
//! supervisor (`supervisor`, `metadata`), which decides on a copy of their arguments and does the
//! call itself; and every call newer than the policy ([`REVIEWED_MAX`]) answers "not
//! implemented", so a later kernel's new call is never let through unjudged. Start at
//! [`build_filters`].
//!
//! Filters stack: the kernel runs each and takes the strictest answer (an error wins over a
//! notification), so each action gets its own small filter.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

use crate::policy::NetworkMode;

/// The marker the notifying filter is compiled with, rewritten to `SECCOMP_RET_USER_NOTIF`
/// (the compiler has no such action).
const NOTIFY_MARKER: u32 = 0x0dec;
/// `SECCOMP_RET_TRACE`.
const RET_TRACE: u32 = 0x7ff0_0000;
/// `SECCOMP_RET_USER_NOTIF`.
const RET_USER_NOTIF: u32 = 0x7fc0_0000;

/// The filters to install, in order; the last one, when `notify` is set, asks for a listener.
#[derive(Debug, Clone)]
pub(crate) struct Filters {
    pub programs: Vec<BpfProgram>,
    /// The last program sends `connect`, `bind` and the metadata calls to the supervisor.
    pub notify: bool,
}

/// Who answers `connect`, `bind` and the metadata calls of a confined process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Supervision {
    /// This sandbox's supervisor (the last filter notifies).
    Own,
    /// An outer sandbox's, whose filter already sends them (a process tree has one listener).
    Outer,
    /// None (a kernel without user notifications, or `pidfd_getfd` refused by an outer filter): the
    /// metadata calls go through unjudged, as they would without the sandbox (Landlock cannot see
    /// them), and [`crate::Sandbox::limitation`] says so.
    None,
}

/// Why a filter could not be compiled (a bug of ours, never of the input).
#[derive(Debug, thiserror::Error)]
#[error("seccomp filter: {0}")]
pub struct FilterError(String);

/// The clone flags that make a new namespace.
const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// `MSG_FASTOPEN`: a `sendto`/`sendmsg` that connects.
const MSG_FASTOPEN: u64 = 0x2000_0000;

/// The mode bits that run a file as its owner or group.
const SET_ID_BITS: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];

/// ioctls that change a file's inode, which Landlock does not mediate and which take no more than
/// a read-only descriptor of one's own file (or of a directory, for btrfs): `FS_IOC_SETFLAGS`
/// (and its 32-bit twin) and `FS_IOC_FSSETXATTR` (inode flags, `chattr`), `FS_IOC_ENABLE_VERITY`
/// (makes a file read-only for good), and btrfs's `SNAP_CREATE`, `SUBVOL_CREATE` (each also
/// `_V2`), `SNAP_DESTROY` (also `_V2`) and `SUBVOL_SETFLAGS` (a subvolume made, removed or made
/// read-only in a directory Landlock would not let the command write).
const INODE_IOCTLS: [u64; 11] = [
    0x4008_6602,
    0x4004_6602,
    0x401c_5820,
    0x4080_6685,
    0x5000_9401,
    0x5000_940e,
    0x5000_9417,
    0x5000_9418,
    0x5000_940f,
    0x5000_943f,
    0x4008_941a,
];

/// `openat2`, `fchmodat2`, `setxattrat`, `removexattrat` (the same numbers on every
/// architecture): calls whose arguments a filter cannot judge (`openat2`'s mode sits in memory)
/// or the supervisor does not answer; refused as a kernel without them would, so the C library
/// falls back to a call that is judged.
const UNJUDGED_CALLS: [i64; 4] = [437, 452, 463, 466];

/// The highest call number this policy was reviewed against (`file_setattr`, Linux 6.17; still
/// the highest in 6.18). Every number above it — a call of a later kernel, whatever it does —
/// answers `ENOSYS` ([`unreviewed_calls_unavailable`]), as on a kernel without it, so the C
/// library falls back to an older call. Raising it means reviewing each new call first.
pub(crate) const REVIEWED_MAX: u32 = 469;

/// `open_tree_attr` (Linux 6.15) and `file_setattr` (Linux 6.17; the same numbers on every
/// architecture): a detached copy of a mount, and inode flags (`xflags`: no-dump, no-atime,
/// sync, the project id) set on any path — neither mediated by Landlock.
const NEWER_REFUSED_CALLS: [i64; 2] = [467, 469];

/// Calls refused with `EPERM` whatever their arguments.
fn refused_calls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_bpf,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_perf_event_open,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_setns,
        libc::SYS_unshare,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_userfaultfd,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_setsid,
        libc::SYS_quotactl,
        libc::SYS_syslog,
        libc::SYS_clock_settime,
        libc::SYS_settimeofday,
        libc::SYS_clock_adjtime,
        libc::SYS_adjtimex,
        libc::SYS_vhangup,
        libc::SYS_kcmp,
        libc::SYS_pidfd_getfd,
        libc::SYS_fanotify_init,
        libc::SYS_mount_setattr,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
    ];
    calls.extend(NEWER_REFUSED_CALLS);
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_uselib, libc::SYS_lookup_dcookie]);
    calls
}

fn condition(arg: u8, len: SeccompCmpArgLen, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, FilterError> {
    SeccompCondition::new(arg, len, op, value).map_err(|error| FilterError(error.to_string()))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, FilterError> {
    SeccompRule::new(conditions).map_err(|error| FilterError(error.to_string()))
}

/// One filter: `rules` answer `action`, everything else is allowed.
fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, action: SeccompAction) -> Result<BpfProgram, FilterError> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, target_arch()?)
        .map_err(|error| FilterError(error.to_string()))?;
    BpfProgram::try_from(filter).map_err(|error| FilterError(error.to_string()))
}

fn target_arch() -> Result<TargetArch, FilterError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|error| FilterError(error.to_string()))
}

/// `EPERM` for the refused calls, `clone` with a namespace flag, the terminal-injection and
/// inode-flag ioctls, setuid and setgid bits ([`set_id_rules`]) and `setpgid` — but for `setpgid(0, 0)` (a group of its own) when `own_groups`: an odek
/// confined as a whole puts each command it starts in a group of its own, as outside.
fn refusals(own_groups: bool) -> Result<BpfProgram, FilterError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        refused_calls().into_iter().map(|call| (call, Vec::new())).collect();
    let setpgid_rules = if own_groups {
        let nonzero = |arg| rule(vec![condition(arg, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0)?]);
        vec![nonzero(0)?, nonzero(1)?]
    } else {
        Vec::new()
    };
    rules.insert(libc::SYS_setpgid, setpgid_rules);
    let namespace_rules = NAMESPACE_FLAGS
        .iter()
        .map(|flag| rule(vec![condition(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(*flag), *flag)?]))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, namespace_rules);
    let ioctl_rules = [u64::from(libc::TIOCSTI as u32), u64::from(libc::TIOCLINUX as u32)]
        .into_iter()
        .chain(INODE_IOCTLS)
        .map(|request| rule(vec![condition(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)?]))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    for (call, rules_of_call) in set_id_rules()? {
        rules.insert(call, rules_of_call);
    }
    compile(rules, SeccompAction::Errno(libc::EPERM as u32))
}

/// A mode argument (`arg`) with a setuid or setgid bit; `when`: only together with that condition
/// (`open` makes a file only with `O_CREAT` or `O_TMPFILE`).
fn set_id_mode(arg: u8, when: Option<SeccompCondition>) -> Result<Vec<SeccompRule>, FilterError> {
    SET_ID_BITS
        .iter()
        .map(|bit| {
            let mut conditions = vec![condition(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(*bit), *bit)?];
            conditions.extend(when.clone());
            rule(conditions)
        })
        .collect()
}

/// Setuid and setgid bits, refused everywhere: a file the command marks so would run as its
/// owner for whoever starts it later (as root, for a command of odek run as root). Neither
/// `chmod` nor a new file (`open`, `creat`, `mknod`) may carry them.
fn set_id_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, FilterError> {
    let flag = |arg: u8, value: u64| condition(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(value), value);
    let creating = |flags_arg: u8, mode_arg: u8| -> Result<Vec<SeccompRule>, FilterError> {
        let mut rules = set_id_mode(mode_arg, Some(flag(flags_arg, libc::O_CREAT as u64)?))?;
        rules.extend(set_id_mode(mode_arg, Some(flag(flags_arg, libc::O_TMPFILE as u64)?))?);
        Ok(rules)
    };
    let mut calls = vec![
        (libc::SYS_fchmod, set_id_mode(1, None)?),
        (libc::SYS_fchmodat, set_id_mode(2, None)?),
        (libc::SYS_openat, creating(2, 3)?),
        (libc::SYS_mknodat, set_id_mode(2, None)?),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        (libc::SYS_chmod, set_id_mode(1, None)?),
        (libc::SYS_open, creating(1, 2)?),
        (libc::SYS_creat, set_id_mode(1, None)?),
        (libc::SYS_mknod, set_id_mode(1, None)?),
    ]);
    Ok(calls)
}

/// `ENOSYS` for `clone3`, whose flags sit in memory a filter cannot read (the C library falls
/// back to `clone`, whose flags it can), and for the [`UNJUDGED_CALLS`].
fn unjudged_calls_unavailable() -> Result<BpfProgram, FilterError> {
    let rules = [libc::SYS_clone3].into_iter().chain(UNJUDGED_CALLS).map(|call| (call, Vec::new())).collect();
    compile(rules, SeccompAction::Errno(libc::ENOSYS as u32))
}

/// `EACCES` for the sockets `network` forbids: every IP and packet socket when denied; datagram
/// and raw IP sockets and `MSG_FASTOPEN` sends (a send that connects) when only loopback or an
/// allow-list is open; packet sockets always; and Unix datagram sockets always, made alone or as
/// a pair — each datagram may name any socket path (`sendto`, `sendmsg`), an address in memory
/// no filter can see and no `connect` the supervisor would check (stream and seqpacket sockets,
/// which ignore such an address, stay).
fn socket_refusals(network: NetworkMode) -> Result<BpfProgram, FilterError> {
    let domain = |family: i32| condition(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64);
    let datagram = || condition(1, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(0xf), libc::SOCK_DGRAM as u64);
    let mut socket_rules =
        vec![rule(vec![domain(libc::AF_PACKET)?])?, rule(vec![domain(libc::AF_UNIX)?, datagram()?])?];
    let mut rules = BTreeMap::new();
    match network {
        NetworkMode::Deny => {
            socket_rules.push(rule(vec![domain(libc::AF_INET)?])?);
            socket_rules.push(rule(vec![domain(libc::AF_INET6)?])?);
        }
        NetworkMode::Loopback => {
            for family in [libc::AF_INET, libc::AF_INET6] {
                for kind in [libc::SOCK_DGRAM, libc::SOCK_RAW] {
                    let kind = condition(1, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(0xf), kind as u64);
                    socket_rules.push(rule(vec![domain(family)?, kind?])?);
                }
            }
            let fastopen = |flags_arg| {
                condition(flags_arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(MSG_FASTOPEN), MSG_FASTOPEN)
            };
            rules.insert(libc::SYS_sendto, vec![rule(vec![fastopen(3)?])?]);
            rules.insert(libc::SYS_sendmsg, vec![rule(vec![fastopen(2)?])?]);
            rules.insert(libc::SYS_sendmmsg, vec![rule(vec![fastopen(3)?])?]);
        }
        NetworkMode::Allow => {}
    }
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(libc::SYS_socketpair, vec![rule(vec![domain(libc::AF_UNIX)?, datagram()?])?]);
    compile(rules, SeccompAction::Errno(libc::EACCES as u32))
}

/// `connect`, `bind` and the metadata calls to the supervisor.
fn supervised() -> Result<BpfProgram, FilterError> {
    let calls = [libc::SYS_connect, libc::SYS_bind].into_iter().chain(crate::metadata::metadata_calls());
    let mut program = compile(calls.map(|call| (call, Vec::new())).collect(), SeccompAction::Trace(NOTIFY_MARKER))?;
    for instruction in &mut program {
        if instruction.code == (libc::BPF_RET | libc::BPF_K) as u16 && instruction.k == RET_TRACE | NOTIFY_MARKER {
            instruction.k = RET_USER_NOTIF;
        }
    }
    Ok(program)
}

/// `ENOSYS` for every call number above [`REVIEWED_MAX`]: the calls of kernels newer than the
/// policy, and on x86_64 every x32 call (numbers with bit 30 set, which share the 64-bit
/// architecture tag, so the other filters would not see them under their own numbers). The
/// compiled filters before it already kill a call of another architecture.
fn unreviewed_calls_unavailable() -> BpfProgram {
    let statement = |code: u32, k: u32| sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| sock_filter { code: code as u16, jt, jf, k };
    vec![
        // Load the call number (offset 0 of struct seccomp_data).
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        // Above the reviewed maximum (an unsigned comparison): ENOSYS; else allow.
        jump(libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K, REVIEWED_MAX, 0, 1),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}

/// Every filter for `network`, the notifying one last when this sandbox supervises; under an
/// outer sandbox's supervisor nothing more is sent (its filter already does), and with none at
/// all the metadata calls go through (`connect` and `bind` are left to the socket rules and
/// Landlock). `own_groups`: see [`refusals`].
pub(crate) fn build_filters(
    network: NetworkMode,
    supervision: Supervision,
    own_groups: bool,
) -> Result<Filters, FilterError> {
    let mut programs = vec![
        refusals(own_groups)?,
        unjudged_calls_unavailable()?,
        socket_refusals(network)?,
        unreviewed_calls_unavailable(),
    ];
    if supervision == Supervision::Own {
        programs.push(supervised()?);
    }
    Ok(Filters { programs, notify: supervision == Supervision::Own })
}

/// \[tests\] The architecture tag of `struct seccomp_data` on this machine.
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) const AUDIT_ARCH: u32 = 0xc000_003e;
/// \[tests\] The architecture tag of `struct seccomp_data` on this machine.
#[cfg(all(test, target_arch = "aarch64"))]
pub(crate) const AUDIT_ARCH: u32 = 0xc000_00b7;

#[cfg(test)]
mod tests {
    use super::*;

    /// `struct seccomp_data` as the kernel lays it out: number, architecture, instruction pointer,
    /// six arguments.
    fn seccomp_data(call: u32, args: [u64; 6]) -> Vec<u8> {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&call.to_ne_bytes());
        data.extend_from_slice(&AUDIT_ARCH.to_ne_bytes());
        data.extend_from_slice(&0_u64.to_ne_bytes());
        for arg in args {
            data.extend_from_slice(&arg.to_ne_bytes());
        }
        data
    }

    /// Runs one classic BPF program over `data` (the instructions the compiler and this module
    /// emit; anything else fails the test).
    fn run(program: &[sock_filter], data: &[u8]) -> u32 {
        let word = |offset: u32| {
            let at = offset as usize;
            u32::from_ne_bytes(data[at..at + 4].try_into().unwrap())
        };
        let (mut accumulator, mut pc) = (0_u32, 0_usize);
        loop {
            let instruction = &program[pc];
            let code = u32::from(instruction.code);
            let k = instruction.k;
            pc += 1;
            match code {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => accumulator = word(k),
                c if c == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => accumulator &= k,
                c if c == libc::BPF_RET | libc::BPF_K => return k,
                c if c == libc::BPF_JMP | libc::BPF_JA => pc += k as usize,
                c if c & 0x07 == libc::BPF_JMP => {
                    let taken = match c & 0xf0 {
                        op if op == libc::BPF_JEQ => accumulator == k,
                        op if op == libc::BPF_JGT => accumulator > k,
                        op if op == libc::BPF_JGE => accumulator >= k,
                        op if op == libc::BPF_JSET => accumulator & k != 0,
                        op => panic!("unexpected jump {op:#x}"),
                    };
                    pc += usize::from(if taken { instruction.jt } else { instruction.jf });
                }
                other => panic!("unexpected instruction {other:#x}"),
            }
        }
    }

    /// What the kernel answers for one call under `filters`: every program runs and the strictest
    /// action wins (the lowest as a signed number); between equal actions, the last installed.
    fn verdict(filters: &Filters, call: i64, args: [u64; 6]) -> u32 {
        let data = seccomp_data(call as u32, args);
        let action = |value: u32| (value & 0xffff_0000) as i32;
        let mut answer = libc::SECCOMP_RET_ALLOW;
        for program in filters.programs.iter().rev() {
            let value = run(program, &data);
            if action(value) < action(answer) {
                answer = value;
            }
        }
        answer
    }

    fn errno(value: i32) -> u32 {
        libc::SECCOMP_RET_ERRNO | value as u32
    }

    #[test]
    fn every_mode_compiles_and_the_notifying_filter_notifies() {
        for network in [NetworkMode::Deny, NetworkMode::Loopback, NetworkMode::Allow] {
            let base = build_filters(network, Supervision::Outer, false).unwrap();
            assert!(!base.notify);
            let own = build_filters(network, Supervision::Own, false).unwrap();
            assert_eq!(own.programs.len(), base.programs.len() + 1);
            assert!(own.notify);
            let last = own.programs.last().unwrap();
            assert!(last.iter().any(|instruction| instruction.k == RET_USER_NOTIF), "{network:?}");
            assert!(!last.iter().any(|instruction| instruction.k == RET_TRACE | NOTIFY_MARKER));
            let none = build_filters(network, Supervision::None, false).unwrap();
            assert!(!none.notify);
            assert_eq!(none.programs.len(), base.programs.len());
        }
    }

    #[test]
    fn file_setattr_open_tree_attr_and_every_newer_call_are_refused_red() {
        let filters = build_filters(NetworkMode::Deny, Supervision::Own, false).unwrap();
        let args = [3, 0x1000, 0x2000, 24, 0, 0];
        assert_eq!(verdict(&filters, 469, args), errno(libc::EPERM), "file_setattr");
        assert_eq!(verdict(&filters, 467, args), errno(libc::EPERM), "open_tree_attr");
        assert_eq!(verdict(&filters, 468, args), libc::SECCOMP_RET_ALLOW, "file_getattr only reads");
        for call in [470, 471, 512, 1000, 0x4000_0001, u32::MAX as i64] {
            assert_eq!(verdict(&filters, call, args), errno(libc::ENOSYS), "{call}: newer than the review");
        }
        assert_eq!(verdict(&filters, libc::SYS_getpid, args), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&filters, libc::SYS_openat2, args), errno(libc::ENOSYS));
        assert_eq!(verdict(&filters, libc::SYS_fchmodat, [3, 0x1000, 0o644, 0, 0, 0]), RET_USER_NOTIF);
    }

    #[test]
    fn verity_and_btrfs_subvolume_ioctls_are_refused_red() {
        let filters = build_filters(NetworkMode::Deny, Supervision::Own, false).unwrap();
        let ioctl = |request: u64| verdict(&filters, libc::SYS_ioctl, [3, request, 0x1000, 0, 0, 0]);
        for request in [0x4080_6685, 0x5000_9401, 0x5000_940e, 0x5000_9417, 0x5000_9418, 0x4008_941a] {
            assert_eq!(ioctl(request), errno(libc::EPERM), "{request:#x}");
        }
        assert_eq!(ioctl(0x8008_6601), libc::SECCOMP_RET_ALLOW, "FS_IOC_GETFLAGS reads");
        assert_eq!(ioctl(u64::from(libc::FIONREAD as u32)), libc::SECCOMP_RET_ALLOW);
    }

    #[test]
    fn without_a_supervisor_metadata_calls_go_through_but_setuid_bits_stay_refused_red() {
        let filters = build_filters(NetworkMode::Deny, Supervision::None, false).unwrap();
        assert_eq!(verdict(&filters, libc::SYS_fchmodat, [3, 0x1000, 0o644, 0, 0, 0]), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&filters, libc::SYS_utimensat, [3, 0x1000, 0, 0, 0, 0]), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&filters, libc::SYS_fchmodat, [3, 0x1000, 0o4755, 0, 0, 0]), errno(libc::EPERM));
        assert_eq!(verdict(&filters, libc::SYS_ioctl, [3, 0x4008_6602, 0, 0, 0, 0]), errno(libc::EPERM), "chattr");
    }
}
