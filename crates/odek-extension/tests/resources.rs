//! Server `instructions` and resources, end to end over both transports (OS pipes with an
//! in-process server; real 127.0.0.1 HTTP with the `http` feature), through one scenario
//! (`support::resources`): the capability, paginated `resources/list`, text, blob and
//! reader-served reads, `-32002` for unknown uris, `-32602` for bad params and cursors, and
//! `-32601` without resources.

// Test helpers outside #[test] functions may panic freely too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use odek_extension::{Reply, ResourceBody, ResourceContents, ResourceDef, Server};
use serde_json::json;
use support::InProcess;
use support::resources::{Rpc, check_huge_uri_is_not_echoed, check_no_resources, check_resources, resource_server};
use tokio::sync::Notify;

fn over_stdio(server: Server, check: fn(&mut Rpc<'_>)) {
    let mut server = InProcess::start(server);
    check(&mut |method, params| server.request(method, params));
}

#[test]
fn resources_over_stdio() {
    over_stdio(resource_server(), check_resources);
}

#[test]
fn a_huge_uri_over_stdio_is_not_echoed_red() {
    over_stdio(resource_server(), check_huge_uri_is_not_echoed);
}

#[test]
fn without_resources_over_stdio_nothing_changes() {
    over_stdio(support::resources::plain_server(), check_no_resources);
}

#[test]
fn an_interceptor_delegating_to_the_builtins_serves_resources_too() {
    let server = resource_server().intercept(|context, request| async move {
        if request.method == "resources/templates/list" {
            return Reply::Result(json!({"resourceTemplates": []}));
        }
        context.builtin(request).await
    });
    over_stdio(server, check_resources);
    let server =
        support::resources::plain_server().intercept(|context, request| async move { context.builtin(request).await });
    over_stdio(server, check_no_resources);
}

#[test]
fn instructions_alone_announce_no_resources() {
    let mut server = InProcess::start(support::resources::plain_server().instructions("Call echo with {text}."));
    let initialized = server.initialize();
    assert_eq!(initialized["instructions"], json!("Call echo with {text}."));
    assert_eq!(initialized["capabilities"], json!({"tools":{"listChanged":true}}));
    assert_eq!(server.request("resources/list", None)["error"]["code"], json!(-32601));
}

#[test]
fn a_slow_read_holds_up_no_other_request() {
    let release = Arc::new(Notify::new());
    let server = support::resources::plain_server().dynamic_resource(ResourceDef::new("slow://one", "slow"), {
        let release = Arc::clone(&release);
        move |_, uri| {
            let release = Arc::clone(&release);
            async move {
                release.notified().await;
                Ok(vec![ResourceContents::new(uri, ResourceBody::text("at last"))])
            }
        }
    });
    let mut server = InProcess::start(server);
    server.initialize();
    let read = server.send_request("resources/read", Some(json!({"uri":"slow://one"})));
    assert_eq!(server.request("ping", None)["result"], json!({}), "answered while the read waits");
    release.notify_one();
    let (response, before) = server.wait_response(read);
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(response["result"], json!({"contents":[{"uri":"slow://one","text":"at last"}]}));
}

#[test]
fn a_uri_added_twice_stops_the_server_before_it_serves() {
    let server = resource_server().resource(ResourceDef::new("docs://guide", "again"), ResourceBody::text(""));
    let server = InProcess::start(server);
    let error = server.finished().unwrap_err();
    assert_eq!(error.to_string(), "resource \"docs://guide\" is already registered");
}

#[cfg(feature = "http")]
mod over_http {
    use std::time::Duration;

    use odek_extension::{HttpOptions, Server};
    use serde_json::{Value, json};
    use tokio::net::TcpListener;

    use super::support::resources::{
        Rpc, check_huge_uri_is_not_echoed, check_no_resources, check_resources, plain_server, resource_server,
    };

    /// How long any single HTTP exchange may take.
    const DEADLINE: Duration = Duration::from_secs(10);

    /// Serves `server` on 127.0.0.1 and runs `check` through one session, which its first
    /// request (an `initialize`) opens; every request is one POST answered as JSON.
    fn over_http(server: Server, check: fn(&mut Rpc<'_>)) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let http = runtime.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            server.serve_http(listener, HttpOptions::new()).unwrap()
        });
        let url = http.url();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut session: Option<String> = None;
        let mut next_id = 0;
        let post = |body: Value, session: Option<&str>| {
            let mut request = client
                .post(&url)
                .header("Accept", "application/json, text/event-stream")
                .header("Content-Type", "application/json")
                .body(body.to_string());
            if let Some(session) = session {
                request = request.header("Mcp-Session-Id", session);
            }
            runtime.block_on(async {
                tokio::time::timeout(DEADLINE, request.send()).await.expect("no answer in time").unwrap()
            })
        };
        check(&mut |method, params| {
            next_id += 1;
            let mut body = json!({"jsonrpc":"2.0","id":next_id,"method":method});
            if let Some(params) = params {
                body["params"] = params;
            }
            let response = post(body, session.as_deref());
            assert_eq!(response.status(), 200, "{method}");
            if session.is_none() {
                let id = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
                let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
                let answer = runtime.block_on(response.json::<Value>()).unwrap();
                assert_eq!(post(initialized, Some(&id)).status(), 202);
                session = Some(id);
                return answer;
            }
            runtime.block_on(async { tokio::time::timeout(DEADLINE, response.json::<Value>()).await }).unwrap().unwrap()
        });
        // Without the client's idle connections the shutdown need not wait for them.
        drop(client);
        runtime.block_on(async {
            tokio::time::timeout(DEADLINE, http.shutdown()).await.expect("the server did not stop");
        });
    }

    #[test]
    fn resources_over_http() {
        over_http(resource_server(), check_resources);
    }

    #[test]
    fn a_huge_uri_over_http_is_not_echoed_red() {
        over_http(resource_server(), check_huge_uri_is_not_echoed);
    }

    #[test]
    fn without_resources_over_http_nothing_changes() {
        over_http(plain_server(), check_no_resources);
    }
}
