//! `odek.event/v1` line shape (spec `events.md` §1–§5, §9): every type's exact line, the
//! digests, redaction at any depth and the opt-in arguments.

#![allow(clippy::unwrap_used)]

mod events_support;

use odek_contract::outcome::Outcome;
use std::time::Duration;

use odek_agent::budget::BudgetValue;
use odek_agent::events::{Event, SubagentOutcome, args_bytes, args_sha256, render_event_line};
use serde_json::json;

use events_support::*;

fn line(event: &Event) -> String {
    render_event_line(event, &run_id(), None, TIMESTAMP).unwrap()
}

/// The expected line: the envelope prefix, `middle` (iteration / tool), timestamp, then `data`.
fn expected(event_type: &str, middle: &str, data: &str) -> String {
    let data = if data.is_empty() { String::new() } else { format!(",\"data\":{data}") };
    format!(
        "{{\"schema\":\"odek.event/v1\",\"type\":\"{event_type}\",\"run_id\":\"{RUN_ID}\"{middle},\"timestamp\":\"{TIMESTAMP}\"{data}}}\n"
    )
}

#[test]
fn envelope_key_order_with_every_field() {
    let event = Event::tool_call_failed(3, "log-analyzer__summarize", "call_7", Duration::from_millis(412));
    let rendered = render_event_line(&event, &run_id(), Some("20260807-120000-abcd"), TIMESTAMP).unwrap();
    assert_eq!(
        rendered,
        format!(
            "{{\"schema\":\"odek.event/v1\",\"type\":\"tool_call_failed\",\"run_id\":\"{RUN_ID}\",\"session_id\":\"20260807-120000-abcd\",\"iteration\":3,\"tool\":\"log-analyzer__summarize\",\"timestamp\":\"{TIMESTAMP}\",\"data\":{{\"call_id\":\"call_7\",\"duration_ms\":412,\"error_class\":\"tool_error\"}}}}\n"
        )
    );
}

