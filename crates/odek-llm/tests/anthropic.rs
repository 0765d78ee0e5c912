//! The native Anthropic Messages provider against a real loopback server: the request it sends
//! (path, headers, body), plain and streamed answers, parallel tool use, thinking blocks sent
//! back byte for byte, prompt caching, usage, retries, errors and hostile streams.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

use std::sync::Mutex;
use std::time::Duration;

use odek_llm::{
    ANTHROPIC_VERSION, AnthropicOptions, AnthropicProvider, ChatRequest, ChatResponse, EndpointConfig, LlmError,
    Message, Provider, ReasoningBlock, StreamObserver, Thinking, ToolCall, ToolDefinition, Usage,
};
use odek_test_support::anthropic::{self, Block};
use odek_test_support::openai::{Gate, RecordedRequest, Reply, ScriptedServer};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-test-0123456789abcdefghijklmnopqrstuvwxyz";

fn config(server: &ScriptedServer) -> EndpointConfig {
    EndpointConfig {
        max_retries: 0,
        retry_base_delay: Duration::from_millis(1),
        retry_max_delay: Duration::from_millis(4),
        ..EndpointConfig::new(server.base_url(), KEY)
    }
}

fn provider(server: &ScriptedServer) -> AnthropicProvider {
    AnthropicProvider::new(config(server), AnthropicOptions::default()).unwrap()
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
        model: "claude-test",
        messages,
        tools,
        thinking: Thinking::Default,
        stream,
        side_call: false,
        timeout: None,
        output_schema: None,
    }
}

/// Records what the stream showed: deltas (text, reasoning) and progress reports.
#[derive(Default)]
struct Collect {
    deltas: Mutex<Vec<(String, bool)>>,
    progress: Mutex<u32>,
}

impl StreamObserver for Collect {
    fn on_delta(&self, text: &str, reasoning: bool) {
        self.deltas.lock().unwrap().push((text.to_owned(), reasoning));
    }

    fn on_progress(&self) {
        *self.progress.lock().unwrap() += 1;
    }
}

impl Collect {
    fn pieces(&self, reasoning: bool) -> Vec<String> {
        let deltas = self.deltas.lock().unwrap();
        deltas.iter().filter(|(_, is_reasoning)| *is_reasoning == reasoning).map(|(text, _)| text.clone()).collect()
    }

    fn progress(&self) -> u32 {
        *self.progress.lock().unwrap()
    }
}

/// One call of "be brief" / "list files" with the shell tool.
async fn call(provider: &AnthropicProvider, stream: bool, observer: &Collect) -> Result<ChatResponse, LlmError> {
    let messages = [Message::system("be brief"), Message::user("list files")];
    let tools = [shell_tool()];
    provider.complete(request(&messages, &tools, stream), observer).await
}

/// The answer `blocks` plain or streamed.
fn answer(blocks: Vec<Block>, usage: anthropic::Usage, stream: bool) -> Reply {
    if stream { anthropic::stream(blocks, usage) } else { anthropic::message(blocks, usage) }
}

fn endpoint(server: &ScriptedServer) -> String {
    format!("{}/messages", server.base_url())
}

/// `frames` (a stream's) as a reply.
fn frames_reply(frames: Vec<String>) -> Reply {
    Reply::sse_frames(frames)
}

