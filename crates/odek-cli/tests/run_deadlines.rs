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
    let started = Instant::now();
    let output = output_within(sandbox.command(&["run", "--quiet", "wait", "a", "bit"]), DEADLINE);
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
