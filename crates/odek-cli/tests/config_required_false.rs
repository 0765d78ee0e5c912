//! [beyond] `"required": false` servers (`mcp_servers.<name>.required`) and `odek ext call`
//! starting only the server it names, end to end: the real `odek` binary, real server processes
//! (the fixture server, a command that does not exist, one that exits before answering) and the
//! scripted model server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

const CONTINUING: &str = "; continuing without it (required: false)";

fn server_events(events: &[Value]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter(|event| event["type"].as_str().is_some_and(|kind| kind.starts_with("mcp_server_")))
        .map(|event| {
            (
                event["type"].as_str().unwrap().to_owned(),
                event["data"]["server"].as_str().unwrap().to_owned(),
                event["data"]["error_class"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The warning line a run prints for an optional server, found by its start.
fn warning_for<'a>(stderr: &'a str, server: &str) -> &'a str {
    let start = format!("odek: warning: mcp server \"{server}\": ");
    stderr.lines().find(|line| line.starts_with(&start)).unwrap_or_else(|| panic!("no warning for {server}: {stderr}"))
}

/// A server whose command leaves `marker` behind if it is ever started, then exits 1.
fn marking_server(marker: &std::path::Path) -> Value {
    json!({"command": "sh", "args": ["-c", format!("touch '{}'; exit 1", marker.display())]})
}

#[test]
fn a_run_goes_on_without_the_optional_servers_that_fail() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "fixture__echo", r#"{"text":"still here"}"#)]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    let fixture = sandbox.fixture_server();
    let with = |extra: Value| {
        let mut entry = fixture.clone();
        entry.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        entry
    };
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "mcp_servers": {
            "fixture": fixture,
            "missing": {"command": "/nonexistent/odek-no-such-server", "required": false},
            "quits": {"command": "false", "required": false},
            "badname": with(json!({"args": ["--mode", "invalid-tool-name"], "required": false})),
            "silent": with(json!({"args": ["--mode", "no-initialize-reply"], "startup_timeout_seconds": 1, "required": false})),
        }
    }));
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(stdout(&output), "done\n");

    assert_eq!(
        warning_for(&err, "missing"),
        format!(
            "odek: warning: mcp server \"missing\": mcpclient missing: start \"/nonexistent/odek-no-such-server\": No such file or directory{CONTINUING}"
        )
    );
    assert_eq!(
        warning_for(&err, "quits"),
        format!(
            "odek: warning: mcp server \"quits\": mcpclient quits: initialize: the server exited with status 1 before answering (it wrote nothing on stderr){CONTINUING}"
        )
    );
    assert_eq!(
        warning_for(&err, "badname"),
        format!(
            "odek: warning: mcp server \"badname\": mcpclient badname: tools/list: tool name \"read file\" contains invalid character ' '; \
             to use the server without that tool, add it to its \"exclude_tools\": [\"read file\"]{CONTINUING}"
        )
    );
    assert_eq!(
        warning_for(&err, "silent"),
        format!(
            "odek: warning: mcp server \"silent\": mcpclient silent: start-up (spawn, initialize, tools/list) did not finish within 1s (startup_timeout_seconds){CONTINUING}"
        )
    );
    assert!(err.contains("odek: connected MCP server \"fixture\" ("), "{err}");

    assert_eq!(
        server_events(&events(&sink)),
        [
            ("mcp_server_failed".to_owned(), "badname".to_owned(), "invalid_tool".to_owned()),
            ("mcp_server_started".to_owned(), "fixture".to_owned(), String::new()),
            ("mcp_server_failed".to_owned(), "missing".to_owned(), "spawn_failed".to_owned()),
            ("mcp_server_failed".to_owned(), "quits".to_owned(), "connection_closed".to_owned()),
            ("mcp_server_failed".to_owned(), "silent".to_owned(), "stalled".to_owned()),
        ]
    );
    let requests = server.requests();
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"fixture__echo"));
    assert!(tools.iter().all(|name| !name.starts_with("badname__") && !name.starts_with("silent__")), "{tools:?}");
    assert!(tool_contents(&requests[1])[0].contains("still here"));
}

#[test]
fn a_required_server_that_fails_still_fails_the_run() {
    for required in [json!(true), Value::Null] {
        let server = ScriptedServer::start(vec![Reply::text("never")]);
        let sandbox = Sandbox::new();
        let mut missing = json!({"command": "/nonexistent/odek-no-such-server"});
        if !required.is_null() {
            missing["required"] = required.clone();
        }
        sandbox.global_config(&json!({
            "base_url": server.base_url(),
            "mcp_servers": {"fixture": sandbox.fixture_server(), "missing": missing}
        }));
        let output = sandbox.odek(&["run", "go"]);
        assert_eq!(output.status.code(), Some(1), "{required}");
        let err = stderr(&output);
        assert!(
            err.ends_with(
                "odek: mcp server \"missing\": mcpclient missing: start \"/nonexistent/odek-no-such-server\": No such file or directory\nto let the run go on without this server when it fails, set \"required\": false in its entry\n"
            ),
            "{err}"
        );
        assert!(!err.contains("continuing without it"), "{err}");
        assert!(server.requests().is_empty(), "no model call after a failed required server");
    }
}