fn frame(data: Value) -> String {
    anthropic::frame(&data)
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn assert_headers(sent: &RecordedRequest) {
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert!(sent.header("authorization").is_none(), "{:?}", sent.headers);
}

#[tokio::test]
async fn a_text_answer_plain_and_streamed_with_the_request_shape() {
    for stream in [false, true] {
        let server = ScriptedServer::start(vec![answer(
            vec![anthropic::text("Hello, world! Nothing to list.")],
            anthropic::Usage::new(12, 7),
            stream,
        )]);
        let observer = Collect::default();
        let response = call(&provider(&server), stream, &observer).await.unwrap();
        assert_eq!(response.message.content, "Hello, world! Nothing to list.");
        assert!(response.message.tool_calls.is_empty() && response.message.reasoning_blocks.is_empty());
        assert_eq!(response.usage, Usage::new(12, 7));
        assert_eq!(response.finish_reason.as_deref(), Some("end_turn"));
        if stream {
            let pieces = observer.pieces(false);
            assert!(pieces.len() > 1, "{pieces:?}");
            assert_eq!(pieces.concat(), response.message.content);
        }

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let sent = &requests[0];
        assert_headers(sent);
        assert_eq!(sent.header("accept"), Some(if stream { "text/event-stream" } else { "application/json" }));
        let mut expected = json!({
            "model": "claude-test",
            "max_tokens": 8192,
            "system": [{"type": "text", "text": "be brief", "cache_control": ephemeral()}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "list files", "cache_control": ephemeral()}]}],
            "tools": [{"name": "shell", "description": "run a command",
                "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
                "cache_control": ephemeral()}],
            "tool_choice": {"type": "auto"},
        });
        if stream {
            expected["stream"] = Value::Bool(true);
        }
        assert_eq!(sent.body, expected, "stream {stream}");
    }
}

#[tokio::test]
async fn a_tool_call_answer_plain_and_streamed() {
    for stream in [false, true] {
        let server = ScriptedServer::start(vec![answer(
            vec![
                anthropic::text("Let me look."),
                anthropic::tool_use("toolu_01A", "shell", json!({"command": "ls -la /tmp", "timeout": 30})),
            ],
            anthropic::Usage::new(20, 9),
            stream,
        )]);
        let response = call(&provider(&server), stream, &Collect::default()).await.unwrap();
        assert_eq!(response.message.content, "Let me look.");
        assert_eq!(
            response.message.tool_calls,
            vec![ToolCall::new("toolu_01A", "shell", r#"{"command":"ls -la /tmp","timeout":30}"#)]
        );
        assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(response.usage, Usage::new(20, 9));
    }
}

#[tokio::test]
async fn parallel_tool_use_then_both_results_in_one_user_turn() {
    for stream in [false, true] {
        let server = ScriptedServer::start(vec![
            answer(
                vec![
                    anthropic::tool_use("toolu_A", "shell", json!({"command": "ls"})),
                    anthropic::tool_use("toolu_B", "shell", json!({"command": "pwd"})),
                ],
                anthropic::Usage::new(5, 5),
                stream,
            ),
            anthropic::message(vec![anthropic::text("done")], anthropic::Usage::new(9, 1)),
        ]);
        let provider = provider(&server);
        let tools = [shell_tool()];
        let mut messages = vec![Message::system("be brief"), Message::user("where am I?")];
        let first = provider.complete(request(&messages, &tools, stream), &Collect::default()).await.unwrap();
        let ids: Vec<&str> = first.message.tool_calls.iter().map(|call| call.id.as_str()).collect();
        assert_eq!(ids, ["toolu_A", "toolu_B"]);
        messages.push(first.message.clone());
        messages.push(Message::tool("toolu_A", "shell", "a.txt\nb.txt"));
        messages.push(Message::tool("toolu_B", "shell", "/home/me"));
        let second = provider.complete(request(&messages, &tools, false), &Collect::default()).await.unwrap();
        assert_eq!(second.message.content, "done");

        let sent = &server.requests()[1].body;
        assert_eq!(
            sent["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "where am I?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_A", "name": "shell", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "toolu_B", "name": "shell", "input": {"command": "pwd"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_A", "content": "a.txt\nb.txt"},
                    {"type": "tool_result", "tool_use_id": "toolu_B", "content": "/home/me",
                     "cache_control": ephemeral()}]},
            ]),
            "stream {stream}"
        );
    }
}

