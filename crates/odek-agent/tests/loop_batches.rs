//! The loop end to end in-process: batches, call order, failure outputs, wrappers, compression,
//! hints, survival mode, the iteration cap and cancellation (spec `loop-and-sessions.md` §1–§7).

mod loop_support;

use std::sync::Arc;

use loop_support::*;
use odek_agent::run::RunError;
use odek_agent::tool::{ToolError, ToolOutcome};
use odek_llm::{LlmError, Role};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn tool_messages(messages: &[odek_llm::Message]) -> Vec<&odek_llm::Message> {
    messages.iter().filter(|m| m.role == Role::Tool).collect()
}

#[tokio::test]
async fn results_keep_call_order_when_completions_arrive_out_of_order() {
    let first_may_finish = Arc::new(Notify::new());
    let gate = Arc::clone(&first_may_finish);
    let slow = FnTool::new("slow", move |_| {
        let gate = Arc::clone(&gate);
        Box::pin(async move {
            gate.notified().await;
            Ok(ToolOutcome::text("slow done"))
        })
    });
    let release = Arc::clone(&first_may_finish);
    let fast = FnTool::new("fast", move |_| {
        let release = Arc::clone(&release);
        Box::pin(async move {
            release.notify_one();
            Ok(ToolOutcome::text("fast done"))
        })
    });
    let provider = QueueProvider::new(vec![calls(&[("a", "slow", "{}"), ("b", "fast", "{}")]), answer("finished")]);
    let mut agent = agent(Arc::clone(&provider), vec![slow, fast], settings(5));
    let mut messages = start();
    let outcome = agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.answer, "finished");
    let tools = tool_messages(&messages);
    assert_eq!(tools[0].tool_call_id.as_deref(), Some("a"));
    assert!(tools[0].content.contains("slow done"));
    assert_eq!(tools[1].tool_call_id.as_deref(), Some("b"));
    assert!(tools[1].content.contains("fast done"));
    // The second request carries the framed results.
    let second = &provider.seen()[1].messages;
    assert!(second[3].content.starts_with("┌── TOOL RESULT: slow ["));
}

#[tokio::test]
async fn failures_become_the_exact_error_outputs() {
    let failing = FnTool::new("failing", |_| Box::pin(async { Err(ToolError::new("disk on fire")) }));
    let panicking = FnTool::new("panicking", |_| Box::pin(async { panic!("kaboom") }));
    let provider = QueueProvider::new(vec![
        calls(&[("1", "nope", "{}"), ("2", "failing", "{}"), ("3", "panicking", "{}")]),
        answer("done"),
    ]);
    let mut agent = agent(provider, vec![failing, panicking], settings(5));
    let mut messages = start();
    agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    let tools = tool_messages(&messages);
    assert!(tools[0].content.contains("\nerror: tool \"nope\" not found\n"), "{}", tools[0].content);
    assert!(tools[1].content.contains("\nerror: disk on fire\n"));
    assert!(tools[2].content.contains("\nerror: tool \"panicking\" panicked: kaboom\n"), "{}", tools[2].content);
}

/// A batch of one runs inline on the loop's task; its panic is contained the same way and the
/// run goes on with the next turn.
#[tokio::test]
async fn a_lone_panicking_call_is_contained_like_a_spawned_one() {
    let panicking = FnTool::new("panicking", |_| Box::pin(async { panic!("lone {}", "kaboom") }));
    let provider = QueueProvider::new(vec![calls(&[("1", "panicking", "{}")]), answer("still here")]);
    let mut agent = agent(provider, vec![panicking], settings(5));
    let mut messages = start();
    let outcome = agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.answer, "still here");
    let tools = tool_messages(&messages);
    assert!(tools[0].content.contains("\nerror: tool \"panicking\" panicked: lone kaboom\n"), "{}", tools[0].content);
}

#[tokio::test]
async fn empty_arguments_reach_the_tool_untouched() {
    let provider = QueueProvider::new(vec![calls(&[("1", "echo", "")]), answer("done")]);
    let mut agent = agent(provider, vec![echo_tool()], settings(5));
    let mut messages = start();
    agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    assert!(tool_messages(&messages)[0].content.contains("\necho:\n"));
}

#[tokio::test]
async fn missing_call_ids_get_synthetic_ones() {
    let provider = QueueProvider::new(vec![calls(&[("", "echo", "{}"), ("", "echo", "{}")]), answer("done")]);
    let mut agent = agent(provider, vec![echo_tool()], settings(5));
    let mut messages = start();
    agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    let ids: Vec<_> = tool_messages(&messages).iter().map(|m| m.tool_call_id.clone().unwrap()).collect();
    assert_eq!(ids, ["it1-call0", "it1-call1"]);
    assert_eq!(messages[2].tool_calls[1].id, "it1-call1");
}

#[tokio::test]
async fn external_output_is_wrapped_redacted_and_compressed() {
    let secret = format!("sk-{}", "a".repeat(40));
    let leak = secret.clone();
    let reader = FnTool::new("reader", move |_| {
        let body = format!("key={leak}\n{}", "y".repeat(10_000));
        Box::pin(async move { Ok(ToolOutcome::untrusted(body, "/tmp/file.txt")) })
    });
    let provider = QueueProvider::new(vec![calls(&[("1", "reader", "{}")]), answer("done")]);
    let mut agent = agent(provider, vec![reader], settings(5));
    let mut messages = start();
    agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    let content = &tool_messages(&messages)[0].content;
    assert!(!content.contains(&secret), "tool_output_secret_redacted_red");
    assert!(content.contains("[REDACTED]"));
    assert!(content.contains("<untrusted_content_"));
    assert!(content.contains("source=\"/tmp/file.txt\""));
    assert!(content.contains("bytes omitted — output was"));
    assert!(content.trim_end().ends_with("┘"));
}

