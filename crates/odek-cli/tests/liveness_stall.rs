//! \[beyond\] No silent hang (issue 17 item 1), through the real binary: a provider that accepts
//! the connection and never answers, a stream that stalls mid-answer and an MCP server that
//! never finishes `initialize` each end the run as `stalled` — exit 6, the exact stderr line,
//! `run_failed` with `error_class: "stalled"` and the `phase`, heartbeats before it — within
//! the deadline plus 2 s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::time::{Duration, Instant};

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

/// Bounds the test, not odek: the old code waited 300 s for a silent provider.
const TEST_LIMIT: Duration = Duration::from_secs(60);

fn events(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|event| event["type"] == kind).collect()
}

/// Runs `args` with the events in a file; returns the output, the events and the wall time.
fn run_with_events(sandbox: &Sandbox, args: &[&str]) -> (std::process::Output, Vec<Value>, Duration) {
    let sink = sandbox.project.join("events.jsonl");
    let mut all = vec!["run", "--events-jsonl", path_str(&sink)];
    all.extend_from_slice(args);
    // Built (the binary checked by cargo) before the clock starts.
    let command = sandbox.command(&all);
    let started = Instant::now();
    let output = output_within(command, TEST_LIMIT);
    let elapsed = started.elapsed();
    (output, events(&sink), elapsed)
}

/// The stream ends with `run_failed` as a stall of `phase`, and every heartbeat came before it.
fn assert_stalled_run(events: &[Value], phase: &str) {
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_failed", "{events:?}");
    assert_eq!(last["data"]["error_class"], "stalled");
    assert_eq!(last["data"]["outcome"], "stalled");
    assert_eq!(last["data"]["phase"], phase);
}

