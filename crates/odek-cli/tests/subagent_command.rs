//! `odek subagent` through the binary (spec `subagents.md` §3–§7): the setup errors with exit 3,
//! the legacy result line, the protocol-2 stream, trust and `max_risk`, the hard deadline (exit
//! 2), the share-mode spawn gate and a mid-run budget stop (exit 4).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Gate, Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

fn json_lines(output: &std::process::Output) -> Vec<Value> {
    stdout(output).lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// A task file the way a parent writes it: in the temp directory the child sees (`TMPDIR`).
fn task_file(sandbox: &Sandbox, task: &Value) -> std::path::PathBuf {
    let temp = sandbox.home.join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let path = temp.join("odek-task-0123abcd.json");
    std::fs::write(&path, task.to_string()).unwrap();
    path
}

fn subagent(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut command = sandbox.command(&[&["subagent"], args].concat());
    command.env("TMPDIR", sandbox.home.join("tmp"));
    command.output().unwrap()
}

#[test]
fn setup_errors_print_the_result_and_exit_3() {
    let sandbox = Sandbox::new();
    for (args, message) in [
        (vec!["--goal", "a", "--task", "t.json"], "--goal and --task are mutually exclusive"),
        (vec![], "either --goal or --task is required"),
        (vec!["--goal", "a", "--frobnicate"], "unknown flag \"--frobnicate\""),
        (vec!["--goal", "a", "--timeout"], "--timeout requires an integer value"),
        (vec!["--goal", "a", "--max-iter", "many"], "--max-iter: invalid integer \"many\""),
    ] {
        let output = subagent(&sandbox, &args);
        assert_eq!(output.status.code(), Some(3), "{args:?}");
        assert_eq!(stderr(&output), format!("odek: {message}\n"));
        assert_eq!(
            stdout(&output),
            format!(
                "{{\"status\":\"error\",\"error\":{},\"summary\":\"\",\"tokens_used\":0,\"iterations\":0,\"duration_seconds\":0,\"outcome\":\"error\"}}\n",
                serde_json::to_string(message).unwrap()
            )
        );
    }
}

#[test]
fn task_file_errors_are_setup_errors() {
    let sandbox = Sandbox::new();
    let missing = sandbox.project.join("nope.json");
    let output = subagent(&sandbox, &["--task", path_str(&missing)]);
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).starts_with("odek: stat task file: "), "{}", stderr(&output));
    let bad = sandbox.write("bad.json", "{not json");
    let output = subagent(&sandbox, &["--task", path_str(&bad)]);
    assert!(stderr(&output).starts_with("odek: parse task file: "), "{}", stderr(&output));
    assert!(bad.exists(), "a user's own task file is never deleted");
}

#[test]
fn a_goal_runs_untrusted_and_prints_one_result_line() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#)]).with_usage(100, 10),
        Reply::text("Read a.txt. Status: done.").with_usage(120, 8),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let output = subagent(&sandbox, &["--goal", "read a.txt", "--parent-session", "s-1"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 1, "{}", stdout(&output));
    let result = &lines[0];
    assert_eq!(result["status"], "success");
    assert_eq!(result["outcome"], "success", "issue 17: a sub-agent result carries the outcome");
    assert_eq!(result["summary"], "Read a.txt. Status: done.");
    assert_eq!(result["iterations"], 1);
    assert_eq!(result["tokens_used"], 238);
    assert_eq!(result["parent_session"], "s-1");
    assert!(result.get("cost_usd").is_none(), "no price configured, no cost");
    let err = stderr(&output);
    assert!(err.starts_with("🔧 Sub-agent: read a.txt\n"), "{err}");
    assert!(err.contains("✅ Sub-agent complete: "), "{err}");
    assert!(err.contains(" tokens, 1 iterations\n"), "{err}");

    let first = &server.requests()[0];
    let messages = messages(first);
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are an odek sub-agent"));
    assert!(
        system.contains("## Runtime Constraints (enforced by the runtime, not negotiable)\n- Wall-clock budget: 1800s")
    );
    assert!(system.contains("- Iteration budget: 15 think→act cycles."));
    let user = messages[1]["content"].as_str().unwrap();
    assert!(user.contains("\n\n<untrusted_input_"), "a bare --goal is untrusted: {user}");
    assert!(user.contains("\nTask: read a.txt\n</untrusted_input_"));
}

