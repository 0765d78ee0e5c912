//! Kernel confinement for every process odek starts (issue 20), on Linux, without a container
//! daemon: Landlock for the filesystem (and TCP when the network is denied), seccomp for the
//! system calls a confined command has no business with, a supervisor for every `connect` and
//! `bind` (IP destinations by network mode and allow-list, Unix sockets only beneath the writable
//! paths) and every metadata call Landlock does not mediate (`chmod`, `chown`, times, extended
//! attributes: only beneath the writable paths), an HTTP proxy for allow-listed host names,
//! resource limits, a `pids` cgroup, no capabilities and `no_new_privs`. A [`Sandbox`] is
//! prepared once per run from a [`Policy`]; each command gets a [`Confinement`] from
//! [`Sandbox::confine`], started and finished around its process.
//!
//! What is enforced is reported honestly: [`support`] says what this kernel can do, and
//! [`Sandbox::new`] fails (rather than degrading silently) when the policy needs something it
//! cannot. Start at [`Sandbox::new`] and [`Sandbox::confine`].

mod cgroup;
mod child;
mod denials;
mod filter;
mod fs_rules;
mod metadata;
mod notify;
pub mod policy;
mod pool;
mod proxy;
mod resolve;
mod supervisor;

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use landlock::RulesetCreated;
use thiserror::Error;

use crate::cgroup::PidsCgroup;
use crate::child::ChildPlan;
use crate::denials::DenialLog;
use crate::filter::{Filters, Supervision};
use crate::policy::NetworkMode;
use crate::proxy::Proxy;
use crate::supervisor::{Rules, Supervisor};

/// One operation the sandbox refused, and how many of each kind were not listed.
pub use denials::{Denial, Tally, more_refused_line};
/// What one confined process may do.
pub use policy::{Host, HostPort, Limits, NetworkMode as Network, Policy, PolicyError, parse_allow_host};

/// The variable [`Sandbox::confine`] sets when a supervisor answers the confined process's
/// `connect` and `bind`: an odek started inside (an untrusted sub-agent) leaves them to it, since
/// a process tree can have only one seccomp listener (a second is `EBUSY`).
pub const SUPERVISED_VARIABLE: &str = "ODEK_SANDBOX_SUPERVISED";

/// What this kernel supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version (`0`: no Landlock).
    pub landlock_abi: u32,
    /// seccomp user notifications and `pidfd_getfd` (the connect/bind supervisor).
    pub supervisor: bool,
    /// This process already runs in an odek sandbox whose supervisor answers its `connect` and
    /// `bind` (its filter refuses `pidfd_getfd`, and [`SUPERVISED_VARIABLE`] says so): a sandbox
    /// made here adds no supervisor of its own, the outer one governs.
    pub outer_supervisor: bool,
}

impl Support {
    /// Whether the sandbox can be enforced at all (Landlock is the floor).
    pub fn enforceable(&self) -> bool {
        self.landlock_abi >= 1
    }
}

/// Probes the running kernel (cheap: three system calls).
pub fn support() -> Support {
    let refused = notify::pidfd_getfd_errno() == libc::EPERM;
    let outer_supervisor = refused && std::env::var(SUPERVISED_VARIABLE).is_ok_and(|value| value == "1");
    Support { landlock_abi: notify::landlock_abi(), supervisor: notify::supervisor_supported(), outer_supervisor }
}