#[tokio::test]
async fn a_third_failure_in_a_row_adds_a_recovery_hint() {
    let failing = FnTool::new("read_file", |_| Box::pin(async { Err(ToolError::new("no such file: x")) }));
    let provider = QueueProvider::new(vec![
        calls(&[("1", "read_file", "{\"path\":\"a\"}")]),
        calls(&[("2", "read_file", "{\"path\":\"b\"}")]),
        calls(&[("3", "read_file", "{\"path\":\"c\"}")]),
        answer("done"),
    ]);
    let mut agent = agent(Arc::clone(&provider), vec![failing], settings(10));
    let mut messages = start();
    agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    let hints: Vec<_> = messages.iter().filter(|m| m.role == Role::System && m.content.starts_with("⚠️")).collect();
    assert_eq!(hints.len(), 1);
    assert!(hints[0].content.starts_with("⚠️ Tool \"read_file\" cannot find the path"));
}

#[tokio::test]
async fn a_context_length_error_triggers_survival_and_consumes_an_iteration() {
    let provider = QueueProvider::new(vec![
        calls(&[("1", "echo", "{}")]),
        Err(LlmError::Status {
            endpoint: "http://x/v1/chat/completions".into(),
            status: 400,
            detail: "This model's maximum context length is 10 tokens".into(),
        }),
        answer("survived"),
    ]);
    let mut agent = agent(Arc::clone(&provider), vec![echo_tool()], settings(5));
    let mut messages = start();
    let outcome = agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.answer, "survived");
    assert_eq!(outcome.iterations, 3);
    let third = &provider.seen()[2].messages;
    assert!(third.iter().any(|m| m.content.starts_with("[Context trimmed to survive:")));
    assert!(third.last().unwrap().content.starts_with("[Context survival mode:"));
}

#[tokio::test]
async fn other_provider_errors_fail_with_the_iteration() {
    let provider = QueueProvider::new(vec![Err(LlmError::Status {
        endpoint: "http://x/v1/chat/completions".into(),
        status: 500,
        detail: "down".into(),
    })]);
    let mut agent = agent(provider, vec![], settings(5));
    let err = agent.run(&mut start(), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.to_string(), "iteration 1: http://x/v1/chat/completions: HTTP 500: down");
    assert_eq!(err.class(), "provider_unavailable");
}

#[tokio::test]
async fn the_iteration_cap_ends_with_a_partial_summary() {
    let provider = QueueProvider::new(vec![
        calls(&[("1", "echo", "{}")]),
        calls(&[("2", "echo", "{}")]),
        answer("did two echoes; nothing remains"),
    ]);
    let mut agent = agent(Arc::clone(&provider), vec![echo_tool()], settings(2));
    let mut messages = start();
    let outcome = agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.answer, "[Iteration budget reached — partial summary]\n\ndid two echoes; nothing remains");
    let seen = provider.seen();
    assert!(seen[2].side_call);
    assert!(seen[2].tools.is_empty());
}

#[tokio::test]
async fn the_iteration_cap_fails_when_the_summary_fails() {
    let provider = QueueProvider::new(vec![calls(&[("1", "echo", "{}")])]);
    let mut agent = agent(provider, vec![echo_tool()], settings(1));
    let err = agent.run(&mut start(), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.to_string(), "reached max iterations (1) without final answer");
}

#[tokio::test]
async fn a_cancelled_run_fails_with_context_canceled() {
    let provider = QueueProvider::new(vec![answer("never")]);
    let mut agent = agent(provider, vec![], settings(3));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = agent.run(&mut start(), &cancel).await.unwrap_err();
    assert!(matches!(err, RunError::Cancelled));
    assert_eq!(err.class(), "context_canceled");
}

#[tokio::test]
async fn ninety_iterations_run_to_a_final_answer() {
    let mut answers: Vec<_> = (0..89).map(|i| calls(&[(&format!("c{i}"), "echo", "{}")])).collect();
    answers.push(answer("ninety"));
    // Each echo has the same arguments: stall hints fire but never stop the run.
    let provider = QueueProvider::new(answers);
    let mut agent = agent(Arc::clone(&provider), vec![echo_tool()], settings(90));
    let mut messages = start();
    let outcome = agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    assert_eq!((outcome.answer.as_str(), outcome.iterations), ("ninety", 90));
    assert_eq!(outcome.usage.input_tokens, 900);
    assert_eq!(tool_messages(&messages).len(), 89);
}

/// With one call at a time, a call still waiting for its slot when the batch was cancelled
/// started anyway once the slot freed up, and ran its side effect after the stop.
#[tokio::test]
async fn a_call_waiting_for_its_slot_never_starts_once_the_batch_is_cancelled_red() {
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let stopper = FnTool::new("stopper", move |_| {
        let stop = stop.clone();
        Box::pin(async move {
            stop.cancel();
            Ok(ToolOutcome::text("stopped the run"))
        })
    });
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let marker = Arc::clone(&ran);
    let late = FnTool::new("late", move |_| {
        marker.store(true, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { Ok(ToolOutcome::text("ran late")) })
    });
    let provider = QueueProvider::new(vec![calls(&[("a", "stopper", "{}"), ("b", "late", "{}")]), answer("never")]);
    let mut one_at_a_time = settings(3);
    one_at_a_time.max_tool_parallel = 1;
    let mut agent = agent(provider, vec![stopper, late], one_at_a_time);
    let mut messages = start();
    let err = agent.run(&mut messages, &cancel).await.unwrap_err();
    assert!(matches!(err, RunError::Cancelled), "{err}");
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "the queued call ran after the cancellation");
}
