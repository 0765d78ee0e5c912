//! OAuth's cost on the call path (issue 35): sequential `tools/call` round trips through
//! `McpHub` to two Streamable HTTP servers on 127.0.0.1 that differ only in how they are
//! authorized — a static `token_env` bearer, and an OAuth token (client credentials against the
//! scripted authorization server, then stored and reused) — measured in alternating rounds of one
//! invocation; the OAuth path should be within 2 % of the static one. Then every OAuth token is
//! made invalid and 100 calls start at once: the line says how many token requests that cost
//! (one, by the single-flight renewal).
//!
//! Run: `cargo bench -p odek-mcp --bench oauth_calls` (`OAUTH_BENCH_CALLS`, default 400 calls per
//! round, 11 rounds).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use odek_mcp::oauth::OAuthOptions;
use odek_mcp::{ApproveAll, CallOptions, HubOptions, McpEvent, McpHub, McpObserver, ServerEntry, validate_server};
use odek_test_support::mcp_http::{McpHttpServer, McpScript, ToolAnswer};
use odek_test_support::oauth_server::{AsScript, OAuthServer};
use serde_json::json;

const ROUNDS: usize = 11;
const STATIC_TOKEN: &str = "bench-static-token-0123456789abcdef";
const CLIENT_SECRET: &str = "bench-client-secret-0123456789";
const CONCURRENT: usize = 100;

struct Silent;

impl McpObserver for Silent {
    fn event(&self, _event: McpEvent) {}
    fn warning(&self, _server: &str, _text: &str) {}
    fn server_line(&self, _server: &str, _line: &str) {}
}

fn server(guard: McpScript) -> McpHttpServer {
    let tool = json!({"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}});
    McpHttpServer::start(guard.tool(tool, |_| ToolAnswer::text("ok")))
}

fn main() {
    let calls: usize = std::env::var("OAUTH_BENCH_CALLS").ok().and_then(|value| value.parse().ok()).unwrap_or(400);
    let authorization = OAuthServer::start(AsScript::new().client("bench", CLIENT_SECRET));
    let static_server = server(McpScript::new().guard(|request| {
        let expected = format!("Bearer {STATIC_TOKEN}");
        (request.header("authorization") != Some(expected.as_str()))
            .then(|| ToolAnswer::http(401, "application/json", r#"{"error":"invalid_token"}"#))
    }));
    // The throughput pair is judged alike on the server's side (one string check of the bearer),
    // so the difference is the client's; the real guard (token lookup, invalidation) protects
    // the third server, whose renewal under load is counted.
    let oauth_guard = authorization.guard();
    let oauth_server = server(McpScript::new().guard(move |request| {
        let bearer = request.header("authorization").is_some_and(|value| value.starts_with("Bearer at-"));
        if bearer { None } else { oauth_guard(request) }
    }));
    let renewed_server = server(McpScript::new().guard(authorization.guard()));
    let store = tempfile::tempdir().unwrap();
    let entry = |value: serde_json::Value| serde_json::from_value::<ServerEntry>(value).unwrap();
    let specs = vec![
        validate_server("fixed", &entry(json!({"url": static_server.url(), "token_env": "BENCH_TOKEN"}))).unwrap().0,
        validate_server(
            "oauth",
            &entry(json!({"url": oauth_server.url(), "oauth": {
                "client_id": "bench", "client_secret_env": "BENCH_SECRET", "grant": "client_credentials"}})),
        )
        .unwrap()
        .0,
        validate_server(
            "renewed",
            &entry(json!({"url": renewed_server.url(), "oauth": {
                "client_id": "bench", "client_secret_env": "BENCH_SECRET", "grant": "client_credentials"}})),
        )
        .unwrap()
        .0,
    ];
    let options = HubOptions {
        observer: Arc::new(Silent),
        approver: Arc::new(ApproveAll),
        client_version: "bench".to_owned(),
        parent_env: vec![
            ("BENCH_TOKEN".to_owned(), STATIC_TOKEN.to_owned()),
            ("BENCH_SECRET".to_owned(), CLIENT_SECRET.to_owned()),
        ],
        startup_timeout: Duration::from_secs(30),
        sandbox: odek_mcp::ServerSandbox::Off,
        oauth: Some(OAuthOptions { store_dir: store.path().to_owned(), login: None }),
        elicitation: odek_mcp::ElicitationSettings::default(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let hub = Arc::new(McpHub::start(specs, options).await.unwrap());
        let call_options = CallOptions { deadline: None, cancel: None };
        let round = |tool: &'static str| {
            let hub = Arc::clone(&hub);
            let call_options = call_options.clone();
            async move {
                let started = Instant::now();
                for _ in 0..calls {
                    hub.call(tool, "{}", &call_options).await.unwrap();
                }
                calls as f64 / started.elapsed().as_secs_f64()
            }
        };
        round("fixed__echo").await;
        round("oauth__echo").await;
        let (mut fixed, mut oauth) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            fixed.push(round("fixed__echo").await);
            oauth.push(round("oauth__echo").await);
        }
        fixed.sort_by(f64::total_cmp);
        oauth.sort_by(f64::total_cmp);
        let (fixed, oauth) = (fixed[ROUNDS / 2], oauth[ROUNDS / 2]);
        println!(
            "sequential tools/call over Streamable HTTP, {calls} calls × {ROUNDS} rounds (median): static token {fixed:.0} calls/s, OAuth token {oauth:.0} calls/s ({:+.1} %)",
            (oauth / fixed - 1.0) * 100.0
        );

        hub.call("renewed__echo", "{}", &call_options).await.unwrap();
        let before = authorization.token_requests().len();
        authorization.invalidate_tokens_at_next_call();
        let mut tasks = Vec::with_capacity(CONCURRENT);
        for _ in 0..CONCURRENT {
            let hub = Arc::clone(&hub);
            let call_options = call_options.clone();
            tasks.push(tokio::spawn(async move { hub.call("renewed__echo", "{}", &call_options).await.is_ok() }));
        }
        let mut succeeded = 0;
        for task in tasks {
            succeeded += usize::from(task.await.unwrap());
        }
        let token_requests = authorization.token_requests().len() - before;
        println!(
            "{CONCURRENT} concurrent calls after the token was revoked: {succeeded} succeeded, {token_requests} token request(s)"
        );
        assert_eq!(token_requests, 1, "one renewal for every waiting call");
        hub.shutdown().await;
    });
}