/// Why a sandbox or a confinement could not be set up.
#[derive(Debug, Error)]
pub enum SandboxError {
    #[error("{0}")]
    Policy(#[from] PolicyError),
    /// The kernel has no Landlock (or it is disabled).
    #[error("sandbox: this kernel does not support Landlock")]
    Unsupported,
    /// The policy restricts the network by address but the kernel lacks seccomp user
    /// notifications or `pidfd_getfd`.
    #[error("sandbox: network {mode} needs seccomp user notifications and pidfd_getfd (Linux 5.6+)")]
    NoSupervisor { mode: &'static str },
    #[error("sandbox: {0}")]
    Setup(String),
}

/// A prepared sandbox for one run: the ruleset, the filters and what the supervisor enforces.
pub struct Sandbox {
    policy: Policy,
    ruleset: Mutex<RulesetCreated>,
    filters: Filters,
    cap_last: u32,
    /// The writable paths as granted (split around the protected ones): the supervisor's rule for
    /// Unix sockets and metadata.
    writable: Vec<PathBuf>,
    /// Whether a kernel-enforced process limit (a `pids` cgroup) could be made when probed.
    process_limit: bool,
    /// A supervisor answers `connect`, `bind` and the metadata calls: this sandbox's, or an
    /// outer one's.
    supervised: bool,
}

/// What a sandbox without a supervisor leaves unjudged, as odek says it once per run.
pub const UNSUPERVISED_LIMITATION: &str = "sandbox: no supervisor here (seccomp user notifications or pidfd_getfd \
    unavailable): chmod, chown, file times, extended attributes and Unix socket connections are not limited to the \
    writable paths";

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Prepares `policy`: validated, every granted path opened, the filters compiled. Fails when
    /// the kernel cannot enforce it. Inside an odek sandbox (an untrusted sub-agent) it adds no
    /// supervisor of its own: the outer one answers `connect` and `bind` with the outer policy.
    pub fn new(policy: Policy) -> Result<Sandbox, SandboxError> {
        Sandbox::build(policy, &[], false)
    }

    /// \[beyond\] A sandbox for a whole odek process (an untrusted sub-agent): `policy`, and
    /// `own_state` writable although it lies beneath a protected path (the sub-agent's artifact
    /// folder under `~/.odek`, exactly those directories); the process may give each command it
    /// starts a process group of its own (`setpgid(0, 0)`), which a plain command may not.
    pub fn for_odek_process(policy: Policy, own_state: &[PathBuf]) -> Result<Sandbox, SandboxError> {
        Sandbox::build(policy, own_state, true)
    }

    fn build(policy: Policy, own_state: &[PathBuf], own_groups: bool) -> Result<Sandbox, SandboxError> {
        policy.validate()?;
        let support = support();
        if !support.enforceable() {
            return Err(SandboxError::Unsupported);
        }
        let needs_supervisor = policy.network != NetworkMode::Deny || !policy.allow_hosts.is_empty();
        if needs_supervisor && !support.supervisor && !support.outer_supervisor && policy.restricts_network() {
            return Err(SandboxError::NoSupervisor { mode: policy.network.as_str() });
        }
        let own_supervisor = support.supervisor && !support.outer_supervisor;
        let supervised = own_supervisor || support.outer_supervisor;
        let grants = fs_rules::grants(&policy, own_state);
        // With an allow-list, "deny" still needs IP sockets for the listed addresses and the proxy.
        let socket_mode = match policy.network {
            NetworkMode::Deny if !policy.allow_hosts.is_empty() => NetworkMode::Loopback,
            mode => mode,
        };
        let landlock_network = if socket_mode == NetworkMode::Deny { NetworkMode::Deny } else { NetworkMode::Allow };
        let ruleset = fs_rules::build_ruleset(&grants, landlock_network)
            .map_err(|error| SandboxError::Setup(error.to_string()))?;
        let supervision = match (own_supervisor, support.outer_supervisor) {
            (true, _) => Supervision::Own,
            (false, true) => Supervision::Outer,
            (false, false) => Supervision::None,
        };
        let filters = filter::build_filters(socket_mode, supervision, own_groups)
            .map_err(|error| SandboxError::Setup(error.to_string()))?;
        let cap_last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(63);
        let writable = grants.writable();
        cgroup::remove_stale();
        let process_limit = PidsCgroup::create(policy.limits.processes.max(1)).map(|cgroup| cgroup.remove()).is_some();
        Ok(Sandbox { policy, ruleset: Mutex::new(ruleset), filters, cap_last, writable, process_limit, supervised })
    }

    /// The policy it enforces.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// What this sandbox cannot enforce on this machine, in one line for the operator: without
    /// a supervisor (no seccomp user notifications, or `pidfd_getfd` refused by an outer
    /// filter), the metadata calls and Unix socket connections go through unjudged — Landlock
    /// cannot see them — rather than fail everywhere ([`UNSUPERVISED_LIMITATION`]). `None`: it
    /// enforces everything.
    pub fn limitation(&self) -> Option<&'static str> {
        (!self.supervised).then_some(UNSUPERVISED_LIMITATION)
    }

    /// Whether process counts are kernel-limited (a `pids` cgroup, or `RLIMIT_NPROC` for a
    /// user other than root); without it the limit is not enforced and the caller should say so.
    pub fn limits_processes(&self) -> bool {
        self.process_limit || nix::unistd::geteuid().as_raw() != 0
    }

