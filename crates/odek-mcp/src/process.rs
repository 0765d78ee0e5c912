//! Starting and ending an MCP server process (spec `mcp-client.md` §5, §13): the command run
//! directly (no shell) with a scrubbed environment, piped stdio and its own process group, its
//! stderr forwarded as `[<server>] <line>` from the start; how its exit is reported; the kill of
//! its whole group. The client's connection and `odek ext check`'s probe both start servers
//! here, so a server is checked exactly as it is run.
//!
//! Not here: the environment itself ([`crate::env_allowlist`]), the protocol, and when to wait
//! or kill (the caller's shutdown sequence). Start at [`spawn_server`].

use std::collections::BTreeMap;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

use crate::observer::McpObserver;
use crate::server_lines::{ServerLineSink, forward_stderr};

/// What to run: the command and its arguments, and the whole environment it gets.
#[derive(Debug, Clone, Copy)]
pub struct ServerCommand<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
}

/// A started server: the child (killed if dropped), its stdin and stdout, and the sink its
/// stderr lines go through (the connection sends its log messages there too).
pub struct ServerProcess {
    pub child: Child,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub lines: ServerLineSink,
    /// Forwards stderr until EOF.
    pub stderr_task: JoinHandle<()>,
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The OS refused to run the command.
    #[error("{0}")]
    Start(#[source] std::io::Error),
    /// The child came without one of its pipes (it was killed).
    #[error("stdio pipes unavailable")]
    NoPipes,
}

/// Spawns `server`'s command (no shell, `env` only, piped stdio, its own process group, killed
/// on drop) and starts forwarding its stderr to `observer`. No protocol message is sent.
pub fn spawn_server(
    server: &str,
    command: ServerCommand<'_>,
    observer: Arc<dyn McpObserver>,
) -> Result<ServerProcess, SpawnError> {
    let mut child = Command::new(command.command)
        .args(command.args)
        .env_clear()
        .envs(command.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(SpawnError::Start)?;
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.start_kill();
        return Err(SpawnError::NoPipes);
    };
    let lines = ServerLineSink::new(server, observer);
    let stderr_task = tokio::spawn(forward_stderr(stderr, lines.clone()));
    Ok(ServerProcess { child, stdin, stdout, lines, stderr_task })
}

/// How a process ended, as odek reports it: its exit code, `128 + signal` when a signal
/// killed it, `-1` when neither is known.
pub fn exit_status(status: &ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|signal| 128 + signal)).unwrap_or(-1)
}

/// SIGKILL to the process group `pid` leads (a server is spawned as its group's leader), so
/// nothing it started outlives it.
pub fn kill_process_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}
