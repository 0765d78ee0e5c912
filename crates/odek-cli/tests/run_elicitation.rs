//! \[beyond\] Issue 35: an MCP server's elicitation end to end — the real `odek` binary, the
//! scripted model calling the fixture's `elicit` tool (`--mode elicitation`): `odek run` answers
//! with the config's `elicitation` policy and reports it in `--events-jsonl` (never what was
//! answered); the REPL asks on its terminal, the form's defaults shown and each answer checked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod repl_support;
mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use repl_support::{PROMPT, Terminal};
use run_support::{Sandbox, events, path_str, stderr, tool_contents};
use serde_json::{Value, json};

/// The global config: the scripted model and the fixture with its `elicit` tool, spoken to in
/// MCP 2025-11-25 (the revision that declares form and URL elicitation), plus `extra`.
fn configure(sandbox: &Sandbox, base_url: &str, extra: Value) {
    let mut fixture = sandbox.fixture_server();
    let args = ["--mode", "elicitation", "--protocol-version", "2025-11-25"];
    fixture["args"].as_array_mut().unwrap().extend(args.map(Value::from));
    fixture["protocol_version"] = json!("2025-11-25");
    let mut config = json!({"base_url": base_url, "model": "test-model", "mcp_servers": {"fixture": fixture}});
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    sandbox.global_config(&config);
}

