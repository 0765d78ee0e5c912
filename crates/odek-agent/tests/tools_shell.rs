//! The `shell` tool against real processes: output, exit status, caps, timeout, cancellation
//! and the danger gate.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use odek_agent::tool::{Tool, ToolContext};
use odek_agent::tools::ShellTool;
use odek_danger::{Action, DangerClass, DangerPolicy, NonInteractive, PolicySettings};

fn context(cwd: &Path, settings: PolicySettings) -> ToolContext {
    ToolContext::new(cwd.to_path_buf(), cwd.join("home/.odek"), DangerPolicy::new(settings))
}

fn permissive(cwd: &Path) -> ToolContext {
    context(cwd, PolicySettings { non_interactive: NonInteractive::Allow, ..PolicySettings::default() })
}

fn args(command: &str) -> String {
    serde_json::json!({ "command": command }).to_string()
}

/// Waits (bounded) until `condition` holds.
async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Gone, or a zombie waiting to be reaped by init.
fn process_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn read_pid(path: &PathBuf) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[tokio::test]
async fn output_and_untrusted_source() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = permissive(dir.path());
    let outcome = ShellTool::default().call(&args("echo out; echo err >&2"), &ctx).await.unwrap();
    assert_eq!(outcome.output, "out\nerr");
    assert_eq!(outcome.untrusted_source.as_deref(), Some("$ echo out; echo err >&2"));
    let empty = ShellTool::default().call(&args("true"), &ctx).await.unwrap();
    assert_eq!(empty.output, "(no output)");
    assert_eq!(empty.untrusted_source, None);
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let error = ShellTool::default().call(&args("echo oops; exit 3"), &permissive(dir.path())).await.unwrap_err();
    assert!(error.message.contains("oops"), "{}", error.message);
    assert!(error.message.ends_with("\nexit status 3"), "{}", error.message);
    assert!(error.message.contains("untrusted_content_"), "failing output is still fenced: {}", error.message);
}

#[tokio::test]
async fn runs_in_cwd_and_workdir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let ctx = permissive(dir.path());
    let here = ShellTool::default().call(&args("pwd"), &ctx).await.unwrap();
    assert_eq!(Path::new(&here.output).canonicalize().unwrap(), dir.path().canonicalize().unwrap());
    let sub = serde_json::json!({"command": "pwd", "workdir": "sub"}).to_string();
    let there = ShellTool::default().call(&sub, &ctx).await.unwrap();
    assert_eq!(Path::new(&there.output).canonicalize().unwrap(), dir.path().join("sub").canonicalize().unwrap());
    let missing = serde_json::json!({"command": "pwd", "workdir": "nope"}).to_string();
    assert!(ShellTool::default().call(&missing, &ctx).await.unwrap_err().message.contains("no such directory"));
}

#[tokio::test]
async fn stdin_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = ShellTool::default().call(&args("cat; echo done"), &permissive(dir.path())).await.unwrap();
    assert_eq!(outcome.output, "done");
}

#[tokio::test]
async fn output_is_capped_and_says_how_much_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let command = "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo END";
    let outcome = ShellTool::default().call(&args(command), &permissive(dir.path())).await.unwrap();
    assert!(outcome.output.len() <= 1024 * 1024 + 200, "{} bytes", outcome.output.len());
    assert!(outcome.output.contains("bytes of output omitted"));
    assert!(outcome.output.ends_with("END"), "the tail is kept");
}

#[tokio::test]
async fn timeout_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let command = "(sleep 300; echo late) & echo $! > grandchild.pid; sleep 300";
    let call = serde_json::json!({"command": command, "timeout_seconds": 1}).to_string();
    let started = Instant::now();
    let error = ShellTool::default().call(&call, &permissive(dir.path())).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(error.message.contains("timed out after 1s"), "{}", error.message);
    let pid = read_pid(&pid_file).expect("the background job wrote its pid");
    eventually("the background job to die", || process_dead(pid)).await;
}

/// A background job that left the process group (`setsid`) but kept the output pipe survived
/// the group kill and held the call for two drain graces past its deadline.
#[tokio::test]
async fn timeout_kills_a_grandchild_that_left_the_group_red() {
    let dir = tempfile::tempdir().unwrap();
    let command = "setsid sleep 300 & echo $! > escaped.pid; echo before; sleep 300";
    let call = serde_json::json!({"command": command, "timeout_seconds": 1}).to_string();
    let started = Instant::now();
    let error = ShellTool::default().call(&call, &permissive(dir.path())).await.unwrap_err();
    let took = started.elapsed();
    assert!(error.message.contains("command timed out after 1s; its process group was killed"), "{}", error.message);
    assert!(error.message.contains("before"), "the output so far is kept: {}", error.message);
    // The deadline plus the kill, not plus the drain graces the holder used to cost.
    assert!(took < Duration::from_secs(4), "the call took {took:?}");
    let pid = read_pid(&dir.path().join("escaped.pid")).expect("the background job wrote its pid");
    assert!(process_dead(pid), "the escaped grandchild survived the call");
}

