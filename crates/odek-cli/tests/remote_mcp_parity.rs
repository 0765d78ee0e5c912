//! A remote MCP server gets every guarantee of a stdio one, through the real `odek` (issue 19):
//! the same fixture, run by odek over stdio or by the test as a Streamable HTTP server that odek
//! is given the `url` of, gives exactly the same `odek ext call --model-view` output (structured
//! content, a resource link, an image, a truncated result, a verified artifact ref and its
//! refusal without a root), and a replayed `odek run` emits the same MCP events, a session that
//! expires being restarted as a crashed process is (`mcp_server_restarted` without
//! `exit_status`). Every event is checked against the published schema.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::process::Command;

use odek_test_support::listening::ListeningServer;
use odek_test_support::mcp_http::{McpHttpServer, McpScript, ToolAnswer};
use run_support::*;
use serde_json::{Value, json};

/// The fixture serving Streamable HTTP on a port the kernel picks, with the sandbox's artifact
/// directory.
fn http_fixture(sandbox: &Sandbox) -> ListeningServer {
    let mut command = Command::new(odek_test_support::fixture_server());
    command.args(["--http", "127.0.0.1:0", "--artifact-dir"]).arg(&sandbox.artifacts);
    ListeningServer::start(command)
}

/// The fixture's entry over stdio and over HTTP (`url`), with `extra` fields merged into both.
fn entries(sandbox: &Sandbox, http: &ListeningServer, extra: &Value) -> [Value; 2] {
    let remote = json!({"url": http.url, "artifact_roots": [sandbox.artifacts], "auto_approve": true});
    [sandbox.fixture_server(), remote].map(|mut entry| {
        entry.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        entry
    })
}

/// `odek ext call --model-view <tool> <arguments>` with `entry` as the server "fx": the exit
/// code and stdout (nonces masked), stderr checked to hold no error.
fn model_view(sandbox: &Sandbox, entry: &Value, tool: &str, arguments: &str) -> (Option<i32>, String) {
    sandbox.global_config(&json!({"mcp_servers": {"fx": entry}}));
    let output = sandbox.odek(&["ext", "call", "--model-view", tool, arguments]);
    assert!(!stderr(&output).contains("error"), "{}", stderr(&output));
    (output.status.code(), mask_nonces(&stdout(&output)))
}

#[test]
fn ext_call_model_view_is_the_same_over_http_as_over_stdio() {
    let sandbox = Sandbox::new();
    let http = http_fixture(&sandbox);
    let resource_link = json!({"result": {"content": [{"type": "resource_link", "uri": "file:///srv/report.pdf",
        "name": "report.pdf", "mimeType": "application/pdf", "size": 52344}]}});
    let artifact = r#"{"content":"hello artifact\n","summary":"Full CI results","text":"Analyzed."}"#;
    let notice = "\n[odek: result truncated — server \"fx\" tool \"large_result\" produced 5000 chars, exceeding the configured max_result_chars=1000; the full result is available via the retained artifact references, if any]";
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"hello artifact\n"));
    let cases: [(&str, String, String); 5] = [
        (
            "fx__structured_result",
            "{}".into(),
            r#"- structured content {"conditions":"Sunny","temperature":22.5}"#.into(),
        ),
        (
            "fx__raw_result",
            resource_link.to_string(),
            r#"- resource link "file:///srv/report.pdf" (name "report.pdf", application/pdf, 52344 bytes)"#.into(),
        ),
        ("fx__multi_item", r#"{"items":["a"]}"#.into(), "a\n- image (image/png, 70 bytes)".into()),
        (
            "fx__large_result",
            r#"{"chars":5000}"#.into(),
            format!("{}{notice}", "x".repeat(1000 - notice.chars().count())),
        ),
        (
            "fx__artifact_result",
            artifact.into(),
            format!(
                "Analyzed.\n- artifact \"report-1\" (text/plain, 15 bytes, sha256 {}…): Full CI results",
                &digest[..12]
            ),
        ),
    ];
    let [stdio, remote] = entries(&sandbox, &http, &json!({"max_result_chars": 1000}));
    for (tool, arguments, body) in cases {
        let over_stdio = model_view(&sandbox, &stdio, tool, &arguments);
        let over_http = model_view(&sandbox, &remote, tool, &arguments);
        assert_eq!(over_http, over_stdio, "{tool}");
        let source = tool.replace("__", ":");
        let wrapped = format!("<untrusted_content_N source=\"mcp:{source}\">\n{body}\n</untrusted_content_N>");
        assert_eq!(over_http, (Some(0), framed(tool, &wrapped)), "{tool}");
        assert!(!over_http.1.contains(sandbox.artifacts.to_str().unwrap()), "no path reaches the model");
    }

    // Without a configured root the ref is refused, the same way.
    let refused = "error: mcpclient fx: tool artifact_result: artifact ref rejected: artifact \"report-1\" rejected: no artifact roots configured for this server";
    let [stdio, remote] = entries(&sandbox, &http, &json!({"artifact_roots": []}));
    let over_stdio = model_view(&sandbox, &stdio, "fx__artifact_result", artifact);
    let over_http = model_view(&sandbox, &remote, "fx__artifact_result", artifact);
    assert_eq!(over_http, over_stdio);
    assert_eq!(over_http, (Some(1), framed("fx__artifact_result", refused)));
}

