//! Project-server approval (spec `config.md` §13.1, §13.3 files).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

mod approvals_support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use approvals_support::{Fixture, ScriptedConsole, global_server, persisted_keys, project_server, stdio_entry};
use odek::approvals::{server_approval_key, server_approval_prompt};
use odek::config::{ConfigSources, load_config};
use odek_mcp::server_config::{SecretValue, ServerEntry};

const REQUIRED_FS: &str = "project-level MCP server \"fs\" (fs-mcp \"--root /srv\") requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all project MCP servers, or run interactively";

fn fs_server() -> odek::config::McpServerConfig {
    project_server("fs", stdio_entry("fs-mcp", &["--root", "/srv"]))
}

#[test]
fn stdio_prompt_shows_every_hashed_field() {
    let entry = ServerEntry {
        env: BTreeMap::from([("B".to_owned(), "2".to_owned()), ("A".to_owned(), "1".to_owned())]),
        timeout_seconds: 60,
        max_result_chars: 5000,
        artifact_roots: vec!["/srv/out".into(), "/tmp/a".into()],
        ..stdio_entry("fs-mcp", &["--root", "/srv"])
    };
    let parent_env = ["PATH".to_owned(), "HOME".to_owned(), "GITHUB_TOKEN".to_owned(), "EDITOR".to_owned()];
    assert_eq!(
        server_approval_prompt(&project_server("fs", entry), &parent_env),
        "\nProject-level MCP server \"fs\" wants to run:\n  command: fs-mcp\n  args:    --root /srv\n  env:\n    A=1\n    B=2\n  timeout_seconds: 60\n  max_result_chars: 5000\n  artifact_roots: /srv/out, /tmp/a\n  environment: A, B, HOME, PATH\nApprove? [y/N] "
    );
}

/// \[beyond\] Issue 32: the card lists every variable the server would receive, by name — its
/// environment and the variables of odek's its `${...}` read — its `cwd`, and a remote server's
/// headers with their values as the redactor leaves them.
#[test]
fn the_prompt_lists_what_of_the_operators_the_server_receives() {
    const SECRET: &str = "hdr-secret-value-5b0c1f77";
    odek_contract::redaction::register_secret(SECRET);
    let mut server = project_server(
        "fs",
        ServerEntry { cwd: Some("/work/p/tools".into()), ..stdio_entry("fs-mcp", &["--root", "/home/u"]) },
    );
    server.variables = vec!["HOME".into(), "WORKDIR".into()];
    assert_eq!(
        server_approval_prompt(&server, &["LANG".to_owned()]),
        "\nProject-level MCP server \"fs\" wants to run:\n  command: fs-mcp\n  args:    --root /home/u\n  cwd:     /work/p/tools\n  environment: LANG\n  reads odek's variables: HOME, WORKDIR\nApprove? [y/N] "
    );
    let http = ServerEntry {
        url: Some("https://mcp.example/mcp".into()),
        headers: BTreeMap::from([
            ("X-Team".to_owned(), SecretValue::new("team-7")),
            ("X-Trace".to_owned(), SecretValue::new(format!("t-{SECRET}"))),
        ]),
        ..ServerEntry::default()
    };
    let mut web = project_server("web", http);
    web.variables = vec!["TEAM".into()];
    assert_eq!(
        server_approval_prompt(&web, &["LANG".to_owned()]),
        "\nProject-level MCP server \"web\" wants to run:\n  url: https://mcp.example/mcp\n  headers:\n    X-Team: team-7\n    X-Trace: t-[REDACTED]\n  reads odek's variables: TEAM\nApprove? [y/N] "
    );
}

#[test]
fn minimal_prompts() {
    assert_eq!(
        server_approval_prompt(&project_server("fs", stdio_entry("fs-mcp", &[])), &[]),
        "\nProject-level MCP server \"fs\" wants to run:\n  command: fs-mcp\n  environment: (none)\nApprove? [y/N] "
    );
    let http = ServerEntry {
        url: Some("https://mcp.example/mcp".into()),
        token_env: Some("MCP_TOKEN".into()),
        max_response_bytes: 1024,
        ..ServerEntry::default()
    };
    assert_eq!(
        server_approval_prompt(&project_server("web", http), &[]),
        "\nProject-level MCP server \"web\" wants to run:\n  url: https://mcp.example/mcp\n  token_env: MCP_TOKEN\n  max_response_bytes: 1024\nApprove? [y/N] "
    );
}

#[test]
fn prompt_values_cannot_repaint_the_terminal() {
    let mut entry = stdio_entry("evil\r  command: fs-mcp\u{1b}[2K", &["--root", "/\u{1b}[8m/etc\u{7}"]);
    entry.env.insert("A".into(), "1\n  timeout_seconds: 5".into());
    assert_eq!(
        server_approval_prompt(&project_server("fs", entry), &[]),
        "\nProject-level MCP server \"fs\" wants to run:\n  command: evil\u{fffd}  command: fs-mcp\n  args:    --root //etc\u{fffd}\n  env:\n    A=1\u{fffd}  timeout_seconds: 5\n  environment: A\nApprove? [y/N] "
    );
}

