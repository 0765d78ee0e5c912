//! The half of the confinement that a kernel rule cannot express: every `connect` and `bind` of
//! a confined process tree, and every metadata call Landlock does not mediate (`metadata`),
//! stops at a seccomp notification, and this supervisor — a thread of odek's, outside the
//! sandbox — reads the caller's arguments from its memory into a copy, decides on that copy,
//! and, when allowed, performs the call itself on a duplicate of the caller's socket or on the
//! object it resolved, from a thread without capabilities (so nothing the caller changes
//! afterwards can matter, and the kernel judges the call as the caller's). IP destinations
//! follow the network mode and allow-list; Unix sockets may be reached or created only beneath
//! the writable paths (never `/run/docker.sock` and the like); a refusal is `EACCES` and a
//! recorded [`Denial`]. The notification names the calling *thread*: a multithreaded caller
//! (Go, the JVM) is reached through it. One thread receives the calls and hands them to the
//! worker pool (`pool`), where they wait their turn rather than fail. Start at
//! [`Supervisor::start`] and [`decide`].

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::stat::{Mode, SFlag, fstat};

use crate::denials::{Denial, DenialLog};
use crate::metadata;
use crate::notify::{self, Notification};
use crate::policy::{Host, HostPort, NetworkMode};
use crate::pool::{Lane, Pending, Pool};
use crate::resolve::{self, Unresolved, is_writable, real_path};

/// `sizeof(struct sockaddr_un)`.
const SOCKADDR_UN_LEN: usize = 110;
/// How long stopping waits for the workers to finish the calls they are making.
const STOP_DEADLINE: Duration = Duration::from_secs(2);

/// What the supervisor allows.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub mode: NetworkMode,
    /// Allow-list entries with an address (names go through the proxy).
    pub allowed: Vec<(IpAddr, u16)>,
    /// The allow-list proxy, always reachable.
    pub proxy: Option<SocketAddr>,
    /// The writable paths as the Landlock ruleset grants them (canonical, split around the
    /// protected paths): where Unix sockets may be reached or created and metadata may change.
    pub writable: Vec<PathBuf>,
}

impl Rules {
    pub(crate) fn new(
        mode: NetworkMode,
        allow_hosts: &[HostPort],
        proxy: Option<SocketAddr>,
        writable: Vec<PathBuf>,
    ) -> Rules {
        let allowed = allow_hosts
            .iter()
            .filter_map(|entry| match entry.host {
                Host::Ip(ip) => Some((canonical_ip(ip), entry.port)),
                Host::Name(_) => None,
            })
            .collect();
        Rules { mode, allowed, proxy, writable }
    }
}

/// A socket address as read from the caller, parsed far enough to decide on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Address {
    Inet(SocketAddr),
    /// A path socket (bytes up to the first NUL).
    UnixPath(Vec<u8>),
    /// An abstract socket, or an unnamed one (autobind).
    UnixAbstract,
    /// `AF_UNSPEC`, `AF_NETLINK`: local to the kernel.
    Local,
    /// Another family (`AF_VSOCK`, Bluetooth…).
    Other(u16),
}

/// Parses a `struct sockaddr` of `bytes.len()` bytes.
pub(crate) fn parse_address(bytes: &[u8]) -> Option<Address> {
    let family = u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]);
    let port = || Some(u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]));
    Some(match i32::from(family) {
        libc::AF_INET => {
            let octets: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            Address::Inet(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(octets)), port()?))
        }
        libc::AF_INET6 => {
            let octets: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            Address::Inet(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(octets)), port()?))
        }
        libc::AF_UNIX => match bytes.get(2..) {
            None | Some([]) | Some([0, ..]) => Address::UnixAbstract,
            Some(path) => Address::UnixPath(path.split(|byte| *byte == 0).next().unwrap_or_default().to_vec()),
        },
        libc::AF_UNSPEC | libc::AF_NETLINK => Address::Local,
        other => Address::Other(other as u16),
    })
}

