//! Startup, handshake and discovery against the fixture server (spec `mcp-client.md` §1, §3, §4, §6).

mod support;

use std::sync::Arc;
use std::time::Duration;

use odek_mcp::approval::{ToolApproval, ToolApprovalRequest, ToolApprover};
use odek_mcp::{MAKE_OPTIONAL_HINT_MANY, MAKE_OPTIONAL_HINT_ONE, McpError, McpEvent, McpHub, ServerEntry};
use support::{Fixture, Recorder, fixture_entry, options, spec, start, start_err};

/// Starts `entry` alone as server `name`: the start must fail with `message` (the one server's
/// startup error, then [beyond] how to make a server optional), and the only event is that
/// server's failure with `error_class`.
async fn start_fails(name: &str, entry: &ServerEntry, message: &str, error_class: &'static str) -> McpError {
    let (err, recorder) = start_err(vec![spec(name, entry)]).await;
    assert_eq!(err.to_string(), failed(message));
    assert_eq!(recorder.events(), vec![McpEvent::ServerFailed { server: name.into(), error_class }]);
    err
}

/// A start that failed on one required server: its error, then the way to make it optional.
fn failed(message: &str) -> String {
    format!("{message}\n{MAKE_OPTIONAL_HINT_ONE}")
}

/// How a handshake whose initialize is never answered within the 1 s start-up deadline fails.
const STARTUP_DEADLINE_EXCEEDED: &str = "mcp server \"fx\": mcpclient fx: start-up (spawn, initialize, tools/list) did not finish within 1s (startup_timeout_seconds)";

#[tokio::test]
async fn catalogue_lists_exposed_names_in_server_then_list_order() {
    let b = fixture_entry(&[]);
    let a = fixture_entry(&["--page-size", "2"]);
    let (hub, recorder) = start(vec![spec("zeta", &b), spec("alpha", &a)]).await;
    let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.exposed.into_string()).collect();
    assert_eq!(names[0], "alpha__echo");
    let alpha: Vec<&String> = names.iter().filter(|name| name.starts_with("alpha__")).collect();
    let zeta = names.iter().filter(|name| name.starts_with("zeta__")).count();
    assert_eq!(alpha.len(), zeta, "pagination must not lose tools: {names:?}");
    assert!(names.iter().position(|n| n.starts_with("zeta__")) > names.iter().rposition(|n| n.starts_with("alpha__")));
    let started: Vec<(String, String)> = recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            McpEvent::ServerStarted { server, protocol_version, tools, .. } => {
                assert_eq!(tools, alpha.len());
                Some((server, protocol_version))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        vec![("alpha".to_owned(), "2025-03-26".to_owned()), ("zeta".to_owned(), "2025-03-26".to_owned())]
    );
    assert!(recorder.warnings().is_empty(), "{:?}", recorder.warnings());
    hub.shutdown().await;
}