/// Thinking text with every character class JSON escapes or that a careless round trip would
/// touch, and a base64 signature.
const THINKING: &str = "Let me think… \"quoted\" \\ back\\slash\n\ttab \u{2028} 🙂 </thinking> {\"not\": \"json\"";
const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/Tz0n1e7Zg==";
const REDACTED: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP+/=";

#[tokio::test]
async fn thinking_blocks_round_trip_byte_for_byte() {
    for stream in [false, true] {
        let server = ScriptedServer::start(vec![
            answer(
                vec![
                    anthropic::thinking(THINKING, SIGNATURE),
                    anthropic::redacted_thinking(REDACTED),
                    anthropic::tool_use("toolu_T", "shell", json!({"command": "ls"})),
                ],
                anthropic::Usage::new(5, 50),
                stream,
            ),
            anthropic::message(vec![anthropic::text("ok")], anthropic::Usage::new(1, 1)),
        ]);
        let provider = provider(&server);
        let tools = [shell_tool()];
        let mut messages = vec![Message::user("go")];
        let observer = Collect::default();
        let thinking_request = ChatRequest { thinking: Thinking::High, ..request(&messages, &tools, stream) };
        let first = provider.complete(thinking_request, &observer).await.unwrap();
        assert_eq!(
            first.message.reasoning_blocks,
            vec![
                ReasoningBlock::Thinking { thinking: THINKING.into(), signature: SIGNATURE.into() },
                ReasoningBlock::RedactedThinking { data: REDACTED.into() },
            ]
        );
        assert_eq!(first.message.reasoning_content.as_deref(), Some(THINKING));
        if stream {
            assert_eq!(observer.pieces(true).concat(), THINKING);
            assert!(observer.pieces(false).is_empty());
        }
        let sent_first = &server.requests()[0].body;
        assert_eq!(sent_first["thinking"], json!({"type": "enabled", "budget_tokens": 16384}));
        assert_eq!(sent_first["max_tokens"], 8192 + 16384);

        messages.push(first.message.clone());
        messages.push(Message::tool("toolu_T", "shell", "a.txt"));
        let again = ChatRequest { thinking: Thinking::High, ..request(&messages, &tools, false) };
        provider.complete(again, &Collect::default()).await.unwrap();
        let sent = &server.requests()[1];
        let assistant = &sent.body["messages"][1]["content"];
        assert_eq!(assistant[0]["type"], "thinking");
        assert_eq!(assistant[0]["thinking"].as_str(), Some(THINKING), "stream {stream}");
        assert_eq!(assistant[0]["signature"].as_str(), Some(SIGNATURE));
        assert_eq!(assistant[1], json!({"type": "redacted_thinking", "data": REDACTED}));
        assert_eq!(assistant[2]["type"], "tool_use");
        assert!(sent.raw_body.contains(SIGNATURE) && sent.raw_body.contains(REDACTED));
    }
}

#[tokio::test]
async fn cache_control_marks_system_last_tool_and_last_block_only_when_caching_is_on() {
    let reply = || anthropic::message(vec![anthropic::text("ok")], anthropic::Usage::new(1, 1));
    let server = ScriptedServer::start(vec![reply(), reply(), reply()]);
    let messages = [
        Message::system("rules one"),
        Message::system("rules two"),
        Message::user("first"),
        Message::assistant("answer"),
        Message::user("second"),
    ];
    let tools = [shell_tool(), ToolDefinition { name: "read".into(), ..shell_tool() }];
    let caching = provider(&server);
    caching.complete(request(&messages, &tools, false), &Collect::default()).await.unwrap();
    let side = ChatRequest { side_call: true, ..request(&messages, &[], false) };
    caching.complete(side, &Collect::default()).await.unwrap();
    let off =
        AnthropicProvider::new(config(&server), AnthropicOptions { prompt_caching: false, max_tokens: Some(512) })
            .unwrap();
    off.complete(request(&messages, &tools, false), &Collect::default()).await.unwrap();

    let requests = server.requests();
    let body = &requests[0].body;
    assert_eq!(body["system"][1]["cache_control"], ephemeral());
    assert_eq!(body["tools"][1]["cache_control"], ephemeral());
    assert_eq!(body["messages"][2]["content"][0]["cache_control"], ephemeral());
    assert_eq!(requests[0].raw_body.matches("cache_control").count(), 3);
    let side = &requests[1].body;
    assert_eq!(side["system"][1]["cache_control"], ephemeral());
    assert_eq!(side["messages"][2]["content"][0]["cache_control"], ephemeral());
    assert_eq!(requests[1].raw_body.matches("cache_control").count(), 2);
    assert!(!requests[2].raw_body.contains("cache_control"), "{}", requests[2].raw_body);
    assert_eq!(requests[2].body["max_tokens"], 512);
}

