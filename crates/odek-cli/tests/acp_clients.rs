//! Interop of `odek acp` with real third-party ACP clients, pinned and installed by
//! `.ci/install-interop`: the official TypeScript SDK's client app (`@agentclientprotocol/sdk`)
//! and `acpx`, the headless ACP client (on the Node.js 22 it needs, from the npm registry's
//! `node-linux-*` packages). Each starts `odek acp`, streams a plan and an edit with its diff,
//! answers permission requests allow and reject, cancels a command mid-run, and loads a session
//! `odek run --session` saved. Without the install the tests print a skip notice and pass,
//! except under `CI=true` (the rule of `interop.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "interop/support.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Project, Servers, client_report, wait_with_deadline, workspace_root};

#[test]
fn typescript_sdk_client_drives_odek_acp() {
    let Some(_servers) = Servers::installed("typescript_sdk_client_drives_odek_acp") else { return };
    let sdk = workspace_root().join(".ci/cache/interop/npm/node_modules/@agentclientprotocol/sdk");
    assert!(sdk.join("package.json").is_file(), "the pinned ACP TypeScript SDK is missing: run .ci/install-interop");
    let project = Project::new();
    std::fs::write(project.cwd.join("a.txt"), "one\n").unwrap();

    let saved_id = saved_session(&project, &script(&project, "saved", json!([{"content": "saved answer"}])));

    let replay = script(&project, "acp", Value::Array(editor_turns()));
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_clients/ts_client.mjs");
    let args = [
        client.display().to_string(),
        sdk.display().to_string(),
        env!("CARGO_BIN_EXE_odek").to_owned(),
        replay,
        project.cwd.display().to_string(),
        saved_id.clone(),
    ];
    let report = client_report(&project, Path::new("node"), &args, Duration::from_secs(120));

    assert_eq!(report["init"]["agentCapabilities"]["loadSession"], true, "{report}");
    assert_eq!(report["modes"]["currentModeId"], "default");
    assert_eq!(report["stops"], json!(["end_turn", "end_turn", "cancelled"]), "{report}");
    assert_eq!(report["outcomes"], json!(["success", "success", "cancelled"]));
    let permissions = report["permissions"].as_array().unwrap();
    assert_eq!(permissions[0]["toolCallId"], "e1", "{report}");
    assert_eq!(permissions[0]["kinds"], json!(["allow_once", "allow_always", "reject_once", "reject_always"]));
    assert_eq!(permissions[1]["toolCallId"], "e2");
    assert_eq!(std::fs::read_to_string(project.cwd.join("a.txt")).unwrap(), "two\n");

    let session = report["sessionId"].as_str().unwrap();
    let updates = |id: &str, kind: &str| -> Vec<Value> {
        report["updates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|entry| entry["sessionId"] == id && entry["update"]["sessionUpdate"] == kind)
            .map(|entry| entry["update"].clone())
            .collect()
    };
    assert_eq!(updates(session, "plan")[0]["entries"][0]["content"], "Edit a.txt");
    let diffs: Vec<Value> = updates(session, "tool_call_update")
        .into_iter()
        .filter(|update| update["toolCallId"] == "e1")
        .map(|update| update["content"][0].clone())
        .collect();
    assert_eq!(diffs[0]["type"], "diff", "{diffs:?}");
    assert_eq!((diffs[0]["oldText"].as_str(), diffs[0]["newText"].as_str()), (Some("one\n"), Some("two\n")));
    let shell = updates(session, "tool_call").into_iter().find(|call| call["toolCallId"] == "s1").unwrap();
    assert_eq!(shell["kind"], "execute");
    let texts: Vec<Value> =
        updates(session, "agent_message_chunk").iter().map(|chunk| chunk["content"]["text"].clone()).collect();
    assert_eq!(texts, [json!("edited"), json!("refused")]);
    let replayed = updates(&saved_id, "agent_message_chunk");
    assert_eq!(replayed[0]["content"]["text"], "saved answer", "{report}");
}

#[test]
fn acpx_drives_odek_acp() {
    let Some(_servers) = Servers::installed("acpx_drives_odek_acp") else { return };
    let acpx = Acpx::installed();
    let project = Project::new();
    std::fs::write(project.cwd.join("a.txt"), "one\n").unwrap();
    // One script for the whole conversation: `odek run` answers its first turn, and every acpx
    // command's `odek acp` loads the session and goes on from where it stands.
    let mut turns = vec![json!({"content": "saved answer"})];
    turns.extend(editor_turns());
    let replay = script(&project, "conversation", Value::Array(turns));
    let saved_id = saved_session(&project, &replay);
    let agent = format!("{} acp --provider replay --replay {replay} --planning", env!("CARGO_BIN_EXE_odek"));
    let session = AcpxSession { acpx: &acpx, project: &project, agent };

    // `sessions new --resume-session` loads the saved session (session/load, the mode it
    // records); the mode set next is recorded, so every later command's `odek acp` asks.
    let ensured = session.json(&["sessions", "new", "--resume-session", &saved_id]);
    assert_eq!(ensured.last().unwrap()["acpxSessionId"], saved_id.as_str(), "{ensured:?}");
    let moded = session.json(&["set-mode", "ask"]);
    assert_eq!(moded.last().unwrap()["resumed"], true, "{moded:?}");

    let allowed = session.json(&["--approve-all", "prompt", "edit the file"]);
    assert_eq!(stop_reason(&allowed), "end_turn", "{allowed:?}");
    assert_eq!(permission_asked(&allowed), ["e1"], "{allowed:?}");
    assert_eq!(updates(&allowed, "plan")[0]["entries"][0]["content"], "Edit a.txt");
    let diff = updates(&allowed, "tool_call_update")
        .into_iter()
        .find(|update| update["toolCallId"] == "e1" && update["status"] == "completed")
        .unwrap();
    assert_eq!(diff["content"][0]["type"], "diff", "{diff}");
    assert_eq!(
        (diff["content"][0]["oldText"].as_str(), diff["content"][0]["newText"].as_str()),
        (Some("one\n"), Some("two\n"))
    );
    assert_eq!(texts(&allowed), ["edited"]);
    assert_eq!(std::fs::read_to_string(project.cwd.join("a.txt")).unwrap(), "two\n");

    // Denied (and the editor's file access withheld, so the disk is what a denial protects).
    let rejected = session.json(&["--deny-all", "--no-fs", "prompt", "edit it again"]);
    assert_eq!(permission_asked(&rejected), ["e2"], "{rejected:?}");
    let failed =
        updates(&rejected, "tool_call_update").into_iter().find(|update| update["toolCallId"] == "e2").unwrap();
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(texts(&rejected), ["refused"]);
    assert_eq!(std::fs::read_to_string(project.cwd.join("a.txt")).unwrap(), "two\n");

    // Cancelled from a second acpx process while the command runs.
    let mut running = session.start(&["--approve-all", "prompt", "wait for it"]);
    let lines = running.until(|line| line.contains("\"toolCallId\":\"s1\""));
    let owner = session.queue_owner();
    let cancelled = session.json(&["cancel"]);
    assert_eq!(cancelled.last().unwrap()["cancelled"], true, "{cancelled:?}");
    let rest = running.finish();
    let turn: Vec<Value> = lines.iter().chain(&rest).filter_map(|line| serde_json::from_str(line).ok()).collect();
    assert_eq!(stop_reason(&turn), "cancelled", "{turn:?}");

    let closed = session.json(&["sessions", "close"]);
    assert_eq!(closed.last().unwrap()["action"], "session_closed", "{closed:?}");
    owner.assert_gone();
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(project.home.join(format!(".odek/sessions/{saved_id}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(file["mode"], "ask", "the session's file records its mode");
}

/// acpx, pinned, and the Node.js it runs on.
struct Acpx {
    node: PathBuf,
    cli: PathBuf,
}

impl Acpx {
    fn installed() -> Acpx {
        let modules = workspace_root().join(".ci/cache/interop/acpx/node_modules");
        let arch = if cfg!(target_arch = "aarch64") { "arm64" } else { "x64" };
        let acpx =
            Acpx { node: modules.join(format!("node-linux-{arch}/bin/node")), cli: modules.join("acpx/dist/cli.js") };
        assert!(acpx.node.is_file() && acpx.cli.is_file(), "acpx or its Node.js is missing: run .ci/install-interop");
        acpx
    }
}

/// One acpx session of `odek acp` in a project (acpx keeps it under the project's `$HOME`).
struct AcpxSession<'a> {
    acpx: &'a Acpx,
    project: &'a Project,
    agent: String,
}

/// How long one acpx command may take.
const ACPX_DEADLINE: Duration = Duration::from_secs(60);

impl AcpxSession<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.project.client(&self.acpx.node);
        command.arg(&self.acpx.cli).args(["--agent", &self.agent, "--format", "json", "--ttl", "60"]).args(args);
        command
    }

    fn start(&self, args: &[&str]) -> Running {
        Running::start(self.command(args), args)
    }

    /// Runs acpx to its end; its NDJSON output, parsed.
    fn json(&self, args: &[&str]) -> Vec<Value> {
        let lines = self.start(args).finish();
        lines.iter().map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}"))).collect()
    }

    /// The process acpx keeps for the session between commands (its queue owner), by the pid
    /// its lock file names.
    fn queue_owner(&self) -> QueueOwner {
        let queues = self.project.home.join(".acpx/queues");
        let lock = std::fs::read_dir(&queues)
            .unwrap()
            .flatten()
            .find(|entry| entry.path().extension() == Some("lock".as_ref()));
        let lock: Value = serde_json::from_str(&std::fs::read_to_string(lock.unwrap().path()).unwrap()).unwrap();
        QueueOwner(i32::try_from(lock["pid"].as_i64().unwrap()).unwrap())
    }
}