#[test]
fn accepted_answer_is_persisted_and_not_asked_again() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::interactive(&[Some(" Yes\n")]);
    fixture.approvals(console.clone()).approve_project_servers(&[fs_server()]).unwrap();
    assert_eq!(console.prompts(), vec![server_approval_prompt(&fs_server(), &[])]);
    assert_eq!(
        persisted_keys(&fixture.server_approvals_path()),
        vec![server_approval_key(&fixture.cwd, "fs", &fs_server().entry)]
    );

    let quiet = ScriptedConsole::non_interactive();
    fixture.approvals(quiet.clone()).approve_project_servers(&[fs_server()]).unwrap();
    assert!(quiet.prompts().is_empty());
    assert!(quiet.warnings().is_empty());
}

#[test]
fn any_other_answer_is_fatal_and_not_persisted() {
    for answer in [Some("n\n"), Some("\n"), Some("yess\n"), Some("oui\n"), None] {
        let fixture = Fixture::new();
        let console = ScriptedConsole::interactive(&[answer]);
        let err = fixture.approvals(console).approve_project_servers(&[fs_server()]).unwrap_err();
        assert_eq!(err.to_string(), "mcp approval: server \"fs\" was not approved", "{answer:?}");
        assert!(!fixture.server_approvals_path().exists());
    }
}

#[test]
fn without_a_terminal_approval_is_required() {
    let fixture = Fixture::new();
    let err =
        fixture.approvals(ScriptedConsole::non_interactive()).approve_project_servers(&[fs_server()]).unwrap_err();
    assert_eq!(err.to_string(), REQUIRED_FS);

    let bare = project_server("bare", stdio_entry("bare-mcp", &[]));
    let err = fixture.approvals(ScriptedConsole::non_interactive()).approve_project_servers(&[bare]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "project-level MCP server \"bare\" (bare-mcp \"\") requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all project MCP servers, or run interactively"
    );
}

/// A known secret in a project server's launch fields (however it got there) is shown neither
/// by the §13.1 prompt nor by the approval-required error.
#[test]
fn the_prompt_and_the_required_error_redact_known_secrets_red() {
    const SECRET: &str = "tok-approval-prompt-7d1e4a90c2";
    odek_contract::redaction::register_secret(SECRET);
    let mut entry = stdio_entry(SECRET, &["-c", &format!("echo {SECRET}")]);
    entry.env.insert("MODE".into(), SECRET.into());
    entry.artifact_roots = vec![format!("/srv/{SECRET}")];
    let server = project_server("leaky", entry);
    let prompt = server_approval_prompt(&server, &[]);
    assert!(prompt.contains("  args:    -c echo [REDACTED]\n"), "{prompt}");
    assert!(prompt.contains("    MODE=[REDACTED]\n"), "{prompt}");
    let err = Fixture::new()
        .approvals(ScriptedConsole::non_interactive())
        .approve_project_servers(std::slice::from_ref(&server))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("project-level MCP server \"leaky\" ([REDACTED] \"-c echo [REDACTED]\")"), "{err}");
    for text in [&prompt, &err] {
        assert!(!text.contains(SECRET), "{text}");
    }
}

#[test]
fn every_server_is_approved_in_order_and_the_first_refusal_stops() {
    let fixture = Fixture::new();
    let servers = [
        project_server("a", stdio_entry("a-mcp", &[])),
        project_server("b", stdio_entry("b-mcp", &[])),
        project_server("c", stdio_entry("c-mcp", &[])),
    ];
    let console = ScriptedConsole::interactive(&[Some("y"), Some("n")]);
    let err = fixture.approvals(console.clone()).approve_project_servers(&servers).unwrap_err();
    assert_eq!(err.to_string(), "mcp approval: server \"b\" was not approved");
    assert_eq!(console.prompts().len(), 2);
    assert!(console.prompts()[1].contains("\"b\""));
    assert_eq!(persisted_keys(&fixture.server_approvals_path()).len(), 1);
}

#[test]
fn global_disabled_and_auto_approved_servers_need_no_server_approval() {
    let fixture = Fixture::new();
    fixture.write(&fixture.server_approvals_path(), "corrupt");
    let mut auto = fs_server();
    auto.auto_approve_effective = true;
    let disabled = project_server("off", ServerEntry { enabled: Some(false), ..stdio_entry("x", &[]) });
    let global = global_server("g", stdio_entry("g-mcp", &[]));
    let console = ScriptedConsole::non_interactive();
    fixture.approvals(console.clone()).approve_project_servers(&[auto, disabled, global]).unwrap();
    assert!(console.prompts().is_empty());
}

