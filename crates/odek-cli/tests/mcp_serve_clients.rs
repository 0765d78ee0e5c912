//! `odek mcp` as real clients see it: odek's own MCP client (`ext list`, `ext call`, a run that
//! calls `inner__run_task` and renders its artifacts), `odek ext check -- odek mcp`, and the
//! Streamable HTTP face (`--http`: the bearer token, 401 without or with a wrong one, loopback
//! unless `--allow-remote`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mcp_serve_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use mcp_serve_support::*;
use odek_test_support::openai::{Reply, ScriptedServer};
use serde_json::{Value, json};

/// Runs `odek <args>` to its end (stdin closed) within the deadline.
fn odek(sandbox: &Sandbox, args: &[&str]) -> (i32, String, String) {
    let mut command = sandbox.command(args);
    command.stdin(Stdio::null());
    let mut child = command.spawn().unwrap();
    let (mut stdout, mut stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = wait_within(&mut child, Duration::from_secs(60));
    (status.code().unwrap_or(-1), out.join().unwrap(), err.join().unwrap())
}

/// A child model that writes `report.md` into its staging folder, then answers.
fn report_writer() -> Reply {
    Reply::responding(|request| {
        let messages = request.body["messages"].as_array().unwrap();
        if messages.iter().any(|message| message["role"] == "tool") {
            return Reply::text("The report is in report.md. Status: done.");
        }
        let user = messages[1]["content"].as_str().unwrap();
        let start = user.find(".odek-artifacts/task-").unwrap();
        let staging = &user[start..start + ".odek-artifacts/task-".len() + 16];
        let arguments = json!({"path": format!("{staging}/report.md"), "content": "# Report\nall good\n"});
        Reply::tool_calls(vec![("w1", "write_file", arguments.to_string().as_str())])
    })
}

/// The Claude-style entry of the issue, with the binary's path for `odek`.
fn inner_entry(sandbox: &Sandbox) -> Value {
    json!({
        "command": odek_test_support::odek_binary(),
        "args": ["mcp", "--artifact-root", sandbox.artifacts],
        "artifact_roots": [sandbox.artifacts],
        "auto_approve": true,
    })
}

#[test]
fn odek_lists_and_calls_its_own_server_by_qualified_names() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "from the inner server\n");
    sandbox.global_config(&json!({"mcp_servers": {"inner": inner_entry(&sandbox)}}));
    let (code, stdout, stderr) = odek(&sandbox, &["ext", "list", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let inner = listed["servers"].as_array().unwrap().iter().find(|server| server["name"] == "inner").unwrap().clone();
    let tools: Vec<&str> = inner["tools"].as_array().unwrap().iter().map(|tool| tool.as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "inner__read_file",
            "inner__write_file",
            "inner__patch",
            "inner__search_files",
            "inner__shell",
            "inner__run_task"
        ]
    );
    let (code, stdout, stderr) = odek(&sandbox, &["ext", "call", "inner__read_file", r#"{"path":"notes.txt"}"#]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("from the inner server"), "{stdout}");
}

#[test]
fn a_run_calls_inner_run_task_and_renders_its_verified_artifacts() {
    // Two model answers per run: the `ext call`'s run, then the outer run's.
    let server = ScriptedServer::start((0..4).map(|_| report_writer()).collect());
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": server.base_url(), "model": "test-model",
        "mcp_servers": {"inner": inner_entry(&sandbox)},
    }));
    // The model view of the call: the summary, then one validated metadata line per artifact.
    let (code, stdout, stderr) = odek(
        &sandbox,
        &["ext", "call", "--model-view", "inner__run_task", r#"{"goal":"write the report","trusted":true}"#],
    );
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    assert!(stdout.contains("The report is in report.md. Status: done."), "{stdout}");
    let artifact_line =
        stdout.lines().find(|line| line.contains("artifact \"report")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(artifact_line.contains("18 bytes, sha256 "), "{artifact_line}");
    assert!(!stdout.contains("all good"), "artifact content never reaches the model: {stdout}");

    // And in a whole run: a replayed outer model calls the tool, odek validates and renders.
    let outer = sandbox.home.join("outer.replay.json");
    std::fs::write(
        &outer,
        json!({"schema": "odek.replay/v1", "turns": [
            {"tool_calls": [{"name": "inner__run_task", "arguments": {"goal": "write the report", "trusted": true}}]},
            {"content": "the inner odek wrote the report"}
        ]})
        .to_string(),
    )
    .unwrap();
    let (code, stdout, stderr) =
        odek(&sandbox, &["run", "--provider", "replay", "--replay", path_str(&outer), "delegate the report"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "the inner odek wrote the report\n");
    assert!(stderr.contains("inner__run_task ok"), "{stderr}");
    assert!(stderr.contains("artifact \"report") && stderr.contains("18 bytes, sha256 "), "{stderr}");
}

#[test]
fn ext_check_passes_odek_mcp() {
    let sandbox = Sandbox::new();
    let odek_path = odek_test_support::odek_binary();
    let (code, stdout, stderr) = odek(&sandbox, &["ext", "check", "--json", "--", path_str(&odek_path), "mcp"]);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("{stdout}\n{stderr}"));
    let failed: Vec<&Value> =
        report["checks"].as_array().unwrap().iter().filter(|check| check["status"] == "fail").collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

/// `odek mcp --http 127.0.0.1:0`, and the URL and token it printed on stderr.
struct HttpServed {
    child: std::process::Child,
    url: String,
    token: String,
    stderr_lines: mpsc::Receiver<String>,
}

impl Drop for HttpServed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_http(sandbox: &Sandbox, extra: &[&str]) -> HttpServed {
    let mut args = vec!["mcp", "--http", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut child = sandbox.command(&args).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, stderr_lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let next = || stderr_lines.recv_timeout(Duration::from_secs(30)).unwrap();
    let url = next().rsplit_once(" at ").unwrap().1.to_owned();
    let token = next().rsplit_once(": ").unwrap().1.to_owned();
    HttpServed { child, url, token, stderr_lines }
}

/// One POST of `body` to the server; the status code and the body.
fn post(url: &str, authorization: Option<&str>, body: &Value) -> (u16, String) {
    post_in(url, authorization, None, body)
}

/// [`post`] within a session (`Mcp-Session-Id`).
fn post_in(url: &str, authorization: Option<&str>, session: Option<&str>, body: &Value) -> (u16, String) {
    post_with(url, authorization, session, None, body)
}

/// [`post_in`] with an `MCP-Protocol-Version` header when `version` is given.
fn post_with(
    url: &str,
    authorization: Option<&str>,
    session: Option<&str>,
    version: Option<&str>,
    body: &Value,
) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.to_string();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(value) = authorization {
        request.push_str(&format!("Authorization: {value}\r\n"));
    }
    if let Some(session) = session {
        request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    if let Some(version) = version {
        request.push_str(&format!("MCP-Protocol-Version: {version}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, response)
}

fn initialize() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"http-test","version":"0"}}})
}

#[test]
fn http_requires_the_printed_bearer_token_red() {
    let sandbox = Sandbox::new();
    let served = serve_http(&sandbox, &[]);
    assert_eq!(served.token.len(), 64, "{}", served.token);
    assert!(served.url.starts_with("http://127.0.0.1:") && served.url.ends_with("/mcp"), "{}", served.url);
    let (status, _) = post(&served.url, None, &initialize());
    assert_eq!(status, 401, "no token");
    let wrong = format!("Bearer {}", "0".repeat(64));
    let (status, _) = post(&served.url, Some(&wrong), &initialize());
    assert_eq!(status, 401, "a wrong token of the right length");
    let (status, _) = post(&served.url, Some("Bearer short"), &initialize());
    assert_eq!(status, 401, "a wrong token of another length");
    let right = format!("Bearer {}", served.token);
    let (status, body) = post(&served.url, Some(&right), &initialize());
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"protocolVersion\":\"2025-03-26\""), "{body}");
    // The token is printed once, and nothing else of it reaches stderr.
    assert!(served.stderr_lines.try_iter().all(|line| !line.contains(&served.token)));
}

