//! The OpenAI-compatible provider against a real loopback server: request shape, plain and
//! streamed answers, errors, retries, timeouts and cancellation.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use odek_llm::{
    ChatRequest, ChatResponse, EndpointConfig, LlmError, Message, NoStreamObserver, OpenAiProvider, Provider,
    StreamObserver, Thinking, ToolCall, ToolDefinition, Usage,
};
use odek_test_support::openai::{Gate, Reply, ScriptedServer};
use serde_json::json;

const KEY: &str = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz";

fn config(server: &ScriptedServer) -> EndpointConfig {
    EndpointConfig {
        max_retries: 0,
        retry_base_delay: Duration::from_millis(1),
        retry_max_delay: Duration::from_millis(4),
        ..EndpointConfig::new(format!("{}/", server.base_url()), KEY)
    }
}

fn provider(server: &ScriptedServer) -> OpenAiProvider {
    OpenAiProvider::new(config(server)).unwrap()
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
        model: "test-model",
        messages,
        tools,
        thinking: Thinking::Default,
        stream,
        side_call: false,
        timeout: None,
        output_schema: None,
    }
}

async fn call(provider: &OpenAiProvider, stream: bool) -> Result<ChatResponse, LlmError> {
    let messages = [Message::system("be brief"), Message::user("list files")];
    let tools = [shell_tool()];
    provider.complete(request(&messages, &tools, stream), &NoStreamObserver).await
}

fn endpoint(server: &ScriptedServer) -> String {
    format!("{}/chat/completions", server.base_url())
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
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, is_reasoning)| *is_reasoning == reasoning)
            .map(|(text, _)| text.as_str())
            .collect()
    }
}

#[tokio::test]
async fn non_streaming_answer_with_tool_calls_and_usage() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("call_1", "shell", r#"{"command":"ls"}"#)])
            .with_usage(12, 3)
            .with_reasoning("look first"),
    ]);
    let response = call(&provider(&server), false).await.unwrap();
    assert_eq!(response.message.tool_calls, vec![ToolCall::new("call_1", "shell", r#"{"command":"ls"}"#)]);
    assert_eq!(response.message.content, "");
    assert_eq!(response.message.reasoning_content.as_deref(), Some("look first"));
    assert_eq!(response.usage, Usage::new(12, 3));
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(sent.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(sent.body["model"], "test-model");
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "list files"}])
    );
    assert_eq!(
        sent.body["tools"],
        json!([{"type": "function", "function": {"name": "shell", "description": "run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}])
    );
    assert_eq!(sent.body["tool_choice"], "auto");
    for absent in ["stream", "stream_options", "thinking", "reasoning_effort"] {
        assert!(sent.body.get(absent).is_none(), "{absent} sent: {}", sent.body);
    }
}

#[tokio::test]
async fn request_body_carries_history_thinking_and_omits_empty_tools() {
    let server = ScriptedServer::start(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    let provider = provider(&server);
    let mut assistant = Message::assistant("");
    assistant.reasoning_content = Some("why".into());
    assistant.tool_calls = vec![ToolCall::new("c1", "shell", "{}")];
    let messages = [Message::user("go"), assistant, Message::tool("c1", "shell", "out")];
    for thinking in [Thinking::Enabled, Thinking::Disabled, Thinking::Medium] {
        let request = ChatRequest { thinking, ..request(&messages, &[], false) };
        provider.complete(request, &NoStreamObserver).await.unwrap();
    }
    let requests = server.requests();
    let body = &requests[0].body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "reasoning_content": "why",
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
            {"role": "tool", "content": "out", "tool_call_id": "c1", "name": "shell"},
        ])
    );
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none(), "{body}");
    assert_eq!(body["thinking"], json!({"type": "enabled"}));
    assert_eq!(requests[1].body["thinking"], json!({"type": "disabled"}));
    assert_eq!(requests[2].body["reasoning_effort"], "medium");
}

