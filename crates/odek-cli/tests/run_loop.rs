//! `odek run` end to end: the real binary against the scripted OpenAI-compatible server and the
//! fixture MCP server — what the model is sent (wrappers, delimiters, error outputs), what the
//! operator sees (stdout = the final answer only) and how provider failures end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;

#[test]
fn a_run_prints_only_the_final_answer_and_frames_every_tool_result() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![
            ("call_1", "shell", r#"{"command":"echo hello-from-shell"}"#),
            ("call_2", "fixture__echo", r#"{"text":"hello extension"}"#),
        ])
        .with_usage(100, 20),
        Reply::text("all done").with_usage(150, 5),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let output = sandbox.odek(&["run", "say", "hello"]);
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(out, "all done\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), Some(format!("Bearer {API_KEY}").as_str()));
    let first = messages(&requests[0]);
    assert_eq!(first[0]["role"], "system");
    assert_eq!(first[1]["content"], "say hello");
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    for name in ["shell", "read_file", "write_file", "patch", "search_files", "fixture__echo"] {
        assert!(tools.contains(&name), "{name} missing from {tools:?}");
    }
    let results = tool_contents(&requests[1]);
    assert_eq!(results.len(), 2);
    assert!(results[0].starts_with("┌── TOOL RESULT: shell ["), "{}", results[0]);
    assert!(results[0].contains("source=\"$ echo hello-from-shell\""), "{}", results[0]);
    assert!(results[0].contains("hello-from-shell\n"));
    assert!(results[1].starts_with("┌── TOOL RESULT: fixture__echo ["));
    assert!(results[1].contains("source=\"mcp:fixture:echo\""), "{}", results[1]);
    assert!(results[1].contains("hello extension"));
    // The tool messages answer the provider's call ids, in call order.
    let tool_ids: Vec<_> =
        messages(&requests[1]).iter().filter(|m| m["role"] == "tool").map(|m| m["tool_call_id"].clone()).collect();
    assert_eq!(tool_ids, ["call_1", "call_2"]);
    assert_no_key(&[&out, &err]);
}

#[test]
fn streaming_runs_read_the_answer_and_tool_calls_from_sse() {
    let server = ScriptedServer::start(vec![
        Reply::sse(Reply::tool_calls(vec![("c1", "fixture__echo", r#"{"text":"streamed"}"#)])),
        Reply::sse(Reply::text("streamed answer").with_usage(10, 3)),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let output = sandbox.odek(&["run", "--stream", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "streamed answer\n");
    let requests = server.requests();
    assert_eq!(requests[0].body["stream"], true);
    assert!(tool_contents(&requests[1])[0].contains("streamed"));
}

#[test]
fn a_stream_that_stops_mid_message_fails_the_run() {
    let server = ScriptedServer::start(vec![Reply::sse_cut(Reply::text("half an answ"))]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--stream", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert!(stderr(&output).contains("stream ended mid-message"), "{}", stderr(&output));
}

#[test]
fn provider_errors_name_the_endpoint_never_the_key_red() {
    let server = ScriptedServer::start(vec![Reply::status(401, r#"{"error":{"message":"invalid api key"}}"#)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1));
    assert!(err.contains("odek: iteration 1: "), "{err}");
    assert!(err.contains(&format!("{}/chat/completions", server.base_url())), "{err}");
    assert!(err.contains("HTTP 401"), "{err}");
    assert_no_key(&[&err, &stdout(&output)]);
}

#[test]
fn server_errors_are_retried_before_giving_up() {
    let server = ScriptedServer::start(vec![Reply::status(503, "busy"), Reply::text("after a retry")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "after a retry\n");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn malformed_provider_json_is_a_clear_error() {
    let server = ScriptedServer::start(vec![Reply::raw(200, "application/json", "{\"choices\": [")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("invalid response"), "{}", stderr(&output));
}

#[test]
fn bad_arguments_and_unknown_tools_become_error_outputs_and_the_run_goes_on() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", "{not json"), ("c2", "no_such_tool", "{}")]),
        Reply::text("recovered"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_contents(&server.requests()[1]);
    assert!(results[0].contains("\nerror: "), "{}", results[0]);
    assert!(results[1].contains("\nerror: tool \"no_such_tool\" not found\n"), "{}", results[1]);
}

#[test]
fn parallel_results_keep_call_order_when_the_first_call_finishes_last() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![
            ("slow", "shell", r#"{"command":"sleep 0.3; echo first"}"#),
            ("fast", "fixture__echo", r#"{"text":"second"}"#),
        ]),
        Reply::text("ordered"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    sandbox.global_config(&serde_json::json!({
        "base_url": server.base_url(),
        "mcp_servers": {"fixture": sandbox.fixture_server()},
        "dangerous": {"classes": {"code_execution": "allow", "unknown": "allow"}},
    }));
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = tool_contents(&server.requests()[1]);
    assert!(results[0].contains("first"), "{}", results[0]);
    assert!(results[1].contains("second"), "{}", results[1]);
}

#[test]
fn a_context_length_error_recovers_in_survival_mode() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "fixture__echo", r#"{"text":"x"}"#)]),
        Reply::status(400, r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#),
        Reply::text("fits again"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "fits again\n");
    let third = messages(&server.requests()[2]);
    assert!(third.iter().any(|m| m["content"].as_str().unwrap().starts_with("[Context trimmed to survive:")));
    assert!(third.last().unwrap()["content"].as_str().unwrap().starts_with("[Context survival mode:"));
}

#[test]
fn a_missing_task_is_an_error() {
    let sandbox = Sandbox::new();
    let output = sandbox.odek(&["run"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "odek: a task is required\n");
}

#[test]
fn max_iter_must_be_a_positive_integer() {
    let sandbox = Sandbox::new();
    let output = sandbox.odek(&["run", "--max-iter", "zero", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "odek: --max-iter: invalid integer \"zero\"\n");
}

#[test]
fn shell_commands_never_see_the_provider_key_red() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", r#"{"command":"env"}"#)]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.command(&["run", "list", "env"]).env("ODEK_MARKER", "visible").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result = &tool_contents(&server.requests()[1])[0];
    assert!(result.contains("ODEK_MARKER=visible"), "{result}");
    assert!(!result.contains("ODEK_API_KEY"), "{result}");
    assert_no_key(&[result]);
}

#[test]
fn risky_commands_are_denied_without_a_terminal_with_the_exact_marker() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", r#"{"command":"curl https://example.com/x"}"#)]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "fetch"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result = &tool_contents(&server.requests()[1])[0];
    assert!(result.contains("\noperation denied by configuration: "), "{result}");
    assert!(result.contains("(risk: network_egress)\n"), "{result}");
}