#[test]
fn an_untrusted_child_denies_code_execution_and_reports_it() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", r#"{"command":"python3 -c 'print(1)'"}"#)]),
        Reply::text("could not run python"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = subagent(&sandbox, &["--goal", "run python", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "", "--quiet keeps stderr empty on success");
    let result = &json_lines(&output)[0];
    assert_eq!(result["denials_total"], 1);
    assert_eq!(result["denials"][0]["tool"], "shell");
    assert_eq!(result["denials"][0]["class"], "code_execution");
}

#[test]
fn protocol_2_streams_records_and_ends_with_the_framed_result() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#)]),
        Reply::text("done reading"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let task = task_file(
        &sandbox,
        &json!({"task_id": "task-00112233aabbccdd", "protocol": 2, "goal": "read a.txt",
                "trust_level": "trusted", "max_risk": "local_write", "extra": "ignored"}),
    );
    let output = subagent(&sandbox, &["--task", path_str(&task), "--quiet", "--stream", "--max-iter", "5"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!task.exists(), "a parent's task file is deleted after reading");
    let records = json_lines(&output);
    let kinds: Vec<&str> = records.iter().map(|record| record["type"].as_str().unwrap()).collect();
    // [beyond] `subagent_iteration` after each iteration (issue 21: `odek mcp` reports progress
    // per iteration from it); a parent that does not know it ignores it.
    assert_eq!(
        kinds,
        [
            "subagent_started",
            "tool_call",
            "tool_result",
            "subagent_progress",
            "subagent_iteration",
            "subagent_iteration",
            "subagent_finished",
            "result"
        ]
    );
    assert_eq!((records[4]["iteration"].as_u64(), records[4]["tools_called"].as_u64()), (Some(1), Some(1)));
    assert_eq!((records[5]["iteration"].as_u64(), records[5]["tools_called"].as_u64()), (Some(2), Some(0)));
    assert_eq!(records[5]["budget_iterations"], 5);
    assert!(records.iter().all(|record| record["task_id"] == "task-00112233aabbccdd"));
    assert_eq!(records[0]["max_iter"], 5);
    assert_eq!(records[0]["timeout_s"], 1800);
    assert_eq!(records[0]["max_risk"], "local_write");
    assert_eq!(records[0]["profile"], "default");
    assert_eq!(records[1]["name"], "read_file");
    assert_eq!(records[1]["data"], r#"{"path":"a.txt"}"#);
    assert_eq!(records[3]["step"], 1);
    assert_eq!(records[6]["status"], "success");
    assert_eq!(records[7]["result"]["summary"], "done reading");
    // Trusted: the task is not fenced.
    let user = messages(&server.requests()[0])[1]["content"].as_str().unwrap().to_owned();
    assert_eq!(user, "Task: read a.txt");
}

#[test]
fn an_invalid_max_risk_is_a_framed_setup_error() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9", false);
    let task = task_file(&sandbox, &json!({"task_id": "task-1", "protocol": 2, "goal": "g", "max_risk": "reckless"}));
    let output = subagent(&sandbox, &["--task", path_str(&task), "--stream"]);
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(stderr(&output), "odek: invalid max_risk \"reckless\"\n");
    let records = json_lines(&output);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["type"], "result");
    assert_eq!(records[0]["task_id"], "task-1");
    assert_eq!(records[0]["result"]["error"], "invalid max_risk \"reckless\"");
}

#[test]
fn the_hard_deadline_ends_the_child_with_exit_2() {
    // The answer is held until the server is dropped, long after the child's deadline.
    let held = Gate::new();
    let server = ScriptedServer::start(vec![Reply::text("too late").after_release(&held)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = subagent(&sandbox, &["--goal", "wait", "--timeout", "1", "--quiet"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let result = &json_lines(&output)[0];
    assert_eq!(result["status"], "error");
    assert_eq!(result["error"], "timeout after 1s");
    assert_eq!(result["outcome"], "error");
    assert_eq!(stderr(&output), "✗ Sub-agent failed: timeout after 1s\n");
}

#[test]
fn an_exhausted_parent_budget_stops_the_child_before_any_work() {
    let server = ScriptedServer::start(vec![Reply::text("should not be asked")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let task =
        task_file(&sandbox, &json!({"goal": "g", "budget": {"max_tool_calls": 0, "tool_calls_exhausted": true}}));
    let output = subagent(&sandbox, &["--task", path_str(&task), "--quiet"]);
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(
        stdout(&output),
        "{\"status\":\"budget_exhausted\",\"error\":\"parent budget exhausted before start: execution budget exceeded: tool_calls observed 0 (limit 0)\",\"partial_reason\":\"execution_budget\",\"summary\":\"\",\"tokens_used\":0,\"iterations\":0,\"duration_seconds\":0,\"outcome\":\"budget_exceeded\"}\n"
    );
    assert_eq!(stderr(&output), "✗ Sub-agent exhausted its execution budget (execution_budget)\n");
    assert!(server.requests().is_empty(), "no model call before the gate");
}

#[test]
fn a_shared_budget_clamps_the_child_and_a_mid_run_stop_exits_4() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#), ("c2", "read_file", r#"{"path":"a.txt"}"#)]),
        Reply::text("partial"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let task = task_file(&sandbox, &json!({"goal": "g", "trust_level": "trusted", "budget": {"max_tool_calls": 1}}));
    let output = subagent(&sandbox, &["--task", path_str(&task), "--quiet"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let result = &json_lines(&output)[0];
    assert_eq!(result["status"], "budget_exhausted");
    assert_eq!(result["partial_reason"], "execution_budget");
    assert_eq!(result["error"], "execution budget exceeded: tool_calls observed 2 (limit 1)");
    let system = messages(&server.requests()[0])[0]["content"].as_str().unwrap().to_owned();
    assert!(system.contains("\n- Execution budget: max 1 tool calls.\n"), "{system}");
}

#[test]
fn an_unknown_profile_is_a_setup_error() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9", false);
    let output = subagent(&sandbox, &["--goal", "g", "--profile", "ghost"]);
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(
        stderr(&output),
        "odek: unknown profile \"ghost\" (define it in the top-level profiles config section, or adjust subagent.default_profile)\n"
    );
}

#[test]
fn a_model_failure_in_a_child_is_reported_with_its_outcome() {
    let server = ScriptedServer::start(vec![Reply::status(400, r#"{"error":{"message":"bad request"}}"#)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = subagent(&sandbox, &["--goal", "go", "--quiet"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let result = &json_lines(&output)[0];
    assert_eq!((result["status"].as_str(), result["outcome"].as_str()), (Some("error"), Some("model_error")));
}
