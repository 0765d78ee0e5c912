//! The parent's side of one child process (spec `subagents.md` §8) against stand-in children:
//! a child stopped on its deadline is reported as a timeout even when it answers the stop with a
//! result of its own, what a child printed before it exited is kept, and a dropped
//! `delegate_tasks` call still deletes its task file and releases its grant.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

mod subagent_support;

use odek_agent::subagent::spawn::{ChildSpec, run_child};
use serde_json::json;
use subagent_support::{stand_in, stand_in_delegate};
use tokio_util::sync::CancellationToken;

fn spec(dir: &std::path::Path, program: std::path::PathBuf, timeout: Duration) -> ChildSpec {
    ChildSpec {
        program,
        cwd: dir.to_path_buf(),
        env: vec![("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())],
        api_key: None,
        task_file: dir.join("task.json"),
        timeout,
        confinement: None,
    }
}

/// The stand-in answers SIGINT the way `odek subagent` does, with a `cancelled` result; the
/// parent stopped it for its deadline, so the task is a timeout.
#[tokio::test]
async fn a_child_stopped_on_its_deadline_is_a_timeout_not_its_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let program = stand_in(
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
    let program = stand_in(
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
    let program = stand_in(dir.path(), "echo 'not json'\nexit 3");
    let report =
        run_child(&spec(dir.path(), program, Duration::from_secs(30)), &CancellationToken::new(), |_| {}).await;
    assert_eq!(report.result, json!({"status": "no_result", "error": "no result from sub-agent (exit 3)"}));
    assert_eq!(report.raw_stdout, b"not json\n");
}

/// A `delegate_tasks` call dropped while its child runs (the loop gave up on the batch) still
/// deletes the task file, kills the child and hands the share-mode grant back.
#[tokio::test]
async fn a_dropped_delegation_removes_its_task_file_and_releases_its_grant_red() {
    use odek_agent::budget::{Budget, BudgetLimits, InputGrant};
    use odek_agent::tool::Tool;

    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let program = stand_in(
        dir.path(),
        &format!("echo \"$3 $$\" > '{}.tmp' && mv '{0}.tmp' '{0}'\nexec sleep 60", started.display()),
    );
    let budget =
        Budget::new(BudgetLimits { max_input_tokens: 1000, ..BudgetLimits::default() }, std::time::Instant::now());
    let share = budget.share();
    let (tool, ctx) = stand_in_delegate(dir.path(), program, 2, Some(budget.share()));

    let (task_file, pid) = {
        let call = tool.call(r#"{"tasks":[{"goal":"wait for ever"}]}"#, &ctx);
        tokio::pin!(call);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let line = loop {
            tokio::select! {
                outcome = &mut call => panic!("the call ended: {:?}", outcome.map(|o| o.output)),
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
            if let Ok(line) = std::fs::read_to_string(&started) {
                break line;
            }
            assert!(tokio::time::Instant::now() < deadline, "the child never started");
        };
        let (task_file, pid) = line.trim().split_once(' ').unwrap();
        let task_file = std::path::PathBuf::from(task_file);
        assert!(task_file.exists());
        assert_eq!(share.grant_input_tokens(1), Err(()), "the child holds all the headroom");
        (task_file, pid.to_owned())
    };

    assert!(!task_file.exists(), "task file left behind: {}", task_file.display());
    assert_eq!(share.grant_input_tokens(1), Ok(Some(InputGrant(1000))), "the grant was not released");
    // SIGKILL is sent as the call is dropped; the process is gone or a zombie shortly after.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let running =
            state.as_deref().and_then(|stat| stat.rsplit_once(") ")).is_some_and(|(_, rest)| !rest.starts_with('Z'));
        if !running {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "child {pid} still runs");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