/// The old code bounded a plain answer's wait only by the 300 s request timeout: a provider
/// that accepted the connection and sent nothing held an unattended run for five minutes.
#[test]
fn a_provider_that_never_sends_a_byte_stalls_the_run_red() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let (output, events, elapsed) =
        run_with_events(&sandbox, &["--first-byte-timeout", "2", "--heartbeat", "1", "--json", "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(6), "{err}");
    assert!(elapsed < Duration::from_secs(4), "the 2 s deadline took {elapsed:?}");
    assert!(err.ends_with("odek: run stalled: no progress in model for 2s (limit 2s)\n"), "{err}");
    let result: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(result["outcome"], "stalled");
    assert_stalled_run(&events, "model");
    let heartbeats = of_type(&events, "run_heartbeat");
    assert!(!heartbeats.is_empty(), "no heartbeat before the stall: {events:?}");
    for heartbeat in &heartbeats {
        assert_eq!(heartbeat["data"]["phase"], "model", "{heartbeat}");
        assert_eq!(heartbeat["data"]["call_ids"], json!([]), "{heartbeat}");
        assert!(heartbeat["data"]["idle_ms"].as_u64().unwrap() >= 900, "{heartbeat}");
    }
    // Exactly one attempt: a silent provider is not retried.
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_stream_that_stalls_mid_answer_ends_the_run_stalled() {
    let server = ScriptedServer::start(vec![Reply::stalls_mid_stream("one two three four five six")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let (output, events, elapsed) =
        run_with_events(&sandbox, &["--stream", "--stream-idle-timeout", "2", "--heartbeat", "1", "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(6), "{err}");
    assert!(elapsed < Duration::from_secs(4), "the 2 s deadline took {elapsed:?}");
    assert!(err.ends_with("odek: run stalled: no progress in model for 2s (limit 2s)\n"), "{err}");
    assert_eq!(stdout(&output), "", "a stalled answer is never printed");
    assert_stalled_run(&events, "model");
    assert!(!of_type(&events, "run_heartbeat").is_empty(), "{events:?}");
}

/// A stall after a completed step leaves the session at that step: the tool call and its
/// result are saved, nothing of the stalled model call is, and the session can be continued.
#[test]
fn a_stall_keeps_the_sessions_latest_safe_state() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", json!({"command": "echo step-one"}).to_string())]),
        Reply::never_answers(),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let (output, events, _) = run_with_events(&sandbox, &["--session", "--first-byte-timeout", "1", "go"]);
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
    assert_stalled_run(&events, "model");
    let [file] = sandbox.session_files().try_into().unwrap();
    let session: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let messages = session["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool", "{messages:?}");
    assert!(last["content"].as_str().unwrap().contains("step-one"), "{last}");
}

/// The old code waited for the server's 30 s `timeout_seconds` and then failed as an ordinary
/// start-up error (exit 1): a start-up that never finishes is now a stall, bounded by the
/// server's `startup_timeout_seconds`.
#[test]
fn an_mcp_server_that_never_finishes_initialize_stalls_the_start_up_red() {
    let server = ScriptedServer::start(vec![]);
    let sandbox = Sandbox::new();
    let mut slow = sandbox.fixture_server();
    slow["args"] = json!(["--mode", "no-initialize-reply"]);
    slow["startup_timeout_seconds"] = json!(2);
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "mcp_servers": {"slow": slow},
    }));
    let (output, events, elapsed) = run_with_events(&sandbox, &["--heartbeat", "1", "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(6), "{err}");
    assert!(elapsed < Duration::from_secs(4), "the 2 s deadline took {elapsed:?}");
    assert!(
        err.ends_with(
            "odek: run stalled: no progress in mcp_startup for 2s (limit 2s); mcp server \"slow\": mcpclient slow: \
             start-up (spawn, initialize, tools/list) did not finish within 2s (startup_timeout_seconds)\n\
             to let the run go on without this server when it fails, set \"required\": false in its entry\n"
        ),
        "{err}"
    );
    assert_stalled_run(&events, "mcp_startup");
    let failed = of_type(&events, "mcp_server_failed");
    assert_eq!(failed.len(), 1, "{events:?}");
    assert_eq!(failed[0]["data"]["error_class"], "stalled");
    let heartbeats = of_type(&events, "run_heartbeat");
    assert!(!heartbeats.is_empty(), "{events:?}");
    assert!(heartbeats.iter().all(|heartbeat| heartbeat["data"]["phase"] == "mcp_startup"), "{heartbeats:?}");
    assert!(server.requests().is_empty(), "no model call after a failed start-up");
}

/// `--mcp-startup-timeout` (and `limits.mcp_startup_timeout_seconds`) is the deadline of every
/// server whose entry sets none.
#[test]
fn the_mcp_startup_flag_bounds_servers_without_their_own_deadline() {
    let server = ScriptedServer::start(vec![]);
    let sandbox = Sandbox::new();
    let mut slow = sandbox.fixture_server();
    slow["args"] = json!(["--mode", "no-initialize-reply"]);
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "limits": {"mcp_startup_timeout_seconds": 20},
        "mcp_servers": {"slow": slow},
    }));
    let (output, events, elapsed) = run_with_events(&sandbox, &["--mcp-startup-timeout", "1", "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(6), "{err}");
    assert!(elapsed < Duration::from_secs(3), "the 1 s deadline took {elapsed:?}");
    assert!(err.contains("odek: run stalled: no progress in mcp_startup for 1s (limit 1s); "), "{err}");
    assert_stalled_run(&events, "mcp_startup");
}

/// A server that is not required and stalls is left out as today (a warning), and the run goes on.
#[test]
fn an_optional_server_that_stalls_is_left_out() {
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let sandbox = Sandbox::new();
    let mut slow = sandbox.fixture_server();
    slow["args"] = json!(["--mode", "no-initialize-reply"]);
    slow["startup_timeout_seconds"] = json!(1);
    slow["required"] = json!(false);
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "mcp_servers": {"slow": slow},
    }));
    let (output, events, _) = run_with_events(&sandbox, &["go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(stdout(&output), "done\n");
    assert!(
        err.contains(
            "odek: warning: mcp server \"slow\": mcpclient slow: start-up (spawn, initialize, tools/list) did not \
             finish within 1s (startup_timeout_seconds); continuing without it (required: false)"
        ),
        "{err}"
    );
    assert_eq!(of_type(&events, "mcp_server_failed")[0]["data"]["error_class"], "stalled");
    assert_eq!(events.last().unwrap()["type"], "run_completed");
}