fn replay_script(turns: Value) -> String {
    json!({"schema": "odek.replay/v1", "turns": turns}).to_string()
}

/// Runs the replay script in `script` with `entry` as the server "fx" and returns the events,
/// each checked against the schema.
fn replayed_run(sandbox: &Sandbox, entry: &Value, script: &str) -> Vec<Value> {
    sandbox.global_config(&json!({"mcp_servers": {"fx": entry}}));
    let replay = sandbox.write("run.replay.json", script);
    let sink = sandbox.project.join("events.jsonl");
    // The sink is appended to: each run gets its own.
    let _ = std::fs::remove_file(&sink);
    let args = ["run", "--provider", "replay", "--replay", path_str(&replay), "--events-jsonl", path_str(&sink), "go"];
    let output = sandbox.odek(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "done\n");
    events(&sink)
}

/// An event without what differs from run to run: its time, the run's id and durations.
fn comparable(event: &Value) -> Value {
    let mut event = event.clone();
    let object = event.as_object_mut().unwrap();
    for field in ["timestamp", "run_id"] {
        object.remove(field);
    }
    if let Some(data) = object.get_mut("data").and_then(Value::as_object_mut) {
        data.remove("duration_ms");
    }
    event
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|event| event["type"].as_str().unwrap()).collect()
}

#[test]
fn a_replayed_run_emits_the_same_events_over_http_as_over_stdio() {
    let sandbox = Sandbox::new();
    let http = http_fixture(&sandbox);
    let script = replay_script(json!([
        {"tool_calls": [
            {"id": "echo", "name": "fx__echo", "arguments": {"text": "over the wire"}},
            {"id": "structured", "name": "fx__structured_result", "arguments": {}},
        ]},
        {"tool_calls": [{"id": "large", "name": "fx__large_result", "arguments": {"chars": 5000}}]},
        {"tool_calls": [{"id": "refused", "name": "fx__bad_artifact", "arguments": {"kind": "traversal"}}]},
        {"content": "done"},
    ]));
    let [stdio, remote] = entries(&sandbox, &http, &json!({"max_result_chars": 1000}));
    let over_stdio: Vec<Value> = replayed_run(&sandbox, &stdio, &script).iter().map(comparable).collect();
    let over_http: Vec<Value> = replayed_run(&sandbox, &remote, &script).iter().map(comparable).collect();
    assert_eq!(over_http, over_stdio);
    let started = over_http.iter().find(|event| event["type"] == "mcp_server_started").unwrap();
    assert_eq!(started["data"], json!({"server": "fx", "tools": 28, "protocol_version": "2025-03-26"}));
    let calls = ["tool_call_started", "tool_call_completed", "tool_call_failed"];
    let call_events: Vec<&str> = types(&over_http).into_iter().filter(|kind| calls.contains(kind)).collect();
    assert_eq!(
        call_events,
        [
            "tool_call_started",
            "tool_call_started",
            "tool_call_completed",
            "tool_call_completed",
            "tool_call_started",
            "tool_call_completed",
            "tool_call_started",
            "tool_call_failed",
        ]
    );
    let large =
        over_http.iter().find(|event| event["type"] == "tool_call_completed" && event["data"]["call_id"] == "large");
    let large = &large.unwrap()["data"];
    assert_eq!((&large["truncated"], &large["observed_chars"]), (&json!(true), &json!(5000)));
}

