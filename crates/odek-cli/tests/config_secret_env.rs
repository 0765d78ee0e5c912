//! [beyond] `mcp_servers.<name>.secret_env`: variables the operator hands a stdio server on
//! purpose (its API key), past the secret-looking filter of the environment allowlist. Allowed in
//! `~/.odek/config.json` only; values from odek's environment or `~/.odek/secrets.env` (or
//! literals); every value a known secret. Loading rules through `load_config`, then end to end:
//! the real `odek` binary, the fixture server's `env` tool and server-everything's `get-env`
//! showing what the server received, and the scripted model server showing what the model got.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod config_support;
mod run_support;

#[path = "interop/support.rs"]
#[allow(dead_code)]
mod interop_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::{Sandbox, path_str, stderr, stdout, tool_contents};
use serde_json::{Value, json};

/// Long enough to be registered for redaction (8 runes or more).
const ENV_TOKEN: &str = "tok-from-env-5c1f0e9d8b7a6";
const LITERAL_TOKEN: &str = "tok-literal-in-config-3e2d1c0b";
const FILE_TOKEN: &str = "tok-from-secrets-env-9a8b7c6d";

#[test]
fn secret_env_in_a_project_file_is_refused_red() {
    let fixture = config_support::Fixture::new().env("GITHUB_TOKEN", ENV_TOKEN).project(
        r#"{"mcp_servers": {"gh": {"command": "gh-mcp", "secret_env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}}"#,
    );
    assert_eq!(
        fixture.error(),
        "config ./odek.json: mcp server \"gh\": secret_env is allowed only in ~/.odek/config.json"
    );
    let fixture = config_support::Fixture::new();
    std::fs::write(fixture.cwd.join(".mcp.json"), r#"{"mcpServers": {"gh": {"command": "gh-mcp", "secret_env": {}}}}"#)
        .unwrap();
    assert_eq!(
        fixture.error(),
        "config ./.mcp.json: mcp server \"gh\": secret_env is allowed only in ~/.odek/config.json"
    );
}

/// A project file could read the variable a global `secret_env` takes its value from, under a
/// name that does not look secret (`BRAVE_KEY`), into its args: shown in the approval prompt
/// and error, and passed to the server once approved.
#[test]
fn a_project_file_cannot_read_what_a_global_secret_env_reads_red() {
    let global =
        r#"{"mcp_servers": {"brave": {"command": "brave-mcp", "secret_env": {"BRAVE_API_KEY": "${BRAVE_KEY}"}}}}"#;
    let project = r#"{"mcp_servers": {"echo": {"command": "sh", "args": ["-c", "echo ${BRAVE_KEY} ${PLAIN}"]}}}"#;
    let fixture = config_support::Fixture::new()
        .env("BRAVE_KEY", ENV_TOKEN)
        .env("PLAIN", "plain-value")
        .global(global)
        .project(project);
    let loaded = fixture.load().unwrap();
    let echo = loaded.config.mcp_servers.iter().find(|server| server.name == "echo").unwrap();
    assert_eq!(echo.entry.args, ["-c", "echo  plain-value"]);
    assert_eq!(
        loaded.warnings,
        ["./odek.json: ${BRAVE_KEY} not expanded (variable a global secret_env reads, in project config)"]
    );
    std::fs::remove_file(fixture.cwd.join("odek.json")).unwrap();
    std::fs::write(fixture.cwd.join(".mcp.json"), project.replace("mcp_servers", "mcpServers")).unwrap();
    let loaded = fixture.load().unwrap();
    let echo = loaded.config.mcp_servers.iter().find(|server| server.name == "echo").unwrap();
    assert_eq!(echo.entry.args, ["-c", "echo  plain-value"], "./.mcp.json follows the same rule");

    // End to end: the approval-required error never shows the value.
    let sandbox = Sandbox::new();
    sandbox.global_config(&serde_json::from_str::<Value>(global).unwrap());
    sandbox.write("odek.json", project);
    let output = sandbox.command(&["ext", "list"]).env("BRAVE_KEY", ENV_TOKEN).output().unwrap();
    let err = stderr(&output);
    assert!(err.contains("project-level MCP server \"echo\" (sh \"-c echo  \")"), "{err}");
    for text in [stdout(&output), err] {
        assert!(!text.contains(ENV_TOKEN), "{text}");
    }
}

#[test]
fn values_come_from_the_environment_secrets_env_or_a_literal() {
    let fixture = config_support::Fixture::new()
        .env("GITHUB_TOKEN", ENV_TOKEN)
        .secrets(&format!("VENDOR_KEY={FILE_TOKEN}\n"), 0o600)
        .global(&format!(
            r#"{{"mcp_servers": {{"gh": {{"command": "gh-mcp", "secret_env": {{
                "GITHUB_TOKEN": "${{GITHUB_TOKEN}}", "VENDOR_API_KEY": "${{VENDOR_KEY}}", "LITERAL": "{LITERAL_TOKEN}"}}}}}}}}"#
        ));
    let loaded = fixture.load().unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let entry = &loaded.config.mcp_servers[0].entry;
    let values: Vec<(&str, &str)> =
        entry.secret_env.iter().map(|(name, value)| (name.as_str(), value.expose())).collect();
    assert_eq!(values, [("GITHUB_TOKEN", ENV_TOKEN), ("LITERAL", LITERAL_TOKEN), ("VENDOR_API_KEY", FILE_TOKEN)]);
    let shown = format!("{loaded:?}");
    for token in [ENV_TOKEN, LITERAL_TOKEN, FILE_TOKEN] {
        assert!(!shown.contains(token), "Debug shows a secret: {shown}");
        assert_eq!(odek_contract::redaction::redact(&format!("x {token} y")), "x [REDACTED] y", "{token}");
    }
}

