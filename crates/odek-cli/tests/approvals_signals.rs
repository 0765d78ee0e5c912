//! The approval prompts read the terminal the way an operator expects, through a real
//! pseudo-terminal, the real `odek` binary and real fixture servers: one key answers exactly
//! one question (an arrow key's escape sequence never spills into the next server's card), and
//! a stop signal (SIGINT, SIGTERM) at a prompt ends odek promptly with the signal's exit, with
//! nothing approved or persisted.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod approvals_support;

use std::path::Path;
use std::time::{Duration, Instant};

use approvals_support::Fixture;
use approvals_support::pty::{PtyOdek, PtyRun};
use nix::sys::signal::Signal;
use odek_test_support::openai::{Reply, ScriptedServer};
use serde_json::{Value, json};

/// The key the tests hand to odek.
const API_KEY: &str = "sk-test-approvals-signals-4e5f6a7b8c9d";

/// How soon after the signal odek must be gone (the prompt waits in 100 ms slices).
const PROMPTLY: Duration = Duration::from_secs(10);

fn fixture_entry() -> Value {
    json!({"command": odek_test_support::fixture_server(), "args": ["--conformant"]})
}

/// A 0600 global config.
fn global_config(fixture: &Fixture, config: &Value) {
    let path = fixture.home.join(".odek/config.json");
    fixture.write(&path, &config.to_string());
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}

/// `Tool 1 of 5 "echo"? [y/n/a/N] `: the first question of a fixture server's card.
const FIRST_QUESTION: &str = "Tool 1 of 5 \"echo\"? [y/n/a/N] ";

/// An arrow key is three bytes, `ESC [ A`. The prompts read through std's buffered stdin, so
/// the first card's read took all three: ESC answered it, and `[` and `A` (approve this tool
/// and every one after it) answered the next server's card before it was even read — and were
/// persisted.
#[test]
fn an_arrow_key_on_one_card_never_answers_the_next_red() {
    let fixture = Fixture::new();
    global_config(&fixture, &json!({"mcp_servers": {"one": fixture_entry(), "two": fixture_entry()}}));
    let mut odek = PtyOdek::spawn(&["ext", "list"], &fixture.home, &fixture.cwd, &[]);
    odek.wait_for(FIRST_QUESTION);
    odek.press(b"\x1b[A");
    odek.wait_for(FIRST_QUESTION);
    odek.press(b"N");
    let run = odek.finish();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(!fixture.tool_approvals_path().exists(), "the arrow key approved tools: {}", run.stdout);
    let answers: Vec<&str> = run.stdout.split(FIRST_QUESTION).skip(1).map(|rest| &rest[..2]).collect();
    assert_eq!(answers, ["-\n", "N\n"], "{}", run.stdout);
    assert!(!run.stdout.contains("Tool 2 of 5"), "a leftover byte answered a question: {}", run.stdout);
}

/// `odek run` at a terminal with the scripted model server; `project` is `./odek.json`.
fn spawn_run(fixture: &Fixture, model: &ScriptedServer, servers: Value, project: Option<Value>) -> PtyOdek {
    global_config(fixture, &json!({"base_url": model.base_url(), "model": "test-model", "mcp_servers": servers}));
    if let Some(project) = project {
        fixture.write(&fixture.cwd.join("odek.json"), &project.to_string());
    }
    PtyOdek::spawn(&["run", "--quiet", "say hi"], &fixture.home, &fixture.cwd, &[("ODEK_API_KEY", API_KEY)])
}

/// Signals odek waiting at a prompt and returns what it did, checking it stopped promptly.
fn stop_at_prompt(odek: PtyOdek, stop: Signal) -> PtyRun {
    odek.signal(stop);
    let signalled = Instant::now();
    let run = odek.finish();
    assert!(signalled.elapsed() < PROMPTLY, "odek took {:?} to stop", signalled.elapsed());
    run
}

/// `128 + <signal>`, SIGINT's 130 included (issue 17: a cancelled run exits 130; it was 1).
fn expected_code(stop: Signal) -> i32 {
    128 + stop as i32
}

/// Before the stop signals were handled, the default action ended odek at a prompt; once run
/// handled them, a prompt blocked in a read of stdin swallowed them and odek waited forever.
fn a_signal_at_the_tool_card_ends_the_run(stop: Signal) {
    let model = ScriptedServer::start(vec![Reply::text("never asked")]);
    let fixture = Fixture::new();
    let servers = json!({"one": fixture_entry(), "two": fixture_entry()});
    let mut odek = spawn_run(&fixture, &model, servers, None);
    odek.wait_for(FIRST_QUESTION);
    let run = stop_at_prompt(odek, stop);
    assert_eq!(run.status.code(), Some(expected_code(stop)), "{}", run.stderr);
    assert!(run.stderr.contains("odek: context canceled"), "{}", run.stderr);
    assert_eq!(run.stdout.matches(" wants to register ").count(), 1, "the other card was shown: {}", run.stdout);
    assert!(model.requests().is_empty(), "the run went on to the model");
    assert!(!fixture.tool_approvals_path().exists(), "an approval was persisted");
}

