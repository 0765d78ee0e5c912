//! OAuth through `McpHub` in-process (issue 35): what the conformance adapter and `odek ext
//! login` rely on. A hub whose options allow a login authorizes on the server's first `401`
//! through the opener it is given (here the in-process browser, which follows the
//! authorization server's redirect to the loopback listener); a headless hub never does, and
//! fails naming `odek ext login`. The scripted authorization server is
//! `odek_test_support::oauth_server`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use odek_mcp::oauth::{LoginOptions, OAuthOptions, in_process_browser};
use odek_mcp::server_config::ServerEntry;
use odek_mcp::{ApproveAll, McpHub};
use odek_test_support::mcp_http::{McpHttpServer, McpScript, ToolAnswer};
use odek_test_support::oauth_server::{AsScript, OAuthServer};
use serde_json::json;
use support::{Recorder, call, options, spec};

const LIMIT: Duration = Duration::from_secs(20);

fn protected(authorization: &OAuthServer) -> McpHttpServer {
    let tool = json!({"name": "t", "description": "the t tool", "inputSchema": {"type": "object"}});
    McpHttpServer::start(McpScript::new().guard(authorization.guard()).tool(tool, |_| ToolAnswer::text("fine")))
}

fn entry(server: &McpHttpServer) -> ServerEntry {
    ServerEntry { url: Some(server.url()), ..ServerEntry::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_with_a_login_authorizes_on_the_first_401_through_its_opener() {
    let authorization = OAuthServer::start(AsScript::new());
    let server = protected(&authorization);
    let store = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let mut hub_options = options(&recorder, Arc::new(ApproveAll));
    hub_options.oauth = Some(OAuthOptions {
        store_dir: store.path().to_owned(),
        login: Some(LoginOptions { opener: in_process_browser(LIMIT), timeout: LIMIT, say: Arc::new(|_: &str| {}) }),
    });
    let hub = tokio::time::timeout(LIMIT, McpHub::start(vec![spec("web", &entry(&server))], hub_options))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(call(&hub, "web__t", "{}").await.unwrap(), "fine");
    hub.shutdown().await;
    assert_eq!((authorization.registrations(), authorization.authorizations()), (1, 1));
    assert_eq!(authorization.token_requests(), ["authorization_code"]);
    assert!(store.path().join("credentials.json").exists());

    // The next hub (a later run) uses the stored token without asking anyone.
    let headless = options(&recorder, Arc::new(ApproveAll));
    let mut headless = headless;
    headless.oauth = Some(OAuthOptions { store_dir: store.path().to_owned(), login: None });
    let hub = McpHub::start(vec![spec("web", &entry(&server))], headless).await.unwrap();
    assert_eq!(call(&hub, "web__t", "{}").await.unwrap(), "fine");
    hub.shutdown().await;
    assert_eq!(authorization.authorizations(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_hub_fails_naming_login_red() {
    let authorization = OAuthServer::start(AsScript::new());
    let server = protected(&authorization);
    let store = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let mut hub_options = options(&recorder, Arc::new(ApproveAll));
    hub_options.oauth = Some(OAuthOptions { store_dir: store.path().to_owned(), login: None });
    let error = McpHub::start(vec![spec("web", &entry(&server))], hub_options).await.unwrap_err();
    assert!(
        error.to_string().contains("mcpclient web: initialize: authorization: not logged in; run odek ext login web"),
        "{error}"
    );
    assert_eq!(authorization.authorizations(), 0);
}