    /// Confines the process `command` will start: its environment (`TMPDIR`, the proxy), and
    /// the steps the child takes before `exec`. Call [`Confinement::started`] right after the
    /// spawn and [`Confinement::finish`] when the command is done.
    pub fn confine(&self, command: &mut tokio::process::Command) -> Result<Confinement, SandboxError> {
        let setup = |error: std::io::Error| SandboxError::Setup(error.to_string());
        let denials = Arc::new(DenialLog::default());
        let proxy = if self.policy.needs_proxy() {
            let loopback = self.policy.network == NetworkMode::Loopback;
            Some(Proxy::start(self.policy.allow_hosts.clone(), loopback, Arc::clone(&denials)).map_err(setup)?)
        } else {
            None
        };
        command.env("TMPDIR", &self.policy.temp_dir);
        if self.supervised {
            command.env(SUPERVISED_VARIABLE, "1");
        } else {
            command.env_remove(SUPERVISED_VARIABLE);
        }
        if let Some(proxy) = &proxy {
            let url = format!("http://{}", proxy.address());
            for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
                command.env(name, &url);
            }
            let no_proxy = if self.policy.network == NetworkMode::Loopback { "localhost,127.0.0.1,::1" } else { "" };
            command.env("NO_PROXY", no_proxy).env("no_proxy", no_proxy);
        }
        let cgroup = PidsCgroup::create(self.policy.limits.processes.max(1));
        let cgroup_procs =
            cgroup.as_ref().map(PidsCgroup::procs_for_join).transpose().map_err(setup)?.map(OwnedFd::from);
        let (parent_channel, child_channel) = if self.filters.notify {
            let (parent, child) = nix::sys::socket::socketpair(
                nix::sys::socket::AddressFamily::Unix,
                nix::sys::socket::SockType::Stream,
                None,
                nix::sys::socket::SockFlag::SOCK_CLOEXEC,
            )
            .map_err(|errno| setup(errno.into()))?;
            (Some(parent), Some(child))
        } else {
            (None, None)
        };
        let ruleset = self.ruleset.lock().unwrap_or_else(PoisonError::into_inner).try_clone().map_err(setup)?;
        let mut plan = ChildPlan {
            cgroup_procs,
            rlimits: self.rlimits(cgroup.is_some()),
            cap_last: self.cap_last,
            ruleset: Some(ruleset),
            filters: self.filters.programs.clone(),
            notify: self.filters.notify,
            listener_channel: child_channel,
        };
        #[allow(unsafe_code)]
        // SAFETY: the closure only makes system calls on data prepared above (`ChildPlan`
        // allocates nothing between fork and exec).
        unsafe {
            command.pre_exec(move || plan.confine_self());
        }
        let rules = Rules::new(
            self.policy.network,
            &self.policy.allow_hosts,
            proxy.as_ref().map(Proxy::address),
            self.writable.clone(),
        );
        Ok(Confinement { cgroup, channel: parent_channel, rules: Some(rules), supervisor: None, proxy, denials })
    }

    /// `setrlimit` pairs for a child (a process count only for a user other than root, and only
    /// without a cgroup: `RLIMIT_NPROC` counts all of the user's processes).
    fn rlimits(&self, cgroup: bool) -> Vec<(libc::__rlimit_resource_t, libc::rlim_t)> {
        let limits = &self.policy.limits;
        let mut pairs = Vec::with_capacity(4);
        for (resource, value) in [
            (libc::RLIMIT_NOFILE, limits.open_files),
            (libc::RLIMIT_FSIZE, limits.file_size_bytes),
            (libc::RLIMIT_CPU, limits.cpu_seconds),
        ] {
            if value > 0 {
                pairs.push((resource, value));
            }
        }
        if !cgroup && limits.processes > 0 && nix::unistd::geteuid().as_raw() != 0 {
            pairs.push((libc::RLIMIT_NPROC, limits.processes.saturating_add(user_process_count())));
        }
        pairs
    }
}

/// Processes (threads) of this user now: what `RLIMIT_NPROC` counts besides the command's own.
fn user_process_count() -> u64 {
    let uid = nix::unistd::getuid().as_raw();
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    let mut count = 0_u64;
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_name().to_str().is_some_and(|name| name.bytes().all(|byte| byte.is_ascii_digit())) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(path.join("status")) else { continue };
        let field = |name: &str| status.lines().find_map(|line| line.strip_prefix(name)).map(str::trim);
        let owned =
            field("Uid:").and_then(|uids| uids.split_whitespace().next()).is_some_and(|real| real == uid.to_string());
        if owned {
            count += field("Threads:").and_then(|threads| threads.parse().ok()).unwrap_or(1);
        }
    }
    count
}