#[tokio::test]
async fn streaming_answer_with_tool_calls_and_usage() {
    let server = ScriptedServer::start(vec![Reply::sse(
        Reply::tool_calls(vec![
            ("call_a", "shell", r#"{"command":"ls -la /tmp"}"#),
            ("call_b", "shell", r#"{"command":"pwd"}"#),
        ])
        .with_reasoning("thinking it over")
        .with_usage(40, 9),
    )]);
    let observer = Collect::default();
    let messages = [Message::user("go")];
    let tools = [shell_tool()];
    let response = provider(&server).complete(request(&messages, &tools, true), &observer).await.unwrap();
    assert_eq!(
        response.message.tool_calls,
        vec![
            ToolCall::new("call_a", "shell", r#"{"command":"ls -la /tmp"}"#),
            ToolCall::new("call_b", "shell", r#"{"command":"pwd"}"#),
        ]
    );
    assert_eq!(response.message.reasoning_content.as_deref(), Some("thinking it over"));
    assert_eq!(response.usage, Usage::new(40, 9));
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(observer.text(true), "thinking it over");
    assert!(observer.0.lock().unwrap().len() > 1, "reasoning arrived in several deltas");

    let sent = &server.requests()[0];
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn streamed_text_arrives_as_deltas_and_whole() {
    let text = "The files are: a.txt, b.txt and ünïcødé.md.";
    let server = ScriptedServer::start(vec![Reply::sse(Reply::text(text).with_usage(5, 6))]);
    let observer = Collect::default();
    let messages = [Message::user("go")];
    let response = provider(&server).complete(request(&messages, &[], true), &observer).await.unwrap();
    assert_eq!(response.message.content, text);
    assert_eq!(response.message.reasoning_content, None);
    assert_eq!(observer.text(false), text);
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn fragmented_tool_call_arguments_are_joined_by_index() {
    let chunk = |delta: serde_json::Value| {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string()
    };
    let server = ScriptedServer::start(vec![Reply::sse_events(vec![
        chunk(json!({"role": "assistant", "content": null})),
        chunk(json!({"tool_calls": [{"index": 0, "id": "c0", "type": "function", "function": {"name": "shell", "arguments": ""}}]})),
        chunk(json!({"tool_calls": [{"index": 1, "id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{\"comm"}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"command\""}}]})),
        chunk(json!({"tool_calls": [{"index": 1, "function": {"arguments": "and\":\"b\"}"}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": ":\"a\"}"}}]})),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
        json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2, "prompt_cache_hit_tokens": 5, "prompt_cache_miss_tokens": 2}}).to_string(),
        "[DONE]".to_owned(),
    ])]);
    let response = call(&provider(&server), true).await.unwrap();
    assert_eq!(
        response.message.tool_calls,
        vec![ToolCall::new("c0", "shell", r#"{"command":"a"}"#), ToolCall::new("c1", "shell", r#"{"command":"b"}"#)]
    );
    assert_eq!(response.usage, Usage { cache_read_tokens: 5, ..Usage::new(7, 2) });
}

#[tokio::test]
async fn object_arguments_and_separate_cache_tokens_in_plain_answers() {
    let body = json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "shell", "arguments": {"command": "ls"}}}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20},
    });
    let server = ScriptedServer::start(vec![Reply::raw(200, "application/json", body.to_string())]);
    let response = call(&provider(&server), false).await.unwrap();
    assert_eq!(response.message.tool_calls, vec![ToolCall::new("x", "shell", r#"{"command":"ls"}"#)]);
    assert_eq!(
        response.usage,
        Usage { input_tokens: 130, output_tokens: 1, cache_read_tokens: 100, cache_write_tokens: 20 }
    );
}

#[tokio::test]
async fn a_server_that_ignores_stream_is_read_as_json() {
    let server = ScriptedServer::start(vec![Reply::text("plain").with_usage(1, 1)]);
    let response = call(&provider(&server), true).await.unwrap();
    assert_eq!(response.message.content, "plain");
}

#[tokio::test]
async fn every_error_status_names_the_endpoint_and_the_provider_message() {
    let cases = [
        (
            401,
            "Incorrect API key provided",
            "provider_auth",
            "unauthorized (check the API key): Incorrect API key provided",
        ),
        (
            403,
            "Project has no access",
            "provider_auth",
            "forbidden (check the API key and its permissions): Project has no access",
        ),
        (
            404,
            "The model `nope` does not exist",
            "provider_request",
            "not found (check the base URL and the model name): The model `nope` does not exist",
        ),
        (429, "Slow down", "rate_limited", "rate limited: Slow down"),
        (500, "boom", "provider_unavailable", "server error: boom"),
        (503, "overloaded", "provider_unavailable", "server error: overloaded"),
        (422, "bad field", "provider_request", "bad field"),
    ];
    for (status, message, class, detail) in cases {
        let server =
            ScriptedServer::start(vec![Reply::status(status, json!({"error": {"message": message}}).to_string())]);
        let err = call(&provider(&server), false).await.unwrap_err();
        assert_eq!(err.to_string(), format!("{}: HTTP {status}: {detail}", endpoint(&server)));
        assert_eq!(err.class(), class, "{status}");
    }
}

#[tokio::test]
async fn context_length_errors_keep_the_provider_text() {
    let message = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.";
    let server = ScriptedServer::start(vec![Reply::status(
        400,
        json!({"error": {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}})
            .to_string(),
    )]);
    let err = call(&provider(&server), false).await.unwrap_err();
    assert_eq!(err.to_string(), format!("{}: HTTP 400: {message}", endpoint(&server)));
    assert_eq!(err.class(), "provider_request");
}

#[tokio::test]
async fn non_json_error_bodies_are_bounded() {
    let page = format!("<html>{}</html>", "x".repeat(5000));
    let server = ScriptedServer::start(vec![Reply::raw(502, "text/html", page)]);
    let err = call(&provider(&server), false).await.unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with(&format!("{}: HTTP 502: server error: <html>xxx", endpoint(&server))), "{text}");
    assert!(text.chars().count() < 700, "{} chars", text.chars().count());
}

#[tokio::test]
async fn api_key_never_in_errors_red() {
    let echo = json!({"error": {"message": format!("Incorrect API key provided: {KEY}. Authorization: Bearer {KEY}")}});
    let server = ScriptedServer::start(vec![
        Reply::status(401, echo.to_string()),
        Reply::raw(200, "application/json", format!("{{\"oops\": \"{KEY}")),
        Reply::sse_events(vec![json!({"error": {"message": format!("bad key {KEY}")}}).to_string()]),
    ]);
    let provider = provider(&server);
    let mut texts = vec![format!("{provider:?}")];
    texts.push(call(&provider, false).await.unwrap_err().to_string());
    texts.push(call(&provider, false).await.unwrap_err().to_string());
    texts.push(call(&provider, true).await.unwrap_err().to_string());
    let refused = OpenAiProvider::new(EndpointConfig { base_url: closed_port_url(), ..config(&server) }).unwrap();
    texts.push(call(&refused, false).await.unwrap_err().to_string());
    for text in &texts {
        assert!(!text.contains(KEY) && !text.contains(&KEY[3..20]), "key leaked: {text}");
    }
    assert!(texts[1].contains("Incorrect API key provided: [REDACTED]"), "{}", texts[1]);
}

fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test]
async fn connection_refused_is_classified() {
    let provider =
        OpenAiProvider::new(EndpointConfig { max_retries: 0, ..EndpointConfig::new(closed_port_url(), KEY) }).unwrap();
    let err = call(&provider, false).await.unwrap_err();
    assert_eq!(err.class(), "connection_refused", "{err}");
    assert!(
        err.to_string().starts_with(&format!("{}: connection refused: tcp connect error: ", provider.endpoint())),
        "{err}"
    );
}

