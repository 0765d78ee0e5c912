//! The published `odek.event/v1` schema (issue 17 item 6): it is the one the Rust types
//! generate, every constructor's event validates against it, and the strict form the tests use
//! rejects a field, a type or a shape the schema does not have.
//!
//! After changing an event's data: `ODEK_UPDATE_SCHEMA=1 cargo test -p odek-agent --test
//! event_schema` rewrites `docs/schemas/odek.event.v1.schema.json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use odek_agent::budget::BudgetValue;
use odek_agent::events::{EVENT_SCHEMA_PATH, Event, RunId, SubagentOutcome, event_schema_text, render_event_line};
use odek_agent::finish::checks::{CheckReport, CheckStatus};
use odek_agent::finish::output_file::OutputWritten;
use odek_contract::outcome::Outcome;
use odek_test_support::events::{assert_valid_event, event_errors, strict_schema, validator};
use serde_json::{Value, json};

fn published_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(EVENT_SCHEMA_PATH)
}

#[test]
fn the_published_schema_is_the_one_the_rust_types_generate() {
    let generated = event_schema_text();
    let path = published_path();
    if std::env::var_os("ODEK_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == generated,
        "{EVENT_SCHEMA_PATH} is not what the event types generate: an event's data changed without the schema. \
         Regenerate it with ODEK_UPDATE_SCHEMA=1 cargo test -p odek-agent --test event_schema"
    );
}

