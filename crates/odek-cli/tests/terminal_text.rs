//! End-to-end tests of terminal-safe text (`odek_contract::terminal_text`): the real binary, the
//! real fixture server (behind a real shell where its stderr must say something), and the
//! scripted model server. Text from outside — a server's warning and stderr line, a tool name a
//! model sends, a session file, an `ext check` report — carries a U+202E and the three kinds of
//! escape sequence (a colour, an OSC 8 hyperlink, an OSC 0 window title), and none of it reaches
//! the terminal raw.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::io::Read;
use std::process::Stdio;

use odek_agent::session::{Session, SessionId, SessionStore};
use odek_llm::{Message, ToolCall};
use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::{Sandbox, stderr, stdout};
use serde_json::json;

/// A right-to-left override, a colour, a hyperlink and a window title around plain words.
const HOSTILE: &str =
    "ev\u{202E}il \u{1b}[31mred\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\\u{1b}]0;title\u{7}end";
/// [`HOSTILE`] as the terminal sees it: the escape sequences removed, the override replaced.
const SHOWN: &str = "ev\u{FFFD}il redlinkend";

/// None of [`HOSTILE`]'s controls: odek prints no escape sequence of its own without a terminal.
fn assert_never_raw(what: &str, text: &str) {
    assert!(!text.contains(['\u{202E}', '\u{1b}', '\u{7}']), "{what} reached the terminal raw: {text:?}");
}

#[test]
fn a_servers_warning_never_reaches_the_terminal_raw_red() {
    let sandbox = Sandbox::new();
    let fixture = odek_test_support::fixture_server();
    // A version odek does not support is warned about; a failed optional server's error is
    // warned about with the server's own message.
    let message = serde_json::to_string(HOSTILE).unwrap();
    sandbox.global_config(&json!({"mcp_servers": {
        "fx": {"command": fixture, "args": ["--conformant", "--protocol-version", HOSTILE]},
        "opt": {
            "command": fixture,
            "args": ["--mode", "initialize-error", "--initialize-error-message", &message[1..message.len() - 1]],
            "required": false,
        },
    }}));
    let output = sandbox.command(&["ext", "list"]).env("ODEK_APPROVE_MCP", "1").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (out, err) = (stdout(&output), stderr(&output));
    assert_never_raw("a server's warning", &err);
    assert_never_raw("the listing", &out);
    assert!(err.contains(&format!("odek: warning: mcp server \"opt\": mcpclient opt: initialize: MCP error -32603: {SHOWN}; continuing without it (required: false)\n")), "{err}");
    assert!(err.contains("odek: warning: mcp server \"fx\": unsupported protocol version \"ev\u{FFFD}il "), "{err}");
    assert!(out.contains(&format!("fx (global): ok, protocol {SHOWN}, 5 tool(s)\n")), "{out}");
}

#[test]
fn a_servers_stderr_and_log_lines_never_reach_the_terminal_raw_red() {
    let sandbox = Sandbox::new();
    // A real shell writes the line to its stderr, then becomes the fixture server.
    sandbox.global_config(&json!({"mcp_servers": {"fx": {
        "command": "/bin/sh",
        "args": ["-c", "printf '%s\\n' \"$0\" >&2; exec \"$@\"", HOSTILE, odek_test_support::fixture_server()],
    }}}));
    let arguments = json!({"level": "warning", "data": HOSTILE}).to_string();
    let mut command = sandbox.command(&["ext", "call", "fx__log_message", &arguments]);
    command.env("ODEK_APPROVE_MCP", "1");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert_never_raw("a server's stderr or log line", &err);
    assert!(err.contains(&format!("[fx] {SHOWN}\n")), "{err}");
    assert!(err.contains(&format!("[fx] warning: {SHOWN}\n")), "{err}");
}

/// A model that calls a tool named [`HOSTILE`], then answers `done`; the sandbox uses it.
fn hostile_tool_call() -> (ScriptedServer, Sandbox) {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", HOSTILE, r#"{"command":"ls"}"#)]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    (server, sandbox)
}

#[test]
fn a_tool_name_in_the_call_records_never_reaches_the_terminal_raw_red() {
    let (_server, sandbox) = hostile_tool_call();
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert_never_raw("a tool name", &err);
    assert!(err.contains(&format!("odek: [it 1] {SHOWN} ")), "{err}");
    assert!(err.contains(&format!("odek: [it 1] {SHOWN} failed (")), "{err}");
}