#[test]
fn odek_approve_mcp_must_be_exactly_1_red() {
    let fixture = Fixture::new();
    let console = ScriptedConsole::non_interactive();
    let approvals = fixture.approvals_with_env("ODEK_APPROVE_MCP", "1", console);
    assert!(approvals.approves_all());
    approvals.approve_project_servers(&[fs_server()]).unwrap();
    assert!(!fixture.server_approvals_path().exists(), "ODEK_APPROVE_MCP approvals are never persisted");

    for value in ["true", "TRUE", "yes", "y", " 1", "1 ", "01", "1\n", "", "0", "2"] {
        let approvals = fixture.approvals_with_env("ODEK_APPROVE_MCP", value, ScriptedConsole::non_interactive());
        assert!(!approvals.approves_all(), "{value:?}");
        let err = approvals.approve_project_servers(&[fs_server()]).unwrap_err();
        assert_eq!(err.to_string(), REQUIRED_FS, "{value:?}");
    }
}

#[test]
fn unparseable_approvals_file_is_fatal() {
    for text in ["not json", "", "[]", "{\"ab\": \"yes\"}", "null"] {
        let fixture = Fixture::new();
        fixture.write(&fixture.server_approvals_path(), text);
        let err =
            fixture.approvals(ScriptedConsole::interactive(&[])).approve_project_servers(&[fs_server()]).unwrap_err();
        let parse_error = serde_json::from_str::<BTreeMap<String, bool>>(text).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("mcp approval: load approvals: parse {}: {parse_error}", fixture.server_approvals_path().display())
        );
    }
}

#[test]
fn approval_file_mode_0600_red() {
    let fixture = Fixture::new();
    fixture.approvals(ScriptedConsole::interactive(&[Some("y")])).approve_project_servers(&[fs_server()]).unwrap();
    let odek_dir = fixture.home.join(".odek");
    assert_eq!(fs::metadata(&odek_dir).unwrap().permissions().mode() & 0o777, 0o700);
    let path = fixture.server_approvals_path();
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

    // A pre-existing world-readable file is replaced by a 0600 one.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let other = project_server("other", stdio_entry("o", &[]));
    fixture.approvals(ScriptedConsole::interactive(&[Some("y")])).approve_project_servers(&[other]).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(persisted_keys(&path).len(), 2);

    // No temp file is left behind.
    let leftovers: Vec<_> = fs::read_dir(&odek_dir).unwrap().map(|entry| entry.unwrap().file_name()).collect();
    assert_eq!(leftovers, vec!["mcp_approvals.json"]);
}

#[test]
fn an_existing_odek_dir_keeps_its_mode() {
    let fixture = Fixture::new();
    fs::create_dir(fixture.home.join(".odek")).unwrap();
    fs::set_permissions(fixture.home.join(".odek"), fs::Permissions::from_mode(0o750)).unwrap();
    fixture.approvals(ScriptedConsole::interactive(&[Some("y")])).approve_project_servers(&[fs_server()]).unwrap();
    assert_eq!(fs::metadata(fixture.home.join(".odek")).unwrap().permissions().mode() & 0o777, 0o750);
}

#[test]
fn changed_command_invalidates_approval_red() {
    let fixture = Fixture::new();
    fixture.approvals(ScriptedConsole::interactive(&[Some("y")])).approve_project_servers(&[fs_server()]).unwrap();

    for changed in [
        project_server("fs", stdio_entry("evil-mcp", &["--root", "/srv"])),
        project_server("fs", stdio_entry("fs-mcp", &["--root", "/"])),
        project_server("fs", stdio_entry("fs-mcp", &["--root", "/srv", "--write"])),
        project_server("fs", ServerEntry { timeout_seconds: 3600, ..stdio_entry("fs-mcp", &["--root", "/srv"]) }),
    ] {
        let console = ScriptedConsole::non_interactive();
        let err = fixture.approvals(console).approve_project_servers(std::slice::from_ref(&changed)).unwrap_err();
        assert!(err.to_string().starts_with("project-level MCP server \"fs\" ("), "{changed:?}");
    }
    // The approval is tied to the working directory too.
    let moved = ConfigSources { cwd: fixture.cwd.join("elsewhere"), ..fixture.sources() };
    let approvals = odek::approvals::McpApprovals::new(&moved, &BTreeMap::new(), ScriptedConsole::non_interactive());
    assert!(approvals.approve_project_servers(&[fs_server()]).is_err());
}

#[test]
fn end_to_end_from_a_project_file() {
    let fixture = Fixture::new();
    fs::write(
        fixture.cwd.join("odek.json"),
        r#"{"mcp_servers": {"fs": {"command": "fs-mcp", "args": ["--root", "/srv"], "auto_approve": true}}}"#,
    )
    .unwrap();
    let loaded = load_config(&fixture.sources()).unwrap();
    let console = ScriptedConsole::non_interactive();
    let approvals = odek::approvals::McpApprovals::new(&fixture.sources(), &loaded.env, console);
    let err = approvals.approve_project_servers(&loaded.config.mcp_servers).unwrap_err();
    assert_eq!(err.to_string(), REQUIRED_FS);

    let console: Arc<ScriptedConsole> = ScriptedConsole::interactive(&[Some("y")]);
    odek::approvals::McpApprovals::new(&fixture.sources(), &loaded.env, console)
        .approve_project_servers(&loaded.config.mcp_servers)
        .unwrap();
}
