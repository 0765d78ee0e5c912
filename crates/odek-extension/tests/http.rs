//! The SDK's Streamable HTTP transport, end to end over real 127.0.0.1 connections: sessions,
//! JSON and SSE answers, requests to the client answered by POST, the standalone GET stream,
//! resumption with Last-Event-ID, DELETE, batches, and every security rule (`…_red`).

// Test helpers outside #[test] functions may panic freely too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use odek_extension::{HttpOptions, HttpServer, Server, ToolDef, ToolResponse};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How long any single wait in these tests may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(10);

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Signals from the `hang` tool: it started, and its future was dropped (cancelled).
struct Probes {
    started: mpsc::UnboundedReceiver<()>,
    dropped: mpsc::UnboundedReceiver<()>,
}

impl Probes {
    async fn started(&mut self) {
        tokio::time::timeout(DEADLINE, self.started.recv()).await.expect("hang did not start").unwrap();
    }
    async fn dropped(&mut self) {
        tokio::time::timeout(DEADLINE, self.dropped.recv()).await.expect("hang was not cancelled").unwrap();
    }
}

struct DropSignal(mpsc::UnboundedSender<()>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// echo {text}; progress {steps} (that many progress notifications, then "done"); ask_roots
/// (roots/list to the client, its result as text); add_tool (adds "added", which sends
/// tools/list_changed); hang (never answers; see [`Probes`]).
fn test_server() -> (Server, Probes) {
    let object = || json!({"type":"object"});
    let (started_sender, started) = mpsc::unbounded_channel();
    let (dropped_sender, dropped) = mpsc::unbounded_channel();
    let server = Server::new("http-test", "1.2.3")
        .tool(ToolDef::new("echo", "Echoes text", object()), |_, arguments| async move {
            ToolResponse::text(arguments["text"].as_str().unwrap_or_default())
        })
        .tool(ToolDef::new("progress", "Reports progress", object()), |context, arguments| async move {
            let steps = arguments["steps"].as_u64().unwrap_or(1);
            for step in 1..=steps {
                context.progress(step as f64, Some(steps as f64), Some("working")).await.unwrap();
            }
            ToolResponse::text("done")
        })
        .tool(ToolDef::new("ask_roots", "Asks the client for its roots", object()), |context, _| async move {
            match context.request("roots/list", None, DEADLINE).await {
                Ok(result) => ToolResponse::text(result.to_string()),
                Err(error) => ToolResponse::error(error.to_string()),
            }
        })
        .tool(ToolDef::new("add_tool", "Adds the tool \"added\"", object()), |context, _| async move {
            context
                .update_tools(|tools| {
                    tools.add(ToolDef::new("added", "", json!({"type":"object"})), |_, _| async {
                        ToolResponse::text("added called")
                    })
                })
                .await
                .unwrap()
                .unwrap();
            ToolResponse::text("ok")
        })
        .tool(ToolDef::new("hang", "Never answers", object()), move |_, _| {
            let started = started_sender.clone();
            let dropped = DropSignal(dropped_sender.clone());
            async move {
                let _dropped = dropped;
                let _ = started.send(());
                std::future::pending::<ToolResponse>().await
            }
        });
    (server, Probes { started, dropped })
}

/// A served server and a client for it.
struct Harness {
    server: Option<HttpServer>,
    url: String,
    client: reqwest::Client,
}

impl Harness {
    async fn start(server: Server, options: HttpOptions) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = server.serve_http(listener, options).unwrap();
        let url = server.url();
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        Self { server: Some(server), url, client }
    }

    fn address(&self) -> std::net::SocketAddr {
        self.server.as_ref().unwrap().local_addr()
    }

    fn post_request(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(&self.url)
            .header("Accept", ACCEPT_BOTH)
            .header("Content-Type", "application/json")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session);
        }
        request
    }

    async fn post(&self, session: Option<&str>, body: &Value) -> reqwest::Response {
        send(self.post_request(session, body)).await
    }

    /// initialize and notifications/initialized; the session id.
    async fn initialize(&self) -> String {
        let response = self
            .post(None, &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}))
            .await;
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let initialized =
            self.post(Some(&session), &json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
        assert_eq!(initialized.status(), 202);
        session
    }

    /// A request answered as JSON; its JSON-RPC response.
    async fn json(&self, session: &str, body: &Value) -> Value {
        let response = self.post(Some(session), body).await;
        assert_eq!(response.status(), 200);
        assert_eq!(content_type(&response), "application/json");
        response.json().await.unwrap()
    }

    async fn get(&self, session: &str, last_event_id: Option<&str>) -> reqwest::Response {
        let mut request =
            self.client.get(&self.url).header("Accept", "text/event-stream").header("Mcp-Session-Id", session);
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        send(request).await
    }
}

