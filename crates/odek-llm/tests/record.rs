//! The recording provider: a scripted run recorded through the OpenAI provider replays with the
//! same answers; the file is private, atomic and redacted.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

use odek_llm::{
    ChatRequest, ChatResponse, EndpointConfig, Message, NoStreamObserver, OpenAiProvider, Provider, RecordingProvider,
    ReplayProvider, Thinking, ToolDefinition,
};
use odek_test_support::openai::{Reply, ScriptedServer};
use serde_json::json;

fn tools() -> Vec<ToolDefinition> {
    vec![ToolDefinition { name: "shell".into(), description: "run".into(), parameters: json!({"type": "object"}) }]
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolDefinition], side_call: bool) -> ChatRequest<'a> {
    ChatRequest {
        model: "gpt-test",
        messages,
        tools,
        thinking: Thinking::Default,
        stream: !side_call,
        side_call,
        timeout: None,
        output_schema: None,
    }
}

/// A three-step conversation: a tool call, a side call (summary), a final answer.
async fn run(provider: &dyn Provider) -> Vec<ChatResponse> {
    let tools = tools();
    let mut messages = vec![Message::system("s"), Message::user("list files")];
    let first = provider.complete(request(&messages, &tools, false), &NoStreamObserver).await.unwrap();
    messages.push(first.message.clone());
    messages.push(Message::tool("call_1", "shell", "a.txt"));
    let side = provider.complete(request(&messages, &[], true), &NoStreamObserver).await.unwrap();
    let last = provider.complete(request(&messages, &tools, false), &NoStreamObserver).await.unwrap();
    vec![first, side, last]
}

#[tokio::test]
async fn recording_round_trip() {
    let server = ScriptedServer::start(vec![
        Reply::sse(
            Reply::tool_calls(vec![
                ("call_1", "shell", r#"{"command":"ls"}"#),
                ("call_2", "shell", r#"{ "command": "pwd" }"#),
            ])
            .with_reasoning("let me look")
            .with_usage(20, 4),
        ),
        Reply::text("summary so far").with_usage(8, 2),
        Reply::sse(Reply::text("a.txt is the only file").with_usage(30, 6)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.replay.json");
    let inner = OpenAiProvider::new(EndpointConfig::new(server.base_url(), "key")).unwrap();
    let recording = RecordingProvider::new(Box::new(inner), &path).unwrap();
    assert_eq!(recording.id(), "openai");
    let live = run(&recording).await;

    let replay = ReplayProvider::load(&path).unwrap();
    assert_eq!(replay.script().model.as_deref(), Some("gpt-test"));
    assert_eq!(replay.script().turns.len(), 2);
    assert_eq!(replay.script().side_calls.len(), 1);
    let replayed = run(&replay).await;
    assert_eq!(replayed, live);
    assert_eq!(server.requests().len(), 3, "the replay made no request");
}

#[tokio::test]
async fn recorded_secrets_are_redacted_red() {
    let token = format!("ghp_{}", "A1b2C3d4".repeat(5));
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c", "shell", format!(r#"{{"command":"echo {token}"}}"#))])
            .with_reasoning(format!("the token is {token}")),
        Reply::text(format!("here: {token}")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.json");
    let inner = OpenAiProvider::new(EndpointConfig::new(server.base_url(), "key")).unwrap();
    let recording = RecordingProvider::new(Box::new(inner), &path).unwrap();
    let tools = tools();
    let mut messages = vec![Message::user("go")];
    let first = recording.complete(request(&messages, &tools, false), &NoStreamObserver).await.unwrap();
    messages.push(first.message);
    recording.complete(request(&messages, &tools, false), &NoStreamObserver).await.unwrap();

    let written = std::fs::read_to_string(&path).unwrap();
    assert!(!written.contains(&token), "secret written: {written}");
    assert!(written.contains("here: [REDACTED]"), "{written}");
    let script: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(script["turns"][0]["tool_calls"][0]["arguments"], json!({"command": "echo [REDACTED]"}));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name()).collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("secret.json")], "no temp file left behind");
}

#[test]
fn an_unwritable_path_fails_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("run.json");
    let inner = ReplayProvider::from_script("inline", Default::default());
    let err = RecordingProvider::new(Box::new(inner), &path).unwrap_err();
    assert!(err.to_string().starts_with(&format!("record {}: cannot write: ", path.display())), "{err}");
}
