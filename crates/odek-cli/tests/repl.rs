//! `odek repl` end to end: the real binary in a real pseudo-terminal (its controlling terminal,
//! so Ctrl-C is the kernel's SIGINT), or scripted on a pipe, against the scripted
//! OpenAI-compatible server and the fixture MCP server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod repl_support;
mod run_support;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use odek_test_support::openai::{Reply, ScriptedServer};
use repl_support::{PROMPT, Terminal};
use run_support::{Sandbox, assert_no_key, messages, stderr, stdout};
use serde_json::{Value, json};

/// `odek repl <args>` in the sandbox on a fresh terminal.
fn repl(sandbox: &Sandbox, args: &[&str]) -> Terminal {
    let mut full = vec!["repl"];
    full.extend_from_slice(args);
    Terminal::spawn(sandbox.command(&full))
}

/// `odek repl <args>` with `input` on stdin (a pipe): the scripted REPL.
fn scripted(sandbox: &Sandbox, args: &[&str], input: &[u8]) -> Output {
    let mut full = vec!["repl"];
    full.extend_from_slice(args);
    let mut command: Command = sandbox.command(&full);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let pid = child.id();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let Ok(output) = receiver.recv_timeout(repl_support::DEADLINE) else {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL);
        panic!("odek repl was still running after {:?}", repl_support::DEADLINE);
    };
    writer.join().unwrap();
    output.unwrap()
}

/// The saved session files' contents.
fn sessions(sandbox: &Sandbox) -> Vec<Value> {
    sandbox.session_files().iter().map(|path| serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()).collect()
}

/// Every tool call of `session` has its result.
fn assert_no_dangling_call(session: &Value) {
    let messages = session["messages"].as_array().unwrap();
    let calls: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|call| call["id"].as_str().unwrap())
        .collect();
    let results: Vec<&str> =
        messages.iter().filter(|m| m["role"] == "tool").map(|m| m["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(calls, results, "a call without its result: {messages:?}");
}

#[test]
fn a_typed_task_streams_its_answer_and_ctrl_d_exits_0() {
    let server = ScriptedServer::start(vec![Reply::sse(Reply::text("Hello from the streamed model answer"))]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &["--stream"]);
    terminal.expect(PROMPT);
    terminal.line("say hello");
    terminal.expect("Hello from the streamed model answer\r\n");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["stream"], true);
    assert_eq!(screen.matches("Hello from the streamed model answer").count(), 1, "printed once: {screen}");
    assert_no_key(&[&screen]);
}

#[test]
fn usage_shows_the_scripted_usage_and_ctrl_c_twice_exits_0() {
    let server = ScriptedServer::start(vec![
        Reply::text("first").with_usage(1234, 56),
        Reply::text("second").with_usage(1000, 4),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &["--max-input-tokens", "100000"]);
    terminal.expect(PROMPT);
    terminal.line("one");
    terminal.expect("first");
    terminal.expect(PROMPT);
    terminal.line("two");
    terminal.expect("second");
    terminal.expect(PROMPT);
    terminal.line("/usage");
    terminal.expect("tokens: 2234 in / 60 out (2 turn(s))");
    terminal.expect("estimated cost: no prices configured");
    terminal.expect("input tokens: 2234 of 100000 used, 97766 left");
    terminal.expect(PROMPT);
    terminal.send(b"\x03");
    terminal.expect("Ctrl-C again");
    terminal.send(b"\x03");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert_eq!(server.requests().len(), 2, "the commands never reached the model");
}

#[test]
fn ctrl_c_over_typed_text_drops_it_and_does_not_count_towards_leaving() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9", false);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    terminal.send(b"half a thought");
    terminal.expect("half a thought");
    terminal.send(b"\x03");
    terminal.expect(PROMPT);
    terminal.send(b"\x03");
    terminal.expect("Ctrl-C again");
    terminal.line("/session");
    terminal.expect("turns: 0");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert_eq!(screen.matches("Ctrl-C again").count(), 1, "{screen}");
}

