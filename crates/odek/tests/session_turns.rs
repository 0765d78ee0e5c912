//! The runtime API as an embedder drives it: sessions of several turns against the scripted
//! OpenAI-compatible server on 127.0.0.1, budgets that hold for the whole session, a cancelled
//! turn that leaves the conversation and the session file clean, and the subscriber seeing every
//! event.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use odek::config::{CliOverrides, ConfigSources};
use odek::{BoxFuture, CancellationToken, Message, Overrides, Runtime, RuntimeError, Subscriber};
use odek::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutcome};
use odek_test_support::openai::{Reply, ScriptedServer};
use serde_json::Value;

/// Records warnings and every event line.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Value>>,
    warnings: Mutex<Vec<String>>,
}

impl Recorder {
    fn event_types(&self) -> Vec<String> {
        let events = self.events.lock().unwrap();
        events.iter().map(|event| event["type"].as_str().unwrap().to_owned()).collect()
    }
}

impl Subscriber for Recorder {
    fn warning(&self, text: &str) {
        self.warnings.lock().unwrap().push(text.to_owned());
    }
    fn wants_events(&self) -> bool {
        true
    }
    fn event(&self, line: &str) {
        self.events.lock().unwrap().push(serde_json::from_str(line).unwrap());
    }
}

/// A tool that says it started, then waits until its call is cancelled.
struct WaitForCancel(tokio::sync::mpsc::UnboundedSender<()>);

impl Tool for WaitForCancel {
    fn definition(&self) -> ToolDefinition {
        let parameters = serde_json::json!({"type": "object", "properties": {}});
        ToolDefinition { name: "wait".into(), description: "waits".into(), parameters }
    }

    fn call<'a>(&'a self, _: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let _ = self.0.send(());
            ctx.cancel.cancelled().await;
            Err(ToolError::new("cancelled"))
        })
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    sources: ConfigSources,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (home, cwd) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let env = BTreeMap::from([("HOME".to_owned(), home.display().to_string())]);
    Fixture { sources: ConfigSources { home, cwd, env }, _dir: dir }
}

fn overrides(server: &ScriptedServer, config: CliOverrides) -> Overrides {
    let config = CliOverrides { provider: Some("openai".into()), base_url: Some(server.base_url()), ..config };
    Overrides { config, ..Overrides::default() }
}

#[tokio::test(flavor = "multi_thread")]
async fn token_budgets_hold_for_the_whole_session_and_a_spent_session_calls_no_model() {
    let server = ScriptedServer::start(vec![
        Reply::text("one").with_usage(120, 5),
        Reply::text("two").with_usage(10, 5),
        Reply::text("never asked for").with_usage(1, 1),
    ]);
    let fixture = fixture();
    let recorder = Arc::new(Recorder::default());
    let limits = CliOverrides { max_input_tokens: Some(125), ..CliOverrides::default() };
    let runtime = Runtime::load(fixture.sources.clone(), &overrides(&server, limits), recorder.clone()).unwrap();
    let mut session = runtime.session(vec![Message::system("sys")], None).unwrap();
    let cancel = CancellationToken::new();

    let first = session.turn("first".into(), &cancel).await.unwrap();
    assert_eq!((first.answer.as_str(), first.usage.input_tokens), ("one", 120));

    let second = session.turn("second".into(), &cancel).await.unwrap_err();
    assert!(second.is_budget(), "{second}");
    assert_eq!(second.to_string(), "execution budget exceeded: input_tokens observed 130 (limit 125)");

    let third = session.turn("third".into(), &cancel).await.unwrap_err();
    assert!(third.is_budget(), "{third}");
    assert_eq!(third.to_string(), "execution budget exceeded: input_tokens observed 130 (limit 125)");
    assert_eq!(server.requests().len(), 2, "the spent session made no third model call");
    assert_eq!(session.spent().usage.input_tokens, 130);
    session.close().await;

    let types = recorder.event_types();
    let runs: Vec<&String> = types.iter().filter(|kind| kind.starts_with("run_")).collect();
    assert_eq!(runs, ["run_started", "run_completed", "run_started", "run_failed", "run_started", "run_failed"]);
    assert_eq!(types.iter().filter(|kind| *kind == "budget_exceeded").count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_turn_leaves_no_dangling_call_and_the_next_turn_works() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("call_1", "wait", "{}")]).with_usage(10, 2),
        Reply::text("after").with_usage(12, 3),
    ]);
    let fixture = fixture();
    let recorder = Arc::new(Recorder::default());
    let (started, mut tool_started) = tokio::sync::mpsc::unbounded_channel();
    let runtime =
        Runtime::load(fixture.sources.clone(), &overrides(&server, CliOverrides::default()), recorder.clone())
            .unwrap()
            .with_tool(Arc::new(WaitForCancel(started)));
    let (record, lock) = runtime.new_session_record().unwrap();
    let id = record.id.clone();
    let mut session = runtime.session(vec![Message::system("sys")], Some(record)).unwrap();

    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tool_started.recv().await;
        stopper.cancel();
    });
    let cancelled = tokio::time::timeout(Duration::from_secs(30), session.turn("wait, please".into(), &cancel))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(cancelled, RuntimeError::Run(_)) && !cancelled.is_budget(), "{cancelled}");
    assert_eq!(cancelled.to_string(), "context canceled");

    let answer = session.turn("and now?".into(), &CancellationToken::new()).await.unwrap();
    assert_eq!(answer.answer, "after");
    let second_request = &server.requests()[1].body;
    let messages = second_request["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"], "the cancelled call went back answered");
    assert_eq!(messages[3]["tool_call_id"], "call_1");
    session.close().await;
    drop(lock);

    let saved = runtime.session_store().unwrap().load(&id).unwrap();
    assert_eq!(saved.messages.last().map(|message| message.content.as_str()), Some("after"));
    for (index, message) in saved.messages.iter().enumerate() {
        for call in &message.tool_calls {
            let answered =
                saved.messages[index + 1..].iter().any(|later| later.tool_call_id.as_deref() == Some(call.id.as_str()));
            assert!(answered, "saved call {} has its result", call.id);
        }
    }
    assert_eq!(recorder.event_types().iter().filter(|kind| *kind == "run_failed").count(), 1);
}