/// One confined command, from its spawn to its end.
#[derive(Debug)]
pub struct Confinement {
    cgroup: Option<PidsCgroup>,
    channel: Option<OwnedFd>,
    rules: Option<Rules>,
    supervisor: Option<Supervisor>,
    proxy: Option<Proxy>,
    /// What the supervisor and the proxy refused, in order of arrival.
    denials: Arc<DenialLog>,
}

/// What a finished confinement reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finished {
    /// The operations it refused (supervisor and proxy), in the order they happened; the first
    /// 64 of them.
    pub denials: Vec<Denial>,
    /// Refusals past the ones kept, by kind.
    pub more_denials: Tally,
    /// Processes of the command that were still running at the end and were killed.
    pub killed: usize,
}

impl Finished {
    /// The refusals past the first `listed` of [`Finished::denials`], by kind: what a report
    /// that lists `listed` of them one by one still has to count.
    pub fn beyond(&self, listed: usize) -> Tally {
        let mut rest = self.more_denials;
        for denial in self.denials.iter().skip(listed) {
            rest.count(denial);
        }
        rest
    }
}

impl Confinement {
    /// Call right after a successful spawn: takes the supervisor's listener from the child and
    /// starts answering. (The child's confinement is already complete: it sent the listener
    /// after the last filter was in place, before `exec`.)
    pub fn started(&mut self) -> Result<(), SandboxError> {
        let Some(channel) = self.channel.take() else { return Ok(()) };
        let listener =
            receive_fd(&channel).map_err(|error| SandboxError::Setup(format!("supervisor listener: {error}")))?;
        let rules = self.rules.take().ok_or_else(|| SandboxError::Setup("started twice".to_owned()))?;
        let supervisor = Supervisor::start(listener, rules, Arc::clone(&self.denials));
        self.supervisor = Some(supervisor.map_err(|error| SandboxError::Setup(error.to_string()))?);
        Ok(())
    }

    /// Kills every process of the command still running (its whole cgroup; what left the
    /// process group too). Blocking, bounded.
    pub fn kill_all(&self) -> usize {
        let Some(cgroup) = &self.cgroup else { return 0 };
        let left = cgroup.pids().len();
        cgroup.kill_all();
        left
    }

    /// Ends the confinement: kills what is left of the command, stops the supervisor and the
    /// proxy, removes the cgroup, and reports what was refused. Blocking, bounded.
    pub fn finish(mut self) -> Finished {
        let killed = self.kill_all();
        let mut finished = Finished { killed, ..Finished::default() };
        if let Some(mut supervisor) = self.supervisor.take() {
            supervisor.stop();
        }
        drop(self.proxy.take());
        (finished.denials, finished.more_denials) = self.denials.read();
        if let Some(cgroup) = self.cgroup.take() {
            cgroup.remove();
        }
        finished
    }
}

impl Drop for Confinement {
    fn drop(&mut self) {
        if let Some(cgroup) = self.cgroup.take() {
            cgroup.kill_all();
            cgroup.remove();
        }
    }
}

/// One fd sent with `SCM_RIGHTS` over `channel` (the child sent it before `exec`, so it is
/// already there).
fn receive_fd(channel: &OwnedFd) -> std::io::Result<OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let mut byte = [0_u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let message = nix::sys::socket::recvmsg::<()>(
        channel.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        nix::sys::socket::MsgFlags::MSG_CMSG_CLOEXEC | nix::sys::socket::MsgFlags::MSG_DONTWAIT,
    )
    .map_err(std::io::Error::from)?;
    for control in message.cmsgs().map_err(std::io::Error::from)? {
        if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = control
            && let Some(fd) = fds.first()
        {
            #[allow(unsafe_code)]
            // SAFETY: the kernel just installed this descriptor for us; nothing else owns it.
            return Ok(unsafe { OwnedFd::from_raw_fd(*fd) });
        }
    }
    Err(std::io::Error::other("the child sent no listener"))
}

// The shared parts are used from the async shell tool.
const _: fn() = || {
    fn sendable<T: Send + Sync>() {}
    sendable::<Sandbox>();
    sendable::<Arc<Sandbox>>();
};