#[test]
fn an_unset_variable_warns_and_the_name_is_not_passed() {
    let fixture = config_support::Fixture::new().global(
        r#"{"mcp_servers": {"gh": {"command": "gh-mcp", "secret_env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
                                   "off": {"command": "x", "enabled": false, "secret_env": {"T": ""}}}}"#,
    );
    let loaded = fixture.load().unwrap();
    assert_eq!(
        loaded.warnings,
        [format!(
            "{}: mcp server \"gh\": secret_env GITHUB_TOKEN is empty (is its variable set?); not passed to the server",
            fixture.global_display()
        )]
    );
}

#[test]
fn names_must_be_variable_names() {
    for name in ["", "1X", "A=B", "A B", "É"] {
        let text = json!({"mcp_servers": {"gh": {"command": "gh-mcp", "secret_env": {name: "v"}}}}).to_string();
        let fixture = config_support::Fixture::new().global(&text);
        assert_eq!(
            fixture.error(),
            format!(
                "config {}: mcp server \"gh\": secret_env name {} is not a valid variable name",
                fixture.global_display(),
                serde_json::to_string(name).unwrap()
            ),
            "{name:?}"
        );
    }
}

/// The fixture server with `secret_env` from odek's environment, from `secrets.env` and a
/// literal, and an `env` override whose secret-looking name is still dropped.
fn fixture_with_secrets(sandbox: &Sandbox) -> Value {
    let mut entry = sandbox.fixture_server();
    entry["secret_env"] = json!({
        "FIXTURE_API_TOKEN": "${FIXTURE_API_TOKEN}",
        "VENDOR_API_KEY": "${VENDOR_KEY}",
        "LITERAL_SECRET": LITERAL_TOKEN,
    });
    entry["env"] = json!({"OTHER_TOKEN": ENV_TOKEN});
    entry
}

