//! `artifact_read` verification benchmark (issue 5): reading a window of a 64 MiB artifact
//! re-hashes the whole file (read-time verification, `results-and-artifacts.md` §8), so the
//! cost of a read is the cost of one streaming SHA-256 pass. Target: ≥ 1 GB/s.
//!
//! Run: `cargo bench -p odek-agent --bench artifact_read`
//! Reports, for a 64 MiB file in the page cache: SHA-256 over memory (the hash alone), the
//! child's scan (one pass per file), the parent's validation (contract rules, one pass), and a
//! verified 64 KiB `artifact_read` (one pass), each as the median and the best of 15 runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use odek_agent::subagent::artifact_read::read_artifact;
use odek_agent::subagent::artifacts::{
    ArtifactRegistry, TaskId, create_artifact_root, scan_artifact_root, validate_task_artifacts,
};
use sha2::{Digest, Sha256};

const FILE_BYTES: usize = 64 * 1024 * 1024;
const RUNS: usize = 15;

fn gb_per_s(time: Duration) -> f64 {
    FILE_BYTES as f64 / time.as_secs_f64() / 1e9
}

/// Median and best run: on a shared machine the best run shows the code, the median the load.
fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let median = samples[samples.len() / 2];
    let best = samples[0];
    println!(
        "{label:<42} median {:>7.2} ms {:>5.2} GB/s   best {:>7.2} ms {:>5.2} GB/s",
        median.as_secs_f64() * 1e3,
        gb_per_s(median),
        best.as_secs_f64() * 1e3,
        gb_per_s(best)
    );
}

fn time_runs(mut run: impl FnMut()) -> Vec<Duration> {
    run();
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect()
}

fn main() {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path().canonicalize().unwrap();
    let root =
        create_artifact_root(&base.join("artifacts"), Some("bench"), &TaskId::parse("task-bench").unwrap()).unwrap();
    // Deterministic, incompressible-looking content (xorshift), written once and then read from
    // the page cache.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let content: Vec<u8> = (0..FILE_BYTES / 8)
        .flat_map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()
        })
        .collect();
    std::fs::write(root.join("big.log"), &content).unwrap();

    println!("artifact_read verification, {} MiB file, {RUNS} runs", FILE_BYTES / (1024 * 1024));
    report(
        "sha256 over memory (hash alone)",
        time_runs(|| {
            std::hint::black_box(Sha256::digest(&content));
        }),
    );

    let mut scanned = scan_artifact_root(&root);
    report(
        "child scan (lstat, open, one pass)",
        time_runs(|| {
            scanned = scan_artifact_root(&root);
        }),
    );
    assert_eq!(scanned.artifacts.len(), 1);

    let mut validated = validate_task_artifacts(&scanned.artifacts, Some(&root));
    report(
        "parent validation (20 rules, one pass)",
        time_runs(|| {
            validated = validate_task_artifacts(&scanned.artifacts, Some(&root));
        }),
    );
    assert_eq!(validated.valid.len(), 1);

    let registry = Arc::new(ArtifactRegistry::new());
    registry.begin_call().register_task(1, validated.valid);
    report(
        "artifact_read 64 KiB window (verified)",
        time_runs(|| {
            let outcome = read_artifact(&registry, r#"{"id":"big","offset":1048576,"limit":65536}"#);
            assert!(
                outcome.output.starts_with("artifact big "),
                "{}",
                &outcome.output[..200.min(outcome.output.len())]
            );
        }),
    );
    report(
        "artifact_read 256 KiB window at the end",
        time_runs(|| {
            let outcome = read_artifact(&registry, r#"{"id":"big","offset":66846720,"limit":262144}"#);
            assert!(outcome.output.starts_with("artifact big "));
        }),
    );
}