/// A plain-HTTP endpoint loads no trust store (a start-up cost), so it cannot follow a
/// redirect to https: the error says to configure the https address instead.
#[tokio::test]
async fn an_http_base_url_redirected_to_https_names_the_https_address() {
    let server = ScriptedServer::start(vec![
        Reply::status(307, "").with_header("location", "https://127.0.0.1:9/v1/chat/completions"),
    ]);
    let err = call(&provider(&server), false).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: connection failed: the http base_url redirects to https; set base_url to the https address",
            endpoint(&server)
        )
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retries_on_429_and_503_then_success() {
    let server = ScriptedServer::start(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).with_header("Retry-After", "0"),
        Reply::status(503, r#"{"error":{"message":"overloaded"}}"#),
        Reply::text("finally").with_usage(2, 1),
    ]);
    let provider = OpenAiProvider::new(EndpointConfig { max_retries: 3, ..config(&server) }).unwrap();
    let response = call(&provider, false).await.unwrap();
    assert_eq!(response.message.content, "finally");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].raw_body, requests[2].raw_body, "a retry sends the same body");
}

#[tokio::test]
async fn retries_stop_at_the_limit_and_4xx_is_not_retried() {
    let server = ScriptedServer::start(vec![Reply::status(500, "{}"), Reply::status(500, "{}"), Reply::text("unused")]);
    let provider = OpenAiProvider::new(EndpointConfig { max_retries: 1, ..config(&server) }).unwrap();
    let err = call(&provider, false).await.unwrap_err();
    assert_eq!(err.to_string(), format!("{}: HTTP 500: server error", endpoint(&server)));
    assert_eq!(server.requests().len(), 2);

    let server = ScriptedServer::start(vec![Reply::status(400, "{}"), Reply::text("unused")]);
    let provider = OpenAiProvider::new(EndpointConfig { max_retries: 3, ..config(&server) }).unwrap();
    assert_eq!(call(&provider, false).await.unwrap_err().class(), "provider_request");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn no_retry_after_first_streamed_byte_red() {
    let server = ScriptedServer::start(vec![
        Reply::sse_cut(Reply::text("the first half of an answer that will be cut")),
        Reply::sse(Reply::text("a second answer the observer must never see")),
    ]);
    let provider = OpenAiProvider::new(EndpointConfig { max_retries: 3, ..config(&server) }).unwrap();
    let observer = Collect::default();
    let messages = [Message::user("go")];
    let err = provider.complete(request(&messages, &[], true), &observer).await.unwrap_err();
    assert_eq!(err.to_string(), format!("{}: stream ended mid-message", endpoint(&server)));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.remaining(), 1);
    let seen = observer.text(false);
    assert!(!seen.is_empty() && "the first half of an answer that will be cut".starts_with(&seen), "{seen}");
}

