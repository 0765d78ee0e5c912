//! The event stream as an observer: loop events and MCP events become `odek.event/v1` lines,
//! terminal output still gets MCP warnings and lines, and [`Fanout`] feeds several observers.

#![allow(clippy::unwrap_used)]

mod events_support;

use odek_contract::outcome::Outcome;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odek_agent::budget::{BudgetExceeded, BudgetValue, LimitName};
use odek_agent::events::{EventEmitter, EventStream, Fanout, args_sha256};
use odek_agent::observer::{CallResult, LoopEvent, LoopObserver, TrimMode};
use odek_llm::{StreamObserver, Usage};
use odek_mcp::{McpEvent, McpObserver};
use serde_json::{Value, json};

use events_support::*;

#[derive(Default)]
struct RecordingMcp {
    seen: Mutex<Vec<String>>,
}

impl McpObserver for RecordingMcp {
    fn event(&self, event: McpEvent) {
        self.seen.lock().unwrap().push(format!("event {event:?}"));
    }
    fn warning(&self, server: &str, text: &str) {
        self.seen.lock().unwrap().push(format!("warning {server} {text}"));
    }
    fn server_line(&self, server: &str, line: &str) {
        self.seen.lock().unwrap().push(format!("line {server} {line}"));
    }
}

fn stream(include_args: bool) -> (EventStream, MemorySink, Arc<RecordingMcp>, tempfile::TempDir) {
    let sink = MemorySink::default();
    let emitter = EventEmitter::start(Box::new(sink.clone()), run_id(), include_args).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mcp = Arc::new(RecordingMcp::default());
    let stream = EventStream::new(emitter, cwd.path(), &cwd.path().join(".odek"), mcp.clone());
    (stream, sink, mcp, cwd)
}