#[test]
fn the_published_schema_is_a_valid_2020_12_schema_and_stays_additive() {
    let schema: Value = serde_json::from_str(&event_schema_text()).unwrap();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    validator(&schema).unwrap();
    let text = schema.to_string();
    assert!(!text.contains(r#""additionalProperties":false"#), "consumers must be free to meet new fields");
}

/// One event of every constructor, stamped as the emitter stamps them.
fn every_event() -> Vec<Event> {
    let written = OutputWritten { sha256: "ab".repeat(32), bytes: 12 };
    let summary = json!({"argv0": "ls", "class": "safe"});
    vec![
        Event::run_started("m", false, 90),
        Event::mcp_server_started("fixture", 3, 12, "2025-06-18"),
        Event::mcp_server_failed("fixture", "spawn"),
        Event::mcp_server_restarted("fixture", 1, Some(137)),
        Event::mcp_server_restarted("remote", 1, None),
        Event::tool_call_started(1, "shell", "c1", r#"{"command":"ls"}"#, Some(summary), true),
        Event::tool_call_started(1, "fixture__echo", "c2", "", None, false),
        Event::tool_call_completed(1, "shell", "c1", Duration::from_millis(3), "out\n- artifact x", Some(10)),
        Event::tool_call_completed(1, "shell", "c1", Duration::from_millis(3), "out", None),
        Event::tool_call_failed(1, "shell", "c1", Duration::from_millis(3)),
        Event::operation_denied(1, "shell", "c1", "destructive", "rm is destructive"),
        Event::plan_created(3, 1),
        Event::plan_updated(3, 1, 1, 0, 1, 2),
        Event::subagent_spawned("task-1", 42, 1, 300, "goal"),
        Event::subagent_concurrency_wait(0, 5000),
        Event::subagent_denied("shell", 0, "destructive", "rm"),
        Event::subagent_completed(
            "task-1",
            "success",
            SubagentOutcome {
                iterations: Some(2),
                duration_seconds: Some(1.5),
                tokens_used: Some(100),
                artifact_count: Some(0),
            },
        ),
        Event::subagent_completed("task-1", "timeout", SubagentOutcome::default()),
        Event::context_trimmed(2, "proactive", 1, 0),
        Event::session_saved(1, 4),
        Event::iteration_completed(1, 10, 2, 1),
        Event::budget_exceeded(1, "tool_calls", BudgetValue::Count(3), BudgetValue::Count(2)),
        Event::budget_exceeded(1, "cost_usd", BudgetValue::Usd(f64::NAN), BudgetValue::Usd(0.5)),
        Event::run_completed(Duration::from_millis(40), 10, 2, Outcome::Success, None),
        Event::run_completed(Duration::from_millis(40), 10, 2, Outcome::Success, Some(&written)),
        Event::check_started(2, "check-1", 1),
        Event::check_completed(2, &check(CheckStatus::Failed, Some(1))),
        Event::check_completed(2, &check(CheckStatus::TimedOut, None)),
        Event::run_failed(Duration::from_millis(40), "execution_budget", Outcome::BudgetExceeded, None),
        Event::run_failed(Duration::from_millis(40), "stalled", Outcome::Stalled, Some("model")),
        Event::run_heartbeat("tools", &["c1".to_owned(), "c2".to_owned()], Duration::from_millis(1500)),
        Event::run_heartbeat("model", &[], Duration::ZERO),
    ]
}

fn check(status: CheckStatus, exit_code: Option<i32>) -> CheckReport {
    CheckReport {
        check_id: "check-1".to_owned(),
        command: "cargo test".to_owned(),
        cycle: 1,
        status,
        exit_code,
        duration: Duration::from_millis(900),
        output_bytes: 120,
        denial: None,
    }
}

fn line(event: &Event, session: Option<&str>) -> Value {
    let run_id = RunId::generate().unwrap();
    serde_json::from_str(&render_event_line(event, &run_id, session, "2026-12-02T12:00:00.000001Z").unwrap()).unwrap()
}

#[test]
fn every_constructor_makes_an_event_the_strict_schema_accepts() {
    for event in every_event() {
        assert_valid_event(&line(&event, Some("20261202-120000-abcd")));
        assert_valid_event(&line(&event, None));
    }
}

#[test]
fn a_field_the_schema_lacks_fails_validation_red() {
    let mut event = line(&Event::session_saved(1, 4), None);
    assert_eq!(event_errors(&event), None);
    event["data"]["new_field"] = json!(1);
    let errors = event_errors(&event).expect("an unknown data field must fail the strict schema");
    assert!(errors.contains("new_field"), "{errors}");
    let mut event = line(&Event::session_saved(1, 4), None);
    event["new_envelope_field"] = json!("x");
    assert!(event_errors(&event).is_some(), "an unknown envelope field must fail too");
}

#[test]
fn a_type_the_schema_lacks_or_a_wrong_shape_fails_validation_red() {
    let mut unknown = line(&Event::session_saved(1, 4), None);
    unknown["type"] = json!("brand_new_event");
    assert!(event_errors(&unknown).is_some());
    let mut missing = line(&Event::run_completed(Duration::ZERO, 1, 2, Outcome::Success, None), None);
    missing["data"].as_object_mut().unwrap().remove("outcome");
    assert!(event_errors(&missing).unwrap().contains("outcome"));
    let mut wrong = line(&Event::run_completed(Duration::ZERO, 1, 2, Outcome::Success, None), None);
    wrong["data"]["outcome"] = json!("fine");
    assert!(event_errors(&wrong).is_some(), "outcome is one of the ten words");
    let mut zero = line(&Event::session_saved(1, 4), None);
    zero["iteration"] = json!(0);
    assert!(event_errors(&zero).is_some(), "iteration is never 0");
    let mut bad_id = line(&Event::session_saved(1, 4), None);
    bad_id["run_id"] = json!("not-hex");
    assert!(event_errors(&bad_id).is_some());
}

#[test]
fn the_published_schema_itself_accepts_a_newer_field_and_type() {
    let published: Value = serde_json::from_str(&event_schema_text()).unwrap();
    let lenient = validator(&published).unwrap();
    let mut event = line(&Event::session_saved(1, 4), None);
    event["data"]["new_field"] = json!(1);
    assert!(lenient.is_valid(&event));
    event["type"] = json!("brand_new_event");
    assert!(lenient.is_valid(&event));
    assert!(strict_schema(&published.to_string()).is_ok());
}