fn a_signal_at_the_server_prompt_ends_the_run(stop: Signal) {
    let model = ScriptedServer::start(vec![Reply::text("never asked")]);
    let fixture = Fixture::new();
    let project = json!({"mcp_servers": {"local": fixture_entry()}});
    let mut odek = spawn_run(&fixture, &model, json!({}), Some(project));
    // `Approve? [y/N] `, or `[y/N/u] ` where the sandbox is in force (issue 32).
    odek.wait_for("Approve? [y/N");
    // A half-typed answer is no answer once the signal came.
    odek.press(b"y");
    let run = stop_at_prompt(odek, stop);
    assert_eq!(run.status.code(), Some(expected_code(stop)), "{}", run.stderr);
    assert!(run.stderr.contains("odek: mcp approval: server \"local\" was not approved"), "{}", run.stderr);
    assert!(model.requests().is_empty(), "the run went on to the model");
    assert!(!fixture.server_approvals_path().exists(), "the server approval was persisted");
    assert!(!fixture.tool_approvals_path().exists());
}

#[test]
fn sigterm_at_the_tool_card_exits_143_red() {
    a_signal_at_the_tool_card_ends_the_run(Signal::SIGTERM);
}

#[test]
fn sigint_at_the_tool_card_exits_130_red() {
    a_signal_at_the_tool_card_ends_the_run(Signal::SIGINT);
}

#[test]
fn sigterm_at_the_server_prompt_exits_143_red() {
    a_signal_at_the_server_prompt_ends_the_run(Signal::SIGTERM);
}

#[test]
fn sigint_at_the_server_prompt_exits_130_red() {
    a_signal_at_the_server_prompt_ends_the_run(Signal::SIGINT);
}

/// The shell's batch approval card reads its key with the same function.
const BATCH_LEGEND: &str = "[y] approve  [n] deny  [a] approve and trust these commands for this run: ";

/// A shell call that needs the card (`network_egress`) and leaves a file behind if it runs.
fn egress_call(id: &str, marker: &Path) -> Reply {
    let command = format!("curl -s -m 1 http://127.0.0.1:9/ ; touch '{}'", marker.display());
    Reply::tool_calls(vec![(id, "shell", json!({"command": command}).to_string())])
}

fn tool_results(model: &ScriptedServer) -> Vec<String> {
    let requests = model.requests();
    let last = requests.last().unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// On the batch card an arrow key left `[` and `A` in std's buffer: `[` denied the next card
/// unasked and `A` approved the one after it, with its commands trusted for the rest of the run.
#[test]
fn an_arrow_key_on_the_batch_card_never_answers_a_later_one_red() {
    let fixture = Fixture::new();
    let markers: Vec<_> = ["one", "two", "three"].iter().map(|name| fixture.cwd.join(name)).collect();
    let model = ScriptedServer::start(vec![
        egress_call("c1", &markers[0]),
        egress_call("c2", &markers[1]),
        egress_call("c3", &markers[2]),
        Reply::text("done"),
    ]);
    let mut odek = spawn_run(&fixture, &model, json!({}), None);
    odek.wait_for_stderr(BATCH_LEGEND);
    odek.press(b"\x1b[A");
    odek.wait_for_stderr(BATCH_LEGEND);
    odek.press(b"n");
    odek.wait_for_stderr(BATCH_LEGEND);
    odek.press(b"n");
    let run = odek.finish();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let answers: Vec<&str> = run.stderr.split(BATCH_LEGEND).skip(1).map(|rest| &rest[..2]).collect();
    assert_eq!(answers, ["-\n", "n\n", "n\n"], "{}", run.stderr);
    for marker in &markers {
        assert!(!marker.exists(), "{} ran", marker.display());
    }
    let results = tool_results(&model);
    assert_eq!(results.len(), 3, "{results:?}");
    for result in &results {
        assert!(result.contains("denied"), "{result}");
    }
}

#[test]
fn sigterm_at_the_batch_card_exits_143_red() {
    let fixture = Fixture::new();
    let marker = fixture.cwd.join("ran");
    let model = ScriptedServer::start(vec![egress_call("c1", &marker), Reply::text("never asked")]);
    let mut odek = spawn_run(&fixture, &model, json!({}), None);
    odek.wait_for_stderr(BATCH_LEGEND);
    let run = stop_at_prompt(odek, Signal::SIGTERM);
    assert_eq!(run.status.code(), Some(143), "{}", run.stderr);
    assert!(!marker.exists(), "the command ran");
    assert_eq!(model.requests().len(), 1, "the run went on to the model");
}