async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    tokio::time::timeout(DEADLINE, request.send()).await.expect("no response in time").unwrap()
}

fn content_type(response: &reqwest::Response) -> String {
    response.headers().get("content-type").map(|value| value.to_str().unwrap().to_owned()).unwrap_or_default()
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":arguments}})
}

fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap()
}

/// The events of an SSE response: `(id, data as JSON)`, comments skipped.
struct Events {
    stream: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    buffer: Vec<u8>,
}

impl Events {
    fn of(response: reqwest::Response) -> Self {
        assert_eq!(content_type(&response), "text/event-stream");
        Self { stream: Box::pin(response.bytes_stream()), buffer: Vec::new() }
    }

    /// The next event, or `None` once the stream ended.
    async fn next(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\n\n") {
                let raw: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let text = String::from_utf8(raw).unwrap();
                let mut id = String::new();
                let mut data = Vec::new();
                for line in text.lines() {
                    if let Some(value) = line.strip_prefix("id: ") {
                        id = value.to_owned();
                    } else if let Some(value) = line.strip_prefix("data: ") {
                        data.push(value);
                    }
                }
                if data.is_empty() {
                    continue;
                }
                return Some((id, serde_json::from_str(&data.join("\n")).unwrap()));
            }
            match tokio::time::timeout(DEADLINE, self.stream.next()).await.expect("no event in time") {
                Some(Ok(chunk)) => self.buffer.extend_from_slice(&chunk),
                _ => {
                    assert!(self.buffer.iter().all(u8::is_ascii_whitespace), "a partial event at the end");
                    return None;
                }
            }
        }
    }
}

/// Writes `request` on a fresh connection and reads what comes back until the server closes
/// it or sends a whole response head and `stop_after_head` is set.
async fn raw_exchange(address: std::net::SocketAddr, request: &[u8], stop_after_head: bool) -> String {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(DEADLINE, stream.read(&mut buffer)).await.expect("the server kept silent");
        match read {
            Ok(0) | Err(_) => break,
            Ok(count) => received.extend_from_slice(&buffer[..count]),
        }
        if stop_after_head && received.windows(4).any(|window| window == b"\r\n\r\n") {
            break;
        }
    }
    String::from_utf8_lossy(&received).into_owned()
}

