//! The `search_files` tool against real directory trees.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

use std::path::Path;

use odek_agent::tool::{Tool, ToolContext};
use odek_agent::tools::SearchFilesTool;
use odek_danger::DangerPolicy;
use serde_json::json;

fn context(cwd: &Path) -> ToolContext {
    ToolContext::new(cwd.to_path_buf(), cwd.join("home/.odek"), DangerPolicy::default())
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("ignored")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".gitignore"), "ignored/\n*.log\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {\n    needle();\n}\n").unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn needle() {}\n").unwrap();
    std::fs::write(root.join("ignored/hidden.rs"), "needle\n").unwrap();
    std::fs::write(root.join("debug.log"), "needle\n").unwrap();
    std::fs::write(root.join(".git/config"), "needle\n").unwrap();
    std::fs::write(root.join("data.bin"), b"needle\0binary").unwrap();
    std::fs::write(root.join("notes.md"), "a needle (in a haystack\n").unwrap();
    dir
}

async fn search(root: &Path, arguments: serde_json::Value) -> String {
    SearchFilesTool.call(&arguments.to_string(), &context(root)).await.unwrap().output
}

#[tokio::test]
async fn content_search_respects_gitignore_and_skips_binaries() {
    let dir = tree();
    let output = search(dir.path(), json!({"pattern": "needle"})).await;
    let mut lines: Vec<&str> = output.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["notes.md:1: a needle (in a haystack", "src/lib.rs:1: pub fn needle() {}", "src/main.rs:2:     needle();"]
    );
}

#[tokio::test]
async fn untrusted_source_is_the_root() {
    let dir = tree();
    let outcome = SearchFilesTool.call(&json!({"pattern": "needle"}).to_string(), &context(dir.path())).await.unwrap();
    assert_eq!(outcome.untrusted_source, Some(dir.path().display().to_string()));
}

#[tokio::test]
async fn glob_limits_content_search_and_files_mode_lists_names() {
    let dir = tree();
    let rust_only = search(dir.path(), json!({"pattern": "needle", "glob": "*.rs"})).await;
    assert!(!rust_only.contains("notes.md"));
    assert!(rust_only.contains("src/lib.rs"));
    let files = search(dir.path(), json!({"pattern": "*.rs", "mode": "files"})).await;
    let mut names: Vec<&str> = files.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["src/lib.rs", "src/main.rs"]);
}

#[tokio::test]
async fn invalid_regex_is_searched_literally() {
    let dir = tree();
    let output = search(dir.path(), json!({"pattern": "needle (in"})).await;
    assert!(output.starts_with("[\"needle (in\" is not a valid regular expression; searched for it literally]"));
    assert!(output.contains("notes.md:1:"));
}

#[tokio::test]
async fn results_and_lines_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let many: String = (0..500).map(|i| format!("hit {i} {}\n", "y".repeat(400))).collect();
    std::fs::write(dir.path().join("many.txt"), many).unwrap();
    let output = search(dir.path(), json!({"pattern": "hit", "max_results": 1000})).await;
    let hits = output.lines().filter(|line| line.starts_with("many.txt:")).count();
    assert_eq!(hits, 200);
    assert!(output.lines().all(|line| line.chars().count() < 340));
    assert!(output.ends_with("[results limited to 200; narrow the pattern, path or glob to see others]"));
    let few = search(dir.path(), json!({"pattern": "hit", "max_results": 3})).await;
    assert_eq!(few.lines().filter(|line| line.starts_with("many.txt:")).count(), 3);
}

#[tokio::test]
async fn missing_root_and_no_matches() {
    let dir = tree();
    let ctx = context(dir.path());
    let error = SearchFilesTool.call(&json!({"pattern": "x", "path": "nope"}).to_string(), &ctx).await.unwrap_err();
    assert!(error.message.contains("no such file or directory"), "{}", error.message);
    let none = SearchFilesTool.call(&json!({"pattern": "zzzz"}).to_string(), &ctx).await.unwrap();
    assert_eq!(none.output, format!("no matches under {}", dir.path().display()));
}
