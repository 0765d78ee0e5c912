//! \[beyond\] `run_heartbeat` (issue 17 item 1) through the real binary: emitted every
//! `events.heartbeat_seconds` (or `--heartbeat`) into the event stream only, with the phase,
//! the running tool calls and the idle time; off with `0`; never on stdout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::time::Duration;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

const TEST_LIMIT: Duration = Duration::from_secs(60);

fn events(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn heartbeats(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|event| event["type"] == "run_heartbeat").collect()
}

/// A tool call that runs for a while: the heartbeats while it runs name it and the `tools`
/// phase; none comes after the run's last event.
#[test]
fn heartbeats_name_the_running_tool_calls() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", json!({"command": "sleep 3", "timeout_seconds": 20}).to_string())]),
        Reply::text("slept"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let sink = sandbox.project.join("events.jsonl");
    let command = sandbox.command(&["run", "--events-jsonl", path_str(&sink), "--heartbeat", "1", "nap"]);
    let output = output_within(command, TEST_LIMIT);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "slept\n", "heartbeats never reach stdout");
    let events = events(&sink);
    let during_call: Vec<&Value> =
        heartbeats(&events).into_iter().filter(|heartbeat| heartbeat["data"]["phase"] == "tools").collect();
    assert!(!during_call.is_empty(), "no heartbeat while the call ran: {events:?}");
    for heartbeat in &during_call {
        assert_eq!(heartbeat["data"]["call_ids"], json!(["c1"]), "{heartbeat}");
        assert!(heartbeat["data"]["idle_ms"].is_u64(), "{heartbeat}");
        assert!(heartbeat.get("iteration").is_none() && heartbeat.get("tool").is_none(), "{heartbeat}");
    }
    assert_eq!(events.last().unwrap()["type"], "run_completed", "no heartbeat after the last event");
}

/// The heartbeat idle time counts from the last progress: with the model stalled after a
/// streamed half answer, it keeps growing from the last chunk.
#[test]
fn the_idle_time_grows_while_nothing_moves() {
    let server = ScriptedServer::start(vec![Reply::stalls_mid_stream("a b c d e f g h")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let sink = sandbox.project.join("events.jsonl");
    let command = sandbox.command(&[
        "run",
        "--stream",
        "--stream-idle-timeout",
        "3",
        "--heartbeat",
        "1",
        "--events-jsonl",
        path_str(&sink),
        "go",
    ]);
    let output = output_within(command, TEST_LIMIT);
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
    let events = events(&sink);
    let idle: Vec<u64> = heartbeats(&events).iter().map(|beat| beat["data"]["idle_ms"].as_u64().unwrap()).collect();
    assert!(idle.len() >= 2, "{events:?}");
    assert!(idle.windows(2).all(|pair| pair[1] > pair[0]), "idle_ms must grow while nothing moves: {idle:?}");
}

#[test]
fn heartbeats_are_off_with_zero() {
    for (config_value, flag) in [(json!(0), None), (json!(30), Some("0"))] {
        let server = ScriptedServer::start(vec![Reply::never_answers()]);
        let sandbox = Sandbox::new();
        sandbox.global_config(&json!({
            "base_url": server.base_url(),
            "model": "test-model",
            "events": {"heartbeat_seconds": config_value},
            "limits": {"first_byte_timeout_seconds": 2},
        }));
        let sink = sandbox.project.join("events.jsonl");
        let mut args = vec!["run", "--events-jsonl", path_str(&sink)];
        if let Some(flag) = flag {
            args.extend(["--heartbeat", flag]);
        }
        args.push("go");
        let output = output_within(sandbox.command(&args), TEST_LIMIT);
        assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
        let events = events(&sink);
        assert!(heartbeats(&events).is_empty(), "{events:?}");
        assert_eq!(events.last().unwrap()["data"]["error_class"], "stalled");
    }
}

/// A project file may make heartbeats more frequent, never switch them off.
#[test]
fn a_project_cannot_switch_heartbeats_off_red() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "events": {"heartbeat_seconds": 1},
        "limits": {"first_byte_timeout_seconds": 2},
    }));
    sandbox.write("odek.json", &json!({"events": {"heartbeat_seconds": 0}}).to_string());
    let sink = sandbox.project.join("events.jsonl");
    let output = output_within(sandbox.command(&["run", "--events-jsonl", path_str(&sink), "go"]), TEST_LIMIT);
    assert_eq!(output.status.code(), Some(6), "{}", stderr(&output));
    assert!(!heartbeats(&events(&sink)).is_empty());
}