/// `odek run` where the model calls `fixture__elicit` with `arguments` once, then answers.
fn run_eliciting(extra: Value, arguments: Value) -> (Vec<Value>, String, String) {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("call_e", "fixture__elicit", &arguments.to_string())]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server.base_url(), extra);
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox.odek(&["run", "--events-jsonl", path_str(&sink), "ask me"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    let seen = tool_contents(&requests[1]).join("\n");
    (events(&sink), seen, stderr(&output))
}

fn elicitation_events(events: &[Value]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter(|event| event["type"].as_str().unwrap().starts_with("elicitation_"))
        .map(|event| (event["type"].as_str().unwrap().to_owned(), event["data"].clone()))
        .collect()
}

#[test]
fn a_headless_run_declines_by_default_and_says_so() {
    let (events, seen, stderr) = run_eliciting(json!({}), json!({}));
    assert!(seen.contains(r#"elicitation result: {"action":"decline"}"#), "{seen}");
    let started = events.iter().find(|event| event["type"] == "mcp_server_started").unwrap();
    assert_eq!(started["data"]["protocol_version"], "2025-11-25");
    assert_eq!(
        elicitation_events(&events),
        [(
            "elicitation_declined".to_owned(),
            json!({"server": "fixture", "mode": "form", "action": "decline", "reason": "policy"})
        )]
    );
    assert!(
        stderr.contains("odek: MCP server \"fixture\" asked for input (form); answered decline (policy)"),
        "{stderr}"
    );
}

#[test]
fn accept_defaults_answers_the_schema_s_defaults_and_never_puts_them_in_the_events() {
    let (events, seen, _) = run_eliciting(json!({"elicitation": "accept_defaults"}), json!({}));
    assert!(
        seen.contains(r#"elicitation result: {"action":"accept","content":{"age":36,"colour":"green","name":"Ada"}}"#),
        "{seen}"
    );
    let elicitation = elicitation_events(&events);
    assert_eq!(
        elicitation,
        [("elicitation_answered".to_owned(), json!({"server": "fixture", "mode": "form", "action": "accept"}))]
    );
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains("Ada") && !all.contains("green"), "the answer never reaches the events: {all}");
}

#[test]
fn a_url_is_declined_headless_even_with_accept_defaults() {
    let url = json!({"url": "https://example.com/connect", "message": "Connect"});
    let (events, seen, _) = run_eliciting(json!({"elicitation": "accept_defaults"}), url);
    assert!(seen.contains(r#"elicitation result: {"action":"decline"}"#), "{seen}");
    assert_eq!(elicitation_events(&events)[0].1["mode"], "url");
}

#[test]
fn a_ten_thousand_field_schema_is_refused_red() {
    let (events, seen, stderr) = run_eliciting(json!({"elicitation": "accept_defaults"}), json!({"fields": 10000}));
    assert!(seen.contains("MCP error -32602: requestedSchema has more than 100 properties"), "{seen}");
    assert_eq!(
        elicitation_events(&events),
        [(
            "elicitation_declined".to_owned(),
            json!({"server": "fixture", "mode": "form", "reason": "invalid_request"})
        )]
    );
    assert!(stderr.contains("elicitation refused: requestedSchema has more than 100 properties"), "{stderr}");
}

#[test]
fn an_unknown_policy_word_is_a_config_error() {
    let sandbox = Sandbox::new();
    configure(&sandbox, "http://127.0.0.1:9", json!({"elicitation": "yes"}));
    let output = sandbox.odek(&["run", "x"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("elicitation must be \"decline\", \"cancel\" or \"accept_defaults\", got \"yes\""),
        "{}",
        stderr(&output)
    );
}

/// `odek repl` on a real terminal, the model calling `fixture__elicit` with `arguments` once,
/// then answering `answer`; returned once the question is on the screen.
fn repl_asked(arguments: &str, answer: &str) -> (ScriptedServer, Sandbox, Terminal) {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("call_e", "fixture__elicit", arguments)]),
        Reply::text(answer),
    ]);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server.base_url(), json!({}));
    let mut terminal = Terminal::spawn(sandbox.command(&["repl"]));
    terminal.expect(PROMPT);
    terminal.line("ask me");
    terminal.expect("[y] fill in  [n] decline  [c] cancel: ");
    (server, sandbox, terminal)
}

/// After the turn: the prompt is back, Ctrl-D leaves with 0, and the server got `result`.
fn finish_repl(server: &ScriptedServer, mut terminal: Terminal, answer: &str, result: &str) {
    terminal.expect(answer);
    terminal.expect(PROMPT);
    terminal.send(b"\x04");
    let (status, screen) = terminal.finish();
    assert_eq!(status.code(), Some(0), "{screen}");
    let seen = tool_contents(&server.requests()[1]).join("\n");
    assert!(seen.contains(&format!("elicitation result: {result}")), "{seen}");
}

/// The REPL on a real terminal: the form with its defaults, a wrong answer asked again, Enter
/// keeping a default; the server gets what was typed.
#[test]
fn the_repl_asks_the_form_field_by_field_and_sends_the_answer() {
    let (server, _sandbox, mut terminal) = repl_asked(r#"{"message":"Tell me about you"}"#, "thanks");
    let screen = terminal.screen();
    assert!(screen.contains("MCP server \"fixture\" asks for input (3 field(s)"), "{screen}");
    assert!(screen.contains("Tell me about you"), "{screen}");
    terminal.send(b"y");
    terminal.expect("Age * (a whole number) [36]: ");
    terminal.line("two hundred");
    terminal.expect("✗ not a whole number");
    terminal.expect("Age * (a whole number) [36]: ");
    terminal.line("200");
    terminal.expect("✗ at most 150");
    terminal.line("41");
    terminal.expect("1. red  2. green  3. blue");
    terminal.expect("Colour [green]: ");
    terminal.line("3");
    terminal.expect("Name [Ada]: ");
    terminal.line("");
    finish_repl(
        &server,
        terminal,
        "thanks",
        r#"{"action":"accept","content":{"age":41,"colour":"blue","name":"Ada"}}"#,
    );
}

#[test]
fn the_repl_declines_when_the_person_says_no() {
    let (server, _sandbox, mut terminal) = repl_asked("{}", "ok then");
    terminal.send(b"n");
    finish_repl(&server, terminal, "ok then", r#"{"action":"decline"}"#);
}
