//! The real `odek` binary with a pseudo-terminal as its stdin, so approvals prompt as they do for
//! an operator: stdin is a terminal, keys are read one at a time in raw mode. stdout and stderr
//! stay pipes the test reads. Start at [`PtyOdek::spawn`], wait for a prompt with
//! [`PtyOdek::wait_for`] (or [`PtyOdek::wait_for_stderr`]), answer with [`PtyOdek::press`] (or
//! signal with [`PtyOdek::signal`]), collect with [`PtyOdek::finish`].

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
    stdout: Stream,
    stderr: Stream,
    _echo_drain: JoinHandle<()>,
}

/// One of odek's output pipes, read on a thread of its own.
struct Stream {
    chunks: Receiver<Vec<u8>>,
    seen: Vec<u8>,
    /// How much of `seen` earlier waits consumed: each wait looks past the previous match.
    consumed: usize,
    name: &'static str,
}

impl Stream {
    fn read_from(mut pipe: impl Read + Send + 'static, name: &'static str) -> Stream {
        let (sender, chunks) = channel();
        std::thread::spawn(move || {
            let mut buffer = [0_u8; 4096];
            while let Ok(read @ 1..) = pipe.read(&mut buffer) {
                if sender.send(buffer[..read].to_vec()).is_err() {
                    break;
                }
            }
        });
        Stream { chunks, seen: Vec::new(), consumed: 0, name }
    }

    fn wait_for(&mut self, needle: &str) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let seen = String::from_utf8_lossy(&self.seen[self.consumed..]).into_owned();
            if let Some(at) = seen.find(needle) {
                self.consumed += seen[..at + needle.len()].len();
                return;
            }
            let name = self.name;
            match self.chunks.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(chunk) => self.seen.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Timeout) => panic!("no {needle:?} on {name} within {DEADLINE:?}: {seen:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("{name} ended before {needle:?}: {seen:?}"),
            }
        }
    }

    /// Everything until the pipe closes; `false` at the deadline.
    fn read_to_end(&mut self, deadline: Instant) -> bool {
        loop {
            match self.chunks.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(chunk) => self.seen.extend_from_slice(&chunk),
                Err(RecvTimeoutError::Disconnected) => return true,
                Err(RecvTimeoutError::Timeout) => return false,
            }
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen).into_owned()
    }
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
        let stdout = Stream::read_from(child.stdout.take().unwrap(), "stdout");
        let stderr = Stream::read_from(child.stderr.take().unwrap(), "stderr");
        // Whatever the terminal echoes must be read, or a full PTY buffer could stall odek.
        let mut echo = master.try_clone().unwrap();
        let echo_drain = std::thread::spawn(move || {
            let mut buffer = [0_u8; 1024];
            while let Ok(1..) = echo.read(&mut buffer) {}
        });
        PtyOdek { child, master, stdout, stderr, _echo_drain: echo_drain }
    }

    /// Waits until `needle` appears on stdout after the previous match; panics (with what was
    /// seen) at the deadline or when stdout ends first.
    pub fn wait_for(&mut self, needle: &str) {
        self.stdout.wait_for(needle);
    }

    /// [`PtyOdek::wait_for`] on stderr, where the shell's batch approval card is shown.
    pub fn wait_for_stderr(&mut self, needle: &str) {
        self.stderr.wait_for(needle);
    }

    /// Sends `signal` to odek (a PTY that is not odek's controlling terminal cannot: Ctrl-C
    /// typed on it is just a byte).
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        nix::sys::signal::kill(pid, signal).unwrap();
    }

    /// Types `keys` on the terminal.
    pub fn press(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits for odek to exit (killing it at the deadline) and returns both streams in full.
    pub fn finish(mut self) -> PtyRun {
        let deadline = Instant::now() + DEADLINE;
        if !(self.stdout.read_to_end(deadline) && self.stderr.read_to_end(deadline)) {
            let _ = self.child.kill();
            panic!("odek did not exit within {DEADLINE:?}: {}", self.stdout.text());
        }
        let status = self.child.wait().unwrap();
        PtyRun { status, stdout: self.stdout.text(), stderr: self.stderr.text() }
    }
}
