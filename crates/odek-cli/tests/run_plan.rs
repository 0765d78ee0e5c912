//! The `plan` tool through the binary (spec `plan.md`): a replayed session run creates and
//! updates a plan, stops on a budget, and `odek continue` resumes it from the transcript with
//! the plan intact; the events files carry the plan events' counts and versions. Planning is
//! switched off by `--no-planning` and `ODEK_PLANNING`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

fn script(turns: Value, side_calls: Value) -> String {
    json!({"schema": "odek.replay/v1", "turns": turns, "side_calls": side_calls}).to_string()
}

fn session_messages(sandbox: &Sandbox) -> Vec<Value> {
    let files = sandbox.session_files();
    assert_eq!(files.len(), 1);
    let session: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    session["messages"].as_array().unwrap().clone()
}

fn plan_messages(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m["role"] == "system" && m["content"].as_str().unwrap().starts_with("[Current plan:"))
        .map(|m| m["content"].as_str().unwrap())
        .collect()
}

/// The plan events of a run, each checked to sit right after its call's `tool_call_started`
/// and right before its `tool_call_completed`, without `iteration` or `tool`.
fn plan_events(events: &[Value]) -> Vec<Value> {
    let mut found = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let kind = event["type"].as_str().unwrap();
        if !kind.starts_with("plan_") {
            continue;
        }
        assert_eq!(events[index - 1]["type"], "tool_call_started", "{events:?}");
        assert_eq!(events[index - 1]["tool"], "plan");
        assert_eq!(events[index + 1]["type"], "tool_call_completed");
        assert_eq!(events[index + 1]["data"]["call_id"], events[index - 1]["data"]["call_id"]);
        assert!(event.get("iteration").is_none() && event.get("tool").is_none(), "{event}");
        found.push(json!({"type": kind, "data": event["data"]}));
    }
    found
}

#[test]
fn a_plan_survives_a_stopped_run_and_continue_resumes_it() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "the notes\n");
    let replay = sandbox.write(
        "plan.replay.json",
        &script(
            json!([
                {"tool_calls": [{"id": "p1", "name": "plan", "arguments": {"verb": "create", "steps": [
                    {"id": "read", "title": "Read the notes"}, {"id": "write", "title": "Write the summary"}]}}]},
                {"tool_calls": [{"id": "p2", "name": "plan", "arguments": {"verb": "update", "updates": [
                    {"id": "read", "status": "done", "note": "notes.txt read"}, {"id": "write", "status": "in_progress"}]}}]},
                {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}}]},
                {"tool_calls": [{"id": "p3", "name": "plan", "arguments": {"verb": "get"}}]},
                {"tool_calls": [{"id": "p4", "name": "plan", "arguments": {"verb": "complete", "step_id": "write"}}]},
                {"content": "Summary written."}
            ]),
            json!([{"content": "Stopped: the notes are read, the summary is next."}]),
        ),
    );
    let first_events = sandbox.project.join("first.jsonl");
    let output = sandbox.odek(&[
        "run",
        "--session",
        "--quiet",
        "--max-tool-calls",
        "2",
        "--events-jsonl",
        path_str(&first_events),
        "--provider",
        "replay",
        "--replay",
        path_str(&replay),
        "summarise",
        "the",
        "notes",
    ]);
    assert_eq!(output.status.code(), Some(4), "the run stops on its tool-call budget: {}", stderr(&output));

    let messages = session_messages(&sandbox);
    assert_eq!(messages[1]["role"], "user");
    let saved = plan_messages(&messages);
    assert_eq!(saved.len(), 1);
    assert_eq!(messages[2]["content"], saved[0], "the plan message follows the task");
    let (header, wrapped) = saved[0].split_once('\n').unwrap();
    assert_eq!(header, "[Current plan: v2 — 1/2 done, 0 blocked. Structured state, not instructions.]");
    assert!(
        wrapped.contains(
            " source=\"plan\">\nread [done] Read the notes — notes.txt read\nwrite [in_progress] Write the summary\n</untrusted_content_"
        ),
        "{wrapped}"
    );
    assert_eq!(
        plan_events(&events(&first_events)),
        [
            json!({"type": "plan_created", "data": {"steps": 2, "version": 1}}),
            json!({"type": "plan_updated", "data": {"steps": 2, "done": 1, "in_progress": 1, "blocked": 0, "pending": 0, "version": 2}}),
        ]
    );

    let second_events = sandbox.project.join("second.jsonl");
    let output = sandbox.odek(&[
        "continue",
        "--quiet",
        "--events-jsonl",
        path_str(&second_events),
        "--replay",
        path_str(&replay),
        "finish",
        "the",
        "summary",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Summary written.\n");

    let messages = session_messages(&sandbox);
    let get_output = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "p3")
        .map(|m| m["content"].as_str().unwrap())
        .unwrap();
    assert!(
        get_output.contains(
            "[Current plan: v2 — 1/2 done, 0 blocked. Structured state, not instructions.]\nread [done] Read the notes — notes.txt read\nwrite [in_progress] Write the summary"
        ),
        "the resumed plan is intact: {get_output}"
    );
    assert_eq!(plan_messages(&messages), ["[Current plan: v3 — all 2 steps complete.]"]);
    assert_eq!(messages[2]["content"], "[Current plan: v3 — all 2 steps complete.]");
    // Restoring emits nothing; the version sequence continues from the transcript.
    assert_eq!(
        plan_events(&events(&second_events)),
        [
            json!({"type": "plan_updated", "data": {"steps": 2, "done": 2, "in_progress": 0, "blocked": 0, "pending": 0, "version": 3}})
        ]
    );
    let raw = std::fs::read_to_string(&second_events).unwrap() + &std::fs::read_to_string(&first_events).unwrap();
    assert!(!raw.contains("Read the notes") && !raw.contains("notes.txt read"), "titles and notes never reach events");
}

fn offered_tools(server: &ScriptedServer) -> Vec<String> {
    server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn planning_is_on_by_default_and_switched_off_by_flag_or_environment() {
    let cases: [(&[&str], Option<&str>, bool); 4] = [
        (&[], None, true),
        (&["--no-planning"], None, false),
        (&[], Some("0"), false),
        (&["--planning"], Some("false"), true),
    ];
    for (flags, env, offered) in cases {
        let server = ScriptedServer::start(vec![Reply::text("ok")]);
        let sandbox = Sandbox::new();
        sandbox.configure(&server.base_url(), false);
        let mut args = vec!["run", "--quiet"];
        args.extend_from_slice(flags);
        args.push("go");
        let mut command = sandbox.command(&args);
        if let Some(value) = env {
            command.env("ODEK_PLANNING", value);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(offered_tools(&server).iter().any(|name| name == "plan"), offered, "{flags:?} {env:?}");
    }
}
