//! The Streamable HTTP transport (spec `mcp-client.md` §14, issue 19) end to end through
//! `McpHub`, against the scripted and hostile servers of `odek_test_support::mcp_http`: each
//! hostile behaviour gets its exact outcome within a bounded time, and leaves no socket open.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use odek_mcp::server_config::{SecretValue, ServerEntry};
use odek_mcp::{ApproveAll, McpEvent, McpHub};
use odek_test_support::mcp_http::{McpHttpServer, McpScript, ToolAnswer};
use serde_json::{Value, json};
use support::{Recorder, call, options, spec};

/// Longest any wait here may take.
const LIMIT: Duration = Duration::from_secs(20);

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("the {name} tool"), "inputSchema": {"type": "object"}})
}

/// A server offering `answer` as the tool `t` (and `ok`, which always answers "fine").
fn server(script: McpScript, answer: impl Fn(&Value) -> ToolAnswer + Send + Sync + 'static) -> McpHttpServer {
    McpHttpServer::start(script.tool(tool("t"), answer).tool(tool("ok"), |_| ToolAnswer::text("fine")))
}

fn entry(server: &McpHttpServer) -> ServerEntry {
    ServerEntry { url: Some(server.url()), timeout_seconds: 5, ..ServerEntry::default() }
}

async fn hub_with(entry: ServerEntry, env: Vec<(String, String)>) -> (McpHub, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let mut options = options(&recorder, Arc::new(ApproveAll));
    options.parent_env = env;
    let hub = McpHub::start(vec![spec("web", &entry)], options).await.unwrap();
    (hub, recorder)
}

async fn hub(entry: ServerEntry) -> (McpHub, Arc<Recorder>) {
    hub_with(entry, Vec::new()).await
}

/// The error of a start of `entry` alone, as server `web`, which must fail.
async fn start_error(entry: &ServerEntry) -> String {
    let recorder = Arc::new(Recorder::default());
    McpHub::start(vec![spec("web", entry)], options(&recorder, Arc::new(ApproveAll))).await.unwrap_err().to_string()
}

/// The failure of a start whose one required server failed with `error`.
fn one_failure(error: &str) -> String {
    format!("{error}\n{}", odek_mcp::MAKE_OPTIONAL_HINT_ONE)
}

/// Shuts the hub down and waits for the server to see every connection closed.
async fn finish(hub: McpHub, server: &McpHttpServer) {
    hub.shutdown().await;
    server.wait_for_open_connections_at_most(0, LIMIT);
}

