//! The system-call half of the confinement, as seccomp filters compiled in the parent and
//! installed last in the child: calls a confined command has no business with fail with `EPERM`
//! (tracing or reading other processes, mounts, kexec, bpf, keyrings, perf, modules, reboot,
//! namespaces, io_uring, leaving the process group, faking terminal input…); IP sockets the
//! network mode forbids fail with `EACCES`; `connect` and `bind` go to odek's supervisor
//! (`supervisor`), which decides on a copy of the address and does the call itself. Start at
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
    /// The last program sends `connect` and `bind` to the supervisor.
    pub notify: bool,
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

/// `EPERM` for the refused calls, `clone` with a namespace flag, the terminal-injection ioctls
/// and `setpgid` — but for `setpgid(0, 0)` (a group of its own) when `own_groups`: an odek
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
    let tty_rules = [libc::TIOCSTI, libc::TIOCLINUX]
        .iter()
        .map(|request| rule(vec![condition(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, u64::from(*request as u32))?]))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, tty_rules);
    compile(rules, SeccompAction::Errno(libc::EPERM as u32))
}

/// `ENOSYS` for `clone3`, whose flags sit in memory a filter cannot read: the C library falls
/// back to `clone`, whose flags it can.
fn clone3_unavailable() -> Result<BpfProgram, FilterError> {
    compile(BTreeMap::from([(libc::SYS_clone3, Vec::new())]), SeccompAction::Errno(libc::ENOSYS as u32))
}

/// `EACCES` for the sockets `network` forbids: every IP and packet socket when denied; datagram
/// and raw IP sockets and `MSG_FASTOPEN` sends (a send that connects) when only loopback or an
/// allow-list is open; packet sockets always.
fn network_refusals(network: NetworkMode) -> Result<BpfProgram, FilterError> {
    let domain = |family: i32| condition(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, family as u64);
    let mut socket_rules = vec![rule(vec![domain(libc::AF_PACKET)?])?];
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
    compile(rules, SeccompAction::Errno(libc::EACCES as u32))
}

/// `connect` and `bind` to the supervisor.
fn supervised() -> Result<BpfProgram, FilterError> {
    let rules = BTreeMap::from([(libc::SYS_connect, Vec::new()), (libc::SYS_bind, Vec::new())]);
    let mut program = compile(rules, SeccompAction::Trace(NOTIFY_MARKER))?;
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

/// Every filter for `network`, the notifying one last (when `notify`: the supervisor is there
/// to answer; without it `connect` and `bind` are not filtered here — an outer sandbox's
/// supervisor, when there is one, still sees them). `own_groups`: see [`refusals`].
pub(crate) fn build_filters(network: NetworkMode, notify: bool, own_groups: bool) -> Result<Filters, FilterError> {
    let mut programs = vec![refusals(own_groups)?, clone3_unavailable()?, network_refusals(network)?];
    if cfg!(target_arch = "x86_64") {
        programs.push(x32_refusal());
    }
    if notify {
        programs.push(supervised()?);
    }
    Ok(Filters { programs, notify })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_compiles_and_the_notifying_filter_notifies() {
        for network in [NetworkMode::Deny, NetworkMode::Loopback, NetworkMode::Allow] {
            for notify in [false, true] {
                let filters = build_filters(network, notify, false).unwrap();
                assert_eq!(filters.notify, notify);
                let last = filters.programs.last().unwrap();
                let notifies = last.iter().any(|instruction| instruction.k == RET_USER_NOTIF);
                assert_eq!(notifies, notify, "{network:?}");
                assert!(!last.iter().any(|instruction| instruction.k == RET_TRACE | NOTIFY_MARKER));
            }
        }
    }
}
