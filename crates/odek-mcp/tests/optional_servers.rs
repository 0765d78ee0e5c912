//! [beyond] What `McpHub::start` does with `required: false` servers, `secret_env` and the
//! per-server approval call, against the real fixture server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use odek_mcp::approval::{ToolApproval, ToolApprovalRequest, ToolApprover};
use odek_mcp::{McpEvent, McpHub, SecretValue, ServerEntry};
use support::{Recorder, call, fixture_entry, options, spec, start, start_err};

fn optional(entry: ServerEntry) -> ServerEntry {
    ServerEntry { required: Some(false), ..entry }
}

fn missing_command() -> ServerEntry {
    ServerEntry { command: Some("/nonexistent/odek-no-such-server".into()), ..ServerEntry::default() }
}

#[tokio::test]
async fn a_failed_optional_server_is_left_out_and_never_started_again() {
    let badname = optional(fixture_entry(&["--mode", "invalid-tool-name"]));
    let specs = vec![
        spec("b-missing", &optional(missing_command())),
        spec("a-fx", &fixture_entry(&[])),
        spec("c-badname", &badname),
    ];
    let (hub, recorder) = start(specs).await;
    let events = recorder.events();
    assert!(matches!(&events[0], McpEvent::ServerStarted { server, .. } if server == "a-fx"), "{events:?}");
    assert_eq!(
        events[1..],
        [
            McpEvent::ServerFailed { server: "b-missing".into(), error_class: "spawn_failed" },
            McpEvent::ServerFailed { server: "c-badname".into(), error_class: "invalid_tool" },
        ]
    );
    let warnings = recorder.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "mcp server \"b-missing\": mcpclient b-missing: start \"/nonexistent/odek-no-such-server\": No such file or directory; continuing without it (required: false)"
    );
    assert!(warnings[0].ends_with("; continuing without it (required: false)"));
    assert_eq!(
        warnings[1],
        "mcp server \"c-badname\": mcpclient c-badname: tools/list: tool name \"read file\" contains invalid character ' '; \
         to use the server without that tool, add it to its \"exclude_tools\": [\"read file\"]; continuing without it (required: false)"
    );
    assert!(hub.tools().iter().all(|tool| tool.exposed.as_str().starts_with("a-fx__")));
    assert_eq!(call(&hub, "a-fx__echo", r#"{"text":"ok"}"#).await.unwrap(), "ok");
    assert_eq!(call(&hub, "c-badname__echo", "{}").await.unwrap_err(), "tool \"c-badname__echo\" not found");
    assert_eq!(recorder.events().len(), 3, "a call does not start a failed optional server");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_required_failure_still_fails_the_start_after_optional_ones() {
    let specs = vec![spec("a-missing", &optional(missing_command())), spec("b-missing", &missing_command())];
    let (err, recorder) = start_err(specs).await;
    assert!(err.to_string().starts_with("mcp server \"b-missing\": mcpclient b-missing: start \""), "{err}");
    assert_eq!(recorder.warnings().len(), 1, "the optional one was warned about");
}

#[test]
fn the_warning_is_one_line_and_prefixed_once() {
    let text = odek_mcp::hub::optional_failure_warning("fx", &"mcp server \"fx\": first line\nsecond\r\nthird");
    assert_eq!(text, "mcp server \"fx\": first line; second; third; continuing without it (required: false)");
    let text = odek_mcp::hub::optional_failure_warning("fx", &"MCP tool \"t\" requires approval\nset X=1");
    assert_eq!(
        text,
        "mcp server \"fx\": MCP tool \"t\" requires approval; set X=1; continuing without it (required: false)"
    );
}

/// Records how each server's tools were asked about.
#[derive(Default)]
struct CountingApprover {
    batches: Mutex<Vec<(String, usize)>>,
}

impl ToolApprover for CountingApprover {
    fn approve_tool(&self, _request: &ToolApprovalRequest) -> ToolApproval {
        panic!("the hub asks per server, not per tool");
    }

    fn approve_tools(&self, requests: &[ToolApprovalRequest]) -> Vec<ToolApproval> {
        let server = requests.first().map(|request| request.server.clone()).unwrap_or_default();
        self.batches.lock().unwrap().push((server, requests.len()));
        vec![ToolApproval::Approved; requests.len()]
    }
}

#[tokio::test]
async fn each_server_is_asked_once_about_all_its_tools() {
    let recorder = Arc::new(Recorder::default());
    let approver = Arc::new(CountingApprover::default());
    let conformant = fixture_entry(&["--conformant"]);
    let specs = vec![spec("one", &conformant), spec("two", &conformant)];
    let hub = McpHub::start(specs, options(&recorder, approver.clone())).await.unwrap();
    assert_eq!(*approver.batches.lock().unwrap(), [("one".to_owned(), 5), ("two".to_owned(), 5)]);
    hub.shutdown().await;
}

#[tokio::test]
async fn secret_env_reaches_the_server_past_the_filter() {
    let entry = ServerEntry {
        secret_env: BTreeMap::from([
            ("FIXTURE_API_TOKEN".to_owned(), SecretValue::new("granted-token-value")),
            ("EMPTY_TOKEN".to_owned(), SecretValue::new("")),
        ]),
        env: BTreeMap::from([("OTHER_TOKEN".to_owned(), "dropped".to_owned())]),
        ..fixture_entry(&[])
    };
    assert_eq!(format!("{:?}", entry.secret_env), r#"{"EMPTY_TOKEN": "", "FIXTURE_API_TOKEN": [REDACTED]}"#);
    let (hub, _recorder) = start(vec![spec("fx", &entry)]).await;
    let env = call(&hub, "fx__env", "{}").await.unwrap();
    assert!(env.lines().any(|line| line == "FIXTURE_API_TOKEN=granted-token-value"), "{env}");
    assert!(!env.contains("EMPTY_TOKEN") && !env.contains("OTHER_TOKEN"), "{env}");
    hub.shutdown().await;
}
