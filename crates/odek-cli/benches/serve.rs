//! `odek serve` benchmark (issue 34), every measure in one invocation, against the real binary
//! on 127.0.0.1:
//!
//! 1. Event emitted → delivered to an SSE subscriber, with 50 replay runs of 20 iterations each
//!    running at once, each streamed by a client of its own: per event, the client's clock when
//!    the event's line arrived minus its `timestamp` (stamped when the runtime emitted it), so
//!    the event queue, the face, the run's log, SSE framing and loopback TCP are all in it
//!    (target p99 ≤ 20 ms).
//! 2. `POST /api/runs` → the run's first model request: a scripted OpenAI-compatible server on
//!    127.0.0.1 stamps each request's arrival; runs one after another, the clock started just
//!    before the POST is sent (target ≤ 10 ms).
//! 3. Resident memory per idle finished run: the server's resident set after 500 finished runs
//!    (their sessions closed, their event logs kept), less what it held after a warm-up, over 500
//!    (target ≤ 256 KiB).
//!
//! Run: `cargo bench -p odek-cli --bench serve`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/run_support/mod.rs"]
mod run_support;

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::Sandbox;
use serde_json::{Value, json};

const CONCURRENT_RUNS: usize = 50;
/// Runs at once in measure 1: 50, or `ODEK_BENCH_RUNS`.
fn concurrent_runs() -> usize {
    std::env::var("ODEK_BENCH_RUNS").ok().and_then(|runs| runs.parse().ok()).unwrap_or(CONCURRENT_RUNS)
}

/// Whether to take measure 1 only (`ODEK_BENCH_ONLY_EVENTS` set).
fn events_only() -> bool {
    std::env::var_os("ODEK_BENCH_ONLY_EVENTS").is_some()
}
const ITERATIONS: usize = 20;
const FIRST_REQUEST_RUNS: usize = 30;
const IDLE_RUNS: usize = 500;
const DEADLINE: Duration = Duration::from_secs(120);

/// `odek serve` running in a sandbox.
struct Served {
    child: Child,
    base: String,
    token: String,
    client: reqwest::Client,
}

impl Served {
    fn start(sandbox: &Sandbox, args: &[&str]) -> Served {
        let mut child = sandbox
            .command(&[&["serve", "--addr", "127.0.0.1:0"], args].concat())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (base, token) = odek_test_support::serve::announced(&mut child);
        let client = reqwest::Client::builder().timeout(DEADLINE).build().unwrap();
        Served { child, base, token, client }
    }