#[tokio::test]
async fn initialize_assigns_a_session_then_lists_and_calls_tools_as_json() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let response = harness
        .post(None, &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}))
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(content_type(&response), "application/json");
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(session.len(), 64);
    assert!(session.bytes().all(|byte| byte.is_ascii_graphic()));
    let initialized: Value = response.json().await.unwrap();
    assert_eq!(initialized["result"]["serverInfo"], json!({"name":"http-test","version":"1.2.3"}));
    assert_eq!(initialized["result"]["protocolVersion"], json!("2025-03-26"));

    let notified = harness.post(Some(&session), &json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
    assert_eq!(notified.status(), 202);
    assert!(notified.bytes().await.unwrap().is_empty());

    let listed = harness.json(&session, &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "progress", "ask_roots", "add_tool", "hang"]);

    let echoed = harness.json(&session, &call(3, "echo", json!({"text":"héllo"}))).await;
    assert_eq!(
        echoed,
        json!({"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"héllo"}],"isError":false}})
    );
    assert_eq!(harness.json(&session, &json!({"jsonrpc":"2.0","id":"p","method":"ping"})).await["result"], json!({}));
    assert_eq!(
        harness.json(&session, &json!({"jsonrpc":"2.0","id":4,"method":"resources/list"})).await["error"],
        json!({"code":-32601,"message":"method not found"})
    );
    let unknown = harness.json(&session, &call(5, "nope", json!({}))).await;
    assert_eq!(text_of(&unknown), "unknown tool \"nope\"");
}

#[tokio::test]
async fn a_call_that_reports_progress_streams_it_before_its_result() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let mut request = call(7, "progress", json!({"steps":3}));
    request["params"]["_meta"] = json!({"progressToken":"token-7"});
    let mut events = Events::of(harness.post(Some(&session), &request).await);
    for step in 1..=3 {
        let (id, progress) = events.next().await.unwrap();
        assert_eq!(id, format!("1-{step}"));
        assert_eq!(
            progress,
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"token-7","progress":step as f64,"total":3.0,"message":"working"}})
        );
    }
    let (id, result) = events.next().await.unwrap();
    assert_eq!((id.as_str(), result["id"].clone(), text_of(&result)), ("1-4", json!(7), "done"));
    assert!(events.next().await.is_none(), "the stream closes after the response");
}

#[tokio::test]
async fn a_handler_request_to_the_client_is_answered_by_a_separate_post() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let mut events = Events::of(harness.post(Some(&session), &call(9, "ask_roots", json!({}))).await);
    let (_, request) = events.next().await.unwrap();
    assert_eq!(request["method"], json!("roots/list"));
    let answer = json!({"jsonrpc":"2.0","id":request["id"],"result":{"roots":[{"uri":"file:///work"}]}});
    assert_eq!(harness.post(Some(&session), &answer).await.status(), 202);
    let (_, result) = events.next().await.unwrap();
    assert_eq!(result["id"], json!(9));
    assert_eq!(text_of(&result), r#"{"roots":[{"uri":"file:///work"}]}"#);
    assert!(events.next().await.is_none());
}

#[tokio::test]
async fn the_get_stream_receives_tools_list_changed_and_without_it_the_call_stream_does() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let get = harness.get(&session, None).await;
    assert_eq!(get.status(), 200);
    let mut standalone = Events::of(get);
    // The notification goes to the listening GET stream, so the call itself is plain JSON.
    let added = harness.json(&session, &call(2, "add_tool", json!({}))).await;
    assert_eq!(text_of(&added), "ok");
    let (id, changed) = standalone.next().await.unwrap();
    assert_eq!((id.as_str(), changed), ("0-1", json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})));
    let listed = harness.json(&session, &json!({"jsonrpc":"2.0","id":3,"method":"tools/list"})).await;
    assert_eq!(listed["result"]["tools"].as_array().unwrap().last().unwrap()["name"], json!("added"));
    assert_eq!(text_of(&harness.json(&session, &call(4, "added", json!({}))).await), "added called");

    // Another session has no GET stream: its call's own stream carries the notification. Each
    // session has its own tool list, so "added" is new there too.
    let other = harness.initialize().await;
    let mut events = Events::of(harness.post(Some(&other), &call(2, "add_tool", json!({}))).await);
    assert_eq!(events.next().await.unwrap().1["method"], json!("notifications/tools/list_changed"));
    assert_eq!(text_of(&events.next().await.unwrap().1), "ok");
    assert!(events.next().await.is_none());
}