#[tokio::test]
async fn a_session_lists_calls_and_ends_with_delete_sending_its_headers_and_token() {
    let server = server(McpScript::new(), |args| ToolAnswer::text(format!("got {args}")).sse().with_progress(2));
    let mut entry = entry(&server);
    entry.token_env = Some("WEB_TOKEN".into());
    entry.headers = BTreeMap::from([("X-Team".to_owned(), SecretValue::new("team-7"))]);
    let (hub, _) = hub_with(entry, vec![("WEB_TOKEN".into(), "tok-0123456789abcdef".into())]).await;
    assert_eq!(call(&hub, "web__t", r#"{"a":1}"#).await.unwrap(), r#"got {"a":1}"#);
    assert_eq!(call(&hub, "web__ok", "").await.unwrap(), "fine");
    finish(hub, &server).await;

    let requests = server.requests();
    let methods: Vec<(&str, Option<&str>)> = requests.iter().map(|r| (r.method.as_str(), r.rpc_method())).collect();
    assert_eq!(methods[0], ("POST", Some("initialize")));
    assert_eq!(methods[1], ("POST", Some("notifications/initialized")));
    assert!(methods.contains(&("DELETE", None)), "{methods:?}");
    for request in &requests {
        assert_eq!(request.header("authorization"), Some("Bearer tok-0123456789abcdef"));
        assert_eq!(request.header("x-team"), Some("team-7"));
        if request.rpc_method() != Some("initialize") {
            assert_eq!(request.session_id(), Some("session-1"), "{:?}", request.rpc_method());
        }
    }
    let post = requests.iter().find(|r| r.rpc_method() == Some("tools/call")).unwrap();
    assert_eq!(post.header("accept"), Some("application/json, text/event-stream"));
    assert_eq!(post.header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn an_empty_token_env_warns_and_sends_no_authorization() {
    let server = server(McpScript::new(), |_| ToolAnswer::text("x"));
    let entry = ServerEntry { token_env: Some("NOPE".into()), ..entry(&server) };
    let (hub, recorder) = hub(entry).await;
    assert_eq!(
        recorder.warnings(),
        [
            "mcp server \"web\": token_env NOPE is set but the environment variable is empty; requests will be sent unauthenticated"
        ]
    );
    finish(hub, &server).await;
    assert!(server.requests().iter().all(|request| request.header("authorization").is_none()));
}

#[tokio::test]
async fn a_body_past_max_response_bytes_fails_that_call_drops_its_connection_and_the_next_call_works_red() {
    for answer in [
        ToolAnswer::huge_text(1 << 30),
        ToolAnswer::huge_text(1 << 30).sse(),
        ToolAnswer::endless_sse_line(),
        ToolAnswer::huge_structured_content(100 << 20),
    ] {
        let answer = std::sync::Mutex::new(Some(answer));
        let server = server(McpScript::new(), move |_| answer.lock().unwrap().take().unwrap_or(ToolAnswer::text("x")));
        let entry = ServerEntry { max_response_bytes: 1 << 20, ..entry(&server) };
        let (hub, _) = hub(entry).await;
        assert_eq!(
            call(&hub, "web__t", "").await.unwrap_err(),
            "mcpclient web: tools/call: response exceeds max_response_bytes=1048576"
        );
        assert_eq!(call(&hub, "web__ok", "").await.unwrap(), "fine");
        finish(hub, &server).await;
    }
}

#[tokio::test]
async fn statuses_redirects_types_and_batches_fail_the_call_with_the_spec_text_red() {
    let server = server(McpScript::new(), |args| match args["case"].as_str().unwrap_or_default() {
        "500" => ToolAnswer::http(500, "text/plain", "x".repeat(600)),
        "redirect" => ToolAnswer::redirect(307),
        "html" => ToolAnswer::text("hi").content_type("text/html"),
        "batch" => ToolAnswer::text("hi").batch(),
        "gzip" => ToolAnswer::gzip_bomb(1 << 30),
        "not json" => ToolAnswer::http(200, "application/json", "{not json"),
        _ => ToolAnswer::text("plain"),
    });
    let (hub, _) = hub(entry(&server)).await;
    let failure = |case: &str| {
        let hub = &hub;
        let args = json!({"case": case}).to_string();
        async move { call(hub, "web__t", &args).await.unwrap_err() }
    };
    assert_eq!(failure("500").await, format!("mcpclient web: tools/call: http 500: {}...", "x".repeat(512)));
    let redirect = failure("redirect").await;
    assert!(redirect.starts_with("mcpclient web: tools/call: http 307: "), "{redirect}");
    assert_eq!(server.redirect_target_connections(), 0, "the redirect was not followed");
    assert_eq!(failure("html").await, "mcpclient web: tools/call: unexpected response content type \"text/html\"");
    assert_eq!(
        failure("batch").await,
        "mcpclient web: tools/call: parse response: a JSON-RPC batch is not an answer to a single request"
    );
    // Never inflated: the compressed bytes are not JSON.
    assert!(failure("gzip").await.starts_with("mcpclient web: tools/call: parse response: "));
    assert!(failure("not json").await.starts_with("mcpclient web: tools/call: parse response: "));
    assert_eq!(call(&hub, "web__t", "{}").await.unwrap(), "plain");
    finish(hub, &server).await;
}

#[tokio::test]
async fn a_5xx_storm_fails_calls_until_the_server_recovers() {
    let server = server(McpScript::new().storm(&[502, 503], None), |_| ToolAnswer::text("x"));
    let recorder = Arc::new(Recorder::default());
    let error = McpHub::start(vec![spec("web", &entry(&server))], options(&recorder, Arc::new(ApproveAll)))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("mcp server \"web\": mcpclient web: initialize: http 502: storm answer"), "{error}");
    assert!(
        recorder.events().contains(&McpEvent::ServerFailed { server: "web".into(), error_class: "protocol_error" })
    );
}

#[tokio::test]
async fn a_session_that_expires_fails_the_call_and_the_next_call_starts_a_new_one() {
    let server = server(McpScript::new(), |_| ToolAnswer::text("x"));
    let (hub, recorder) = hub(entry(&server)).await;
    assert_eq!(call(&hub, "web__ok", "").await.unwrap(), "fine");
    server.expire_sessions();
    assert_eq!(
        call(&hub, "web__ok", "").await.unwrap_err(),
        "mcpclient web: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: the server ended the session (http 404); the next call starts a new one"
    );
    assert_eq!(call(&hub, "web__ok", "").await.unwrap(), "fine");
    assert!(
        recorder.events().contains(&McpEvent::ServerRestarted { server: "web".into(), restarts: 1, exit_status: None }),
        "{:?}",
        recorder.events()
    );
    finish(hub, &server).await;
    let last = server.requests().into_iter().rfind(|r| r.rpc_method() == Some("tools/call")).unwrap();
    assert_eq!(last.session_id(), Some("session-2"));
}

#[tokio::test]
async fn a_stream_cut_before_its_answer_is_resumed_from_the_last_event() {
    let server =
        server(McpScript::new(), |_| ToolAnswer::text("resumed answer").sse().with_progress(1).drop_before_response());
    let (hub, _) = hub(entry(&server)).await;
    assert_eq!(call(&hub, "web__t", "").await.unwrap(), "resumed answer");
    finish(hub, &server).await;
    let resumed = server.requests().into_iter().find(|r| r.method == "GET" && r.header("last-event-id").is_some());
    assert!(resumed.is_some(), "no GET with Last-Event-ID: {:?}", server.requests());
}

#[tokio::test]
async fn a_polling_server_is_resumed_once_per_event_until_it_answers() {
    let server = server(McpScript::new(), |_| ToolAnswer::text("polled answer").with_progress(2).polled(20));
    let (hub, _) = hub(entry(&server)).await;
    assert_eq!(call(&hub, "web__t", "").await.unwrap(), "polled answer");
    finish(hub, &server).await;
    let resumed: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|request| request.method == "GET")
        .filter_map(|request| request.header("last-event-id").map(str::to_owned))
        .collect();
    // The priming event, then each progress notification, each on a stream of its own.
    let stream = resumed.first().and_then(|id| id.split_once('-')).map(|(stream, _)| stream.to_owned()).unwrap();
    assert_eq!(resumed, [format!("{stream}-0"), format!("{stream}-1"), format!("{stream}-2")]);
}

#[tokio::test]
async fn a_newer_revision_is_asked_for_and_the_servers_answer_is_spoken() {
    for (asked, answered) in [("2025-11-25", "2025-11-25"), ("2025-11-25", "2025-06-18"), ("", "2025-03-26")] {
        let server = server(McpScript::new().protocol_version(answered), |_| ToolAnswer::text("x"));
        let entry = ServerEntry { protocol_version: Some(asked.to_owned()), ..entry(&server) };
        let (hub, _) = hub(entry).await;
        call(&hub, "web__t", "").await.unwrap();
        finish(hub, &server).await;
        let requests = server.requests();
        let initialize = requests.iter().find(|request| request.rpc_method() == Some("initialize")).unwrap();
        let sent: serde_json::Value = serde_json::from_slice(&initialize.body).unwrap();
        let asked = if asked.is_empty() { "2025-03-26" } else { asked };
        assert_eq!(sent["params"]["protocolVersion"], asked);
        assert_eq!(initialize.header("mcp-protocol-version"), None);
        // Every later request names the revision the server answered (none for 2025-03-26).
        let header = (answered != "2025-03-26").then_some(answered);
        for request in requests.iter().filter(|request| request.rpc_method() != Some("initialize")) {
            assert_eq!(request.header("mcp-protocol-version"), header, "{request:?}");
        }
    }
}

#[tokio::test]
async fn a_server_that_never_answers_or_dribbles_hits_the_timeout_and_leaves_no_socket_red() {
    for answer in [ToolAnswer::never_answers(), ToolAnswer::text("slow").dribble(Duration::from_secs(1))] {
        let answer = std::sync::Mutex::new(Some(answer));
        let server = server(McpScript::new(), move |_| answer.lock().unwrap().take().unwrap_or(ToolAnswer::text("x")));
        let entry = ServerEntry { timeout_seconds: 1, ..entry(&server) };
        let (hub, _) = hub(entry).await;
        let started = std::time::Instant::now();
        let error = call(&hub, "web__t", "").await.unwrap_err();
        assert_eq!(
            error,
            "mcpclient web: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: context deadline exceeded (timeout_seconds: 1)"
        );
        assert!(started.elapsed() < LIMIT);
        finish(hub, &server).await;
    }
}

#[tokio::test]
async fn the_standalone_stream_carries_list_changes() {
    let server = server(McpScript::new(), |_| ToolAnswer::text("x"));
    let (hub, _) = hub(entry(&server)).await;
    server.push_notification(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    support::wait_stale(&hub).await;
    finish(hub, &server).await;
}

#[tokio::test]
async fn a_refused_connection_is_not_dispatched() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let recorder = Arc::new(Recorder::default());
    let entry = ServerEntry { url: Some(url), ..ServerEntry::default() };
    let error = McpHub::start(vec![spec("web", &entry)], options(&recorder, Arc::new(ApproveAll)))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "mcp server \"web\": mcpclient web: initialize: MCP request not dispatched: connect: tcp connect error: Connection refused (os error 111)\n\
         to let the run go on without this server when it fails, set \"required\": false in its entry"
    );
}

/// A URL may carry a credential in its path or query (hosted servers hand such URLs out, and
/// only userinfo is refused); the error of a failed exchange, which the model receives, names the
/// server and never its URL, as a stdio error never shows the server's command line.
#[tokio::test]
async fn a_transport_error_never_shows_the_url_to_the_model_red() {
    let server = server(McpScript::new(), |_| ToolAnswer::hang_up());
    let entry = ServerEntry { url: Some(format!("{}?key=url-secret-0123", server.url())), ..entry(&server) };
    let (hub, _) = hub(entry).await;
    let dropped = call(&hub, "web__t", "").await.unwrap_err();
    let prefix = "mcpclient web: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: http: ";
    assert!(dropped.starts_with(prefix), "{dropped}");
    drop(server);
    let refused = call(&hub, "web__ok", "").await.unwrap_err();
    assert!(refused.starts_with("mcpclient web: tools/call: MCP request not dispatched: connect: "), "{refused}");
    for error in [dropped, refused] {
        assert!(!error.contains("url-secret") && !error.contains("127.0.0.1"), "{error}");
    }
    hub.shutdown().await;
}

/// Issue 32 item 5: a 401 says whether a token was sent and where one comes from (`token_env`,
/// `headers`), at start-up and on a call.
#[tokio::test]
async fn a_401_says_whether_a_token_was_sent_and_where_one_comes_from() {
    let server = server(McpScript::new(), |_| ToolAnswer::http(401, "text/plain", "unauthorized"));
    let refused = "mcpclient web: tools/call: http 401: unauthorized; ";
    /// An entry, odek's environment, and the hint its 401 gets.
    type Case = (ServerEntry, Vec<(String, String)>, &'static str);
    let cases: Vec<Case> = vec![
        (
            entry(&server),
            Vec::new(),
            "no token was sent: set \"token_env\" to the variable holding a bearer token, or give the header the server expects in \"headers\"",
        ),
        (
            ServerEntry { token_env: Some("WEB_TOKEN".into()), ..entry(&server) },
            vec![("WEB_TOKEN".into(), "tok-0123456789abcdef".into())],
            "a bearer token was sent (from token_env WEB_TOKEN) and refused",
        ),
        (
            ServerEntry { token_env: Some("WEB_TOKEN".into()), ..entry(&server) },
            Vec::new(),
            "no token was sent: token_env WEB_TOKEN names a variable that is unset or empty",
        ),
        (
            ServerEntry {
                headers: BTreeMap::from([("X-Api-Key".to_owned(), SecretValue::new("key-0123456789"))]),
                ..entry(&server)
            },
            Vec::new(),
            "no bearer token was sent, only the headers X-Api-Key; set \"token_env\" to the variable holding a token, or check \"headers\"",
        ),
        (
            ServerEntry {
                headers: BTreeMap::from([("Authorization".to_owned(), SecretValue::new("Bearer tok-0123456789"))]),
                ..entry(&server)
            },
            Vec::new(),
            "a token was sent (the Authorization header of \"headers\") and refused",
        ),
    ];
    for (entry, env, hint) in cases {
        let (hub, _) = hub_with(entry, env).await;
        assert_eq!(call(&hub, "web__t", "").await.unwrap_err(), format!("{refused}{hint}"));
        hub.shutdown().await;
    }
    server.wait_for_open_connections_at_most(0, LIMIT);

    let guarded = McpHttpServer::start(McpScript::new().storm(&[401], None));
    assert_eq!(
        start_error(&entry(&guarded)).await,
        one_failure(
            "mcp server \"web\": mcpclient web: initialize: http 401: storm answer 1: 401 Unauthorized; no token was sent: set \"token_env\" to the variable holding a bearer token, or give the header the server expects in \"headers\""
        )
    );
}

/// Issue 32 item 5: an error page is not dumped into the error (or the model's context).
#[tokio::test]
async fn an_html_error_page_is_not_shown() {
    let page = "<!DOCTYPE html>\n<html lang=\"en\"><head><title>Error</title></head><body><pre>Cannot POST /mcp</pre></body></html>";
    let server = server(McpScript::new(), move |args| match args["case"].as_str().unwrap_or_default() {
        "typed" => ToolAnswer::http(403, "text/html; charset=utf-8", page),
        _ => ToolAnswer::http(502, "text/plain", page),
    });
    let (hub, _) = hub(entry(&server)).await;
    for (case, status) in [("typed", 403), ("untyped", 502)] {
        let args = json!({"case": case}).to_string();
        assert_eq!(
            call(&hub, "web__t", &args).await.unwrap_err(),
            format!("mcpclient web: tools/call: http {status}: [an HTML page, not shown]")
        );
    }
    finish(hub, &server).await;
}

/// Issue 32 item 5: an entry configured for Streamable HTTP whose url serves the deprecated
/// HTTP+SSE transport (its POST refused, a GET opening an event stream) names the `type` to set,
/// and so does the reverse.
#[tokio::test]
async fn the_wrong_http_transport_names_the_type_to_set() {
    let legacy = McpHttpServer::start(McpScript::new().without_sessions().storm(&[405], None));
    assert_eq!(
        start_error(&entry(&legacy)).await,
        one_failure(
            "mcp server \"web\": mcpclient web: initialize: http 405: storm answer 1: 405 Method Not Allowed; the url serves the deprecated HTTP+SSE transport (a GET opens its event stream): set \"type\": \"sse\" in the server's entry"
        )
    );

    let streamable = McpHttpServer::start(McpScript::new().without_sessions().without_get_stream());
    let as_legacy = ServerEntry { kind: Some("sse".into()), ..entry(&streamable) };
    assert_eq!(
        start_error(&as_legacy).await,
        one_failure(
            "mcp server \"web\": mcpclient web: initialize: MCP request not dispatched: the url answered the event stream's GET with http 405, so it is no HTTP+SSE endpoint; if it is a Streamable HTTP endpoint, set \"type\": \"http\""
        )
    );
}