/// A command that exited while an escaped background job still held its output: the call
/// used to return with the job alive.
#[tokio::test]
async fn an_escaped_background_job_does_not_outlive_the_call_red() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = ShellTool::default()
        .call(&args("setsid sleep 300 & echo $! > escaped.pid; echo started"), &permissive(dir.path()))
        .await
        .unwrap();
    assert!(outcome.output.starts_with("started"), "{}", outcome.output);
    assert!(outcome.output.contains("[background processes kept the output open; they were stopped]"));
    let pid = read_pid(&dir.path().join("escaped.pid")).unwrap();
    assert!(process_dead(pid), "the escaped background job survived the call");
}

#[tokio::test]
async fn cancellation_kills_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = permissive(dir.path());
    let pid_file = dir.path().join("shell.pid");
    let cancel = ctx.cancel.clone();
    let watcher = {
        let pid_file = pid_file.clone();
        tokio::spawn(async move {
            eventually("the command to start", || pid_file.exists()).await;
            cancel.cancel();
        })
    };
    let error = ShellTool::default().call(&args("echo $$ > shell.pid; sleep 300"), &ctx).await.unwrap_err();
    watcher.await.unwrap();
    assert_eq!(error.message, "cancelled");
    let pid = read_pid(&pid_file).unwrap();
    eventually("the shell to die", || process_dead(pid)).await;
}

#[tokio::test]
async fn background_jobs_do_not_outlive_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let outcome =
        ShellTool::default().call(&args("sleep 300 & echo $! > bg.pid; echo started"), &permissive(dir.path())).await;
    assert!(outcome.unwrap().output.starts_with("started"));
    let pid = read_pid(&dir.path().join("bg.pid")).unwrap();
    eventually("the background job to die", || process_dead(pid)).await;
}

#[tokio::test]
async fn denied_command_returns_the_denial_and_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut classes = std::collections::BTreeMap::new();
    classes.insert(DangerClass::LocalWrite, Action::Deny);
    let ctx = context(dir.path(), PolicySettings { classes, ..PolicySettings::default() });
    let outcome = ShellTool::default().call(&args("touch marker"), &ctx).await.unwrap();
    assert_eq!(
        outcome.output,
        "operation denied by configuration: touch creates or changes files; local_write is denied (risk: local_write)"
    );
    assert!(!dir.path().join("marker").exists());
}

#[tokio::test]
async fn non_interactive_read_only_denies_prompt_classes() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path(), PolicySettings::default());
    let outcome = ShellTool::default().call(&args("python3 -c 'open(\"made\", \"w\")'"), &ctx).await.unwrap();
    assert!(outcome.output.starts_with("operation denied by configuration: "), "{}", outcome.output);
    assert!(outcome.output.ends_with("(risk: code_execution)"));
    assert!(!dir.path().join("made").exists());
    // Unknown is denied by default.
    let unknown = ShellTool::default().call(&args("frobnicate-xyz"), &ctx).await.unwrap();
    assert!(unknown.output.ends_with("(risk: unknown)"), "{}", unknown.output);
}

#[tokio::test]
async fn interactive_unapproved_prompt_is_denied_and_approved_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = permissive(dir.path());
    ctx.policy = Arc::new(DangerPolicy::default());
    ctx.interactive = true;
    let command = args("sh -c 'echo ran'");
    let outcome = ShellTool::default().call(&command, &ctx).await.unwrap();
    assert!(outcome.output.contains("not approved (risk: code_execution)"), "{}", outcome.output);
    ctx.approved = true;
    assert_eq!(ShellTool::default().call(&command, &ctx).await.unwrap().output, "ran");
}

#[test]
fn risk_reports_class_and_full_command() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = permissive(dir.path());
    let risk = ShellTool::default().risk(&args("rm -rf build"), &ctx).unwrap();
    assert_eq!(risk.class, DangerClass::Destructive);
    assert_eq!(risk.resource, "rm -rf build");
    assert_eq!(ShellTool::default().risk("{not json", &ctx).unwrap().class, DangerClass::Unknown);
}

#[tokio::test]
async fn bad_arguments_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = permissive(dir.path());
    assert!(ShellTool::default().call("", &ctx).await.unwrap_err().message.starts_with("invalid arguments for shell"));
    assert_eq!(ShellTool::default().call(&args("  "), &ctx).await.unwrap_err().message, "command must not be empty");
}