fn write_secrets_env(sandbox: &Sandbox) {
    let path = sandbox.home.join(".odek/secrets.env");
    std::fs::write(&path, format!("VENDOR_KEY={FILE_TOKEN}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}

/// `odek run go` as a session with events (arguments included) and odek's variable `name` =
/// `value`, which must succeed: its output and the events file.
fn run_recorded(sandbox: &Sandbox, (name, value): (&str, &str)) -> (std::process::Output, std::path::PathBuf) {
    let sink = sandbox.project.join("events.jsonl");
    let output = sandbox
        .command(&["run", "--session", "--events-jsonl", path_str(&sink), "--events-include-args", "go"])
        .env(name, value)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    (output, sink)
}

/// The fixture's `env` answer as the model saw it (the first tool result), holding every line.
fn env_seen(requests: &[odek_test_support::openai::RecordedRequest], lines: &[&str]) -> String {
    let seen = tool_contents(&requests[1])[0].clone();
    for line in lines {
        assert!(seen.contains(line), "{line} missing from {seen}");
    }
    seen
}

#[test]
fn a_server_gets_its_secrets_and_they_appear_nowhere_else_red() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "fixture__env", "{}")]),
        Reply::text(format!("the token is {ENV_TOKEN}")),
    ]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "mcp_servers": {"fixture": fixture_with_secrets(&sandbox)},
    }));
    write_secrets_env(&sandbox);
    let (output, sink) = run_recorded(&sandbox, ("FIXTURE_API_TOKEN", ENV_TOKEN));
    let err = stderr(&output);
    // What the server received, as the model saw it: every secret there, every value redacted.
    let requests = server.requests();
    let seen = env_seen(
        &requests,
        &["FIXTURE_API_TOKEN=[REDACTED]", "VENDOR_API_KEY=[REDACTED]", "LITERAL_SECRET=[REDACTED]"],
    );
    assert!(!seen.contains("OTHER_TOKEN"), "env keeps the contract's rule: {seen}");
    assert!(err.contains(
        "odek: warning: mcp server \"fixture\": env override OTHER_TOKEN looks like a secret and was dropped; pass secrets with secret_env"
    ));

    let mut everything = vec![stdout(&output), err, std::fs::read_to_string(&sink).unwrap()];
    everything.extend(sandbox.session_files().iter().map(|path| std::fs::read_to_string(path).unwrap()));
    everything.extend(requests.iter().map(|request| request.body.to_string()));
    for text in &everything {
        for token in [ENV_TOKEN, LITERAL_TOKEN, FILE_TOKEN] {
            assert!(!text.contains(token), "{token} leaked: {text}");
        }
    }
    assert_eq!(stdout(&output), "the token is [REDACTED]\n");
}

