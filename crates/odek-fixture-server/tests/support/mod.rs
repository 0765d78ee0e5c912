//! Test support: the built fixture binary with piped stdio ([`Fixture`]), driven by the shared
//! JSON-RPC [`Peer`].

#![allow(dead_code)]

use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;

pub use odek_test_support::peer::{Line, Peer, READ_DEADLINE, line_channel};

/// The fixture binary, running with piped stdio.
pub struct Fixture {
    pub peer: Peer,
    pub child: Child,
    pub stderr: Receiver<Line>,
}

impl Fixture {
    pub fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_odek-fixture-server"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn odek-fixture-server");
        let stdin: ChildStdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        Self { peer: Peer::new(Box::new(stdin), line_channel(stdout)), stderr: line_channel(stderr), child }
    }

    /// Spawns and initializes.
    pub fn started(args: &[&str]) -> Self {
        let mut fixture = Self::spawn(args);
        fixture.peer.initialize();
        fixture
    }

    /// The next stderr line.
    pub fn stderr_line(&self) -> String {
        match self.stderr.recv_timeout(READ_DEADLINE) {
            Ok(Line::Text(text)) => text,
            other => panic!("expected a stderr line, got {other:?}"),
        }
    }

    /// Reads stdout to EOF (each line within [`READ_DEADLINE`]), then reaps the process: a
    /// process that closed stdout by exiting is reaped at once.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        while self.peer.next_line().is_some() {}
        self.child.wait().unwrap()
    }
}

impl std::ops::Deref for Fixture {
    type Target = Peer;
    fn deref(&self) -> &Peer {
        &self.peer
    }
}

impl std::ops::DerefMut for Fixture {
    fn deref_mut(&mut self) -> &mut Peer {
        &mut self.peer
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