fn parsed(sink: &MemorySink) -> Vec<Value> {
    sink.lines().iter().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// The line without its timestamp, for whole-value comparison.
fn without_timestamp(mut value: Value) -> Value {
    value.as_object_mut().unwrap().remove("timestamp");
    value
}

#[test]
fn loop_events_map_to_v1_events() {
    let (stream, sink, _mcp, _cwd) = stream(false);
    let usage = Usage::new(10, 2);
    let arguments = r#"{"command":"FOO=1 /usr/bin/git status"}"#;
    stream.run_started("m", false, 5);
    stream.set_session_id("s1");
    stream.on_event(&LoopEvent::IterationStarted { iteration: 1 });
    stream.on_event(&LoopEvent::ModelResponded { iteration: 1, usage, totals: usage, tool_calls: 2 });
    stream.on_event(&LoopEvent::ToolCallStarted {
        iteration: 1,
        call_id: "it1-call0",
        tool: "shell",
        arguments,
        risk: None,
    });
    stream.on_event(&LoopEvent::ToolCallStarted {
        iteration: 1,
        call_id: "x",
        tool: "fs__read",
        arguments: "",
        risk: None,
    });
    stream.on_event(&LoopEvent::ToolCallFinished {
        iteration: 1,
        call_id: "it1-call0",
        tool: "shell",
        duration: Duration::from_millis(5),
        result: CallResult::Completed { output: "ok\n- artifact a", observed_chars: Some(90) },
        edit: None,
        artifacts: &[],
    });
    stream.on_event(&LoopEvent::ToolCallFinished {
        iteration: 1,
        call_id: "x",
        tool: "fs__read",
        duration: Duration::from_millis(6),
        result: CallResult::Failed { output: "error: \"secret detail\"" },
        edit: None,
        artifacts: &[],
    });
    stream.on_event(&LoopEvent::Warning { text: "careful" });
    stream.on_event(&LoopEvent::ContextTrimmed {
        iteration: 1,
        mode: TrimMode::Proactive,
        dropped_groups: 1,
        truncated_results: 0,
    });
    stream.on_event(&LoopEvent::SessionSaved { iteration: 1, message_count: 4 });
    stream.on_event(&LoopEvent::IterationCompleted { iteration: 1, totals: usage, tools_called: 2 });
    let exceeded = BudgetExceeded {
        limit_name: LimitName::Runtime,
        observed: BudgetValue::Count(31),
        limit: BudgetValue::Count(30),
    };
    stream.on_event(&LoopEvent::BudgetExceeded { iteration: 1, exceeded: &exceeded });
    stream.run_failed(Duration::from_millis(40), "execution_budget", Outcome::BudgetExceeded, None);
    stream.run_completed(Duration::from_millis(40), usage, Outcome::Success, None);
    assert_eq!(stream.close(), 0);

    let events: Vec<Value> = parsed(&sink).into_iter().map(without_timestamp).collect();
    let envelope = |event_type: &str, extra: Value| {
        let mut value = json!({"schema": "odek.event/v1", "type": event_type, "run_id": RUN_ID, "session_id": "s1"});
        value.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        value
    };
    let expected = vec![
        json!({"schema": "odek.event/v1", "type": "run_started", "run_id": RUN_ID,
               "data": {"max_iterations": 5, "model": "m", "sandbox": false}}),
        envelope(
            "tool_call_started",
            json!({"iteration": 1, "tool": "shell", "data": {
            "args_bytes": arguments.len(), "args_sha256": args_sha256(arguments), "call_id": "it1-call0",
            "args_summary": {"argv0": "git", "class": "safe"}}}),
        ),
        envelope(
            "tool_call_started",
            json!({"iteration": 1, "tool": "fs__read", "data": {
            "args_bytes": 0, "args_sha256": args_sha256(""), "call_id": "x"}}),
        ),
        envelope(
            "tool_call_completed",
            json!({"iteration": 1, "tool": "shell", "data": {
            "artifact_count": 1, "call_id": "it1-call0", "duration_ms": 5, "observed_chars": 90,
            "result_bytes": 15, "truncated": true}}),
        ),
        envelope(
            "tool_call_failed",
            json!({"iteration": 1, "tool": "fs__read", "data": {
            "call_id": "x", "duration_ms": 6, "error_class": "tool_error"}}),
        ),
        envelope(
            "context_trimmed",
            json!({"iteration": 1, "data": {
            "dropped_groups": 1, "mode": "proactive", "truncated_results": 0}}),
        ),
        envelope("session_saved", json!({"iteration": 1, "data": {"message_count": 4}})),
        envelope(
            "iteration_completed",
            json!({"iteration": 1, "data": {
            "input_tokens": 10, "output_tokens": 2, "tools_called": 2}}),
        ),
        envelope(
            "budget_exceeded",
            json!({"iteration": 1, "data": {
            "limit": 30, "limit_name": "runtime", "observed": 31}}),
        ),
        envelope(
            "run_failed",
            json!({"data": {"duration_ms": 40, "error_class": "execution_budget", "outcome": "budget_exceeded"}}),
        ),
        envelope(
            "run_completed",
            json!({"data": {"duration_ms": 40, "input_tokens": 10, "outcome": "success", "output_tokens": 2}}),
        ),
    ];
    assert_eq!(events, expected);
    assert!(!sink.lines().concat().contains("secret detail"));
}

#[test]
fn include_args_flag_reaches_tool_call_started() {
    let (stream, sink, _mcp, _cwd) = stream(true);
    stream.on_event(&LoopEvent::ToolCallStarted {
        iteration: 2,
        call_id: "c",
        tool: "plan",
        arguments: "{\"a\":1}",
        risk: None,
    });
    stream.close();
    assert_eq!(parsed(&sink)[0]["data"]["args"], "{\"a\":1}");
}

#[test]
fn mcp_events_are_emitted_and_still_reach_the_terminal() {
    let (stream, sink, mcp, _cwd) = stream(false);
    let observer: &dyn McpObserver = &stream;
    observer.event(McpEvent::ServerStarted {
        server: "fs".into(),
        tools: 2,
        duration_ms: 30,
        protocol_version: "2025-03-26".into(),
    });
    observer.event(McpEvent::ServerFailed { server: "web".into(), error_class: "spawn_failed" });
    observer.event(McpEvent::ServerRestarted { server: "fs".into(), restarts: 1, exit_status: None });
    observer.warning("fs", "slow");
    observer.server_line("fs", "hello");
    stream.close();

    let events: Vec<(String, Value)> = parsed(&sink)
        .into_iter()
        .map(|event| (event["type"].as_str().unwrap().to_owned(), event["data"].clone()))
        .collect();
    assert_eq!(
        events,
        vec![
            (
                "mcp_server_started".to_owned(),
                json!({"duration_ms": 30, "protocol_version": "2025-03-26", "server": "fs", "tools": 2})
            ),
            ("mcp_server_failed".to_owned(), json!({"error_class": "spawn_failed", "server": "web"})),
            ("mcp_server_restarted".to_owned(), json!({"restarts": 1, "server": "fs"})),
        ]
    );
    let seen = mcp.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[3..], ["warning fs slow".to_owned(), "line fs hello".to_owned()]);
}

#[derive(Default)]
struct Counting {
    events: Mutex<usize>,
    deltas: Mutex<String>,
}

impl StreamObserver for Counting {
    fn on_delta(&self, text: &str, _reasoning: bool) {
        self.deltas.lock().unwrap().push_str(text);
    }
}

impl LoopObserver for Counting {
    fn on_event(&self, _event: &LoopEvent<'_>) {
        *self.events.lock().unwrap() += 1;
    }
}

#[test]
fn fanout_feeds_every_observer() {
    let (stream, sink, _mcp, _cwd) = stream(false);
    let stream = Arc::new(stream);
    let terminal = Arc::new(Counting::default());
    let fanout = Fanout::new(vec![terminal.clone(), stream.clone()]);
    fanout.on_delta("hi", false);
    fanout.on_event(&LoopEvent::SessionSaved { iteration: 3, message_count: 9 });
    stream.close();
    assert_eq!(*terminal.events.lock().unwrap(), 1);
    assert_eq!(*terminal.deltas.lock().unwrap(), "hi");
    assert_eq!(parsed(&sink)[0]["type"], "session_saved");
}