/// Issue 32 item 4: the Claude Code way of handing a server a key — an `env` entry that is only a
/// reference to odek's variable (`"X_API_KEY": "${X_API_KEY}"`), in `~/.odek/config.json` — passes
/// that variable as `secret_env` does (before, the secret-looking name was dropped): received by
/// the server, redacted wherever odek writes, its name alone in listings. `${VAR:-default}`
/// fills in for an unset variable; a literal secret-looking value is still dropped, with a
/// warning that says how to pass one. (In `./.mcp.json` the same entry passes nothing.)
#[test]
fn an_env_entry_that_only_references_a_variable_is_passed_like_secret_env_and_redacted() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "fixture__env", "{}")]),
        Reply::text(format!("the key is {ENV_TOKEN}")),
    ]);
    let sandbox = Sandbox::new();
    let mut entry = sandbox.fixture_server();
    entry["env"] = json!({
        "X_API_KEY": "${X_API_KEY}",
        "FALLBACK_TOKEN": "${UNSET_TOKEN:-fallback-token-value-1234}",
        "LOG_LEVEL": "${ODEK_TEST_LEVEL:-debug}",
        "OTHER_TOKEN": LITERAL_TOKEN,
    });
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "test-model",
        "mcp_servers": {"fixture": entry},
    }));
    let (output, sink) = run_recorded(&sandbox, ("X_API_KEY", ENV_TOKEN));
    let err = stderr(&output);
    let requests = server.requests();
    let seen = env_seen(&requests, &["X_API_KEY=[REDACTED]", "FALLBACK_TOKEN=[REDACTED]", "LOG_LEVEL=debug"]);
    assert!(!seen.contains("OTHER_TOKEN"), "a literal secret is still dropped: {seen}");
    assert!(
        err.lines().any(|line| line
            == "odek: warning: mcp server \"fixture\": env override OTHER_TOKEN looks like a secret and was dropped; \
                pass secrets with secret_env in ~/.odek/config.json, or there as \"OTHER_TOKEN\": \"${OTHER_TOKEN}\""),
        "{err}"
    );
    let mut everything = vec![stdout(&output), err, std::fs::read_to_string(&sink).unwrap()];
    everything.extend(sandbox.session_files().iter().map(|path| std::fs::read_to_string(path).unwrap()));
    everything.extend(requests.iter().map(|request| request.body.to_string()));
    for text in &everything {
        for token in [ENV_TOKEN, LITERAL_TOKEN, "fallback-token-value-1234"] {
            assert!(!text.contains(token), "{token} leaked: {text}");
        }
    }
    assert_eq!(stdout(&output), "the key is [REDACTED]\n");

    let output = sandbox.command(&["ext", "list"]).env("X_API_KEY", ENV_TOKEN).output().unwrap();
    assert!(stdout(&output).contains("\n  secret_env: FALLBACK_TOKEN, X_API_KEY\n"), "{}", stdout(&output));

    // Unset, it is not passed, and the warning names the entry as written.
    let output = sandbox.command(&["ext", "call", "fixture__env"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stdout(&output).contains("X_API_KEY"), "{}", stdout(&output));
    assert!(
        stderr(&output).contains(&format!(
            "odek: warning: {}: mcp server \"fixture\": env X_API_KEY is empty (is its variable set?); not passed to the server\n",
            sandbox.home.join(".odek/config.json").display()
        )),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_project_entry_named_like_a_global_one_gets_none_of_its_secrets_red() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcp_servers": {"fixture": fixture_with_secrets(&sandbox)}}));
    write_secrets_env(&sandbox);
    // The same launch fields, without secret_env (a project cannot write it).
    let mut lookalike = sandbox.fixture_server();
    lookalike.as_object_mut().unwrap().remove("auto_approve");
    lookalike["env"] = json!({"OTHER_TOKEN": ENV_TOKEN});
    sandbox.write("odek.json", &json!({"mcp_servers": {"fixture": lookalike}}).to_string());

    let output =
        sandbox.command(&["ext", "call", "fixture__env"]).env("FIXTURE_API_TOKEN", ENV_TOKEN).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "the global auto_approve does not carry over");
    assert!(stderr(&output).starts_with("odek: project-level MCP server \"fixture\" ("), "{}", stderr(&output));

    let output = sandbox
        .command(&["ext", "call", "fixture__env"])
        .env("FIXTURE_API_TOKEN", ENV_TOKEN)
        .env("ODEK_APPROVE_MCP", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let env = stdout(&output);
    assert!(env.contains("\nPATH="), "{env}");
    for name in ["FIXTURE_API_TOKEN", "VENDOR_API_KEY", "LITERAL_SECRET"] {
        assert!(!env.contains(name), "the project server got {name}: {env}");
    }
}

#[test]
fn ext_list_names_the_variables_never_their_values() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcp_servers": {"fixture": fixture_with_secrets(&sandbox)}}));
    write_secrets_env(&sandbox);
    let output = sandbox.command(&["ext", "list"]).env("FIXTURE_API_TOKEN", ENV_TOKEN).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("\n  secret_env: FIXTURE_API_TOKEN, LITERAL_SECRET, VENDOR_API_KEY\n"));
    let output = sandbox.command(&["ext", "list", "--json"]).env("FIXTURE_API_TOKEN", ENV_TOKEN).output().unwrap();
    let listing: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(listing["servers"][0]["secret_env"], json!(["FIXTURE_API_TOKEN", "LITERAL_SECRET", "VENDOR_API_KEY"]));
    for text in [stdout(&output), stderr(&output)] {
        for token in [ENV_TOKEN, LITERAL_TOKEN, FILE_TOKEN] {
            assert!(!text.contains(token), "{token} shown: {text}");
        }
    }
}

