//! Shared pieces of the odek-mcp contract tests: the fixture server as a configured server, an
//! observer that records what the client reports, and waits with deadlines (never sleeps).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::manual_assert)]

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use odek_mcp::approval::{ApproveAll, ToolApprover};
use odek_mcp::{HubOptions, McpError, McpEvent, McpHub, McpObserver, ServerEntry, ServerSpec, validate_server};
use tokio::sync::Notify;

/// Records everything the client reports.
#[derive(Default)]
pub struct Recorder {
    pub events: Mutex<Vec<McpEvent>>,
    pub warnings: Mutex<Vec<String>>,
    pub lines: Mutex<Vec<String>>,
    changed: Notify,
    /// While true, `server_line` blocks (the terminal is stuck).
    gate: Mutex<bool>,
    gate_opened: Condvar,
}

impl McpObserver for Recorder {
    fn event(&self, event: McpEvent) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_waiters();
    }
    fn warning(&self, _server: &str, text: &str) {
        self.warnings.lock().unwrap().push(text.to_owned());
        self.changed.notify_waiters();
    }
    fn server_line(&self, server: &str, line: &str) {
        let mut closed = self.gate.lock().unwrap();
        while *closed {
            closed = self.gate_opened.wait(closed).unwrap();
        }
        drop(closed);
        self.lines.lock().unwrap().push(format!("[{server}] {line}"));
        self.changed.notify_waiters();
    }
}

impl Recorder {
    /// Makes `server_line` block until [`Recorder::open_gate`], like a stuck terminal.
    pub fn close_gate(&self) {
        *self.gate.lock().unwrap() = true;
    }

    pub fn open_gate(&self) {
        *self.gate.lock().unwrap() = false;
        self.gate_opened.notify_all();
    }

    pub fn events(&self) -> Vec<McpEvent> {
        self.events.lock().unwrap().clone()
    }
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap().clone()
    }
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (at most 20 s) until some recorded server line satisfies `matches`.
    pub async fn wait_for_line(&self, matches: impl Fn(&str) -> bool) -> String {
        self.wait_until(|recorder| recorder.lines().into_iter().find(|line| matches(line))).await
    }

    /// Waits (at most 20 s, woken by every report) until `check` returns a value.
    pub async fn wait_until<T>(&self, check: impl Fn(&Self) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let notified = self.changed.notified();
            if let Some(found) = check(self) {
                return found;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("condition never held; lines {:#?}, warnings {:#?}", self.lines(), self.warnings());
            }
        }
    }
}

/// A fixture server entry named `name` with extra command-line arguments.
pub fn fixture_entry(args: &[&str]) -> ServerEntry {
    ServerEntry {
        command: Some(odek_test_support::fixture_server().to_string_lossy().into_owned()),
        args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        ..ServerEntry::default()
    }
}

pub fn spec(name: &str, entry: &ServerEntry) -> ServerSpec {
    validate_server(name, entry).expect("valid server config").0
}

/// A fixture with its own artifact directory, which is also its only artifact root, and its own
/// args file (absent until [`Fixture::set_restart_args`]), so a test can change how the next
/// process started from this entry behaves.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub entry: ServerEntry,
}

impl Fixture {
    pub fn new(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        std::fs::create_dir(&artifacts).unwrap();
        let artifacts = artifacts.to_string_lossy().into_owned();
        let args_file = dir.path().join("args").to_string_lossy().into_owned();
        let mut all = vec!["--artifact-dir", artifacts.as_str(), "--args-file", args_file.as_str()];
        all.extend_from_slice(args);
        let mut entry = fixture_entry(&all);
        entry.artifact_roots = vec![artifacts];
        Fixture { dir, entry }
    }

    pub fn artifact_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("artifacts")
    }

    /// Extra whitespace-separated fixture arguments for every process started from now on.
    pub fn set_restart_args(&self, args: &str) {
        std::fs::write(self.dir.path().join("args"), args).unwrap();
    }

    /// Pids of live processes whose command line mentions this fixture's directory (its
    /// artifact dir is on every fixture command line started from this entry).
    pub fn processes(&self) -> Vec<u32> {
        odek_test_support::processes_mentioning(self.dir.path())
    }
}

/// Polls (it is not synchronisation: nothing notifies us of a process exit) until `done` holds
/// or `limit` passes; returns whether it held.
pub async fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (at most 10 s) until some server announced a tool-list change.
pub async fn wait_stale(hub: &McpHub) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !hub.has_stale() {
        assert!(tokio::time::Instant::now() < deadline, "list_changed never arrived");
        tokio::task::yield_now().await;
    }
}

pub fn options(recorder: &Arc<Recorder>, approver: Arc<dyn ToolApprover>) -> HubOptions {
    HubOptions {
        startup_timeout: std::time::Duration::from_secs(odek_mcp::server_config::DEFAULT_STARTUP_TIMEOUT_SECONDS),
        observer: Arc::clone(recorder) as Arc<dyn McpObserver>,
        approver,
        client_version: "0.0.0-test".into(),
        parent_env: odek_mcp::env_allowlist::process_env().collect(),
    }
}

pub async fn start(specs: Vec<ServerSpec>) -> (McpHub, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let hub = McpHub::start(specs, options(&recorder, Arc::new(ApproveAll))).await.expect("servers start");
    (hub, recorder)
}

pub async fn start_err(specs: Vec<ServerSpec>) -> (McpError, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let err = McpHub::start(specs, options(&recorder, Arc::new(ApproveAll))).await.expect_err("start must fail");
    (err, recorder)
}

/// Calls with no caller deadline and returns the text or the error text.
pub async fn call(hub: &McpHub, tool: &str, args: &str) -> Result<String, String> {
    hub.call(tool, args, &odek_mcp::CallOptions::default()).await.map(|out| out.text).map_err(|err| err.to_string())
}

/// The fixture's stderr lines dropped, as the `[fx] … <n> stderr line(s) dropped` notices among
/// the recorded `lines` count them.
pub fn stderr_lines_dropped(lines: &[String]) -> u64 {
    lines
        .iter()
        .filter_map(|line| line.strip_prefix("[fx] … ")?.strip_suffix(" stderr line(s) dropped")?.parse::<u64>().ok())
        .sum()
}
