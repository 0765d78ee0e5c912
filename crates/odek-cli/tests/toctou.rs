//! Check-then-use races through the real binary (issue 7): paths that were checked and then
//! swapped for symlinks before their use are never followed. The unit-level races (the sink's
//! check-then-open, `artifact_read` on a registry) are in odek-agent's tests; these swap the
//! files of a live `odek run` between its steps.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use odek_test_support::openai::{Gate, RecordedRequest, Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

const PRECIOUS: &str = "precious bytes, not an event stream\n";

fn precious_file(dir: &Path) -> PathBuf {
    let path = dir.join("precious.txt");
    std::fs::write(&path, PRECIOUS).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

/// The sink was opened (and checked) at startup; mid-run the path becomes a symlink. Events go
/// on into the file that was opened; the link and its target are never touched.
#[test]
fn events_sink_swapped_for_a_symlink_mid_run_red() {
    let hold = Gate::new();
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#)]).after_release(&hold),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let sink = sandbox.project.join("events.jsonl");
    let precious = precious_file(&sandbox.project);
    let child = sandbox.spawn(&["run", "--events-jsonl", path_str(&sink), "go"]);
    server.wait_for_requests(1, std::time::Duration::from_secs(30));
    let moved = sandbox.project.join("events.moved");
    std::fs::rename(&sink, &moved).unwrap();
    symlink(&precious, &sink).unwrap();
    hold.release();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    assert_eq!(std::fs::read_to_string(&precious).unwrap(), PRECIOUS);
    assert_eq!(std::fs::metadata(&precious).unwrap().permissions().mode() & 0o777, 0o644);
    assert!(std::fs::symlink_metadata(&sink).unwrap().file_type().is_symlink());
    let events: Vec<Value> =
        std::fs::read_to_string(&moved).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(events.first().unwrap()["type"], "run_started");
    assert_eq!(events.last().unwrap()["type"], "run_completed", "the stream went on in the opened file");
}

/// The task's staging folder named in its goal note (`.odek-artifacts/task-<16 hex>`).
fn staging_dir_of(request: &RecordedRequest) -> String {
    let user = messages(request)[1]["content"].as_str().unwrap().to_owned();
    let start = user.find(".odek-artifacts/task-").unwrap();
    user[start..start + ".odek-artifacts/task-".len() + 16].to_owned()
}

/// Every file named `name` under `dir`, recursively.
fn find_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            found.extend(find_files(&path, name));
        } else if entry.file_name() == name {
            found.push(path);
        }
    }
    found
}

/// A child's report is verified and registered; before the parent's `artifact_read`, the
/// registered file is swapped for a symlink to another file. The read refuses; the other
/// file's bytes never reach the model.
#[test]
fn registered_artifact_swapped_for_a_symlink_before_artifact_read_red() {
    let home = Arc::new(Mutex::new(PathBuf::new()));
    let child = |request: &RecordedRequest| {
        if messages(request).iter().any(|message| message["role"] == "tool") {
            return Reply::text("Report written to report.md. Status: done.");
        }
        let staging = staging_dir_of(request);
        let arguments = json!({"path": format!("{staging}/report.md"), "content": "# Report\nthe real one\n"});
        Reply::tool_calls(vec![("w1", "write_file", arguments.to_string().as_str())])
    };
    let swap_then_read = {
        let home = Arc::clone(&home);
        move |_: &RecordedRequest| {
            let home = home.lock().unwrap().clone();
            let registered = find_files(&home.join(".odek/artifacts"), "report.md");
            assert_eq!(registered.len(), 1, "{registered:?}");
            let foreign = home.join("foreign.md");
            std::fs::write(&foreign, "FOREIGN-SECRET-BYTES\n").unwrap();
            std::fs::remove_file(&registered[0]).unwrap();
            symlink(&foreign, &registered[0]).unwrap();
            Reply::tool_calls(vec![("r1", "artifact_read", r#"{"id":"report"}"#)])
        }
    };
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![(
            "d1",
            "delegate_tasks",
            json!({"tasks": [{"goal": "write the report", "trust_level": "trusted"}]}).to_string().as_str(),
        )]),
        Reply::responding(child),
        Reply::responding(child),
        Reply::responding(swap_then_read),
        Reply::text("read attempted"),
    ]);
    let sandbox = Sandbox::new();
    *home.lock().unwrap() = sandbox.home.clone();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--quiet", "write", "a", "report"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "read attempted\n");

    let requests = server.requests();
    let results = tool_contents(requests.last().unwrap());
    assert!(results[0].contains("  - report (text/markdown, "), "registered: {}", results[0]);
    let read = &results[1];
    assert!(
        read.contains(
            "artifact \\\"report\\\" failed read-time verification: artifact path is a symlink; file was likely swapped after registration"
        ) || read.contains(
            "artifact \"report\" failed read-time verification: artifact path is a symlink; file was likely swapped after registration"
        ),
        "{read}"
    );
    for request in &requests {
        assert!(!request.raw_body.contains("FOREIGN-SECRET-BYTES"), "the link was followed");
    }
}
