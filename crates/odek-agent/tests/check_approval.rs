//! `--check` on an interactive run (issue 17 item 5): a check whose class the policy leaves to
//! the operator gets the approval card, like a `shell` call; denied, it does not run and the run
//! fails with `checks_failed` at once, the refusal in its report.

#![allow(clippy::unwrap_used)]

mod loop_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use loop_support::*;
use odek_agent::finish::checks::CheckStatus;
use odek_agent::finish::{FinishGates, FinishSettings};
use odek_agent::run::{ApprovalItem, BatchApprover, GateAnswer, RunError};
use odek_agent::tool::ToolContext;
use odek_danger::{Action, DangerClass, DangerPolicy, PolicySettings};
use odek_llm::BoxFuture;
use tokio_util::sync::CancellationToken;

struct ScriptedGate {
    answer: GateAnswer,
    cards: Mutex<Vec<(String, String, bool)>>,
}

impl BatchApprover for ScriptedGate {
    fn approve<'a>(&'a self, items: &'a [ApprovalItem], allow_always: bool) -> BoxFuture<'a, GateAnswer> {
        for item in items {
            self.cards.lock().unwrap().push((item.tool.clone(), item.risk.resource.clone(), allow_always));
        }
        Box::pin(async move { self.answer })
    }
}

/// An interactive run in `dir` where `local_write` needs approval, checking `touch ran`.
async fn run_with(
    reply: GateAnswer,
    dir: &std::path::Path,
) -> (Result<odek_agent::run::RunOutcome, RunError>, Arc<ScriptedGate>) {
    let provider = QueueProvider::new(vec![answer("done")]);
    let mut agent = agent(provider, vec![], settings(5));
    let mut policy = PolicySettings::default();
    policy.classes.insert(DangerClass::LocalWrite, Action::Prompt);
    agent.tool_context = ToolContext::new(dir.to_path_buf(), dir.join(".odek"), DangerPolicy::new(policy));
    agent.tool_context.interactive = true;
    let gate = Arc::new(ScriptedGate { answer: reply, cards: Mutex::default() });
    agent.gate = Some(Arc::clone(&gate) as Arc<dyn BatchApprover>);
    agent.finish = FinishGates::new(&FinishSettings {
        checks: vec!["touch ran".to_owned()],
        check_timeout: Duration::from_secs(30),
        ..FinishSettings::default()
    });
    (agent.run(&mut start(), &CancellationToken::new()).await, gate)
}

#[tokio::test]
async fn an_approved_check_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, gate) = run_with(GateAnswer::Approve, dir.path()).await;
    let outcome = outcome.unwrap();
    assert!(dir.path().join("ran").exists());
    assert_eq!(outcome.checks[0].status, CheckStatus::Passed);
    assert_eq!(gate.cards.lock().unwrap()[0], ("check".to_owned(), "touch ran".to_owned(), false));
}

#[tokio::test]
async fn a_check_the_operator_denies_does_not_run_red() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, _) = run_with(GateAnswer::Deny, dir.path()).await;
    let Err(RunError::ChecksFailed { cycles: 1, checks, .. }) = outcome else { panic!("{outcome:?}") };
    assert!(!dir.path().join("ran").exists(), "the denied check ran");
    assert_eq!(checks[0].status, CheckStatus::Denied);
    let denial = checks[0].denial.as_ref().unwrap();
    // The reason of every denial: the classifier's, then the policy's.
    assert_eq!(
        (denial.class, denial.reason.as_str()),
        (DangerClass::LocalWrite, "touch creates or changes files; not approved")
    );
}
