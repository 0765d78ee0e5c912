//! [beyond] A server's tool catalogue is capped — 1,000 tools and 4 MiB of listing per server
//! (`odek_mcp::discovery`) — and the caps are checked while each page is read. The real `odek`
//! binary against the fixture server listing a million tiny tools over 100 pages: the server is
//! refused at page 1 with the cap's error, and odek's peak memory stays small (before the cap,
//! that listing was accepted at about 2 GB).
//!
//! The peak is `getrusage(RUSAGE_CHILDREN)` of a parent that has no other child: this test
//! binary re-executed to run only [`measured_run`], which starts odek (already built, so no
//! cargo build counts) and reports odek's peak with its output.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use nix::sys::resource::{UsageWho, getrusage};
use serde_json::{Value, json};

/// Peak resident set odek (or the fixture it started) may reach while refusing the listing, in
/// MiB. A debug build listing a few tools peaks near 20 MiB; the uncapped listing went past
/// 1,000.
const PEAK_LIMIT_MIB: u64 = 160;

/// The environment variable that turns [`measured_run`] on: the command to measure, as JSON.
const MEASURE: &str = "ODEK_TEST_MEASURE_COMMAND";

fn set_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Only does something in the re-executed binary: runs the command in `MEASURE` and prints its
/// exit code, stdout and the peak resident set of its process tree as one JSON line.
#[test]
fn measured_run() {
    let Some(request) = std::env::var_os(MEASURE) else { return };
    let request: Value = serde_json::from_str(request.to_str().unwrap()).unwrap();
    let text = |key: &str| request[key].as_str().unwrap().to_owned();
    let output = Command::new(text("program"))
        .args(request["args"].as_array().unwrap().iter().map(|arg| arg.as_str().unwrap()))
        .current_dir(text("home"))
        .env_clear()
        .env("HOME", text("home"))
        .env("PATH", text("path"))
        .output()
        .unwrap();
    let peak_kib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    let report = json!({
        "code": output.status.code(),
        "stdout": String::from_utf8_lossy(&output.stdout),
        "stderr": String::from_utf8_lossy(&output.stderr),
        "peak_kib": peak_kib,
    });
    println!("MEASURED {report}");
}

#[test]
fn a_million_listed_tools_are_refused_in_bounded_memory_red() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(home.join(".odek")).unwrap();
    let config = json!({"mcp_servers": {"fx": {
        "command": odek_test_support::fixture_server(),
        "args": ["--mode", "many-tools"],
    }}});
    let path = home.join(".odek/config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    set_private(&path);

    let request = json!({
        "program": odek_test_support::odek_binary(),
        "args": ["ext", "list", "--json"],
        "home": home,
        "path": std::env::var("PATH").unwrap_or_default(),
    });
    let measured = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "measured_run", "--nocapture", "--test-threads", "1"])
        .env(MEASURE, request.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&measured.stdout);
    let line = stdout
        .lines()
        .find_map(|line| line.split_once("MEASURED ").map(|(_, json)| json))
        .unwrap_or_else(|| panic!("{stdout}"));
    let report: Value = serde_json::from_str(line).unwrap();

    let listing: Value = serde_json::from_str(report["stdout"].as_str().unwrap())
        .unwrap_or_else(|err| panic!("{err}: {}", report["stderr"]));
    let fx = &listing["servers"][0];
    assert_eq!(fx["status"], "failed", "{listing:#}");
    assert_eq!(
        fx["error"],
        "mcp server \"fx\": mcpclient fx: tools/list: the server lists more than 1000 tools (the cap per server); refused at page 1"
    );
    assert_eq!(report["code"], 1);
    let peak_mib = report["peak_kib"].as_u64().unwrap() / 1024;
    assert!(peak_mib < PEAK_LIMIT_MIB, "odek peaked at {peak_mib} MiB refusing the listing");
}