/// `::ffff:a.b.c.d` as `a.b.c.d`, so a v4-mapped destination is judged as the v4 one.
fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// `connect` or `bind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Connect,
    Bind,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Connect => "connect",
            Operation::Bind => "bind",
        }
    }
}

/// The supervisor's answer for an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Do the call with the caller's address, as read.
    Pass,
    /// Resolve the path socket (beneath the Unix roots) and do the call through it.
    UnixPath,
    Refuse(String),
}

/// The rule for one address: IP destinations by the network mode, the allow-list and the
/// proxy (a `bind` only to loopback unless the network is open); path sockets are checked
/// later, once resolved; abstract sockets may be bound but not connected to (they belong to
/// whoever made them, outside the sandbox as likely as in it); other families only when the
/// network is open.
pub(crate) fn decide(operation: Operation, address: &Address, rules: &Rules) -> Verdict {
    let open = rules.mode == NetworkMode::Allow;
    match address {
        Address::Inet(_) | Address::Other(_) if open => Verdict::Pass,
        Address::Inet(socket) => {
            let ip = canonical_ip(socket.ip());
            let allowed = match operation {
                Operation::Bind => ip.is_loopback(),
                Operation::Connect => {
                    (rules.mode == NetworkMode::Loopback && ip.is_loopback())
                        || rules.allowed.contains(&(ip, socket.port()))
                        || rules
                            .proxy
                            .is_some_and(|proxy| canonical_ip(proxy.ip()) == ip && proxy.port() == socket.port())
                }
            };
            if allowed {
                Verdict::Pass
            } else {
                let what = match operation {
                    Operation::Bind => "only loopback addresses may be bound",
                    Operation::Connect => "not on the allow-list",
                };
                Verdict::Refuse(format!("{what} (network: {})", rules.mode.as_str()))
            }
        }
        Address::UnixPath(_) => Verdict::UnixPath,
        Address::UnixAbstract if operation == Operation::Bind => Verdict::Pass,
        Address::UnixAbstract => Verdict::Refuse("abstract Unix sockets are not reachable from the sandbox".to_owned()),
        Address::Local => Verdict::Pass,
        Address::Other(family) => Verdict::Refuse(format!(
            "address family {family} is not reachable from the sandbox (network: {})",
            rules.mode.as_str()
        )),
    }
}

/// How a refused address is shown in a [`Denial`].
fn shown(address: &Address) -> String {
    match address {
        Address::Inet(socket) => socket.to_string(),
        Address::UnixPath(path) => String::from_utf8_lossy(path).into_owned(),
        Address::UnixAbstract => "(abstract Unix socket)".to_owned(),
        Address::Local => "(local)".to_owned(),
        Address::Other(family) => format!("(address family {family})"),
    }
}

/// The supervisor of one confined command.
pub(crate) struct Supervisor {
    thread: Option<JoinHandle<()>>,
    stop: Option<OwnedFd>,
    pool: Arc<Pool>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").finish_non_exhaustive()
    }
}

struct Shared {
    rules: Rules,
    log: Arc<DenialLog>,
    /// Duplicated sockets a worker is connecting on: shut down while the supervisor stops, so
    /// no blocking connect outlives the command.
    in_flight: Mutex<HashSet<RawFd>>,
    /// Set (under `in_flight`'s lock) when stopping: no connect starts after it.
    stopping: AtomicBool,
}

