//! Sessions through the binary: `odek run --session`, `odek continue`, the on-disk files, and a
//! run killed between steps that `continue` resumes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use odek_test_support::openai::{Gate, Reply, ScriptedServer};
use run_support::*;
use serde_json::Value;

fn load(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_session_run_is_saved_and_continue_resumes_it() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#)]).with_usage(10, 1),
        Reply::text("first answer").with_usage(20, 2),
        Reply::text("second answer").with_usage(30, 3),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let output = sandbox.odek(&["run", "--session", "read", "a.txt"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let files = sandbox.session_files();
    assert_eq!(files.len(), 1);
    assert_eq!(std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(sandbox.sessions_dir()).unwrap().permissions().mode() & 0o777, 0o700);
    let session = load(&files[0]);
    let id = session["id"].as_str().unwrap().to_owned();
    assert_eq!(files[0].file_name().unwrap().to_str().unwrap(), format!("{id}.json"));
    assert_eq!(session["task"], "read a.txt");
    assert_eq!(session["model"], "test-model");
    assert_eq!(session["messages"].as_array().unwrap().last().unwrap()["content"], "first answer");

    let output = sandbox.odek(&["continue", "and", "then?"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "second answer\n");
    let third = messages(&server.requests()[2]);
    assert!(third.iter().any(|m| m["content"] == "first answer"));
    assert_eq!(third.last().unwrap()["content"], "and then?");
    let session = load(&files[0]);
    assert_eq!(session["turns"], 2);
    assert_eq!(session["messages"].as_array().unwrap().last().unwrap()["content"], "second answer");

    let output = sandbox.odek(&["continue", "--id", &id, "once more"]);
    assert_eq!(output.status.code(), Some(1), "the script is exhausted");
}

#[test]
fn continue_needs_a_session_and_a_task() {
    let sandbox = Sandbox::new();
    let output = sandbox.odek(&["continue", "go"]);
    assert_eq!((output.status.code(), stderr(&output).as_str()), (Some(1), "odek continue: no session to continue\n"));
    let output = sandbox.odek(&["continue", "--id", "../etc", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("session: invalid session ID \"../etc\""), "{}", stderr(&output));
}

#[test]
fn a_run_killed_between_steps_resumes_from_the_last_completed_step() {
    let hold = Gate::new();
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#)]),
        Reply::text("never delivered").after_release(&hold),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    let mut child = sandbox.spawn(&["run", "--session", "read", "a.txt"]);
    server.wait_for_requests(2, Duration::from_secs(30));
    // The second request is only sent after the first step was saved.
    child.kill().unwrap();
    child.wait().unwrap();
    hold.release();
    let files = sandbox.session_files();
    assert_eq!(files.len(), 1);
    let leftovers: Vec<_> = std::fs::read_dir(sandbox.sessions_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| !name.ends_with(".json"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    let session = load(&files[0]);
    let roles: Vec<_> = session["messages"].as_array().unwrap().iter().map(|m| m["role"].clone()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);

    server.push(Reply::text("resumed"));
    let output = sandbox.odek(&["continue", "finish", "it"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "resumed\n");
}

#[test]
fn secrets_in_tool_output_never_reach_the_session_file_red() {
    let secret = format!("ghp_{}", "Z".repeat(36));
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"creds.txt"}"#)]),
        Reply::text("done"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("creds.txt", &format!("token: {secret}\n"));
    let output = sandbox.odek(&["run", "--session", "read", "creds.txt"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let raw = std::fs::read_to_string(&sandbox.session_files()[0]).unwrap();
    assert!(!raw.contains(&secret));
    assert!(raw.contains("[REDACTED]"));
    // Nor the model's view of it.
    assert!(!tool_contents(&server.requests()[1])[0].contains(&secret));
    assert_no_key(&[&raw]);
}

#[test]
fn external_refs_without_a_session_warn() {
    let server = ScriptedServer::start(vec![Reply::text("ok")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--external-ref", "issue=https://example.com/1", "go"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("odek: warning: --external-ref is only persisted with --session; ignoring"));
}

#[test]
fn external_refs_are_stored_with_the_session() {
    let server = ScriptedServer::start(vec![Reply::text("ok")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--session", "--external-ref", "issue=https://example.com/1?a=b,c", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let session = load(&sandbox.session_files()[0]);
    let refs = session["external_refs"].as_array().unwrap();
    assert_eq!(refs[0]["kind"], "issue");
    assert_eq!(refs[0]["uri"], "https://example.com/1?a=b,c");
    assert_eq!(refs[0]["created_by"], "cli");
    let output = sandbox.odek(&["run", "--session", "--external-ref", "BAD=x", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("invalid --external-ref \"BAD=x\": "), "{}", stderr(&output));
}

#[test]
fn a_corrupt_or_huge_session_file_is_a_clear_error() {
    let server = ScriptedServer::start(vec![Reply::text("first")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--session", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let file = sandbox.session_files().remove(0);
    let id = file.file_stem().unwrap().to_str().unwrap().to_owned();

    std::fs::write(&file, b"{\"id\": \"truncated").unwrap();
    let output = sandbox.odek(&["continue", "--id", &id, "more"]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.starts_with(&format!("odek: session: load \"{id}\": corrupt session file")), "{err}");

    let huge = std::fs::File::create(&file).unwrap();
    huge.set_len(33_554_433).unwrap();
    let output = sandbox.odek(&["continue", "--id", &id, "more"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!("odek: session: load \"{id}\": file too large (33554433 bytes, max 33554432)\n")
    );
    assert_eq!(server.requests().len(), 1, "no model call for a session that cannot load");
}

/// Two processes appending to one session: the second refuses at once (before any model call)
/// instead of one turn silently overwriting the other; the lock goes with its holder, even a
/// killed one.
#[test]
fn a_second_writer_of_a_session_is_refused_red() {
    let hold = Gate::new();
    let server =
        ScriptedServer::start(vec![Reply::text("first answer"), Reply::text("second answer").after_release(&hold)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--session", "first"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let file = sandbox.session_files().remove(0);
    let id = load(&file)["id"].as_str().unwrap().to_owned();

    let mut holder = sandbox.spawn(&["continue", "--id", &id, "second"]);
    server.wait_for_requests(2, Duration::from_secs(30));
    let in_use = format!(
        "odek: session: \"{id}\" is in use by another odek process (pid {}); wait for it to finish, or continue another session\n",
        holder.id()
    );
    for args in [vec!["continue", "--id", &id, "third"], vec!["continue", "third"], vec!["session", "delete", &id]] {
        let output = sandbox.odek(&args);
        assert_eq!((output.status.code(), stderr(&output)), (Some(1), in_use.clone()), "{args:?}");
    }
    assert_eq!(server.requests().len(), 2, "a refused writer never reaches the model");

    hold.release();
    assert!(holder.wait().unwrap().success());
    let session = load(&file);
    assert_eq!(session["turns"], 2);
    assert_eq!(session["messages"].as_array().unwrap().last().unwrap()["content"], "second answer");

    // A holder killed mid-turn leaves no stale lock behind.
    let hold = Gate::new();
    server.push(Reply::text("never delivered").after_release(&hold));
    let mut killed = sandbox.spawn(&["continue", "--id", &id, "third"]);
    server.wait_for_requests(3, Duration::from_secs(30));
    killed.kill().unwrap();
    killed.wait().unwrap();
    hold.release();
    server.push(Reply::text("fourth answer"));
    let output = sandbox.odek(&["continue", "--id", &id, "fourth"]);
    assert_eq!((output.status.code(), stdout(&output)), (Some(0), "fourth answer\n".to_owned()), "{}", stderr(&output));
    assert_eq!(load(&file)["turns"], 3);
}
