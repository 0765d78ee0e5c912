//! The `odek.event/v1` stream from real runs of the binary (spec `events.md`): order, pairing by
//! call_id, envelope fields, budget stops, secrets, and the sink's refusals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::os::unix::fs::PermissionsExt;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::Value;

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|event| event["type"].as_str().unwrap()).collect()
}

#[test]
fn a_session_run_streams_every_event_in_order_and_pairs_by_call_id() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![
            ("call_a", "fixture__echo", r#"{"text":"hello extension"}"#),
            ("", "no_such_tool", "{}"),
        ])
        .with_usage(100, 10),
        Reply::text("done").with_usage(120, 5),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--session", "--events-jsonl", path_str(&sink), "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(std::fs::metadata(&sink).unwrap().permissions().mode() & 0o777, 0o600);
    let events = events(&sink);
    assert_eq!(
        types(&events),
        [
            "run_started",
            "mcp_server_started",
            "tool_call_started",
            "tool_call_started",
            "tool_call_completed",
            "tool_call_failed",
            "session_saved",
            "iteration_completed",
            "session_saved",
            "iteration_completed",
            "run_completed",
        ]
    );
    let run_id = events[0]["run_id"].as_str().unwrap();
    assert_eq!(run_id.len(), 32);
    assert!(run_id.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    let session_id = events[0]["session_id"].as_str().unwrap();
    assert!(
        events.iter().all(|e| e["run_id"] == run_id && e["session_id"] == session_id && e["schema"] == "odek.event/v1")
    );
    assert_eq!(events[0]["data"], serde_json::json!({"model": "test-model", "sandbox": true, "max_iterations": 90}));
    assert_eq!(events[1]["data"]["server"], "fixture");
    assert_eq!(events[2]["data"]["call_id"], "call_a");
    assert_eq!(events[2]["tool"], "fixture__echo");
    assert_eq!(events[2]["data"]["args_sha256"], "a77439e27855c1ab8bf94e28a92592f4201d511451ab1144668089aeb1ed1ca0");
    assert_eq!(events[3]["data"]["call_id"], "it1-call1");
    assert_eq!(events[4]["data"]["call_id"], "call_a");
    assert_eq!(events[5]["data"]["call_id"], "it1-call1");
    assert_eq!(events[5]["data"]["error_class"], "tool_error");
    assert_eq!(events[7]["iteration"], 1);
    assert_eq!(events[7]["data"], serde_json::json!({"input_tokens": 100, "output_tokens": 10, "tools_called": 2}));
    assert_eq!(events[10]["data"]["input_tokens"], 220);
    assert!(events[2]["data"].get("args").is_none(), "raw arguments only with --events-include-args");
}

#[test]
fn a_budget_stop_ends_with_budget_exceeded_then_run_failed() {
    let server = ScriptedServer::start(vec![Reply::text("over").with_usage(500, 1)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "--max-input-tokens", "100", "go"]);
    assert_eq!(output.status.code(), Some(4));
    let events = events(&sink);
    assert_eq!(types(&events), ["run_started", "budget_exceeded", "run_failed"]);
    assert_eq!(events[1]["data"], serde_json::json!({"limit_name": "input_tokens", "observed": 500, "limit": 100}));
    assert_eq!(events[2]["data"]["error_class"], "execution_budget");
    assert!(events.iter().all(|e| e.get("session_id").is_none()), "no session, no session_id");
}

