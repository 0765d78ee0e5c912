//! Execution budgets through the binary (spec `budgets.md`): every dimension at its boundary,
//! exit code 4 with the typed message, the partial summary on a tool-call stop, and a session
//! that resumes afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::json;

fn read_calls(n: usize) -> Reply {
    Reply::tool_calls((0..n).map(|i| (format!("c{i}"), "read_file", r#"{"path":"a.txt"}"#)).collect())
}

#[test]
fn a_batch_over_the_tool_call_budget_stops_with_exit_4_a_summary_and_a_resumable_session() {
    let server = ScriptedServer::start(vec![
        read_calls(2),
        read_calls(2),
        Reply::text("did two reads; two more were refused"),
        Reply::text("resumed fine"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let output = sandbox.odek(&["run", "--quiet", "--session", "--max-tool-calls", "3", "read", "twice"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_eq!(stderr(&output), "odek: execution budget exceeded: tool_calls observed 4 (limit 3)\n");
    assert_eq!(stdout(&output), "");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "two iterations and the summary side call");
    assert!(requests[2].body.get("tools").is_none(), "the summary is tool-less");
    let session: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&sandbox.session_files()[0]).unwrap()).unwrap();
    let messages = session["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["content"], "[Execution budget reached — partial summary]\n\ndid two reads; two more were refused");
    // No dangling tool call: the refused batch was never kept.
    let calls: usize = messages.iter().map(|m| m["tool_calls"].as_array().map_or(0, Vec::len)).sum();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(calls, results);

    let output = sandbox.odek(&["continue", "go", "on"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "resumed fine\n");
}

#[test]
fn a_batch_that_reaches_the_cap_exactly_runs() {
    let server = ScriptedServer::start(vec![read_calls(3), Reply::text("done")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let output = sandbox.odek(&["run", "--max-tool-calls", "3", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_response_crossing_the_token_budget_is_not_acted_on() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "write_file", r#"{"path":"made.txt","content":"x"}"#)]).with_usage(150, 5),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--max-input-tokens", "150", "go"]);
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(stderr(&output), "odek: execution budget exceeded: input_tokens observed 150 (limit 150)\n");
    assert!(!sandbox.project.join("made.txt").exists(), "the crossing response's tool call must not run");
    assert_eq!(server.requests().len(), 1, "no summary for a token stop");
}

#[test]
fn output_tokens_are_inclusive_too() {
    let server = ScriptedServer::start(vec![Reply::text("final").with_usage(1, 10)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--max-output-tokens", "10", "go"]);
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(stdout(&output), "", "a final answer over budget is not printed");
    assert_eq!(stderr(&output), "odek: execution budget exceeded: output_tokens observed 10 (limit 10)\n");
}

#[test]
fn cost_uses_the_exact_model_price_with_per_field_fallback() {
    let server = ScriptedServer::start(vec![Reply::text("final").with_usage(90_000, 10_000)]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "priced-model",
        "limits": {
            "input_cost_per_million_usd": 1.0,
            "output_cost_per_million_usd": 2.0,
            "model_prices": {"priced-model": {"input_cost_per_million_usd": 0, "output_cost_per_million_usd": 2.0}},
        }
    }));
    let output = sandbox.odek(&["run", "--max-cost-usd", "0.1", "go"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_eq!(stderr(&output), "odek: execution budget exceeded: cost_usd observed $0.110000 (limit $0.100000)\n");
}

/// Absurd prices times a real usage overflow the cost to infinity, which used to count as
/// free: the run went on as if the cap had headroom.
#[test]
fn an_overflowing_cost_exhausts_the_cap_red() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "write_file", r#"{"path":"made.txt","content":"x"}"#)])
            .with_usage(1_000_000, 1_000_000),
        Reply::text("should never be asked"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "limits": {"max_cost_usd": 1.0, "input_cost_per_million_usd": 1e308, "output_cost_per_million_usd": 1e308}
    }));
    let events = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--quiet", "--events-jsonl", path_str(&events), "go"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_eq!(stderr(&output), "odek: execution budget exceeded: cost_usd observed $inf (limit $1.000000)\n");
    assert!(!sandbox.project.join("made.txt").exists(), "the crossing response must not be acted on");
    assert_eq!(server.requests().len(), 1);
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&events).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let exceeded = lines.iter().find(|event| event["type"] == "budget_exceeded").unwrap();
    assert_eq!(exceeded["data"]["limit_name"], "cost_usd");
    assert_eq!(exceeded["data"]["limit"], 1.0);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "run_failed");
    assert_eq!(last["data"]["error_class"], "execution_budget");
}

#[test]
fn a_cost_cap_without_prices_warns_and_is_not_enforced() {
    let server = ScriptedServer::start(vec![Reply::text("final").with_usage(1_000_000, 1_000_000)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--max-cost-usd", "0.01", "go"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stderr(&output).contains(
        "odek: warning: max_cost_usd is set but no input/output prices resolve for model \"test-model\"; cost enforcement is disabled (token budgets still apply)"
    ));
}

#[test]
fn the_runtime_budget_is_checked_before_each_model_call() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", r#"{"command":"sleep 1.2"}"#)]),
        Reply::text("never asked"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--quiet", "--max-runtime", "1", "go"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert_eq!(stderr(&output), "odek: execution budget exceeded: runtime observed 1 (limit 1)\n");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn budget_flags_must_be_positive() {
    let sandbox = Sandbox::new();
    for (flag, value, message) in [
        ("--max-tool-calls", "0", "odek: --max-tool-calls must be a positive integer, got \"0\"\n"),
        ("--max-runtime", "-5", "odek: --max-runtime must be a positive integer, got \"-5\"\n"),
        ("--max-input-tokens", "lots", "odek: --max-input-tokens must be a positive integer, got \"lots\"\n"),
        ("--max-cost-usd", "free", "odek: --max-cost-usd must be a positive number, got \"free\"\n"),
        ("--max-cost-usd", "0", "odek: --max-cost-usd must be a positive number, got \"0\"\n"),
    ] {
        let output = sandbox.odek(&["run", &format!("{flag}={value}"), "go"]);
        assert_eq!((output.status.code(), stderr(&output).as_str()), (Some(1), message));
    }
    let output = sandbox.odek(&["run", "go", "--max-output-tokens"]);
    assert_eq!(stderr(&output), "odek: --max-output-tokens requires a value\n");
}

/// A negative number given as the next argument is the flag's value, not an unknown flag.
#[test]
fn negative_values_as_separate_arguments_get_the_flags_message() {
    let sandbox = Sandbox::new();
    for (command, flag, value, message) in [
        ("run", "--max-tool-calls", "-1", "odek: --max-tool-calls must be a positive integer, got \"-1\"\n"),
        ("run", "--max-runtime", "-5", "odek: --max-runtime must be a positive integer, got \"-5\"\n"),
        ("run", "--max-input-tokens", "-0", "odek: --max-input-tokens must be a positive integer, got \"-0\"\n"),
        ("run", "--max-output-tokens", "-7", "odek: --max-output-tokens must be a positive integer, got \"-7\"\n"),
        ("run", "--max-cost-usd", "-2.5", "odek: --max-cost-usd must be a positive number, got \"-2.5\"\n"),
        ("run", "--max-iter", "-1", "odek: --max-iter: invalid integer \"-1\"\n"),
    ] {
        let output = sandbox.odek(&[command, flag, value, "go"]);
        assert_eq!((output.status.code(), stderr(&output).as_str()), (Some(1), message), "{command} {flag} {value}");
    }
    // `continue` parses the same flags (it then stops at the missing session, not at the flag).
    let output = sandbox.odek(&["continue", "--max-tool-calls", "-1", "go"]);
    assert!(!stderr(&output).contains("unknown flag"), "{}", stderr(&output));
}
