//! Stop signals through the real binary: SIGTERM and SIGHUP stop `odek run`, `odek subagent`
//! and `odek ext call` the way Ctrl-C does — the tool in flight cancelled, its process group and
//! the MCP servers stopped, the session saved at its last step — and then exit 128 + the
//! signal. SIGINT keeps the exit it always had.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(30);

/// Gone, or a zombie nobody reaped yet.
fn process_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits (bounded) for `path` to appear: the shell command writes it once it is running.
fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + DEADLINE;
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

/// odek's stderr, line by line, read on a thread of its own.
fn stderr_lines(child: &mut Child) -> Receiver<String> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

/// Blocks (bounded) until a line containing `needle` arrives; returns every line read so far.
fn wait_for_line(lines: &Receiver<String>, needle: &str, seen: &mut Vec<String>) {
    let deadline = Instant::now() + DEADLINE;
    while !seen.iter().any(|line| line.contains(needle)) {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no stderr line with {needle:?}; saw {seen:?}"),
        }
    }
}

/// Waits (bounded) for the child to exit; returns its code and the rest of its stderr.
fn finish(mut child: Child, lines: &Receiver<String>, seen: &mut Vec<String>) -> (Option<i32>, String) {
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("odek did not stop after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) {
        seen.push(line);
    }
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    (status.code(), seen.join("\n") + "\n" + &stdout)
}

fn signal(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// The long command writes its pids (atomically, so a partial file is never read).
const LONG_COMMAND: &str = "sleep 300 & echo $! > sleep.tmp; echo $$ > shell.pid; mv sleep.tmp sleep.pid; wait";

fn two_step_server() -> ScriptedServer {
    ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", json!({"command": "echo first step"}).to_string())]),
        Reply::tool_calls(vec![("c2", "shell", json!({"command": LONG_COMMAND}).to_string())]),
        Reply::text("never asked"),
    ])
}

/// A `run --session` stopped by `signal` while its second step's shell call sleeps: returns
/// the exit code and stderr, after checking what every stop signal must leave behind.
fn stop_a_run(stop: Signal) -> (Option<i32>, String) {
    let server = two_step_server();
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let mut child = sandbox.spawn(&["run", "--quiet", "--session", "work", "for", "a", "while"]);
    let lines = stderr_lines(&mut child);
    let mut seen = Vec::new();
    wait_for_file(&sandbox.project.join("sleep.pid"));
    assert!(!odek_test_support::processes_mentioning(&sandbox.artifacts).is_empty(), "the MCP server is running");
    signal(&child, stop);
    let (code, text) = finish(child, &lines, &mut seen);

    for pid_file in ["shell.pid", "sleep.pid"] {
        let pid = read_pid(&sandbox.project.join(pid_file));
        assert!(process_dead(pid), "{pid_file}: process {pid} outlived odek ({text})");
    }
    assert!(odek_test_support::processes_mentioning(&sandbox.artifacts).is_empty(), "the MCP server outlived odek");
    let session: Value = serde_json::from_slice(&std::fs::read(&sandbox.session_files()[0]).unwrap()).unwrap();
    let messages = session["messages"].as_array().unwrap();
    let calls = messages.iter().filter_map(|m| m["tool_calls"].as_array()).flatten().count();
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(calls, 2, "both steps are saved: {messages:?}");
    assert_eq!(results.len(), 2, "no dangling call: {messages:?}");
    assert!(results[0]["content"].as_str().unwrap().contains("first step"));
    assert!(results[1]["content"].as_str().unwrap().contains("error: cancelled"));
    (code, text)
}

/// SIGTERM used to kill odek outright: no cleanup, no session save, the shell's `sleep` and
/// the MCP server orphaned.
#[test]
fn sigterm_stops_a_run_like_ctrl_c_and_exits_143_red() {
    let (code, text) = stop_a_run(Signal::SIGTERM);
    assert_eq!(code, Some(143), "{text}");
    assert!(text.contains("odek: context canceled (SIGTERM)"), "{text}");
}

#[test]
fn sighup_stops_a_run_like_ctrl_c_and_exits_129_red() {
    let (code, text) = stop_a_run(Signal::SIGHUP);
    assert_eq!(code, Some(129), "{text}");
    assert!(text.contains("odek: context canceled (SIGHUP)"), "{text}");
}