#[tokio::test]
async fn cache_reads_and_writes_reach_usage_as_parts_of_the_input() {
    for stream in [false, true] {
        let usage = anthropic::Usage::new(10, 5).with_cache(200, 3000);
        let server = ScriptedServer::start(vec![answer(vec![anthropic::text("ok")], usage, stream)]);
        let response = call(&provider(&server), stream, &Collect::default()).await.unwrap();
        assert_eq!(
            response.usage,
            Usage { input_tokens: 3210, output_tokens: 5, cache_read_tokens: 3000, cache_write_tokens: 200 },
            "stream {stream}"
        );
        assert_eq!(response.usage.uncached_input_tokens(), 10);
    }
}

#[tokio::test]
async fn overloaded_529_is_retried_then_succeeds() {
    let server = ScriptedServer::start(vec![
        anthropic::error(529, "overloaded_error", "Overloaded"),
        anthropic::error(429, "rate_limit_error", "Number of requests has exceeded your rate limit")
            .with_header("retry-after", "0"),
        anthropic::message(vec![anthropic::text("finally")], anthropic::Usage::new(2, 1)),
    ]);
    let provider =
        AnthropicProvider::new(EndpointConfig { max_retries: 3, ..config(&server) }, Default::default()).unwrap();
    let response = call(&provider, false, &Collect::default()).await.unwrap();
    assert_eq!(response.message.content, "finally");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].raw_body, requests[2].raw_body, "a retry sends the same body");

    let server = ScriptedServer::start(vec![anthropic::error(529, "overloaded_error", "Overloaded")]);
    let err = call(&self::provider(&server), false, &Collect::default()).await.unwrap_err();
    assert_eq!(err.to_string(), format!("{}: HTTP 529: overloaded: Overloaded", endpoint(&server)));
    assert_eq!(err.class(), "provider_unavailable");
}

