//! Proactive trimming and compaction through the loop (spec `loop-and-sessions.md` §7.3–§7.4).

mod loop_support;

use std::sync::Arc;

use loop_support::*;
use odek_agent::tool::ToolOutcome;
use odek_llm::Role;
use tokio_util::sync::CancellationToken;

fn big_tool() -> Arc<dyn odek_agent::tool::Tool> {
    FnTool::new("big", |args| Box::pin(async move { Ok(ToolOutcome::text(format!("{args}{}", "z".repeat(1800)))) }))
}

fn run_calls(n: usize) -> Vec<Result<odek_llm::ChatResponse, odek_llm::LlmError>> {
    let mut answers: Vec<_> = (0..n).map(|i| calls(&[(&format!("c{i}"), "big", &format!("{{\"n\":{i}}}"))])).collect();
    answers.push(answer("done"));
    answers
}

#[tokio::test]
async fn over_budget_requests_are_trimmed_with_a_cumulative_warning() {
    let provider = QueueProvider::new(run_calls(12));
    let mut settings = settings(20);
    settings.context_window = Some(4000);
    settings.compaction = false;
    let mut agent = agent(Arc::clone(&provider), vec![big_tool()], settings);
    let mut messages = start();
    agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    let last = provider.seen().last().unwrap().messages.clone();
    // The warning is upserted after the trim (spec §7.3 step 4), so it is not part of the fit.
    let without_warning: Vec<_> =
        last.iter().filter(|m| !m.content.starts_with("[Context trimmed:")).cloned().collect();
    let estimate = odek_agent::run::estimate_messages_tokens(&without_warning);
    assert!(estimate <= 3000, "request of {estimate} tokens exceeds 75% of the window");
    assert_eq!(last[0].content, "identity");
    let warning = last.iter().find(|m| m.content.starts_with("[Context trimmed:")).expect("warning");
    assert!(warning.content.contains("tool output(s) truncated"), "{}", warning.content);
    assert!(warning.content.contains("prior message group(s) dropped"), "{}", warning.content);
    // Right before the latest user message, which is the task.
    let at = last.iter().position(|m| m.content.starts_with("[Context trimmed:")).unwrap();
    assert_eq!(last[at + 1].content, "do the task");
    // Never an orphan tool message.
    for (index, message) in last.iter().enumerate() {
        if message.role == Role::Tool {
            let owner = last[..index].iter().rev().find(|m| m.role != Role::Tool).unwrap();
            assert!(owner.tool_calls.iter().any(|c| Some(&c.id) == message.tool_call_id.as_ref()));
        }
    }
}

#[tokio::test]
async fn dropped_groups_are_compacted_into_a_wrapped_digest() {
    let provider = QueueProvider::new(run_calls(12));
    provider.side_answers.lock().unwrap().extend((0..20).map(|i| answer(&format!("digest number {i}"))));
    let mut settings = settings(20);
    settings.context_window = Some(4000);
    let mut agent = agent(Arc::clone(&provider), vec![big_tool()], settings);
    let mut messages = start();
    agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    let seen = provider.seen();
    let side: Vec<_> = seen.iter().filter(|s| s.side_call).collect();
    assert!(!side.is_empty());
    assert!(side[0].messages[1].content.contains("[called tools: big]"));
    let last = seen.iter().rev().find(|s| !s.side_call).unwrap();
    let digests: Vec<_> =
        last.messages.iter().filter(|m| m.content.starts_with("[Compacted earlier context:")).collect();
    assert_eq!(digests.len(), 1);
    assert!(digests[0].content.contains("<untrusted_content_"));
    assert!(digests[0].content.contains("source=\"compaction\""));
    // Later digests extend the previous one.
    if side.len() > 1 {
        assert!(side[1].messages[1].content.starts_with("Previous digest:\ndigest number 0"));
    }
}
