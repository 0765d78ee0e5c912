//! \[beyond\] A stall in `odek subagent` (issue 17 item 1): the child reads the operator's
//! `limits` like any run; a model phase that stalls is an error result (`status: "error"`, the
//! stall's text), exit 1 — the codes 2 (hard timeout) and 3 (setup) keep their meaning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::time::Duration;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

#[test]
fn a_stalled_child_reports_an_error_result() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "limits": {"first_byte_timeout_seconds": 1},
    }));
    let temp = sandbox.home.join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let mut command = sandbox.command(&["subagent", "--goal", "wait", "--parent-session", "s-1"]);
    command.env("TMPDIR", &temp);
    let output = output_within(command, Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines: Vec<Value> = stdout(&output).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(result["error"], "run stalled: no progress in model for 1s (limit 1s)", "{result}");
}
