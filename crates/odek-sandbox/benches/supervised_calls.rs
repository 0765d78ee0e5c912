//! Supervised metadata calls (issue 32's security review, item 4): what one `chmod` costs a
//! confined command when odek's supervisor answers it, and whether bursts of threads making them
//! at once all get through. The sandbox probe runs each measure unconfined and confined by the
//! default policy (workspace writable, `network: deny`); a `chmod` in the workspace is allowed,
//! so every confined one goes through the supervisor and succeeds.
//!
//! Run: `cargo bench -p odek-sandbox --bench supervised_calls` (`SUPERVISED_CALLS` sets the
//! calls of the single-thread loop, 20000 by default). Reports the median of five loops per side
//! (microseconds per call), and for each burst (threads × calls) how many calls failed and how
//! long it took. Nothing is asserted: a test checks the bursts (`many_threads_…` in
//! `tests/confinement.rs`); this only measures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use odek_sandbox::{Confinement, Limits, Network, Policy, Sandbox};

/// A scratch home holding the workspace (with `notes.txt`), a temp dir and `.odek`.
fn scene() -> (tempfile::TempDir, Policy) {
    let dir = tempfile::tempdir().unwrap();
    let home = std::fs::canonicalize(dir.path()).unwrap();
    for sub in [".odek", "work", "tmp"] {
        std::fs::create_dir_all(home.join(sub)).unwrap();
    }
    std::fs::write(home.join("work/notes.txt"), "notes").unwrap();
    let probe = odek_test_support::sandbox_probe();
    let policy = Policy {
        workspace: home.join("work"),
        temp_dir: home.join("tmp"),
        readable: vec![probe.parent().unwrap().to_path_buf()],
        writable: Vec::new(),
        protected: vec![home.join(".odek")],
        network: Network::Deny,
        allow_hosts: Vec::new(),
        limits: Limits::default(),
    };
    (dir, policy)
}

/// One probe run in `cwd`, confined by `sandbox` when given: its `ok …` line and how long the
/// whole run took.
async fn probe(sandbox: Option<&Sandbox>, cwd: &Path, args: &[&str]) -> (String, Duration) {
    let mut command = tokio::process::Command::new(odek_test_support::sandbox_probe());
    command.args(args).current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).kill_on_drop(true);
    let mut confinement: Option<Confinement> = sandbox.map(|sandbox| sandbox.confine(&mut command).unwrap());
    let started = Instant::now();
    let child = command.spawn().unwrap();
    if let Some(confinement) = &mut confinement {
        confinement.started().unwrap();
    }
    let output = tokio::time::timeout(Duration::from_secs(600), child.wait_with_output()).await.unwrap().unwrap();
    let elapsed = started.elapsed();
    if let Some(confinement) = confinement {
        confinement.finish();
    }
    (String::from_utf8_lossy(&output.stdout).trim().to_owned(), elapsed)
}

/// Microseconds per call of `chmod-loop <calls>`, from the probe's own timing (`ok N in X us`).
fn per_call(line: &str, calls: usize) -> f64 {
    let micros: f64 = line
        .strip_prefix("ok ")
        .and_then(|rest| rest.split(" in ").nth(1))
        .and_then(|rest| rest.strip_suffix(" us"))
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("unexpected probe answer: {line}"));
    micros / calls as f64
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    let calls: usize = std::env::var("SUPERVISED_CALLS").ok().and_then(|value| value.parse().ok()).unwrap_or(20_000);
    let (_dir, policy) = scene();
    let workspace: PathBuf = policy.workspace.clone();
    let sandbox = Sandbox::new(policy).unwrap();
    let calls_text = calls.to_string();
    let looped = ["chmod-loop", calls_text.as_str(), "notes.txt"];
    // Warm-up (page cache, the probe binary).
    probe(None, &workspace, &looped).await;
    probe(Some(&sandbox), &workspace, &looped).await;
    let (mut open, mut confined) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        open.push(per_call(&probe(None, &workspace, &looped).await.0, calls));
        confined.push(per_call(&probe(Some(&sandbox), &workspace, &looped).await.0, calls));
    }
    let (open, confined) = (median(&mut open), median(&mut confined));
    println!("chmod in the workspace, one thread, {calls} calls, median of 5:");
    println!("  unconfined: {open:.2} us per call");
    println!("  confined:   {confined:.2} us per call ({:.2} us more)", confined - open);
    for (threads, each) in [(70, 300), (200, 200)] {
        let args = ["chmod-threads", &threads.to_string(), &each.to_string(), "notes.txt"].map(str::to_owned);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (open_line, open_time) = probe(None, &workspace, &args).await;
        let (confined_line, confined_time) = probe(Some(&sandbox), &workspace, &args).await;
        println!("{threads} threads x {each} chmods:");
        println!("  unconfined: {open_line} in {:.1} ms", open_time.as_secs_f64() * 1000.0);
        println!("  confined:   {confined_line} in {:.1} ms", confined_time.as_secs_f64() * 1000.0);
    }
}