/// acpx's queue owner: it leads a process group of its own, `odek acp` in it. Killed with its
/// group if the test ends while it still runs.
struct QueueOwner(i32);

impl QueueOwner {
    fn alive(&self) -> bool {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{}/stat", self.0)).unwrap_or_default().contains(") Z ")
    }

    /// Waits (bounded) for the owner to exit after `sessions close`.
    fn assert_gone(&self) {
        let started = Instant::now();
        while self.alive() {
            assert!(started.elapsed() < ACPX_DEADLINE, "acpx's queue owner {} outlived sessions close", self.0);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for QueueOwner {
    fn drop(&mut self) {
        if self.alive() {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.0), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// An acpx command running, its stdout read line by line.
struct Running {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
    what: String,
}

impl Running {
    fn start(mut command: Command, what: &[&str]) -> Running {
        let mut child = command.spawn().unwrap();
        let (lines_tx, lines) = std::sync::mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if lines_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
        Running { child, lines, stderr, what: what.join(" ") }
    }

    /// The lines up to the first that `done` accepts (the command runs on).
    fn until(&mut self, done: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(ACPX_DEADLINE) {
                Ok(line) => {
                    let last = done(&line);
                    seen.push(line);
                    if last {
                        return seen;
                    }
                }
                Err(error) => {
                    let _ = self.child.kill();
                    panic!("acpx {} never printed the line awaited ({error}); it printed {seen:?}", self.what);
                }
            }
        }
    }

    /// Waits (bounded) for the command to end, successfully; the lines not taken yet.
    fn finish(mut self) -> Vec<String> {
        let status = wait_with_deadline(&mut self.child, ACPX_DEADLINE, &[&self.what]);
        let lines: Vec<String> = self.lines.iter().collect();
        let stderr = self.stderr.join().unwrap();
        assert!(status.success(), "acpx {}: {status}\nstdout:\n{lines:?}\nstderr:\n{stderr}", self.what);
        lines
    }
}

fn updates(messages: &[Value], kind: &str) -> Vec<Value> {
    messages
        .iter()
        .filter(|message| message["method"] == "session/update" && message["params"]["update"]["sessionUpdate"] == kind)
        .map(|message| message["params"]["update"].clone())
        .collect()
}

fn texts(messages: &[Value]) -> Vec<String> {
    updates(messages, "agent_message_chunk")
        .iter()
        .map(|chunk| chunk["content"]["text"].as_str().unwrap().to_owned())
        .collect()
}

fn permission_asked(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|message| message["method"] == "session/request_permission")
        .map(|message| message["params"]["toolCall"]["toolCallId"].as_str().unwrap().to_owned())
        .collect()
}

/// The prompt's stop reason (the answer to `session/prompt`).
fn stop_reason(messages: &[Value]) -> String {
    messages.iter().rev().find_map(|message| message["result"]["stopReason"].as_str()).unwrap_or_default().to_owned()
}

/// What the model does in the editor: a plan, an edit (allowed), another (rejected), a command
/// (cancelled).
fn editor_turns() -> Vec<Value> {
    json!([
        {"tool_calls": [{"id": "p1", "name": "plan", "arguments": {"verb": "create", "steps": ["Edit a.txt"]}}]},
        {"tool_calls": [{"id": "e1", "name": "patch", "arguments": {"path": "a.txt", "old_string": "one", "new_string": "two"}}]},
        {"content": "edited"},
        {"tool_calls": [{"id": "e2", "name": "patch", "arguments": {"path": "a.txt", "old_string": "two", "new_string": "three"}}]},
        {"content": "refused"},
        {"tool_calls": [{"id": "s1", "name": "shell", "arguments": {"command": "sleep 300"}}]}
    ])
    .as_array()
    .unwrap()
    .clone()
}

/// The id of a session `odek run --session` saved, answering from `replay`.
fn saved_session(project: &Project, replay: &str) -> String {
    let saved = project.odek(&["run", "--session", "--provider", "replay", "--replay", replay, "the saved task"]);
    saved.assert_code(0);
    std::fs::read_dir(project.home.join(".odek/sessions"))
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().into_string().ok())
        .find_map(|name| name.strip_suffix(".json").filter(|stem| stem.starts_with("20")).map(str::to_owned))
        .unwrap()
}

fn script(project: &Project, name: &str, turns: Value) -> String {
    let path = project.home.join(format!("{name}.replay.json"));
    std::fs::write(&path, json!({"schema": "odek.replay/v1", "turns": turns}).to_string()).unwrap();
    path.display().to_string()
}
