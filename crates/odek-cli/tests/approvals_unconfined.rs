//! \[beyond\] Issue 32: the server approval's choice to run a project server unconfined. With the
//! sandbox in force, a confined project server's card offers `u`; the answer is persisted as a
//! key of its own (a changed entry asks again). Without a terminal it comes from that persisted
//! answer or from the operator's own global entry for exactly that server — never from the
//! project file. Library tests with a scripted console, then the real binary: through a
//! pseudo-terminal, and with a server that reports whether it could write outside the workspace.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod approvals_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use approvals_support::pty::PtyOdek;
use approvals_support::{Fixture, ScriptedConsole, persisted_keys, project_server, stdio_entry};
use odek::approvals::{
    ApprovalError, Console, McpApprovals, server_approval_key, server_approval_prompt, unconfined_server_approval_key,
};
use odek::config::McpServerConfig;
use odek_mcp::server_config::ServerEntry;
use serde_json::{Value, json};

/// A project stdio server as the loader settles it: confined.
fn confined(name: &str, command: &str, args: &[&str]) -> McpServerConfig {
    project_server(name, ServerEntry { sandbox: Some(true), ..stdio_entry(command, args) })
}

fn fs_server() -> McpServerConfig {
    confined("fs", "fs-mcp", &["--root", "/srv"])
}

/// The approvals of `fixture` with the sandbox in force.
fn in_force(fixture: &Fixture, console: Arc<dyn Console>) -> McpApprovals {
    fixture.approvals(console).with_sandbox_in_force(true)
}

#[test]
fn a_confined_server_s_card_offers_to_run_it_unconfined() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::interactive(&[Some("y\n")]);
    let unconfined = in_force(&fixture, console.clone()).approve_project_servers(&[fs_server()]).unwrap();
    assert!(unconfined.is_empty());
    assert_eq!(
        console.prompts(),
        vec![
            "\nProject-level MCP server \"fs\" wants to run:\n  command: fs-mcp\n  args:    --root /srv\n  environment: (none)\n  sandbox: confined to the workspace\n  u: approve it to run unconfined instead, with all your files and the network\nApprove? [y/N/u] "
        ]
    );
    assert_eq!(
        persisted_keys(&fixture.server_approvals_path()),
        vec![server_approval_key(&fixture.cwd, "fs", &fs_server().entry)]
    );
}

#[test]
fn a_package_runner_s_card_names_its_cache_and_registry() {
    let fixture = Fixture::new();
    let npx = confined("everything", "npx", &["-y", "@modelcontextprotocol/server-everything"]);
    let console = ScriptedConsole::interactive(&[Some("n\n")]);
    let error = in_force(&fixture, console.clone()).approve_project_servers(&[npx]).unwrap_err();
    assert!(matches!(error, ApprovalError::ServerNotApproved { .. }), "{error}");
    assert_eq!(
        console.prompts(),
        vec![
            "\nProject-level MCP server \"everything\" wants to run:\n  command: npx\n  args:    -y @modelcontextprotocol/server-everything\n  environment: (none)\n  sandbox: confined to the workspace; as a package runner (npx) also its own cache and registry.npmjs.org:443\n  u: approve it to run unconfined instead, with all your files and the network\nApprove? [y/N/u] "
        ]
    );
}

#[test]
fn u_approves_the_server_to_run_unconfined_and_is_remembered() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::interactive(&[Some(" U\n")]);
    let unconfined = in_force(&fixture, console).approve_project_servers(&[fs_server()]).unwrap();
    assert_eq!(unconfined, vec!["fs"]);
    assert_eq!(
        persisted_keys(&fixture.server_approvals_path()),
        vec![unconfined_server_approval_key(&fixture.cwd, "fs", &fs_server().entry)]
    );
    // Asked no more, with or without a terminal, and with ODEK_APPROVE_MCP=1.
    let quiet = ScriptedConsole::non_interactive();
    assert_eq!(in_force(&fixture, quiet.clone()).approve_project_servers(&[fs_server()]).unwrap(), vec!["fs"]);
    assert!(quiet.prompts().is_empty() && quiet.warnings().is_empty());
    let approve_all = fixture.approvals_with_env("ODEK_APPROVE_MCP", "1", quiet).with_sandbox_in_force(true);
    assert_eq!(approve_all.approve_project_servers(&[fs_server()]).unwrap(), vec!["fs"]);
    // ODEK_APPROVE_MCP=1 alone approves confined.
    let other = confined("other", "fs-mcp", &[]);
    assert!(approve_all.approve_project_servers(&[other]).unwrap().is_empty());
}

#[test]
fn a_changed_entry_asks_again_before_running_unconfined_red() {
    let fixture = Fixture::new();
    in_force(&fixture, ScriptedConsole::interactive(&[Some("u\n")])).approve_project_servers(&[fs_server()]).unwrap();
    let changed = confined("fs", "fs-mcp", &["--root", "/"]);
    let error = in_force(&fixture, ScriptedConsole::non_interactive())
        .approve_project_servers(std::slice::from_ref(&changed))
        .unwrap_err();
    assert!(matches!(error, ApprovalError::ServerApprovalRequired { .. }), "{error}");
    let console = ScriptedConsole::interactive(&[Some("y\n")]);
    let unconfined = in_force(&fixture, console.clone()).approve_project_servers(&[changed]).unwrap();
    assert!(unconfined.is_empty(), "the changed entry runs confined now");
    assert_eq!(console.prompts().len(), 1);
}