impl Supervisor {
    /// Starts answering the notifications of `listener`, recording refusals in `log`: a thread
    /// receives them and hands them to the workers; it ends when every process of the tree is
    /// gone or [`Supervisor::stop`] is called.
    pub(crate) fn start(listener: OwnedFd, rules: Rules, log: Arc<DenialLog>) -> std::io::Result<Supervisor> {
        let (stop_read, stop_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let shared =
            Arc::new(Shared { rules, log, in_flight: Mutex::new(HashSet::new()), stopping: AtomicBool::new(false) });
        let handler_shared = Arc::clone(&shared);
        let pool = Arc::new(Pool::new(Box::new(move |call: Pending| {
            let outcome = handle(call.listener().as_raw_fd(), &call.notification, &handler_shared);
            call.answer(outcome);
        })));
        let serving = Arc::clone(&pool);
        let thread = std::thread::Builder::new()
            .name("odek-sandbox-supervisor".to_owned())
            .spawn(move || serve(&Arc::new(listener), &stop_read, &serving))?;
        Ok(Supervisor { thread: Some(thread), stop: Some(stop_write), pool, shared })
    }

    /// Stops answering: calls not started are answered with an error, every connect a worker
    /// is still making on the command's behalf is aborted, and the workers are waited for (at
    /// most [`STOP_DEADLINE`]), so the refusals read afterwards are all of them.
    pub(crate) fn stop(&mut self) {
        if self.stop.is_none() {
            return;
        }
        {
            let _in_flight = self.shared.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
            self.shared.stopping.store(true, Ordering::SeqCst);
        }
        let abort = || {
            for socket in self.shared.in_flight.lock().unwrap_or_else(PoisonError::into_inner).iter() {
                notify::shutdown(*socket);
            }
        };
        self.pool.stop(Instant::now() + STOP_DEADLINE, &abort);
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Receives each notified call and hands it to its lane's workers (waiting, with the call not
/// yet received, while that lane's queue is full).
fn serve(listener: &Arc<OwnedFd>, stop: &OwnedFd, pool: &Pool) {
    loop {
        let mut fds =
            [PollFd::new(listener.as_fd_ref(), PollFlags::POLLIN), PollFd::new(stop.as_fd_ref(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        }
        let listener_events = fds[0].revents().unwrap_or(PollFlags::empty());
        let stop_events = fds[1].revents().unwrap_or(PollFlags::empty());
        if !stop_events.is_empty() {
            return;
        }
        if listener_events.contains(PollFlags::POLLIN) {
            let Ok(notification) = notify::receive(listener.as_raw_fd()) else { continue };
            let lane = match notification.syscall {
                libc::SYS_connect | libc::SYS_bind => Lane::Network,
                _ => Lane::Metadata,
            };
            pool.submit(lane, Pending::new(Arc::clone(listener), notification));
        } else if listener_events.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
            // Every process of the tree is gone.
            return;
        }
    }
}

/// Borrowing an `OwnedFd` for `poll`.
trait AsFdRef {
    fn as_fd_ref(&self) -> std::os::fd::BorrowedFd<'_>;
}

impl AsFdRef for OwnedFd {
    fn as_fd_ref(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(self)
    }
}

/// One notified call, answered by its kind's handler.
fn handle(listener: RawFd, notification: &Notification, shared: &Shared) -> Result<i64, i32> {
    let caller =
        Caller { listener, notification, pidfd: notify::pidfd_of_thread(notification.pid).map_err(|_| libc::ESRCH)? };
    match notification.syscall {
        libc::SYS_connect => handle_socket_call(&caller, Operation::Connect, shared),
        libc::SYS_bind => handle_socket_call(&caller, Operation::Bind, shared),
        _ => metadata::handle(&caller, &shared.rules.writable, &|denial| shared.log.record(denial)),
    }
}

/// The thread that made a notified call, as far as a handler may reach it. A handler reads
/// what it needs ([`Caller::read`], [`Caller::cwd`]), checks the call is still pending — so
/// all it read was that thread's, not a reused id's — takes the descriptors it needs, then acts
/// as the caller ([`Caller::act_as_caller`]).
pub(crate) struct Caller<'a> {
    listener: RawFd,
    notification: &'a Notification,
    /// A pidfd of the calling thread (or its process): descriptors are taken through it.
    pidfd: OwnedFd,
}

impl Caller<'_> {
    pub(crate) fn tid(&self) -> u32 {
        self.notification.pid
    }

    /// The caller's process (thread group), from `/proc`: read before [`Caller::still_pending`]
    /// vouches for it.
    pub(crate) fn tgid(&self) -> Option<u32> {
        notify::thread_group(self.tid()).ok()
    }

    pub(crate) fn syscall(&self) -> i64 {
        self.notification.syscall
    }

    pub(crate) fn args(&self) -> &[u64; 6] {
        &self.notification.args
    }

    /// Up to `len` bytes of the caller's memory at `address` ([`notify::MAX_READ`] at most).
    pub(crate) fn read(&self, address: u64, len: usize) -> Result<Vec<u8>, i32> {
        notify::read_memory(self.tid(), address, len).map_err(|_| libc::EFAULT)
    }

    /// The NUL-terminated string at `address` (see [`notify::read_c_string`]).
    pub(crate) fn read_string(&self, address: u64, max: usize, too_long: i32) -> Result<Vec<u8>, i32> {
        notify::read_c_string(self.tid(), address, max, too_long)
    }

    /// A plain struct at `address` (see [`notify::read_plain`]).
    pub(crate) fn read_plain<T: notify::Plain>(&self, address: u64) -> Result<T, i32> {
        notify::read_plain(self.tid(), address)
    }

    /// The caller's working directory (`O_PATH`).
    pub(crate) fn cwd(&self) -> Result<OwnedFd, i32> {
        let cwd = format!("/proc/{}/cwd", self.tid());
        nix::fcntl::open(cwd.as_str(), OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
            .map_err(|errno| errno as i32)
    }

    /// `EINTR` when the call no longer waits for its answer (the caller was killed, its id may
    /// be another's).
    pub(crate) fn still_pending(&self) -> Result<(), i32> {
        if notify::still_pending(self.listener, self.notification.id) { Ok(()) } else { Err(libc::EINTR) }
    }

    /// A duplicate of the caller's descriptor `fd`: the same open file.
    pub(crate) fn take_fd(&self, fd: i32) -> Result<OwnedFd, i32> {
        notify::take_fd(&self.pidfd, fd).map_err(|error| error.raw_os_error().unwrap_or(libc::EBADF))
    }

    /// Makes sure this worker holds no capabilities, as the caller holds none (a worker drops them
    /// when it starts; this drops them should they be there): from here on the kernel judges
    /// what the handler does as it would the caller's own call. Fails closed.
    pub(crate) fn act_as_caller(&self) -> Result<(), i32> {
        crate::child::drop_thread_capabilities().map_err(|_| libc::EPERM)
    }
}

/// A `connect` or `bind`: read the address, decide, do it on a duplicate of the caller's socket.
fn handle_socket_call(caller: &Caller<'_>, operation: Operation, shared: &Shared) -> Result<i64, i32> {
    let [socket_fd, address_ptr, address_len, ..] = *caller.args();
    let bytes = caller.read(address_ptr, address_len as usize)?;
    let address = parse_address(&bytes);
    let relative = matches!(&address, Some(Address::UnixPath(path)) if !path.starts_with(b"/"));
    let cwd = if relative { Some(caller.cwd()?) } else { None };
    caller.still_pending()?;
    // An int argument is its register's low half, as the kernel reads it.
    let socket = caller.take_fd(socket_fd as u32 as i32)?;
    caller.act_as_caller()?;
    let Some(address) = address else { return Err(libc::EINVAL) };
    let refuse = |reason: String| {
        shared.log.record(Denial { operation: operation.name(), target: shown(&address), reason });
        Err(libc::EACCES)
    };
    match decide(operation, &address, &shared.rules) {
        Verdict::Refuse(reason) => refuse(reason),
        Verdict::Pass => shared.perform(operation, &socket, &bytes),
        Verdict::UnixPath => {
            let Address::UnixPath(path) = &address else { return Err(libc::EINVAL) };
            match resolve_unix(cwd.as_ref(), operation, path, &shared.rules.writable) {
                Ok((rewritten, _held)) => shared.perform(operation, &socket, &rewritten),
                Err(Resolved::Refused(reason)) => refuse(reason),
                Err(Resolved::Errno(errno)) => Err(errno),
            }
        }
    }
}

impl Shared {
    /// The call itself, on the duplicate, registered so a stop can abort it.
    fn perform(&self, operation: Operation, socket: &OwnedFd, address: &[u8]) -> Result<i64, i32> {
        let fd = socket.as_raw_fd();
        {
            let mut in_flight = self.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
            if self.stopping.load(Ordering::SeqCst) {
                return Err(libc::EINTR);
            }
            in_flight.insert(fd);
        }
        let result = match operation {
            Operation::Connect => notify::connect_raw(socket, address),
            Operation::Bind => notify::bind_raw(socket, address),
        };
        self.in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&fd);
        result.map(|()| 0)
    }
}

/// Why a path socket cannot be used.
enum Resolved {
    Refused(String),
    Errno(i32),
}

impl From<Unresolved> for Resolved {
    fn from(unresolved: Unresolved) -> Resolved {
        match unresolved {
            Unresolved::ThroughProc => Resolved::Refused(Unresolved::THROUGH_PROC.to_owned()),
            Unresolved::Errno(errno) => Resolved::Errno(errno),
        }
    }
}

/// Resolves the caller's socket path (relative to its working directory `cwd`) the way the
/// kernel would — through no `/proc` link ([`resolve::open_path`]) — and, when it lies beneath
/// `writable`, returns an address naming it through `/proc/self/fd/<n>` (and the fd, to hold
/// while the call is made), so the call reaches exactly what was checked. For `connect`, the
/// path itself must be a socket there; for `bind`, its directory must be there (the socket is
/// created by the call).
fn resolve_unix(
    cwd: Option<&OwnedFd>,
    operation: Operation,
    path: &[u8],
    writable: &[PathBuf],
) -> Result<(Vec<u8>, OwnedFd), Resolved> {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(path));
    let base = if path.is_absolute() { None } else { cwd };
    let open_at = |target: &Path, flags: OFlag| -> Result<OwnedFd, Resolved> {
        Ok(resolve::open_path(base, target.as_os_str().as_bytes(), flags)?)
    };
    let (held, name) = match operation {
        Operation::Connect => {
            let fd = open_at(path, OFlag::empty())?;
            let kind = fstat(&fd).map_err(|errno| Resolved::Errno(errno as i32))?;
            if SFlag::from_bits_truncate(kind.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
                return Err(Resolved::Errno(libc::ECONNREFUSED));
            }
            (fd, None)
        }
        Operation::Bind => {
            let name = path.file_name().ok_or(Resolved::Errno(libc::EINVAL))?;
            let directory = match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            (open_at(directory, OFlag::O_DIRECTORY)?, Some(name.to_owned()))
        }
    };
    let real = real_path(&held).ok_or(Resolved::Errno(libc::EACCES))?;
    if !is_writable(&real, writable) {
        return Err(Resolved::Refused(format!("{} is outside the writable paths", real.display())));
    }
    let mut through = format!("/proc/self/fd/{}", held.as_raw_fd()).into_bytes();
    if let Some(name) = name {
        through.push(b'/');
        through.extend_from_slice(name.as_bytes());
    }
    if through.len() >= SOCKADDR_UN_LEN - 2 {
        return Err(Resolved::Errno(libc::ENAMETOOLONG));
    }
    let mut address = Vec::with_capacity(SOCKADDR_UN_LEN);
    address.extend_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
    address.extend_from_slice(&through);
    address.push(0);
    Ok((address, held))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inet(text: &str) -> Address {
        Address::Inet(text.parse().unwrap())
    }

    fn rules(mode: NetworkMode) -> Rules {
        Rules::new(
            mode,
            &[
                crate::policy::parse_allow_host("10.0.0.5:5432").unwrap(),
                crate::policy::parse_allow_host("example.com:443").unwrap(),
            ],
            Some("127.0.0.1:40000".parse().unwrap()),
            Vec::new(),
        )
    }

    #[test]
    fn addresses_parse_from_raw_sockaddrs() {
        let mut v4 = vec![0_u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&443_u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[93, 184, 216, 34]);
        assert_eq!(parse_address(&v4), Some(inet("93.184.216.34:443")));
        let mut unix = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        unix.extend_from_slice(b"/run/docker.sock\0junk");
        assert_eq!(parse_address(&unix), Some(Address::UnixPath(b"/run/docker.sock".to_vec())));
        let mut abstract_socket = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        abstract_socket.extend_from_slice(b"\0name");
        assert_eq!(parse_address(&abstract_socket), Some(Address::UnixAbstract));
        assert_eq!(parse_address(&[1]), None);
        assert_eq!(parse_address(&(libc::AF_INET as u16).to_ne_bytes()), None, "a short sockaddr_in");
    }

    #[test]
    fn loopback_mode_allows_loopback_the_list_and_the_proxy_only_red() {
        let loopback = rules(NetworkMode::Loopback);
        for allowed in ["127.0.0.1:8080", "[::1]:22", "[::ffff:127.0.0.1]:5000", "10.0.0.5:5432", "127.0.0.1:40000"] {
            assert_eq!(decide(Operation::Connect, &inet(allowed), &loopback), Verdict::Pass, "{allowed}");
        }
        for refused in ["93.184.216.34:443", "10.0.0.5:22", "[::ffff:10.0.0.6]:5432", "[2606:4700::1]:443"] {
            assert_eq!(
                decide(Operation::Connect, &inet(refused), &loopback),
                Verdict::Refuse("not on the allow-list (network: loopback)".to_owned()),
                "{refused}"
            );
        }
    }

    #[test]
    fn deny_mode_allows_only_the_list_and_the_proxy_red() {
        let deny = rules(NetworkMode::Deny);
        assert_eq!(
            decide(Operation::Connect, &inet("127.0.0.1:8080"), &deny),
            Verdict::Refuse("not on the allow-list (network: deny)".to_owned())
        );
        assert_eq!(decide(Operation::Connect, &inet("127.0.0.1:40000"), &deny), Verdict::Pass);
        assert_eq!(decide(Operation::Connect, &inet("10.0.0.5:5432"), &deny), Verdict::Pass);
    }

    #[test]
    fn binding_is_loopback_only_unless_the_network_is_open_red() {
        let loopback = rules(NetworkMode::Loopback);
        assert_eq!(decide(Operation::Bind, &inet("127.0.0.1:0"), &loopback), Verdict::Pass);
        assert!(matches!(decide(Operation::Bind, &inet("0.0.0.0:8080"), &loopback), Verdict::Refuse(_)));
        assert_eq!(decide(Operation::Bind, &inet("0.0.0.0:8080"), &rules(NetworkMode::Allow)), Verdict::Pass);
    }

    #[test]
    fn unix_and_other_families() {
        let deny = rules(NetworkMode::Deny);
        assert_eq!(
            decide(Operation::Connect, &Address::UnixPath(b"/run/docker.sock".to_vec()), &deny),
            Verdict::UnixPath
        );
        assert!(matches!(decide(Operation::Connect, &Address::UnixAbstract, &deny), Verdict::Refuse(_)));
        assert_eq!(decide(Operation::Bind, &Address::UnixAbstract, &deny), Verdict::Pass);
        assert_eq!(decide(Operation::Connect, &Address::Local, &deny), Verdict::Pass);
        assert!(matches!(decide(Operation::Connect, &Address::Other(40), &deny), Verdict::Refuse(_)), "vsock");
        assert_eq!(decide(Operation::Connect, &Address::Other(40), &rules(NetworkMode::Allow)), Verdict::Pass);
    }
}
