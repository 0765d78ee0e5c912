//! `odek acp` benchmark (issue 33), every measure in one invocation, with the replay provider:
//!
//! 1. `session/prompt` to the session's first `session/update` (the first tool call of a turn),
//!    on a warm process and a new session each time (target ≤ 5 ms).
//! 2. Per-iteration overhead next to `odek run`'s: the same replayed turn of 90 iterations (89
//!    `read_file` calls, then the answer) and of 1 iteration, as `odek run --session` processes
//!    (an ACP session saves every step as `--session` runs do), as plain `odek run`, and as
//!    prompts of a new session of one `odek acp` each; (long − short) / 89 per face, rounds
//!    interleaved (target: ACP within 10 % of `odek run --session`).
//! 3. Resident memory of one `odek acp` holding 100 idle sessions, each in a directory of its own
//!    (target ≤ 100 MiB).
//! 4. 20 sessions running 10-iteration turns at once in one process: every update of each
//!    session arrives in order (each tool call before its result, results in call order, the
//!    answer last, before the turn's response), and the wall time.
//!
//! Run: `cargo bench -p odek-cli --bench acp`

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/run_support/mod.rs"]
mod run_support;
mod turn_support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Instant;

use run_support::Sandbox;
use serde_json::{Value, json};
use turn_support::{LONG_TURN, long_and_short_scripts, median, per_iteration, report, run_ms, script, turn};

const ROUNDS: usize = 15;
const IDLE_SESSIONS: usize = 100;
const CONCURRENT_SESSIONS: usize = 20;
const CONCURRENT_TURN: usize = 10;

