//! Interop of `odek acp` with a real third-party ACP client: the official TypeScript SDK's client
//! app (`@agentclientprotocol/sdk`, pinned and installed by `.ci/install-interop`) starts `odek
//! acp`, streams a plan and an edit with its diff, answers permission requests allow and reject,
//! cancels a command mid-run, and loads a session `odek run --session` saved. Without the
//! install the test prints a skip notice and passes, except under `CI=true` (the rule of
//! `interop.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "interop/support.rs"]
mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Project, Servers, client_report, workspace_root};

#[test]
fn typescript_sdk_client_drives_odek_acp() {
    let Some(_servers) = Servers::installed("typescript_sdk_client_drives_odek_acp") else { return };
    let sdk = workspace_root().join(".ci/cache/interop/npm/node_modules/@agentclientprotocol/sdk");
    assert!(sdk.join("package.json").is_file(), "the pinned ACP TypeScript SDK is missing: run .ci/install-interop");
    let project = Project::new();
    std::fs::write(project.cwd.join("a.txt"), "one\n").unwrap();

    let saved = project.odek(&[
        "run",
        "--session",
        "--provider",
        "replay",
        "--replay",
        &script(&project, "saved", json!([{"content": "saved answer"}])),
        "the saved task",
    ]);
    saved.assert_code(0);
    let saved_id = std::fs::read_dir(project.home.join(".odek/sessions"))
        .unwrap()
        .filter_map(|entry| entry.unwrap().file_name().into_string().ok())
        .find_map(|name| name.strip_suffix(".json").filter(|stem| stem.starts_with("20")).map(str::to_owned))
        .unwrap();

    let replay = script(
        &project,
        "acp",
        json!([
            {"tool_calls": [{"id": "p1", "name": "plan", "arguments": {"verb": "create", "steps": ["Edit a.txt"]}}]},
            {"tool_calls": [{"id": "e1", "name": "patch", "arguments": {"path": "a.txt", "old_string": "one", "new_string": "two"}}]},
            {"content": "edited"},
            {"tool_calls": [{"id": "e2", "name": "patch", "arguments": {"path": "a.txt", "old_string": "two", "new_string": "three"}}]},
            {"content": "refused"},
            {"tool_calls": [{"id": "s1", "name": "shell", "arguments": {"command": "sleep 300"}}]}
        ]),
    );
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_clients/ts_client.mjs");
    let args = [
        client.display().to_string(),
        sdk.display().to_string(),
        env!("CARGO_BIN_EXE_odek").to_owned(),
        replay,
        project.cwd.display().to_string(),
        saved_id.clone(),
    ];
    let report = client_report(&project, Path::new("node"), &args, Duration::from_secs(120));

    assert_eq!(report["init"]["agentCapabilities"]["loadSession"], true, "{report}");
    assert_eq!(report["modes"]["currentModeId"], "default");
    assert_eq!(report["stops"], json!(["end_turn", "end_turn", "cancelled"]), "{report}");
    assert_eq!(report["outcomes"], json!(["success", "success", "cancelled"]));
    let permissions = report["permissions"].as_array().unwrap();
    assert_eq!(permissions[0]["toolCallId"], "e1", "{report}");
    assert_eq!(permissions[0]["kinds"], json!(["allow_once", "allow_always", "reject_once", "reject_always"]));
    assert_eq!(permissions[1]["toolCallId"], "e2");
    assert_eq!(std::fs::read_to_string(project.cwd.join("a.txt")).unwrap(), "two\n");

    let session = report["sessionId"].as_str().unwrap();
    let updates = |id: &str, kind: &str| -> Vec<Value> {
        report["updates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|entry| entry["sessionId"] == id && entry["update"]["sessionUpdate"] == kind)
            .map(|entry| entry["update"].clone())
            .collect()
    };
    assert_eq!(updates(session, "plan")[0]["entries"][0]["content"], "Edit a.txt");
    let diffs: Vec<Value> = updates(session, "tool_call_update")
        .into_iter()
        .filter(|update| update["toolCallId"] == "e1")
        .map(|update| update["content"][0].clone())
        .collect();
    assert_eq!(diffs[0]["type"], "diff", "{diffs:?}");
    assert_eq!((diffs[0]["oldText"].as_str(), diffs[0]["newText"].as_str()), (Some("one\n"), Some("two\n")));
    let shell = updates(session, "tool_call").into_iter().find(|call| call["toolCallId"] == "s1").unwrap();
    assert_eq!(shell["kind"], "execute");
    let texts: Vec<Value> =
        updates(session, "agent_message_chunk").iter().map(|chunk| chunk["content"]["text"].clone()).collect();
    assert_eq!(texts, [json!("edited"), json!("refused")]);
    let replayed = updates(&saved_id, "agent_message_chunk");
    assert_eq!(replayed[0]["content"]["text"], "saved answer", "{report}");
}

fn script(project: &Project, name: &str, turns: Value) -> String {
    let path = project.home.join(format!("{name}.replay.json"));
    std::fs::write(&path, json!({"schema": "odek.replay/v1", "turns": turns}).to_string()).unwrap();
    path.display().to_string()
}
