//! Interop of `odek mcp` with the official MCP SDK clients, pinned and installed by
//! `.ci/install-interop`: the Python SDK's `ClientSession` and the TypeScript SDK's `Client`, each
//! over stdio, list the tools, call `read_file` and call `run_task` (a replayed run) with a
//! progress callback. Without the install each test prints a skip notice and passes, except
//! under `CI=true`, where it fails (the rule of `interop.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared with interop.rs, which uses the rest of it.
#[allow(dead_code)]
#[path = "interop/support.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Project, Servers, client_report, workspace_root};

/// A project with `notes.txt` and a replay script answering the goal "count the apples".
fn project() -> (Project, PathBuf) {
    let project = Project::new();
    std::fs::write(project.cwd.join("notes.txt"), "three apples\n").unwrap();
    let script = project.home.join("serve.replay.json");
    let replay = json!({"schema": "odek.replay/v1", "turns": [], "subagents": [{"goal": "count the apples", "turns": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"content": "There are three apples."}
    ]}]});
    std::fs::write(&script, replay.to_string()).unwrap();
    (project, script)
}

fn assert_report(report: &Value) {
    assert_eq!(report["tools"], json!(["read_file", "write_file", "patch", "search_files", "shell", "run_task"]));
    assert_eq!(report["read_file"], json!({"isError": false, "text": "     1\tthree apples"}));
    assert_eq!(report["run_task"]["isError"], false, "{report}");
    let envelope = &report["run_task"]["envelope"];
    assert_eq!(envelope["schema"], "odek.tool-result/v1");
    assert!(envelope["text"].as_str().unwrap().ends_with("\n\nThere are three apples."), "{envelope}");
    let messages: Vec<&str> =
        report["progress"].as_array().unwrap().iter().filter_map(|update| update["message"].as_str()).collect();
    assert!(messages.iter().any(|text| text.starts_with("iteration 1 of at most ")), "{messages:?}");
}

fn odek_args(script: &Path) -> Vec<String> {
    let odek = env!("CARGO_BIN_EXE_odek").to_owned();
    vec![odek, "--provider".into(), "replay".into(), "--replay".into(), script.display().to_string()]
}

#[test]
fn python_sdk_client_lists_and_calls_odek_mcp() {
    let Some(servers) = Servers::installed("python_sdk_client_lists_and_calls_odek_mcp") else { return };
    let (project, script) = project();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python_client.py");
    let mut args = vec![client.display().to_string()];
    args.extend(odek_args(&script));
    let report = client_report(&project, &servers.python(), &args, Duration::from_secs(60));
    // The pinned SDK asks for its newest revision, which odek mcp speaks and so answers.
    assert_eq!(report["protocol"], "2025-11-25");
    assert_eq!(report["server"], "odek");
    assert_report(&report);
}

#[test]
fn typescript_sdk_client_lists_and_calls_odek_mcp() {
    let Some(_servers) = Servers::installed("typescript_sdk_client_lists_and_calls_odek_mcp") else { return };
    let sdk = workspace_root().join(".ci/cache/interop/npm/node_modules/@modelcontextprotocol/sdk");
    assert!(sdk.join("package.json").is_file(), "the pinned TypeScript SDK is missing: run .ci/install-interop");
    let (project, script) = project();
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/ts_client.mjs");
    let mut args = vec![client.display().to_string(), sdk.display().to_string()];
    args.extend(odek_args(&script));
    let report = client_report(&project, Path::new("node"), &args, Duration::from_secs(60));
    assert_eq!(report["server"], "odek");
    assert_report(&report);
}