fn main() {
    let bench = Sandbox::new();
    bench.global_config(&json!({"provider": "replay"}));
    std::fs::write(bench.project.join("f.txt"), "a small file\n").unwrap();
    let (long, short) = long_and_short_scripts(&bench.project);

    let mut acp_long = Acp::start(&bench, &long);
    let mut acp_short = Acp::start(&bench, &short);
    let (mut first, mut run, mut saved, mut acp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..=ROUNDS {
        let run_short = run_ms(&bench, &short, false);
        let run_long = run_ms(&bench, &long, false);
        let saved_short = run_ms(&bench, &short, true);
        let saved_long = run_ms(&bench, &long, true);
        let (_, acp_short_ms) = acp_short.turn(&bench.project);
        let (first_update, acp_long_ms) = acp_long.turn(&bench.project);
        if round > 0 {
            first.push(first_update);
            run.push(per_iteration(run_long, run_short));
            saved.push(per_iteration(saved_long, saved_short));
            acp.push(per_iteration(acp_long_ms, acp_short_ms));
        }
    }
    report(&format!("session/prompt → first session/update ({ROUNDS} turns, target ≤ 5 ms)"), first);
    let saved_median = median(&mut saved.clone());
    let run_median = median(&mut run.clone());
    let acp_median = median(&mut acp.clone());
    for (face, samples) in [("odek run", run), ("odek run --session", saved), ("odek acp", acp)] {
        report(&format!("{face} overhead per iteration ({LONG_TURN}-iteration turn, {ROUNDS} rounds)"), samples);
    }
    println!("acp / run --session: {:.2} (target ≤ 1.10)", acp_median / saved_median);
    println!("acp / run: {:.2}", acp_median / run_median);
    acp_long.finish();
    acp_short.finish();

    let mut idle = Acp::start(&bench, &short);
    let base = idle.rss_kib();
    for n in 0..IDLE_SESSIONS {
        let dir = bench.project.join(format!("idle-{n}"));
        std::fs::create_dir(&dir).unwrap();
        idle.new_session(&dir);
    }
    let rss = idle.rss_kib();
    println!(
        "{IDLE_SESSIONS} idle sessions: resident {:.1} MiB (process before them {:.1} MiB; {:.0} KiB per session; target ≤ 100 MiB)",
        rss as f64 / 1024.0,
        base as f64 / 1024.0,
        (rss - base) as f64 / IDLE_SESSIONS as f64
    );
    idle.finish();

    let concurrent = bench.project.join("concurrent.replay.json");
    std::fs::write(&concurrent, script(&turn(CONCURRENT_TURN))).unwrap();
    let mut many = Acp::start(&bench, &concurrent);
    let sessions: Vec<String> = (0..CONCURRENT_SESSIONS).map(|_| many.new_session(&bench.project)).collect();
    let started = Instant::now();
    let ids: Vec<u64> = sessions.iter().map(|session| many.send_prompt(session)).collect();
    let mut updates: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut pending: Vec<u64> = ids.clone();
    while !pending.is_empty() {
        let message = many.next();
        if message["method"] == "session/update" {
            let session = message["params"]["sessionId"].as_str().unwrap().to_owned();
            updates.entry(session).or_default().push(message["params"]["update"].clone());
        } else if let Some(id) = message["id"].as_u64() {
            assert!(message.get("result").is_some(), "a turn failed: {message}");
            let session = &sessions[ids.iter().position(|sent| *sent == id).unwrap()];
            check_order(session, updates.get(session).map(Vec::as_slice).unwrap_or_default());
            pending.retain(|waiting| *waiting != id);
        }
    }
    println!(
        "{CONCURRENT_SESSIONS} sessions × {CONCURRENT_TURN}-iteration turns at once: {:.1} ms wall, every update in order",
        started.elapsed().as_secs_f64() * 1000.0
    );
    many.finish();
}

/// A turn's updates in the order the turn made them: for each iteration its tool call, then its
/// result; then the answer.
fn check_order(session: &str, updates: &[Value]) {
    let kinds: Vec<&str> = updates
        .iter()
        .map(|update| update["sessionUpdate"].as_str().unwrap())
        .filter(|kind| *kind != "available_commands_update")
        .collect();
    let mut expected = Vec::new();
    for _ in 1..CONCURRENT_TURN {
        expected.extend(["tool_call", "tool_call_update"]);
    }
    expected.push("agent_message_chunk");
    assert_eq!(kinds, expected, "session {session}: updates out of order");
    let calls: Vec<&str> = updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "tool_call")
        .map(|update| update["toolCallId"].as_str().unwrap())
        .collect();
    let ends: Vec<&str> = updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "tool_call_update")
        .map(|update| update["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ends, "session {session}: results out of call order");
}

/// One `odek acp` driven over its pipes.
struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Acp {
    fn start(bench: &Sandbox, replay: &Path) -> Acp {
        let mut child = bench
            .command(&["acp", "--replay", replay.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut acp = Acp { child, stdin, stdout, next_id: 1 };
        let id = acp.send("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
        acp.response(id);
        acp
    }

    fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        id
    }

    fn next(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.stdout.read_line(&mut line).unwrap() > 0, "odek acp ended");
        serde_json::from_str(&line).unwrap()
    }

    fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.next();
            if message.get("method").is_none() && message["id"] == id {
                assert!(message.get("result").is_some(), "{message}");
                return message;
            }
        }
    }

    fn new_session(&mut self, cwd: &Path) -> String {
        let id = self.send("session/new", json!({"cwd": cwd, "mcpServers": []}));
        self.response(id)["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    fn send_prompt(&mut self, session: &str) -> u64 {
        self.send("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}))
    }

    /// A new session's turn: (ms to its first update, ms to the turn's response).
    fn turn(&mut self, cwd: &Path) -> (f64, f64) {
        let session = self.new_session(cwd);
        let started = Instant::now();
        let id = self.send_prompt(&session);
        let mut first = None;
        loop {
            let message = self.next();
            if message["method"] == "session/update"
                && message["params"]["sessionId"] == session.as_str()
                && message["params"]["update"]["sessionUpdate"] != "available_commands_update"
            {
                first.get_or_insert_with(|| started.elapsed().as_secs_f64() * 1000.0);
            } else if message.get("method").is_none() && message["id"] == id {
                assert!(message.get("result").is_some(), "{message}");
                let total = started.elapsed().as_secs_f64() * 1000.0;
                return (first.unwrap_or(total), total);
            }
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    fn finish(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}