#[test]
fn secrets_never_reach_the_stream_red() {
    let secret = format!("ghp_{}", "Q".repeat(36));
    let arguments = format!(r#"{{"command":"echo {secret}"}}"#);
    let server =
        ScriptedServer::start(vec![Reply::tool_calls(vec![("c1", "shell", arguments.as_str())]), Reply::text("done")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "--events-include-args", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let raw = std::fs::read_to_string(&sink).unwrap();
    assert!(!raw.contains(&secret));
    assert!(!raw.contains(API_KEY));
    let started = events(&sink).into_iter().find(|e| e["type"] == "tool_call_started").unwrap();
    assert_eq!(started["data"]["args"], r#"{"command":"echo [REDACTED]"}"#);
    assert_eq!(started["data"]["args_summary"], serde_json::json!({"argv0": "echo", "class": "safe"}));
}

#[test]
fn the_sink_refuses_symlinks_and_missing_parents() {
    let sandbox = Sandbox::new();
    let target = sandbox.project.join("real.jsonl");
    let link = sandbox.project.join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&link), "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!("odek: events-jsonl: refusing to write events to symlink {}\n", link.display())
    );
    assert!(!target.exists());
    let missing = sandbox.project.join("nope/events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&missing), "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).starts_with(&format!(
        "odek: events-jsonl: parent directory {} must already exist: ",
        sandbox.project.join("nope").display()
    )));
}

#[test]
fn events_on_stdout_need_json_mode_and_end_with_the_result_line() {
    let server = ScriptedServer::start(vec![Reply::text("the answer")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--events-jsonl", "-", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "odek: events-jsonl: - writes the events to stdout, which carries the answer: add --json\n"
    );
    let output = sandbox.odek(&["run", "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.first().unwrap()["type"], "run_started");
    assert_eq!(lines[lines.len() - 2]["type"], "run_completed");
    assert_eq!(lines.last().unwrap()["answer"], "the answer");
}

#[test]
fn truncation_restarts_and_survival_trims_are_reported() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("big", "fixture__large_result", r#"{"chars":5000}"#)]),
        Reply::tool_calls(vec![("crash", "fixture__exit_mid_call", r#"{"code":3}"#)]),
        Reply::tool_calls(vec![("again", "fixture__echo", r#"{"text":"back"}"#)]),
        Reply::status(400, r#"{"error":{"message":"maximum context length exceeded"}}"#),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    let mut fixture = sandbox.fixture_server();
    fixture["max_result_chars"] = serde_json::json!(1000);
    sandbox.global_config(
        &serde_json::json!({"base_url": server.base_url(), "model": "test-model", "mcp_servers": {"fixture": fixture}}),
    );
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&sink);
    let completed: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call_completed").collect();
    assert_eq!(completed[0]["data"]["call_id"], "big");
    assert_eq!(completed[0]["data"]["truncated"], true);
    assert_eq!(completed[0]["data"]["observed_chars"], 5000);
    assert!(completed[1]["data"].get("truncated").is_none());
    let failed = events.iter().find(|e| e["type"] == "tool_call_failed").unwrap();
    assert_eq!(failed["data"]["call_id"], "crash");
    let restarted = events.iter().find(|e| e["type"] == "mcp_server_restarted").unwrap();
    assert_eq!(restarted["data"]["server"], "fixture");
    assert_eq!(restarted["data"]["restarts"], 1);
    let trimmed = events.iter().find(|e| e["type"] == "context_trimmed").unwrap();
    assert_eq!(trimmed["data"]["mode"], "survival");
    assert_eq!(trimmed["data"]["truncated_results"], 0);
    assert_eq!(trimmed["iteration"], 4);
    assert_eq!(events.last().unwrap()["type"], "run_completed");
}

#[test]
fn an_mcp_startup_failure_is_reported_then_the_run_fails() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&serde_json::json!({
        "base_url": "http://127.0.0.1:9/v1",
        "mcp_servers": {"broken": {"command": "/nonexistent/server", "auto_approve": true}},
    }));
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "go"]);
    assert_eq!(output.status.code(), Some(1));
    let events = events(&sink);
    assert_eq!(types(&events), ["run_started", "mcp_server_failed", "run_failed"]);
    assert_eq!(events[1]["data"]["server"], "broken");
    assert_eq!(events[2]["data"]["error_class"], "error");
}

#[test]
fn a_proactive_trim_is_reported_with_its_counts() {
    // deepseek-v4-flash: a 131072-token window, so 98304 tokens of budget. Two 190 KB context
    // files put the protected head just under it; the first tool round trip pushes it over.
    // Six reads of ~1k tokens each leave a margin for the system prompt's size changing.
    let mut replies: Vec<Reply> =
        (0..6).map(|i| Reply::tool_calls(vec![(format!("c{i}"), "read_file", r#"{"path":"small.txt"}"#)])).collect();
    replies.push(Reply::text("done"));
    let server = ScriptedServer::start(replies);
    let sandbox = Sandbox::new();
    sandbox.global_config(
        &serde_json::json!({"base_url": server.base_url(), "model": "deepseek-v4-flash", "compaction": false}),
    );
    let filler = "lorem ipsum dolor sit amet ".repeat(7_100);
    sandbox.write("one.txt", &filler);
    sandbox.write("two.txt", &filler);
    sandbox.write("small.txt", &format!("{}\n", "x".repeat(99)).repeat(60));
    let sink = sandbox.project.join("events.jsonl");
    let output =
        sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "--ctx", "one.txt", "--ctx", "two.txt", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&sink);
    let trimmed: Vec<&Value> = events.iter().filter(|e| e["type"] == "context_trimmed").collect();
    assert!(!trimmed.is_empty(), "{:?}", types(&events));
    assert_eq!(trimmed[0]["data"]["mode"], "proactive");
    assert!(trimmed[0]["data"]["dropped_groups"].as_u64().unwrap() >= 1);
    let last_request = messages(server.requests().last().unwrap());
    assert!(last_request.iter().any(|m| m["content"].as_str().unwrap().starts_with("[Context trimmed:")));
}

/// [beyond] The model view reaches the model in a real run: an image item becomes its metadata
/// line inside the tool message, structuredContent its JSON line, and `artifact_count` counts
/// only verified artifact lines (docs/MODEL-VIEW.md).
#[test]
fn non_text_content_reaches_the_model_and_only_artifacts_are_counted() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![
            ("image", "fixture__multi_item", r#"{"items":["a"]}"#),
            ("weather", "fixture__structured_result", "{}"),
            ("report", "fixture__artifact_result", "{}"),
        ]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    let tools = tool_contents(&requests[1]);
    assert_eq!(tools.len(), 3);
    assert!(
        tools[0]
            .contains(" source=\"mcp:fixture:multi_item\">\na\n- image (image/png, 70 bytes)\n</untrusted_content_")
    );
    assert!(tools[1].contains("\n- structured content {\"conditions\":\"Sunny\",\"temperature\":22.5}\n"));
    assert!(!tools[0].contains("iVBORw0KGgo"), "the base64 never reaches the model");
    let events = events(&sink);
    let counts: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|event| event["type"] == "tool_call_completed")
        .map(|event| (&event["data"]["call_id"], &event["data"]["artifact_count"]))
        .collect();
    assert_eq!(counts.len(), 3);
    for (call_id, count) in counts {
        let expected = if call_id == "report" { 1 } else { 0 };
        assert_eq!(*count, expected, "{call_id}");
    }
}
