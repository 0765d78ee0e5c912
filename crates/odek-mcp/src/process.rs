//! Starting and ending an MCP server process (spec `mcp-client.md` §5, §13): the command run
//! directly (no shell) with a scrubbed environment, piped stdio and its own process group —
//! \[beyond\] confined by the kernel sandbox when it asks for it (issue 20) — its stderr
//! forwarded as `[<server>] <line>` from the start; how its exit is reported; the kill of its
//! whole group. The client's connection and `odek ext check`'s probe both start servers
//! here, so a server is checked exactly as it is run.
//!
//! Not here: the environment itself ([`crate::env_allowlist`]), the protocol, and when to wait
//! or kill (the caller's shutdown sequence). Start at [`spawn_server`].

use std::collections::BTreeMap;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use odek_sandbox::{Confinement, Sandbox};
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
    /// \[beyond\] The working directory; `None`: odek's own.
    pub cwd: Option<&'a std::path::Path>,
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
    /// \[beyond\] The server's confinement, when it runs in the sandbox: lives as long as the
    /// process and is finished (what is left killed, the refusals read) after its exit.
    pub confinement: Option<Confinement>,
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
    /// \[beyond\] The server must run confined and the confinement could not be set up.
    #[error("{0}")]
    Sandbox(String),
}

/// Spawns `server`'s command (no shell, `env` only, piped stdio, its own process group, killed
/// on drop) — \[beyond\] confined in `sandbox` when given, or not started at all — and starts
/// forwarding its stderr to `observer`. No protocol message is sent.
pub fn spawn_server(
    server: &str,
    command: ServerCommand<'_>,
    observer: Arc<dyn McpObserver>,
    sandbox: Option<&Sandbox>,
) -> Result<ServerProcess, SpawnError> {
    let mut process = Command::new(command.command);
    process
        .args(command.args)
        .env_clear()
        .envs(command.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = command.cwd {
        process.current_dir(cwd);
    }
    let mut confinement = sandbox
        .map(|sandbox| sandbox.confine(&mut process))
        .transpose()
        .map_err(|error| SpawnError::Sandbox(error.to_string()))?;
    let mut child = process.spawn().map_err(SpawnError::Start)?;
    if let Some(confinement) = &mut confinement
        && let Err(error) = confinement.started()
    {
        let _ = child.start_kill();
        return Err(SpawnError::Sandbox(error.to_string()));
    }
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.start_kill();
        return Err(SpawnError::NoPipes);
    };
    let lines = ServerLineSink::new(server, observer);
    let stderr_task = tokio::spawn(forward_stderr(stderr, lines.clone()));
    Ok(ServerProcess { child, stdin, stdout, lines, stderr_task, confinement })
}

/// \[beyond\] Ends a server's confinement after its exit (what is left of it killed, off the
/// runtime's workers) and reports each refusal the sandbox saw as a warning of the server.
pub async fn finish_confinement(server: &str, confinement: Confinement, observer: &dyn McpObserver) {
    let Ok(finished) = tokio::task::spawn_blocking(move || confinement.finish()).await else { return };
    for denial in &finished.denials {
        observer.warning(server, &format!("mcpclient {server}: {denial}"));
    }
    let more = finished.more_denials.total();
    if more > 0 {
        observer.warning(server, &format!("mcpclient {server}: {}", odek_sandbox::more_refused_line(more)));
    }
}

/// \[beyond\] An OS error as a person reads it: the system's description without Rust's
/// `(os error <n>)` suffix (`No such file or directory`); other errors as they display.
pub fn os_error_text(error: &std::io::Error) -> String {
    match error.raw_os_error() {
        Some(code) => nix::errno::Errno::from_raw(code).desc().to_owned(),
        None => error.to_string(),
    }
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

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;
    use crate::observer::StderrObserver;

    fn command<'a>(command: &'a str, args: &'a [String], env: &'a BTreeMap<String, String>) -> ServerCommand<'a> {
        ServerCommand { command, args, env, cwd: None }
    }

    #[test]
    fn exit_statuses_are_codes_or_128_plus_the_signal() {
        assert_eq!(exit_status(&ExitStatus::from_raw(0)), 0);
        assert_eq!(exit_status(&ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_status(&ExitStatus::from_raw(9)), 137);
    }

    #[tokio::test]
    async fn a_command_that_cannot_start_says_why() {
        let env = BTreeMap::new();
        let error =
            spawn_server("s", command("/nonexistent/odek-no-such-server", &[], &env), Arc::new(StderrObserver), None)
                .err()
                .unwrap();
        assert!(matches!(error, SpawnError::Start(_)));
        assert_eq!(error.to_string(), "No such file or directory (os error 2)");
    }

    /// The server leads its own process group, so the group kill reaches what it started.
    #[tokio::test]
    async fn the_group_kill_ends_the_server_and_its_children() {
        let env = BTreeMap::new();
        let args = ["-c".to_owned(), "/bin/sleep 30 & /bin/sleep 30".to_owned()];
        let mut process = spawn_server("s", command("/bin/sh", &args, &env), Arc::new(StderrObserver), None).unwrap();
        kill_process_group(process.child.id());
        let status = tokio::time::timeout(std::time::Duration::from_secs(10), process.child.wait()).await.unwrap();
        assert_eq!(exit_status(&status.unwrap()), 137);
        // Every holder of stderr is gone, so forwarding reaches EOF.
        tokio::time::timeout(std::time::Duration::from_secs(10), process.stderr_task).await.unwrap().unwrap();
    }
}