/// The answer the fixture's `echo` gives, from a scripted HTTP server.
fn echo(arguments: &Value) -> ToolAnswer {
    ToolAnswer::text(arguments["text"].as_str().unwrap_or_default())
}

#[test]
fn a_session_that_expires_mid_run_is_restarted_as_a_crashed_process_is() {
    let sandbox = Sandbox::new();
    let script = replay_script(json!([
        {"tool_calls": [{"id": "before", "name": "fx__echo", "arguments": {"text": "before"}}]},
        {"tool_calls": [{"id": "lost", "name": "fx__exit_mid_call", "arguments": {"code": 3}}]},
        {"tool_calls": [{"id": "after", "name": "fx__echo", "arguments": {"text": "after"}}]},
        {"content": "done"},
    ]));
    // Over stdio `exit_mid_call` ends the process; over HTTP the server forgets the session
    // (404 to the call, as a server that restarted answers), so the next call starts a new one.
    let tool = |name: &str| json!({"name": name, "inputSchema": {"type": "object"}});
    let forgotten = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#;
    let server = McpHttpServer::start(
        McpScript::new()
            .tool(tool("echo"), echo)
            .tool(tool("exit_mid_call"), move |_| ToolAnswer::http(404, "application/json", forgotten)),
    );
    let remote = json!({"url": server.url(), "auto_approve": true});
    let over_stdio = replayed_run(&sandbox, &sandbox.fixture_server(), &script);
    let over_http = replayed_run(&sandbox, &remote, &script);

    let restarted = |events: &[Value]| events.iter().find(|event| event["type"] == "mcp_server_restarted").cloned();
    assert_eq!(restarted(&over_stdio).unwrap()["data"], json!({"server": "fx", "restarts": 1, "exit_status": 3}));
    assert_eq!(restarted(&over_http).unwrap()["data"], json!({"server": "fx", "restarts": 1}));
    // Everything else is the same event for event; the server's tool count aside, which is
    // the scripted server's.
    let same = |events: &[Value]| -> Vec<Value> {
        events
            .iter()
            .map(|event| {
                let mut event = comparable(event);
                let started = event["type"] == "mcp_server_started";
                if let Some(data) = event["data"].as_object_mut() {
                    data.remove("exit_status");
                    if started {
                        data.remove("tools");
                    }
                }
                event
            })
            .collect()
    };
    assert_eq!(same(&over_http), same(&over_stdio));
    let mcp_and_calls: Vec<&str> = types(&over_http)
        .into_iter()
        .filter(|kind| kind.starts_with("mcp_") || kind.starts_with("tool_call"))
        .collect();
    assert_eq!(
        mcp_and_calls,
        [
            "mcp_server_started",
            "tool_call_started",
            "tool_call_completed",
            "tool_call_started",
            "tool_call_failed",
            "tool_call_started",
            "mcp_server_restarted",
            "tool_call_completed",
        ]
    );
    let sessions: Vec<Option<String>> = server
        .requests()
        .iter()
        .filter(|request| request.rpc_method() == Some("tools/call"))
        .map(|request| request.session_id().map(str::to_owned))
        .collect();
    assert_eq!(sessions, [Some("session-1".into()), Some("session-1".into()), Some("session-2".into())]);
}
