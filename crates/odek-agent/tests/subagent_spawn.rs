//! The parent's side of one child process (spec `subagents.md` §8) against stand-in children:
//! a child stopped on its deadline is reported as a timeout even when it answers the stop with a
//! result of its own, and what a child printed before it exited is kept.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use odek_agent::subagent::spawn::{ChildSpec, run_child};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn script(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    let path = dir.join("child.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn spec(dir: &std::path::Path, program: std::path::PathBuf, timeout: Duration) -> ChildSpec {
    ChildSpec {
        program,
        cwd: dir.to_path_buf(),
        env: vec![("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())],
        api_key: None,
        task_file: dir.join("task.json"),
        timeout,
    }
}

/// The stand-in answers SIGINT the way `odek subagent` does, with a `cancelled` result; the
/// parent stopped it for its deadline, so the task is a timeout.
#[tokio::test]
async fn a_child_stopped_on_its_deadline_is_a_timeout_not_its_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let program = script(
        dir.path(),
        r#"trap 'echo "{\"type\":\"result\",\"task_id\":\"t\",\"result\":{\"status\":\"error\",\"error\":\"cancelled\"}}"; exit 1' INT
while :; do sleep 0.05; done"#,
    );
    let report = run_child(&spec(dir.path(), program, Duration::from_secs(1)), &CancellationToken::new(), |_| {}).await;
    assert_eq!(report.result, json!({"status": "timeout", "error": "timeout after 1s"}));
    assert!(!report.parsed);
}

#[tokio::test]
async fn a_result_printed_before_exit_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let program = script(
        dir.path(),
        r#"echo '{"type":"subagent_started","task_id":"t"}'
echo '{"type":"result","task_id":"t","result":{"status":"success","summary":"ok"}}'
exit 0"#,
    );
    let report =
        run_child(&spec(dir.path(), program, Duration::from_secs(30)), &CancellationToken::new(), |_| {}).await;
    assert!(report.parsed);
    assert_eq!(report.result["summary"], "ok");
}

#[tokio::test]
async fn a_child_without_a_result_is_no_result_with_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let program = script(dir.path(), "echo 'not json'\nexit 3");
    let report =
        run_child(&spec(dir.path(), program, Duration::from_secs(30)), &CancellationToken::new(), |_| {}).await;
    assert_eq!(report.result, json!({"status": "no_result", "error": "no result from sub-agent (exit 3)"}));
    assert_eq!(report.raw_stdout, b"not json\n");
}
