//! What a confined process may do: the paths it may read and execute, the paths it may write,
//! the paths it may never read, its network mode and allow-list, and its resource limits — and
//! the rules that make a policy valid (`/` is never writable, an allow-list entry is exactly
//! `host:port`). Pure; start at [`Policy`] and [`parse_allow_host`].

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// System directories every confined process may read and execute (those that exist).
/// (`/run` and `/var` are not among them: they hold other services' sockets, secrets and data;
/// only the resolver's directory under `/run` is, for name lookups when the network allows them.)
pub const SYSTEM_READABLE: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/run/systemd/resolve",
    "/nix/store",
];

/// Device files every confined process may read and write (those that exist). No terminal is
/// among them: `/dev/tty` and `/dev/pts/*` are the user's terminals (odek's own included), and a
/// new one from `/dev/ptmx` lives among them, so a command keeps only a terminal it was handed
/// as an open descriptor. Nor is `/dev/shm`: it is shared by every process of the machine (an
/// operator who wants it back lists it in `writable`).
pub const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// Where a confined process may connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NetworkMode {
    /// No network: no IP socket can be made (the allow-list, when set, is reached through the proxy).
    Deny,
    /// Only the machine's loopback addresses (plus the allow-list).
    Loopback,
    /// Anything (the kernel's own rules only).
    Allow,
}

impl NetworkMode {
    /// The config spelling: `deny`, `loopback`, `allow`.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Deny => "deny",
            NetworkMode::Loopback => "loopback",
            NetworkMode::Allow => "allow",
        }
    }

    /// Parses the config spelling.
    pub fn parse(text: &str) -> Option<NetworkMode> {
        match text {
            "deny" => Some(NetworkMode::Deny),
            "loopback" => Some(NetworkMode::Loopback),
            "allow" => Some(NetworkMode::Allow),
            _ => None,
        }
    }
}

/// One allow-list entry's host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// An address: connections to it are allowed directly.
    Ip(IpAddr),
    /// A name (lowercased, no trailing dot): reached only through the proxy, which resolves it,
    /// since a kernel cannot filter by name.
    Name(String),
}

/// One allow-list entry: `host:port`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub host: Host,
    pub port: u16,
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            Host::Ip(ip) => write!(f, "{ip}:{}", self.port),
            Host::Name(name) => write!(f, "{name}:{}", self.port),
        }
    }
}

/// Resource limits of one confined process tree (`0` = not limited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Processes (and threads) alive at once in the tree.
    pub processes: u64,
    /// Open files per process.
    pub open_files: u64,
    /// Largest file a process may write, in bytes.
    pub file_size_bytes: u64,
    /// CPU seconds per process.
    pub cpu_seconds: u64,
}

impl Default for Limits {
    /// 512 processes, 4096 open files, 8 GiB files, 1 hour of CPU per process.
    fn default() -> Limits {
        Limits { processes: 512, open_files: 4096, file_size_bytes: 8 << 30, cpu_seconds: 3600 }
    }
}

/// What one confined process (and everything it starts) may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Read, write and execute (the run's working directory).
    pub workspace: PathBuf,
    /// Read, write and execute: the run's own temporary directory (`TMPDIR` inside).
    pub temp_dir: PathBuf,
    /// Extra paths to read and execute (configured `readable`).
    pub readable: Vec<PathBuf>,
    /// Extra paths to read, write and execute (configured `writable`).
    pub writable: Vec<PathBuf>,
    /// Never readable, even beneath an allowed path: odek's own state (`~/.odek`) and the other
    /// users' home directories.
    pub protected: Vec<PathBuf>,
    pub network: NetworkMode,
    /// Destinations allowed besides what `network` allows.
    pub allow_hosts: Vec<HostPort>,
    pub limits: Limits,
}

/// Why a policy cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyError {
    #[error("sandbox: \"/\" cannot be writable")]
    RootWritable,
    #[error("sandbox: {} is not an absolute path", .0.display())]
    NotAbsolute(PathBuf),
    #[error("sandbox: allow_hosts entry {entry:?}: {reason}")]
    AllowHost { entry: String, reason: &'static str },
}

impl Policy {
    /// Checks the rules a policy must keep: every path absolute, `/` never writable (neither
    /// the workspace, the temporary directory, nor a `writable` entry).
    pub fn validate(&self) -> Result<(), PolicyError> {
        let writable = [&self.workspace, &self.temp_dir].into_iter().chain(self.writable.iter());
        for path in writable {
            if !path.is_absolute() {
                return Err(PolicyError::NotAbsolute(path.clone()));
            }
            if is_root(path) {
                return Err(PolicyError::RootWritable);
            }
        }
        for path in self.readable.iter().chain(self.protected.iter()) {
            if !path.is_absolute() {
                return Err(PolicyError::NotAbsolute(path.clone()));
            }
        }
        Ok(())
    }

    /// Whether the policy restricts the network at all.
    pub fn restricts_network(&self) -> bool {
        self.network != NetworkMode::Allow
    }

    /// Whether some allow-list entry is a name (so the proxy must run).
    pub fn needs_proxy(&self) -> bool {
        self.restricts_network() && self.allow_hosts.iter().any(|entry| matches!(entry.host, Host::Name(_)))
    }
}

/// `/`, however it is spelled (`/`, `//`, `/.`).
fn is_root(path: &Path) -> bool {
    path.components().all(|component| matches!(component, std::path::Component::RootDir | std::path::Component::CurDir))
}