#[tokio::test]
async fn last_event_id_resumes_a_stream_after_the_event_it_names() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let mut request = call(5, "progress", json!({"steps":3}));
    request["params"]["_meta"] = json!({"progressToken":1});
    let mut events = Events::of(harness.post(Some(&session), &request).await);
    let (first, _) = events.next().await.unwrap();
    assert_eq!(first, "1-1");
    drop(events);

    let mut resumed = Events::of(harness.get(&session, Some(&first)).await);
    let mut ids = Vec::new();
    while let Some((id, message)) = resumed.next().await {
        ids.push(id);
        if message.get("result").is_some() {
            assert_eq!(text_of(&message), "done");
        }
    }
    assert_eq!(ids, ["1-2", "1-3", "1-4"], "the events after 1-1, the response included, then the end");

    assert_eq!(harness.get(&session, Some("not-an-id")).await.status(), 400);
    assert_eq!(harness.get(&session, Some("99-1")).await.status(), 410);
}

#[tokio::test]
async fn delete_ends_the_session_cancels_its_calls_and_its_id_then_gets_404() {
    let (server, mut probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let hanging = tokio::spawn(harness.post_request(Some(&session), &call(2, "hang", json!({}))).send());
    probes.started().await;

    let deleted = send(harness.client.delete(&harness.url).header("Mcp-Session-Id", &session)).await;
    assert_eq!(deleted.status(), 204);
    probes.dropped().await;
    let unanswered = tokio::time::timeout(DEADLINE, hanging).await.unwrap().unwrap().unwrap();
    assert_eq!(unanswered.status(), 202, "the cancelled call gets no answer");

    let after = harness.post(Some(&session), &json!({"jsonrpc":"2.0","id":3,"method":"tools/list"})).await;
    assert_eq!(after.status(), 404);
    let body: Value = after.json().await.unwrap();
    assert_eq!(body["error"]["message"], json!("unknown session"));
    assert_eq!(harness.get(&session, None).await.status(), 404);
    let again = send(harness.client.delete(&harness.url).header("Mcp-Session-Id", &session)).await;
    assert_eq!(again.status(), 404);
}

#[tokio::test]
async fn notifications_cancelled_stops_a_running_call() {
    let (server, mut probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let hanging = tokio::spawn(harness.post_request(Some(&session), &call(8, "hang", json!({}))).send());
    probes.started().await;
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8,"reason":"timeout"}});
    assert_eq!(harness.post(Some(&session), &cancel).await.status(), 202);
    probes.dropped().await;
    let unanswered = tokio::time::timeout(DEADLINE, hanging).await.unwrap().unwrap().unwrap();
    assert_eq!(unanswered.status(), 202);
    assert_eq!(text_of(&harness.json(&session, &call(9, "echo", json!({"text":"still here"}))).await), "still here");
}

#[tokio::test]
async fn requests_without_a_session_id_get_400_and_with_an_unknown_one_404() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let _session = harness.initialize().await;
    let missing = harness.post(None, &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})).await;
    assert_eq!(missing.status(), 400);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"missing Mcp-Session-Id header"}})
    );
    let unknown = harness.post(Some("0000"), &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})).await;
    assert_eq!(unknown.status(), 404);
    let get = send(harness.client.get(&harness.url).header("Accept", "text/event-stream")).await;
    assert_eq!(get.status(), 400);
}

#[tokio::test]
async fn an_unsupported_protocol_version_header_gets_400_and_a_spoken_one_is_served() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}});
    let refused = send(harness.post_request(None, &initialize).header("MCP-Protocol-Version", "2099-01-01")).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], json!({"code":-32000,"message":"unsupported MCP-Protocol-Version"}));
    let served = send(harness.post_request(None, &initialize).header("MCP-Protocol-Version", "2025-11-25")).await;
    assert_eq!(served.status(), 200);
    let session = served.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let answer: Value = served.json().await.unwrap();
    assert_eq!(answer["result"]["protocolVersion"], json!("2025-11-25"));
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    for (version, status) in [("2025-06-18", 200), ("2025-03-26", 200), ("2025-11-26", 400), ("draft", 400)] {
        let response = send(harness.post_request(Some(&session), &list).header("MCP-Protocol-Version", version)).await;
        assert_eq!(response.status(), status, "{version}");
    }
    let get = harness.client.get(&harness.url).header("Accept", "text/event-stream").header("Mcp-Session-Id", &session);
    assert_eq!(send(get.header("MCP-Protocol-Version", "1.0")).await.status(), 400);
}

