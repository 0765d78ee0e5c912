//! Deadlines, progress, cancellation, crash restarts, oversized lines, tool-list changes, stderr
//! and shutdown against the fixture server (spec `mcp-client.md` §5, §8, §9, §11–§13), over stdio
//! and, where the guarantee is the transport's too, over Streamable HTTP (§14, issue 19): there a
//! crash is a server that goes away and comes back knowing no session, which the next call meets
//! as a 404 and the one after re-initialises (a restart without an exit status).
//!
//! Stdio only, each saying why: stderr, the process environment and the shutdown sequence's
//! signals belong to a process odek runs; an HTTP server's process is not odek's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use odek_mcp::approval::{ToolApproval, ToolApprovalRequest, ToolApprover};
use odek_mcp::{CallOptions, McpEvent, McpHub};
use support::{
    Fixture, Recorder, Transport, call, fixture_entry, options, poll_until, spec, start, stderr_lines_dropped,
    wait_stale,
};
use tokio_util::sync::CancellationToken;

support::over_both_transports!(
    async:
    timeout_leaves_the_process_running_and_reusable,
    progress_notifications_extend_the_deadline,
    a_shorter_caller_deadline_wins,
    caller_cancellation_is_context_canceled_and_notifies_the_server,
    crash_mid_call_then_restart_on_next_call,
    restart_limit_is_three,
    an_oversized_answer_fails_by_the_transport_s_rule_red,
    list_changed_marks_stale_and_refresh_applies_it,
    server_log_messages_are_forwarded_cleaned,
    multi_line_log_messages_are_forwarded_line_by_line,
    restart_into_a_listing_over_the_tool_cap_fails_red,
    relist_with_an_invalid_name_disables_the_server_with_the_way_out,
    restart_failed,
    failed_restart_is_retried_by_the_next_call,
    restart_error_forged_artifact_line_red,
    restart_rejected_disables_server,
    no_longer_offered_after_restart,
    interrupted_restart_leaves_the_server_restartable,
    calls_after_shutdown_fail_without_spawning,
    log_message_redacted_red,
    declined_tool_is_not_asked_again_on_relist,
    relist_unapproved_tool_warns,
);

const OUTCOME_UNKNOWN: &str =
    "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: ";

async fn timeout_leaves_the_process_running_and_reusable(transport: Transport) {
    let mut fixture = Fixture::over(transport, &[]);
    fixture.entry.timeout_seconds = 1;
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let pid = call(&hub, "fx__pid", "").await.unwrap();
    let err = call(&hub, "fx__slow", r#"{"ms":5000}"#).await.unwrap_err();
    assert_eq!(err, format!("{OUTCOME_UNKNOWN}context deadline exceeded (timeout_seconds: 1)"));
    // The server was told (over HTTP in a POST of its own), with reason "timeout", about request
    // 4 (initialize, tools/list and pid came first).
    let told = |line: &str| line == "odek-fixture-server: slow: request 4 cancelled (timeout)";
    fixture.wait_for_log(&recorder, told).await;
    assert_eq!(call(&hub, "fx__pid", "").await.unwrap(), pid, "same process after a timeout");
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"after"}"#).await.unwrap(), "after");
    hub.shutdown().await;
}

