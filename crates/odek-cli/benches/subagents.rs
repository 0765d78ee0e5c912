//! Sub-agent benchmarks (issue 5), against the scripted OpenAI-compatible server on 127.0.0.1:
//! 1. spawn → first model request of `odek subagent --task <file> --quiet --stream` (target
//!    ≤ 30 ms), the way `delegate_tasks` starts a child;
//! 2. a parent `odek run` making 10 (`SUBAGENT_CALLS`) `delegate_tasks` calls of eight tasks each under the default
//!    concurrency limit: the parent's resident memory, read from /proc when each call's results
//!    reach the model, must stay flat.
//!
//! Run: `cargo bench -p odek-cli --bench subagents`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/run_support/mod.rs"]
mod run_support;

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odek_test_support::openai::{RecordedRequest, Reply, ScriptedServer};
use run_support::Sandbox;
use serde_json::json;

const SPAWN_RUNS: usize = 30;
const TASKS_PER_CALL: usize = 8;

/// A sandbox whose config points at `base_url`, with a `tmp/` in its home for task files.
fn sandbox(base_url: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.configure(base_url, false);
    std::fs::create_dir_all(sandbox.home.join("tmp")).unwrap();
    sandbox
}

/// `odek <args>` in `sandbox`, its temporary files in the home's `tmp/`, its output dropped.
fn odek(sandbox: &Sandbox, args: &[&str]) -> Command {
    let mut command = sandbox.command(args);
    command.env("TMPDIR", sandbox.home.join("tmp")).stdout(Stdio::null()).stderr(Stdio::null());
    command
}

fn spawn_to_first_request() {
    let server = ScriptedServer::start(Vec::new());
    let sandbox = sandbox(&server.base_url());
    let mut samples = Vec::with_capacity(SPAWN_RUNS);
    for run in 0..=SPAWN_RUNS {
        server.push(Reply::text("done"));
        let task = sandbox.home.join("tmp").join(format!("odek-task-bench{run}.json"));
        let task_json = json!({"task_id": format!("task-{run:016x}"), "protocol": 2, "goal": "say done",
            "trust_level": "untrusted", "artifact_root": sandbox.home.join(".odek/artifacts/bench").join(format!("task-{run:016x}"))});
        std::fs::write(&task, task_json.to_string()).unwrap();
        let started = Instant::now();
        let mut child =
            odek(&sandbox, &["subagent", "--task", task.to_str().unwrap(), "--quiet", "--stream"]).spawn().unwrap();
        server.wait_for_requests(run + 1, Duration::from_secs(30));
        let elapsed = started.elapsed();
        assert!(child.wait().unwrap().success());
        if run > 0 {
            samples.push(elapsed.as_secs_f64() * 1000.0);
        }
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "odek subagent → first model request, {SPAWN_RUNS} runs: best {:.1} ms, median {:.1} ms, worst {:.1} ms",
        samples[0],
        samples[SPAWN_RUNS / 2],
        samples[SPAWN_RUNS - 1]
    );
}

fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmRSS:").map(|rest| rest.trim().trim_end_matches(" kB").trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

/// `delegate_tasks` calls the parent makes (`SUBAGENT_CALLS`, default 10).
fn delegate_calls() -> usize {
    std::env::var("SUBAGENT_CALLS").ok().and_then(|calls| calls.parse().ok()).unwrap_or(10)
}

fn parent_memory_over_delegations() {
    let delegate_calls = delegate_calls();
    let parent_pid = Arc::new(Mutex::new(0_u32));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let server = ScriptedServer::start(Vec::new());
    let tasks: Vec<serde_json::Value> =
        (0..TASKS_PER_CALL).map(|n| json!({"goal": format!("task {n}"), "trust_level": "trusted"})).collect();
    let delegate_args = json!({"tasks": tasks}).to_string();
    for call in 0..=delegate_calls {
        let (pid, samples) = (Arc::clone(&parent_pid), Arc::clone(&samples));
        let args = delegate_args.clone();
        // The parent's request after each call: sample its memory, then delegate again (or end).
        server.push(Reply::responding(move |_: &RecordedRequest| {
            if call > 0 {
                samples.lock().unwrap().push(resident_kib(*pid.lock().unwrap()));
            }
            if call == delegate_calls {
                Reply::text("all delegated")
            } else {
                Reply::tool_calls(vec![(format!("d{call}"), "delegate_tasks".to_owned(), args.clone())])
            }
        }));
        if call < delegate_calls {
            for _ in 0..TASKS_PER_CALL {
                server.push(Reply::text("child done"));
            }
        }
    }
    let sandbox = sandbox(&server.base_url());
    let started = Instant::now();
    let mut parent = odek(&sandbox, &["run", "--quiet", "delegate", "a", "lot"]).spawn().unwrap();
    *parent_pid.lock().unwrap() = parent.id();
    assert!(parent.wait().unwrap().success());
    let elapsed = started.elapsed();
    let samples = samples.lock().unwrap().clone();
    println!(
        "parent RSS after each of {delegate_calls} delegate_tasks calls of {TASKS_PER_CALL} children (KiB): {samples:?}; {:.1} s in all",
        elapsed.as_secs_f64()
    );
}

fn main() {
    spawn_to_first_request();
    parent_memory_over_delegations();
}
