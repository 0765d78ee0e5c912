//! The embed example, run as a user would: the real program against its replay script, in an
//! empty home (no config files, no MCP servers).

use std::process::Command;

use serde_json::Value;

#[test]
fn the_embed_example_runs_its_tool_and_prints_every_event() {
    let home = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/replay.json");
    let output = Command::new(env!("CARGO_BIN_EXE_odek-embed"))
        .arg(script)
        .current_dir(home.path())
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "stderr: {}", String::from_utf8_lossy(&output.stderr));
    let mut lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.pop(), Some("answer: There are 3 words."));
    let events: Vec<Value> = lines.iter().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert!(events.iter().all(|event| event["schema"] == "odek.event/v1"), "{stdout}");
    let types: Vec<&str> = events.iter().map(|event| event["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "run_started",
            "tool_call_started",
            "tool_call_completed",
            "iteration_completed",
            "iteration_completed",
            "run_completed"
        ]
    );
    assert_eq!(events[1]["tool"], "word_count");
    assert_eq!(events[2]["data"]["result_bytes"], 1, "the tool's answer, \"3\"");
    assert_eq!(events[5]["data"]["input_tokens"], 260);
}