#[test]
fn an_optional_project_server_nobody_approved_is_never_spawned_red() {
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let marker = sandbox.project.join("spawned");
    let mut entry = marking_server(&marker);
    entry["required"] = json!(false);
    sandbox.write("odek.json", &json!({"mcp_servers": {"proj": entry}}).to_string());
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "go"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(
        warning_for(&err, "proj"),
        format!(
            "odek: warning: mcp server \"proj\": project-level MCP server \"proj\" (sh \"-c touch '{}'; exit 1\") requires explicit approval; set ODEK_APPROVE_MCP=1 to approve all project MCP servers, or run interactively{CONTINUING}",
            marker.display()
        )
    );
    assert!(!marker.exists(), "an unapproved project server was started");
    assert!(server_events(&events(&sink)).contains(&(
        "mcp_server_failed".to_owned(),
        "proj".to_owned(),
        "approval_required".to_owned()
    )));
}

#[test]
fn ext_call_starts_only_the_server_it_names() {
    let sandbox = Sandbox::new();
    let marker = sandbox.project.join("spawned");
    sandbox.global_config(&json!({"mcp_servers": {
        "fixture": sandbox.fixture_server(),
        "missing": {"command": "/nonexistent/odek-no-such-server"},
        "other": marking_server(&marker),
    }}));
    // A project server that needs approval nobody can give: not asked for, as it is not started.
    sandbox.write("odek.json", &json!({"mcp_servers": {"proj": {"command": "/nonexistent/proj"}}}).to_string());
    let output = sandbox.odek(&["ext", "call", "fixture__echo", r#"{"text":"hi"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "hi\n");
    assert_eq!(stderr(&output), "odek: connected MCP server \"fixture\" (28 tools)\n");
    assert!(!marker.exists(), "another server was started");
}

#[test]
fn ext_call_of_a_server_that_is_not_configured_starts_nothing() {
    let sandbox = Sandbox::new();
    let marker = sandbox.project.join("spawned");
    sandbox.global_config(&json!({"mcp_servers": {
        "fixture": sandbox.fixture_server(),
        "other": marking_server(&marker),
        "off": {"command": "x", "enabled": false},
    }}));
    let output = sandbox.odek(&["ext", "call", "nope__echo"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "odek: ext call: tool \"nope__echo\" names no configured MCP server \"nope\"; configured servers: \"fixture\", \"off\", \"other\"\n"
    );
    let output = sandbox.odek(&["ext", "call", "off__echo"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "odek: ext call: tool \"off__echo\": MCP server \"off\" is disabled (enabled: false)\n"
    );
    assert!(!marker.exists(), "a server was started");

    let empty = Sandbox::new();
    let output = empty.odek(&["ext", "call", "fixture__echo"]);
    assert_eq!(
        stderr(&output),
        "odek: ext call: tool \"fixture__echo\" names no configured MCP server \"fixture\"; no MCP servers are configured\n"
    );
}

#[test]
fn ext_call_treats_the_named_optional_server_as_required() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcp_servers": {
        "missing": {"command": "/nonexistent/odek-no-such-server", "required": false},
    }}));
    let output = sandbox.odek(&["ext", "call", "missing__anything"]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.starts_with(
            "odek: mcp server \"missing\": mcpclient missing: start \"/nonexistent/odek-no-such-server\": "
        ),
        "{err}"
    );
    assert!(!err.contains("continuing"), "{err}");
}

