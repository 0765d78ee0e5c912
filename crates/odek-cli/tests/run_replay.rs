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

/// **[beyond]** A replayed parent delegates: each child answers from the `subagents` entry with
/// its goal (nested entries for its own children), with no key and no network; a goal the script
/// has no entry for, or a child's script that runs out, is that task's error, not the run's.
#[test]
fn a_replayed_run_delegates_to_replayed_children() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "three apples\n");
    let delegate =
        |tasks: serde_json::Value| json!({"tool_calls": [{"name": "delegate_tasks", "arguments": {"tasks": tasks}}]});
    let replay = sandbox.write(
        "delegating.replay.json",
        &json!({
            "schema": "odek.replay/v1",
            "turns": [
                delegate(json!([
                    {"goal": "count the apples", "trust_level": "trusted"},
                    {"goal": "ask a grandchild"},
                    {"goal": "a goal nobody scripted"},
                    {"goal": "run out of answers"}
                ])),
                {"content": "all four tasks came back"}
            ],
            "subagents": [
                {"goal": "count the apples", "turns": [
                    {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                    {"content": "there are three apples"}
                ]},
                {"goal": "ask a grandchild", "turns": [
                    delegate(json!([{"goal": "say hello"}])),
                    {"content": "the grandchild said hello"}
                ], "subagents": [{"goal": "say hello", "turns": [{"content": "hello"}]}]},
                {"goal": "run out of answers", "turns": []}
            ]
        })
        .to_string(),
    );
    let events = sandbox.project.join("events.jsonl");
    let mut command = sandbox.command(&[
        "run",
        "--quiet",
        "--session",
        "--events-jsonl",
        path_str(&events),
        "--provider",
        "replay",
        "--replay",
        path_str(&replay),
        "delegate",
    ]);
    command.env_remove("ODEK_API_KEY");
    sandbox.global_config(&json!({"subagent": {"max_depth": 2}}));
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "all four tasks came back\n");

    let session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sandbox.session_files()[0]).unwrap()).unwrap();
    let rendered = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool")
        .and_then(|message| message["content"].as_str())
        .unwrap()
        .to_owned();
    assert!(rendered.contains("─── Task 1: count the apples ───\nstatus: success"), "{rendered}");
    assert!(rendered.contains("summary: there are three apples\n"), "{rendered}");
    assert!(rendered.contains("─── Task 2: ask a grandchild ───\nstatus: success"), "{rendered}");
    assert!(rendered.contains("summary: the grandchild said hello\n"), "{rendered}");
    assert!(rendered.contains("─── Task 3: a goal nobody scripted ───\nstatus: error"), "{rendered}");
    assert!(
        rendered.contains(&format!(
            "replay {} › subagent \"a goal nobody scripted\": the script has no subagents entry with this goal",
            replay.display()
        )),
        "{rendered}"
    );
    assert!(rendered.contains("─── Task 4: run out of answers ───\nstatus: error"), "{rendered}");
    assert!(
        rendered.contains(&format!(
            "replay {} › subagent \"run out of answers\": script exhausted: the conversation has 0 assistant messages but the script has 0 turns",
            replay.display()
        )),
        "a child's own script errors name its place: {rendered}"
    );
    let completed = std::fs::read_to_string(&events).unwrap().matches("\"subagent_completed\"").count();
    assert_eq!(completed, 4, "the grandchild's events stay in its parent's process");
}

/// The delegation demo of the README (`examples/fixture/delegate.replay.json`) replays as
/// shown there: both children run, read their file and succeed.
#[test]
fn the_example_delegation_script_replays() {
    let example = odek_test_support::workspace_root().join("examples/fixture");
    let sandbox = Sandbox::new();
    for name in ["demo.replay.json", "delegate.replay.json"] {
        std::fs::copy(example.join(name), sandbox.project.join(name)).unwrap();
    }
    // The example's project config, with the fixture server where this build put it.
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example.join("odek.json")).unwrap()).unwrap();
    config["mcp_servers"]["fixture"]["command"] = json!(odek_test_support::fixture_server());
    sandbox.write("odek.json", &config.to_string());
    let events = sandbox.project.join("events.jsonl");
    let mut command = sandbox.command(&[
        "run",
        "--events-jsonl",
        path_str(&events),
        "--provider",
        "replay",
        "--replay",
        "delegate.replay.json",
        "What does this example configure, and what does its demo do?",
    ]);
    command.env_remove("ODEK_API_KEY").env("ODEK_APPROVE_MCP", "1");
    let output = command.output().unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(stdout(&output).starts_with("Both sub-agents reported back."), "{}", stdout(&output));
    assert!(err.contains("delegate_tasks ok"), "{err}");
    let events = std::fs::read_to_string(&events).unwrap();
    let completed: Vec<serde_json::Value> = events
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["type"] == "subagent_completed")
        .collect();
    assert_eq!(completed.len(), 2, "{events}");
    for event in &completed {
        assert_eq!(event["data"]["status"], "success", "{event}");
    }
}

/// README's first command, exactly as written there (the second is the test command): one line from the repository root that
/// builds the workspace and runs the replay demo against the fixture server — no key, no `cd`,
/// no `export` (issue 14). A fresh clone is what CI checks out; here the build is a no-op.
#[test]
fn the_readme_first_command_runs_as_written() {
    let root = odek_test_support::workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks: Vec<&str> =
        readme.split("```sh\n").skip(1).filter_map(|rest| rest.split("\n```").next()).take(2).collect();
    assert_eq!(blocks[1], "cargo test --workspace --locked", "the second command is the test command");
    let block = blocks[0];
    assert_eq!(block.lines().count(), 1, "the first command is one line: {block}");
    for word in ["cd ", "export ", "API_KEY"] {
        assert!(!block.contains(word), "the first command needs no {word:?}: {block}");
    }
    let home = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("sh")
        .args(["-c", block])
        .current_dir(&root)
        .env("HOME", home.path())
        .env_remove("ODEK_API_KEY")
        .env_remove("ODEK_APPROVE_MCP")
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(stdout(&output).starts_with("Done. The fixture server answered the greeting"), "{}", stdout(&output));
    assert!(err.contains("odek: connected MCP server \"fixture\""), "{err}");
    assert!(
        err.contains("- artifact \"report-1\" (text/plain, 16 bytes, sha256 6c58b7bf0ae6…): the full report"),
        "{err}"
    );
}
