//! The system-call half of the confinement, as seccomp filters compiled in the parent and
//! installed last in the child: calls a confined command has no business with fail with `EPERM`
//! (tracing or reading other processes, mounts, kexec, bpf, keyrings, perf, modules, reboot,
//! namespaces, io_uring, leaving the process group, faking terminal input, inode flags, setuid
//! and setgid bits…); IP sockets the network mode forbids, and Unix datagram sockets, fail with
//! `EACCES`; `connect`, `bind` and the metadata calls Landlock does not mediate go to odek's
//! supervisor (`supervisor`, `metadata`), which decides on a copy of their arguments and does the
//! call itself. Start at [`build_filters`].
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
    /// None (a kernel without user notifications): the metadata calls are refused outright.
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

/// `FS_IOC_SETFLAGS` (and its 32-bit twin) and `FS_IOC_FSSETXATTR`: inode flags (`chattr`),
/// which take no more than a read-only descriptor of one's own file.
const INODE_FLAG_IOCTLS: [u64; 3] = [0x4008_6602, 0x4004_6602, 0x401c_5820];

/// `openat2`, `fchmodat2`, `setxattrat`, `removexattrat` (the same numbers on every
/// architecture): calls whose arguments a filter cannot judge (`openat2`'s mode sits in memory)
/// or the supervisor does not answer; refused as a kernel without them would, so the C library
/// falls back to a call that is judged.
const UNJUDGED_CALLS: [i64; 4] = [437, 452, 463, 466];

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
        .chain(INODE_FLAG_IOCTLS)
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

/// \[x86_64\] `ENOSYS` for every x32 call (numbers with bit 30 set): they share the 64-bit
/// architecture tag, so the filters above would not see them under their own numbers.
fn x32_refusal() -> BpfProgram {
    const X32_BIT: u32 = 0x4000_0000;
    let statement = |code: u32, k: u32| sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| sock_filter { code: code as u16, jt, jf, k };
    vec![
        // Load the call number (offset 0 of struct seccomp_data).
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        // Below the x32 range: allow; at or above it: ENOSYS.
        jump(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, X32_BIT, 0, 1),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}

/// `EACCES` for the metadata calls, where no supervisor can judge them.
fn metadata_refusals() -> Result<BpfProgram, FilterError> {
    let rules = crate::metadata::metadata_calls().into_iter().map(|call| (call, Vec::new())).collect();
    compile(rules, SeccompAction::Errno(libc::EACCES as u32))
}

/// Every filter for `network`, the notifying one last when this sandbox supervises; under an
/// outer sandbox's supervisor nothing more is sent (its filter already does), and with none at
/// all the metadata calls are refused (`connect` and `bind` are left to the socket rules and
/// Landlock). `own_groups`: see [`refusals`].
pub(crate) fn build_filters(
    network: NetworkMode,
    supervision: Supervision,
    own_groups: bool,
) -> Result<Filters, FilterError> {
    let mut programs = vec![refusals(own_groups)?, unjudged_calls_unavailable()?, socket_refusals(network)?];
    if cfg!(target_arch = "x86_64") {
        programs.push(x32_refusal());
    }
    match supervision {
        Supervision::Own => programs.push(supervised()?),
        Supervision::Outer => {}
        Supervision::None => programs.push(metadata_refusals()?),
    }
    Ok(Filters { programs, notify: supervision == Supervision::Own })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_compiles_and_the_notifying_filter_notifies() {
        for network in [NetworkMode::Deny, NetworkMode::Loopback, NetworkMode::Allow] {
            let base = build_filters(network, Supervision::Outer, false).unwrap();
            assert!(!base.notify);
            for supervision in [Supervision::Own, Supervision::None] {
                let filters = build_filters(network, supervision, false).unwrap();
                assert_eq!(filters.programs.len(), base.programs.len() + 1, "{supervision:?}");
                assert_eq!(filters.notify, supervision == Supervision::Own);
                let last = filters.programs.last().unwrap();
                let answers = |k: u32| last.iter().any(|instruction| instruction.k == k);
                assert_eq!(answers(RET_USER_NOTIF), supervision == Supervision::Own, "{network:?}");
                assert!(!answers(RET_TRACE | NOTIFY_MARKER));
                let refused = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
                assert_eq!(answers(refused), supervision == Supervision::None, "without a supervisor, refused");
            }
        }
    }
}
