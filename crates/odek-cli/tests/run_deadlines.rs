//! Deadlines of an unattended run through the real binary: the shell tool's timeout (the
//! model's `timeout_seconds`, capped by `limits.shell_timeout_seconds`) and `--max-runtime`
//! enforced while a model call or a tool batch is in flight.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::time::{Duration, Instant};

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::json;

/// Generous for a loaded machine, far below the 30 s the commands would take.
const DEADLINE: Duration = Duration::from_secs(25);

fn shell_call(arguments: serde_json::Value) -> Reply {
    Reply::tool_calls(vec![("c1", "shell", arguments.to_string())])
}

#[test]
fn a_shell_call_past_its_timeout_is_killed_and_the_model_is_told() {
    let server = ScriptedServer::start(vec![
        shell_call(json!({"command": "echo started; sleep 30", "timeout_seconds": 1})),
        Reply::text("it timed out"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let command = sandbox.command(&["run", "--quiet", "wait", "a", "bit"]);
    let started = Instant::now();
    let output = output_within(command, DEADLINE);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    assert_eq!(stdout(&output), "it timed out\n");
    let results = tool_contents(&server.requests()[1]);
    assert!(results[0].contains("command timed out after 1s; its process group was killed"), "{}", results[0]);
    assert!(results[0].contains("started"), "the output so far reaches the model: {}", results[0]);
}

/// The operator's cap wins over the model's `timeout_seconds`.
#[test]
fn limits_shell_timeout_seconds_caps_what_the_model_asks_for() {
    let server = ScriptedServer::start(vec![
        shell_call(json!({"command": "sleep 30", "timeout_seconds": 600})),
        Reply::text("capped"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "limits": {"shell_timeout_seconds": 1},
    }));
    let output = output_within(sandbox.command(&["run", "--quiet", "go"]), DEADLINE);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let request = &server.requests()[0];
    let shell = request.body["tools"].as_array().unwrap().iter().find(|tool| tool["function"]["name"] == "shell");
    assert_eq!(shell.unwrap()["function"]["parameters"]["properties"]["timeout_seconds"]["maximum"], 1);
    let results = tool_contents(&server.requests()[1]);
    assert!(results[0].contains("command timed out after 1s"), "{}", results[0]);
}

#[test]
fn a_negative_shell_timeout_cap_is_a_config_error() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"base_url": "http://127.0.0.1:9/v1", "limits": {"shell_timeout_seconds": -5}}));
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(1));
    let config = sandbox.home.join(".odek/config.json");
    assert_eq!(
        stderr(&output),
        format!("odek: config {}: limits.shell_timeout_seconds must be >= 0\n", config.display())
    );
}

fn event_types(events: &[serde_json::Value]) -> Vec<String> {
    events.iter().map(|event| event["type"].as_str().unwrap().to_owned()).collect()
}

/// Gone, or a zombie nobody reaped yet.
fn process_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn read_pid(path: &std::path::Path) -> i32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

/// The runtime budget was only checked before a model call: a model that took 30 s to answer
/// held the run for 30 s past `--max-runtime 2`.
#[test]
fn max_runtime_stops_a_model_call_in_flight_red() {
    let server = ScriptedServer::start(vec![Reply::text("far too late").delay(Duration::from_secs(30))]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let events_path = sandbox.project.join("events.jsonl");
    let command =
        sandbox.command(&["run", "--quiet", "--max-runtime", "2", "--events-jsonl", path_str(&events_path), "go"]);
    let started = Instant::now();
    let output = output_within(command, DEADLINE);
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_eq!(stderr(&output), "odek: execution budget exceeded: runtime observed 2 (limit 2)\n");
    assert_eq!(stdout(&output), "");
    assert!(took < Duration::from_secs(10), "the run took {took:?}");
    let events = events(&events_path);
    let types = event_types(&events);
    assert_eq!(types[types.len() - 2..], ["budget_exceeded", "run_failed"]);
    assert_eq!(events[types.len() - 2]["data"], json!({"limit": 2, "limit_name": "runtime", "observed": 2}));
    assert_eq!(events.last().unwrap()["data"]["error_class"], "execution_budget");
}

/// A tool batch ran to its end whatever `--max-runtime` said: a 30 s shell command and a slow
/// MCP call kept the run going. Now the batch is cancelled at the deadline, the shell's process
/// group killed, the MCP call cancelled, the servers stopped, and the session keeps a result
/// for every call, so it resumes.
#[test]
fn max_runtime_cancels_a_tool_batch_in_flight_red() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![
            (
                "c1",
                "shell",
                json!({"command": "echo $$ > shell.pid; sleep 30 & echo $! > sleep.pid; wait"}).to_string(),
            ),
            ("c2", "fixture__slow", json!({"ms": 30000, "honor_cancel": true}).to_string()),
        ]),
        Reply::text("resumed"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let events_path = sandbox.project.join("events.jsonl");
    let command = sandbox.command(&[
        "run",
        "--session",
        "--max-runtime",
        "2",
        "--events-jsonl",
        path_str(&events_path),
        "sleep",
        "for",
        "a",
        "while",
    ]);
    let started = Instant::now();
    let output = output_within(command, DEADLINE);
    let took = started.elapsed();
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "{text}");
    assert!(text.ends_with("odek: execution budget exceeded: runtime observed 2 (limit 2)\n"), "{text}");
    assert!(took < Duration::from_secs(15), "the run took {took:?}");
    assert!(text.contains("slow: request") && text.contains("cancelled"), "the MCP call was not cancelled: {text}");

    for pid_file in ["shell.pid", "sleep.pid"] {
        let pid = read_pid(&sandbox.project.join(pid_file));
        assert!(process_dead(pid), "{pid_file}: process {pid} outlived the run");
    }
    assert!(odek_test_support::processes_mentioning(&sandbox.artifacts).is_empty(), "the MCP server outlived odek");

    let events = events(&events_path);
    let types = event_types(&events);
    let failed = types.iter().filter(|kind| *kind == "tool_call_failed").count();
    assert_eq!(failed, 2, "{types:?}");
    let exceeded = types.iter().position(|kind| kind == "budget_exceeded").unwrap();
    assert!(types.iter().rposition(|kind| kind == "tool_call_failed").unwrap() < exceeded, "{types:?}");
    assert_eq!(types.last().unwrap(), "run_failed");

    let session: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&sandbox.session_files()[0]).unwrap()).unwrap();
    let messages = session["messages"].as_array().unwrap();
    let calls: usize = messages.iter().map(|m| m["tool_calls"].as_array().map_or(0, Vec::len)).sum();
    let results: Vec<&serde_json::Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(calls, 2);
    assert_eq!(results.len(), 2, "every call has its result");
    assert!(results[0]["content"].as_str().unwrap().contains("\nerror: cancelled\n"), "{results:?}");
    assert!(results[1]["content"].as_str().unwrap().contains("context canceled"), "{results:?}");

    let output = output_within(sandbox.command(&["continue", "--quiet", "go", "on"]), DEADLINE);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "resumed\n");
}
