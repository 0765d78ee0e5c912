//! A server process a test starts that says where it listens: it prints a line
//! `listening <url>` on stdout once its socket listens (earlier stdout lines are skipped, later
//! ones drained so it never dies of a closed pipe). Its stderr is drained too, and its last
//! [`KEPT_STDERR_LINES`] lines are kept for [`ServerStderr::wait_for_line`] (a server
//! reached over HTTP has no other channel to say what it saw). Dropping the handle closes its
//! stdin (such servers exit at EOF), kills it in case it does not, and reaps it. Start at
//! [`ListeningServer::start`].

use std::collections::VecDeque;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Longest wait for the `listening` line.
pub const LISTENING_DEADLINE: Duration = Duration::from_secs(60);

/// Stdout lines read before giving up on a `listening` line.
const MAX_LINES_BEFORE: usize = 100;

/// Stderr lines kept (the oldest go first); each is cut to [`KEPT_STDERR_LINE_BYTES`].
pub const KEPT_STDERR_LINES: usize = 4096;
const KEPT_STDERR_LINE_BYTES: usize = 4096;

/// The most recent stderr lines of a [`ListeningServer`] (a handle that outlives the borrow,
/// for a waiting thread).
#[derive(Debug, Clone, Default)]
pub struct ServerStderr(Arc<StderrLines>);

#[derive(Debug, Default)]
struct StderrLines {
    lines: Mutex<VecDeque<String>>,
    added: Condvar,
}

#[derive(Debug)]
pub struct ListeningServer {
    child: Child,
    pub url: String,
    stderr: ServerStderr,
}

impl ListeningServer {
    /// Runs `command` (stdin, stdout and stderr piped) and waits, within
    /// [`LISTENING_DEADLINE`], for its `listening` line; panics (after killing it) without one.
    pub fn start(mut command: Command) -> ListeningServer {
        let spawned = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
        let mut child = spawned.unwrap_or_else(|error| panic!("start {command:?}: {error}"));
        let (Some(stdout), Some(stderr_pipe)) = (child.stdout.take(), child.stderr.take()) else {
            panic!("no stdout or stderr pipe")
        };
        let stderr = ServerStderr::default();
        let kept = Arc::clone(&stderr.0);
        std::thread::spawn(move || keep_stderr_lines(stderr_pipe, &kept));
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = std::io::BufReader::new(stdout).lines().map_while(Result::ok);
            let listening = lines.by_ref().take(MAX_LINES_BEFORE).find(|line| line.starts_with("listening "));
            let _ = sender.send(listening.unwrap_or_default());
            lines.for_each(drop);
        });
        let line = receiver.recv_timeout(LISTENING_DEADLINE).unwrap_or_default();
        let Some(url) = line.trim().strip_prefix("listening ").map(str::to_owned) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server did not say where it listens: {line:?}");
        };
        ListeningServer { child, url, stderr }
    }

    /// Its stderr lines, kept as they come.
    pub fn stderr(&self) -> ServerStderr {
        self.stderr.clone()
    }
}

impl ServerStderr {
    /// Waits, at most `limit`, until one of the kept lines satisfies `matches`, and returns it;
    /// `None` when none did in time.
    pub fn wait_for_line(&self, limit: Duration, matches: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + limit;
        let mut lines = self.0.lines.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(line) = lines.iter().find(|line| matches(line)) {
                return Some(line.clone());
            }
            let left = deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero())?;
            lines = self.0.added.wait_timeout(lines, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

/// Reads the server's stderr to its end, keeping its last lines (each cut while it is read, so a
/// line without end costs no more than the cut).
fn keep_stderr_lines(pipe: std::process::ChildStderr, kept: &StderrLines) {
    let mut reader = std::io::BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) if !buffer.is_empty() => buffer,
            _ => break,
        };
        let end = buffer.iter().position(|byte| *byte == b'\n');
        let chunk = &buffer[..end.unwrap_or(buffer.len())];
        let room = KEPT_STDERR_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = end.map_or(buffer.len(), |end| end + 1);
        reader.consume(used);
        if end.is_some() {
            keep_line(kept, &std::mem::take(&mut line));
        }
    }
    if !line.is_empty() {
        keep_line(kept, &line);
    }
}

fn keep_line(kept: &StderrLines, line: &[u8]) {
    let text = String::from_utf8_lossy(line).trim_end_matches('\r').to_owned();
    let mut lines = kept.lines.lock().unwrap_or_else(PoisonError::into_inner);
    if lines.len() == KEPT_STDERR_LINES {
        lines.pop_front();
    }
    lines.push_back(text);
    kept.added.notify_all();
}

impl Drop for ListeningServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
