//! `odek run` with a remote MCP server (issue 19): a Streamable HTTP server configured in the
//! global file with a bearer token from the environment and a header, its tool called by the
//! model like any other, the token never in output, events or the session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::mcp_http::{McpHttpServer, McpScript, ToolAnswer};
use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

const TOKEN: &str = "issues-token-5f4e3d2c1b0a99887766";

fn issues_server() -> McpHttpServer {
    let tool = json!({"name": "search", "description": "Search the issues.", "inputSchema": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}});
    McpHttpServer::start(McpScript::new().tool(tool, |args: &Value| {
        ToolAnswer::text(format!("2 issues match {}", args["query"].as_str().unwrap_or_default()))
            .sse()
            .with_progress(1)
    }))
}

#[test]
fn a_run_calls_a_remote_server_with_its_bearer_token_and_never_shows_it_red() {
    let issues = issues_server();
    let model = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("call_1", "issues__search", r#"{"query":"crash"}"#)]),
        Reply::text("found them"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": model.base_url(),
        "model": "test-model",
        "mcp_servers": {"issues": {
            "url": issues.url(), "token_env": "ISSUES_TOKEN", "headers": {"X-Team": "${TEAM_ID}"},
            "auto_approve": true,
        }},
    }));
    let output = sandbox
        .command(&["run", "--session", "--events-jsonl", "e.jsonl", "find", "crashes"])
        .env("ISSUES_TOKEN", TOKEN)
        .env("TEAM_ID", "team-7")
        .output()
        .unwrap();
    sandbox.check_events(&["--events-jsonl", "e.jsonl"], &output);
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(out, "found them\n");
    assert!(err.contains("odek: connected MCP server \"issues\" (1 tools)"), "{err}");

    let results = tool_contents(&model.requests()[1]);
    assert!(results[0].starts_with("┌── TOOL RESULT: issues__search ["), "{}", results[0]);
    assert!(results[0].contains("source=\"mcp:issues:search\""), "{}", results[0]);
    assert!(results[0].contains("2 issues match crash"), "{}", results[0]);

    let requests = issues.requests();
    assert!(requests.iter().any(|r| r.rpc_method() == Some("tools/call")));
    for request in &requests {
        assert_eq!(request.header("authorization"), Some(format!("Bearer {TOKEN}").as_str()));
        assert_eq!(request.header("x-team"), Some("team-7"));
    }
    assert!(requests.iter().any(|r| r.method == "DELETE"), "the session is ended");

    let events = std::fs::read_to_string(sandbox.project.join("e.jsonl")).unwrap();
    let sessions: Vec<String> =
        sandbox.session_files().iter().map(|path| std::fs::read_to_string(path).unwrap()).collect();
    for text in [out.as_str(), err.as_str(), events.as_str()].into_iter().chain(sessions.iter().map(String::as_str)) {
        assert!(!text.contains(TOKEN), "the token leaked: {text}");
    }
    assert_no_key(&[&out, &err]);
}

#[test]
fn a_remote_server_that_cannot_be_reached_fails_the_run_before_the_model_is_asked() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let model = ScriptedServer::start(vec![Reply::text("never")]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": model.base_url(), "model": "test-model",
        "mcp_servers": {"issues": {"url": url, "auto_approve": true}},
    }));
    let output = sandbox.odek(&["run", "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("mcp server \"issues\": mcpclient issues: initialize: MCP request not dispatched: connect: "),
        "{err}"
    );
    assert!(model.requests().is_empty());
}

#[test]
fn a_plain_http_url_beyond_loopback_is_refused_at_startup_red() {
    let model = ScriptedServer::start(vec![Reply::text("never")]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": model.base_url(), "model": "test-model",
        "mcp_servers": {"issues": {"url": "http://issues.example.com/mcp", "auto_approve": true}},
    }));
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(
            "mcp server \"issues\": mcpclient issues: plain http is allowed only to a loopback host; use https, or set \"allow_insecure_http\": true"
        ),
        "{}",
        stderr(&output)
    );
    assert!(model.requests().is_empty());
}

/// Issue 32 item 5: a 401 says whether a token was sent and where one comes from.
#[test]
fn a_refused_token_is_named_as_sent() {
    for (token, hint) in [
        (Some(TOKEN), "a bearer token was sent (from token_env ISSUES_TOKEN) and refused"),
        (None, "no token was sent: token_env ISSUES_TOKEN names a variable that is unset or empty"),
    ] {
        let guarded = McpHttpServer::start(McpScript::new().storm(&[401], None));
        let sandbox = Sandbox::new();
        sandbox.global_config(&json!({"mcp_servers": {"issues": {"url": guarded.url(), "token_env": "ISSUES_TOKEN"}}}));
        let mut command = sandbox.command(&["ext", "list"]);
        if let Some(token) = token {
            command.env("ISSUES_TOKEN", token);
        }
        let output = command.output().unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{err}");
        let expected = format!(
            "odek: mcp server \"issues\": mcpclient issues: initialize: http 401: storm answer 1: 401 Unauthorized; {hint}"
        );
        assert!(err.lines().any(|line| line == expected), "{expected}\n{err}");
        assert!(!err.contains(TOKEN) && !stdout(&output).contains(TOKEN));
    }
}