#[test]
fn server_everything_receives_the_secret_env_red() {
    let Some(servers) = interop_support::Servers::installed("server_everything_receives_the_secret_env_red") else {
        return;
    };
    let model =
        ScriptedServer::start(vec![Reply::tool_calls(vec![("c1", "everything__get-env", "{}")]), Reply::text("done")]);
    let project = interop_support::Project::new();
    let mut entry = interop_support::Servers::node_entry(&servers.everything(), &[]);
    entry["auto_approve"] = json!(true);
    entry["secret_env"] = json!({"EVERYTHING_API_TOKEN": "${EVERYTHING_API_TOKEN}"});
    let config = json!({"base_url": model.base_url(), "model": "test-model", "mcp_servers": {"everything": entry}});
    let path = project.home.join(".odek/config.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, config.to_string()).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let run = project.odek_with(
        &["run", "go"],
        "",
        &[("EVERYTHING_API_TOKEN", ENV_TOKEN), ("ODEK_API_KEY", run_support::API_KEY)],
    );
    run.assert_code(0);
    let requests = model.requests();
    let seen = &tool_contents(&requests[1])[0];
    assert!(seen.contains(r#""EVERYTHING_API_TOKEN": "[REDACTED]""#), "{seen}");
    for text in [&run.stdout, &run.stderr, &requests[1].body.to_string()] {
        assert!(!text.contains(ENV_TOKEN), "{text}");
    }
}

/// `odek ext call` prints what the model would see, and the model never sees a secret a server
/// echoes back: the values are redacted in the single call, in `--jsonl` answers and in
/// `--model-view`.
#[test]
fn ext_call_never_prints_a_secret_the_server_echoes_red() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcp_servers": {"fixture": fixture_with_secrets(&sandbox)}}));
    write_secrets_env(&sandbox);
    let mut outputs = Vec::new();
    for args in [&["ext", "call", "fixture__env"][..], &["ext", "call", "--model-view", "fixture__env"]] {
        let output = sandbox.command(args).env("FIXTURE_API_TOKEN", ENV_TOKEN).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert!(stdout(&output).contains("FIXTURE_API_TOKEN=[REDACTED]"), "{}", stdout(&output));
        outputs.push(stdout(&output) + &stderr(&output));
    }
    let mut jsonl = sandbox
        .command(&["ext", "call", "--jsonl"])
        .env("FIXTURE_API_TOKEN", ENV_TOKEN)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    jsonl.stdin.take().unwrap().write_all(b"{\"tool\": \"fixture__env\"}\n").unwrap();
    let output = jsonl.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("FIXTURE_API_TOKEN=[REDACTED]"), "{}", stdout(&output));
    outputs.push(stdout(&output) + &stderr(&output));
    for text in &outputs {
        for token in [ENV_TOKEN, LITERAL_TOKEN, FILE_TOKEN] {
            assert!(!text.contains(token), "{token} printed: {text}");
        }
    }
}

/// A server that fails `initialize` with an error quoting the token it was handed.
fn echoing_failure(required: bool) -> Value {
    json!({
        "command": "sh",
        "args": ["-c", "exec \"$0\" --initialize-error-message \"bad token $GH_TOKEN\"", odek_test_support::fixture_server()],
        "secret_env": {"GH_TOKEN": "${MY_GH_TOKEN}"},
        "required": required,
    })
}

/// `ext list` printed a failing server's error as it came, on stdout (text and `--json`) and on
/// stderr, so a server echoing its `secret_env` token put the token on the operator's screen.
#[test]
fn ext_list_never_prints_a_token_a_failing_server_echoes_red() {
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"mcp_servers": {
        "echoer": echoing_failure(true),
        "optional": echoing_failure(false),
    }}));
    for json_flag in [false, true] {
        let mut args = vec!["ext", "list"];
        if json_flag {
            args.push("--json");
        }
        let output = sandbox.command(&args).env("MY_GH_TOKEN", ENV_TOKEN).output().unwrap();
        let (out, err) = (stdout(&output), stderr(&output));
        assert_eq!(output.status.code(), Some(1), "{err}");
        assert!(err.contains("bad token [REDACTED]"), "the failure is still reported: {err}");
        assert!(out.contains("bad token [REDACTED]"), "{out}");
        let warning = err.lines().find(|line| line.starts_with("odek: warning: mcp server \"optional\"")).unwrap();
        assert!(warning.ends_with("; continuing without it (required: false)"), "worded as a run: {warning}");
        for text in [&out, &err] {
            assert!(!text.contains(ENV_TOKEN), "the token was printed: {text}");
        }
    }
}
