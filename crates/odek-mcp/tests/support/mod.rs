//! Shared pieces of the odek-mcp contract tests: the fixture server as a configured server, over
//! stdio or Streamable HTTP ([`Transport`], [`over_both_transports!`]), an observer that records
//! what the client reports, and waits with deadlines (never sleeps).
#![allow(dead_code, unused_macros, clippy::unwrap_used, clippy::expect_used, clippy::manual_assert)]

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use odek_mcp::approval::{ApproveAll, ToolApprover};
use odek_mcp::{HubOptions, McpError, McpEvent, McpHub, McpObserver, ServerEntry, ServerSpec, validate_server};
use odek_test_support::listening::ListeningServer;
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

/// How a test reaches the fixture: the suites run their cases over both, so an HTTP server gets
/// every guarantee a stdio one does (issue 19).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// odek spawns the fixture and talks over its stdin and stdout.
    Stdio,
    /// The test runs the fixture as a Streamable HTTP server (`--http 127.0.0.1:0`) and odek is
    /// given its `url`.
    Http,
}

impl Transport {
    /// What `mcp_server_restarted` says about how the previous server ended, for a process that
    /// exited with `status`: nothing over HTTP, where a restart is a new session (spec §14).
    pub fn exit_status(self, status: i32) -> Option<i32> {
        match self {
            Transport::Stdio => Some(status),
            Transport::Http => None,
        }
    }
}