async fn progress_notifications_extend_the_deadline(transport: Transport) {
    let mut fixture = Fixture::over(transport, &[]);
    fixture.entry.timeout_seconds = 1;
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    let out = call(&hub, "fx__slow", r#"{"ms":2500,"progress_every_ms":200}"#).await.unwrap();
    assert_eq!(out, "slept 2500 ms");
    hub.shutdown().await;
}

async fn a_shorter_caller_deadline_wins(transport: Transport) {
    let fixture = Fixture::over(transport, &[]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    let options =
        CallOptions { deadline: Some(tokio::time::Instant::now() + Duration::from_millis(300)), cancel: None };
    let err = hub.call("fx__slow", r#"{"ms":5000,"progress_every_ms":50}"#, &options).await.unwrap_err();
    assert!(err.to_string().ends_with("context deadline exceeded"), "{err}");
    hub.shutdown().await;
}

async fn caller_cancellation_is_context_canceled_and_notifies_the_server(transport: Transport) {
    // The fixture logs each request as it arrives: the call is cancelled once the server has it
    // (request 3, after initialize and tools/list), so the outcome is unknown and the server is
    // told — over HTTP in a POST of its own, which must not overtake the request.
    let fixture = Fixture::over(transport, &["--mode", "stderr-per-request"]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let cancel = CancellationToken::new();
    let options = CallOptions { deadline: None, cancel: Some(cancel.clone()) };
    let cancel_once_it_arrived = async {
        fixture.wait_for_log(&recorder, |line| line == "odek-fixture-server: request 3 tools/call").await;
        cancel.cancel();
    };
    let slow = hub.call("fx__slow", r#"{"ms":5000,"honor_cancel":true}"#, &options);
    let (outcome, ()) = tokio::join!(slow, cancel_once_it_arrived);
    assert_eq!(outcome.unwrap_err().to_string(), format!("{OUTCOME_UNKNOWN}context canceled"));
    let told = |line: &str| line == "odek-fixture-server: slow: request 3 cancelled (cancelled)";
    fixture.wait_for_log(&recorder, told).await;
    hub.shutdown().await;
}

async fn crash_mid_call_then_restart_on_next_call(transport: Transport) {
    let mut fixture = Fixture::restartable(transport, &[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let first = call(&hub, "fx__pid", "").await.unwrap();
    crash(&mut fixture, &hub).await;
    let second = call(&hub, "fx__pid", "").await.unwrap();
    assert_ne!(first, second, "the next call restarted the server");
    assert_eq!(
        events_after_start(&recorder),
        [McpEvent::ServerRestarted { server: "fx".into(), restarts: 1, exit_status: transport.exit_status(3) }]
    );
    assert_eq!(call(&hub, "fx__count_calls", "").await.unwrap(), "2", "a fresh process");
    hub.shutdown().await;
}

async fn restart_limit_is_three(transport: Transport) {
    let mut fixture = Fixture::restartable(transport, &[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    for expected_restarts in 0..=3u32 {
        crash_with(&mut fixture, &hub, "fx__kill_self").await;
        assert_eq!(restarts(&recorder).len() as u32, expected_restarts);
    }
    assert!(recorder.events().contains(&McpEvent::ServerRestarted {
        server: "fx".into(),
        restarts: 3,
        exit_status: transport.exit_status(137)
    }));
    assert_eq!(
        call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(),
        "mcpclient fx: tools/call: MCP request not dispatched: server process exited and the restart limit (3) is exhausted"
    );
    hub.shutdown().await;
}

/// Over stdio a line past `max_response_bytes` closes the connection for good (§11); over HTTP
/// an answer past it fails its call alone and the next call goes on (§14). Never a restart.
async fn an_oversized_answer_fails_by_the_transport_s_rule_red(transport: Transport) {
    let mut fixture = Fixture::over(transport, &[]);
    fixture.entry.max_response_bytes = 65536;
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    support::assert_an_oversized_answer_fails_by_the_transport_s_rule(&hub, transport, 65537, 65536).await;
    assert!(restarts(&recorder).is_empty(), "never restarted");
    hub.shutdown().await;
}

/// Stdio only: over HTTP the bound is on the whole body or event stream, framing included
/// (§14), so a line of exactly the limit does not fit in it.
#[tokio::test]
async fn a_line_exactly_at_the_limit_is_accepted() {
    let mut fixture = Fixture::new(&[]);
    fixture.entry.max_response_bytes = 65536;
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    assert!(call(&hub, "fx__oversized_line", r#"{"bytes":65536}"#).await.is_ok());
    hub.shutdown().await;
}

/// Over HTTP: `fault_matrix`'s gigabyte case.
#[tokio::test]
async fn gigabyte_line_fails_closed_without_buffering_it_red() {
    let fixture = Fixture::new(&[]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    let err = call(&hub, "fx__oversized_line", r#"{"bytes":1073741824}"#).await.unwrap_err();
    assert!(err.ends_with("response line exceeded configured max_response_bytes limit of 10485760 bytes"), "{err}");
    hub.shutdown().await;
}

async fn list_changed_marks_stale_and_refresh_applies_it(transport: Transport) {
    let fixture = Fixture::over(transport, &[]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    assert_eq!(call(&hub, "fx__mutate_tools", r#"{"add":"fresh","remove":"error_result"}"#).await.unwrap(), "ok");
    // The notification may trail the reply on the wire: wait for it without sleeping.
    wait_stale(&hub).await;
    hub.refresh_stale().await;
    let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.exposed.into_string()).collect();
    assert!(names.contains(&"fx__fresh".to_owned()), "{names:?}");
    assert!(!names.contains(&"fx__error_result".to_owned()));
    assert_eq!(call(&hub, "fx__fresh", "{}").await.unwrap(), "fresh called");
    assert_eq!(call(&hub, "fx__error_result", "{}").await.unwrap_err(), "tool \"fx__error_result\" not found");
    hub.shutdown().await;
}

/// Stdio only: an HTTP server has no stderr odek reads (§14).
#[tokio::test]
async fn stderr_flood_is_bounded_and_counted() {
    let fixture = Fixture::new(&[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    // The printer is stuck: the server must still never block on stderr, so the flood completes
    // (the reply waits for the last line to be written) and the overflow is counted.
    recorder.close_gate();
    let reply = call(&hub, "fx__stderr_flood", r#"{"lines":20000,"line_bytes":200,"wait":true}"#).await;
    recorder.open_gate();
    assert_eq!(reply.unwrap(), "stderr flooded");
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"responsive"}"#).await.unwrap(), "responsive");
    // Every flooded line is either forwarded or counted once the queue drains.
    let (forwarded, dropped) = recorder
        .wait_until(|recorder| {
            let lines = recorder.lines();
            let dropped = stderr_lines_dropped(&lines);
            let forwarded = lines.iter().filter(|line| line.starts_with("[fx] flood ")).count() as u64;
            (forwarded + dropped >= 20_000).then_some((forwarded, dropped))
        })
        .await;
    assert!(
        forwarded <= 20_000 && dropped > 0,
        "a 20000-line burst overflows the 256-line queue: {forwarded} + {dropped}"
    );
    assert!(recorder.lines().iter().all(|line| line.starts_with("[fx] ")));
    hub.shutdown().await;
}

async fn server_log_messages_are_forwarded_cleaned(transport: Transport) {
    let fixture = Fixture::over(transport, &[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    call(&hub, "fx__log_message", r#"{"level":"warning","data":"disk \u001b[31mlow"}"#).await.unwrap();
    call(&hub, "fx__log_message", r#"{"data":{"k":1}}"#).await.unwrap();
    recorder.wait_for_line(|line| line == "[fx] warning: disk low").await;
    recorder.wait_for_line(|line| line == "[fx] info: {\"k\":1}").await;
    hub.shutdown().await;
}

async fn multi_line_log_messages_are_forwarded_line_by_line(transport: Transport) {
    let fixture = Fixture::over(transport, &[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let data = "Traceback (most recent call last):\r\n  File \"x.py\", line 1\n\tboom\rdone\n";
    let args = serde_json::json!({"level": "error", "data": data}).to_string();
    assert_eq!(call(&hub, "fx__log_message", &args).await.unwrap(), "logged");
    recorder.wait_for_line(|line| line == "[fx] error: done").await;
    let lines: Vec<String> = recorder.lines().into_iter().filter(|line| line.starts_with("[fx] error: ")).collect();
    assert_eq!(
        lines,
        [
            "[fx] error: Traceback (most recent call last):",
            "[fx] error:   File \"x.py\", line 1",
            "[fx] error: \tboom",
            "[fx] error: done",
        ]
    );

    // At most 32 lines of one message, then a count of the rest.
    let many: Vec<String> = (1..=50).map(|n| format!("row {n}")).collect();
    let args = serde_json::json!({"level": "debug", "data": many.join("\n")}).to_string();
    assert_eq!(call(&hub, "fx__log_message", &args).await.unwrap(), "logged");
    recorder.wait_for_line(|line| line == "[fx] debug: \u{2026} 18 more line(s)").await;
    let rows = recorder.lines().into_iter().filter(|line| line.starts_with("[fx] debug: row ")).count();
    assert_eq!(rows, 32);
    hub.shutdown().await;
}

async fn restart_into_a_listing_over_the_tool_cap_fails_red(transport: Transport) {
    let message = "mcpclient fx: restart failed: mcpclient fx: tools/list: the server lists more than 1000 tools (the cap per server); refused at page 1";
    let (_fixture, hub, recorder) = restart_fails(transport, "--mode many-tools", message).await;
    assert_eq!(
        events_after_start(&recorder),
        vec![McpEvent::ServerFailed { server: "fx".into(), error_class: "protocol_error" }]
    );
    hub.shutdown().await;
}

async fn relist_with_an_invalid_name_disables_the_server_with_the_way_out(transport: Transport) {
    let fixture = Fixture::over(transport, &[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    assert_eq!(call(&hub, "fx__mutate_tools", r#"{"add":"fs.read"}"#).await.unwrap(), "ok");
    wait_stale(&hub).await;
    hub.refresh_stale().await;
    assert_eq!(
        recorder.warnings(),
        vec![
            "mcp server \"fx\": tool list refresh failed: mcpclient fx: tools/list: tool name \"fs.read\" contains invalid character '.'; to use the server without that tool, add it to its \"exclude_tools\": [\"fs.read\"]; server disabled"
        ]
    );
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(), "tool \"fx__echo\" not found");
    hub.shutdown().await;
}

/// Stdio only: odek ends the processes it runs; an HTTP server's process is not odek's.
#[tokio::test]
async fn server_that_ignores_stdin_eof_is_killed_on_shutdown() {
    let fixture = Fixture::new(&["--mode", "ignore-stdin-eof"]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    let pid: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
    hub.shutdown().await;
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    assert!(!alive, "process {pid} survived shutdown");
}

/// Stdio only: odek builds the environment of the processes it runs.
#[tokio::test]
async fn server_environment_is_scrubbed_red() {
    let mut entry = fixture_entry(&[]);
    entry.env.insert("MY_API_KEY".into(), "leak".into());
    entry.env.insert("LOG_LEVEL".into(), "debug".into());
    let (spec, _) = odek_mcp::validate_server("fx", &entry).unwrap();
    let recorder = std::sync::Arc::new(support::Recorder::default());
    let mut options = support::options(&recorder, std::sync::Arc::new(odek_mcp::ApproveAll));
    options.parent_env = vec![
        ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        ("OPENAI_API_KEY".into(), "sk-parent".into()),
        ("AWS_REGION".into(), "eu-west-1".into()),
    ];
    let hub = odek_mcp::McpHub::start(vec![spec], options).await.unwrap();
    assert_eq!(
        recorder.warnings(),
        vec![
            "mcp server \"fx\": env override MY_API_KEY looks like a secret and was dropped; pass secrets with secret_env in ~/.odek/config.json, or there as \"MY_API_KEY\": \"${MY_API_KEY}\"".to_owned()
        ]
    );
    let env = call(&hub, "fx__env", "").await.unwrap();
    let names: Vec<&str> = env.lines().map(|line| line.split('=').next().unwrap_or_default()).collect();
    assert_eq!(names, vec!["LOG_LEVEL", "PATH"], "{env}");
    hub.shutdown().await;
}

/// Ends the server process from inside a call (exit code 3), which makes the next call restart it.
async fn crash(fixture: &mut Fixture, hub: &McpHub) {
    crash_with(fixture, hub, "fx__exit_mid_call").await;
}

/// Ends the server process from inside a call to `tool`, and leaves the client knowing it, so
/// that the next call restarts it: over stdio the call sees the pipe close; over HTTP the
/// exchange breaks, the server is started again on its port (reading the args file anew) and a
/// call meets its 404 for the forgotten session.
async fn crash_with(fixture: &mut Fixture, hub: &McpHub, tool: &str) {
    let err = call(hub, tool, "{}").await.unwrap_err();
    match fixture.transport {
        Transport::Stdio => assert_eq!(err, format!("{OUTCOME_UNKNOWN}connection closed before response received")),
        Transport::Http => {
            assert!(err.starts_with(&format!("{OUTCOME_UNKNOWN}http: ")), "{err}");
            // Else a pooled connection to the dead process could carry the next request (and
            // its EOF would fail the call before any 404).
            fixture.wait_until_the_client_let_go().await;
            fixture.restart_http_server();
            assert_eq!(
                call(hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(),
                format!("{OUTCOME_UNKNOWN}the server ended the session (http 404); the next call starts a new one")
            );
        }
    }
}

/// Clears the args of restarted servers; over HTTP the running server (started with them by
/// the last crash) is replaced at once, as odek's next restart spawns a fresh stdio process.
fn clear_restart_args(fixture: &mut Fixture) {
    fixture.set_restart_args("");
    if fixture.transport == Transport::Http {
        fixture.restart_http_server();
    }
}

/// How often the crash-then-restart scenarios that depend on when the client observes the
/// crashed process's exit are repeated.
const CRASH_ROUNDS: u32 = 20;

/// The events after startup's `mcp_server_started`.
fn events_after_start(recorder: &Recorder) -> Vec<McpEvent> {
    let mut events = recorder.events();
    assert!(matches!(events.first(), Some(McpEvent::ServerStarted { .. })), "{events:?}");
    events.remove(0);
    events
}

fn restarts(recorder: &Recorder) -> Vec<u32> {
    recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            McpEvent::ServerRestarted { restarts, .. } => Some(restarts),
            _ => None,
        })
        .collect()
}

/// Calls `fx__echo` with a caller deadline `after` from now, which must pass before the call is
/// dispatched (the restart it waits for never completes).
async fn echo_deadline_passes_undispatched(hub: &McpHub, after: Duration) {
    let options = CallOptions { deadline: Some(tokio::time::Instant::now() + after), cancel: None };
    let err = hub.call("fx__echo", r#"{"text":"x"}"#, &options).await.unwrap_err();
    assert_eq!(err.to_string(), "mcpclient fx: tools/call: MCP request not dispatched: context deadline exceeded");
}

/// Repeats `CRASH_ROUNDS` times: a crash whose restart runs with `restart_args` and is broken
/// (made to fail, or interrupted) by `break_restart`; with the args cleared, the next call must
/// restart the server again, the broken (`what`) restart having counted toward the limit.
async fn server_recovers_from_a_broken_restart(
    transport: Transport,
    restart_args: &str,
    what: &str,
    break_restart: impl AsyncFn(&McpHub),
) {
    for round in 1..=CRASH_ROUNDS {
        let mut fixture = Fixture::restartable(transport, &[]);
        let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
        fixture.set_restart_args(restart_args);
        crash(&mut fixture, &hub).await;
        break_restart(&hub).await;
        clear_restart_args(&mut fixture);
        let after = call(&hub, "fx__echo", r#"{"text":"after"}"#).await;
        assert_eq!(after.as_deref(), Ok("after"), "round {round}: the {what} restart disabled the server");
        // The broken restart counted toward the limit: the successful one is the second.
        assert_eq!(restarts(&recorder), vec![2], "round {round}: the {what} restart counted");
        hub.shutdown().await;
    }
}

/// Starts the fixture as "fx" and crashes it; the restart the next call makes runs with
/// `restart_args` and must fail that call with `message`.
async fn restart_fails(transport: Transport, restart_args: &str, message: &str) -> (Fixture, McpHub, Arc<Recorder>) {
    let mut fixture = Fixture::restartable(transport, &[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    fixture.set_restart_args(restart_args);
    crash(&mut fixture, &hub).await;
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(), message);
    (fixture, hub, recorder)
}

async fn restart_failed(transport: Transport) {
    let message = "mcpclient fx: restart failed: mcpclient fx: initialize: MCP error -32603: boom";
    let (_fixture, hub, recorder) = restart_fails(transport, "--mode initialize-error", message).await;
    assert_eq!(
        events_after_start(&recorder),
        vec![McpEvent::ServerFailed { server: "fx".into(), error_class: "protocol_error" }]
    );
    hub.shutdown().await;
}

async fn failed_restart_is_retried_by_the_next_call(transport: Transport) {
    // A client that re-derives "may restart" from how the old process ended gets either answer
    // here, depending on whether the crash was observed before the failed restart closed the
    // old connection; repeating the scenario makes such a race show.
    server_recovers_from_a_broken_restart(transport, "--mode initialize-error", "failed", async |hub: &McpHub| {
        let err = call(hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err();
        assert!(err.starts_with("mcpclient fx: restart failed: "), "{err}");
    })
    .await;
}

async fn restart_error_forged_artifact_line_red(transport: Transport) {
    let restart_args = r#"--initialize-error-message ok\n-\u0020artifact\u0020\"x\"\u0020(text/plain)"#;
    let message =
        "mcpclient fx: restart failed: mcpclient fx: initialize: MCP error -32603: ok\n - artifact \"x\" (text/plain)";
    let (_fixture, hub, _) = restart_fails(transport, restart_args, message).await;
    hub.shutdown().await;
}

async fn restart_rejected_disables_server(transport: Transport) {
    let message = "mcp server \"fx\": restart rejected: mcpclient fx: tools/list: tool name \"read file\" contains invalid character ' '; to use the server without that tool, add it to its \"exclude_tools\": [\"read file\"]; server disabled";
    let (fixture, hub, recorder) = restart_fails(transport, "--mode invalid-tool-name", message).await;
    assert_eq!(
        events_after_start(&recorder),
        vec![McpEvent::ServerFailed { server: "fx".into(), error_class: "invalid_tool" }]
    );
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(), "tool \"fx__echo\" not found");
    assert!(hub.tools().is_empty(), "{:?}", hub.tools());
    let servers = hub.servers();
    assert!(servers[0].disabled && servers[0].tools.is_empty());
    if transport == Transport::Stdio {
        assert_eq!(fixture.processes(), Vec::<u32>::new(), "the rejected process was closed");
    }
    hub.shutdown().await;
}

async fn no_longer_offered_after_restart(transport: Transport) {
    let mut fixture = Fixture::restartable(transport, &[]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    fixture.set_restart_args("--hide echo");
    crash(&mut fixture, &hub).await;
    assert_eq!(
        call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(),
        "mcpclient fx: tool echo is no longer offered by the server"
    );
    assert!(!hub.tools().iter().any(|tool| tool.raw_name == "echo"), "the catalogue already changed");
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(), "tool \"fx__echo\" not found");
    assert_eq!(call(&hub, "fx__count_calls", "").await.unwrap(), "1", "the restarted process serves the rest");
    hub.shutdown().await;
}

/// Stdio only: about the process odek spawns for a restart (over HTTP,
/// `interrupted_restart_leaves_the_server_restartable` interrupts a re-initialisation).
#[tokio::test]
async fn cancel_during_restart_never_leaks_process_red() {
    // 1 ms interrupts the restart wherever it happens to be (possibly before the spawn); 300 ms
    // interrupts it mid-handshake with a live process, since the restarted process never
    // answers initialize.
    for deadline in [Duration::from_millis(1), Duration::from_millis(300)] {
        let mut fixture = Fixture::new(&[]);
        let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
        crash(&mut fixture, &hub).await;
        fixture.set_restart_args("--mode no-initialize-reply");
        echo_deadline_passes_undispatched(&hub, deadline).await;
        hub.shutdown().await;
        let gone = poll_until(Duration::from_secs(15), || fixture.processes().is_empty()).await;
        assert!(gone, "deadline {deadline:?}: fixture processes left behind: {:?}", fixture.processes());
    }
}

async fn interrupted_restart_leaves_the_server_restartable(transport: Transport) {
    // As for a failed restart: the outcome must not depend on whether the crash was observed
    // before the interrupted restart began closing the old connection, so the scenario repeats.
    server_recovers_from_a_broken_restart(
        transport,
        "--mode no-initialize-reply",
        "interrupted",
        async |hub: &McpHub| {
            echo_deadline_passes_undispatched(hub, Duration::from_millis(300)).await;
        },
    )
    .await;
}

async fn calls_after_shutdown_fail_without_spawning(transport: Transport) {
    let mut fixture = Fixture::restartable(transport, &[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    // A crashed server would be restarted by the next call, were the hub still open.
    crash(&mut fixture, &hub).await;
    hub.shutdown().await;
    for tool in ["fx__echo", "fx__pid"] {
        assert_eq!(
            call(&hub, tool, r#"{"text":"x"}"#).await.unwrap_err(),
            "mcpclient fx: tools/call: MCP request not dispatched: connection closed before dispatch"
        );
    }
    assert!(restarts(&recorder).is_empty());
    if transport == Transport::Stdio {
        assert_eq!(fixture.processes(), Vec::<u32>::new());
    }
    hub.shutdown().await;
}

async fn log_message_redacted_red(transport: Transport) {
    let fixture = Fixture::over(transport, &[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let token = format!("ghp_{}", "aB3".repeat(12));
    assert_eq!(token.len(), 40);
    let args = format!(r#"{{"level":"error","data":"pushing with {token} now"}}"#);
    assert_eq!(call(&hub, "fx__log_message", &args).await.unwrap(), "logged");
    let line = recorder.wait_for_line(|line| line.starts_with("[fx] error: pushing with ")).await;
    assert!(line.contains("[REDACTED]"), "{line}");
    assert!(!line.contains(&token) && !line.contains("aB3aB3"), "{line}");
    assert!(recorder.lines().iter().all(|line| !line.contains(&token)));
    hub.shutdown().await;
}

/// Records every approval question as (tool, relist); declines the named tools at startup and
/// everything on a re-list when `decline_relist`.
struct Asking {
    asked: Mutex<Vec<(String, bool)>>,
    decline_at_start: &'static [&'static str],
    decline_relist: bool,
}

impl Asking {
    fn new(decline_at_start: &'static [&'static str], decline_relist: bool) -> Arc<Self> {
        Arc::new(Self { asked: Mutex::new(Vec::new()), decline_at_start, decline_relist })
    }

    fn relist_questions(&self) -> Vec<String> {
        self.asked.lock().unwrap().iter().filter(|(_, relist)| *relist).map(|(tool, _)| tool.clone()).collect()
    }
}

impl ToolApprover for Asking {
    fn approve_tool(&self, request: &ToolApprovalRequest) -> ToolApproval {
        self.asked.lock().unwrap().push((request.tool.clone(), request.relist));
        let declined =
            if request.relist { self.decline_relist } else { self.decline_at_start.contains(&request.tool.as_str()) };
        if declined { ToolApproval::Declined } else { ToolApproval::Approved }
    }
}

async fn start_asking(fixture: &Fixture, approver: &Arc<Asking>) -> (McpHub, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let approver = Arc::clone(approver) as Arc<dyn ToolApprover>;
    let hub = McpHub::start(vec![spec("fx", &fixture.entry)], options(&recorder, approver)).await.unwrap();
    (hub, recorder)
}

async fn declined_tool_is_not_asked_again_on_relist(transport: Transport) {
    let fixture = Fixture::over(transport, &[]);
    let approver = Asking::new(&["slow"], false);
    let (hub, recorder) = start_asking(&fixture, &approver).await;
    assert!(approver.asked.lock().unwrap().contains(&("slow".to_owned(), false)));
    assert!(approver.relist_questions().is_empty());
    assert_eq!(call(&hub, "fx__mutate_tools", r#"{"add":"fresh"}"#).await.unwrap(), "ok");
    wait_stale(&hub).await;
    hub.refresh_stale().await;
    assert_eq!(approver.relist_questions(), vec!["fresh"], "only the new tool is asked about");
    let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.raw_name).collect();
    assert!(names.contains(&"fresh".to_owned()) && !names.contains(&"slow".to_owned()), "{names:?}");
    assert!(recorder.warnings().is_empty(), "{:?}", recorder.warnings());
    hub.shutdown().await;
}

async fn relist_unapproved_tool_warns(transport: Transport) {
    let fixture = Fixture::over(transport, &[]);
    let approver = Asking::new(&[], true);
    let (hub, recorder) = start_asking(&fixture, &approver).await;
    assert_eq!(call(&hub, "fx__mutate_tools", r#"{"add":"fresh"}"#).await.unwrap(), "ok");
    wait_stale(&hub).await;
    hub.refresh_stale().await;
    assert_eq!(
        recorder.warnings(),
        vec!["mcp server \"fx\": tool \"fresh\" changed or is new and is not approved; not registered"]
    );
    assert_eq!(call(&hub, "fx__fresh", "{}").await.unwrap_err(), "tool \"fx__fresh\" not found");
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"kept"}"#).await.unwrap(), "kept", "approved tools stay");
    hub.shutdown().await;
}