#[tokio::test]
async fn truncated_sse_is_an_error() {
    let server = ScriptedServer::start(vec![Reply::sse_cut(
        Reply::tool_calls(vec![("c", "shell", r#"{"command":"rm -rf build"}"#)]).with_usage(1, 1),
    )]);
    let err = call(&provider(&server), true).await.unwrap_err();
    assert!(matches!(err, LlmError::Transport { .. }), "{err:?}");
    assert_eq!(err.to_string(), format!("{}: stream ended mid-message", endpoint(&server)));
}

#[tokio::test]
async fn a_finished_stream_without_done_is_whole() {
    let server = ScriptedServer::start(vec![Reply::sse_events(vec![
        json!({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": null}]}).to_string(),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
    ])]);
    assert_eq!(call(&provider(&server), true).await.unwrap().message.content, "ok");
}

#[tokio::test]
async fn malformed_json_is_invalid_response() {
    let server = ScriptedServer::start(vec![
        Reply::raw(200, "application/json", "{\"choices\": [ nope"),
        Reply::raw(200, "application/json", r#"{"choices": []}"#),
        Reply::sse_events(vec!["{not json".to_owned(), "[DONE]".to_owned()]),
    ]);
    let provider = provider(&server);
    let first = call(&provider, false).await.unwrap_err();
    assert!(matches!(first, LlmError::InvalidResponse { .. }), "{first:?}");
    assert_eq!(first.class(), "invalid_json");
    assert!(first.to_string().starts_with(&format!("{}: invalid response: body is not JSON", endpoint(&server))));
    let second = call(&provider, false).await.unwrap_err();
    assert_eq!(second.to_string(), format!("{}: invalid response: no choices in the answer", endpoint(&server)));
    let third = call(&provider, true).await.unwrap_err();
    assert!(third.to_string().contains("invalid response: stream event is not JSON"), "{third}");
}

#[tokio::test]
async fn provider_error_inside_a_stream_keeps_its_text() {
    let server = ScriptedServer::start(vec![Reply::sse_events(vec![
        json!({"error": {"message": "maximum context length exceeded", "code": "context_length_exceeded"}}).to_string(),
    ])]);
    let err = call(&provider(&server), true).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: provider error in stream: maximum context length exceeded", endpoint(&server))
    );
    assert_eq!(err.class(), "provider_unavailable");
}

#[tokio::test]
async fn stream_idle_timeout() {
    let gate = Gate::new();
    let server =
        ScriptedServer::start(vec![Reply::sse(Reply::text("one two three four five six")).hold_mid_stream(&gate)]);
    let provider =
        OpenAiProvider::new(EndpointConfig { stream_idle_timeout: Duration::from_millis(200), ..config(&server) })
            .unwrap();
    let err = call(&provider, true).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout { .. }), "{err:?}");
    assert_eq!(err.class(), "network_timeout");
    assert_eq!(
        err.to_string(),
        format!("{}: stream idle for more than 200 ms (no data from the provider)", endpoint(&server))
    );
}

#[tokio::test]
async fn the_call_deadline_bounds_a_silent_server() {
    let gate = Gate::new();
    let server = ScriptedServer::start(vec![Reply::text("late").after_release(&gate)]);
    let messages = [Message::user("go")];
    let request = ChatRequest { timeout: Some(Duration::from_millis(150)), ..request(&messages, &[], false) };
    let err = provider(&server).complete(request, &NoStreamObserver).await.unwrap_err();
    assert_eq!(err.to_string(), format!("{}: no answer within 150 ms", endpoint(&server)));
    assert_eq!(err.class(), "network_timeout");
}

#[tokio::test]
async fn dropping_the_future_cancels_cleanly() {
    let gate = Gate::new();
    let server =
        Arc::new(ScriptedServer::start(vec![Reply::text("never read").after_release(&gate), Reply::text("next")]));
    let provider = provider(&server);
    let messages = [Message::user("go")];
    {
        let pending = provider.complete(request(&messages, &[], false), &NoStreamObserver);
        tokio::pin!(pending);
        let waiting_server = Arc::clone(&server);
        let arrived = tokio::task::spawn_blocking(move || waiting_server.wait_for_requests(1, Duration::from_secs(10)));
        tokio::select! {
            answer = &mut pending => panic!("answered before the gate opened: {answer:?}"),
            arrived = arrived => assert_eq!(arrived.unwrap().len(), 1),
        }
    }
    gate.release();
    let response = provider.complete(request(&messages, &[], false), &NoStreamObserver).await.unwrap();
    assert_eq!(response.message.content, "next");
}

/// A loopback server outside the scripted one: it reads each request's head and then plays
/// `behaviour` on the raw socket until the client goes away.
struct RawServer {
    base_url: String,
}

#[derive(Clone, Copy)]
enum Behaviour {
    /// Accepts the request and never answers.
    Silent,
    /// Sends an SSE head, then `: ping` comments forever.
    KeepAliveOnly,
    /// Sends an SSE head, then chunks that carry nothing (`{"choices":[{"delta":{}}]}`) forever.
    EmptyChunks,
    /// Sends an SSE head, then the same finish reason and usage over and over, never `[DONE]`.
    RepeatedFinish,
    /// Sends an SSE head, then a word every 100 ms (each gap shorter than the idle bound, the
    /// whole answer longer), then the finish reason and `[DONE]`.
    SlowWords,
}

impl RawServer {
    fn start(behaviour: Behaviour) -> RawServer {
        use std::io::{BufRead, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|read| read > 0) && line != "\r\n" {
                        line.clear();
                    }
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                    let chunk = |text: &str| {
                        format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {"content": text}}]}))
                    };
                    let mut pieces: Vec<String> = match behaviour {
                        Behaviour::Silent => {
                            // Hold the connection open without a byte until the client drops it.
                            let mut sink = [0; 1024];
                            while std::io::Read::read(&mut reader, &mut sink).is_ok_and(|read| read > 0) {}
                            return;
                        }
                        Behaviour::KeepAliveOnly | Behaviour::EmptyChunks | Behaviour::RepeatedFinish => Vec::new(),
                        Behaviour::SlowWords => (0..8).map(|i| chunk(&format!("w{i} "))).collect(),
                    };
                    if stream.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    if matches!(behaviour, Behaviour::SlowWords) {
                        pieces.push(format!(
                            "data: {}\n\ndata: [DONE]\n\n",
                            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                        ));
                        for piece in pieces {
                            std::thread::sleep(Duration::from_millis(100));
                            if stream.write_all(piece.as_bytes()).is_err() {
                                return;
                            }
                        }
                        return;
                    }
                    let filler = match behaviour {
                        Behaviour::EmptyChunks => {
                            format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {}}]}))
                        }
                        Behaviour::RepeatedFinish => format!(
                            "data: {}\n\n",
                            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                                   "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
                        ),
                        _ => ": ping\n\n".to_owned(),
                    };
                    while stream.write_all(filler.as_bytes()).is_ok() {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                });
            }
        });
        RawServer { base_url }
    }

    fn provider(&self, idle: Duration) -> OpenAiProvider {
        OpenAiProvider::new(EndpointConfig {
            max_retries: 0,
            stream_idle_timeout: idle,
            request_timeout: Duration::from_secs(120),
            ..EndpointConfig::new(self.base_url.clone(), KEY)
        })
        .unwrap()
    }

    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }
}

