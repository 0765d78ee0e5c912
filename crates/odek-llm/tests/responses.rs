//! The OpenAI Responses API provider against a real loopback server: the stateless request
//! shape, plain and streamed answers, tool calls and their results across turns, reasoning
//! items sent back verbatim, errors, retries and hostile bodies.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

use std::sync::Mutex;
use std::time::Duration;

use odek_llm::{
    ChatRequest, ChatResponse, EndpointConfig, LlmError, Message, NoStreamObserver, Provider, ReasoningBlock,
    ResponsesProvider, StreamObserver, Thinking, ToolCall, ToolDefinition, Usage,
};
use odek_test_support::openai::{Reply, ScriptedServer};
use odek_test_support::responses::{self, Answer, CONTEXT_WINDOW_MESSAGE};
use serde_json::{Value, json};

const KEY: &str = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz";

/// Opaque reasoning ciphertext with every character JSON escapes or a gateway might touch.
const ENCRYPTED: &str = "gAAAAABo+/=\\\"\u{e9}\u{1f600}\n\tend";

fn config(server: &ScriptedServer) -> EndpointConfig {
    EndpointConfig {
        max_retries: 0,
        retry_base_delay: Duration::from_millis(1),
        retry_max_delay: Duration::from_millis(4),
        ..EndpointConfig::new(server.base_url(), KEY)
    }
}

fn provider(server: &ScriptedServer) -> ResponsesProvider {
    ResponsesProvider::new(config(server)).unwrap()
}

fn shell_tool() -> ToolDefinition {
    ToolDefinition {
        name: "shell".into(),
        description: "run a command".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    }
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolDefinition], stream: bool) -> ChatRequest<'a> {
    ChatRequest {
        model: "gpt-test",
        messages,
        tools,
        thinking: Thinking::Default,
        stream,
        side_call: false,
        timeout: None,
        output_schema: None,
    }
}

/// The first turn: a system prompt, a task, the shell tool.
fn first_turn() -> Vec<Message> {
    vec![Message::system("be brief"), Message::user("list files")]
}

async fn call(provider: &ResponsesProvider, stream: bool) -> Result<ChatResponse, LlmError> {
    let messages = first_turn();
    let tools = [shell_tool()];
    provider.complete(request(&messages, &tools, stream), &NoStreamObserver).await
}

fn endpoint(server: &ScriptedServer) -> String {
    format!("{}/responses", server.base_url())
}

#[derive(Default)]
struct Collect(Mutex<Vec<(String, bool)>>);

impl StreamObserver for Collect {
    fn on_delta(&self, text: &str, reasoning: bool) {
        self.0.lock().unwrap().push((text.to_owned(), reasoning));
    }
}

impl Collect {
    fn text(&self, reasoning: bool) -> String {
        let seen = self.0.lock().unwrap();
        seen.iter().filter(|(_, is_reasoning)| *is_reasoning == reasoning).map(|(text, _)| text.as_str()).collect()
    }

    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// The recorded request of a stateless call: path, key, `store`, `include`, no server state.
fn assert_stateless(server: &ScriptedServer, index: usize, stream: bool) -> Value {
    let sent = &server.requests()[index];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/responses"));
    assert_eq!(sent.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(sent.body["model"], "gpt-test");
    assert_eq!(sent.body["store"], json!(false));
    assert_eq!(sent.body["include"], json!(["reasoning.encrypted_content"]));
    assert!(sent.body.get("previous_response_id").is_none(), "{}", sent.body);
    assert_eq!(sent.body.get("stream"), stream.then_some(&json!(true)), "{}", sent.body);
    sent.body.clone()
}

#[tokio::test]
async fn a_plain_text_answer_and_the_request_it_answers() {
    let server = ScriptedServer::start(vec![Answer::text("two files").with_usage(12, 3, 0).json()]);
    let provider = provider(&server);
    assert_eq!(provider.id(), "openai-responses");
    assert_eq!(provider.endpoint(), endpoint(&server));
    let response = call(&provider, false).await.unwrap();
    assert_eq!(response.message.content, "two files");
    assert!(response.message.tool_calls.is_empty() && response.message.reasoning_blocks.is_empty());
    assert_eq!(response.usage, Usage::new(12, 3));
    assert_eq!(response.finish_reason.as_deref(), Some("completed"));

    let body = assert_stateless(&server, 0, false);
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "system", "content": "be brief"},
            {"type": "message", "role": "user", "content": "list files"},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "shell", "description": "run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}, "strict": false}])
    );
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["parallel_tool_calls"], true);
    for absent in ["reasoning", "text", "messages"] {
        assert!(body.get(absent).is_none(), "{absent} sent: {body}");
    }
}

