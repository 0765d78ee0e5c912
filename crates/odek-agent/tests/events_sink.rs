//! The JSONL sink (spec `events.md` §12): permissions, append, every open error, symlink
//! refusal and the `O_NOFOLLOW` race.

#![allow(clippy::unwrap_used)]

mod events_support;

use std::os::unix::fs::{PermissionsExt, symlink};

use odek_agent::events::{
    Event, EventEmitter, EventSink, JsonlSink, SinkError, check_events_path, harden_events_file, open_events_file,
    open_sink,
};

use events_support::*;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn new_file_is_0600_and_lines_are_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let sink = JsonlSink::open(path.to_str().unwrap()).unwrap();
    assert_eq!(mode(&path), 0o600);
    let emitter = EventEmitter::start(Box::new(sink), run_id(), false).unwrap();
    emitter.emit(Event::plan_created(1, 1));
    emitter.emit(Event::plan_created(1, 2));
    emitter.close();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 2);
    assert!(lines.iter().all(|line| line.ends_with("}\n") && line.starts_with("{\"schema\":\"odek.event/v1\"")));
}

#[test]
fn existing_file_is_hardened_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, "earlier\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut sink = JsonlSink::open(path.to_str().unwrap()).unwrap();
    assert_eq!(mode(&path), 0o600);
    sink.write_line("{\"a\":1}\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier\n{\"a\":1}\n");
}

#[test]
fn relative_path_without_directory_uses_the_current_directory() {
    // `.` exists, so only the open can fail; the check itself passes.
    check_events_path("odek-events-test-unused.jsonl").unwrap();
}

#[test]
fn empty_path_is_refused() {
    assert_eq!(JsonlSink::open("").unwrap_err().to_string(), "empty path");
}

#[test]
fn missing_parent_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let path = missing.join("events.jsonl");
    let error = JsonlSink::open(path.to_str().unwrap()).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("parent directory {} must already exist: {}", missing.display(), std::io::Error::from_raw_os_error(2))
    );
    assert!(!missing.exists());
}

#[test]
fn parent_that_is_a_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "").unwrap();
    let path = file.join("events.jsonl");
    let error = JsonlSink::open(path.to_str().unwrap()).unwrap_err();
    assert_eq!(error.to_string(), format!("parent path {} is not a directory", file.display()));
}

#[test]
fn events_sink_symlink_refused_red() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::write(&target, "precious\n").unwrap();
    let path = dir.path().join("events.jsonl");
    symlink(&target, &path).unwrap();
    let error = JsonlSink::open(path.to_str().unwrap()).unwrap_err();
    assert_eq!(error.to_string(), format!("refusing to write events to symlink {}", path.display()));
    // A dangling link is refused too (the open would otherwise create its target).
    let dangling = dir.path().join("dangling.jsonl");
    symlink(dir.path().join("nowhere"), &dangling).unwrap();
    assert!(matches!(JsonlSink::open(dangling.to_str().unwrap()), Err(SinkError::Symlink { .. })));
    assert!(!dir.path().join("nowhere").exists());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
}

#[test]
fn events_sink_symlink_swap_after_check_red() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::write(&target, "precious\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = dir.path().join("events.jsonl");
    let path_text = path.to_str().unwrap();

    check_events_path(path_text).unwrap();
    // The attacker wins the race: a link appears between the check and the open.
    symlink(&target, &path).unwrap();
    let error = open_events_file(path_text).unwrap_err();
    assert!(matches!(&error, SinkError::Open(os) if os.raw_os_error() == Some(nix::libc::ELOOP)), "{error}");
    assert_eq!(error.to_string(), std::io::Error::from_raw_os_error(nix::libc::ELOOP).to_string());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    assert_eq!(mode(&target), 0o644);
}

#[test]
fn open_error_of_a_directory_is_the_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = JsonlSink::open(dir.path().to_str().unwrap()).unwrap_err();
    assert!(matches!(&error, SinkError::Open(_)), "{error}");
    assert_eq!(error.to_string(), std::io::Error::from_raw_os_error(nix::libc::EISDIR).to_string());
}

#[test]
fn hardening_works_on_the_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::write(&path, "").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let file = open_events_file(path.to_str().unwrap()).unwrap();
    harden_events_file(&file).unwrap();
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn dash_is_stdout_and_paths_are_files() {
    assert!(open_sink("-").is_ok());
    assert_eq!(open_sink("").err().unwrap().to_string(), "empty path");
}

/// A FIFO at the path: the write-only open used to block until a reader came.
#[test]
fn events_sink_fifo_is_refused_red() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.fifo");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let error = JsonlSink::open(path.to_str().unwrap()).unwrap_err();
    assert!(matches!(&error, SinkError::NotRegularFile { .. }), "{error}");
    assert_eq!(error.to_string(), format!("refusing to write events to {}: not a regular file", path.display()));
    assert_eq!(mode(&path), 0o644);
}

/// A character device: the sink used to open it and set its mode to 0600 (for `/dev/null` as
/// root, for the whole machine). The device here is a private node when this process may make
/// one, else `/dev/null`, whose mode an unprivileged process cannot change anyway.
#[test]
fn events_sink_device_is_refused_before_its_mode_is_touched_red() {
    use nix::sys::stat::{Mode, SFlag, makedev, mknod};
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("null-device");
    let made = mknod(&node, SFlag::S_IFCHR, Mode::from_bits_truncate(0o666), makedev(1, 3)).is_ok()
        && std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o666)).is_ok()
        && std::fs::OpenOptions::new().write(true).open(&node).is_ok();
    let device = if made { node } else { std::path::PathBuf::from("/dev/null") };
    let before = mode(&device);
    let error = JsonlSink::open(device.to_str().unwrap()).unwrap_err();
    assert_eq!(error.to_string(), format!("refusing to write events to {}: not a regular file", device.display()));
    assert_eq!(mode(&device), before);
}
