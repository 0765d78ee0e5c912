//! Paths odek opens by name that are not regular files — a FIFO, a character device — through
//! the real binary: each is refused with a clear error, nothing blocks (every run has a
//! deadline), and nothing changes the mode of a file that is not ours.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;

/// Long enough for a slow machine, far shorter than "forever".
const DEADLINE: Duration = Duration::from_secs(60);

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    path
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A character device of our own (a second `/dev/null`, mode 0666) when this process may make
/// one and open it; otherwise the machine's `/dev/null`, whose mode an unprivileged run cannot
/// change anyway.
fn null_device(dir: &Path) -> PathBuf {
    use nix::sys::stat::{Mode, SFlag, makedev, mknod};
    let path = dir.join("null-device");
    let made = mknod(&path, SFlag::S_IFCHR, Mode::from_bits_truncate(0o666), makedev(1, 3)).is_ok()
        && std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).is_ok()
        && std::fs::OpenOptions::new().write(true).open(&path).is_ok();
    if made { path } else { PathBuf::from("/dev/null") }
}

/// The open of a FIFO for writing blocked until a reader came: the run never started.
#[test]
fn events_jsonl_fifo_is_refused_without_blocking_red() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9/v1", false);
    let events = fifo(&sandbox.project, "events.fifo");
    let output = output_within(sandbox.command(&["run", "--events-jsonl", path_str(&events), "go"]), DEADLINE);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!("odek: events-jsonl: refusing to write events to {}: not a regular file\n", events.display())
    );
}

/// `--events-jsonl /dev/null` as root left `/dev/null` at 0600 for the whole machine.
#[test]
fn events_jsonl_device_is_refused_and_keeps_its_mode_red() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9/v1", false);
    let device = null_device(&sandbox.project);
    let before = mode(&device);
    let output = output_within(sandbox.command(&["run", "--events-jsonl", path_str(&device), "go"]), DEADLINE);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!("odek: events-jsonl: refusing to write events to {}: not a regular file\n", device.display())
    );
    assert_eq!(mode(&device), before, "the device's mode changed");
}

/// `odek subagent --task <fifo>` blocked in the open, waiting for a writer.
#[test]
fn task_file_fifo_is_refused_without_blocking_red() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9/v1", false);
    let task = fifo(&sandbox.project, "task.fifo");
    let output = output_within(sandbox.command(&["subagent", "--task", path_str(&task)]), DEADLINE);
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(stderr(&output), "odek: stat task file: not a regular file\n");
    let result: serde_json::Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(result["status"], "error");
    assert_eq!(result["error"], "stat task file: not a regular file");
}

#[test]
fn ctx_fifo_is_refused_without_blocking_red() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9/v1", false);
    let ctx = fifo(&sandbox.project, "ctx.fifo");
    let output = output_within(sandbox.command(&["run", "--ctx", path_str(&ctx), "go"]), DEADLINE);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), format!("odek: --ctx {}: not a regular file\n", ctx.display()));
}

#[test]
fn project_config_fifo_is_refused_without_blocking_red() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9/v1", false);
    fifo(&sandbox.project, "odek.json");
    let output = output_within(sandbox.command(&["run", "go"]), DEADLINE);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "odek: config ./odek.json: not a regular file\n");
}

/// `--replay <fifo>` blocked in the open.
#[test]
fn replay_fifo_is_refused_without_blocking_red() {
    let sandbox = Sandbox::new();
    sandbox.configure("http://127.0.0.1:9/v1", false);
    let script = fifo(&sandbox.project, "script.fifo");
    let output =
        output_within(sandbox.command(&["run", "--provider", "replay", "--replay", path_str(&script), "go"]), DEADLINE);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), format!("odek: replay {}: cannot read: not a regular file\n", script.display()));
}

/// `--record <device>` renamed a regular file over the device (as root: over `/dev/null`).
#[test]
fn record_onto_a_device_is_refused_red() {
    let server = ScriptedServer::start(vec![Reply::text("never asked")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let device = null_device(&sandbox.project);
    let before = mode(&device);
    let output = output_within(sandbox.command(&["run", "--record", path_str(&device), "go"]), DEADLINE);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), format!("odek: record {}: cannot write: not a regular file\n", device.display()));
    let metadata = std::fs::metadata(&device).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(&metadata.file_type()), "the device was replaced");
    assert_eq!(mode(&device), before);
    assert!(server.requests().is_empty());
}

/// The model's `read_file` on a FIFO hung the loop in the open (no writer ever comes).
#[test]
fn read_file_on_a_fifo_does_not_hang_the_loop_red() {
    let server = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"pipe"}"#)]),
        Reply::text("could not read it"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let pipe = fifo(&sandbox.project, "pipe");
    let output = output_within(sandbox.command(&["run", "--quiet", "read", "the", "pipe"]), DEADLINE);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "could not read it\n");
    let results = tool_contents(&server.requests()[1]);
    assert_eq!(results.len(), 1);
    let expected = format!(
        "error: {} is not a regular file (a FIFO, device or socket); file tools only use regular files",
        pipe.display()
    );
    assert!(results[0].contains(&expected), "{}", results[0]);
}
