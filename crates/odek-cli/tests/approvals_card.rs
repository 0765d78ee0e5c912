//! The per-server tool approval card ([beyond] spec `config.md` §13.2) through a real
//! pseudo-terminal: the real `odek` binary, the real fixture server, keys typed one at a time.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod approvals_support;

use std::process::{Command, Stdio};

use approvals_support::pty::PtyOdek;
use approvals_support::{Fixture, persisted_keys};
use serde_json::{Value, json};

/// The five tools `odek-fixture-server --conformant` lists, in list order.
const CONFORMANT_TOOLS: [&str; 5] = ["echo", "large_result", "artifact_result", "slow", "error_result"];

/// A global config with the fixture server under `fixture`: global, so no server approval, and
/// without `auto_approve`, so every tool needs approval.
fn configure(fixture: &Fixture, extra_args: &[&str]) {
    let mut args = vec![json!("--conformant")];
    args.extend(extra_args.iter().map(|arg| json!(arg)));
    let config = json!({"mcp_servers": {"fixture": {
        "command": odek_test_support::fixture_server(),
        "args": Value::Array(args),
    }}});
    let path = fixture.home.join(".odek/config.json");
    fixture.write(&path, &config.to_string());
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}

fn echo_hi(fixture: &Fixture) -> PtyOdek {
    PtyOdek::spawn(&["ext", "call", "fixture__echo", r#"{"text":"hi"}"#], &fixture.home, &fixture.cwd, &[])
}

fn question(position: usize) -> String {
    format!("Tool {position} of 5 \"{}\"? [y/n/a/N] ", CONFORMANT_TOOLS[position - 1])
}

/// `odek ext call` without a terminal: stdin is /dev/null.
fn call_without_terminal(fixture: &Fixture, tool: &str) -> std::process::Output {
    Command::new(odek_test_support::odek_binary())
        .args(["ext", "call", tool, r#"{"text":"again"}"#])
        .current_dir(&fixture.cwd)
        .env_clear()
        .env("HOME", &fixture.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn one_key_approves_every_tool_the_server_lists() {
    let fixture = Fixture::new();
    configure(&fixture, &[]);
    let mut odek = echo_hi(&fixture);
    odek.wait_for(&question(1));
    odek.press(b"a");
    let run = odek.finish();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let card = run.stdout.split(&question(1)).next().unwrap();
    assert!(card.starts_with("\nMCP server \"fixture\" wants to register 5 tools:\n  1. \"echo\"\n"), "{card:?}");
    for (index, tool) in CONFORMANT_TOOLS.iter().enumerate() {
        assert!(card.contains(&format!("\n  {}. \"{tool}\"\n     description: ", index + 1)), "{card}");
    }
    assert!(card.contains("     schema: sha256:"), "{card}");
    assert!(card.ends_with(
        "[y] approve  [n] decline  [a] approve this and every tool after it  [N] decline this and every tool after it\n"
    ));
    assert!(run.stdout.ends_with(&format!("{}a\nhi\n", question(1))), "{:?}", run.stdout);
    assert_eq!(persisted_keys(&fixture.tool_approvals_path()).len(), 5, "one key per tool");

    // Each tool is approved by its own key: another tool runs without a terminal now.
    let again = call_without_terminal(&fixture, "fixture__echo");
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(String::from_utf8_lossy(&again.stdout), "again\n");
}

#[test]
fn tools_can_be_answered_one_by_one() {
    let fixture = Fixture::new();
    configure(&fixture, &[]);
    let mut odek = echo_hi(&fixture);
    odek.wait_for(&question(1));
    odek.press(b"y");
    odek.wait_for(&question(2));
    odek.press(b"n");
    odek.wait_for(&question(3));
    odek.press(b"\r");
    odek.wait_for(&question(4));
    odek.press(b"N");
    let run = odek.finish();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(!run.stdout.contains(&question(5)), "N declines the rest without asking: {}", run.stdout);
    assert!(run.stdout.ends_with(&format!("{}N\nhi\n", question(4))), "{:?}", run.stdout);
    assert_eq!(persisted_keys(&fixture.tool_approvals_path()).len(), 1, "only echo was approved");

    // Declines are not remembered: without a terminal, the first unapproved tool is required.
    let again = call_without_terminal(&fixture, "fixture__echo");
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        "odek: MCP tool \"large_result\" from server \"fixture\" requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all tools from all project MCP servers, or run interactively\n"
    );
}

#[test]
fn escape_declines_the_whole_card() {
    let fixture = Fixture::new();
    configure(&fixture, &[]);
    let mut odek = echo_hi(&fixture);
    odek.wait_for(&question(1));
    odek.press(b"\x1b");
    let run = odek.finish();
    assert_eq!(run.status.code(), Some(1));
    assert!(run.stdout.ends_with(&format!("{}-\n", question(1))), "{:?}", run.stdout);
    assert!(run.stderr.ends_with("odek: tool \"fixture__echo\" not found\n"), "{}", run.stderr);
    assert!(!fixture.tool_approvals_path().exists());
}

#[test]
fn a_single_pending_tool_gets_the_spec_prompt_and_one_key() {
    let fixture = Fixture::new();
    configure(
        &fixture,
        &["--hide", "large_result", "--hide", "artifact_result", "--hide", "slow", "--hide", "error_result"],
    );
    let mut odek = echo_hi(&fixture);
    odek.wait_for("Approve? [y/N] ");
    odek.press(b"y");
    let run = odek.finish();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let prompt = run.stdout.split("Approve? [y/N] ").next().unwrap();
    assert!(
        prompt.starts_with("\nMCP server \"fixture\" wants to register tool \"echo\"\n  description: "),
        "{prompt:?}"
    );
    assert!(run.stdout.ends_with("Approve? [y/N] y\nhi\n"), "{:?}", run.stdout);
    assert_eq!(persisted_keys(&fixture.tool_approvals_path()).len(), 1);
}

#[test]
fn keys_typed_before_the_card_are_not_an_answer_red() {
    let fixture = Fixture::new();
    configure(&fixture, &[]);
    let mut odek = echo_hi(&fixture);
    // Typed while odek is still starting the server: must not approve anything.
    odek.press(b"a");
    odek.wait_for(&question(1));
    odek.press(b"N");
    let run = odek.finish();
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    assert!(run.stdout.ends_with(&format!("{}N\n", question(1))), "{:?}", run.stdout);
    assert!(!fixture.tool_approvals_path().exists(), "the early key approved tools");
}
