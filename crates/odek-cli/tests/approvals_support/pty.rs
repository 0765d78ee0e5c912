//! The real `odek` binary with a pseudo-terminal as its stdin, so approvals prompt as they do for
//! an operator: stdin is a terminal, keys are read one at a time in raw mode. stdout and stderr
//! stay pipes the test reads. Start at [`PtyOdek::spawn`], wait for a prompt with
//! [`PtyOdek::wait_for`], answer with [`PtyOdek::press`], collect with [`PtyOdek::finish`].

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest a test waits for one prompt, or for odek to exit.
const DEADLINE: Duration = Duration::from_secs(60);

pub struct PtyOdek {
    child: Child,
    master: File,
    stdout_chunks: Receiver<Vec<u8>>,
    stdout: Vec<u8>,
    /// How much of `stdout` earlier waits consumed: each wait looks past the previous match.
    consumed: usize,
    stderr: JoinHandle<String>,
    _echo_drain: JoinHandle<()>,
}

/// What one interactive invocation did.
pub struct PtyRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl PtyOdek {
    /// Runs `odek <args>` in `cwd` with `HOME=home`, `PATH`, then `env`; stdin is a fresh PTY.
    pub fn spawn(args: &[&str], home: &Path, cwd: &Path, env: &[(&str, &str)]) -> PtyOdek {
        let pty = nix::pty::openpty(None, None).unwrap();
        let master = File::from(pty.master);
        let mut command = Command::new(odek_test_support::odek_binary());
        command
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env("HOME", home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(env.iter().copied())
            .stdin(Stdio::from(pty.slave))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (sender, stdout_chunks) = channel();
        std::thread::spawn(move || {
            let mut buffer = [0_u8; 4096];
            while let Ok(read @ 1..) = stdout.read(&mut buffer) {
                if sender.send(buffer[..read].to_vec()).is_err() {
                    break;
                }
            }
        });
        let mut stderr_pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr_pipe.read_to_string(&mut text);
            text
        });
        // Whatever the terminal echoes must be read, or a full PTY buffer could stall odek.
        let mut echo = master.try_clone().unwrap();
        let echo_drain = std::thread::spawn(move || {
            let mut buffer = [0_u8; 1024];
            while let Ok(1..) = echo.read(&mut buffer) {}
        });
        PtyOdek { child, master, stdout_chunks, stdout: Vec::new(), consumed: 0, stderr, _echo_drain: echo_drain }
    }

    /// Waits until `needle` appears on stdout after the previous match; panics (with what was
    /// seen) at the deadline or when stdout ends first.
    pub fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let seen = String::from_utf8_lossy(&self.stdout[self.consumed..]).into_owned();
            if let Some(at) = seen.find(needle) {
                self.consumed += seen[..at + needle.len()].len();
                return;
            }
            match self.stdout_chunks.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(chunk) => self.stdout.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Timeout) => panic!("no {needle:?} on stdout within {DEADLINE:?}: {seen:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("stdout ended before {needle:?}: {seen:?}"),
            }
        }
    }

    /// Types `keys` on the terminal.
    pub fn press(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for odek to exit (killing it at the deadline) and returns both streams in full.
    pub fn finish(mut self) -> PtyRun {
        let deadline = Instant::now() + DEADLINE;
        loop {
            match self.stdout_chunks.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(chunk) => self.stdout.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    panic!("odek did not exit within {DEADLINE:?}: {}", String::from_utf8_lossy(&self.stdout));
                }
            }
        }
        let status = self.child.wait().unwrap();
        PtyRun {
            status,
            stdout: String::from_utf8_lossy(&self.stdout).into_owned(),
            stderr: self.stderr.join().unwrap(),
        }
    }
}
