//! A server process a test starts that says where it listens: it prints a line
//! `listening <url>` on stdout once its socket listens (earlier stdout lines are skipped, later
//! ones drained so it never dies of a closed pipe). Dropping the handle closes its stdin (such
//! servers exit at EOF), kills it in case it does not, and reaps it. Start at
//! [`ListeningServer::start`].

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Longest wait for the `listening` line.
pub const LISTENING_DEADLINE: Duration = Duration::from_secs(60);

/// Stdout lines read before giving up on a `listening` line.
const MAX_LINES_BEFORE: usize = 100;

#[derive(Debug)]
pub struct ListeningServer {
    child: Child,
    pub url: String,
}

impl ListeningServer {
    /// Runs `command` (stdin and stdout piped, stderr dropped) and waits, within
    /// [`LISTENING_DEADLINE`], for its `listening` line; panics (after killing it) without one.
    pub fn start(mut command: Command) -> ListeningServer {
        let spawned = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn();
        let mut child = spawned.unwrap_or_else(|error| panic!("start {command:?}: {error}"));
        let Some(stdout) = child.stdout.take() else { panic!("no stdout pipe") };
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
        ListeningServer { child, url }
    }
}

impl Drop for ListeningServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