#[tokio::test]
async fn a_missing_or_wrong_bearer_token_gets_401_on_every_request_red() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new().bearer_token("s3cret-token")).await;
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}});
    for authorization in [None, Some("Bearer wrong"), Some("Bearer s3cret-toke"), Some("Basic s3cret-token")] {
        let mut request = harness.post_request(None, &initialize);
        if let Some(authorization) = authorization {
            request = request.header("Authorization", authorization);
        }
        let response = send(request).await;
        assert_eq!(response.status(), 401, "{authorization:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        assert!(response.headers().get("mcp-session-id").is_none());
    }
    let response = send(harness.post_request(None, &initialize).header("Authorization", "Bearer s3cret-token")).await;
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    // A valid session id is no substitute for the token, on any method or path.
    let without = harness.post(Some(&session), &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})).await;
    assert_eq!(without.status(), 401);
    assert_eq!(harness.get(&session, None).await.status(), 401);
    assert_eq!(send(harness.client.delete(&harness.url).header("Mcp-Session-Id", &session)).await.status(), 401);
    assert_eq!(send(harness.client.get(format!("{}/other", harness.url))).await.status(), 401);
    let with = send(
        harness
            .post_request(Some(&session), &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))
            .header("Authorization", "bearer s3cret-token"),
    )
    .await;
    assert_eq!(with.status(), 200);
}

#[tokio::test]
async fn an_oversized_body_gets_413_without_being_read_red() {
    let (server, _probes) = test_server();
    let options = HttpOptions::new().body_read_timeout(Duration::from_secs(300));
    let harness = Harness::start(server.max_line_bytes(1024), options).await;
    // A declared length over the limit: answered at once, though not one body byte was sent.
    let declared = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\nContent-Length: {}\r\n\r\n",
        1u64 << 40
    );
    let response = raw_exchange(harness.address(), declared.as_bytes(), false).await;
    assert!(response.starts_with("HTTP/1.1 413 "), "{response}");
    assert!(response.contains("request body exceeds max_line_bytes=1024"), "{response}");

    // A chunked body: answered at the first chunk past the limit, while the body goes on.
    let mut chunked = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    chunked.extend_from_slice(format!("{:x}\r\n{}\r\n", 2048, "x".repeat(2048)).as_bytes());
    let response = raw_exchange(harness.address(), &chunked, true).await;
    assert!(response.starts_with("HTTP/1.1 413 "), "{response}");

    // At the limit is fine.
    let session = harness.initialize().await;
    let padding = " ".repeat(1024 - json!({"jsonrpc":"2.0","id":2,"method":"ping"}).to_string().len());
    let body = format!("{}{padding}", json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
    assert_eq!(body.len(), 1024);
    let response = send(
        harness
            .client
            .post(&harness.url)
            .header("Content-Type", "application/json")
            .header("Mcp-Session-Id", &session)
            .body(body),
    )
    .await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_hostile_origin_gets_403_red() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new().allow_origin("https://app.example")).await;
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}});
    for origin in ["http://evil.example", "null", "http://localhost.evil.example", "http://127.0.0.1.nip.io"] {
        let response = send(harness.post_request(None, &initialize).header("Origin", origin)).await;
        assert_eq!(response.status(), 403, "{origin}");
        assert!(response.headers().get("mcp-session-id").is_none());
    }
    for origin in ["http://localhost:5173", "http://127.0.0.1", "https://app.example"] {
        let response = send(harness.post_request(None, &initialize).header("Origin", origin)).await;
        assert_eq!(response.status(), 200, "{origin}");
    }
}