#[tokio::test]
async fn a_context_length_400_keeps_its_text_and_is_not_retried() {
    let text = "prompt is too long: 210000 tokens > 200000 maximum";
    let server = ScriptedServer::start(vec![
        anthropic::error(400, "invalid_request_error", text),
        anthropic::message(vec![anthropic::text("unused")], anthropic::Usage::new(1, 1)),
    ]);
    let provider =
        AnthropicProvider::new(EndpointConfig { max_retries: 3, ..config(&server) }, Default::default()).unwrap();
    let err = call(&provider, false, &Collect::default()).await.unwrap_err();
    match &err {
        LlmError::Status { status: 400, detail, .. } => assert_eq!(detail, text),
        other => panic!("not a 400 status: {other:?}"),
    }
    assert_eq!(err.to_string(), format!("{}: HTTP 400: {text}", endpoint(&server)));
    assert!(err.to_string().contains("prompt is too long"));
    assert_eq!(err.class(), "provider_request");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn auth_and_not_found_errors_read_clearly() {
    let cases = [
        (401, "authentication_error", "invalid x-api-key", "provider_auth", "unauthorized (check the API key)"),
        (
            403,
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
            "provider_auth",
            "forbidden (check the API key and its permissions)",
        ),
        (
            404,
            "not_found_error",
            "model: claude-nope",
            "provider_request",
            "not found (check the base URL and the model name)",
        ),
    ];
    for (status, kind, message, class, hint) in cases {
        let server = ScriptedServer::start(vec![anthropic::error(status, kind, message)]);
        let err = call(&provider(&server), false, &Collect::default()).await.unwrap_err();
        assert_eq!(err.to_string(), format!("{}: HTTP {status}: {hint}: {message}", endpoint(&server)));
        assert_eq!(err.class(), class, "{status}");
    }
}

#[tokio::test]
async fn extra_headers_are_sent_beside_the_api_ones() {
    let server =
        ScriptedServer::start(vec![anthropic::message(vec![anthropic::text("ok")], anthropic::Usage::new(1, 1))]);
    let config = EndpointConfig {
        headers: vec![("anthropic-beta".into(), "interleaved-thinking-2025-05-14".into())],
        ..config(&server)
    };
    let provider = AnthropicProvider::new(config, AnthropicOptions::default()).unwrap();
    call(&provider, false, &Collect::default()).await.unwrap();
    let sent = &server.requests()[0];
    assert_headers(sent);
    assert_eq!(sent.header("anthropic-beta"), Some("interleaved-thinking-2025-05-14"));
}

#[tokio::test]
async fn unknown_events_deltas_and_block_types_are_ignored() {
    let mut frames = anthropic::stream_frames(&[anthropic::text("hello")], anthropic::Usage::new(3, 2));
    let stop = frames.pop().unwrap();
    frames.push(frame(json!({"type": "future_event", "index": 0, "whatever": [1, 2]})));
    frames.push(frame(
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use", "id": "s"}}),
    ));
    frames.push(frame(
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{"}}),
    ));
    frames.push(frame(json!({"type": "content_block_stop", "index": 1})));
    frames
        .push(frame(json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}})));
    frames.push(frame(
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta", "citation": {}}}),
    ));
    frames
        .push(frame(json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "!"}})));
    frames.push(frame(json!({"type": "content_block_stop", "index": 2})));
    frames.push("event: ping\ndata: {\"type\": \"ping\"}\n\n: a comment line\n\n".to_owned());
    frames.push(stop);
    let server = ScriptedServer::start(vec![frames_reply(frames)]);
    let response = call(&provider(&server), true, &Collect::default()).await.unwrap();
    assert_eq!(response.message.content, "hello!");
    assert!(response.message.tool_calls.is_empty());
}

fn message_start() -> String {
    frame(json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "usage": {"input_tokens": 3, "output_tokens": 1}}}))
}

fn message_stop() -> String {
    frame(json!({"type": "message_stop"}))
}

#[tokio::test]
async fn a_delta_for_a_block_never_started_is_invalid_red() {
    let server = ScriptedServer::start(vec![frames_reply(vec![
        message_start(),
        frame(json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}})),
        message_stop(),
    ])]);
    let err = call(&provider(&server), true, &Collect::default()).await.unwrap_err();
    assert!(matches!(err, LlmError::InvalidResponse { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: invalid response: content_block_delta for content block 3, which never started",
            endpoint(&server)
        )
    );
}

#[tokio::test]
async fn tool_input_fragments_that_never_form_json_are_invalid_red() {
    let fragment = |piece: &str| {
        frame(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}}),
        )
    };
    let server = ScriptedServer::start(vec![frames_reply(vec![
        message_start(),
        frame(json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_X", "name": "shell", "input": {}}})),
        fragment("{\"command\": "),
        fragment("\"rm -rf bu"),
        fragment("ild"),
        frame(json!({"type": "content_block_stop", "index": 0})),
        message_stop(),
    ])]);
    let err = call(&provider(&server), true, &Collect::default()).await.unwrap_err();
    assert!(matches!(err, LlmError::InvalidResponse { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "{}: invalid response: tool_use block 0: the input is not valid JSON",
            endpoint(&server)
        )),
        "{text}"
    );
}

