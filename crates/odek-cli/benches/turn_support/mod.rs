//! What the benches that time replayed turns share (`repl`, `acp`): the turn of `n` iterations,
//! its replay script, an `odek run` of it timed spawn to exit, and the report line.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use serde_json::{Value, json};

use crate::run_support::Sandbox;

/// Iterations of the long turn whose time, less the one-iteration turn's, gives the cost of
/// an iteration.
pub const LONG_TURN: usize = 90;

/// `long.replay.json` (a turn of [`LONG_TURN`] iterations) and `short.replay.json` (one
/// iteration), written in `dir`.
pub fn long_and_short_scripts(dir: &Path) -> (PathBuf, PathBuf) {
    let (long, short) = (dir.join("long.replay.json"), dir.join("short.replay.json"));
    std::fs::write(&long, script(&turn(LONG_TURN))).unwrap();
    std::fs::write(&short, script(&turn(1))).unwrap();
    (long, short)
}

/// One iteration's cost from the long and the short turn's times (milliseconds).
pub fn per_iteration(long: f64, short: f64) -> f64 {
    (long - short) / (LONG_TURN - 1) as f64
}

/// A turn of `iterations` replayed model answers: `read_file` calls of `f.txt`, then the answer
/// `done`.
pub fn turn(iterations: usize) -> Vec<Value> {
    let mut turns: Vec<Value> = (1..iterations)
        .map(|_| json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "f.txt"}}]}))
        .collect();
    turns.push(json!({"content": "done"}));
    turns
}

/// The `odek.replay/v1` script of `turns`.
pub fn script(turns: &[Value]) -> String {
    json!({"schema": "odek.replay/v1", "turns": turns}).to_string()
}

/// One `odek run` of the replay script (with `--session` when `saved`), spawn to exit.
pub fn run_ms(bench: &Sandbox, replay: &Path, saved: bool) -> f64 {
    let replay = replay.to_str().unwrap();
    let mut args = vec!["run", "--quiet", "--replay", replay, "go"];
    if saved {
        args.insert(1, "--session");
    }
    let started = Instant::now();
    let status = bench.command(&args).stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    assert!(status.success());
    started.elapsed().as_secs_f64() * 1000.0
}

pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// `what: best …, median …, worst …` of `samples` (milliseconds).
pub fn report(what: &str, mut samples: Vec<f64>) {
    let median = median(&mut samples);
    println!("{what}: best {:.3} ms, median {median:.3} ms, worst {:.3} ms", samples[0], samples[samples.len() - 1]);
}