#[test]
fn the_batch_card_is_approved_with_y() {
    let sandbox = Sandbox::new();
    let marker = sandbox.project.join("ran");
    let command = format!("curl -s -m 1 http://127.0.0.1:9/ ; touch '{}'", marker.display());
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", json!({"command": command}).to_string())]),
        Reply::text("the command ran"),
    ]);
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    terminal.line("run it");
    terminal.expect("[y] approve  [n] deny");
    terminal.send(b"y");
    terminal.expect("the command ran");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert!(marker.exists(), "the approved command did not run: {screen}");
}

/// A window resized while a turn waits on its approval card, and again at the prompt: the turn
/// goes on, the REPL stays usable, and the session has the turn.
#[test]
fn a_terminal_resized_mid_turn_goes_on() {
    let sandbox = Sandbox::new();
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "shell", json!({"command": "curl -s -m 1 http://127.0.0.1:9/"}).to_string())]),
        Reply::text("answered after the resize"),
    ]);
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    terminal.line("resize during this");
    terminal.expect("[y] approve  [n] deny");
    terminal.resize(50, 12);
    terminal.send(b"y");
    terminal.expect("answered after the resize");
    terminal.expect(PROMPT);
    terminal.resize(30, 8);
    terminal.line("/session");
    terminal.expect("turns: 1");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert!(!screen.contains("panicked"), "{screen}");
    let sessions = sessions(&sandbox);
    assert_eq!(sessions.len(), 1);
    assert_no_dangling_call(&sessions[0]);
}

/// Ctrl-C in the middle of a slow MCP call stops that turn only: the prompt is back within a
/// second, the next turn works, and the session file has every call with its result.
#[test]
fn ctrl_c_stops_a_slow_mcp_call_and_the_next_turn_works() {
    let server = ScriptedServer::start(vec![Reply::tool_calls(vec![(
        "c1",
        "fixture__slow",
        json!({"ms": 300000, "honor_cancel": true}).to_string(),
    )])]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    terminal.line("wait for it");
    terminal.expect("fixture__slow");
    server.wait_for_requests(1, Duration::from_secs(30));
    terminal.send(b"\x03");
    let took = terminal.expect_within(PROMPT, Duration::from_secs(30));
    assert!(took < Duration::from_secs(1), "the prompt came back after {took:?}");
    assert!(terminal.screen().contains("odek: context canceled"), "{}", terminal.screen());
    server.push(Reply::text("the second turn works"));
    terminal.line("again");
    terminal.expect("the second turn works");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    let sessions = sessions(&sandbox);
    assert_eq!(sessions.len(), 1);
    assert_no_dangling_call(&sessions[0]);
    let saved = sessions[0]["messages"].to_string();
    assert!(saved.contains("wait for it") && saved.contains("the second turn works"), "{saved}");
    // The second turn's request carries the first turn's cancelled call and its result.
    let last = server.requests().pop().unwrap();
    let tool_results: Vec<Value> = messages(&last).into_iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_results.len(), 1, "{tool_results:?}");
    let result = tool_results[0]["content"].as_str().unwrap();
    assert!(result.contains("error: cancelled") || result.contains("context canceled"), "{result}");
}

