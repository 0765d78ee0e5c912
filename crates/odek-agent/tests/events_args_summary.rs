//! `args_summary` (spec `events.md` §6) and `artifact_count` (§7).

#![allow(clippy::unwrap_used)]

use std::path::Path;

use odek_agent::events::{MAX_SUMMARY_ITEMS, MAX_SUMMARY_STRING_BYTES, args_summary, artifact_count};
use serde_json::{Value, json};

fn summary(tool: &str, arguments: &Value) -> Option<Value> {
    let cwd = tempfile::tempdir().unwrap();
    let home = cwd.path().join("home/.odek");
    args_summary(tool, &arguments.to_string(), cwd.path(), &home)
}

#[test]
fn shell_argv0_skips_env_assignments_and_directories() {
    let got = summary("shell", &json!({"command": "FOO=1 /usr/bin/git status"})).unwrap();
    assert_eq!(got["argv0"], "git");
    assert_eq!(got["class"], "safe");
    let got = summary("terminal", &json!({"command": "A_1=x B=\"y\" '/bin/rm' -rf /"})).unwrap();
    assert_eq!(got["argv0"], "rm");
    assert_eq!(got.as_object().unwrap().len(), 2);
}

#[test]
fn parallel_shell_lists_programs_and_highest_class() {
    let got = summary(
        "parallel_shell",
        &json!({"commands": [{"command": "ls"}, {"command": "rm -rf /"}, {"command": "cat x"}]}),
    )
    .unwrap();
    assert_eq!(got["argv0"], json!(["ls", "rm", "cat"]));
    let single_rm = summary("shell", &json!({"command": "rm -rf /"})).unwrap();
    assert_eq!(got["class"], single_rm["class"]);
    assert_ne!(got["class"], "safe");
}

#[test]
fn lists_cut_to_16_items_but_class_counts_every_entry() {
    let mut commands: Vec<Value> = (0..20).map(|_| json!({"command": "ls"})).collect();
    commands.push(json!({"command": "rm -rf /"}));
    let got = summary("parallel_shell", &json!({ "commands": commands })).unwrap();
    assert_eq!(got["argv0"].as_array().unwrap().len(), MAX_SUMMARY_ITEMS);
    assert_eq!(got["class"], summary("shell", &json!({"command": "rm -rf /"})).unwrap()["class"]);

    let patches: Vec<Value> = (0..30).map(|i| json!({"path": format!("f{i}.txt")})).collect();
    let got = summary("batch_patch", &json!({ "patches": patches })).unwrap();
    assert_eq!(got["path"].as_array().unwrap().len(), MAX_SUMMARY_ITEMS);
    assert_eq!(got["path"][0], "f0.txt");
    assert_eq!(got["class"], "local_write");
}

#[test]
fn strings_cut_to_512_bytes_on_a_char_boundary() {
    let long = format!("{}é{}", "a".repeat(511), "b".repeat(100));
    let got = summary("read_file", &json!({ "path": long })).unwrap();
    let path = got["path"].as_str().unwrap();
    assert_eq!(path, "a".repeat(511));
    assert!(path.len() <= MAX_SUMMARY_STRING_BYTES);
    let got = summary("shell", &json!({"command": "x".repeat(2000)})).unwrap();
    assert_eq!(got["argv0"].as_str().unwrap().len(), MAX_SUMMARY_STRING_BYTES);
}

#[test]
fn path_tools_carry_path_and_write_class() {
    let cwd = tempfile::tempdir().unwrap();
    let home = cwd.path().join("home/.odek");
    for tool in ["read_file", "write_file", "patch", "glob", "tree", "transcribe", "checksum"] {
        let got = args_summary(tool, r#"{"path":"src/main.rs"}"#, cwd.path(), &home).unwrap();
        assert_eq!(got, json!({"path": "src/main.rs", "class": "local_write"}), "{tool}");
    }
    let inside_home = home.join("config.toml");
    let arguments = json!({"path": inside_home.to_str().unwrap()}).to_string();
    let got = args_summary("write_file", &arguments, cwd.path(), &home).unwrap();
    assert_eq!(got["class"], "system_write");
    assert_eq!(args_summary("read_file", "{}", cwd.path(), Path::new("/nonexistent/.odek")), None);
}

#[test]
fn url_tools_carry_the_host_only() {
    let got =
        summary("http_request", &json!({"url": "https://user:hunter2@API.Example.com:8443/v1/x?token=abc#f"})).unwrap();
    assert_eq!(got, json!({"host": "api.example.com"}));
    let got =
        summary("http_batch", &json!({"requests": [{"url": "http://[::1]:9/a"}, {"url": "https://b.test"}]})).unwrap();
    assert_eq!(got, json!({"host": "::1"}));
    let got = summary("browser", &json!({"action": "screenshot"})).unwrap();
    assert_eq!(got, json!({"action": "screenshot"}));
    let got = summary("browser", &json!({"url": "about:blank", "action": "open"})).unwrap();
    assert_eq!(got, json!({"action": "open"}));
    assert_eq!(summary("web_search", &json!({"query": "rust"})), None);
}

#[test]
fn delegate_tasks_counts_tasks() {
    let got = summary("delegate_tasks", &json!({"tasks": [{"goal": "a"}, {"goal": "b"}]})).unwrap();
    assert_eq!(got, json!({"task_count": 2}));
}

#[test]
fn other_tools_and_bad_arguments_have_no_summary() {
    for tool in ["plan", "artifact_read", "fs__read_file", "unknown"] {
        assert_eq!(summary(tool, &json!({"path": "a", "command": "ls", "url": "https://x"})), None, "{tool}");
    }
    let cwd = tempfile::tempdir().unwrap();
    assert_eq!(args_summary("shell", "not json", cwd.path(), cwd.path()), None);
    assert_eq!(args_summary("shell", "", cwd.path(), cwd.path()), None);
    assert_eq!(summary("shell", &json!({"command": 3})), None);
}

#[test]
fn artifact_count_counts_artifact_lines() {
    assert_eq!(artifact_count("- artifact a\n- artifact b\nnot - artifact c\n-artifact d"), 2);
}