#[tokio::test]
async fn a_stream_without_message_stop_is_cut_and_not_retried_red() {
    let mut frames = anthropic::stream_frames(
        &[anthropic::tool_use("toolu_1", "shell", json!({"command": "rm -rf build"}))],
        anthropic::Usage::new(3, 4),
    );
    frames.pop();
    let server = ScriptedServer::start(vec![
        frames_reply(frames),
        anthropic::stream(vec![anthropic::text("a second answer")], anthropic::Usage::new(1, 1)),
    ]);
    let provider =
        AnthropicProvider::new(EndpointConfig { max_retries: 3, ..config(&server) }, Default::default()).unwrap();
    let err = call(&provider, true, &Collect::default()).await.unwrap_err();
    assert!(matches!(err, LlmError::Transport { .. }), "{err:?}");
    assert_eq!(err.to_string(), format!("{}: stream ended mid-message", endpoint(&server)));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn an_error_event_in_a_stream_keeps_its_text() {
    let server = ScriptedServer::start(vec![frames_reply(vec![
        message_start(),
        frame(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    ])]);
    let err = call(&provider(&server), true, &Collect::default()).await.unwrap_err();
    assert_eq!(err.to_string(), format!("{}: provider error in stream: Overloaded", endpoint(&server)));
    assert_eq!(err.class(), "provider_unavailable");
}

/// Negative, missing and beyond-2^53 counts: never a panic, never less spend than reported.
#[tokio::test]
async fn hostile_usage_counts_never_panic_nor_hide_spend_red() {
    let beyond = 9_007_199_254_740_993_u64;
    let mut hostile = anthropic::message_body(&[anthropic::text("ok")], anthropic::Usage::default());
    hostile["usage"] =
        json!({"input_tokens": -5, "cache_read_input_tokens": beyond, "cache_creation_input_tokens": 1e300});
    let mut missing = anthropic::message_body(&[anthropic::text("ok")], anthropic::Usage::default());
    missing.as_object_mut().unwrap().remove("usage");
    let streamed = vec![
        frame(json!({"type": "message_start", "message": {"usage": {"input_tokens": -1, "output_tokens": "7"}}})),
        frame(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "ok"}})),
        frame(json!({"type": "content_block_stop", "index": 0})),
        frame(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": beyond, "input_tokens": 12}})),
        message_stop(),
    ];
    let server = ScriptedServer::start(vec![
        Reply::status(200, hostile.to_string()),
        Reply::status(200, missing.to_string()),
        frames_reply(streamed),
    ]);
    let provider = provider(&server);
    let first = call(&provider, false, &Collect::default()).await.unwrap();
    assert_eq!(
        first.usage,
        Usage { input_tokens: u64::MAX, output_tokens: 0, cache_read_tokens: beyond, cache_write_tokens: u64::MAX }
    );
    assert_eq!(call(&provider, false, &Collect::default()).await.unwrap().usage, Usage::default());
    let streamed = call(&provider, true, &Collect::default()).await.unwrap();
    assert_eq!(streamed.usage, Usage::new(12, beyond));
    assert_eq!(streamed.message.content, "ok");
}