#[test]
fn a_budget_stop_prints_the_budget_error_and_keeps_the_prompt() {
    let server = ScriptedServer::start(vec![Reply::text("too expensive").with_usage(500, 5)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &["--max-input-tokens", "100"]);
    terminal.expect(PROMPT);
    terminal.line("spend");
    terminal.expect("odek: execution budget exceeded: input_tokens");
    terminal.expect(PROMPT);
    // The session's budget is spent: the next turn stops before another model call.
    terminal.line("more");
    terminal.expect("odek: execution budget exceeded: input_tokens");
    terminal.expect(PROMPT);
    terminal.line("/usage");
    terminal.expect("input tokens: 500 of 100 used, 0 left");
    terminal.line("/exit");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert_eq!(server.requests().len(), 1);
}

/// Three turns typed in the REPL, then `odek continue` and `odek repl --id` resume them.
#[test]
fn three_turns_are_resumed_by_continue_and_by_repl_id() {
    let server = ScriptedServer::start(vec![
        Reply::text("answer one"),
        Reply::text("answer two"),
        Reply::text("answer three"),
        Reply::text("answer four"),
        Reply::text("answer five"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &[]);
    for (task, answer) in [("task one", "answer one"), ("task two", "answer two"), ("task three", "answer three")] {
        terminal.expect(PROMPT);
        terminal.line(task);
        terminal.expect(answer);
    }
    terminal.expect(PROMPT);
    terminal.line("/session");
    terminal.expect("turns: 3");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    let files = sandbox.session_files();
    assert_eq!(files.len(), 1);
    let id = files[0].file_stem().unwrap().to_str().unwrap().to_owned();
    assert!(screen.contains(&format!("session {id}")), "{screen}");

    let output = sandbox.odek(&["continue", "--id", &id, "task four"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "answer four\n");
    let users: Vec<String> = messages(&server.requests()[3])
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(users.len(), 4, "{users:?}");
    assert!(users[0].contains("task one") && users[2].contains("task three"), "{users:?}");

    let output = scripted(&sandbox, &["--id", &id], b"task five\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "answer five\n");
    assert_eq!(messages(&server.requests()[4]).iter().filter(|m| m["role"] == "user").count(), 5);
}

#[test]
fn an_unknown_slash_command_is_an_error_and_never_a_model_call() {
    let server = ScriptedServer::start(vec![Reply::text("unused")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    terminal.line("/frobnicate now");
    terminal.expect("odek: unknown command \"/frobnicate\" (type /help for the list; nothing was sent)");
    terminal.expect(PROMPT);
    terminal.line("/help");
    terminal.expect("/usage");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert!(server.requests().is_empty());
}

/// A corrupt history file is one warning; the REPL runs and the file stays private.
#[test]
fn a_corrupt_history_file_is_a_warning_red() {
    let server = ScriptedServer::start(vec![Reply::text("still works")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let history = sandbox.home.join(".odek/repl_history");
    std::fs::write(&history, b"\xff\xfe\x00garbage\n{]\n").unwrap();
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect("odek: warning: repl history");
    terminal.expect("2 unreadable line(s) skipped");
    terminal.expect(PROMPT);
    terminal.line("go");
    terminal.expect("still works");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&history).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    assert!(std::fs::read(&history).unwrap().ends_with(b"\"go\"\n"));
}

/// 10 MB pasted at once (as a terminal pastes: bracketed) is refused for itself; the REPL goes
/// on and nothing reached the model.
#[test]
fn ten_megabytes_pasted_at_once_are_refused_red() {
    let server = ScriptedServer::start(vec![Reply::text("after the paste")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    let mut writer = terminal.writer();
    let paste = std::thread::spawn(move || {
        let mut bytes = b"\x1b[200~".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
        bytes.extend_from_slice(b"\x1b[201~\r");
        writer.write_all(&bytes).unwrap();
    });
    terminal.expect("odek: input too long: 10485760 bytes");
    paste.join().unwrap();
    terminal.expect(PROMPT);
    terminal.line("small");
    terminal.expect("after the paste");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, _) = terminal.finish();
    assert_eq!(status.code(), Some(0));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].body.to_string().len() < 100_000, "the paste reached the model");
}

/// The text of the last user message of a recorded request.
fn last_user_text(request: &odek_test_support::openai::RecordedRequest) -> String {
    let messages = messages(request);
    let user = messages.iter().rev().find(|message| message["role"] == "user").unwrap();
    user["content"].as_str().unwrap().to_owned()
}

/// L2: bytes that are not UTF-8 typed at the terminal are refused for their input and the REPL
/// goes on, as the scripted REPL does; what came with them is not sent either. Before, the
/// editor's error ended the REPL without a word.
#[test]
fn invalid_utf8_typed_at_the_terminal_is_refused_and_the_repl_goes_on_red() {
    let server = ScriptedServer::start(vec![Reply::text("after the bad line")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    terminal.send(b"abc\xff\xfe def\r");
    terminal.expect("odek: input is not valid UTF-8; nothing was sent");
    terminal.expect(PROMPT);
    terminal.line("fine");
    terminal.expect("after the bad line");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "only the valid line reached the model");
    assert_eq!(last_user_text(&requests[0]), "fine");
}

/// L3: 150 KB typed on one line without paste brackets (a terminal that does not bracket
/// pastes, or a program typing into one). The editor repainted the whole line at every wrap, so
/// the terminal got O(n²) bytes — 73 MB for 150 KB; now it gets less than 4 bytes per byte
/// typed, and the whole line still reaches the model.
#[test]
fn a_long_unbracketed_line_costs_the_terminal_linear_output_red() {
    const TYPED: usize = 150 * 1024;
    let server = ScriptedServer::start(vec![Reply::text("got the long line")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    let before = terminal.screen().len();
    let mut writer = terminal.writer();
    let typing = std::thread::spawn(move || {
        let mut keys = vec![b'y'; TYPED];
        keys.push(b'\r');
        writer.write_all(&keys).unwrap();
    });
    terminal.expect("got the long line");
    typing.join().unwrap();
    let written = terminal.screen().len() - before;
    assert!(written < 4 * TYPED, "{written} bytes written to the terminal for {TYPED} typed");
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{}", &screen[screen.len().saturating_sub(2000)..]);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let sent = last_user_text(&requests[0]);
    let (ys, others) = (sent.matches('y').count(), sent.chars().filter(|c| *c != 'y').collect::<String>());
    assert!(ys == TYPED && others.is_empty(), "{ys} of {TYPED} typed bytes reached the model, and {others:?}");
}

/// Scripted: each line is a turn, only answers reach stdout, a line that is not UTF-8 is
/// refused for itself, and the exit code is the last line's.
#[test]
fn scripted_lines_with_invalid_utf8_red() {
    let server = ScriptedServer::start(vec![Reply::text("answer one"), Reply::text("answer two")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = scripted(&sandbox, &[], b"first\n\xff\xfe bad\nsecond\n");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "answer one\nanswer two\n");
    assert!(
        stderr(&output).contains("odek: input is not valid UTF-8 (at byte 0); nothing was sent"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.requests().len(), 2);

    let output = scripted(&sandbox, &[], b"/nope\n");
    assert_eq!(output.status.code(), Some(1), "the last input failed: {}", stderr(&output));
    assert_eq!(stdout(&output), "");
}

#[test]
fn scripted_budget_stop_exits_4_and_a_long_line_is_refused_red() {
    let server = ScriptedServer::start(vec![Reply::text("pricey").with_usage(500, 5)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut input = vec![b'y'; 2 * 1024 * 1024];
    input.extend_from_slice(b"\nspend\n");
    let output = scripted(&sandbox, &["--max-input-tokens", "100"], &input);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let errors = stderr(&output);
    assert!(errors.contains("odek: input too long: 2097152 bytes"), "{errors}");
    assert!(errors.contains("odek: execution budget exceeded: input_tokens"), "{errors}");
    assert_eq!(server.requests().len(), 1);
}

/// SIGHUP (the terminal closed) in the middle of a turn: the turn stops, the session is saved
/// with no dangling call, and the REPL exits 129.
#[test]
fn sighup_mid_turn_saves_and_exits_129_red() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "fixture__slow", json!({"ms": 300000, "honor_cancel": true}).to_string())]),
        Reply::text("never asked"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), true);
    let mut terminal = repl(&sandbox, &[]);
    terminal.expect(PROMPT);
    terminal.line("wait for it");
    terminal.expect("fixture__slow");
    server.wait_for_requests(1, Duration::from_secs(30));
    terminal.signal(Signal::SIGHUP);
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(129), "{screen}");
    let sessions = sessions(&sandbox);
    assert_eq!(sessions.len(), 1, "{screen}");
    assert_no_dangling_call(&sessions[0]);
    assert!(sessions[0]["messages"].to_string().contains("wait for it"));
    assert!(odek_test_support::processes_mentioning(&sandbox.artifacts).is_empty(), "the MCP server outlived odek");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn tool_flags_are_rejected_by_name_red() {
    let sandbox = Sandbox::new();
    for (flag, name) in [(&["--tool", "shell"][..], "--tool"), (&["--no-tool=shell"][..], "--no-tool")] {
        let mut args = vec!["repl"];
        args.extend_from_slice(flag);
        let output = sandbox.odek(&args);
        assert_eq!(output.status.code(), Some(1));
        assert_eq!(stderr(&output), format!("odek repl: {name} is not supported in the REPL\n"));
    }
}

#[test]
fn bad_budget_values_get_run_s_messages() {
    let sandbox = Sandbox::new();
    let output = sandbox.odek(&["repl", "--max-tool-calls", "0"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "odek: --max-tool-calls must be a positive integer, got \"0\"\n");
}