#[test]
fn http_answers_the_asked_revision_and_refuses_an_unsupported_protocol_version_header_red() {
    let sandbox = Sandbox::new();
    let served = serve_http(&sandbox, &[]);
    let bearer = format!("Bearer {}", served.token);
    let asking = |version: &str| {
        let mut request = initialize();
        request["params"]["protocolVersion"] = json!(version);
        request
    };
    for (asked, answered) in [("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"), ("2099-01-01", "2025-11-25")]
    {
        let (status, body) = post(&served.url, Some(&bearer), &asking(asked));
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(&format!("\"protocolVersion\":\"{answered}\"")), "asked {asked}: {body}");
    }
    let (status, body) = post_with(&served.url, Some(&bearer), None, Some("2099-01-01"), &asking("2025-11-25"));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("unsupported MCP-Protocol-Version"), "{body}");
    let (status, _) = post_with(&served.url, Some(&bearer), None, Some("2025-11-25"), &asking("2025-11-25"));
    assert_eq!(status, 200);
}

/// L4: 256 connections that never send a request — as many as `odek mcp --http` serves at once
/// — then a real client. Before, the client was not accepted until they reached their header
/// deadline (10 s) and the server closed them all, again for each such wave; now the oldest one
/// not yet past the token check makes room and the client is answered while they stay open.
#[test]
fn half_open_connections_do_not_lock_the_http_face_red() {
    const HALF_OPEN: usize = 256;
    let sandbox = Sandbox::new();
    let served = serve_http(&sandbox, &[]);
    let rest = served.url.strip_prefix("http://").unwrap();
    let authority = &rest[..rest.find('/').unwrap()];
    let half_open: Vec<TcpStream> = (0..HALF_OPEN).map(|_| TcpStream::connect(authority).unwrap()).collect();
    let (status, body) = post(&served.url, Some(&format!("Bearer {}", served.token)), &initialize());
    assert_eq!(status, 200, "{body}");
    let closed = half_open
        .iter()
        .filter(|stream| {
            stream.set_nonblocking(true).unwrap();
            !matches!(stream.peek(&mut [0_u8; 1]), Err(error) if error.kind() == std::io::ErrorKind::WouldBlock)
        })
        .count();
    assert!(closed <= 1, "{closed} of {HALF_OPEN} were closed before the client was answered");
}

