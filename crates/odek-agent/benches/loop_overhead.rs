//! Loop overhead benchmark (issue 3): the agent loop with an instant in-process provider and a

//! no-op tool, so what is measured is the loop itself — framing, wrapping, redaction, hints,
//! trimming, bookkeeping — not a model or a tool.
//!
//! Run: `cargo bench -p odek-agent --bench loop_overhead`
//! Reports the mean loop overhead per iteration at 90 iterations (target ≤ 1 ms), the cost of the
//! event stream (issue 4) and of liveness tracking with heartbeats (issue 17: ≤ 2 %), and
//! resident memory across a 1,000-iteration run with trimming on (target: flat).

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use odek_agent::liveness::{Liveness, Phase, spawn_heartbeat};
use odek_agent::observer::{LoopObserver, SilentObserver};
use odek_agent::run::{Agent, LoopSettings, ToolSet};
use odek_agent::tool::{Tool, ToolContext, ToolError, ToolOutcome};
use odek_danger::DangerPolicy;
use odek_llm::{
    BoxFuture, ChatRequest, ChatResponse, LlmError, Message, Provider, ReplayProvider, ReplayScript, StreamObserver,
    Thinking, ToolCall, ToolDefinition, Usage,
};
use tokio_util::sync::CancellationToken;

/// Answers with one tool call per turn until `turns` turns, then a final answer.
struct InstantProvider {
    turns: usize,
    calls: AtomicUsize,
}

impl Provider for InstantProvider {
    fn id(&self) -> &str {
        "instant"
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        _observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        let n = if request.side_call { 0 } else { self.calls.fetch_add(1, Ordering::Relaxed) };
        let mut message = Message::assistant(if request.side_call { "digest of earlier work" } else { "" });
        if !request.side_call && n + 1 < self.turns {
            message.tool_calls = vec![ToolCall::new(format!("c{n}"), "noop", format!("{{\"n\":{n}}}"))];
        } else if !request.side_call {
            message.content = "done".to_owned();
        }
        Box::pin(
            async move { Ok(ChatResponse { message, usage: Usage::new(100, 10), finish_reason: None, model: None }) },
        )
    }
}

/// Returns a fixed 1 KiB of text as if read from a file.
struct NoopTool;

impl Tool for NoopTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "noop".into(),
            description: "does nothing".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn call<'a>(&'a self, _arguments: &'a str, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async { Ok(ToolOutcome::untrusted("x".repeat(1024), "/bench/file")) })
    }
}

fn agent(turns: usize, context_window: Option<u64>) -> Agent {
    Agent {
        provider: Arc::new(InstantProvider { turns, calls: AtomicUsize::new(0) }),
        tools: ToolSet::new(vec![Arc::new(NoopTool)], None, Arc::new(|_: &str| true)),
        settings: LoopSettings {
            model: "bench".into(),
            thinking: Thinking::Default,
            stream: false,
            max_iterations: u32::try_from(turns).unwrap_or(u32::MAX),
            max_tool_parallel: 4,
            compaction: true,
            context_window,
            strict: false,
        },
        tool_context: ToolContext::new(PathBuf::from("."), PathBuf::from("/nonexistent"), DangerPolicy::default()),
        observer: Arc::new(SilentObserver),
        gate: None,
        checkpoint: None,
        budget: odek_agent::budget::Budget::unlimited(),
        finish: odek_agent::finish::FinishGates::default(),
    }
}

fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmRSS:").map(|rest| rest.trim().trim_end_matches(" kB").trim().parse().unwrap_or(0))
            })
        })
        .unwrap_or(0)
}

const RUNS: usize = 40;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A replay script (docs/REPLAY.md) of `turns` turns: a no-op call each, then an answer.
fn replay_script(turns: usize) -> ReplayScript {
    let mut script = Vec::with_capacity(turns);
    for n in 0..turns - 1 {
        script.push(serde_json::json!({"tool_calls": [{"name": "noop", "arguments": {"n": n}}],
            "usage": {"input_tokens": 100, "output_tokens": 10}}));
    }
    script.push(serde_json::json!({"content": "done"}));
    let text = serde_json::json!({"schema": "odek.replay/v1", "turns": script}).to_string();
    ReplayScript::parse(&text).unwrap()
}

/// One 90-iteration run answered by the replay provider, as `odek run --provider replay`
/// would be; milliseconds per iteration.
fn timed_run(
    runtime: &tokio::runtime::Runtime,
    cancel: &CancellationToken,
    script: &ReplayScript,
    observer: Option<Arc<dyn LoopObserver>>,
) -> f64 {
    timed_run_tracked(runtime, cancel, script, observer, Liveness::off())
}