#[tokio::test]
async fn a_tool_less_call_offers_no_tools() {
    let server = ScriptedServer::start(vec![Answer::text("summary").json()]);
    let messages = [Message::user("summarise")];
    let side = ChatRequest { side_call: true, ..request(&messages, &[], false) };
    provider(&server).complete(side, &NoStreamObserver).await.unwrap();
    let body = assert_stateless(&server, 0, false);
    for absent in ["tools", "tool_choice", "parallel_tool_calls"] {
        assert!(body.get(absent).is_none(), "{absent} sent: {body}");
    }
}

#[tokio::test]
async fn a_streamed_answer_arrives_as_deltas_and_whole() {
    let answer = Answer::new()
        .with_reasoning("rs_1", &["First I look.", "Then I answer."], ENCRYPTED)
        .with_text("Here are the files you asked for.")
        .with_usage(20, 9, 0);
    let server = ScriptedServer::start(vec![answer.sse()]);
    let observer = Collect::default();
    let messages = first_turn();
    let response = provider(&server).complete(request(&messages, &[], true), &observer).await.unwrap();
    assert_eq!(response.message.content, "Here are the files you asked for.");
    assert_eq!(response.message.reasoning_content.as_deref(), Some("First I look.\n\nThen I answer."));
    assert_eq!(observer.text(false), "Here are the files you asked for.");
    assert_eq!(observer.text(true), "First I look.Then I answer.");
    assert!(observer.count() > 4, "text came in pieces");
    assert_eq!(response.usage, Usage::new(20, 9));
    assert_eq!(response.finish_reason.as_deref(), Some("completed"));
    assert_stateless(&server, 0, true);
}

