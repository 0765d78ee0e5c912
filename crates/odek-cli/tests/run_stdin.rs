//! stdin and the task (issue 17 item 1): stdin is read only when the task is `-`, capped at
//! 10 MiB and UTF-8; a run left with an open, unused stdin never waits on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::Duration;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;

const LIMIT: usize = 10 * 1024 * 1024;

/// Runs odek with `input` written to its stdin, which is then closed.
fn odek_with_stdin(sandbox: &Sandbox, args: &[&str], input: Vec<u8>) -> Output {
    let mut command = sandbox.command(args);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // odek may stop reading at the cap and exit: a broken pipe here is part of the test.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

#[test]
fn a_task_of_dash_is_read_from_stdin() {
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let task = "summarise\nthe piped\ntask ✓\n";
    let output = odek_with_stdin(&sandbox, &["run", "-"], task.as_bytes().to_vec());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "done\n");
    let requests = server.requests();
    let sent = messages(&requests[0]);
    let user = sent.iter().find(|message| message["role"] == "user").unwrap();
    assert_eq!(user["content"], task, "{sent:?}");
}

#[test]
fn a_task_over_ten_mebibytes_on_stdin_is_refused_before_any_model_call_red() {
    let server = ScriptedServer::start(vec![Reply::text("never")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = odek_with_stdin(&sandbox, &["run", "-"], vec![b'a'; LIMIT + 1]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("odek: task from stdin: more than 10485760 bytes (the limit); nothing was sent"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_task_of_exactly_ten_mebibytes_on_stdin_is_taken() {
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = odek_with_stdin(&sandbox, &["run", "--max-input-tokens", "100000000", "-"], vec![b'a'; LIMIT]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_task_on_stdin_that_is_not_utf8_is_refused_red() {
    let server = ScriptedServer::start(vec![Reply::text("never")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = odek_with_stdin(&sandbox, &["run", "-"], b"fine so far \xff\xfe".to_vec());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("odek: task from stdin: not valid UTF-8 (at byte 12); nothing was sent"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty());
}

#[test]
fn a_run_with_stdin_left_open_and_unused_does_not_wait_on_it_red() {
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let mut command = sandbox.command(&["run", "go"]);
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    // Held open, never written and never closed while odek runs.
    let held_open = child.stdin.take().unwrap();
    let output = wait_within(child, Duration::from_secs(30));
    drop(held_open);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "done\n");
}

#[test]
fn an_empty_stdin_for_dash_is_no_task() {
    let server = ScriptedServer::start(vec![Reply::text("never")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = odek_with_stdin(&sandbox, &["run", "-"], b"  \n".to_vec());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("a task is required"), "{}", stderr(&output));
    assert!(server.requests().is_empty());
}