/// [`timed_run`] with the run's liveness tracked by `liveness`.
fn timed_run_tracked(
    runtime: &tokio::runtime::Runtime,
    cancel: &CancellationToken,
    script: &ReplayScript,
    observer: Option<Arc<dyn LoopObserver>>,
    liveness: Liveness,
) -> f64 {
    let mut agent = agent(90, None);
    agent.tool_context.liveness = liveness;
    agent.provider = Arc::new(ReplayProvider::from_script("bench.replay.json", script.clone()));
    if let Some(observer) = observer {
        agent.observer = observer;
    }
    let mut messages = vec![Message::system("identity ".repeat(200)), Message::user("task")];
    let started = Instant::now();
    let outcome = runtime.block_on(agent.run(&mut messages, cancel)).unwrap();
    assert_eq!(outcome.iterations, 90);
    started.elapsed().as_secs_f64() * 1000.0 / 90.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let cancel = CancellationToken::new();

    // Overhead at 90 iterations with the instant provider: the loop alone.
    let mut overhead = Vec::new();
    for _ in 0..RUNS {
        let mut agent = agent(90, None);
        let mut messages = vec![Message::system("identity ".repeat(200)), Message::user("task")];
        let started = Instant::now();
        let outcome = runtime.block_on(agent.run(&mut messages, &cancel)).unwrap();
        assert_eq!(outcome.iterations, 90);
        overhead.push(started.elapsed().as_secs_f64() * 1000.0 / 90.0);
    }
    println!("loop overhead at 90 iterations: median {:.3} ms/iteration ({RUNS} runs)", median(overhead));

    // Issue 4: the replay provider and the no-op tool, without events and with the event stream
    // on a real file (fsync per event on the writer thread). The two kinds of run alternate, so
    // a disturbance of the machine hits both alike; throughput with events must stay ≥ 90%.
    let dir = tempfile::tempdir().unwrap();
    let script = replay_script(90);
    let mut without = Vec::new();
    let mut with_events = Vec::new();
    let mut sink_rates = Vec::new();
    for run in 0..RUNS {
        without.push(timed_run(&runtime, &cancel, &script, None));
        let path = dir.path().join(format!("events-{run}.jsonl"));
        let sink = odek_agent::events::open_sink(path.to_str().unwrap()).unwrap();
        let emitter =
            odek_agent::events::EventEmitter::start(sink, odek_agent::events::RunId::generate().unwrap(), false)
                .unwrap();
        let stream = Arc::new(odek_agent::events::EventStream::new(
            emitter,
            std::path::Path::new("."),
            std::path::Path::new("/nonexistent"),
            Arc::new(odek_mcp::StderrObserver),
        ));
        let started = Instant::now();
        with_events.push(timed_run(&runtime, &cancel, &script, Some(Arc::clone(&stream) as Arc<dyn LoopObserver>)));
        let dropped = stream.close();
        let written = std::fs::read_to_string(&path).unwrap().lines().count() as u64;
        sink_rates.push((written + dropped, written as f64 / started.elapsed().as_secs_f64(), dropped));
    }
    let (without, with_events) = (median(without), median(with_events));
    let (events, _, dropped) = sink_rates[0];
    let rates = median(sink_rates.iter().map(|rate| rate.1).collect());
    println!("replay loop at 90 iterations: median {without:.3} ms/iteration ({RUNS} runs)");
    println!(
        "with --events-jsonl (fsync per event): median {with_events:.3} ms/iteration = {:.0}% of the loop's throughput without events; {events} events per run, {dropped} dropped; sink sustained {rates:.0} events/s (median, until the last fsync)",
        100.0 * without / with_events,
    );

    // Issue 17: the same runs with the event stream, without liveness tracking and with it
    // (phases, call ids, progress notes) plus the heartbeat task — every 1 s, the shortest
    // `events.heartbeat_seconds`, and every 100 µs as a stress of the emission itself.
    // Alternating; throughput with heartbeats must stay ≥ 98% of the stream without them.
    let stream_at = |path: &std::path::Path| {
        let sink = odek_agent::events::open_sink(path.to_str().unwrap()).unwrap();
        let emitter =
            odek_agent::events::EventEmitter::start(sink, odek_agent::events::RunId::generate().unwrap(), false)
                .unwrap();
        Arc::new(odek_agent::events::EventStream::new(
            emitter,
            std::path::Path::new("."),
            std::path::Path::new("/nonexistent"),
            Arc::new(odek_mcp::StderrObserver),
        ))
    };
    let (mut plain, mut tracked, mut stressed, mut beats) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for run in 0..RUNS {
        for (kind, every) in
            [(0, None), (1, Some(std::time::Duration::from_secs(1))), (2, Some(std::time::Duration::from_micros(100)))]
        {
            let path = dir.path().join(format!("liveness-{run}-{kind}.jsonl"));
            let stream = stream_at(&path);
            let liveness = if every.is_some() { Liveness::new(Phase::Model) } else { Liveness::off() };
            let heartbeat = every.and_then(|every| {
                let _entered = runtime.enter();
                stream.track_liveness(&liveness);
                spawn_heartbeat(&liveness, &stream, every)
            });
            let observer = Some(Arc::clone(&stream) as Arc<dyn LoopObserver>);
            let per_iteration = timed_run_tracked(&runtime, &cancel, &script, observer, liveness);
            drop(heartbeat);
            stream.close();
            match kind {
                0 => plain.push(per_iteration),
                1 => tracked.push(per_iteration),
                _ => {
                    stressed.push(per_iteration);
                    let text = std::fs::read_to_string(&path).unwrap();
                    beats += text.lines().filter(|line| line.contains("\"run_heartbeat\"")).count();
                }
            }
        }
    }
    let (plain, tracked, stressed) = (median(plain), median(tracked), median(stressed));
    println!(
        "with events, liveness off: median {plain:.4} ms/iteration; tracked + heartbeat every 1 s: {tracked:.4} ms/iteration = {:.1}% of the throughput; heartbeat every 100 µs: {stressed:.4} ms/iteration = {:.1}% ({beats} heartbeats in {RUNS} runs)",
        100.0 * plain / tracked,
        100.0 * plain / stressed,
    );

    // Memory across 1,000 iterations with trimming on (a 32k-token window).
    let mut agent = agent(1000, Some(32_768));
    let mut messages = vec![Message::system("identity"), Message::user("task")];
    let before = resident_kib();
    let started = Instant::now();
    let outcome = runtime.block_on(agent.run(&mut messages, &cancel)).unwrap();
    assert_eq!(outcome.iterations, 1000);
    println!(
        "1,000 iterations with trimming: {:.3} ms/iteration, {} messages kept, RSS {} KiB before, {} KiB after",
        started.elapsed().as_secs_f64() * 1000.0 / 1000.0,
        messages.len(),
        before,
        resident_kib()
    );
}