#[test]
fn ext_list_reports_an_optional_failure_without_failing() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcp_servers": {
        "fixture": sandbox.fixture_server(),
        "missing": {"command": "/nonexistent/odek-no-such-server", "required": false},
    }}));
    let output = sandbox.odek(&["ext", "list", "--json"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let listing: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let servers = listing["servers"].as_array().unwrap();
    assert_eq!((servers[0]["name"].as_str(), servers[0]["status"].as_str()), (Some("fixture"), Some("ok")));
    assert_eq!(servers[0]["required"], true);
    assert_eq!((servers[1]["name"].as_str(), servers[1]["status"].as_str()), (Some("missing"), Some("failed")));
    assert_eq!(servers[1]["required"], false);
    let line = err.lines().find(|line| line.contains("\"missing\"")).unwrap();
    assert!(line.starts_with("odek: warning: mcp server \"missing\": mcpclient missing: start \""), "{line}");
    assert!(line.ends_with(" (required: false)"), "{line}");

    let output = sandbox.odek(&["ext", "list"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).contains("\nmissing (global, required: false): failed\n"), "{}", stdout(&output));
}

/// `ext call` took the server name to be everything before the first `__`, so `fx___echo`
/// (server `fx_`, tool `echo`) named a server `fx` and `fx_` could not be reached.
#[test]
fn ext_call_reaches_a_server_whose_name_ends_in_an_underscore() {
    let sandbox = Sandbox::new();
    let marker = sandbox.project.join("spawned");
    sandbox.global_config(&json!({"mcp_servers": {"fx_": sandbox.fixture_server(), "other": marking_server(&marker)}}));
    let output = sandbox.odek(&["ext", "call", "fx___echo", r#"{"text":"reached"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "reached\n");
    assert!(!marker.exists(), "another server was started");

    // `fx___echo` is also a name `fx` could expose (its tool `_echo`): both are started, and the
    // catalogue decides.
    sandbox.global_config(&json!({"mcp_servers": {"fx_": sandbox.fixture_server(), "fx": sandbox.fixture_server()}}));
    let output = sandbox.odek(&["ext", "call", "fx___echo", r#"{"text":"both"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "both\n");
    assert!(stderr(&output).contains("odek: connected MCP server \"fx\""), "{}", stderr(&output));
}

#[test]
fn ext_call_finds_the_server_of_a_shortened_exposed_name() {
    let sandbox = Sandbox::new();
    let long = "s".repeat(60);
    let marker = sandbox.project.join("spawned");
    sandbox.global_config(
        &json!({"mcp_servers": {long.as_str(): sandbox.fixture_server(), "other": marking_server(&marker)}}),
    );
    let exposed = odek_contract::names::qualify_tool_name(&long, "echo").into_string();
    assert_eq!(exposed.len(), 64);
    assert!(!exposed.contains("__"), "the head ends inside the server name: {exposed}");
    let output = sandbox.odek(&["ext", "call", &exposed, r#"{"text":"found"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "found\n");
    assert!(!marker.exists(), "another server was started");
}

/// Issue 32 item 3: servers pasted into `./.mcp.json` follow Claude Code's semantics — optional
/// unless they say `"required": true` — so a broken one is a warning that says why, and the run
/// goes on with the others.
#[test]
fn a_broken_mcp_json_server_does_not_stop_the_run() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "fixture__echo", r#"{"text":"still here"}"#)]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    sandbox.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "runner": {"command": "odek-no-such-runner", "args": ["-y", "@example/mcp-server"]},
            "crashing": {"command": "sh", "args": ["-c", "echo 'Error: EXAMPLE_API_KEY is not set' >&2; exit 1"]},
        }})
        .to_string(),
    );
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox
        .command(&["run", "--events-jsonl", path_str(&sink), "go"])
        .env("ODEK_APPROVE_MCP", "1")
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(stdout(&output), "done\n");
    assert_eq!(
        warning_for(&err, "runner"),
        format!(
            "odek: warning: mcp server \"runner\": mcpclient runner: start \"odek-no-such-runner\": No such file or directory{CONTINUING}"
        )
    );
    assert_eq!(
        warning_for(&err, "crashing"),
        format!(
            "odek: warning: mcp server \"crashing\": mcpclient crashing: initialize: the server exited with status 1 before answering; its last stderr line: Error: EXAMPLE_API_KEY is not set{CONTINUING}"
        )
    );
    let failed: Vec<(String, String, String)> =
        server_events(&events(&sink)).into_iter().filter(|(kind, ..)| kind == "mcp_server_failed").collect();
    assert_eq!(
        failed,
        [
            ("mcp_server_failed".to_owned(), "crashing".to_owned(), "connection_closed".to_owned()),
            ("mcp_server_failed".to_owned(), "runner".to_owned(), "spawn_failed".to_owned()),
        ]
    );
    assert!(tool_contents(&server.requests()[1])[0].contains("still here"));

    // Marked required, the same entries stop the run, each named, with the way out.
    sandbox.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "runner": {"command": "odek-no-such-runner", "required": true},
            "crashing": {"command": "sh", "args": ["-c", "exit 1"], "required": true},
        }})
        .to_string(),
    );
    let output = sandbox.command(&["run", "go"]).env("ODEK_APPROVE_MCP", "1").output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).ends_with(
            "odek: mcp server \"crashing\": mcpclient crashing: initialize: the server exited with status 1 before answering (it wrote nothing on stderr)\n\
             mcp server \"runner\": mcpclient runner: start \"odek-no-such-runner\": No such file or directory\n\
             to let the run go on without one of these servers when it fails, set \"required\": false in its entry\n"
        ),
        "{}",
        stderr(&output)
    );
}