#[tokio::test]
async fn tool_calls_plain_and_streamed_pair_by_call_id() {
    let answer =
        Answer::new().with_function_call("call_7", "shell", r#"{"command":"ls -la /tmp"}"#).with_usage(5, 4, 0);
    let server = ScriptedServer::start(vec![answer.json(), answer.sse()]);
    let provider = provider(&server);
    for stream in [false, true] {
        let response = call(&provider, stream).await.unwrap();
        assert_eq!(
            response.message.tool_calls,
            vec![ToolCall::new("call_7", "shell", r#"{"command":"ls -la /tmp"}"#)],
            "stream: {stream}"
        );
        assert_eq!(response.message.content, "");
        assert_eq!(response.usage, Usage::new(5, 4));
    }
}

/// Two parallel calls keep their call ids (not the item ids), and the next request sends them
/// back as `function_call` items followed by the `function_call_output` of each.
#[tokio::test]
async fn parallel_calls_and_their_outputs_in_the_next_request() {
    let answer = Answer::new()
        .with_text("Checking both.")
        .with_function_call("call_a", "shell", r#"{"command":"ls"}"#)
        .with_function_call("call_b", "shell", r#"{"command":"pwd"}"#);
    for stream in [false, true] {
        let first = if stream { answer.sse() } else { answer.json() };
        let server = ScriptedServer::start(vec![first, Answer::text("done").json()]);
        let provider = provider(&server);
        let tools = [shell_tool()];
        let mut messages = first_turn();
        let response = provider.complete(request(&messages, &tools, stream), &NoStreamObserver).await.unwrap();
        let ids: Vec<&str> = response.message.tool_calls.iter().map(|call| call.id.as_str()).collect();
        assert_eq!(ids, ["call_a", "call_b"], "stream: {stream}");
        messages.push(response.message);
        messages.push(Message::tool("call_a", "shell", "a.txt b.txt"));
        messages.push(Message::tool("call_b", "shell", "/work"));
        provider.complete(request(&messages, &tools, false), &NoStreamObserver).await.unwrap();

        let body = assert_stateless(&server, 1, false);
        assert_eq!(
            body["input"].as_array().unwrap()[2..],
            [
                json!({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Checking both."}]}),
                json!({"type": "function_call", "call_id": "call_a", "name": "shell", "arguments": "{\"command\":\"ls\"}"}),
                json!({"type": "function_call", "call_id": "call_b", "name": "shell", "arguments": "{\"command\":\"pwd\"}"}),
                json!({"type": "function_call_output", "call_id": "call_a", "output": "a.txt b.txt"}),
                json!({"type": "function_call_output", "call_id": "call_b", "output": "/work"}),
            ],
            "stream: {stream}"
        );
    }
}

/// The reasoning item comes back in the next request exactly as it was received: its id,
/// summary and encrypted content, the last only ever in `output_item.done` of a stream.
#[tokio::test]
async fn reasoning_items_are_sent_back_byte_for_byte() {
    let answer = Answer::new()
        .with_reasoning("rs_abc123", &["Need the listing."], ENCRYPTED)
        .with_function_call("call_1", "shell", "{}");
    for stream in [false, true] {
        let first = if stream { answer.sse() } else { answer.json() };
        let server = ScriptedServer::start(vec![first, Answer::text("ok").json()]);
        let provider = provider(&server);
        let mut messages = first_turn();
        let response = provider.complete(request(&messages, &[], stream), &NoStreamObserver).await.unwrap();
        assert_eq!(
            response.message.reasoning_blocks,
            vec![ReasoningBlock::Reasoning {
                id: "rs_abc123".into(),
                summary: vec!["Need the listing.".into()],
                encrypted_content: Some(ENCRYPTED.into()),
            }],
            "stream: {stream}"
        );
        messages.push(response.message);
        messages.push(Message::tool("call_1", "shell", "x"));
        provider.complete(request(&messages, &[], false), &NoStreamObserver).await.unwrap();

        let sent = &server.requests()[1];
        let input = sent.body["input"].as_array().unwrap();
        assert_eq!(
            input[2],
            json!({"type": "reasoning", "id": "rs_abc123",
                "summary": [{"type": "summary_text", "text": "Need the listing."}], "encrypted_content": ENCRYPTED})
        );
        assert_eq!(input[3]["type"], "function_call", "reasoning comes before the calls it led to");
        let received = serde_json::to_string(ENCRYPTED).unwrap();
        assert!(sent.raw_body.contains(&received), "ciphertext altered on the wire");
    }
}

#[tokio::test]
async fn thinking_sets_the_reasoning_effort() {
    let cases = [
        (Thinking::Default, None),
        (Thinking::Disabled, None),
        (Thinking::Enabled, Some("medium")),
        (Thinking::Low, Some("low")),
        (Thinking::Medium, Some("medium")),
        (Thinking::High, Some("high")),
    ];
    let server = ScriptedServer::start(cases.iter().map(|_| Answer::text("k").json()).collect());
    let provider = provider(&server);
    let messages = [Message::user("think")];
    for (thinking, _) in cases {
        provider.complete(ChatRequest { thinking, ..request(&messages, &[], false) }, &NoStreamObserver).await.unwrap();
    }
    for (index, (thinking, effort)) in cases.into_iter().enumerate() {
        let body = assert_stateless(&server, index, false);
        assert_eq!(body.get("reasoning"), effort.map(|effort| json!({"effort": effort})).as_ref(), "{thinking:?}");
    }
}

#[tokio::test]
async fn an_output_schema_is_sent_as_text_format() {
    let schema = json!({"type": "object", "properties": {"files": {"type": "array"}}, "required": ["files"]});
    let server = ScriptedServer::start(vec![Answer::text(r#"{"files":[]}"#).json()]);
    let messages = [Message::user("list as JSON")];
    let with_schema = ChatRequest { output_schema: Some(&schema), ..request(&messages, &[], false) };
    let response = provider(&server).complete(with_schema, &NoStreamObserver).await.unwrap();
    assert_eq!(response.message.content, r#"{"files":[]}"#);
    let body = assert_stateless(&server, 0, false);
    assert_eq!(
        body["text"],
        json!({"format": {"type": "json_schema", "name": "odek_output", "schema": schema, "strict": false}})
    );
}

#[tokio::test]
async fn cached_tokens_are_the_cache_read_part_of_the_input() {
    let answer = Answer::text("cached").with_usage(1000, 20, 800);
    let server = ScriptedServer::start(vec![answer.json(), answer.sse()]);
    let provider = provider(&server);
    let expected = Usage { cache_read_tokens: 800, ..Usage::new(1000, 20) };
    assert_eq!(call(&provider, false).await.unwrap().usage, expected);
    assert_eq!(call(&provider, true).await.unwrap().usage, expected);
    assert_eq!(expected.uncached_input_tokens(), 200);
}

#[tokio::test]
async fn a_refusal_is_the_answer_text() {
    let server = ScriptedServer::start(vec![Answer::new().with_refusal("I can't help with that.").sse()]);
    assert_eq!(call(&provider(&server), true).await.unwrap().message.content, "I can't help with that.");
}

#[tokio::test]
async fn an_incomplete_answer_says_why() {
    let server = ScriptedServer::start(vec![Answer::text("partial").incomplete("max_output_tokens").sse()]);
    let response = call(&provider(&server), true).await.unwrap();
    assert_eq!(response.message.content, "partial");
    assert_eq!(response.finish_reason.as_deref(), Some("max_output_tokens"));
}

#[tokio::test]
async fn a_server_error_is_retried_then_the_answer_is_read() {
    let server = ScriptedServer::start(vec![
        responses::error_status(500, "server_error", "server_error", "The server had an error"),
        responses::error_status(503, "server_error", "overloaded", "Slow down").with_header("Retry-After", "0"),
        Answer::text("finally").with_usage(2, 1, 0).json(),
    ]);
    let provider = ResponsesProvider::new(EndpointConfig { max_retries: 3, ..config(&server) }).unwrap();
    assert_eq!(call(&provider, false).await.unwrap().message.content, "finally");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].raw_body, requests[2].raw_body, "a retry sends the same body");
}

#[tokio::test]
async fn a_failed_response_is_the_providers_error() {
    let failed = Answer::failed("server_error", "The model produced invalid content.");
    let server = ScriptedServer::start(vec![failed.sse(), failed.json()]);
    let provider = provider(&server);
    for stream in [true, false] {
        let err = call(&provider, stream).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: provider error in stream: The model produced invalid content.", endpoint(&server))
        );
        assert_eq!(err.class(), "provider_unavailable");
    }
}

#[tokio::test]
async fn an_error_event_in_the_stream_keeps_its_text() {
    let server =
        ScriptedServer::start(vec![responses::error_stream("rate_limit_exceeded", "Rate limit reached for gpt-test")]);
    let err = call(&provider(&server), true).await.unwrap_err();
    assert!(matches!(err, LlmError::StreamError { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("{}: provider error in stream: Rate limit reached for gpt-test", endpoint(&server))
    );
}

#[tokio::test]
async fn a_context_length_error_keeps_its_message() {
    let server =
        ScriptedServer::start(vec![responses::context_length_exceeded(), responses::context_length_exceeded()]);
    let provider = provider(&server);
    for stream in [false, true] {
        let err = call(&provider, stream).await.unwrap_err();
        assert_eq!(err.to_string(), format!("{}: HTTP 400: {CONTEXT_WINDOW_MESSAGE}", endpoint(&server)));
        assert!(err.to_string().contains("context window"));
        assert_eq!(err.class(), "provider_request");
    }
    assert_eq!(server.requests().len(), 2, "a 400 is not retried");
}

/// `events` with `extra` inserted before the end marker.
fn with_inserted(answer: &Answer, extra: Vec<Value>) -> Reply {
    let mut events = answer.events();
    let end = events.pop().unwrap();
    events.extend(extra);
    events.push(end);
    Reply::sse_frames(responses::frames(&events))
}

#[tokio::test]
async fn unknown_event_types_are_ignored() {
    let answer = Answer::text("still whole").with_usage(3, 2, 0);
    let extra = vec![
        json!({"type": "response.web_search_call.searching", "output_index": 5, "item_id": "ws_1"}),
        json!({"type": "response.brand_new_event", "delta": "not text"}),
        json!({"type": "response.output_item.added", "output_index": 9, "item": {"type": "image_generation_call", "id": "ig"}}),
        json!({"type": "response.output_text.delta", "output_index": 9, "delta": "belongs to an unknown item"}),
    ];
    let server = ScriptedServer::start(vec![with_inserted(&answer, extra)]);
    let response = call(&provider(&server), true).await.unwrap();
    assert_eq!(response.message.content, "still whole");
    assert_eq!(response.usage, Usage::new(3, 2));
}

#[tokio::test]
async fn a_delta_for_an_index_never_added_is_invalid_red() {
    let answer = Answer::text("hello");
    let stray = json!({"type": "response.output_text.delta", "output_index": 7, "content_index": 0, "delta": "x"});
    let server = ScriptedServer::start(vec![with_inserted(&answer, vec![stray])]);
    let err = call(&provider(&server), true).await.unwrap_err();
    assert!(matches!(err, LlmError::InvalidResponse { .. }), "{err:?}");
    assert!(err.to_string().contains("output item 7, never added"), "{err}");
}

#[tokio::test]
async fn a_stream_without_response_completed_is_an_error_red() {
    let mut frames = Answer::new().with_function_call("call_1", "shell", r#"{"command":"rm -rf build"}"#).frames();
    frames.pop();
    let server = ScriptedServer::start(vec![Reply::sse_frames(frames)]);
    let err = call(&provider(&server), true).await.unwrap_err();
    assert!(matches!(err, LlmError::Transport { .. }), "{err:?}");
    assert_eq!(err.to_string(), format!("{}: stream ended mid-message", endpoint(&server)));
}

#[tokio::test]
async fn hostile_usage_never_hides_spend_red() {
    let body = |usage: Value| {
        let mut response = Answer::text("u").response();
        response["usage"] = usage;
        Reply::status(200, response.to_string())
    };
    let server = ScriptedServer::start(vec![
        body(json!({"input_tokens": -5, "output_tokens": -1, "input_tokens_details": {"cached_tokens": -3}})),
        body(Value::Null),
        body(json!({"input_tokens": 9_007_199_254_740_993_u64, "output_tokens": 1e300,
            "input_tokens_details": {"cached_tokens": 9_007_199_254_740_993_u64}})),
        body(json!({"input_tokens": "12", "output_tokens": 2})),
    ]);
    let provider = provider(&server);
    assert_eq!(call(&provider, false).await.unwrap().usage, Usage::default());
    assert_eq!(call(&provider, false).await.unwrap().usage, Usage::default());
    assert_eq!(
        call(&provider, false).await.unwrap().usage,
        Usage { cache_read_tokens: 9_007_199_254_740_993, ..Usage::new(9_007_199_254_740_993, u64::MAX) }
    );
    assert_eq!(call(&provider, false).await.unwrap().usage, Usage::new(0, 2));
}

#[tokio::test]
async fn malformed_bodies_are_invalid_responses() {
    let server = ScriptedServer::start(vec![
        Reply::raw(200, "application/json", "{\"output\": [ nope"),
        Reply::status(200, r#"{"id": "resp_1", "status": "completed"}"#),
        Reply::sse_frames(vec!["event: response.created\ndata: {not json\n\n"]),
    ]);
    let provider = provider(&server);
    let first = call(&provider, false).await.unwrap_err();
    assert!(first.to_string().starts_with(&format!("{}: invalid response: body is not JSON", endpoint(&server))));
    let second = call(&provider, false).await.unwrap_err();
    assert_eq!(second.to_string(), format!("{}: invalid response: no output in the answer", endpoint(&server)));
    let third = call(&provider, true).await.unwrap_err();
    assert!(third.to_string().contains("invalid response: stream event is not JSON"), "{third}");
    assert_eq!(third.class(), "invalid_json");
}

#[tokio::test]
async fn an_api_key_echoed_by_the_server_never_reaches_the_error_red() {
    let echo = format!("Incorrect API key provided: {KEY}. Authorization: Bearer {KEY}");
    let server = ScriptedServer::start(vec![
        responses::error_status(401, "invalid_request_error", "invalid_api_key", &echo),
        responses::error_stream("invalid_api_key", &echo),
        Answer::failed("server_error", &echo).json(),
        Reply::raw(200, "application/json", format!("{{\"output\": \"{KEY}")),
    ]);
    let provider = provider(&server);
    let mut texts = vec![format!("{provider:?}")];
    texts.push(call(&provider, false).await.unwrap_err().to_string());
    texts.push(call(&provider, true).await.unwrap_err().to_string());
    texts.push(call(&provider, false).await.unwrap_err().to_string());
    texts.push(call(&provider, false).await.unwrap_err().to_string());
    for text in &texts {
        assert!(!text.contains(KEY) && !text.contains(&KEY[3..20]), "key leaked: {text}");
    }
    assert!(
        texts[1].contains("unauthorized (check the API key): Incorrect API key provided: [REDACTED]"),
        "{}",
        texts[1]
    );
    assert!(texts[2].contains("provider error in stream: Incorrect API key provided: [REDACTED]"), "{}", texts[2]);
}

/// A server whose end marker carries no output: the items come from the stream itself, each
/// as its `output_item.done` gave it (the reasoning's ciphertext arrives only there).
#[tokio::test]
async fn without_output_in_the_end_marker_the_streamed_items_are_the_answer() {
    let answer = Answer::new()
        .with_reasoning("rs_1", &["Plan."], ENCRYPTED)
        .with_text("Running it.")
        .with_function_call("call_1", "shell", r#"{"command":"make test"}"#)
        .with_usage(7, 6, 5);
    let mut events = answer.events();
    let end = events.last_mut().unwrap();
    end["response"]["output"] = json!([]);
    let server = ScriptedServer::start(vec![answer.json(), Reply::sse_frames(responses::frames(&events))]);
    let provider = provider(&server);
    let plain = call(&provider, false).await.unwrap();
    let streamed = call(&provider, true).await.unwrap();
    assert_eq!(streamed, plain);
    assert_eq!(streamed.message.tool_calls, vec![ToolCall::new("call_1", "shell", r#"{"command":"make test"}"#)]);
    assert!(matches!(&streamed.message.reasoning_blocks[..],
        [ReasoningBlock::Reasoning { encrypted_content: Some(encrypted), .. }] if encrypted == ENCRYPTED));
}
