//! Start-up benchmark (issue 3): wall time from spawning `odek run` to the first chat request
//! arriving at the model endpoint, with three stdio MCP servers configured (target ≤ 20 ms; the
//! servers start concurrently). The endpoint is the scripted OpenAI-compatible server on
//! 127.0.0.1; the MCP servers are the release-built fixture server.
//!
//! Run: `cargo bench -p odek-cli --bench startup`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/run_support/mod.rs"]
mod run_support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use run_support::Sandbox;

use odek_test_support::openai::{Reply, ScriptedServer};
use serde_json::json;

const RUNS: usize = 30;

fn server_count() -> usize {
    std::env::var("STARTUP_SERVERS").ok().and_then(|v| v.parse().ok()).unwrap_or(3)
}

fn main() {
    let sandbox = Sandbox::new();
    let fixture = odek_test_support::fixture_server();
    let server = ScriptedServer::start(Vec::new());
    let servers: serde_json::Map<String, serde_json::Value> = (1..=server_count())
        .map(|n| (format!("fixture{n}"), json!({"command": fixture, "auto_approve": true})))
        .collect();
    sandbox.global_config(&json!({"base_url": server.base_url(), "mcp_servers": servers}));

    let mut samples = Vec::with_capacity(RUNS);
    for run in 0..=RUNS {
        server.push(Reply::text("done"));
        let started = Instant::now();
        let mut child =
            sandbox.command(&["run", "--quiet", "go"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        server.wait_for_requests(run + 1, Duration::from_secs(30));
        let elapsed = started.elapsed();
        assert!(child.wait().unwrap().success());
        if run > 0 {
            samples.push(elapsed.as_secs_f64() * 1000.0);
        }
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "odek run → first model request, {} stdio MCP servers, {RUNS} runs: best {:.1} ms, median {:.1} ms, worst {:.1} ms",
        server_count(),
        samples[0],
        samples[RUNS / 2],
        samples[RUNS - 1]
    );
}
