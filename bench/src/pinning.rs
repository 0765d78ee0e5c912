//! Where the processes of one measurement run: the client (the probe child and everything it
//! runs in-process or spawns) on one CPU and the echo server on another (split cores), or both
//! on the same CPU (shared core), always through `taskset` so a client gets exactly one core.
//! On this VM split cores make every round trip pay two cross-CPU wake-ups of an idle vCPU, which
//! dominate the cost of every client; docs/BENCHMARKS.md shows both layouts.
//!
//! Start at [`Setup::probe_command`] (the pinned child the parent runs) and
//! [`Setup::server_argv`] (the pinned server command every client is given, or over HTTP the
//! probe starts).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::clients::{ClientKind, Transport};

/// Where an HTTP server is told to listen: a free port on loopback.
const HTTP_LISTEN_ADDRESS: &str = "127.0.0.1:0";

/// The resolved configuration of a bench run.
#[derive(Debug)]
pub struct Setup {
    pub transport: Transport,
    pub repo_root: PathBuf,
    pub server: PathBuf,
    pub clients: Vec<ClientKind>,
    pub pinning: Option<Pinning>,
}

/// `taskset` and the two CPUs.
#[derive(Debug)]
pub struct Pinning {
    pub taskset: PathBuf,
    pub client_cpu: usize,
    pub server_cpu: usize,
}

impl Setup {
    /// `clients` empty means every client of `transport`; one that does not speak it is an error.
    pub fn new(
        transport: Transport,
        server: Option<PathBuf>,
        clients: Vec<ClientKind>,
        pin: bool,
        client_cpu: usize,
        server_cpu: usize,
    ) -> anyhow::Result<Setup> {
        let own = std::env::current_exe().context("locating the odek-bench binary")?;
        let server = match server {
            Some(server) => server,
            None => own.with_file_name("odek-bench-echo-server"),
        };
        if !server.is_file() {
            bail!("echo server {} not found; build it with `cargo build --release -p odek-bench`", server.display());
        }
        let server = server.canonicalize().with_context(|| format!("resolving {}", server.display()))?;
        let clients = if clients.is_empty() { ClientKind::all_for(transport) } else { clients };
        if let Some(client) = clients.iter().find(|client| !client.speaks(transport)) {
            bail!("{client} has no {transport} row");
        }
        let pinning = if pin { Pinning::detect(client_cpu, server_cpu)? } else { None };
        Ok(Setup { transport, repo_root: repo_root(), server, clients, pinning })
    }

    /// The server command line every client spawns (over HTTP: the probe):
    /// `taskset -c <server cpu> <server>` when pinned, and `--http 127.0.0.1:0` over HTTP.
    pub fn server_argv(&self) -> Vec<String> {
        let server = self.server.display().to_string();
        let mut argv = match &self.pinning {
            Some(pinning) => {
                vec![pinning.taskset.display().to_string(), "-c".to_owned(), pinning.server_cpu.to_string(), server]
            }
            None => vec![server],
        };
        if self.transport == Transport::Http {
            argv.extend(["--http".to_owned(), HTTP_LISTEN_ADDRESS.to_owned()]);
        }
        argv
    }

    /// `[taskset -c <client cpu>] odek-bench probe <probe args> -- <server argv>`.
    pub fn probe_command(&self, probe_args: &[String]) -> anyhow::Result<Command> {
        let own = std::env::current_exe().context("locating the odek-bench binary")?;
        let mut command = match &self.pinning {
            Some(pinning) => {
                let mut command = Command::new(&pinning.taskset);
                command.arg("-c").arg(pinning.client_cpu.to_string()).arg(own);
                command
            }
            None => Command::new(own),
        };
        command.arg("probe").arg(format!("--transport={}", self.transport)).args(probe_args);
        command.arg("--").args(self.server_argv());
        Ok(command)
    }

    /// One line for the report header.
    pub fn describe_pinning(&self) -> String {
        match &self.pinning {
            Some(pinning) if pinning.client_cpu == pinning.server_cpu => {
                format!("shared core: client and echo server both pinned to CPU {} (`taskset -c`)", pinning.client_cpu)
            }
            Some(pinning) => format!(
                "split cores: client pinned to CPU {}, echo server to CPU {} (`taskset -c`)",
                pinning.client_cpu, pinning.server_cpu
            ),
            None => "unpinned".to_owned(),
        }
    }
}

impl Pinning {
    /// `taskset` from `PATH` and two distinct CPUs this process may use; `None` (with a warning)
    /// when pinning is impossible here.
    fn detect(client_cpu: usize, server_cpu: usize) -> anyhow::Result<Option<Pinning>> {
        let Some(taskset) = find_in_path("taskset") else {
            eprintln!("odek-bench: warning: taskset not found; running unpinned");
            return Ok(None);
        };
        let allowed = allowed_cpus();
        for cpu in [client_cpu, server_cpu] {
            if !allowed.contains(&cpu) {
                bail!("CPU {cpu} is not available to this process (allowed: {allowed:?}); use --no-pin");
            }
        }
        Ok(Some(Pinning { taskset, client_cpu, server_cpu }))
    }
}

/// The workspace root this binary was built from (the bench crate's parent directory).
fn repo_root() -> PathBuf {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR"));
    bench.parent().unwrap_or(bench).to_path_buf()
}

pub fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| candidate.is_file())
}

/// CPUs in this process's affinity mask, from `Cpus_allowed_list` (`0-1`, `0,2-3`).
fn allowed_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let Some(list) = status.lines().find_map(|line| line.strip_prefix("Cpus_allowed_list:")) else {
        return Vec::new();
    };
    let mut cpus = Vec::new();
    for range in list.trim().split(',') {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        if let (Ok(first), Ok(last)) = (first.parse::<usize>(), last.parse::<usize>()) {
            cpus.extend(first..=last);
        }
    }
    cpus
}