#[tokio::test]
async fn a_client_slow_to_send_its_headers_is_disconnected_red() {
    let (server, _probes) = test_server();
    let options = HttpOptions::new().header_read_timeout(Duration::from_millis(300));
    let harness = Harness::start(server, options).await;
    // Half a request head, then silence: the server closes the connection without answering.
    let response = raw_exchange(harness.address(), b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", false).await;
    assert!(!response.contains("200 OK"), "{response}");
    // A connection that never sends anything is closed too.
    let silent = raw_exchange(harness.address(), b"", false).await;
    assert!(silent.is_empty() || silent.starts_with("HTTP/1.1 408"), "{silent}");
}

/// L4: every connection slot held by a connection that never sends a request (here with a
/// header deadline longer than any test). Before, the accept loop waited for a free slot, so a
/// real client was not even accepted until one of them timed out; now the oldest connection not
/// yet past the checks gives way, and the client is answered while the others stay open.
#[tokio::test]
async fn connections_that_never_send_a_request_do_not_keep_a_client_out_red() {
    const SLOTS: usize = 8;
    let (server, _probes) = test_server();
    let options =
        HttpOptions::new().max_connections(SLOTS).header_read_timeout(Duration::from_secs(3600)).bearer_token("t0ken");
    let harness = Harness::start(server, options).await;
    let half_open: Vec<std::net::TcpStream> =
        (0..SLOTS).map(|_| std::net::TcpStream::connect(harness.address()).unwrap()).collect();
    // Refused requests do not hold a place either.
    let refused = harness.post(None, &json!({"jsonrpc":"2.0","id":1,"method":"ping"})).await;
    assert_eq!(refused.status(), 401);
    let request = harness
        .post_request(None, &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}))
        .header("Authorization", "Bearer t0ken");
    let answered = send(request).await;
    assert_eq!(answered.status(), 200);
    let open = half_open
        .iter()
        .filter(|stream| {
            stream.set_nonblocking(true).unwrap();
            matches!(stream.peek(&mut [0_u8; 1]), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock)
        })
        .count();
    assert!(open >= SLOTS - 2, "only {open} of {SLOTS} stayed open: room was made by more than the oldest two");
}

#[tokio::test]
async fn a_batch_gets_an_array_of_answers_or_one_stream() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        call(2, "echo", json!({"text":"b"})),
        {"jsonrpc":"2.0","method":"notifications/whatever"},
        42
    ]);
    let answers = harness.json(&session, &batch).await;
    let mut answers = answers.as_array().unwrap().clone();
    answers.sort_by_key(|answer| answer["id"].as_i64().unwrap_or(-1));
    assert_eq!(
        answers,
        [
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}),
            json!({"jsonrpc":"2.0","id":1,"result":{}}),
            json!({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"b"}],"isError":false}}),
        ]
    );

    let mut streamed = call(4, "progress", json!({"steps":1}));
    streamed["params"]["_meta"] = json!({"progressToken":"x"});
    let mut events =
        Events::of(harness.post(Some(&session), &json!([call(3, "echo", json!({"text":"c"})), streamed])).await);
    let mut seen = Vec::new();
    while let Some((_, message)) = events.next().await {
        seen.push(message.get("id").cloned().unwrap_or_else(|| message["method"].clone()));
    }
    seen.sort_by_key(Value::to_string);
    assert_eq!(seen, [json!("notifications/progress"), json!(3), json!(4)]);

    let empty = harness.post(Some(&session), &json!([])).await;
    assert_eq!(empty.status(), 400);
    let not_json = send(
        harness
            .client
            .post(&harness.url)
            .header("Content-Type", "application/json")
            .header("Mcp-Session-Id", &session)
            .body("{not json"),
    )
    .await;
    assert_eq!(not_json.status(), 400);
    assert_eq!(not_json.json::<Value>().await.unwrap()["error"]["code"], json!(-32700));
}

