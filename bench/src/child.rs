//! Running one measurement process to completion under a deadline: stdout captured, stderr
//! passed through, the process in its own process group so a timeout kills everything it
//! started. Start at [`run_with_deadline`].

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// After SIGKILL, how long the process and its stdout may take to go away (10 s).
const KILL_GRACE: Duration = Duration::from_secs(10);

/// How a child run ended.
#[derive(Debug)]
pub struct ChildRun {
    pub stdout: String,
    /// `None` when the deadline passed and the process group was killed.
    pub status: Option<ExitStatus>,
    pub elapsed: Duration,
}

impl ChildRun {
    /// The last line of stdout that parses as a JSON object.
    pub fn report_line(&self) -> Option<&str> {
        self.stdout.lines().rev().map(str::trim).find(|line| line.starts_with('{'))
    }
}

/// Spawns `command` in a new process group, waits at most `deadline`, then SIGKILLs the group.
/// The child is always reaped before this returns.
pub fn run_with_deadline(command: &mut Command, deadline: Duration) -> anyhow::Result<ChildRun> {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .with_context(|| format!("spawning {:?}", command.get_program()))?;
    let pid = Pid::from_raw(i32::try_from(child.id()).context("child pid out of range")?);
    let Some(mut stdout) = child.stdout.take() else { bail!("child stdout unavailable") };

    let (stdout_tx, stdout_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        let _ = stdout_tx.send(text);
    });
    let (exit_tx, exit_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = exit_tx.send(child.wait());
    });

    let status = match exit_rx.recv_timeout(deadline) {
        Ok(status) => Some(status.context("waiting for the child")?),
        Err(_) => {
            // The whole group: the client and any server it started that stayed in it.
            let _ = killpg(pid, Signal::SIGKILL);
            exit_rx.recv_timeout(KILL_GRACE).context("child did not die after SIGKILL")?.context("reaping")?;
            None
        }
    };
    let elapsed = started.elapsed();
    let stdout = stdout_rx.recv_timeout(KILL_GRACE).unwrap_or_default();
    Ok(ChildRun { stdout, status, elapsed })
}