#[test]
fn http_on_a_non_loopback_address_is_refused_without_allow_remote_red() {
    let sandbox = Sandbox::new();
    let (code, stdout, stderr) = odek(&sandbox, &["mcp", "--http", "0.0.0.0:0"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr
            .starts_with("odek: --http \"0.0.0.0:0\": not a loopback address; odek mcp serves a shell and agent runs"),
        "{stderr}"
    );
}

#[test]
fn http_serves_run_task_with_progress_on_the_event_stream() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "three apples\n");
    let script = sandbox.home.join("serve.replay.json");
    let replay = json!({"schema": "odek.replay/v1", "turns": [], "subagents": [{"goal": "count the apples", "turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"content": "There are three apples."}
    ]}]});
    std::fs::write(&script, replay.to_string()).unwrap();
    let served = serve_http(&sandbox, &["--provider", "replay", "--replay", path_str(&script)]);
    let bearer = format!("Bearer {}", served.token);
    let (status, response) = post(&served.url, Some(&bearer), &initialize());
    assert_eq!(status, 200, "{response}");
    let session = response
        .lines()
        .find_map(|line| line.strip_prefix("mcp-session-id: ").or_else(|| line.strip_prefix("Mcp-Session-Id: ")))
        .unwrap_or_else(|| panic!("{response}"))
        .trim()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post_in(&served.url, Some(&bearer), Some(&session), &initialized).0, 202);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "run_task", "arguments": {"goal": "count the apples"}, "_meta": {"progressToken": "h1"}}});
    let (status, stream) = post_in(&served.url, Some(&bearer), Some(&session), &call);
    assert_eq!(status, 200, "{stream}");
    let messages: Vec<Value> = stream
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert!(
        messages.iter().any(|message| message["method"] == "notifications/progress"
            && message["params"]["message"].as_str().is_some_and(|text| text.starts_with("iteration 1 of at most "))),
        "{stream}"
    );
    let answer = messages.last().unwrap();
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let envelope: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(envelope["text"].as_str().unwrap().ends_with("There are three apples."), "{envelope}");
}