#[test]
fn u_is_no_answer_where_the_card_does_not_offer_it_red() {
    let fixture = Fixture::new();
    // The sandbox is off: the spec's card, and `u` declines.
    let console = ScriptedConsole::interactive(&[Some("u\n")]);
    let error = fixture.approvals(console.clone()).approve_project_servers(&[fs_server()]).unwrap_err();
    assert!(matches!(error, ApprovalError::ServerNotApproved { .. }), "{error}");
    assert_eq!(console.prompts(), vec![server_approval_prompt(&fs_server(), &[])]);
    assert!(!fixture.server_approvals_path().exists());
}

#[test]
fn a_server_the_operator_runs_unconfined_says_so_on_its_card() {
    let fixture = Fixture::new();
    let server = project_server("fs", ServerEntry { sandbox: Some(false), ..stdio_entry("fs-mcp", &[]) });
    let console = ScriptedConsole::interactive(&[Some("y\n")]);
    in_force(&fixture, console.clone()).approve_project_servers(&[server]).unwrap();
    assert_eq!(
        console.prompts(),
        vec![
            "\nProject-level MCP server \"fs\" wants to run:\n  command: fs-mcp\n  environment: (none)\n  sandbox: none (your ~/.odek/config.json runs it unconfined)\nApprove? [y/N] "
        ]
    );
}

/// A server that first tries to write `outside` (a directory beside the project, outside the
/// workspace) and says in `./report` whether it could, then runs the fixture server.
fn reporting_server(outside: &Path) -> Value {
    let script = format!(
        "{{ echo escaped > '{}' && echo wrote-outside; }} >> report 2>&1; exec '{}' --conformant",
        outside.display(),
        odek_test_support::fixture_server().display()
    );
    json!({"command": "/bin/sh", "args": ["-c", script]})
}

/// A global config making the fixture readable (the prelude `exec`s it) with `servers`.
fn global_config(fixture: &Fixture, servers: Value) {
    let fixture_dir = odek_test_support::fixture_server().parent().unwrap().to_path_buf();
    let config = json!({"mcp_servers": servers, "sandbox": {"readable": [fixture_dir]}});
    let path = fixture.home.join(".odek/config.json");
    fixture.write(&path, &config.to_string());
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}

fn project_config(fixture: &Fixture, entry: &Value) {
    fixture.write(&fixture.cwd.join("odek.json"), &json!({"mcp_servers": {"fx": entry}}).to_string());
}

/// `odek ext call fx__echo` without a terminal, `env` added.
fn call_without_terminal(fixture: &Fixture, env: &[(&str, &str)]) -> Output {
    Command::new(odek_test_support::odek_binary())
        .args(["ext", "call", "fx__echo", r#"{"text":"hi"}"#])
        .current_dir(&fixture.cwd)
        .env_clear()
        .env("HOME", &fixture.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Where the reporting server tries to write, and whether it did.
struct Outside(PathBuf);

impl Outside {
    fn new(fixture: &Fixture) -> Outside {
        let dir = fixture.cwd.parent().unwrap().join("outside");
        std::fs::create_dir_all(&dir).unwrap();
        Outside(dir.join("outside.txt"))
    }

    /// Whether the server wrote there since the last call.
    fn written(&self) -> bool {
        std::fs::remove_file(&self.0).is_ok()
    }
}

#[test]
fn the_unconfined_choice_never_comes_from_a_project_file_red() {
    let fixture = Fixture::new();
    let outside = Outside::new(&fixture);
    let mut entry = reporting_server(&outside.0);
    entry["sandbox"] = json!(false);
    project_config(&fixture, &entry);
    // The operator's entry of that name says unconfined, but for another command line.
    let mut other = reporting_server(&outside.0);
    other["args"][1] = json!("exit 1");
    other["sandbox"] = json!(false);
    global_config(&fixture, json!({"fx": other}));
    let output = call_without_terminal(&fixture, &[("ODEK_APPROVE_MCP", "1")]);
    let text = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("odek: warning: project config: mcp server \"fx\": sandbox false ignored"), "{text}");
    assert!(!outside.written(), "a project file ran its server unconfined: {text}");

    // The operator's entry for exactly that server: unconfined, and said so.
    global_config(&fixture, json!({"fx": entry}));
    let output = call_without_terminal(&fixture, &[("ODEK_APPROVE_MCP", "1")]);
    let text = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains(
            "odek: warning: mcp server \"fx\": runs unconfined (its entry in ~/.odek/config.json says \"sandbox\": false)\n"
        ),
        "{text}"
    );
    assert!(outside.written());
}

#[test]
fn u_at_the_terminal_runs_the_server_unconfined_until_its_entry_changes_red() {
    let fixture = Fixture::new();
    let outside = Outside::new(&fixture);
    global_config(&fixture, json!({}));
    let entry = reporting_server(&outside.0);
    project_config(&fixture, &entry);

    let mut odek = PtyOdek::spawn(&["ext", "call", "fx__echo", r#"{"text":"hi"}"#], &fixture.home, &fixture.cwd, &[]);
    odek.wait_for("  u: approve it to run unconfined instead, with all your files and the network\nApprove? [y/N/u] ");
    odek.press(b"u\n");
    odek.wait_for("? [y/n/a/N] ");
    odek.press(b"a");
    let run = odek.finish();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("odek: warning: mcp server \"fx\": runs unconfined (approved to run outside the sandbox)\n"),
        "{}",
        run.stderr
    );
    assert!(outside.written(), "{}", run.stderr);

    // Remembered without a terminal.
    let output = call_without_terminal(&fixture, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(outside.written());

    // A changed entry is asked about again: without a terminal, refused.
    let mut changed = entry;
    changed["env"] = json!({"CHANGED": "1"});
    project_config(&fixture, &changed);
    let output = call_without_terminal(&fixture, &[]);
    let text = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("project-level MCP server \"fx\" (/bin/sh "), "{text}");
    assert!(text.contains("requires explicit approval"), "{text}");
    assert!(!outside.written());
}