#[tokio::test]
async fn unsupported_protocol_version_warns_and_continues() {
    let odd = fixture_entry(&["--protocol-version", "1999-01-01"]);
    let missing = fixture_entry(&["--protocol-version", "none"]);
    let later = fixture_entry(&["--protocol-version", "2025-11-25"]);
    // [beyond] 2024-11-05 is accepted without a warning: what odek uses of the protocol is in it.
    let earlier = fixture_entry(&["--protocol-version", "2024-11-05"]);
    let specs = vec![spec("odd", &odd), spec("missing", &missing), spec("later", &later), spec("earlier", &earlier)];
    let (hub, recorder) = start(specs).await;
    let mut warnings = recorder.warnings();
    warnings.sort();
    assert_eq!(
        warnings,
        vec![
            "mcp server \"missing\": unsupported protocol version \"\" (supported: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25); continuing",
            "mcp server \"odd\": unsupported protocol version \"1999-01-01\" (supported: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25); continuing",
        ]
    );
    assert_eq!(support::call(&hub, "odd__echo", r#"{"text":"still works"}"#).await.unwrap(), "still works");
    assert_eq!(support::call(&hub, "earlier__echo", r#"{"text":"works too"}"#).await.unwrap(), "works too");
    hub.shutdown().await;
}

#[tokio::test]
async fn initialize_error_is_fatal_with_class() {
    let entry = fixture_entry(&["--mode", "initialize-error"]);
    start_fails("fx", &entry, "mcp server \"fx\": mcpclient fx: initialize: MCP error -32603: boom", "protocol_error")
        .await;
}

#[tokio::test]
async fn spawn_failure_names_the_command_and_the_os_error() {
    let mut entry = fixture_entry(&[]);
    entry.command = Some("/nonexistent/odek-no-such-server".into());
    let message =
        "mcp server \"fx\": mcpclient fx: start \"/nonexistent/odek-no-such-server\": No such file or directory";
    start_fails("fx", &entry, message, "spawn_failed").await;
    // A whole command line written into "command" is told where its arguments go.
    entry.command = Some("odek-no-such-server --stdio".into());
    let message = "mcp server \"fx\": mcpclient fx: start \"odek-no-such-server --stdio\": No such file or directory; \"command\" is run without a shell: put the program alone in \"command\" and its arguments in \"args\"";
    start_fails("fx", &entry, message, "spawn_failed").await;
}

/// Issue 32: a server that exits during start-up is reported with its exit status and the last
/// line it wrote on stderr, not with the transport's "outcome unknown".
#[tokio::test]
async fn a_server_that_exits_at_start_up_reports_its_status_and_last_stderr_line() {
    let entry = ServerEntry {
        command: Some("/bin/sh".into()),
        args: vec![
            "-c".into(),
            "echo starting >&2; echo 'Error: GITHUB_TOKEN is not set' >&2; echo >&2; exit 3".into(),
        ],
        ..ServerEntry::default()
    };
    let message = "mcp server \"gh\": mcpclient gh: initialize: the server exited with status 3 before answering; its last stderr line: Error: GITHUB_TOKEN is not set";
    start_fails("gh", &entry, message, "connection_closed").await;
    let silent = ServerEntry { args: vec!["-c".into(), "kill -9 $$".into()], ..entry };
    let message = "mcp server \"gh\": mcpclient gh: initialize: the server exited with status 137 before answering (it wrote nothing on stderr)";
    start_fails("gh", &silent, message, "connection_closed").await;
}

#[tokio::test]
async fn initialize_without_reply_is_a_start_up_stall() {
    let mut entry = fixture_entry(&["--mode", "no-initialize-reply"]);
    entry.startup_timeout_seconds = 1;
    start_fails("fx", &entry, STARTUP_DEADLINE_EXCEEDED, "stalled").await;
}

/// Issue 32 item 6: `initialize` and `tools/list` are bounded by the start-up deadline, not by the
/// per-request `timeout_seconds` — a server that takes longer than that to come up (a package
/// runner fetching it first) starts. Red before: its initialize failed after `timeout_seconds`.
#[tokio::test]
async fn the_handshake_has_the_start_up_deadline_not_the_request_timeout_red() {
    let fixture = Fixture::new(&[]);
    let command = fixture.entry.command.clone().unwrap();
    let mut script = format!("sleep 2; exec '{command}'");
    for arg in &fixture.entry.args {
        script.push_str(&format!(" '{arg}'"));
    }
    let entry = ServerEntry {
        command: Some("/bin/sh".into()),
        args: vec!["-c".into(), script],
        timeout_seconds: 1,
        startup_timeout_seconds: 30,
        ..ServerEntry::default()
    };
    let (hub, _) = start(vec![spec("slow", &entry)]).await;
    assert!(hub.tools().iter().any(|tool| tool.raw_name == "echo"));
    hub.shutdown().await;
}

/// Issue 32 item 3: every required server that failed is named, then how to make one optional.
#[tokio::test]
async fn every_failed_required_server_is_named() {
    let good = Fixture::new(&[]);
    let mut missing = fixture_entry(&[]);
    missing.command = Some("/nonexistent/odek-no-such-server".into());
    let broken = fixture_entry(&["--mode", "initialize-error"]);
    let (err, recorder) =
        start_err(vec![spec("missing", &missing), spec("good", &good.entry), spec("broken", &broken)]).await;
    assert_eq!(
        err.to_string(),
        format!(
            "mcp server \"broken\": mcpclient broken: initialize: MCP error -32603: boom\nmcp server \"missing\": mcpclient missing: start \"/nonexistent/odek-no-such-server\": No such file or directory\n{MAKE_OPTIONAL_HINT_MANY}"
        )
    );
    assert_eq!(err.error_class(), "protocol_error");
    assert_eq!(
        recorder.events(),
        vec![
            McpEvent::ServerFailed { server: "broken".into(), error_class: "protocol_error" },
            McpEvent::ServerFailed { server: "missing".into(), error_class: "spawn_failed" },
        ]
    );
}

#[tokio::test]
async fn invalid_tool_name_rejects_the_server() {
    let entry = fixture_entry(&["--mode", "invalid-tool-name"]);
    let message = "mcp server \"invalid\": mcpclient invalid: tools/list: tool name \"read file\" contains invalid character ' '; to use the server without that tool, add it to its \"exclude_tools\": [\"read file\"]";
    start_fails("invalid", &entry, message, "invalid_tool").await;
}

#[tokio::test]
async fn qualifier_in_tool_name_rejects_the_server_red() {
    let (err, _) = start_err(vec![spec("fx", &fixture_entry(&["--mode", "dunder-tool-name"]))]).await;
    assert_eq!(
        err.to_string(),
        failed(
            "mcp server \"fx\": mcpclient fx: tools/list: tool name \"a__b\" cannot contain \"__\"; to use the server without that tool, add it to its \"exclude_tools\": [\"a__b\"]"
        )
    );
}

#[tokio::test]
async fn every_invalid_tool_name_is_named_at_once_with_the_way_out() {
    let entry = fixture_entry(&[
        "--mode",
        "invalid-tool-name,dunder-tool-name",
        "--extra-tool",
        "fs.read",
        "--extra-tool",
        "ok",
    ]);
    let message = "mcp server \"fx\": mcpclient fx: tools/list: tool name \"read file\" contains invalid character ' ' (and 2 more: tool name \"a__b\" cannot contain \"__\"; tool name \"fs.read\" contains invalid character '.'); to use the server without these 3 tools, add them to its \"exclude_tools\": [\"read file\",\"a__b\",\"fs.read\"]";
    start_fails("fx", &entry, message, "invalid_tool").await;

    // Following the advice starts the server.
    let mut entry = entry;
    entry.exclude_tools = vec!["read file".into(), "a__b".into(), "fs.read".into()];
    let (hub, _) = start(vec![spec("fx", &entry)]).await;
    assert_eq!(support::call(&hub, "fx__ok", r#"{"text":"started"}"#).await.unwrap(), "started");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_named_like_a_builtin_is_exposed_qualified_red() {
    // [beyond] The reference refuses the server; odek exposes the tool as fx__shell, which
    // cannot be confused with the built-in shell.
    let (hub, recorder) = start(vec![spec("fx", &fixture_entry(&["--mode", "shadow-builtin"]))]).await;
    let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.exposed.into_string()).collect();
    assert!(names.contains(&"fx__shell".to_owned()), "{names:?}");
    assert!(!names.iter().any(|name| name == "shell"), "{names:?}");
    assert_eq!(support::call(&hub, "fx__shell", "{}").await.unwrap(), "shell called");
    assert_eq!(support::call(&hub, "shell", "{}").await.unwrap_err(), "tool \"shell\" not found");
    assert!(recorder.warnings().is_empty(), "{:?}", recorder.warnings());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_listing_over_the_tool_cap_is_refused_red() {
    // A million tiny tools over 100 pages: refused at the first page, before any is registered.
    let message = "mcp server \"fx\": mcpclient fx: tools/list: the server lists more than 1000 tools (the cap per server); refused at page 1";
    start_fails("fx", &fixture_entry(&["--mode", "many-tools"]), message, "protocol_error").await;
}

#[tokio::test]
async fn a_listing_over_the_byte_cap_is_refused_red() {
    let (err, _) = start_err(vec![spec("fx", &fixture_entry(&["--mode", "heavy-tools"]))]).await;
    let text = err.to_string();
    assert!(
        text.starts_with("mcp server \"fx\": mcpclient fx: tools/list: the tool list exceeds 4194304 bytes (the cap per server); page 6 brought it to "),
        "{text}"
    );
    assert_eq!(err.error_class(), "protocol_error");
}

#[tokio::test]
async fn repeated_cursor_stops_pagination_red() {
    let (err, _) = start_err(vec![spec("fx", &fixture_entry(&["--mode", "repeat-cursor"]))]).await;
    assert_eq!(
        err.to_string(),
        failed("mcp server \"fx\": mcpclient fx: tools/list: server repeated cursor \"repeat\"")
    );
}

#[tokio::test]
async fn endless_pages_stop_after_one_hundred_red() {
    let (err, _) = start_err(vec![spec("fx", &fixture_entry(&["--mode", "endless-pages"]))]).await;
    assert_eq!(err.to_string(), failed("mcp server \"fx\": mcpclient fx: tools/list: more than 100 pages"));
}

#[tokio::test]
async fn registration_checks_skip_or_withhold_with_warnings_red() {
    let entry = fixture_entry(&["--mode", "bad-schema,injection-description,big-schema"]);
    let (hub, recorder) = start(vec![spec("fx", &entry)]).await;
    let tools = hub.tools();
    assert!(!tools.iter().any(|tool| tool.raw_name == "bad_schema" || tool.raw_name == "big_schema"));
    let injected = tools.iter().find(|tool| tool.raw_name == "injection_description").expect("tool stays callable");
    assert_eq!(
        injected.description,
        "[odek: description withheld — prompt-injection patterns detected in the MCP server's tool description]"
    );
    let warnings = recorder.warnings();
    assert!(
        warnings
            .contains(&"mcp server \"fx\" tool \"bad_schema\": inputSchema is not a JSON object; skipping".to_owned())
    );
    assert!(warnings.contains(
        &"mcp server \"fx\" tool \"injection_description\": prompt-injection patterns detected in the description; description withheld"
            .to_owned()
    ));
    assert!(
        warnings.iter().any(|w| w.starts_with("mcp server \"fx\" tool \"big_schema\": schema too large (")
            && w.ends_with(" bytes, max 262144); skipping")),
        "{warnings:?}"
    );
    let echo = tools.iter().find(|tool| tool.raw_name == "echo").unwrap();
    assert!(echo.description.starts_with("Tool exposed by third-party MCP server \"fx\"."));
    assert!(echo.description.contains("<untrusted_content_") && echo.description.contains("source=\"mcp:fx:echo\""));
    hub.shutdown().await;
}

#[tokio::test]
async fn early_notifications_and_server_ping_during_handshake() {
    let (hub, recorder) = start(vec![spec("fx", &fixture_entry(&["--mode", "early-notifications"]))]).await;
    assert_eq!(support::call(&hub, "fx__echo", r#"{"text":"ok"}"#).await.unwrap(), "ok");
    recorder.wait_for_line(|line| line.starts_with("[fx] ")).await;
    hub.shutdown().await;
}

#[tokio::test]
async fn one_failing_server_fails_the_whole_start() {
    let good = Fixture::new(&[]);
    let bad = fixture_entry(&["--mode", "initialize-error"]);
    let (err, recorder) = start_err(vec![spec("good", &good.entry), spec("bad", &bad)]).await;
    assert!(err.to_string().starts_with("mcp server \"bad\": "), "{err}");
    // Name order: "bad" registers first and fails; "good" is closed without being registered.
    assert_eq!(recorder.events(), vec![McpEvent::ServerFailed { server: "bad".into(), error_class: "protocol_error" }]);
}

struct Scripted(Vec<(&'static str, ToolApproval)>);

impl ToolApprover for Scripted {
    fn approve_tool(&self, request: &ToolApprovalRequest) -> ToolApproval {
        assert!(!request.relist);
        self.0
            .iter()
            .find(|(tool, _)| *tool == request.tool)
            .map(|(_, answer)| answer.clone())
            .unwrap_or(ToolApproval::Approved)
    }
}

#[tokio::test]
async fn declined_tools_are_skipped_and_required_approval_is_fatal() {
    let recorder = Arc::new(Recorder::default());
    let approver = Arc::new(Scripted(vec![("slow", ToolApproval::Declined)]));
    let hub = McpHub::start(vec![spec("fx", &fixture_entry(&[]))], options(&recorder, approver)).await.unwrap();
    assert!(!hub.tools().iter().any(|tool| tool.raw_name == "slow"));
    assert!(hub.tools().iter().any(|tool| tool.raw_name == "echo"));
    assert_eq!(support::call(&hub, "fx__slow", "{}").await.unwrap_err(), "tool \"fx__slow\" not found");
    hub.shutdown().await;

    let message = "MCP tool \"echo\" from server \"fx\" requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all tools from all project MCP servers, or run interactively";
    let approver = Arc::new(Scripted(vec![("echo", ToolApproval::Required(message.into()))]));
    let err = McpHub::start(vec![spec("fx", &fixture_entry(&[]))], options(&recorder, approver)).await.unwrap_err();
    assert_eq!(err.to_string(), message);
    assert_eq!(err.error_class(), "approval_required");
}

#[tokio::test]
async fn exposed_name_collision_red() {
    // "fx" + "__" + "_echo" and "fx_" + "__" + "echo" are both "fx___echo".
    let first = Fixture::new(&["--extra-tool", "_echo"]);
    let second = Fixture::new(&[]);
    let (err, recorder) = start_err(vec![spec("fx_", &second.entry), spec("fx", &first.entry)]).await;
    assert_eq!(
        err.to_string(),
        failed("mcp server \"fx_\": tool \"echo\" maps to exposed name \"fx___echo\", already used by server \"fx\"")
    );
    assert!(
        recorder.events().contains(&McpEvent::ServerFailed { server: "fx_".into(), error_class: "invalid_tool" }),
        "{:?}",
        recorder.events()
    );
}

#[tokio::test]
async fn schema_injection_skipped_red() {
    let (hub, recorder) = start(vec![spec("fx", &fixture_entry(&["--mode", "injection-schema"]))]).await;
    assert_eq!(
        recorder.warnings(),
        vec![
            "mcp server \"fx\" tool \"injection_schema\": prompt-injection patterns detected in the input schema; skipping"
        ]
    );
    assert!(!hub.tools().iter().any(|tool| tool.raw_name == "injection_schema"));
    assert!(hub.tools().iter().any(|tool| tool.raw_name == "echo"), "only the tool is skipped, not the server");
    assert_eq!(
        support::call(&hub, "fx__injection_schema", "{}").await.unwrap_err(),
        "tool \"fx__injection_schema\" not found"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn nameless_tool_rejected() {
    let entry = fixture_entry(&["--mode", "nameless-tool"]);
    let message = "mcp server \"fx\": mcpclient fx: tools/list: tool name is empty (and 1 more: tool name is empty); to use the server without that tool, add it to its \"exclude_tools\": [\"\"]";
    start_fails("fx", &entry, message, "invalid_tool").await;
}

#[tokio::test]
async fn oversize_during_initialize() {
    let mut entry = fixture_entry(&[]);
    entry.max_response_bytes = 64;
    let message = "mcp server \"fx\": mcpclient fx: initialize: mcpclient fx: response line exceeded configured max_response_bytes limit of 64 bytes";
    let err = start_fails("fx", &entry, message, "response_too_large").await;
    assert_eq!(err.error_class(), "response_too_large");
}

#[tokio::test]
async fn progress_does_not_extend_the_handshake_red() {
    let mut entry = fixture_entry(&["--mode", "progress-before-initialize"]);
    entry.startup_timeout_seconds = 1;
    // Not a timing assertion: progress every 200 ms would keep a client that honoured it for
    // the handshake waiting for up to an hour; this bound only keeps such a failure from hanging.
    let failed = start_fails("fx", &entry, STARTUP_DEADLINE_EXCEEDED, "stalled");
    tokio::time::timeout(Duration::from_secs(30), failed)
        .await
        .expect("startup never ended: progress notifications extended the initialize deadline");
}

#[tokio::test]
async fn started_event_has_duration_and_protocol() {
    let began = std::time::Instant::now();
    let (hub, recorder) = start(vec![spec("fx", &fixture_entry(&["--protocol-version", "none"]))]).await;
    let elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap();
    let started: Vec<McpEvent> =
        recorder.events().into_iter().filter(|event| matches!(event, McpEvent::ServerStarted { .. })).collect();
    let [McpEvent::ServerStarted { server, tools, duration_ms, protocol_version }] = started.as_slice() else {
        panic!("exactly one mcp_server_started: {started:?}")
    };
    assert_eq!(server, "fx");
    assert_eq!(protocol_version, "");
    assert_eq!(*tools, hub.tools().len());
    // Connect → registered happens inside the start call: it can never be longer.
    assert!(*duration_ms <= elapsed_ms, "{duration_ms} ms > {elapsed_ms} ms");
    hub.shutdown().await;
}
