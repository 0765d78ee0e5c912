//! `odek run --provider replay`: deterministic runs with no API key, `--record` round trips, and
//! the long-run and script-mismatch cases.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::json;

fn script(turns: serde_json::Value) -> String {
    json!({"schema": "odek.replay/v1", "turns": turns}).to_string()
}

#[test]
fn a_replayed_run_needs_no_key_and_shows_artifacts_not_their_content() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcp_servers": {"fixture": sandbox.fixture_server()}}));
    let replay = sandbox.write(
        "demo.replay.json",
        &script(json!([
            {"tool_calls": [{"id": "a", "name": "fixture__artifact_result", "arguments": {"content": "SECRET-BODY-OF-REPORT\n", "summary": "the report"}}]},
            {"content": "The report is in artifact report-1."}
        ])),
    );
    let mut command =
        sandbox.command(&["run", "--provider", "replay", "--replay", path_str(&replay), "write", "a", "report"]);
    command.env_remove("ODEK_API_KEY");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "The report is in artifact report-1.\n");
}

#[test]
fn replay_answers_a_ninety_iteration_run() {
    let sandbox = Sandbox::new();
    let mut turns: Vec<_> = (0..89)
        .map(|i| json!({"tool_calls": [{"name": "read_file", "arguments": {"path": format!("f{}.txt", i % 3)}}]}))
        .collect();
    turns.push(json!({"content": "read them all"}));
    for i in 0..3 {
        sandbox.write(&format!("f{i}.txt"), &format!("file {i}\n"));
    }
    let replay = sandbox.write("long.replay.json", &script(json!(turns)));
    let output = sandbox.odek(&["run", "--quiet", "--provider", "replay", "--replay", path_str(&replay), "read"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "read them all\n");
}

#[test]
fn an_exhausted_script_fails_with_a_clear_error() {
    let sandbox = Sandbox::new();
    let replay = sandbox.write(
        "short.replay.json",
        &script(json!([{"tool_calls": [{"name": "read_file", "arguments": {"path": "x"}}]}])),
    );
    let output = sandbox.odek(&["run", "--provider", "replay", "--replay", path_str(&replay), "go"]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.contains("script exhausted: the conversation has 1 assistant messages but the script has 1 turns"),
        "{err}"
    );
}

#[test]
fn a_recorded_run_replays_to_the_same_answer() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"notes.txt"}"#)]).with_usage(10, 2),
        Reply::text("the notes say hi").with_usage(20, 4),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("notes.txt", "hi\n");
    let record = sandbox.project.join("recorded.json");
    let live = sandbox.odek(&["run", "--record", path_str(&record), "read the notes"]);
    assert_eq!(live.status.code(), Some(0), "{}", stderr(&live));
    let replayed = sandbox.odek(&["run", "--provider", "replay", "--replay", path_str(&record), "read the notes"]);
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    assert_eq!(stdout(&replayed), stdout(&live));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn replay_without_a_script_is_refused() {
    let sandbox = Sandbox::new();
    let output = sandbox.odek(&["run", "--provider", "replay", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "odek: --provider replay needs --replay <file>\n");
}