/// Bounds the test, not odek: the old code waited for the 120 s request timeout or forever.
async fn within_ten_seconds<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), work).await.expect("the call was not bounded by the idle timer")
}

/// The wait for the response head of a streamed call was bounded only by the 300 s request
/// timeout, not by the idle bound.
#[tokio::test]
async fn a_streamed_call_without_a_response_head_is_idle_red() {
    let server = RawServer::start(Behaviour::Silent);
    let provider = server.provider(Duration::from_millis(300));
    let err = within_ten_seconds(call(&provider, true)).await.unwrap_err();
    assert_eq!(err.class(), "network_timeout");
    assert_eq!(
        err.to_string(),
        format!("{}: no response head within 300 ms (no data from the provider)", server.endpoint())
    );
}

/// `: ping` comments, empty chunks and a finish reason and usage repeated forever restarted the
/// idle timer: a provider that only kept the connection alive held the call forever.
#[tokio::test]
async fn keep_alive_comments_and_empty_chunks_do_not_restart_the_idle_timer_red() {
    for behaviour in [Behaviour::KeepAliveOnly, Behaviour::EmptyChunks, Behaviour::RepeatedFinish] {
        let server = RawServer::start(behaviour);
        let provider = server.provider(Duration::from_millis(300));
        let err = within_ten_seconds(call(&provider, true)).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: stream idle for more than 300 ms (no data from the provider)", server.endpoint())
        );
    }
}

/// The bound is between chunks that carry data, not on the whole answer.
#[tokio::test]
async fn an_answer_that_keeps_flowing_outlasts_the_idle_bound() {
    let server = RawServer::start(Behaviour::SlowWords);
    let provider = server.provider(Duration::from_millis(400));
    let response = within_ten_seconds(call(&provider, true)).await.unwrap();
    assert_eq!(response.message.content, "w0 w1 w2 w3 w4 w5 w6 w7 ");
}
