//! The batch approval gate (spec `loop-and-sessions.md` §11): one card per batch listing every
//! risky call; a denied batch runs nothing; "always" is remembered for the exact command.

#![allow(clippy::unwrap_used)]

mod loop_support;

use std::sync::{Arc, Mutex};

use loop_support::*;
use odek_agent::run::{ApprovalItem, BatchApprover, GateAnswer};
use odek_llm::{BoxFuture, Role};
use tokio_util::sync::CancellationToken;

struct ScriptedGate {
    answers: Mutex<Vec<GateAnswer>>,
    cards: Mutex<Vec<(Vec<String>, bool)>>,
}

impl BatchApprover for ScriptedGate {
    fn approve<'a>(&'a self, items: &'a [ApprovalItem], allow_always: bool) -> BoxFuture<'a, GateAnswer> {
        self.cards.lock().unwrap().push((items.iter().map(|item| item.risk.resource.clone()).collect(), allow_always));
        let answer = self.answers.lock().unwrap().remove(0);
        Box::pin(async move { answer })
    }
}

fn gate(answers: Vec<GateAnswer>) -> Arc<ScriptedGate> {
    Arc::new(ScriptedGate { answers: Mutex::new(answers), cards: Mutex::default() })
}

#[tokio::test]
async fn a_denied_batch_runs_nothing() {
    let risky = Arc::new(RiskyTool { ran: Mutex::default() });
    let provider = QueueProvider::new(vec![calls(&[("1", "fetch", "a"), ("2", "echo", "{}")]), answer("done")]);
    let mut agent = agent(provider, vec![Arc::clone(&risky) as _, echo_tool()], settings(5));
    let scripted = gate(vec![GateAnswer::Deny]);
    agent.gate = Some(Arc::clone(&scripted) as Arc<dyn BatchApprover>);
    let mut messages = start();
    agent.run(&mut messages, &CancellationToken::new()).await.unwrap();
    assert!(risky.ran.lock().unwrap().is_empty());
    let outputs: Vec<_> = messages.iter().filter(|m| m.role == Role::Tool).map(|m| m.content.clone()).collect();
    assert_eq!(outputs.len(), 2);
    assert!(outputs.iter().all(|o| o.contains("\nerror: batch approval denied\n")), "{outputs:?}");
    assert_eq!(scripted.cards.lock().unwrap()[0], (vec!["fetch a".to_owned()], true));
}

#[tokio::test]
async fn approved_calls_run_approved_and_always_is_remembered_per_command() {
    let risky = Arc::new(RiskyTool { ran: Mutex::default() });
    let provider = QueueProvider::new(vec![
        calls(&[("1", "fetch", "a"), ("2", "fetch", "b")]),
        calls(&[("3", "fetch", "a")]),
        calls(&[("4", "fetch", "c")]),
        answer("done"),
    ]);
    let mut agent = agent(provider, vec![Arc::clone(&risky) as _], settings(10));
    let scripted = gate(vec![GateAnswer::ApproveAlways, GateAnswer::Approve]);
    agent.gate = Some(Arc::clone(&scripted) as Arc<dyn BatchApprover>);
    agent.run(&mut start(), &CancellationToken::new()).await.unwrap();
    assert_eq!(*risky.ran.lock().unwrap(), [true, true, true, true]);
    let cards = scripted.cards.lock().unwrap();
    // "fetch a" was trusted for the run: the second batch needed no card.
    assert_eq!(cards.len(), 2);
    assert_eq!(cards[0].0, ["fetch a", "fetch b"]);
    assert_eq!(cards[1].0, ["fetch c"]);
}

/// Keeps the loop's denials as `(call_id, tool, class, reason)`.
#[derive(Default)]
struct Denials(Mutex<Vec<(String, String, String, String)>>);

impl odek_llm::StreamObserver for Denials {}

impl odek_agent::observer::LoopObserver for Denials {
    fn on_event(&self, event: &odek_agent::observer::LoopEvent<'_>) {
        if let odek_agent::observer::LoopEvent::OperationDenied { call_id, tool, denial, .. } = event {
            self.0.lock().unwrap().push((
                (*call_id).to_owned(),
                (*tool).to_owned(),
                denial.class.as_str().to_owned(),
                denial.reason.clone(),
            ));
        }
    }
}

#[tokio::test]
async fn every_call_of_a_denied_batch_is_reported_as_a_denial() {
    let risky = Arc::new(RiskyTool { ran: Mutex::default() });
    let provider = QueueProvider::new(vec![calls(&[("1", "fetch", "a"), ("2", "echo", "{}")]), answer("done")]);
    let mut agent = agent(provider, vec![Arc::clone(&risky) as _, echo_tool()], settings(5));
    agent.gate = Some(gate(vec![GateAnswer::Deny]) as Arc<dyn BatchApprover>);
    let denials = Arc::new(Denials::default());
    agent.observer = Arc::clone(&denials) as _;
    agent.run(&mut start(), &CancellationToken::new()).await.unwrap();
    assert_eq!(
        *denials.0.lock().unwrap(),
        vec![
            ("1".into(), "fetch".into(), "network_egress".into(), "batch approval denied".into()),
            ("2".into(), "echo".into(), "safe".into(), "batch approval denied".into()),
        ]
    );
}

#[tokio::test]
async fn under_strict_a_denial_ends_the_run_after_its_batch_with_every_result_in_place() {
    let risky = Arc::new(RiskyTool { ran: Mutex::default() });
    let provider = QueueProvider::new(vec![calls(&[("1", "fetch", "a"), ("2", "echo", "{}")]), answer("never")]);
    let mut strict = settings(5);
    strict.strict = true;
    let mut agent = agent(Arc::clone(&provider), vec![Arc::clone(&risky) as _, echo_tool()], strict);
    agent.gate = Some(gate(vec![GateAnswer::Deny]) as Arc<dyn BatchApprover>);
    let mut messages = start();
    let error = agent.run(&mut messages, &CancellationToken::new()).await.unwrap_err();
    assert_eq!(error.to_string(), "operation denied (strict): fetch: batch approval denied (risk: network_egress)");
    assert_eq!(error.class(), "denied");
    assert_eq!(error.outcome(), odek_contract::outcome::Outcome::Denied);
    assert_eq!(provider.seen().len(), 1, "no model call after the denial");
    assert_eq!(messages.iter().filter(|m| m.role == Role::Tool).count(), 2, "both calls have their result");
}
