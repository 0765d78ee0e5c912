//! [beyond] What one server line can make odek hold stays near the line's own size: a
//! `tools/call` result of millions of tiny non-text items (before: 1.1–1.5 GB for a 10 MiB line
//! of `{}` items, about 100 bytes per input byte), and a log message of millions of line feeds
//! (before: 186 MB for 10 MiB of `\n`).
//!
//! The peak is the resident set (`getrusage(RUSAGE_SELF)`) of this test binary re-executed to
//! run only [`measured_case`], so nothing else in the process counts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use nix::sys::resource::{UsageWho, getrusage};
use odek_contract::artifact_ref::ArtifactRoots;
use odek_contract::tool_result::ResultContext;
use odek_mcp::decode_call_result;
use odek_mcp::server_lines::log_message_lines;

/// Peak resident set one case may reach, in MiB: the 10 MiB line, the test binary, and room.
const PEAK_LIMIT_MIB: i64 = 80;

/// The environment variable that turns [`measured_case`] on: the case to run.
const CASE: &str = "ODEK_TEST_MEMORY_CASE";

/// About 10 MiB of `{}` items, as one `tools/call` result line: `prefix`, the items, `suffix`.
fn many_items(prefix: &str, suffix: &str) -> String {
    let count = (10 << 20) / 3;
    let mut line = String::with_capacity(prefix.len() + count * 3 + suffix.len());
    line.push_str(prefix);
    for index in 0..count {
        if index > 0 {
            line.push(',');
        }
        line.push_str("{}");
    }
    line.push_str(suffix);
    line
}

/// Only does something in the re-executed binary: runs the case in `CASE` and prints what it
/// produced and its own peak resident set.
#[test]
fn measured_case() {
    let Some(case) = std::env::var_os(CASE) else { return };
    let roots = ArtifactRoots::new(Vec::<String>::new());
    let context = ResultContext { server: "srv", tool: "t", max_result_chars: 200_000, roots: &roots };
    let summary = match case.to_str().unwrap() {
        "log-line-feeds" => log_message_lines("info", &"\n".repeat(10 << 20)).join("|"),
        case => {
            let (prefix, suffix) = match case {
                "items" => (r#"{"content":["#, "]}"),
                // An escaped key sends the result through serde_json instead of the scanner.
                "items-serde" => (r#"{"\u0063ontent":["#, "]}"),
                "items-error" => (r#"{"isError":true,"content":["#, "]}"),
                "items-structured" => (r#"{"structuredContent":{"content":[{}]},"content":["#, "]}"),
                other => panic!("unknown case {other}"),
            };
            let line = many_items(prefix, suffix);
            let text = match decode_call_result(line.as_bytes(), &context) {
                Ok(output) => output.text,
                Err(error) => error.to_string(),
            };
            text.lines().last().unwrap_or_default().to_owned()
        }
    };
    let peak_kib = getrusage(UsageWho::RUSAGE_SELF).unwrap().max_rss();
    println!("MEASURED {peak_kib} {summary}");
}

/// Runs `case` in a fresh copy of this binary: its peak in MiB and its summary line.
fn measure(case: &str) -> (i64, String) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "measured_case", "--nocapture", "--test-threads", "1"])
        .env(CASE, case)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{case}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let measured = stdout
        .lines()
        .find_map(|line| line.split_once("MEASURED ").map(|(_, measured)| measured))
        .unwrap_or_else(|| panic!("{stdout}"));
    let (peak_kib, summary) = measured.split_once(' ').unwrap();
    (peak_kib.parse::<i64>().unwrap() / 1024, summary.to_owned())
}

#[test]
fn millions_of_tiny_non_text_items_stay_bounded_red() {
    let more = (10 << 20) / 3 - 4096;
    for (case, last_line) in [
        ("items", format!("- \u{2026} {more} more item(s)")),
        ("items-serde", format!("- \u{2026} {more} more item(s)")),
        ("items-error", format!("- \u{2026} {more} more item(s)")),
        ("items-structured", "- structured content {\"content\":[{}]}".to_owned()),
    ] {
        let (peak_mib, summary) = measure(case);
        assert!(summary.ends_with(&last_line), "{case}: {summary}");
        assert!(peak_mib <= PEAK_LIMIT_MIB, "{case}: peak {peak_mib} MiB");
    }
}

#[test]
fn a_log_message_of_millions_of_line_feeds_is_counted_in_place_red() {
    let (peak_mib, summary) = measure("log-line-feeds");
    // 32 empty lines printed, then the other lines of the 10 Mi line feeds counted.
    let lines: Vec<&str> = summary.split('|').collect();
    assert_eq!(lines.len(), 33);
    assert_eq!(lines[32], format!("info: \u{2026} {} more line(s)", (10 << 20) - 32));
    assert!(peak_mib <= PEAK_LIMIT_MIB, "peak {peak_mib} MiB");
}
