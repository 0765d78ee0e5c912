//! Finalization on a soft deadline (spec `loop-and-sessions.md` §6): once asked, no new batch
//! starts; the time-budget partial summary ends the run, or the time-budget error when the
//! summary side call fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod loop_support;

use loop_support::*;
use odek_agent::tool::ToolOutcome;
use odek_llm::LlmError;
use tokio_util::sync::CancellationToken;

/// A tool that asks the run to finalize, as the soft deadline would while it runs.
fn deadline_tool(finalize: &CancellationToken) -> std::sync::Arc<dyn odek_agent::tool::Tool> {
    let finalize = finalize.clone();
    FnTool::new("work", move |_| {
        finalize.cancel();
        Box::pin(async { Ok(ToolOutcome::text("worked")) })
    })
}

#[tokio::test]
async fn the_soft_deadline_ends_the_run_with_the_time_summary() {
    let finalize = CancellationToken::new();
    let provider =
        QueueProvider::new(vec![calls(&[("1", "work", "{}")]), answer("did one step"), calls(&[("2", "work", "{}")])]);
    let mut agent = agent(std::sync::Arc::clone(&provider), vec![deadline_tool(&finalize)], settings(10));
    let mut messages = start();
    let outcome = agent.run_until(&mut messages, &CancellationToken::new(), &finalize).await.unwrap();
    assert_eq!(outcome.answer, "[Time budget reached — partial summary]\n\ndid one step");
    assert_eq!(outcome.iterations, 1);
    let seen = provider.seen();
    assert_eq!(seen.len(), 2, "one loop call and the summary side call; no new batch");
    assert!(seen[1].tools.is_empty(), "the summary call is tool-less");
}

#[tokio::test]
async fn a_failed_summary_is_the_time_budget_error() {
    let finalize = CancellationToken::new();
    let provider = QueueProvider::new(vec![
        calls(&[("1", "work", "{}")]),
        Err(LlmError::Replay { path: "queue".into(), detail: "down".into() }),
    ]);
    let mut agent = agent(provider, vec![deadline_tool(&finalize)], settings(10));
    let mut messages = start();
    let error = agent.run_until(&mut messages, &CancellationToken::new(), &finalize).await.unwrap_err();
    assert_eq!(error.to_string(), "time budget reached after 1 iterations without final answer");
}
