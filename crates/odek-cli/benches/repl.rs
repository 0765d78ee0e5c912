//! REPL benchmark (issue 16), both measures in one invocation:
//!
//! 1. Start to first prompt: wall time from spawning `odek repl` on a pseudo-terminal to its
//!    prompt appearing, with three stdio MCP servers configured (target ≤ 30 ms; the servers
//!    start with the first turn, not before the prompt), and with none.
//! 2. Per-turn loop overhead next to `odek run`'s: the same replayed turn of 90 iterations (89
//!    `read_file` calls, then an answer) and of 1 iteration, as `odek run` processes and as turns
//!    of one scripted `odek repl` (a line written, its answer read); the difference divided by 89
//!    is the loop's cost per iteration in each face, fixed costs (process start, setup) cancelled.
//!    The REPL saves its session after every step, as `odek run --session` does (two fsyncs and
//!    a rename each, as spec §10.1 has them), so `odek run` is measured both ways: the target is
//!    the REPL within 10 % of `odek run --session`, doing the same work; plain `odek run`, which
//!    persists nothing, shows what the saves cost. Runs interleave so load hits all alike.
//!
//! Run: `cargo bench -p odek-cli --bench repl`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/run_support/mod.rs"]
mod run_support;
mod turn_support;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use run_support::Sandbox;
use serde_json::{Value, json};
use turn_support::{LONG_TURN, long_and_short_scripts, median, per_iteration, report, run_ms};

const PROMPT_RUNS: usize = 30;
const TURN_ROUNDS: usize = 15;

fn main() {
    let bench = Sandbox::new();
    std::fs::write(bench.project.join("f.txt"), "a small file\n").unwrap();

    for servers in [3, 0] {
        configure(&bench, servers);
        let mut samples: Vec<f64> = (0..=PROMPT_RUNS).map(|_| first_prompt_ms(&bench)).collect();
        samples.remove(0);
        report(&format!("odek repl → first prompt, {servers} stdio MCP servers, {PROMPT_RUNS} runs"), samples);
    }

    configure(&bench, 0);
    let (long, short) = long_and_short_scripts(&bench.project);
    // Each REPL turn starts a fresh conversation (`/new`), so every turn replays its script from
    // the start and a long conversation's trimming never enters the figure; the `/new` costs the
    // short and the long turn alike and cancels out of the difference.
    let mut repl_short_face = Repl::start(&bench, &short);
    let mut repl = Repl::start(&bench, &long);
    let (mut run_samples, mut saved_samples, mut repl_samples) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..=TURN_ROUNDS {
        let run_short = run_ms(&bench, &short, false);
        let run_long = run_ms(&bench, &long, false);
        let saved_short = run_ms(&bench, &short, true);
        let saved_long = run_ms(&bench, &long, true);
        let repl_short = repl_short_face.turn_ms();
        let repl_long = repl.turn_ms();
        if round > 0 {
            run_samples.push(per_iteration(run_long, run_short));
            saved_samples.push(per_iteration(saved_long, saved_short));
            repl_samples.push(per_iteration(repl_long, repl_short));
        }
    }
    repl.finish();
    repl_short_face.finish();
    let run_median = median(&mut run_samples);
    let saved_median = median(&mut saved_samples);
    let repl_median = median(&mut repl_samples);
    for (face, samples) in
        [("odek run", run_samples), ("odek run --session", saved_samples), ("odek repl", repl_samples)]
    {
        report(
            &format!("{face} loop overhead per iteration ({LONG_TURN}-iteration turn, {TURN_ROUNDS} rounds)"),
            samples,
        );
    }
    println!("repl / run --session: {:.2} (target ≤ 1.10)", repl_median / saved_median);
    println!("repl / run: {:.2}", repl_median / run_median);
}

fn configure(bench: &Sandbox, servers: usize) {
    let fixture = odek_test_support::fixture_server();
    let servers: serde_json::Map<String, Value> =
        (1..=servers).map(|n| (format!("fixture{n}"), json!({"command": fixture, "auto_approve": true}))).collect();
    bench.global_config(&json!({"provider": "replay", "mcp_servers": servers}));
}

/// Spawn to `odek> ` on a fresh terminal, then Ctrl-D.
fn first_prompt_ms(bench: &Sandbox) -> f64 {
    let size = nix::pty::Winsize { ws_row: 40, ws_col: 200, ws_xpixel: 0, ws_ypixel: 0 };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    let slave = File::from(pty.slave);
    let mut master = File::from(pty.master);
    let mut command = bench.command(&["repl", "--quiet"]);
    command
        .env("TERM", "xterm")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    drop(command);
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 4096];
    while !seen.windows(6).any(|window| window == b"odek> ") {
        assert!(started.elapsed() < Duration::from_secs(30), "no prompt");
        let read = master.read(&mut buffer).unwrap();
        seen.extend_from_slice(&buffer[..read]);
    }
    let elapsed = started.elapsed();
    master.write_all(b"\x04").unwrap();
    assert!(child.wait().unwrap().success());
    elapsed.as_secs_f64() * 1000.0
}

/// A scripted `odek repl`: a line in, its answer out.
struct Repl {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Repl {
    fn start(bench: &Sandbox, replay: &Path) -> Repl {
        let mut child = bench
            .command(&["repl", "--quiet", "--replay", replay.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Repl { child, stdin, stdout }
    }

    fn turn_ms(&mut self) -> f64 {
        let started = Instant::now();
        self.stdin.write_all(b"/new\ngo\n").unwrap();
        self.stdin.flush().unwrap();
        let mut answer = String::new();
        while answer != "done\n" {
            answer.clear();
            assert!(self.stdout.read_line(&mut answer).unwrap() > 0, "the REPL ended before its answer");
        }
        started.elapsed().as_secs_f64() * 1000.0
    }

    fn finish(mut self) {
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
    }
}