/// The live status line and its records on a real terminal: stderr is a pseudo-terminal, so
/// odek draws the status line (with colours of its own, which is why this looks for the pieces
/// of [`HOSTILE`] rather than for any ESC).
#[test]
fn a_tool_name_in_the_live_status_line_never_reaches_the_terminal_raw_red() {
    let (_server, sandbox) = hostile_tool_call();
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut terminal = std::fs::File::from(pty.master);
    let mut command = sandbox.command(&["run", "go"]);
    command.stderr(Stdio::from(pty.slave)).env("TERM", "xterm");
    // Reading ends (EIO) once odek has exited and the command, the other holder of the
    // terminal's other end, is dropped.
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let _ = terminal.read_to_end(&mut seen);
        seen
    });
    let output = run_support::output_within(command, std::time::Duration::from_secs(60));
    let seen = String::from_utf8_lossy(&reader.join().unwrap()).into_owned();
    assert_eq!(output.status.code(), Some(0), "{seen}");
    assert_eq!(stdout(&output), "done\n");
    assert!(seen.contains(SHOWN), "the record shows the name: {seen:?}");
    for piece in ['\u{202E}', '\u{7}'] {
        assert!(!seen.contains(piece), "{piece:?} reached the terminal: {seen:?}");
    }
    for piece in ["\u{1b}]", "il \u{1b}[31mred"] {
        assert!(!seen.contains(piece), "{piece:?} reached the terminal: {seen:?}");
    }
}

/// The final answer is the model's text: shown terminal-safe when stdout is a terminal, and
/// printed exactly as it is when stdout is a pipe (it is the command's output).
#[test]
fn a_final_answer_on_a_terminal_never_drives_it_red() {
    let answer = format!("{HOSTILE}\n\tsecond line");
    let server = ScriptedServer::start(vec![Reply::text(answer.clone()), Reply::text(answer.clone())]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let piped = sandbox.odek(&["run", "go"]);
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    assert_eq!(stdout(&piped), format!("{answer}\n"), "a pipe gets the answer as it is");

    let pty = nix::pty::openpty(None, None).unwrap();
    let mut terminal = std::fs::File::from(pty.master);
    let mut command = sandbox.command(&["run", "go"]);
    command.stdout(Stdio::from(pty.slave));
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let _ = terminal.read_to_end(&mut seen);
        seen
    });
    let output = run_support::output_within(command, std::time::Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The terminal turns each LF into CR LF on output.
    let seen = String::from_utf8_lossy(&reader.join().unwrap()).replace("\r\n", "\n");
    assert_eq!(seen, format!("{SHOWN}\n\tsecond line\n"));
}

#[test]
fn a_session_title_never_reaches_the_terminal_raw_red() {
    let sandbox = Sandbox::new();
    let store = SessionStore::new(sandbox.sessions_dir()).unwrap();
    let mut session = Session::new(SessionId::mint().unwrap());
    session.task = HOSTILE.to_owned();
    session.model = HOSTILE.to_owned();
    session.messages = vec![
        Message::user(HOSTILE),
        Message { tool_calls: vec![ToolCall::new("c1", HOSTILE, HOSTILE)], ..Message::assistant(HOSTILE) },
        Message::tool("c1", HOSTILE, HOSTILE),
    ];
    store.save(&mut session).unwrap();
    let id = session.id.to_string();

    let listed = sandbox.odek(&["session", "list"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let listing = stdout(&listed);
    assert_never_raw("a session title", &listing);
    assert!(listing.lines().nth(1).unwrap().ends_with(&format!("  {SHOWN}")), "{listing}");

    let shown = sandbox.odek(&["session", "show", &id]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let text = stdout(&shown);
    assert_never_raw("a session's messages", &text);
    assert!(text.contains(&format!("task      {SHOWN}\n")), "{text}");
    assert!(text.contains(&format!("── user ──\n{SHOWN}\n")), "{text}");
    assert!(text.contains(&format!("→ {SHOWN} {SHOWN}\n")), "{text}");

    let trimmed = sandbox.odek(&["session", "trim", "--keep", "0"]);
    assert_eq!(stdout(&trimmed), format!("removed {id}  {SHOWN}\nremoved 1 session(s)\n"));
}

#[test]
fn an_ext_check_report_never_reaches_the_terminal_raw_red() {
    let sandbox = Sandbox::new();
    let fixture = odek_test_support::fixture_server();
    let root = sandbox.artifacts.to_str().unwrap();
    let fixture = fixture.to_str().unwrap();
    let output = sandbox.odek(&[
        "ext",
        "check",
        "--timeout",
        "5",
        "--artifact-root",
        root,
        "--",
        fixture,
        "--conformant",
        "--artifact-dir",
        root,
        "--protocol-version",
        HOSTILE,
    ]);
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(2), "only the version check warns: {out}{err}");
    assert_never_raw("the report", &out);
    assert_never_raw("the plan", &err);
    assert!(out.contains(&format!(" --protocol-version {SHOWN}\n")), "{out}");
    assert!(out.contains("  warn  protocol_version_supported: answered protocol version \"ev\u{FFFD}il "), "{out}");
}
