//! End-to-end tests of `odek ext list` and `odek ext call`: the real binary, a temporary home and
//! project directory, and the real fixture server process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use run_support::{framed, mask_nonces};
use serde_json::{Value, json};

/// A temporary `$HOME` and working directory.
struct Sandbox {
    _root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    artifacts: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let project = root.path().join("project");
        // Inside the workspace: a project's servers run in the sandbox (issue 20), which lets
        // them write only there.
        let artifacts = project.join("artifacts");
        for dir in [&home, &project, &artifacts] {
            std::fs::create_dir(dir).unwrap();
        }
        Sandbox { _root: root, home, project, artifacts }
    }

    fn fixture(&self, extra: Value) -> Value {
        let mut server = json!({
            "command": odek_test_support::fixture_server(),
            "args": ["--artifact-dir", self.artifacts],
            "artifact_roots": [self.artifacts],
        });
        if let (Some(server), Some(extra)) = (server.as_object_mut(), extra.as_object()) {
            server.extend(extra.clone());
        }
        server
    }

    fn project_config(&self, config: &Value) {
        std::fs::write(self.project.join("odek.json"), config.to_string()).unwrap();
    }

    fn global_config(&self, config: &Value) {
        let dir = self.home.join(".odek");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        std::fs::write(&path, config.to_string()).unwrap();
        set_mode(&path, 0o600);
    }

    fn odek(&self, args: &[&str], approve: bool, stdin: Option<&str>) -> Output {
        let mut command = Command::new(odek_test_support::odek_binary());
        command
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if approve {
            command.env("ODEK_APPROVE_MCP", "1");
        }
        let mut child = command.spawn().unwrap();
        if let Some(input) = stdin {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn version_help_and_unknown_command() {
    let sandbox = Sandbox::new();
    let out = sandbox.odek(&["--version"], false, None);
    assert_eq!((text(&out.stdout), out.status.code()), (format!("odek {}\n", env!("CARGO_PKG_VERSION")), Some(0)));
    let out = sandbox.odek(&["--help"], false, None);
    assert!(text(&out.stdout).contains("Usage: odek"));
    let out = sandbox.odek(&["frobnicate"], false, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).starts_with("odek: unknown command \"frobnicate\"\n"), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Usage: odek"));
    let out = sandbox.odek(&["ext", "list", "--nope"], false, None);
    assert_eq!((text(&out.stderr), out.status.code()), ("odek: unknown flag \"--nope\"\n".to_owned(), Some(1)));
}

#[test]
fn list_without_servers() {
    let sandbox = Sandbox::new();
    let out = sandbox.odek(&["ext", "list"], false, None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        "no MCP servers configured (add mcp_servers to ~/.odek/config.json or ./odek.json, or mcpServers to ./.mcp.json)\n"
    );
}

#[test]
fn project_server_needs_approval_red() {
    let sandbox = Sandbox::new();
    sandbox.project_config(&json!({"mcp_servers": {"fx": sandbox.fixture(json!({}))}}));
    let out = sandbox.odek(&["ext", "call", "fx__echo", r#"{"text":"hi"}"#], false, None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let expected = format!(
        "odek: project-level MCP server \"fx\" ({} \"--artifact-dir {}\") requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all project MCP servers, or run interactively\n",
        odek_test_support::fixture_server().display(),
        sandbox.artifacts.display()
    );
    assert_eq!(stderr, expected);
    assert!(out.stdout.is_empty(), "nothing was spawned or printed");
}

#[test]
fn list_reports_each_server_as_json() {
    let sandbox = Sandbox::new();
    sandbox.project_config(&json!({"mcp_servers": {
        "fx": sandbox.fixture(json!({"timeout_seconds": 5000, "max_result_chars": 10})),
        "off": sandbox.fixture(json!({"enabled": false})),
        "bad name": sandbox.fixture(json!({})),
    }}));
    let out = sandbox.odek(&["ext", "list", "--json"], true, None);
    assert_eq!(out.status.code(), Some(1), "one server fails");
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = listing["servers"].as_array().unwrap();
    let by_name = |name: &str| servers.iter().find(|s| s["name"] == name).unwrap().clone();

    let fx = by_name("fx");
    assert_eq!(fx["status"], "ok");
    assert_eq!(fx["origin"], "project");
    assert_eq!(fx["protocol_version"], "2025-03-26");
    assert_eq!(fx["tools"][0], "fx__echo");
    assert_eq!(fx["tool_count"], fx["tools"].as_array().unwrap().len());
    assert_eq!(fx["limits"], json!({"timeout_seconds": 3600, "max_response_bytes": 10485760, "max_result_chars": 327}));
    assert_eq!(
        fx["warnings"],
        json!([
            "mcp server \"fx\": timeout_seconds 5000 exceeds the hard cap; clamped to 3600",
            "mcp server \"fx\": max_result_chars 10 is below the minimum of 327 (the truncation notice plus 64 chars); raised to 327"
        ])
    );
    assert_eq!(by_name("off")["status"], "disabled");
    let bad = by_name("bad name");
    assert_eq!(bad["status"], "failed");
    assert_eq!(
        bad["error"],
        "mcp server \"bad name\": server name \"bad name\" contains invalid character ' ' at position 3"
    );
    assert!(text(&out.stderr).contains(
        "odek: mcp server \"bad name\": server name \"bad name\" contains invalid character ' ' at position 3\n"
    ));
}

#[test]
fn limit_errors_fail_the_server_before_it_starts() {
    let sandbox = Sandbox::new();
    sandbox.project_config(&json!({"mcp_servers": {
        "big": sandbox.fixture(json!({"max_response_bytes": 67108865})),
        "neg": sandbox.fixture(json!({"timeout_seconds": -1})),
        "none": {"args": ["x"]},
    }}));
    let out = sandbox.odek(&["ext", "list"], true, None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    for expected in [
        "odek: mcp server \"big\": mcpclient big: max_response_bytes 67108865 exceeds the absolute ceiling of 67108864 bytes\n",
        "odek: mcp server \"neg\": mcpclient neg: timeout_seconds must be >= 0, got -1\n",
        "odek: mcp server \"none\": mcpclient none: server config must set either url or command\n",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in {stderr}");
    }
}

#[test]
fn call_prints_the_contract_text() {
    let sandbox = Sandbox::new();
    sandbox.project_config(&json!({"mcp_servers": {"fx": sandbox.fixture(json!({"max_result_chars": 1000}))}}));
    let out = sandbox.odek(&["ext", "call", "fx__echo", r#"{"text":"hello extension"}"#], true, None);
    assert_eq!((text(&out.stdout), out.status.code()), ("hello extension\n".to_owned(), Some(0)));
    assert!(text(&out.stderr).contains("odek: connected MCP server \"fx\" ("));

    let out = sandbox.odek(&["ext", "call", "fx__large_result", r#"{"chars":5000}"#], true, None);
    let notice = "\n[odek: result truncated — server \"fx\" tool \"large_result\" produced 5000 chars, exceeding the configured max_result_chars=1000; the full result is available via the retained artifact references, if any]\n";
    let stdout = text(&out.stdout);
    assert!(stdout.ends_with(notice), "{stdout}");
    assert_eq!(stdout.chars().count(), 1001, "exactly the cap plus the printed line feed");

    let out = sandbox.odek(&["ext", "call", "fx__artifact_result", r#"{"summary":"report"}"#], true, None);
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .starts_with("artifact_result wrote 1 artifact(s)\n- artifact \"report-1\" (text/plain, 18 bytes, sha256 ")
    );
    assert!(stdout.ends_with("…): report\n"), "{stdout}");

    let out = sandbox.odek(&["ext", "call", "fx__error_result"], true, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).ends_with("odek: mcpclient fx: tool error_result returned error: the tool failed\n"));

    let out = sandbox.odek(&["ext", "call", "fx__missing"], true, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).ends_with("odek: tool \"fx__missing\" not found\n"));
}

/// Item 7: a call that reports progress shows it on stderr while it runs, one line of its
/// server per notification, cleaned like its other lines; stdout still carries the result
/// alone. Before, `ext call` showed nothing until the answer.
#[test]
fn call_shows_the_progress_of_a_running_call_red() {
    let sandbox = Sandbox::new();
    sandbox.project_config(&json!({"mcp_servers": {"fx": sandbox.fixture(json!({}))}}));
    let out = sandbox.odek(&["ext", "call", "fx__slow", r#"{"ms":400,"progress_every_ms":50}"#], true, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "slept 400 ms\n");
    let stderr = text(&out.stderr);
    let progress: Vec<&str> = stderr.lines().filter(|line| line.starts_with("[fx] progress ")).collect();
    assert!(!progress.is_empty(), "{stderr}");
    for line in progress {
        let reported = line.strip_prefix("[fx] progress ").unwrap().strip_suffix("/400: sleeping").unwrap();
        assert!(reported.parse::<u64>().is_ok_and(|ms| ms < 400), "{line}");
    }
}

#[test]
fn jsonl_scripts_timeouts_and_crashes_against_one_process() {
    let sandbox = Sandbox::new();
    sandbox.project_config(&json!({"mcp_servers": {"fx": sandbox.fixture(json!({"timeout_seconds": 1}))}}));
    let script = [
        json!({"tool": "fx__pid"}),
        json!({"tool": "fx__slow", "arguments": {"ms": 3000}}),
        json!({"tool": "fx__pid"}),
        json!({"tool": "fx__exit_mid_call"}),
        json!({"tool": "fx__pid"}),
        json!({"tool": "fx__echo", "arguments": "not json"}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>()
        + "garbage\n";
    let out = sandbox.odek(&["ext", "call", "--jsonl"], true, Some(&script));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let records: Vec<Value> = text(&out.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(records.len(), 7);
    let first_pid = records[0]["text"].clone();
    assert_eq!(records[1]["ok"], false);
    assert_eq!(
        records[1]["error"],
        "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: context deadline exceeded (timeout_seconds: 1)"
    );
    assert_eq!(records[2]["text"], first_pid, "the timed-out process is reused");
    assert_eq!(
        records[3]["error"],
        "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: connection closed before response received"
    );
    assert_ne!(records[4]["text"], first_pid, "the crashed process was restarted");
    assert_eq!(records[4]["ok"], true);
    assert_eq!(records[5]["ok"], false, "a non-JSON argument string is sent as a JSON string");
    assert_eq!(records[6]["tool"], Value::Null);
    assert!(records[6]["error"].as_str().unwrap().starts_with("invalid request line: "));
    for record in &records {
        assert!(record["duration_ms"].is_u64());
    }
    assert!(text(&out.stderr).contains("odek: restarted MCP server \"fx\" after exit status 3 (restart 1 of 3)"));
}

#[test]
fn claude_style_config_and_global_auto_approve() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcpServers": {"fx": sandbox.fixture(json!({"auto_approve": true}))}}));
    let out = sandbox.odek(&["ext", "call", "fx__echo", r#"{"text":"trusted"}"#], false, None);
    assert_eq!((text(&out.stdout), out.status.code()), ("trusted\n".to_owned(), Some(0)), "{}", text(&out.stderr));
}

#[test]
fn global_server_tools_still_need_approval_red() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcp_servers": {"fx": sandbox.fixture(json!({}))}}));
    let out = sandbox.odek(&["ext", "call", "fx__echo", r#"{"text":"x"}"#], false, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).ends_with(
            "odek: MCP tool \"echo\" from server \"fx\" requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all tools from all project MCP servers, or run interactively\n"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn unapproved_project_server_is_never_spawned_red() {
    let sandbox = Sandbox::new();
    let marker = sandbox.project.join("spawned");
    sandbox.project_config(&json!({"mcp_servers": {"sneaky": {
        "command": "/bin/sh",
        "args": ["-c", format!("touch '{}'", marker.display())],
    }}}));
    for args in [&["ext", "list"][..], &["ext", "call", "sneaky__x"]] {
        let out = sandbox.odek(args, false, None);
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stderr).contains("requires explicit approval"), "{}", text(&out.stderr));
        assert!(!marker.exists(), "{args:?} spawned an unapproved project server");
    }
}

#[test]
fn call_model_view_prints_the_tool_message_the_model_receives() {
    let sandbox = Sandbox::new();
    sandbox.project_config(&json!({"mcp_servers": {"fx": sandbox.fixture(json!({}))}}));
    // Without the flag: the contract's text, now with the image's metadata line.
    let out = sandbox.odek(&["ext", "call", "fx__multi_item", r#"{"items":["a"]}"#], true, None);
    assert_eq!((text(&out.stdout), out.status.code()), ("a\n- image (image/png, 70 bytes)\n".to_owned(), Some(0)));

    let out = sandbox.odek(&["ext", "call", "--model-view", "fx__multi_item", r#"{"items":["a"]}"#], true, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let wrapped =
        "<untrusted_content_N source=\"mcp:fx:multi_item\">\na\n- image (image/png, 70 bytes)\n</untrusted_content_N>";
    assert_eq!(mask_nonces(&text(&out.stdout)), framed("fx__multi_item", wrapped));

    // An error is the model's `error: ` message, on stdout, exit 1, nothing more on stderr.
    let out = sandbox.odek(&["ext", "call", "--model-view", "fx__error_result"], true, None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        mask_nonces(&text(&out.stdout)),
        framed("fx__error_result", "error: mcpclient fx: tool error_result returned error: the tool failed")
    );
    assert!(!text(&out.stderr).contains("returned error"), "{}", text(&out.stderr));
    let out = sandbox.odek(&["ext", "call", "--model-view", "fx__missing"], true, None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(mask_nonces(&text(&out.stdout)), framed("fx__missing", "error: tool \"fx__missing\" not found"));

    let script = [
        json!({"tool": "fx__structured_result"}),
        json!({"tool": "fx__structured_result", "arguments": {"value": {"temperature": "hot"}}}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>();
    let out = sandbox.odek(&["ext", "call", "--jsonl", "--model-view"], true, Some(&script));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let records: Vec<Value> = text(&out.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let line = r#"- structured content {"conditions":"Sunny","temperature":22.5}"#;
    assert_eq!(records[0]["text"], line);
    let wrapped = format!("<untrusted_content_N source=\"mcp:fx:structured_result\">\n{line}\n</untrusted_content_N>");
    assert_eq!(
        format!("{}\n", mask_nonces(records[0]["model_view"].as_str().unwrap())),
        framed("fx__structured_result", &wrapped)
    );
    let error = r#"mcpclient fx: tool structured_result: structuredContent does not match the tool's outputSchema at "/temperature": "hot" is not of type "number""#;
    assert_eq!(records[1]["error"], error);
    assert_eq!(
        format!("{}\n", mask_nonces(records[1]["model_view"].as_str().unwrap())),
        framed("fx__structured_result", &format!("error: {error}"))
    );
    let out = sandbox.odek(&["ext", "call", "--jsonl"], true, Some(&script));
    let first: Value = serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    assert!(first.get("model_view").is_none(), "only with --model-view: {first}");
}
