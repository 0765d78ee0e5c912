//! Secret leaks (issue 7, `loop-and-sessions.md` §9, `events.md` §9, `mcp-client.md` §5): one
//! run of the real binary with secrets planted in the environment, `secrets.env`, the config,
//! the task, an external-ref URL, tool outputs (built-in and MCP), MCP errors and log messages,
//! URLs in tool arguments, and the model's answer and reasoning. None of them — nor the known
//! encodings of the registered ones — may reach the events file, the session files, the MCP
//! server's environment, odek's stderr or its stdout (nor the model, through a tool result).
//! Regressions found here: sensitive env values were never registered for redaction, and
//! tool-call arguments were saved unredacted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

/// In odek's environment under a sensitive name: a registered secret by value.
const ENV_TOKEN: &str = "envtok-4c1b9e77d02a5f3318e6";
/// In `~/.odek/secrets.env`: registered by value too.
const SECRETS_ENV_VALUE: &str = "vendor-9d8c7b6a5f4e3d2c1b0a";
/// In the MCP server's `env` overrides under a secret-looking key: dropped, never forwarded.
const CONFIG_ENV_SECRET: &str = "cfgsecret-77aa88bb99cc00dd";
/// Shapes the patterns catch wherever they turn up.
const GITHUB_TOKEN: &str = "ghp_Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0Ed9Cb8";
const DB_PASSWORD: &str = "hunter2-correct-horse";
const AWS_KEY: &str = "AKIAQWERTYUIOPASDFGH";

fn db_url() -> String {
    format!("postgres://admin:{DB_PASSWORD}@db.internal:5432/prod")
}

/// Every secret, with the encodings of the registered ones that redaction also covers.
fn planted() -> Vec<String> {
    let mut secrets: Vec<String> =
        [API_KEY, ENV_TOKEN, SECRETS_ENV_VALUE, CONFIG_ENV_SECRET, GITHUB_TOKEN, DB_PASSWORD, AWS_KEY]
            .map(str::to_owned)
            .to_vec();
    for registered in [API_KEY, ENV_TOKEN, SECRETS_ENV_VALUE] {
        secrets.push(odek_test_support::base64(registered.as_bytes()));
        secrets.push(registered.bytes().map(|byte| format!("{byte:02x}")).collect());
        secrets.push(registered.chars().rev().collect());
    }
    secrets
}

fn assert_clean(place: &str, text: &str) {
    for secret in planted() {
        assert!(!text.contains(&secret), "{secret:?} leaked into {place}:\n{text}");
    }
}