#[test]
fn run_events() {
    assert_eq!(
        line(&Event::run_started("gpt-x", true, 50)),
        expected("run_started", "", r#"{"max_iterations":50,"model":"gpt-x","sandbox":true}"#)
    );
    assert_eq!(
        line(&Event::run_completed(Duration::from_millis(1234), 100, 20, Outcome::Success, None)),
        expected(
            "run_completed",
            "",
            r#"{"duration_ms":1234,"input_tokens":100,"outcome":"success","output_tokens":20}"#
        )
    );
    assert_eq!(
        line(&Event::run_failed(Duration::from_millis(9), "execution_budget", Outcome::BudgetExceeded, None)),
        expected("run_failed", "", r#"{"duration_ms":9,"error_class":"execution_budget","outcome":"budget_exceeded"}"#)
    );
}

#[test]
fn mcp_server_events() {
    assert_eq!(
        line(&Event::mcp_server_started("fs", 3, 12, "2025-03-26")),
        expected(
            "mcp_server_started",
            "",
            r#"{"duration_ms":12,"protocol_version":"2025-03-26","server":"fs","tools":3}"#
        )
    );
    assert_eq!(
        line(&Event::mcp_server_failed("fs", "spawn_failed")),
        expected("mcp_server_failed", "", r#"{"error_class":"spawn_failed","server":"fs"}"#)
    );
    assert_eq!(
        line(&Event::mcp_server_restarted("fs", 1, Some(137))),
        expected("mcp_server_restarted", "", r#"{"exit_status":137,"restarts":1,"server":"fs"}"#)
    );
    assert_eq!(
        line(&Event::mcp_server_restarted("web", 2, None)),
        expected("mcp_server_restarted", "", r#"{"restarts":2,"server":"web"}"#)
    );
}

#[test]
fn tool_call_events() {
    assert_eq!(
        line(&Event::tool_call_started(1, "shell", "it1-call0", "", None, false)),
        expected(
            "tool_call_started",
            r#","iteration":1,"tool":"shell""#,
            r#"{"args_bytes":0,"args_sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","call_id":"it1-call0"}"#
        )
    );
    let raw = r#"{"command":"git status"}"#;
    let summary = json!({"argv0": "git", "class": "safe"});
    assert_eq!(
        line(&Event::tool_call_started(2, "shell", "call_a", raw, Some(summary), true)),
        expected(
            "tool_call_started",
            r#","iteration":2,"tool":"shell""#,
            &format!(
                r#"{{"args":"{{\"command\":\"git status\"}}","args_bytes":{},"args_sha256":"{}","args_summary":{{"argv0":"git","class":"safe"}},"call_id":"call_a"}}"#,
                raw.len(),
                args_sha256(raw)
            )
        )
    );
    let output = "summary\n- artifact file:///tmp/a.txt\n- artifact file:///tmp/b.txt\n";
    assert_eq!(
        line(&Event::tool_call_completed(3, "t", "c1", Duration::from_millis(412), output, None)),
        expected(
            "tool_call_completed",
            r#","iteration":3,"tool":"t""#,
            &format!(r#"{{"artifact_count":2,"call_id":"c1","duration_ms":412,"result_bytes":{}}}"#, output.len())
        )
    );
    assert_eq!(
        line(&Event::tool_call_completed(3, "t", "c2", Duration::from_millis(1), "abc", Some(5000))),
        expected(
            "tool_call_completed",
            r#","iteration":3,"tool":"t""#,
            r#"{"artifact_count":0,"call_id":"c2","duration_ms":1,"observed_chars":5000,"result_bytes":3,"truncated":true}"#
        )
    );
    assert_eq!(
        line(&Event::tool_call_failed(3, "t", "c3", Duration::from_millis(7))),
        expected(
            "tool_call_failed",
            r#","iteration":3,"tool":"t""#,
            r#"{"call_id":"c3","duration_ms":7,"error_class":"tool_error"}"#
        )
    );
}

#[test]
fn plan_events_carry_no_iteration() {
    assert_eq!(line(&Event::plan_created(3, 1)), expected("plan_created", "", r#"{"steps":3,"version":1}"#));
    assert_eq!(
        line(&Event::plan_updated(4, 1, 1, 1, 1, 2)),
        expected("plan_updated", "", r#"{"blocked":1,"done":1,"in_progress":1,"pending":1,"steps":4,"version":2}"#)
    );
}

#[test]
fn subagent_events() {
    assert_eq!(
        line(&Event::subagent_spawned("t1", 4242, 1, 600, "")),
        expected(
            "subagent_spawned",
            "",
            r#"{"depth":1,"goal_sha256":"e3b0c44298fc1c14","pid":4242,"task_id":"t1","timeout_seconds":600}"#
        )
    );
    assert_eq!(
        line(&Event::subagent_concurrency_wait(0, 5001)),
        expected("subagent_concurrency_wait", "", r#"{"task_index":0,"waited_ms":5001}"#)
    );
    assert_eq!(
        line(&Event::subagent_denied("shell", 1, "destructive", "denylist")),
        expected(
            "subagent_denied",
            r#","tool":"shell""#,
            r#"{"class":"destructive","reason":"denylist","task_index":1}"#
        )
    );
    let outcome = SubagentOutcome {
        iterations: Some(3),
        duration_seconds: Some(1.5),
        tokens_used: Some(100),
        artifact_count: Some(0),
    };
    assert_eq!(
        line(&Event::subagent_completed("t1", "completed", outcome)),
        expected(
            "subagent_completed",
            "",
            r#"{"artifact_count":0,"duration_seconds":1.5,"iterations":3,"status":"completed","task_id":"t1","tokens_used":100}"#
        )
    );
    assert_eq!(
        line(&Event::subagent_completed("t2", "timeout", SubagentOutcome::default())),
        expected("subagent_completed", "", r#"{"status":"timeout","task_id":"t2"}"#)
    );
}

#[test]
fn iteration_events() {
    assert_eq!(
        line(&Event::context_trimmed(2, "survival", 1, 2)),
        expected(
            "context_trimmed",
            r#","iteration":2"#,
            r#"{"dropped_groups":1,"mode":"survival","truncated_results":2}"#
        )
    );
    assert_eq!(
        line(&Event::session_saved(2, 7)),
        expected("session_saved", r#","iteration":2"#, r#"{"message_count":7}"#)
    );
    assert_eq!(
        line(&Event::iteration_completed(2, 100, 20, 0)),
        expected(
            "iteration_completed",
            r#","iteration":2"#,
            r#"{"input_tokens":100,"output_tokens":20,"tools_called":0}"#
        )
    );
}

#[test]
fn budget_exceeded_integers_and_usd_floats() {
    assert_eq!(
        line(&Event::budget_exceeded(4, "tool_calls", BudgetValue::Count(11), BudgetValue::Count(10))),
        expected("budget_exceeded", r#","iteration":4"#, r#"{"limit":10,"limit_name":"tool_calls","observed":11}"#)
    );
    assert_eq!(
        line(&Event::budget_exceeded(4, "cost_usd", BudgetValue::Usd(0.52), BudgetValue::Usd(1.0))),
        expected("budget_exceeded", r#","iteration":4"#, r#"{"limit":1.0,"limit_name":"cost_usd","observed":0.52}"#)
    );
}

#[test]
fn args_sha256_spec_examples() {
    assert_eq!(args_sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_eq!(
        args_sha256(r#"{"text":"hello extension"}"#),
        "a77439e27855c1ab8bf94e28a92592f4201d511451ab1144668089aeb1ed1ca0"
    );
    assert_eq!(args_bytes("é"), 2);
}

#[test]
fn emitted_line_is_stamped_now_in_utc_with_z() {
    let (emitter, sink) = memory_emitter(false);
    emitter.emit(Event::plan_created(1, 1));
    emitter.set_session_id("sess-1");
    emitter.emit(Event::plan_created(2, 2));
    assert_eq!(emitter.close(), 0);
    let lines = sink.lines();
    assert_eq!(lines.len(), 2);
    for line in &lines {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let timestamp = value["timestamp"].as_str().unwrap();
        assert!(timestamp.ends_with('Z'), "{timestamp}");
        chrono::DateTime::parse_from_rfc3339(timestamp).unwrap();
        assert_eq!(value["run_id"], RUN_ID);
    }
    assert!(!lines[0].contains("session_id"));
    assert!(lines[1].contains(r#""run_id":"0123456789abcdef0123456789abcdef","session_id":"sess-1","timestamp""#));
}

const SECRET: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

#[test]
fn event_data_secret_redacted_red() {
    let raw = format!(r#"{{"token":"{SECRET}"}}"#);
    let summary = json!({"path": ["plain", {"deep": [SECRET, 7, true, null]}], "host": format!("x{SECRET}")});
    let original =
        Event::tool_call_started(1, &format!("mcp__{SECRET}"), &format!("id-{SECRET}"), &raw, Some(summary), true);
    let copy = original.clone();

    let (emitter, sink) = memory_emitter(true);
    emitter.emit(original.clone());
    emitter.close();
    let lines = sink.lines();
    assert_eq!(lines.len(), 1);
    assert!(!lines[0].contains(SECRET), "{}", lines[0]);
    let value: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(value["tool"], "mcp__[REDACTED]");
    assert_eq!(value["data"]["args_summary"]["path"][1]["deep"], json!(["[REDACTED]", 7, true, null]));
    assert_eq!(value["data"]["args"], r#"{"token":"[REDACTED]"}"#);
    // The digest is of the raw string as sent, and the caller's event is untouched.
    assert_eq!(value["data"]["args_sha256"], args_sha256(&raw));
    assert_eq!(original, copy);
    assert!(original.tool().unwrap().contains(SECRET));
}

#[test]
fn raw_args_absent_without_opt_in_red() {
    let raw = r#"{"query":"raw-argument-marker"}"#;
    for include in [false, true] {
        let (emitter, sink) = memory_emitter(include);
        let event = Event::tool_call_started(1, "mcp__search", "c", raw, None, emitter.include_args());
        emitter.emit(event);
        emitter.close();
        let lines = sink.lines();
        assert_eq!(lines[0].contains("raw-argument-marker"), include, "{}", lines[0]);
        assert_eq!(lines[0].contains(r#""args":"#), include, "{}", lines[0]);
    }
}