/// SIGINT cancels the run with the line a cancelled run always printed, `odek: context
/// canceled`, and exits 130 (outcome `cancelled`, issue 17; it exited 1 before).
#[test]
fn sigint_exits_130_as_a_cancelled_run() {
    let (code, text) = stop_a_run(Signal::SIGINT);
    assert_eq!(code, Some(130), "{text}");
    assert!(text.contains("odek: context canceled"), "{text}");
    assert!(!text.contains("(SIGINT)"), "{text}");
}

#[test]
fn sigterm_stops_a_subagent_with_its_result_and_exits_143_red() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", json!({"command": LONG_COMMAND}).to_string())]),
        Reply::text("never asked"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut child = sandbox.spawn(&["subagent", "--quiet", "--goal", "sleep"]);
    let lines = stderr_lines(&mut child);
    let mut seen = Vec::new();
    wait_for_file(&sandbox.project.join("sleep.pid"));
    signal(&child, Signal::SIGTERM);
    let (code, text) = finish(child, &lines, &mut seen);
    assert_eq!(code, Some(143), "{text}");
    let result: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(result["status"], "error", "{text}");
    assert_eq!(result["error"], "cancelled", "{text}");
    for pid_file in ["shell.pid", "sleep.pid"] {
        let pid = read_pid(&sandbox.project.join(pid_file));
        assert!(process_dead(pid), "{pid_file}: process {pid} outlived the sub-agent");
    }
}

#[test]
fn sigterm_stops_ext_call_and_exits_143_red() {
    let sandbox = Sandbox::new();
    let mut fixture = sandbox.fixture_server();
    fixture["args"].as_array_mut().unwrap().extend([json!("--mode"), json!("stderr-per-request")]);
    sandbox.global_config(&json!({"mcp_servers": {"fixture": fixture}}));
    let mut child = sandbox.spawn(&["ext", "call", "fixture__slow", r#"{"ms": 300000}"#]);
    let lines = stderr_lines(&mut child);
    let mut seen = Vec::new();
    wait_for_line(&lines, "tools/call", &mut seen);
    signal(&child, Signal::SIGTERM);
    let (code, text) = finish(child, &lines, &mut seen);
    assert_eq!(code, Some(143), "{text}");
    assert!(text.contains("(SIGTERM)"), "{text}");
    assert!(odek_test_support::processes_mentioning(&sandbox.artifacts).is_empty(), "the MCP server outlived odek");
}

/// A second stop signal ends odek at once, without waiting for a clean-up that may hang (here
/// an MCP server that ignores stdin EOF and SIGTERM, whose shutdown would take its full grace):
/// the operator is never left with SIGKILL as the only way out.
#[test]
fn a_second_stop_signal_exits_at_once() {
    let server = two_step_server();
    let sandbox = Sandbox::new();
    let mut stubborn = sandbox.fixture_server();
    stubborn["args"].as_array_mut().unwrap().extend([json!("--mode"), json!("ignore-stdin-eof")]);
    sandbox.global_config(&json!({"base_url": server.base_url(), "model": "test-model",
                                  "mcp_servers": {"fixture": stubborn}}));
    let mut child = sandbox.spawn(&["run", "--quiet", "work", "for", "a", "while"]);
    let lines = stderr_lines(&mut child);
    let mut seen = Vec::new();
    wait_for_file(&sandbox.project.join("sleep.pid"));
    signal(&child, Signal::SIGTERM);
    // Two signals sent at once would merge into one: wait until the first was acted on (the
    // cancelled shell's sleep is gone), while odek still waits for the server to exit.
    let sleep = read_pid(&sandbox.project.join("sleep.pid"));
    let deadline = Instant::now() + DEADLINE;
    while !process_dead(sleep) {
        assert!(Instant::now() < deadline, "the first SIGTERM stopped nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, Signal::SIGTERM);
    let (code, text) = finish(child, &lines, &mut seen);
    assert_eq!(code, Some(143), "{text}");
    let left = odek_test_support::processes_mentioning(&sandbox.artifacts);
    assert!(!left.is_empty(), "odek waited for the stubborn server's shutdown instead of exiting at once");
    for pid in left {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
}