#[tokio::test]
async fn a_post_of_only_notifications_and_responses_gets_202() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let body = json!([
        {"jsonrpc":"2.0","method":"notifications/progress","params":{}},
        {"jsonrpc":"2.0","id":77,"result":{}}
    ]);
    let response = harness.post(Some(&session), &body).await;
    assert_eq!(response.status(), 202);
    assert!(response.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_client_that_accepts_only_json_gets_json_and_the_rest_on_the_get_stream() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let mut standalone = Events::of(harness.get(&session, None).await);
    let mut request = call(3, "progress", json!({"steps":1}));
    request["params"]["_meta"] = json!({"progressToken":"only-json"});
    let accepting = |accept: &str| {
        harness
            .client
            .post(&harness.url)
            .header("Accept", accept)
            .header("Content-Type", "application/json")
            .header("Mcp-Session-Id", &session)
            .body(request.to_string())
    };
    let response = send(accepting("application/json")).await;
    assert_eq!(content_type(&response), "application/json");
    assert_eq!(text_of(&response.json().await.unwrap()), "done");
    assert_eq!(standalone.next().await.unwrap().1["params"]["progressToken"], json!("only-json"));
    assert_eq!(send(accepting("text/html")).await.status(), 406);
}

#[tokio::test]
async fn get_turned_off_other_methods_and_other_paths() {
    let (server, _probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new().get_stream(false)).await;
    let session = harness.initialize().await;
    let get = harness.get(&session, None).await;
    assert_eq!(get.status(), 405);
    assert_eq!(get.headers()["allow"], "POST, DELETE");
    assert_eq!(send(harness.client.put(&harness.url)).await.status(), 405);
    let elsewhere = format!("http://{}/other", harness.address());
    assert_eq!(send(harness.client.post(elsewhere).body("{}")).await.status(), 404);
    let wrong_type = send(harness.client.post(&harness.url).header("Content-Type", "text/plain").body("{}")).await;
    assert_eq!(wrong_type.status(), 415);
}

#[tokio::test]
async fn pagination_and_interceptors_behave_as_on_stdio() {
    let (server, _probes) = test_server();
    let server = server.page_size(2).intercept(|context, request| async move {
        if request.method == "ping" {
            return odek_extension::Reply::Result(json!({"intercepted": true}));
        }
        context.builtin(request).await
    });
    let harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let first = harness.json(&session, &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"})).await;
    assert_eq!(first["result"]["tools"].as_array().unwrap().len(), 2);
    let cursor = first["result"]["nextCursor"].clone();
    let second =
        harness.json(&session, &json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":cursor}})).await;
    assert_eq!(second["result"]["tools"][0]["name"], json!("ask_roots"));
    assert_eq!(
        harness.json(&session, &json!({"jsonrpc":"2.0","id":4,"method":"ping"})).await["result"],
        json!({"intercepted":true})
    );
}

#[tokio::test]
async fn at_the_session_limit_an_idle_session_gives_way_and_a_busy_one_does_not() {
    let (server, mut probes) = test_server();
    let harness = Harness::start(server, HttpOptions::new().max_sessions(1)).await;
    let idle = harness.initialize().await;
    let busy = harness.initialize().await;
    let gone = harness.post(Some(&idle), &json!({"jsonrpc":"2.0","id":2,"method":"ping"})).await;
    assert_eq!(gone.status(), 404, "the idle session was evicted");

    let _hanging = tokio::spawn(harness.post_request(Some(&busy), &call(2, "hang", json!({}))).send());
    probes.started().await;
    let refused = harness.post(None, &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(harness.json(&busy, &json!({"jsonrpc":"2.0","id":3,"method":"ping"})).await["result"], json!({}));
}

#[tokio::test]
async fn shutdown_ends_open_streams_and_stops_listening() {
    let (server, mut probes) = test_server();
    let mut harness = Harness::start(server, HttpOptions::new()).await;
    let session = harness.initialize().await;
    let mut standalone = Events::of(harness.get(&session, None).await);
    let _hanging = tokio::spawn(harness.post_request(Some(&session), &call(2, "hang", json!({}))).send());
    probes.started().await;
    let address = harness.address();
    tokio::time::timeout(DEADLINE, harness.server.take().unwrap().shutdown()).await.unwrap();
    probes.dropped().await;
    assert!(standalone.next().await.is_none());
    assert!(TcpStream::connect(address).await.is_err(), "nothing listens any more");
}
