//! How a run ended, typed (issue 17 item 2): `data.outcome` on `run_completed` / `run_failed`,
//! the `--json` result object on success and on failure, and the exit code each outcome has.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::json;

#[test]
fn a_successful_run_says_success_in_its_last_event_and_its_result() {
    let server = ScriptedServer::start(vec![Reply::text("the answer").with_usage(30, 4)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&stdout(&output));
    let completed = &lines[lines.len() - 2];
    assert_eq!(completed["type"], "run_completed");
    assert_eq!(completed["data"]["outcome"], "success");
    assert_eq!(
        lines.last().unwrap(),
        &json!({"outcome": "success", "answer": "the answer", "iterations": 1, "input_tokens": 30, "output_tokens": 4,
                "denials": {"count": 0, "first": []}})
    );
}

#[test]
fn a_budget_stop_prints_a_result_object_with_its_outcome_and_exits_4() {
    let server = ScriptedServer::start(vec![Reply::text("over").with_usage(500, 1)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--events-jsonl", "-", "--json", "--max-input-tokens", "100", "go"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let lines = json_lines(&stdout(&output));
    let failed = &lines[lines.len() - 2];
    assert_eq!(failed["type"], "run_failed");
    assert_eq!(failed["data"]["error_class"], "execution_budget");
    assert_eq!(failed["data"]["outcome"], "budget_exceeded");
    let result = lines.last().unwrap();
    assert_eq!(result["outcome"], "budget_exceeded");
    assert_eq!((result["input_tokens"].as_u64(), result["output_tokens"].as_u64()), (Some(500), Some(1)));
    assert!(result["error"].as_str().unwrap().starts_with("execution budget exceeded"), "{result}");
    assert!(stderr(&output).contains("odek: execution budget exceeded"), "{}", stderr(&output));
}

#[test]
fn a_model_failure_is_model_error_with_exit_1_and_a_redacted_result_red() {
    let secret = format!("sk-{}", "z".repeat(40));
    let server =
        ScriptedServer::start(vec![Reply::status(400, format!(r#"{{"error":{{"message":"bad key {secret}"}}}}"#))]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--json", "go"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = json_lines(&stdout(&output));
    assert_eq!(lines.len(), 1, "one result object on stdout");
    assert_eq!(lines[0]["outcome"], "model_error");
    assert!(!stdout(&output).contains(&secret), "{}", stdout(&output));
}

#[test]
fn without_json_a_failure_prints_nothing_on_stdout() {
    let server = ScriptedServer::start(vec![Reply::text("over").with_usage(500, 1)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--max-input-tokens", "100", "go"]);
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(stdout(&output), "");
}
