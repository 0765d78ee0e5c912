//! Deadlines, progress, cancellation, crash restarts, oversized lines, tool-list changes, stderr
//! and shutdown against the fixture server (spec `mcp-client.md` §5, §8, §9, §11–§13).

mod support;

use std::time::Duration;

use odek_mcp::{CallOptions, McpEvent};
use support::{Fixture, call, fixture_entry, spec, start};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn timeout_leaves_the_process_running_and_reusable() {
    let mut fixture = Fixture::new(&[]);
    fixture.entry.timeout_seconds = 1;
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let pid = call(&hub, "fx__pid", "").await.unwrap();
    let err = call(&hub, "fx__slow", r#"{"ms":5000}"#).await.unwrap_err();
    assert_eq!(
        err,
        "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: context deadline exceeded"
    );
    // The server was told, with reason "timeout".
    recorder.wait_for_line(|line| line.contains("slow: request") && line.ends_with("cancelled (timeout)")).await;
    assert_eq!(call(&hub, "fx__pid", "").await.unwrap(), pid, "same process after a timeout");
    assert_eq!(call(&hub, "fx__echo", r#"{"text":"after"}"#).await.unwrap(), "after");
    hub.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_extend_the_deadline() {
    let mut fixture = Fixture::new(&[]);
    fixture.entry.timeout_seconds = 1;
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    let out = call(&hub, "fx__slow", r#"{"ms":2500,"progress_every_ms":200}"#).await.unwrap();
    assert_eq!(out, "slept 2500 ms");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_shorter_caller_deadline_wins() {
    let fixture = Fixture::new(&[]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    let options =
        CallOptions { deadline: Some(tokio::time::Instant::now() + Duration::from_millis(300)), cancel: None };
    let err = hub.call("fx__slow", r#"{"ms":5000,"progress_every_ms":50}"#, &options).await.unwrap_err();
    assert!(err.to_string().ends_with("context deadline exceeded"), "{err}");
    hub.shutdown().await;
}

#[tokio::test]
async fn caller_cancellation_is_context_canceled_and_notifies_the_server() {
    let fixture = Fixture::new(&[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let cancel = CancellationToken::new();
    let options = CallOptions { deadline: None, cancel: Some(cancel.clone()) };
    let canceller = tokio::spawn(async move {
        tokio::task::yield_now().await;
        cancel.cancel();
    });
    let err = hub.call("fx__slow", r#"{"ms":5000}"#, &options).await.unwrap_err();
    canceller.await.unwrap();
    let text = err.to_string();
    assert!(
        text == "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: context canceled"
            || text == "mcpclient fx: tools/call: MCP request not dispatched: context canceled",
        "{text}"
    );
    if text.contains("outcome unknown") {
        recorder.wait_for_line(|line| line.ends_with("cancelled (cancelled)")).await;
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn crash_mid_call_then_restart_on_next_call() {
    let fixture = Fixture::new(&[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let first = call(&hub, "fx__pid", "").await.unwrap();
    let err = call(&hub, "fx__exit_mid_call", r#"{"code":3}"#).await.unwrap_err();
    assert_eq!(
        err,
        "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: connection closed before response received"
    );
    let second = call(&hub, "fx__pid", "").await.unwrap();
    assert_ne!(first, second, "the next call restarted the server");
    assert!(recorder.events().contains(&McpEvent::ServerRestarted {
        server: "fx".into(),
        restarts: 1,
        exit_status: Some(3)
    }));
    assert_eq!(call(&hub, "fx__count_calls", "").await.unwrap(), "2", "a fresh process");
    hub.shutdown().await;
}

#[tokio::test]
async fn restart_limit_is_three() {
    let fixture = Fixture::new(&[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    for expected_restarts in 0..=3u32 {
        let err = call(&hub, "fx__kill_self", "").await.unwrap_err();
        assert!(err.ends_with("connection closed before response received"), "{err}");
        let restarts = recorder.events().iter().filter(|e| matches!(e, McpEvent::ServerRestarted { .. })).count();
        assert_eq!(restarts as u32, expected_restarts);
    }
    assert!(recorder.events().contains(&McpEvent::ServerRestarted {
        server: "fx".into(),
        restarts: 3,
        exit_status: Some(137)
    }));
    assert_eq!(
        call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(),
        "mcpclient fx: tools/call: MCP request not dispatched: server process exited and the restart limit (3) is exhausted"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn oversized_line_closes_the_connection_for_good_red() {
    let mut fixture = Fixture::new(&[]);
    fixture.entry.max_response_bytes = 65536;
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    let err = call(&hub, "fx__oversized_line", r#"{"bytes":65537}"#).await.unwrap_err();
    assert_eq!(
        err,
        "mcpclient fx: tools/call: mcpclient fx: response line exceeded configured max_response_bytes limit of 65536 bytes"
    );
    for _ in 0..2 {
        assert_eq!(
            call(&hub, "fx__echo", r#"{"text":"x"}"#).await.unwrap_err(),
            "mcpclient fx: tools/call: MCP request not dispatched: connection closed after a response exceeded max_response_bytes"
        );
    }
    assert!(!recorder.events().iter().any(|e| matches!(e, McpEvent::ServerRestarted { .. })), "never restarted");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_line_exactly_at_the_limit_is_accepted() {
    let mut fixture = Fixture::new(&[]);
    fixture.entry.max_response_bytes = 65536;
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    assert!(call(&hub, "fx__oversized_line", r#"{"bytes":65536}"#).await.is_ok());
    hub.shutdown().await;
}

#[tokio::test]
async fn gigabyte_line_fails_closed_without_buffering_it_red() {
    let fixture = Fixture::new(&[]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    let err = call(&hub, "fx__oversized_line", r#"{"bytes":1073741824}"#).await.unwrap_err();
    assert!(err.ends_with("response line exceeded configured max_response_bytes limit of 10485760 bytes"), "{err}");
    hub.shutdown().await;
}

#[tokio::test]
async fn list_changed_marks_stale_and_refresh_applies_it() {
    let fixture = Fixture::new(&[]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    assert_eq!(call(&hub, "fx__mutate_tools", r#"{"add":"fresh","remove":"error_result"}"#).await.unwrap(), "ok");
    // The notification may trail the reply on the wire: wait for it without sleeping.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !hub.has_stale() {
        assert!(tokio::time::Instant::now() < deadline, "list_changed never arrived");
        tokio::task::yield_now().await;
    }
    hub.refresh_stale().await;
    let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.exposed.into_string()).collect();
    assert!(names.contains(&"fx__fresh".to_owned()), "{names:?}");
    assert!(!names.contains(&"fx__error_result".to_owned()));
    assert_eq!(call(&hub, "fx__fresh", "{}").await.unwrap(), "fresh called");
    assert_eq!(call(&hub, "fx__error_result", "{}").await.unwrap_err(), "tool \"fx__error_result\" not found");
    hub.shutdown().await;
}

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
            let dropped: u64 = lines
                .iter()
                .filter_map(|line| {
                    line.strip_prefix("[fx] … ")?.strip_suffix(" stderr line(s) dropped")?.parse::<u64>().ok()
                })
                .sum();
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

#[tokio::test]
async fn server_log_messages_are_forwarded_cleaned() {
    let fixture = Fixture::new(&[]);
    let (hub, recorder) = start(vec![spec("fx", &fixture.entry)]).await;
    call(&hub, "fx__log_message", r#"{"level":"warning","data":"disk \u001b[31mlow"}"#).await.unwrap();
    call(&hub, "fx__log_message", r#"{"data":{"k":1}}"#).await.unwrap();
    recorder.wait_for_line(|line| line == "[fx] warning: disk \u{FFFD}[31mlow").await;
    recorder.wait_for_line(|line| line == "[fx] info: {\"k\":1}").await;
    hub.shutdown().await;
}

#[tokio::test]
async fn server_that_ignores_stdin_eof_is_killed_on_shutdown() {
    let fixture = Fixture::new(&["--mode", "ignore-stdin-eof"]);
    let (hub, _) = start(vec![spec("fx", &fixture.entry)]).await;
    let pid: i32 = call(&hub, "fx__pid", "").await.unwrap().parse().unwrap();
    hub.shutdown().await;
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    assert!(!alive, "process {pid} survived shutdown");
}

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
        vec!["mcp server \"fx\": env override MY_API_KEY looks like a secret and was dropped".to_owned()]
    );
    let env = call(&hub, "fx__env", "").await.unwrap();
    let names: Vec<&str> = env.lines().map(|line| line.split('=').next().unwrap_or_default()).collect();
    assert_eq!(names, vec!["LOG_LEVEL", "PATH"], "{env}");
    hub.shutdown().await;
}
