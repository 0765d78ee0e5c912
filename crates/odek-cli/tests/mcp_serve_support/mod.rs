//! Shared by the `odek mcp` end-to-end tests: the real `odek mcp` process in a temporary home
//! and project, driven over its stdio by the JSON-RPC [`Peer`], its stderr collected, and the
//! process checks (what still runs in the project) the cancellation tests need.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odek_test_support::peer::{Peer, line_channel};
use serde_json::{Value, json};

/// How long a process may take to exit once it should.
pub const EXIT_DEADLINE: Duration = Duration::from_secs(20);

/// A temporary home (with `~/.odek`) and project directory, canonical.
pub struct Sandbox {
    _root: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub outside: PathBuf,
    pub artifacts: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let (home, project, outside, artifacts) =
            (base.join("home"), base.join("project"), base.join("outside"), base.join("artifacts"));
        for dir in [&home, &project, &outside, &artifacts] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Sandbox { _root: root, home, project, outside, artifacts }
    }

    /// Writes `~/.odek/config.json` (0600).
    pub fn global_config(&self, config: &Value) {
        let dir = self.home.join(".odek");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        std::fs::write(&path, config.to_string()).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }

    pub fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.project.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    /// `odek <args>` in the project with a minimal environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(odek_test_support::odek_binary());
        command
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// `odek mcp <args>` started and initialized.
    pub fn serve(&self, args: &[&str]) -> Served {
        let (child, stdin, stdout, stderr) = self.spawn_raw(args);
        let mut peer = Peer::new(Box::new(stdin), line_channel(stdout));
        peer.initialize();
        Served { peer, child, stderr }
    }

    /// `odek mcp <args>` started, its pipes handed over raw (for the tests of a client that
    /// misbehaves).
    pub fn spawn_raw(&self, args: &[&str]) -> (Child, ChildStdin, ChildStdout, Arc<Mutex<String>>) {
        let mut argv = vec!["mcp"];
        argv.extend_from_slice(args);
        let mut child = self.command(&argv).spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = collect(child.stderr.take().unwrap());
        (child, stdin, stdout, stderr)
    }

    /// The pids of processes (other than `except`) whose working directory is the project:
    /// the children a run started there.
    pub fn processes_in_project(&self, except: u32) -> Vec<u32> {
        let mut pids = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
            if pid == except || pid == std::process::id() {
                continue;
            }
            if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == self.project) {
                // A zombie has no cwd left to read; a process listed here is alive.
                pids.push(pid);
            }
        }
        pids
    }
}

/// stderr read to its end on a thread.
fn collect(mut stderr: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&text);
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        sink.lock().unwrap().push_str(&String::from_utf8_lossy(&bytes));
    });
    text
}

/// A running `odek mcp` on stdio.
pub struct Served {
    pub peer: Peer,
    pub child: Child,
    pub stderr: Arc<Mutex<String>>,
}

impl Served {
    /// `tools/call` of `tool`; returns the `result` (or the whole response when it is an error).
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.peer.request("tools/call", Some(json!({"name": tool, "arguments": arguments})));
        response.get("result").cloned().unwrap_or(response)
    }

    /// The one text of a result.
    pub fn text(result: &Value) -> String {
        result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}")).to_owned()
    }

    /// A call with a progress token: its result and every notification before it.
    pub fn call_with_progress(&mut self, tool: &str, arguments: Value, token: &str) -> (Value, Vec<Value>) {
        let id = self.send_call_with_progress(tool, arguments, token);
        let (response, before) = self.peer.wait_response(id);
        (response["result"].clone(), before)
    }

    pub fn send_call_with_progress(&mut self, tool: &str, arguments: Value, token: &str) -> i64 {
        self.peer.send_request(
            "tools/call",
            Some(json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": token}})),
        )
    }

    /// Reads messages until a `notifications/progress` of `token` whose message contains
    /// `needle`; returns it.
    pub fn wait_progress(&self, token: &str, needle: &str) -> Value {
        loop {
            let message = self.peer.recv();
            if message["method"] == "notifications/progress"
                && message["params"]["progressToken"] == token
                && message["params"]["message"].as_str().is_some_and(|text| text.contains(needle))
            {
                return message;
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin and waits (with a deadline) for the process to exit.
    pub fn finish(mut self) -> (std::process::ExitStatus, String) {
        self.peer.close_input();
        let status = wait_within(&mut self.child, EXIT_DEADLINE);
        let deadline = Instant::now() + Duration::from_secs(5);
        // The stderr thread ends with the process; give it a moment to hand the text over.
        while Instant::now() < deadline && Arc::strong_count(&self.stderr) > 1 {
            std::thread::yield_now();
        }
        let stderr = self.stderr.lock().unwrap().clone();
        (status, stderr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits for `child` to exit, killing it and failing the test after `limit`.
pub fn wait_within(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process {} did not exit within {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `done` until it holds, failing after `limit`.
pub fn eventually(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The envelope in a `run_task` result.
pub fn envelope(result: &Value) -> Value {
    serde_json::from_str(&Served::text(result)).unwrap_or_else(|error| panic!("not an envelope ({error}): {result}"))
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}
