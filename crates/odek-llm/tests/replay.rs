//! The replay provider: loading scripts, picking the turn from the conversation, side calls, and
//! the errors a script that does not fit the run produces.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

use std::sync::Mutex;

use odek_llm::{
    ChatRequest, LlmError, Message, NoStreamObserver, Provider, ReplayProvider, StreamObserver, Thinking, ToolCall,
    ToolDefinition, Usage,
};
use serde_json::json;

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition { name: name.into(), description: String::new(), parameters: json!({"type": "object"}) }
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolDefinition], side_call: bool) -> ChatRequest<'a> {
    ChatRequest {
        model: "m",
        messages,
        tools,
        thinking: Thinking::Default,
        stream: false,
        side_call,
        timeout: None,
        output_schema: None,
    }
}

fn script_file(script: &serde_json::Value) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(&path, serde_json::to_vec_pretty(script).unwrap()).unwrap();
    (dir, path)
}

fn two_turn_script() -> serde_json::Value {
    json!({
        "schema": "odek.replay/v1",
        "model": "recorded-model",
        "turns": [
            {"content": "", "reasoning_content": "plan", "tool_calls": [
                {"id": "call_1", "name": "shell", "arguments": {"command": "ls"}},
                {"name": "shell", "arguments": "{\"command\": \"pwd\"}"}
            ], "usage": {"input_tokens": 10, "output_tokens": 5}},
            {"content": "done"}
        ],
        "side_calls": [{"content": "summary one", "usage": {"input_tokens": 3, "output_tokens": 2}}, {"content": "summary two"}]
    })
}

#[tokio::test]
async fn main_calls_pick_the_turn_by_assistant_messages() {
    let (_dir, path) = script_file(&two_turn_script());
    let replay = ReplayProvider::load(&path).unwrap();
    let tools = [tool("shell")];

    let first = [Message::system("s"), Message::user("go")];
    let response = replay.complete(request(&first, &tools, false), &NoStreamObserver).await.unwrap();
    assert_eq!(
        response.message.tool_calls,
        vec![
            ToolCall::new("call_1", "shell", r#"{"command":"ls"}"#),
            ToolCall::new("call_0_1", "shell", "{\"command\": \"pwd\"}")
        ]
    );
    assert_eq!(response.message.reasoning_content.as_deref(), Some("plan"));
    assert_eq!(response.usage, Usage::new(10, 5));
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));

    // The same conversation asks again (a retry, a second process): the same turn answers.
    let again = replay.complete(request(&first, &tools, false), &NoStreamObserver).await.unwrap();
    assert_eq!(again, response);

    let mut second = first.to_vec();
    second.push(response.message);
    second.push(Message::tool("call_1", "shell", "a.txt"));
    let done = replay.complete(request(&second, &tools, false), &NoStreamObserver).await.unwrap();
    assert_eq!(done.message.content, "done");
    assert!(done.message.tool_calls.is_empty());
    assert_eq!(done.usage, Usage::default());
    assert_eq!(done.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn side_calls_are_answered_in_order() {
    let (_dir, path) = script_file(&two_turn_script());
    let replay = ReplayProvider::load(&path).unwrap();
    let history = [Message::user("go"), Message::assistant("x"), Message::assistant("y")];
    let first = replay.complete(request(&history, &[], true), &NoStreamObserver).await.unwrap();
    assert_eq!(first.message.content, "summary one");
    assert_eq!(first.usage, Usage::new(3, 2));
    let second = replay.complete(request(&history, &[], true), &NoStreamObserver).await.unwrap();
    assert_eq!(second.message.content, "summary two");
    let err = replay.complete(request(&history, &[], true), &NoStreamObserver).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("replay {}: no side-call answer left: side call 2 but the script has 2 side_calls", path.display())
    );
}

#[tokio::test]
async fn exhausted_script_is_an_error() {
    let (_dir, path) = script_file(&two_turn_script());
    let replay = ReplayProvider::load(&path).unwrap();
    let history = [Message::user("go"), Message::assistant("a"), Message::user("more"), Message::assistant("b")];
    let err = replay.complete(request(&history, &[], false), &NoStreamObserver).await.unwrap_err();
    assert!(matches!(err, LlmError::Replay { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "replay {}: script exhausted: the conversation has 2 assistant messages but the script has 2 turns",
            path.display()
        )
    );
}

#[tokio::test]
async fn a_turn_calling_an_unoffered_tool_is_an_error() {
    let (_dir, path) = script_file(&two_turn_script());
    let replay = ReplayProvider::load(&path).unwrap();
    let messages = [Message::user("go")];
    let tools = [tool("read_file")];
    let err = replay.complete(request(&messages, &tools, false), &NoStreamObserver).await.unwrap_err();
    assert_eq!(err.to_string(), format!("replay {}: turn 0 calls unknown tool \"shell\"", path.display()));
}

#[derive(Default)]
struct Collect(Mutex<Vec<(String, bool)>>);

impl StreamObserver for Collect {
    fn on_delta(&self, text: &str, reasoning: bool) {
        self.0.lock().unwrap().push((text.to_owned(), reasoning));
    }
}

#[tokio::test]
async fn streaming_observers_get_one_delta_each() {
    let (_dir, path) =
        script_file(&json!({"schema": "odek.replay/v1", "turns": [{"content": "hi", "reasoning_content": "r"}]}));
    let replay = ReplayProvider::load(&path).unwrap();
    let messages = [Message::user("go")];
    let observer = Collect::default();
    let request = ChatRequest { stream: true, ..request(&messages, &[], false) };
    replay.complete(request, &observer).await.unwrap();
    assert_eq!(*observer.0.lock().unwrap(), vec![("r".to_owned(), true), ("hi".to_owned(), false)]);
}

#[test]
fn load_errors_name_the_path_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let err = ReplayProvider::load(&missing).unwrap_err();
    assert!(err.to_string().starts_with(&format!("replay {}: cannot read: ", missing.display())), "{err}");

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"schema\": \"odek.replay/v1\", \"turns\": [").unwrap();
    let err = ReplayProvider::load(&broken).unwrap_err();
    assert!(err.to_string().starts_with(&format!("replay {}: invalid script", broken.display())), "{err}");
    assert!(err.to_string().contains("EOF"), "{err}");

    let wrong_type = dir.path().join("wrong.json");
    std::fs::write(&wrong_type, r#"{"schema": "odek.replay/v1", "turns": [{"content": 5}]}"#).unwrap();
    let err = ReplayProvider::load(&wrong_type).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("replay {}: invalid script at turns[0].content: invalid type", wrong_type.display())),
        "{err}"
    );

    let no_schema = dir.path().join("noschema.json");
    std::fs::write(&no_schema, r#"{"turns": []}"#).unwrap();
    let err = ReplayProvider::load(&no_schema).unwrap_err();
    assert!(err.to_string().contains("missing field `schema`"), "{err}");
}