/// Parses one `allow_hosts` entry: `host:port`, `ip:port` or `[ipv6]:port`. A scheme, a path, a
/// user, a missing or zero port, a wildcard and an empty host are refused.
pub fn parse_allow_host(entry: &str) -> Result<HostPort, PolicyError> {
    let refuse = |reason| PolicyError::AllowHost { entry: entry.to_owned(), reason };
    let text = entry.trim();
    if text.contains("://") {
        return Err(refuse("give host:port, without a scheme"));
    }
    if text.contains('/') {
        return Err(refuse("give host:port, without a path"));
    }
    if text.contains('@') {
        return Err(refuse("give host:port, without a user"));
    }
    if text.contains('*') {
        return Err(refuse("wildcards are not supported; list each host"));
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (host, port) = rest.split_once("]:").ok_or_else(|| refuse("an IPv6 address needs [address]:port"))?;
        let ip: std::net::Ipv6Addr = host.parse().map_err(|_| refuse("not an IPv6 address"))?;
        (Host::Ip(IpAddr::V6(ip)), port)
    } else {
        let (host, port) = text.rsplit_once(':').ok_or_else(|| refuse("needs a port (host:port)"))?;
        if host.contains(':') {
            return Err(refuse("an IPv6 address needs [address]:port"));
        }
        (host_of(host).ok_or_else(|| refuse("not a valid host name or address"))?, port)
    };
    let port: u16 = port.parse().map_err(|_| refuse("the port is not a number from 1 to 65535"))?;
    if port == 0 {
        return Err(refuse("the port is not a number from 1 to 65535"));
    }
    Ok(HostPort { host, port })
}

/// An address, or a host name of letters, digits, `-` and `.` (lowercased, no trailing dot).
fn host_of(text: &str) -> Option<Host> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(Host::Ip(ip));
    }
    let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    let valid_label = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    (!name.is_empty() && name.len() <= 253 && name.split('.').all(valid_label)).then_some(Host::Name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            workspace: "/work/project".into(),
            temp_dir: "/tmp/odek-run".into(),
            readable: Vec::new(),
            writable: Vec::new(),
            protected: vec!["/root/.odek".into()],
            network: NetworkMode::Deny,
            allow_hosts: Vec::new(),
            limits: Limits::default(),
        }
    }

    #[test]
    fn root_is_never_writable_red() {
        for root in ["/", "//", "/."] {
            let mut with_root = policy();
            with_root.writable.push(root.into());
            assert_eq!(with_root.validate(), Err(PolicyError::RootWritable), "{root}");
        }
        let mut workspace_root = policy();
        workspace_root.workspace = "/".into();
        assert_eq!(workspace_root.validate(), Err(PolicyError::RootWritable));
        assert_eq!(PolicyError::RootWritable.to_string(), "sandbox: \"/\" cannot be writable");
        assert_eq!(policy().validate(), Ok(()));
    }

    #[test]
    fn relative_paths_are_refused() {
        let mut relative = policy();
        relative.readable.push("data".into());
        assert_eq!(relative.validate(), Err(PolicyError::NotAbsolute("data".into())));
    }

    #[test]
    fn allow_hosts_entries_are_host_and_port() {
        assert_eq!(
            parse_allow_host("API.GitHub.com.:443").unwrap(),
            HostPort { host: Host::Name("api.github.com".into()), port: 443 }
        );
        assert_eq!(
            parse_allow_host("10.0.0.5:5432").unwrap(),
            HostPort { host: Host::Ip("10.0.0.5".parse().unwrap()), port: 5432 }
        );
        let v6 = parse_allow_host("[::1]:8080").unwrap();
        assert_eq!(v6, HostPort { host: Host::Ip("::1".parse().unwrap()), port: 8080 });
        assert_eq!(v6.to_string(), "[::1]:8080");
    }

    #[test]
    fn allow_hosts_entries_with_a_scheme_path_or_no_port_are_refused_red() {
        let cases = [
            ("https://api.github.com:443", "give host:port, without a scheme"),
            ("api.github.com:443/repos", "give host:port, without a path"),
            ("user@host:22", "give host:port, without a user"),
            ("*.github.com:443", "wildcards are not supported; list each host"),
            ("api.github.com", "needs a port (host:port)"),
            ("api.github.com:0", "the port is not a number from 1 to 65535"),
            ("api.github.com:https", "the port is not a number from 1 to 65535"),
            ("::1:80", "an IPv6 address needs [address]:port"),
            ("bad_host:80", "not a valid host name or address"),
            (":80", "not a valid host name or address"),
        ];
        for (entry, reason) in cases {
            assert_eq!(
                parse_allow_host(entry),
                Err(PolicyError::AllowHost { entry: entry.to_owned(), reason }),
                "{entry}"
            );
        }
        assert_eq!(
            parse_allow_host("https://x:1").unwrap_err().to_string(),
            "sandbox: allow_hosts entry \"https://x:1\": give host:port, without a scheme"
        );
    }

    #[test]
    fn a_proxy_is_needed_only_for_names_on_a_restricted_network() {
        let mut with_name = policy();
        with_name.allow_hosts.push(parse_allow_host("example.com:443").unwrap());
        assert!(with_name.needs_proxy());
        with_name.network = NetworkMode::Allow;
        assert!(!with_name.needs_proxy());
        let mut with_ip = policy();
        with_ip.allow_hosts.push(parse_allow_host("10.0.0.1:443").unwrap());
        assert!(!with_ip.needs_proxy());
    }
}
