//! `--check`, `--check-timeout`, `--max-check-cycles` and the config's `checks` end to end
//! (issue 17 item 5): the real binary, real shell commands and the scripted model server. A
//! failing check goes back to the model inside the untrusted wrapper; checks that still fail
//! when the cycles run out exit 5; a check the policy denies is not run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn of_type<'a>(lines: &'a [Value], event_type: &str) -> Vec<&'a Value> {
    lines.iter().filter(|line| line["type"] == event_type).collect()
}

/// The scripted endpoint, with `checks` allowlisted (the operator's way to let exact commands
/// run without a terminal).
fn configure(sandbox: &Sandbox, base_url: &str, allowed: &[&str]) {
    sandbox.global_config(&json!({
        "base_url": base_url,
        "model": "test-model",
        "dangerous": {"allowlist": allowed},
    }));
}

fn last_user_message(request: &odek_test_support::openai::RecordedRequest) -> String {
    let messages = messages(request);
    let user = messages.iter().rev().find(|message| message["role"] == "user").unwrap();
    user["content"].as_str().unwrap().to_owned()
}

/// Fails (exit 3, saying why) until `fixed` exists: the second answer's check passes because the
/// first one's failure made the check create it.
const FLAKY: &str = "if [ -f fixed ]; then echo all good; else touch fixed; echo 'missing: fixed'; exit 3; fi";