    async fn start_run(&self, task: String) -> String {
        let response = self
            .client
            .post(format!("{}/api/runs", self.base))
            .bearer_auth(&self.token)
            .json(&json!({"task": task}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::ACCEPTED);
        response.json::<Value>().await.unwrap()["run_id"].as_str().unwrap().to_owned()
    }

    /// The run's stream to its end: each event with the moment its line arrived, and the moment
    /// the stream was open (an event emitted before has waited for the subscriber, not in odek).
    /// Each `approval_requested` is reported on `approvals`.
    async fn stream(
        &self,
        run: &str,
        approvals: Option<&tokio::sync::mpsc::UnboundedSender<(String, u64)>>,
    ) -> (Vec<(Value, chrono::DateTime<chrono::Utc>)>, chrono::DateTime<chrono::Utc>) {
        let mut response = self
            .client
            .get(format!("{}/api/runs/{run}/events", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let subscribed = chrono::Utc::now();
        let (mut events, mut pending) = (Vec::new(), String::new());
        while let Some(chunk) = response.chunk().await.unwrap() {
            let arrived = chrono::Utc::now();
            pending.push_str(std::str::from_utf8(&chunk).unwrap());
            while let Some(end) = pending.find('\n') {
                let line: String = pending.drain(..=end).collect();
                if let Some(data) = line.trim_end().strip_prefix("data: ") {
                    let event: Value = serde_json::from_str(data).unwrap();
                    if let (Some(approvals), "approval_requested") = (approvals, event["type"].as_str().unwrap()) {
                        approvals.send((run.to_owned(), event["data"]["approval_id"].as_u64().unwrap())).unwrap();
                    }
                    events.push((event, arrived));
                }
            }
        }
        (events, subscribed)
    }

    /// CPU seconds the server has used (user and system).
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
        let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
        ticks / 100.0
    }

    fn resident_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

/// A replay script of `iterations` iterations: a `read_file` in each but the last; with `gated`,
/// the first is a command the policy asks about instead.
fn reading_script(path: &Path, iterations: usize, gated: bool) {
    let mut turns: Vec<Value> = (1..iterations)
        .map(|n| json!({"tool_calls": [{"id": format!("r{n}"), "name": "read_file", "arguments": {"path": "notes.txt"}}]}))
        .collect();
    turns.push(json!({"content": "done"}));
    if gated {
        turns[0] = json!({"tool_calls": [{"id": "gate", "name": "shell", "arguments": {"command": "sh -c 'exit 0'"}}]});
    }
    std::fs::write(path, json!({"schema": "odek.replay/v1", "turns": turns}).to_string()).unwrap();
}

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut all_met = true;

    // 1. Event → SSE subscriber, 50 runs at once. Each run's first call waits for an approval
    //    until every run has its subscriber, so the runs then race with all streams open.
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"approval_timeout_seconds": 600}));
    sandbox.write("notes.txt", "a note\n");
    let script = sandbox.project.join("replay.json");
    reading_script(&script, ITERATIONS, true);
    let served = Served::start(
        &sandbox,
        &["--provider", "replay", "--replay", script.to_str().unwrap(), "--max-concurrent-runs", "50"],
    );
    let runs =
        futures_util::future::join_all((0..concurrent_runs()).map(|n| served.start_run(format!("run {n}")))).await;
    let (approvals, mut asked) = tokio::sync::mpsc::unbounded_channel();
    let started = Instant::now();
    let cpu_before = served.cpu_seconds();
    let answer = async {
        let mut waiting = Vec::new();
        while waiting.len() < runs.len() {
            waiting.push(asked.recv().await.unwrap());
        }
        futures_util::future::join_all(waiting.iter().map(|(run, approval)| {
            served
                .client
                .post(format!("{}/api/runs/{run}/approvals/{approval}", served.base))
                .bearer_auth(&served.token)
                .json(&json!({"decision": "allow"}))
                .send()
        }))
        .await;
    };
    let (streams, ()) = tokio::join!(
        futures_util::future::join_all(runs.iter().map(|run| served.stream(run, Some(&approvals)))),
        answer
    );
    let wall = started.elapsed();
    let cpu = served.cpu_seconds() - cpu_before;
    let mut latencies: Vec<f64> = Vec::new();
    let mut before_subscribed = 0;
    for (events, subscribed) in &streams {
        assert_eq!(events.last().map(|(event, _)| event["type"].clone()), Some(json!("run_completed")));
        for (event, arrived) in events {
            let emitted = chrono::DateTime::parse_from_rfc3339(event["timestamp"].as_str().unwrap()).unwrap();
            let emitted = emitted.with_timezone(&chrono::Utc);
            if emitted < *subscribed {
                before_subscribed += 1;
                continue;
            }
            latencies.push((*arrived - emitted).num_microseconds().unwrap() as f64 / 1000.0);
        }
    }
    latencies.sort_by(f64::total_cmp);
    let p99 = percentile(&latencies, 0.99);
    let met = p99 <= 20.0;
    all_met &= met;
    println!(
        "1. event emitted -> SSE subscriber, {} runs x {ITERATIONS} iterations at once ({} events after their \
         subscriber connected, {before_subscribed} before; {:.2} s wall, odek serve {cpu:.2} CPU s): p50 {:.2} ms, p99 {p99:.2} ms, max {:.2} ms \
         (target p99 <= 20 ms: {})",
        concurrent_runs(),
        latencies.len(),
        wall.as_secs_f64(),
        percentile(&latencies, 0.5),
        latencies.last().unwrap(),
        verdict(met)
    );

    drop(served);
    if events_only() {
        return;
    }

    // 3. Resident memory per idle finished run.
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({}));
    sandbox.write("notes.txt", "a note\n");
    let script = sandbox.project.join("replay.json");
    reading_script(&script, ITERATIONS, false);
    let served = Served::start(
        &sandbox,
        &["--provider", "replay", "--replay", script.to_str().unwrap(), "--max-concurrent-runs", "50"],
    );
    let warm =
        futures_util::future::join_all((0..CONCURRENT_RUNS).map(|n| served.start_run(format!("warm {n}")))).await;
    futures_util::future::join_all(warm.iter().map(|run| served.stream(run, None))).await;
    let before = served.resident_kib();
    for batch in 0..IDLE_RUNS / CONCURRENT_RUNS {
        let runs = futures_util::future::join_all(
            (0..CONCURRENT_RUNS).map(|n| served.start_run(format!("idle run {batch}-{n}"))),
        )
        .await;
        futures_util::future::join_all(runs.iter().map(|run| served.stream(run, None))).await;
    }
    let after = served.resident_kib();
    let per_run = after.saturating_sub(before) as f64 / IDLE_RUNS as f64;
    let met = per_run <= 256.0;
    all_met &= met;
    println!(
        "3. resident memory per idle finished run ({IDLE_RUNS} runs of {ITERATIONS} iterations): {per_run:.1} KiB \
         ({before} KiB -> {after} KiB; target <= 256 KiB: {})",
        verdict(met)
    );
    drop(served);

    // 2. POST /api/runs -> the run's first model request.
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let replies = (0..=FIRST_REQUEST_RUNS)
        .map(|_| {
            let arrivals = Arc::clone(&arrivals);
            Reply::responding(move |_| {
                arrivals.lock().unwrap().push(Instant::now());
                Reply::text("ok")
            })
        })
        .collect();
    let model = ScriptedServer::start(replies);
    let sandbox = Sandbox::new();
    sandbox.configure(&model.base_url(), false);
    let served = Served::start(&sandbox, &[]);
    let mut delays: Vec<f64> = Vec::new();
    for n in 0..=FIRST_REQUEST_RUNS {
        let sent = Instant::now();
        let run = served.start_run(format!("first request {n}")).await;
        served.stream(&run, None).await;
        let arrived = arrivals.lock().unwrap()[n];
        // The first run warms the process (its TLS roots, its caches): not counted.
        if n > 0 {
            delays.push(arrived.duration_since(sent).as_secs_f64() * 1000.0);
        }
    }
    delays.sort_by(f64::total_cmp);
    let median = percentile(&delays, 0.5);
    let met = median <= 10.0;
    all_met &= met;
    println!(
        "2. POST /api/runs -> first model request ({FIRST_REQUEST_RUNS} runs one after another): median {median:.2} ms, \
         p90 {:.2} ms, max {:.2} ms (target <= 10 ms: {})",
        percentile(&delays, 0.9),
        delays.last().unwrap(),
        verdict(met)
    );
    println!("{}", if all_met { "all targets met" } else { "SOME TARGETS MISSED" });
}