/// Runs each listed `async fn(Transport)` as two `#[tokio::test]`s, `stdio::<name>` and
/// `http::<name>`; `sync` ones (plain `fn(Transport)`) as two `#[test]`s.
macro_rules! over_both_transports {
    (async: $($name:ident),+ $(,)?) => {
        mod stdio {
            $(#[tokio::test] async fn $name() { super::$name(super::support::Transport::Stdio).await })+
        }
        mod http {
            $(#[tokio::test] async fn $name() { super::$name(super::support::Transport::Http).await })+
        }
    };
    (sync: $($name:ident),+ $(,)?) => {
        mod stdio {
            $(#[test] fn $name() { super::$name(super::support::Transport::Stdio) })+
        }
        mod http {
            $(#[test] fn $name() { super::$name(super::support::Transport::Http) })+
        }
    };
}
#[allow(unused_imports)]
pub(crate) use over_both_transports;

/// A fixture with its own artifact directory, which is also its only artifact root, and its own
/// args file (absent until [`Fixture::set_restart_args`]), so a test can change how the next
/// process started from this entry behaves. Over HTTP the test owns the server process: it
/// stops with the fixture, and [`Fixture::restart_http_server`] replaces it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub entry: ServerEntry,
    pub transport: Transport,
    /// The fixture's arguments, the transport's left out.
    args: Vec<String>,
    http: Option<ListeningServer>,
}

impl Fixture {
    /// The fixture over stdio.
    pub fn new(args: &[&str]) -> Self {
        Self::over(Transport::Stdio, args)
    }

    /// The fixture over `transport`; `args` are the fixture's own (never `--http`).
    pub fn over(transport: Transport, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        std::fs::create_dir(&artifacts).unwrap();
        let artifacts = artifacts.to_string_lossy().into_owned();
        let args_file = dir.path().join("args").to_string_lossy().into_owned();
        let mut all = vec!["--artifact-dir", artifacts.as_str(), "--args-file", args_file.as_str()];
        all.extend_from_slice(args);
        let args: Vec<String> = all.iter().map(|arg| (*arg).to_owned()).collect();
        let mut fixture = Fixture { dir, entry: ServerEntry::default(), transport, args, http: None };
        fixture.entry = match transport {
            Transport::Stdio => fixture_entry(&all),
            Transport::Http => {
                let server = fixture.start_http_server("127.0.0.1:0");
                let entry = ServerEntry { url: Some(server.url.clone()), ..ServerEntry::default() };
                fixture.http = Some(server);
                entry
            }
        };
        fixture.entry.artifact_roots = vec![artifacts];
        fixture
    }

    /// The fixture over `transport`, for tests that crash and restart it. Over HTTP it offers no
    /// standalone stream: the first call after a restart is then what meets the 404 for the
    /// forgotten session, where the stream's reconnection could otherwise meet it first (and a
    /// test could not know which did).
    pub fn restartable(transport: Transport, args: &[&str]) -> Self {
        match transport {
            Transport::Stdio => Self::over(transport, args),
            Transport::Http => Self::over(transport, &[&["--http-no-get"], args].concat()),
        }
    }

    fn start_http_server(&self, address: &str) -> ListeningServer {
        let mut command = std::process::Command::new(odek_test_support::fixture_server());
        command.args(["--http", address]).args(&self.args);
        ListeningServer::start(command)
    }

    /// Over HTTP: stops the server process (killing it unless it already ended) and starts a new
    /// one on the same port, reading the args file as it is now: to the client, the server
    /// restarted and forgot its sessions.
    pub fn restart_http_server(&mut self) {
        let port = self.http_port().expect("an HTTP fixture");
        drop(self.http.take());
        self.http = Some(self.start_http_server(&format!("127.0.0.1:{port}")));
    }

    /// Over HTTP: waits (at most 10 s) until this process holds no connection to the server
    /// any more — its client noticed that the server went away — and fails the test if it still
    /// does; nothing over stdio.
    pub async fn wait_until_the_client_let_go(&self) {
        let Some(port) = self.http_port() else { return };
        let gone = poll_until(Duration::from_secs(10), || connections_to(port) == 0).await;
        assert!(gone, "{} connection(s) to port {port} still open", connections_to(port));
    }

    /// Over HTTP: the port the server listens on.
    pub fn http_port(&self) -> Option<u16> {
        let url = self.entry.url.as_deref()?;
        url.trim_end_matches("/mcp").rsplit(':').next()?.parse().ok()
    }

    /// Over HTTP: stops the server process (killing it unless it already ended) and reaps it.
    pub fn stop_http_server(&mut self) {
        drop(self.http.take());
    }

    /// Waits (at most 20 s) for a line the fixture logged on its stderr, `odek-fixture-server: `
    /// prefix included, to satisfy `matches`: over stdio as odek forwarded it (`[<server>] `
    /// prefix removed), over HTTP as the process wrote it.
    pub async fn wait_for_log(&self, recorder: &Recorder, matches: impl Fn(&str) -> bool + Send + 'static) -> String {
        let Some(server) = &self.http else {
            let forwarded = |line: &str| line.split_once("] ").map(|(_, line)| line.to_owned());
            let line = recorder.wait_for_line(|line| forwarded(line).is_some_and(|line| matches(&line))).await;
            return forwarded(&line).unwrap_or_default();
        };
        let stderr = server.stderr();
        let found = tokio::task::spawn_blocking(move || stderr.wait_for_line(Duration::from_secs(20), matches));
        found.await.unwrap().expect("the fixture never logged the line")
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

/// Has "fx" answer with a line of `bytes` bytes, more than its `limit`, and checks the
/// transport's rule: over stdio the line closes the connection for good (§11), over HTTP it fails
/// that call alone and the next ones go on (§14).
pub async fn assert_an_oversized_answer_fails_by_the_transport_s_rule(
    hub: &McpHub,
    transport: Transport,
    bytes: u64,
    limit: usize,
) {
    let err = call(hub, "fx__oversized_line", &format!(r#"{{"bytes":{bytes}}}"#)).await.unwrap_err();
    let expected = match transport {
        Transport::Stdio => format!(
            "mcpclient fx: tools/call: mcpclient fx: response line exceeded configured max_response_bytes limit of {limit} bytes"
        ),
        Transport::Http => format!("mcpclient fx: tools/call: response exceeds max_response_bytes={limit}"),
    };
    assert_eq!(err, expected);
    for _ in 0..2 {
        let next = call(hub, "fx__echo", r#"{"text":"x"}"#).await;
        match transport {
            Transport::Stdio => assert_eq!(
                next.unwrap_err(),
                "mcpclient fx: tools/call: MCP request not dispatched: connection closed after a response exceeded max_response_bytes"
            ),
            Transport::Http => assert_eq!(next.unwrap(), "x"),
        }
    }
}

/// TCP connections this process holds to 127.0.0.1:`port`: the sockets among its descriptors
/// that `/proc/self/net/tcp` lists with that remote port.
pub fn connections_to(port: u16) -> usize {
    let inodes: std::collections::HashSet<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let target = std::fs::read_link(entry.path()).ok()?;
            let inode = target.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?;
            Some(inode.to_owned())
        })
        .collect();
    let remote = format!("0100007F:{port:04X}");
    let table = std::fs::read_to_string("/proc/self/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| {
            fields.get(2) == Some(&remote.as_str()) && fields.get(9).is_some_and(|inode| inodes.contains(*inode))
        })
        .count()
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
        sandbox: odek_mcp::ServerSandbox::Off,
        oauth: None,
        elicitation: odek_mcp::ElicitationSettings::default(),
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
