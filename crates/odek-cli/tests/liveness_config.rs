//! \[beyond\] The liveness settings through the real binary (issue 17 item 1): bad values of the
//! `limits` deadlines, `events.heartbeat_seconds`, a server's `startup_timeout_seconds` and
//! their flags fail before any model call with a clear error; the shutdown drain is bounded
//! and kills a server that will not exit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::time::{Duration, Instant};

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

const TEST_LIMIT: Duration = Duration::from_secs(60);

/// Runs `odek run go` with `extra` merged into a global config that points at `server`.
fn run_with_config(server: &ScriptedServer, extra: Value, flags: &[&str]) -> (Sandbox, std::process::Output) {
    let sandbox = Sandbox::new();
    let mut config = json!({"base_url": server.base_url(), "model": "test-model"});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    sandbox.global_config(&config);
    let mut args = vec!["run"];
    args.extend_from_slice(flags);
    args.push("go");
    let output = output_within(sandbox.command(&args), TEST_LIMIT);
    (sandbox, output)
}

#[test]
fn bad_config_values_are_refused_before_any_model_call() {
    let server = ScriptedServer::start(vec![]);
    let cases = [
        (json!({"limits": {"first_byte_timeout_seconds": -1}}), "limits.first_byte_timeout_seconds must be >= 0"),
        (
            json!({"limits": {"stream_idle_timeout_seconds": 0}}),
            "limits.stream_idle_timeout_seconds must be from 1 to 86400 seconds (leave it out for the default), got 0",
        ),
        (
            json!({"limits": {"shutdown_drain_seconds": 86401}}),
            "limits.shutdown_drain_seconds must be from 1 to 86400 seconds (leave it out for the default), got 86401",
        ),
        (
            json!({"limits": {"mcp_startup_timeout_seconds": 1.5}}),
            "limits.mcp_startup_timeout_seconds: invalid type: floating point `1.5`, expected i64",
        ),
        (
            json!({"limits": {"first_byte_timeout_seconds": "90"}}),
            "limits.first_byte_timeout_seconds: invalid type: string \"90\", expected i64",
        ),
        (
            json!({"events": {"heartbeat_seconds": -5}}),
            "events.heartbeat_seconds must be from 0 (off) to 86400 seconds, got -5",
        ),
        (json!({"events": [30]}), "events: invalid type: sequence, expected a map"),
    ];
    for (extra, want) in cases {
        let (sandbox, output) = run_with_config(&server, extra.clone(), &[]);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{extra}: {err}");
        let path = sandbox.home.join(".odek/config.json");
        assert_eq!(err, format!("odek: config {}: {want}\n", path.display()), "{extra}");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn a_servers_negative_startup_deadline_is_refused() {
    let server = ScriptedServer::start(vec![]);
    let sandbox = Sandbox::new();
    let mut fixture = sandbox.fixture_server();
    fixture["startup_timeout_seconds"] = json!(-1);
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "mcp_servers": {"fx": fixture},
    }));
    let output = output_within(sandbox.command(&["run", "go"]), TEST_LIMIT);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.ends_with(&format!(
            "odek: mcp server \"fx\": mcpclient fx: startup_timeout_seconds must be >= 0, got -1\n{}\n",
            odek_mcp::MAKE_OPTIONAL_HINT_ONE
        )),
        "{err}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn bad_flag_values_are_refused_before_any_model_call() {
    let server = ScriptedServer::start(vec![]);
    let cases: [(&[&str], &str); 6] = [
        (
            &["--first-byte-timeout", "0"],
            "--first-byte-timeout must be an integer from 1 to 86400 (seconds), got \"0\"",
        ),
        (
            &["--stream-idle-timeout", "abc"],
            "--stream-idle-timeout must be an integer from 1 to 86400 (seconds), got \"abc\"",
        ),
        (
            &["--mcp-startup-timeout", "86401"],
            "--mcp-startup-timeout must be an integer from 1 to 86400 (seconds), got \"86401\"",
        ),
        (&["--shutdown-drain", "1.5"], "--shutdown-drain must be an integer from 1 to 86400 (seconds), got \"1.5\""),
        (&["--heartbeat", "-1"], "--heartbeat must be an integer from 0 (off) to 86400 (seconds), got \"-1\""),
        (
            &["--first-byte-timeout", "99999999999999999999"],
            "--first-byte-timeout must be an integer from 1 to 86400 (seconds), got \"99999999999999999999\"",
        ),
    ];
    for (flags, want) in cases {
        let (_sandbox, output) = run_with_config(&server, json!({}), flags);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{flags:?}: {err}");
        assert_eq!(err, format!("odek: {want}\n"), "{flags:?}");
    }
    assert!(server.requests().is_empty());
}

/// A project may shorten a deadline, never lengthen it.
#[test]
fn a_project_may_only_shorten_a_deadline() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "limits": {"first_byte_timeout_seconds": 2},
    }));
    sandbox.write("odek.json", &json!({"limits": {"first_byte_timeout_seconds": 600}}).to_string());
    let output = output_within(sandbox.command(&["run", "go"]), TEST_LIMIT);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(6), "{err}");
    assert!(
        err.contains(
            "odek: warning: ./odek.json: limits.first_byte_timeout_seconds 600 exceeds the global limit 2; clamped to 2"
        ),
        "{err}"
    );
    assert!(err.ends_with("odek: run stalled: no progress in model for 2s (limit 2s)\n"), "{err}");
}

/// The old shutdown gave a server that ignores stdin EOF and SIGTERM its full grace (1 s for
/// the writer, 5 s for the exit) whatever the operator wanted; the drain bounds it and kills
/// the server's process group.
#[test]
fn the_shutdown_drain_kills_a_server_that_will_not_exit_red() {
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let sandbox = Sandbox::new();
    let mut stubborn = sandbox.fixture_server();
    stubborn["args"] = json!(["--artifact-dir", sandbox.artifacts, "--mode", "ignore-stdin-eof"]);
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "mcp_servers": {"stubborn": stubborn},
    }));
    let command = sandbox.command(&["run", "--shutdown-drain", "1", "go"]);
    let started = Instant::now();
    let output = output_within(command, TEST_LIMIT);
    let elapsed = started.elapsed();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "done\n");
    assert!(elapsed < Duration::from_secs(5), "the 1 s drain took {elapsed:?} (the old grace is 6 s)");
    // The killed server is gone (a bounded wait for the kernel to finish the kill, not a sleep).
    let gone_by = Instant::now() + Duration::from_secs(10);
    while !odek_test_support::processes_mentioning(&sandbox.artifacts).is_empty() {
        assert!(Instant::now() < gone_by, "the server outlived the drain");
        std::thread::yield_now();
    }
}