#[tokio::test]
async fn an_api_key_echoed_by_the_server_never_reaches_the_error_red() {
    let echo = format!("invalid x-api-key: {KEY}");
    let server = ScriptedServer::start(vec![
        anthropic::error(401, "authentication_error", &echo),
        Reply::raw(200, "application/json", format!("{{\"type\": \"message\", \"oops\": \"{KEY}")),
        frames_reply(vec![message_start(), frame(anthropic::error_body("api_error", &format!("bad key {KEY}")))]),
        frames_reply(vec![message_start(), format!("event: message_start\ndata: {{{KEY}\n\n")]),
    ]);
    let provider = provider(&server);
    let mut texts = vec![format!("{provider:?}")];
    texts.push(call(&provider, false, &Collect::default()).await.unwrap_err().to_string());
    texts.push(call(&provider, false, &Collect::default()).await.unwrap_err().to_string());
    texts.push(call(&provider, true, &Collect::default()).await.unwrap_err().to_string());
    texts.push(call(&provider, true, &Collect::default()).await.unwrap_err().to_string());
    for text in &texts {
        assert!(!text.contains(KEY) && !text.contains(&KEY[7..24]), "key leaked: {text}");
    }
    assert!(texts[1].contains("invalid x-api-key: [REDACTED]"), "{}", texts[1]);
}

/// The idle bound of the stalled-stream tests.
const IDLE: Duration = Duration::from_millis(300);

/// A streamed call whose server sends `frames` and then stalls: its error (the idle deadline,
/// checked) and how much progress it reported.
async fn stalled_after(frames: Vec<String>) -> (LlmError, u32, ScriptedServer) {
    let gate = Gate::new();
    let server = ScriptedServer::start(vec![frames_reply(frames).hold_mid_stream(&gate)]);
    let provider = AnthropicProvider::new(
        EndpointConfig { stream_idle_timeout: IDLE, request_timeout: Duration::from_secs(60), ..config(&server) },
        AnthropicOptions::default(),
    )
    .unwrap();
    let observer = Collect::default();
    let err = tokio::time::timeout(Duration::from_secs(10), call(&provider, true, &observer))
        .await
        .expect("the idle deadline did not bound the call")
        .unwrap_err();
    assert!(matches!(err, LlmError::Timeout { silent_for: Some(limit), .. } if limit == IDLE), "{err:?}");
    (err, observer.progress(), server)
}

/// Pings keep the connection alive but add nothing: the idle deadline still fires, as a
/// silence, and no progress was reported.
#[tokio::test]
async fn a_ping_only_stream_hits_the_stream_idle_deadline_red() {
    let ping = || frame(json!({"type": "ping"}));
    for started in [false, true] {
        let mut frames: Vec<String> = (0..8).map(|_| ping()).collect();
        if started {
            frames.insert(0, message_start());
        }
        let (err, progress, server) = stalled_after(frames).await;
        assert_eq!(
            err.to_string(),
            format!("{}: stream idle for more than 300 ms (no data from the provider)", endpoint(&server))
        );
        assert_eq!(progress, u32::from(started), "pings counted as progress");
    }
}

/// L1: blocks of a type odek does not keep add nothing to the answer: a stream of them, then
/// silence, hits the idle deadline with no progress reported. Before, each one counted as
/// progress, so a server dripping them kept the call alive for ever.
#[tokio::test]
async fn a_stream_of_unknown_blocks_hits_the_stream_idle_deadline_red() {
    let mut frames = Vec::new();
    for index in 0..8 {
        frames.push(frame(
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search"}}),
        ));
        frames.push(frame(json!({"type": "content_block_stop", "index": index})));
    }
    let (_, progress, _server) = stalled_after(frames).await;
    assert_eq!(progress, 0, "unknown blocks counted as progress");
}

#[tokio::test]
async fn an_empty_key_sends_no_x_api_key() {
    let server =
        ScriptedServer::start(vec![anthropic::message(vec![anthropic::text("ok")], anthropic::Usage::new(1, 1))]);
    let provider =
        AnthropicProvider::new(EndpointConfig { api_key: String::new(), ..config(&server) }, Default::default())
            .unwrap();
    call(&provider, false, &Collect::default()).await.unwrap();
    let sent = &server.requests()[0];
    assert!(sent.header("x-api-key").is_none());
    assert_eq!(sent.header("anthropic-version"), Some(ANTHROPIC_VERSION));
}
