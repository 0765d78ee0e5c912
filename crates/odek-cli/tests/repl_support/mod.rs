//! The real `odek repl` in a real pseudo-terminal: the PTY is its stdin, stdout, stderr and
//! controlling terminal (a session of its own), so the line editor runs, Ctrl-C typed on it is
//! SIGINT from the kernel, and a card's keys are read as an operator's. Everything the terminal
//! shows is read on a thread, which stamps each read; [`Terminal::expect`] waits, with a
//! deadline, for text past the previous match. Start at [`Terminal::spawn`].

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Longest a test waits for one text, or for odek to exit.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The editor's prompt.
pub const PROMPT: &str = "odek> ";

pub struct Terminal {
    child: Child,
    master: File,
    /// Each read of the terminal and when it returned.
    chunks: Receiver<(Instant, Vec<u8>)>,
    seen: Vec<u8>,
    /// When the latest read returned.
    last_read: Instant,
    /// How much of `seen` earlier matches consumed.
    consumed: usize,
    /// How far `seen` was searched for the current needle.
    scanned: usize,
}

impl Terminal {
    /// Runs `command` (its stdio replaced) on a fresh 40×200 PTY.
    pub fn spawn(mut command: Command) -> Terminal {
        let size = nix::pty::Winsize { ws_row: 40, ws_col: 200, ws_xpixel: 0, ws_ypixel: 0 };
        let pty = nix::pty::openpty(Some(&size), None).unwrap();
        let slave = File::from(pty.slave);
        command
            .env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        become_session_leader(&mut command);
        let child = command.spawn().unwrap();
        // The parent's copies of the slave are closed with `command`: the master then ends
        // (EIO) once odek and everything it started have closed theirs.
        drop(command);
        let master = File::from(pty.master);
        let mut reader = master.try_clone().unwrap();
        let (sender, chunks) = channel();
        std::thread::spawn(move || {
            let mut buffer = [0_u8; 65536];
            while let Ok(read @ 1..) = reader.read(&mut buffer) {
                if sender.send((Instant::now(), buffer[..read].to_vec())).is_err() {
                    break;
                }
            }
        });
        Terminal { child, master, chunks, seen: Vec::new(), last_read: Instant::now(), consumed: 0, scanned: 0 }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    /// Waits until `needle` appears after the previous match; panics (with the screen's tail)
    /// at the deadline or when the terminal closes first.
    pub fn expect(&mut self, needle: &str) {
        self.expect_within(needle, DEADLINE);
    }

    /// [`Terminal::expect`] with a deadline of `limit`; returns how long it took.
    pub fn expect_within(&mut self, needle: &str, limit: Duration) -> Duration {
        let started = Instant::now();
        self.expect_read(needle, limit);
        started.elapsed()
    }

    /// [`Terminal::expect`], returning when the read that completed `needle` returned (for text
    /// already shown, the latest read's instant: never earlier than the text appeared).
    pub fn expect_read(&mut self, needle: &str, limit: Duration) -> Instant {
        let started = Instant::now();
        let deadline = started + limit;
        let needle = needle.as_bytes();
        self.scanned = self.consumed;
        loop {
            let from = self.scanned.saturating_sub(needle.len()).max(self.consumed);
            if let Some(at) = find(&self.seen[from..], needle) {
                self.consumed = from + at + needle.len();
                return self.last_read;
            }
            self.scanned = self.seen.len();
            match self.chunks.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok((read_at, chunk)) => {
                    self.seen.extend_from_slice(&chunk);
                    self.last_read = read_at;
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {:?} within {limit:?}: {}", String::from_utf8_lossy(needle), self.tail())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the terminal closed before {:?}: {}", String::from_utf8_lossy(needle), self.tail())
                }
            }
        }
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
        self.master.flush().unwrap();
    }

    /// Types `line` and Enter.
    pub fn line(&mut self, line: &str) {
        self.send(format!("{line}\r").as_bytes());
    }

    /// A writer of its own (for pastes larger than the terminal's buffer, written while the
    /// screen is read).
    pub fn writer(&self) -> File {
        self.master.try_clone().unwrap()
    }

    /// Resizes the terminal, as a window does: the kernel sends SIGWINCH to odek.
    pub fn resize(&self, cols: u16, rows: u16) {
        let size = rustix::termios::Winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        rustix::termios::tcsetwinsize(&self.master, size).unwrap();
    }

    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), signal).unwrap();
    }

    /// Waits for odek to exit (killing it at the deadline); its status and the whole screen.
    pub fn finish(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                while let Ok((_, chunk)) = self.chunks.recv_timeout(Duration::from_millis(200)) {
                    self.seen.extend_from_slice(&chunk);
                }
                return (status, String::from_utf8_lossy(&self.seen).into_owned());
            }
            match self.chunks.recv_timeout(Duration::from_millis(50)) {
                Ok((_, chunk)) => self.seen.extend_from_slice(&chunk),
                Err(_) if Instant::now() < deadline => {}
                Err(_) => {
                    let _ = self.child.kill();
                    panic!("odek did not exit within {DEADLINE:?}: {}", self.tail());
                }
            }
        }
    }

    /// Everything shown so far.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.seen).into_owned()
    }

    fn tail(&self) -> String {
        let start = self.seen.len().saturating_sub(3000);
        String::from_utf8_lossy(&self.seen[start..]).into_owned()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// The child starts a session and takes the PTY on its stdin as its controlling terminal, as a
/// shell does for the programs it runs: the kernel then turns a typed Ctrl-C into SIGINT and a
/// closed terminal into SIGHUP.
#[allow(unsafe_code)]
fn become_session_leader(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure calls only async-signal-safe functions
    // (setsid, ioctl) and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            if nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