#[test]
fn planted_secrets_reach_no_output_red() {
    let answer = format!("Deployed. Token {ENV_TOKEN}, key {GITHUB_TOKEN}, db {}", db_url());
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![
            ("c1", "fixture__env", "{}".to_owned()),
            ("c2", "read_file", r#"{"path":"creds.txt"}"#.to_owned()),
            ("c3", "fixture__echo", json!({"text": format!("connect to {} with {ENV_TOKEN}", db_url())}).to_string()),
            ("c4", "fixture__error_result", json!({"message": format!("denied for {SECRETS_ENV_VALUE}")}).to_string()),
            ("c5", "fixture__rpc_error", json!({"message": format!("rpc failed: {GITHUB_TOKEN}")}).to_string()),
            ("c6", "fixture__log_message", json!({"data": format!("server log {ENV_TOKEN} {AWS_KEY}")}).to_string()),
        ]),
        Reply::text(answer).with_reasoning(format!("the vendor secret is {SECRETS_ENV_VALUE}")),
    ]);
    let sandbox = Sandbox::new();
    let mut fixture = sandbox.fixture_server();
    fixture["env"] = json!({"UPSTREAM_API_TOKEN": CONFIG_ENV_SECRET, "FIXTURE_LABEL": "plain"});
    sandbox.global_config(
        &json!({"base_url": server.base_url(), "model": "test-model", "mcp_servers": {"fixture": fixture}}),
    );
    let secrets_env = sandbox.home.join(".odek/secrets.env");
    std::fs::write(&secrets_env, format!("VENDOR_SECRET={SECRETS_ENV_VALUE}\n")).unwrap();
    std::fs::set_permissions(&secrets_env, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let token_b64 = odek_test_support::base64(ENV_TOKEN.as_bytes());
    sandbox.write(
        "creds.txt",
        &format!("token={ENV_TOKEN}\nencoded {token_b64}\n{GITHUB_TOKEN}\naws {AWS_KEY}\nvendor {SECRETS_ENV_VALUE}\n"),
    );
    let events = sandbox.project.join("events.jsonl");
    let external_ref = format!("issue=https://tracker.example/42?access_token={ENV_TOKEN}");
    let task = format!("deploy using {} and {GITHUB_TOKEN}", db_url());
    let output = sandbox
        .command(&[
            "run",
            "--session",
            "--events-jsonl",
            path_str(&events),
            "--events-include-args",
            "--external-ref",
            &external_ref,
            &task,
        ])
        .env("MY_SERVICE_TOKEN", ENV_TOKEN)
        .output()
        .unwrap();
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{err}");

    // The run did see every planted secret: each place redacted it.
    assert!(out.starts_with("Deployed. Token [REDACTED], key [REDACTED], db "), "{out}");
    assert_clean("stdout", &out);
    assert!(err.contains("[fixture] info: server log [REDACTED] [REDACTED]"), "{err}");
    assert!(
        err.contains("mcp server \"fixture\": env override UPSTREAM_API_TOKEN looks like a secret and was dropped"),
        "{err}"
    );
    assert_clean("stderr", &err);

    let events_text = std::fs::read_to_string(&events).unwrap();
    assert!(events_text.contains("[REDACTED]"), "the opt-in arguments were redacted: {events_text}");
    assert_clean("the events file", &events_text);

    let files: Vec<_> = std::fs::read_dir(sandbox.sessions_dir()).unwrap().map(|entry| entry.unwrap().path()).collect();
    assert_eq!(files.len(), 2, "the session and the index: {files:?}");
    for file in &files {
        assert_clean(&file.display().to_string(), &std::fs::read_to_string(file).unwrap());
    }

    let requests = server.requests();
    let results = tool_contents(&requests[1]);
    let env = &results[0];
    // The server's environment is built from the allowlist and the non-secret overrides only.
    let names: Vec<&str> = env
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .filter(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .collect();
    assert_eq!(names, ["FIXTURE_LABEL", "HOME", "PATH"], "{env}");
    assert!(!env.contains("[REDACTED]"), "a secret reached the server's environment: {env}");
    // The task and the model's own calls go back to the model as written; what tools and
    // servers returned is redacted before the model sees it.
    for (index, result) in results.iter().enumerate() {
        assert_clean(&format!("tool result {} as the model saw it", index + 1), result);
    }
}

/// Regression: a value that only lives in odek's environment, under a sensitive name, was not
/// registered, so the model (or a tool, or a provider error) repeating it printed it verbatim.
#[test]
fn sensitive_env_values_are_redacted_red() {
    let server = ScriptedServer::start(vec![Reply::text(format!("the token is {ENV_TOKEN}"))]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.command(&["run", "go"]).env("MY_SERVICE_TOKEN", ENV_TOKEN).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "the token is [REDACTED]\n");
}

/// A config value filled by `${VAR}` with a secret, rejected by the run and quoted back in the
/// final error line (an invalid `thinking` level, an unknown `provider`), or by the config's type
/// check (found by the `config_load` fuzz target).
#[test]
fn substituted_secrets_in_fatal_errors_red() {
    for (config, want) in [
        (json!({"thinking": "${MY_SERVICE_TOKEN}"}), "odek: invalid thinking level \"[REDACTED]\""),
        (json!({"provider": "${MY_SERVICE_TOKEN}"}), "odek: unknown provider \"[REDACTED]\""),
        (
            json!({"tools": "${MY_SERVICE_TOKEN}"}),
            "tools: invalid type: string \"${MY_SERVICE_TOKEN}\", expected a map",
        ),
    ] {
        let sandbox = Sandbox::new();
        sandbox.global_config(&config);
        let output = sandbox.command(&["run", "go"]).env("MY_SERVICE_TOKEN", ENV_TOKEN).output().unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{err}");
        assert!(err.contains(want), "{config}: {err}");
        assert_clean("stderr", &err);
    }
}

/// The provider's key and other secrets in the provider's own error text and in a base URL.
#[test]
fn secrets_in_provider_errors_and_urls_red() {
    let server = ScriptedServer::start(vec![Reply::status(
        400,
        json!({"error": {"message": format!("bad request from key {API_KEY}, token {ENV_TOKEN}")}}).to_string(),
    )]);
    let sandbox = Sandbox::new();
    let base_url = format!("{}?api_key={ENV_TOKEN}", server.base_url());
    sandbox.global_config(&json!({"base_url": base_url, "model": "test-model"}));
    let events = sandbox.project.join("events.jsonl");
    let output = sandbox
        .command(&["run", "--events-jsonl", path_str(&events), "go"])
        .env("MY_SERVICE_TOKEN", ENV_TOKEN)
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.starts_with("odek: iteration 1: "), "{err}");
    assert_clean("stderr", &err);
    assert_clean("stdout", &stdout(&output));
    assert_clean("the events file", &std::fs::read_to_string(&events).unwrap());
    let run_failed: Value =
        serde_json::from_str(std::fs::read_to_string(&events).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(run_failed["data"]["error_class"], "provider_request");
}

/// A model can name a tool like a secret. The name used to be printed in the stderr call
/// records, stored in the session and the `--record` script, and quoted back in the
/// `tool "<name>" not found` result.
#[test]
fn a_secret_as_a_tool_name_reaches_no_output_red() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", API_KEY, "{}"), ("c2", SECRETS_ENV_VALUE, "{}")]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let secrets_env = sandbox.home.join(".odek/secrets.env");
    std::fs::write(&secrets_env, format!("VENDOR_SECRET={SECRETS_ENV_VALUE}\n")).unwrap();
    std::fs::set_permissions(&secrets_env, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let events = sandbox.project.join("events.jsonl");
    let record = sandbox.project.join("record.json");
    let output = sandbox.odek(&[
        "run",
        "--session",
        "--events-jsonl",
        path_str(&events),
        "--record",
        path_str(&record),
        "call",
        "them",
    ]);
    let (out, err) = (stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(out, "done\n");
    assert!(err.contains("[REDACTED]"), "the call records show the redacted name: {err}");
    for (place, text) in [
        ("stdout", out),
        ("stderr", err),
        ("the events file", std::fs::read_to_string(&events).unwrap()),
        ("the record file", std::fs::read_to_string(&record).unwrap()),
    ] {
        assert!(
            !text.contains(API_KEY) && !text.contains(SECRETS_ENV_VALUE),
            "a tool name leaked into {place}:\n{text}"
        );
    }
    for file in std::fs::read_dir(sandbox.sessions_dir()).unwrap().map(|entry| entry.unwrap().path()) {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains(API_KEY) && !text.contains(SECRETS_ENV_VALUE), "{}:\n{text}", file.display());
    }
    let results = tool_contents(&server.requests()[1]);
    assert!(results.iter().all(|result| result.contains("error: tool \"[REDACTED]\" not found")), "{results:?}");
    assert!(results.iter().all(|result| !result.contains(API_KEY) && !result.contains(SECRETS_ENV_VALUE)));
}