#[test]
fn a_check_that_fails_once_then_passes() {
    let server =
        ScriptedServer::start(vec![Reply::text("done").with_usage(10, 1), Reply::text("fixed it").with_usage(10, 1)]);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server.base_url(), &[FLAKY]);
    let output = sandbox.odek(&["run", "--check", FLAKY, "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&stdout(&output));
    let started: Vec<(u64, &str)> = of_type(&lines, "check_started")
        .iter()
        .map(|event| (event["data"]["cycle"].as_u64().unwrap(), event["data"]["check_id"].as_str().unwrap()))
        .collect();
    assert_eq!(started, [(1, "check-1"), (2, "check-1")]);
    let completed = of_type(&lines, "check_completed");
    assert_eq!(completed[0]["data"]["status"], "failed");
    assert_eq!(completed[0]["data"]["exit_code"], 3);
    assert_eq!(completed[0]["data"]["output_bytes"], "missing: fixed".len());
    assert_eq!(completed[0]["iteration"], 1);
    assert_eq!(completed[1]["data"]["status"], "passed");
    assert_eq!(completed[1]["data"]["exit_code"], 0);
    assert_eq!(completed[1]["iteration"], 2);
    assert!(completed[1]["data"]["duration_ms"].is_u64());
    assert!(
        lines[..lines.len() - 1].iter().all(|line| !line.to_string().contains("touch fixed")),
        "no command in events"
    );
    let result = lines.last().unwrap();
    assert_eq!(result["outcome"], "success");
    assert_eq!(result["answer"], "fixed it");
    assert_eq!(result["checks"][0]["status"], "passed");
    assert_eq!(result["checks"][0]["cycle"], 2);
    assert_eq!(result["checks"][0]["command"], FLAKY);
    assert_eq!(result["input_tokens"], 20, "the fix cycle's tokens are counted");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let feedback = last_user_message(&requests[1]);
    assert!(feedback.starts_with("[odek: checks]"), "{feedback}");
    assert!(feedback.contains("cycle 1 of at most 4; 3 more fix(es) allowed"), "{feedback}");
    assert!(feedback.contains("- check-1 (") && feedback.contains(") exit status 3"), "{feedback}");
    // The output is untrusted: it is fenced.
    let wrapped = feedback.find("<untrusted_content_").expect("wrapped");
    assert!(feedback[wrapped..].contains("missing: fixed"), "{feedback}");
}

#[test]
fn a_check_that_always_fails_exits_5_when_the_cycles_run_out() {
    let check = "echo boom; exit 1";
    let server = ScriptedServer::start(vec![
        Reply::text("one").with_usage(5, 1),
        Reply::text("two").with_usage(5, 1),
        Reply::text("never asked for"),
    ]);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server.base_url(), &[check]);
    let output =
        sandbox.odek(&["run", "--check", check, "--max-check-cycles", "1", "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert_eq!(server.requests().len(), 2, "one fix cycle");
    let lines = json_lines(&stdout(&output));
    let failed = &lines[lines.len() - 2];
    assert_eq!(failed["type"], "run_failed");
    assert_eq!(failed["data"]["error_class"], "checks_failed");
    assert_eq!(failed["data"]["outcome"], "checks_failed");
    let cycles: Vec<u64> =
        of_type(&lines, "check_completed").iter().map(|event| event["data"]["cycle"].as_u64().unwrap()).collect();
    assert_eq!(cycles, [1, 2]);
    let result = lines.last().unwrap();
    assert_eq!(result["outcome"], "checks_failed");
    assert_eq!(result["checks"][0]["status"], "failed");
    assert_eq!(result["checks"][0]["exit_code"], 1);
    assert!(
        stderr(&output).contains("odek: checks failed after 2 cycle(s): check-1 (\"echo boom; exit 1\") exit status 1"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_check_the_policy_denies_is_not_run_red() {
    let server = ScriptedServer::start(vec![Reply::text("done"), Reply::text("never asked for")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    std::fs::create_dir(sandbox.project.join("victim")).unwrap();
    let output = sandbox.odek(&["run", "--check", "rm -rf victim", "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(sandbox.project.join("victim").is_dir(), "the denied check did not run");
    assert_eq!(server.requests().len(), 1, "a denial is not sent back to the model");
    let lines = json_lines(&stdout(&output));
    let completed = of_type(&lines, "check_completed");
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0]["data"]["status"], "denied");
    assert!(completed[0]["data"].get("exit_code").is_none());
    let result = lines.last().unwrap();
    assert_eq!(result["outcome"], "checks_failed");
    assert_eq!(result["checks"][0]["denied"]["class"], "destructive");
    assert!(stderr(&output).contains("check-1 (\"rm -rf victim\") was denied ("), "{}", stderr(&output));
    // A refused check is a denial like a refused call.
    let denied = of_type(&lines, "operation_denied");
    assert_eq!(denied.len(), 1, "{lines:?}");
    assert_eq!((denied[0]["tool"].as_str(), denied[0]["data"]["call_id"].as_str()), (Some("check"), Some("check-1")));
    assert_eq!(denied[0]["data"]["class"], "destructive");
    assert_eq!(result["denials"]["count"], 1);
    assert_eq!(result["denials"]["first"][0]["tool"], "check");
}

#[test]
fn a_check_past_its_timeout_is_killed_and_reported() {
    let check = "sleep 30";
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server.base_url(), &[check]);
    let output =
        sandbox.odek(&["run", "--check", check, "--check-timeout", "1", "--max-check-cycles", "0", "--json", "go"]);
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    let result: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(result["checks"][0]["status"], "timed_out");
    // Killed at its deadline (plus the shell's reap and drain graces), not after 30 s.
    let duration_ms = result["checks"][0]["duration_ms"].as_u64().unwrap();
    assert!((1000..10_000).contains(&duration_ms), "{duration_ms}");
    assert!(stderr(&output).contains("timed out; its process group was killed"), "{}", stderr(&output));
}

#[test]
fn checks_in_the_config_run_too_and_a_run_without_checks_has_no_check_events() {
    let check = "echo ok";
    let server = ScriptedServer::start(vec![Reply::text("done"), Reply::text("done again")]);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server.base_url(), &[check]);
    sandbox.write("odek.json", &json!({"checks": [check]}).to_string());
    let output = sandbox.odek(&["run", "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&stdout(&output));
    assert_eq!(of_type(&lines, "check_completed").len(), 1);
    assert_eq!(lines.last().unwrap()["checks"][0]["status"], "passed");

    std::fs::remove_file(sandbox.project.join("odek.json")).unwrap();
    let output = sandbox.odek(&["run", "--events-jsonl", "-", "--json", "go"]);
    let lines = json_lines(&stdout(&output));
    assert!(lines.iter().all(|line| !line["type"].as_str().unwrap_or_default().starts_with("check_")));
    assert!(lines.last().unwrap().get("checks").is_none());
}

#[test]
fn bad_check_flags_are_refused_before_the_run() {
    let sandbox = Sandbox::new();
    for (args, message) in [
        (["--check-timeout", "0"], "odek: --check-timeout must be a positive integer, got \"0\""),
        (["--max-check-cycles", "-1"], "odek: --max-check-cycles must be a non-negative integer, got \"-1\""),
        (["--output-retries", "x"], "odek: --output-retries must be a non-negative integer, got \"x\""),
    ] {
        let output = sandbox.odek(&[&["run"], &args[..], &["go"]].concat());
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(stderr(&output).trim_end(), message);
    }
}

#[test]
fn schema_and_checks_together_report_output_and_checks() {
    let check = "true";
    let server = ScriptedServer::start(vec![Reply::text(r#"{"ok": true}"#)]);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server.base_url(), &[check]);
    let schema = sandbox.write("schema.json", r#"{"type": "object", "required": ["ok"]}"#);
    let output = sandbox.odek(&["run", "--output-schema", path_str(&schema), "--check", check, "--json", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(result["output"], json!({"ok": true}));
    assert_eq!(result["checks"][0]["status"], "passed");
}
