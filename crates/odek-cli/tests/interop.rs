//! Interop: the real `odek` binary against real third-party MCP servers, pinned and installed by
//! `.ci/install-interop` — `@modelcontextprotocol/server-everything` and `server-filesystem`
//! (TypeScript SDK) and `tests/interop/python_server.py` and `python_names_server.py` (Python
//! SDK, mcp 1.x; the second has tools named like odek's built-ins).
//!
//! Each test lists and calls tools through `odek ext list --json`, `odek ext call` and
//! `odek ext call --jsonl`, and asserts what a user sees. On the way they exercise what these
//! servers do that a strict client must take in stride: a `notifications/tools/list_changed`
//! before the `initialize` result, requests from the server numbered from 0 (one with the id of
//! odek's pending call), `notifications/message`, `instructions`/`title`/`annotations`/
//! `outputSchema`/`structuredContent`, images, resource links and embedded resources (the model
//! view of docs/MODEL-VIEW.md), unknown tools answered as `isError` results, `-32602` for
//! a request the SDK cannot parse, a stderr line per request, progress that outlives the timeout,
//! and a server that ignores stdin EOF.
//!
//! Without the servers installed, each test prints a skip notice and passes, except under
//! `CI=true`, where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

// Shared with the SDK client tests, which use `client_report`.
#[allow(dead_code)]
#[path = "interop/support.rs"]
mod support;

use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{Project, Servers, process_with_env_exists};

const EVERYTHING_TOOLS: &[&str] = &[
    "everything__echo",
    "everything__get-annotated-message",
    "everything__get-env",
    "everything__get-resource-links",
    "everything__get-resource-reference",
    "everything__get-structured-content",
    "everything__get-sum",
    "everything__get-tiny-image",
    "everything__gzip-file-as-resource",
    "everything__toggle-simulated-logging",
    "everything__toggle-subscriber-updates",
    "everything__trigger-long-running-operation",
    "everything__simulate-research-query",
];

/// A 1x1 transparent PNG (70 bytes).
const TINY_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f, 0x0f, 0x00, 0x02, 0x87, 0x01, 0x80, 0xeb, 0x47, 0xba,
    0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

const PYTHON_TOOLS: &[&str] = &[
    "py__add",
    "py__echo",
    "py__fail",
    "py__write_report",
    "py__snapshot",
    "py__find_files",
    "py__get_file_contents",
    "py__weather",
    "py__forecast_summary",
    "py__talk_to_client",
    "py__grow",
    "py__retire",
    "py__sleep",
    "py__crash",
    "py__pid",
];

/// The one server report named `name`.
fn report<'a>(servers: &'a [Value], name: &str) -> &'a Value {
    servers.iter().find(|server| server["name"] == name).unwrap()
}

fn strings(value: &Value) -> Vec<&str> {
    value.as_array().unwrap().iter().map(|item| item.as_str().unwrap()).collect()
}

fn ok_text(record: &Value) -> &str {
    assert_eq!(record["ok"], true, "{record}");
    record["text"].as_str().unwrap()
}

fn error_text(record: &Value) -> &str {
    assert_eq!(record["ok"], false, "{record}");
    record["error"].as_str().unwrap()
}

fn everything_project(servers: &Servers, entry_extra: &Value) -> Project {
    let mut entry = Servers::node_entry(&servers.everything(), &[]);
    entry.as_object_mut().unwrap().extend(entry_extra.as_object().unwrap().clone());
    Project::new().configure(&json!({ "mcp_servers": { "everything": entry } }))
}

fn python_project(servers: &Servers, timeout_seconds: u64) -> Project {
    let project = Project::new();
    let artifacts = project.artifacts.display().to_string();
    // Claude-style `mcpServers`, as such servers' own docs spell it.
    project.configure(&json!({ "mcpServers": { "py": {
        "command": servers.python().display().to_string(),
        "args": [Servers::python_server_script().display().to_string()],
        "env": { "INTEROP_ARTIFACT_DIR": artifacts },
        "artifact_roots": [artifacts],
        "timeout_seconds": timeout_seconds,
    }}}))
}

#[test]
fn everything_server_lists_every_tool_without_warnings() {
    let Some(servers) = Servers::installed("everything_server_lists_every_tool_without_warnings") else { return };
    let project = everything_project(&servers, &json!({}));
    // The server sends notifications/tools/list_changed before its initialize result, and lists
    // tools with title, annotations, outputSchema and execution fields.
    let (run, reports) = project.list_json();
    run.assert_code(0);
    let everything = report(&reports, "everything");
    assert_eq!(everything["status"], "ok");
    assert_eq!(everything["protocol_version"], "2025-03-26");
    assert_eq!(strings(&everything["tools"]), EVERYTHING_TOOLS);
    assert_eq!(everything["tool_count"], EVERYTHING_TOOLS.len());
    // No description or schema trips the prompt-injection rules.
    assert_eq!(everything["warnings"], json!([]));
    let lines = run.stderr_lines();
    assert!(lines.contains(&"[everything] Starting default (STDIO) server..."), "{lines:?}");
    assert!(lines.contains(&"odek: connected MCP server \"everything\" (13 tools)"), "{lines:?}");
}

#[test]
fn everything_server_tools_answer_through_odek() {
    let Some(servers) = Servers::installed("everything_server_tools_answer_through_odek") else { return };
    let run_mark = support::unique_mark();
    let project = everything_project(
        &servers,
        &json!({
            "env": { "INTEROP_MARK": run_mark, "INTEROP_TOKEN": "must-not-arrive" },
            "timeout_seconds": 3,
        }),
    );
    let (run, records) = project.call_jsonl(&[
        json!({"tool": "everything__echo", "arguments": {"message": "hello from odek"}}),
        json!({"tool": "everything__get-sum", "arguments": {"a": 2, "b": 3}}),
        json!({"tool": "everything__get-structured-content", "arguments": {"location": "Chicago"}}),
        json!({"tool": "everything__get-annotated-message", "arguments": {"messageType": "success", "includeImage": true}}),
        json!({"tool": "everything__get-tiny-image", "arguments": {}}),
        json!({"tool": "everything__echo", "arguments": {}}),
        json!({"tool": "everything__get-env", "arguments": {}}),
        // Progress every 0.5 s keeps a 4 s operation alive under a 3 s timeout...
        json!({"tool": "everything__trigger-long-running-operation", "arguments": {"duration": 4, "steps": 8}}),
        // ...and without progress the same operation times out, and the process is reused.
        json!({"tool": "everything__trigger-long-running-operation", "arguments": {"duration": 4, "steps": 1}}),
        json!({"tool": "everything__echo", "arguments": {"message": "still here"}}),
    ]);
    run.assert_code(0);
    assert_eq!(ok_text(&records[0]), "Echo: hello from odek");
    assert_eq!(ok_text(&records[1]), "The sum of 2 and 3 is 5.");
    // The text item carries structuredContent (the same JSON): it is not shown twice.
    assert_eq!(ok_text(&records[2]), r#"{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}"#);
    // [beyond] Annotated text items are joined; the image becomes a metadata line (it was
    // dropped), its base64 never shown.
    assert_eq!(ok_text(&records[3]), "Operation completed successfully\n- image (image/png, 4033 bytes)");
    assert_eq!(
        ok_text(&records[4]),
        "Here's the image you requested:\nThe image above is the MCP logo.\n- image (image/png, 4033 bytes)"
    );
    assert_eq!(
        error_text(&records[5]),
        "mcpclient everything: tool echo returned error: MCP error -32602: Input validation error: \
         Invalid arguments for tool echo: Invalid input: expected string, received undefined at message"
    );
    // The server sees odek's sanitised environment: the allowlisted PATH and HOME plus the
    // config's non-secret override; the secret-looking override was dropped. A project server
    // runs confined, so it also gets the run's temporary directory and the sandbox's marker.
    let env: Value = serde_json::from_str(ok_text(&records[6])).unwrap();
    let mut keys: Vec<&String> = env.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["HOME", "INTEROP_MARK", "ODEK_SANDBOX_SUPERVISED", "PATH", "TMPDIR"]);
    let temp_dir = env["TMPDIR"].as_str().unwrap();
    assert!(Path::new(temp_dir).file_name().unwrap().to_str().unwrap().starts_with("odek-sandbox-"), "{temp_dir}");
    assert_eq!(env["HOME"], project.home.display().to_string());
    assert_eq!(env["INTEROP_MARK"], run_mark);
    assert!(
        run.stderr_lines().contains(
            &"odek: warning: mcp server \"everything\": env override INTEROP_TOKEN looks like a secret and was dropped; \
              pass secrets with secret_env in ~/.odek/config.json, or there as \"INTEROP_TOKEN\": \"${INTEROP_TOKEN}\""
        ),
        "{}",
        run.stderr
    );
    assert_eq!(ok_text(&records[7]), "Long running operation completed. Duration: 4 seconds, Steps: 8.");
    assert_eq!(
        error_text(&records[8]),
        "mcpclient everything: tools/call: MCP request outcome unknown after dispatch; verify remote state \
         before retrying: context deadline exceeded (timeout_seconds: 3)"
    );
    assert_eq!(ok_text(&records[9]), "Echo: still here");
    assert!(!process_with_env_exists("INTEROP_MARK", &run_mark), "the server outlived odek");
}

/// [beyond] Resource links and embedded resources reach the model as metadata lines, never read
/// and never with their contents (before, each answered only its text items).
#[test]
fn everything_server_resource_links_and_references_reach_the_model() {
    let Some(servers) = Servers::installed("everything_server_resource_links_and_references_reach_the_model") else {
        return;
    };
    let project = everything_project(&servers, &json!({}));
    let (run, records) = project.call_jsonl(&[
        json!({"tool": "everything__get-resource-links", "arguments": {"count": 2}}),
        json!({"tool": "everything__get-resource-reference", "arguments": {"resourceType": "Text", "resourceId": 1}}),
        json!({"tool": "everything__get-resource-reference", "arguments": {"resourceType": "Blob", "resourceId": 2}}),
    ]);
    run.assert_code(0);
    assert_eq!(
        ok_text(&records[0]),
        "Here are 2 resource links to resources available in this server:\n\
         - resource link \"demo://resource/dynamic/blob/1\" (name \"Blob Resource 1\", text/plain)\n\
         - resource link \"demo://resource/dynamic/text/2\" (name \"Text Resource 2\", text/plain)"
    );
    // The server's resources embed the time of day (`toLocaleTimeString`), so their sizes vary by
    // a character or two: the line is exact but for the number, which must be plausible.
    let size_in = |text: &str, before: &str, after: &str| -> usize {
        let rest = text.strip_prefix(before).unwrap_or_else(|| panic!("{text}"));
        rest.strip_suffix(after).unwrap_or_else(|| panic!("{text}")).parse().unwrap_or_else(|_| panic!("{text}"))
    };
    // [beyond] issue 32: the embedded text itself reaches the model, under its line.
    let (line, resource_text) = ok_text(&records[1]).rsplit_once('\n').unwrap_or_else(|| panic!("{records:?}"));
    let text_chars = size_in(
        line,
        "Returning resource reference for Resource 1:\n\
         You can access this resource using the URI: demo://resource/dynamic/text/1\n\
         - resource \"demo://resource/dynamic/text/1\" (text/plain, embedded text of ",
        " chars):",
    );
    assert!((40..100).contains(&text_chars), "{text_chars}");
    assert!(resource_text.starts_with("Resource 1: This is a plaintext resource created at "), "{resource_text}");
    assert_eq!(resource_text.chars().count(), text_chars);
    let blob_bytes = size_in(
        ok_text(&records[2]),
        "Returning resource reference for Resource 2:\n\
         You can access this resource using the URI: demo://resource/dynamic/blob/2\n\
         - resource \"demo://resource/dynamic/blob/2\" (text/plain, embedded blob of ",
        " bytes)",
    );
    assert!((30..100).contains(&blob_bytes), "{blob_bytes}");
}

#[test]
fn everything_server_ignoring_stdin_eof_while_logging_is_killed_and_odek_finishes() {
    let Some(servers) =
        Servers::installed("everything_server_ignoring_stdin_eof_while_logging_is_killed_and_odek_finishes")
    else {
        return;
    };
    let run_mark = support::unique_mark();
    let project = everything_project(&servers, &json!({ "env": { "INTEROP_MARK": run_mark } }));
    // Simulated logging keeps the server alive after stdin EOF: odek's shutdown must fall back
    // to its kill path and still return.
    let run = project.odek(&["ext", "call", "everything__toggle-simulated-logging", "{}"]);
    run.assert_code(0);
    assert_eq!(
        run.stdout,
        "Started simulated, random-leveled logging for session undefined at a 5 second pace. Client's selected \
         logging level will be respected. If an interval elapses and the message to be sent is below the selected \
         level, it will not be sent. Thus at higher chosen logging levels, messages should arrive further apart. \n"
    );
    // The first simulated notifications/message is sent at once, at a random level.
    let logged = [
        "[everything] debug: Debug-level message",
        "[everything] info: Info-level message",
        "[everything] notice: Notice-level message",
        "[everything] warning: Warning-level message",
        "[everything] error: Error-level message",
        "[everything] critical: Critical-level message",
        "[everything] alert: Alert level-message",
        "[everything] emergency: Emergency-level message",
    ];
    assert!(run.stderr_lines().iter().any(|line| logged.contains(line)), "{}", run.stderr);
    assert!(!process_with_env_exists("INTEROP_MARK", &run_mark), "the server outlived odek");
}

#[test]
fn filesystem_server_with_builtin_tool_names_starts_and_is_callable_qualified_red() {
    let Some(servers) =
        Servers::installed("filesystem_server_with_builtin_tool_names_starts_and_is_callable_qualified_red")
    else {
        return;
    };
    let project = Project::new();
    let allowed = project.artifacts.display().to_string();
    std::fs::write(project.artifacts.join("note.txt"), "hello from the filesystem server\n").unwrap();
    let project =
        project.configure(&json!({ "mcp_servers": { "fs": Servers::node_entry(&servers.filesystem(), &[&allowed]) } }));

    // [beyond] Its tools read_file, write_file and search_files have built-in names. The
    // reference refuses the whole server; odek exposes every MCP tool as <server>__<tool>, so
    // nothing is shadowed and no exclude_tools is needed.
    let (run, reports) = project.list_json();
    run.assert_code(0);
    let fs = report(&reports, "fs");
    assert_eq!(fs["status"], "ok");
    let tools = strings(&fs["tools"]);
    assert_eq!(tools.len(), 14, "{tools:?}");
    for tool in ["fs__read_file", "fs__write_file", "fs__search_files"] {
        assert!(tools.contains(&tool), "{tools:?}");
    }
    assert!(run.stderr_lines().contains(&"odek: connected MCP server \"fs\" (14 tools)"), "{}", run.stderr);
    assert_eq!(fs["warnings"], json!([]), "no description trips the prompt-injection screen");

    let note = project.artifacts.join("note.txt").display().to_string();
    let (run, records) = project.call_jsonl(&[
        json!({"tool": "fs__read_file", "arguments": {"path": note}}),
        json!({"tool": "fs__search_files", "arguments": {"path": allowed, "pattern": "*.txt"}}),
        json!({"tool": "read_file", "arguments": {"path": note}}),
    ]);
    run.assert_code(0);
    assert_eq!(ok_text(&records[0]), "hello from the filesystem server\n");
    assert_eq!(ok_text(&records[1]), note);
    assert_eq!(error_text(&records[2]), "tool \"read_file\" not found", "the raw name is not an MCP tool");
}

/// The Python SDK server with tools named like odek's built-ins.
fn python_names_project(servers: &Servers) -> Project {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python_names_server.py");
    Project::new().configure(&json!({ "mcp_servers": { "py": {
        "command": servers.python().display().to_string(),
        "args": [script.display().to_string()],
        "timeout_seconds": 30,
    }}}))
}

#[test]
fn python_sdk_server_with_builtin_tool_names_starts_and_is_callable_qualified_red() {
    let Some(servers) =
        Servers::installed("python_sdk_server_with_builtin_tool_names_starts_and_is_callable_qualified_red")
    else {
        return;
    };
    let project = python_names_project(&servers);
    let (run, reports) = project.list_json();
    run.assert_code(0);
    let py = report(&reports, "py");
    assert_eq!(py["status"], "ok");
    assert_eq!(strings(&py["tools"]), ["py__read_file", "py__shell", "py__log_lines"]);
    assert_eq!(py["warnings"], json!([]));

    let note = project.artifacts.join("note.txt");
    std::fs::write(&note, "read through py__read_file\n").unwrap();
    let (run, records) = project.call_jsonl(&[
        json!({"tool": "py__read_file", "arguments": {"path": note.display().to_string()}}),
        json!({"tool": "py__shell", "arguments": {"command": "ls"}}),
    ]);
    run.assert_code(0);
    assert_eq!(ok_text(&records[0]), "read through py__read_file\n");
    assert_eq!(ok_text(&records[1]), "would run: ls");
}

#[test]
fn python_sdk_multi_line_log_message_is_forwarded_line_by_line() {
    let Some(servers) = Servers::installed("python_sdk_multi_line_log_message_is_forwarded_line_by_line") else {
        return;
    };
    let project = python_names_project(&servers);
    let run = project.odek(&["ext", "call", "py__log_lines", "{}"]);
    run.assert_code(0);
    assert_eq!(run.stdout, "logged\n");
    let logged: Vec<&str> = run.stderr_lines().into_iter().filter(|line| line.starts_with("[py] info: ")).collect();
    assert_eq!(logged, ["[py] info: first line", "[py] info: second line", "[py] info: third line"], "{}", run.stderr);
}

#[test]
fn filesystem_server_tools_answer_through_odek_with_excluded_tools() {
    let Some(servers) = Servers::installed("filesystem_server_tools_answer_through_odek_with_excluded_tools") else {
        return;
    };
    let project = Project::new();
    let allowed = project.artifacts.display().to_string();
    std::fs::write(project.artifacts.join("note.txt"), "hello from the filesystem server\n").unwrap();
    let outside = project.artifacts.parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "not for the model\n").unwrap();
    // [beyond] exclude_tools drops listed tools before any check: an operator who does not want
    // the model to have some of a server's tools leaves them out.
    let mut entry = Servers::node_entry(&servers.filesystem(), &[&allowed]);
    entry["exclude_tools"] = json!(["read_file", "write_file", "search_files"]);
    let project = project.configure(&json!({ "mcp_servers": { "fs": entry } }));

    let (run, reports) = project.list_json();
    run.assert_code(0);
    let fs = report(&reports, "fs");
    assert_eq!(fs["status"], "ok");
    assert_eq!(
        strings(&fs["tools"]),
        vec![
            "fs__read_text_file",
            "fs__read_media_file",
            "fs__read_multiple_files",
            "fs__edit_file",
            "fs__create_directory",
            "fs__list_directory",
            "fs__list_directory_with_sizes",
            "fs__directory_tree",
            "fs__move_file",
            "fs__get_file_info",
            "fs__list_allowed_directories",
        ]
    );
    assert_eq!(fs["warnings"], json!([]), "no description trips the prompt-injection screen");

    let note = project.artifacts.join("note.txt").display().to_string();
    let picture = project.artifacts.join("pixel.png");
    std::fs::write(&picture, TINY_PNG).unwrap();
    let (run, records) = project.call_jsonl(&[
        json!({"tool": "fs__list_allowed_directories"}),
        json!({"tool": "fs__read_text_file", "arguments": {"path": note}}),
        json!({"tool": "fs__list_directory", "arguments": {"path": allowed}}),
        json!({"tool": "fs__create_directory", "arguments": {"path": format!("{allowed}/made")}}),
        json!({"tool": "fs__read_text_file", "arguments": {"path": outside.display().to_string()}}),
        json!({"tool": "fs__read_file", "arguments": {"path": note}}),
        json!({"tool": "fs__read_media_file", "arguments": {"path": picture.display().to_string()}}),
    ]);
    run.assert_code(0);
    assert_eq!(ok_text(&records[0]), format!("Allowed directories:\n{allowed}"));
    assert_eq!(ok_text(&records[1]), "hello from the filesystem server\n");
    assert_eq!(ok_text(&records[2]), "[FILE] note.txt\n[FILE] pixel.png");
    assert!(ok_text(&records[3]).starts_with("Successfully created directory "), "{}", records[3]);
    assert!(project.artifacts.join("made").is_dir());
    // The server confines itself to its allowed directory; odek reports its isError text.
    assert_eq!(
        error_text(&records[4]),
        format!(
            "mcpclient fs: tool read_text_file returned error: Access denied - path outside allowed directories: {} not in {allowed}",
            outside.display()
        )
    );
    assert_eq!(error_text(&records[5]), "tool \"fs__read_file\" not found", "excluded tools are not offered");
    // [beyond] The image is a metadata line; the server's structuredContent mirrors the content
    // array (base64 included) and is therefore not shown.
    assert_eq!(ok_text(&records[6]), "- image (image/png, 70 bytes)");
}

/// The Python server's `fail` and `write_report` through `odek ext call`: the tool error's
/// exact line, and the artifact line of a report whose file is where the ref says.
fn assert_tool_errors_and_artifacts(project: &Project) {
    let run = project.odek(&["ext", "call", "py__fail", r#"{"message": "disk on fire"}"#]);
    run.assert_code(1);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr_lines()
            .contains(&"odek: mcpclient py: tool fail returned error: Error executing tool fail: disk on fire"),
        "{}",
        run.stderr
    );

    let content = "line one\nline two\n";
    let run =
        project.odek(&["ext", "call", "py__write_report", &json!({"name": "weekly", "content": content}).to_string()]);
    run.assert_code(0);
    let sha256 = hex::encode(Sha256::digest(content));
    assert_eq!(
        run.stdout,
        format!(
            "Wrote report weekly (18 bytes).\n- artifact \"weekly\" (text/plain, 18 bytes, sha256 {}…): The full report\n",
            &sha256[..12]
        )
    );
    assert_eq!(std::fs::read_to_string(project.artifacts.join("weekly.txt")).unwrap(), content);
}

#[test]
fn python_sdk_server_lists_and_calls_through_odek() {
    let Some(servers) = Servers::installed("python_sdk_server_lists_and_calls_through_odek") else { return };
    let project = python_project(&servers, 30);
    let (run, reports) = project.list_json();
    run.assert_code(0);
    let py = report(&reports, "py");
    assert_eq!(py["status"], "ok");
    assert_eq!(py["protocol_version"], "2025-03-26");
    assert_eq!(strings(&py["tools"]), PYTHON_TOOLS);
    assert_eq!(py["warnings"], json!([]));

    // One stderr line per request from the SDK's logging, forwarded with the server's prefix.
    let run = project.odek(&["ext", "call", "py__add", r#"{"a": 2, "b": 40}"#]);
    run.assert_code(0);
    assert_eq!(run.stdout, "42\n");
    let mut lines = run.stderr_lines();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "[py] Processing request of type CallToolRequest",
            "[py] Processing request of type ListToolsRequest",
            "odek: connected MCP server \"py\" (15 tools)",
        ]
    );

    assert_tool_errors_and_artifacts(&project);
}

/// [beyond] What the official Python SDK produces for images, resource links, embedded resources
/// and structured content reaches the model as the model view says (before: the image, links and
/// resource were dropped, and forecast_summary's structuredContent never reached the model).
#[test]
fn python_sdk_server_images_links_and_structured_content_reach_the_model() {
    let Some(servers) = Servers::installed("python_sdk_server_images_links_and_structured_content_reach_the_model")
    else {
        return;
    };
    let project = python_project(&servers, 30);
    let (run, records) = project.call_jsonl(&[
        json!({"tool": "py__snapshot"}),
        json!({"tool": "py__find_files"}),
        json!({"tool": "py__weather", "arguments": {"city": "Paris"}}),
        json!({"tool": "py__forecast_summary", "arguments": {"city": "Paris"}}),
        json!({"tool": "py__add", "arguments": {"a": 1, "b": 2}}),
    ]);
    run.assert_code(0);
    assert_eq!(ok_text(&records[0]), "Here is the snapshot:\n- image (image/png, 70 bytes)");
    assert_eq!(
        ok_text(&records[1]),
        "Found 2 files.\n\
         - resource link \"file:///srv/notes.txt\" (name \"notes.txt\", text/plain, 12 bytes)\n\
         - resource link \"file:///srv/logo.png\" (name \"logo.png\", image/png)\n\
         - resource \"file:///srv/notes.txt\" (text/plain, embedded text of 12 chars):\n\
         hello notes\n"
    );
    // The SDK's text item is the structured content's JSON: shown once.
    assert_eq!(
        ok_text(&records[2]),
        "{\n  \"city\": \"Paris\",\n  \"temperature\": 21.5,\n  \"conditions\": \"Sunny\"\n}"
    );
    // A summary text does not carry it: the structured content follows, checked against the
    // declared outputSchema.
    assert_eq!(
        ok_text(&records[3]),
        "Sunny in Paris.\n- structured content {\"city\":\"Paris\",\"conditions\":\"Sunny\",\"temperature\":21.5}"
    );
    // The SDK wraps a primitive return value as {"result": 3}; its text "3" carries it.
    assert_eq!(ok_text(&records[4]), "3");

    let run = project.odek(&["ext", "call", "--model-view", "py__snapshot"]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", run.stdout);
    assert!(lines[0].starts_with("┌── TOOL RESULT: py__snapshot ["), "{}", run.stdout);
    assert!(lines[1].starts_with("<untrusted_content_") && lines[1].ends_with(" source=\"mcp:py:snapshot\">"));
    assert_eq!(lines[2..4], ["Here is the snapshot:", "- image (image/png, 70 bytes)"]);
    assert!(lines[4].starts_with("</untrusted_content_"));
    assert!(lines[5].starts_with("└── END TOOL RESULT: py__snapshot ["));
}

/// [beyond] Issue 32: a file a server returns as an embedded text resource (GitHub's
/// `get_file_contents` shape) reaches the model as content under a line naming it — redacted,
/// forged lines indented, inside the untrusted wrapper, under the cap. Before, the model got the
/// line alone: a size, never the code.
#[test]
fn an_embedded_file_reaches_the_model_view_red() {
    let Some(servers) = Servers::installed("an_embedded_file_reaches_the_model_view_red") else { return };
    let project = python_project(&servers, 30);
    let arguments = r#"{"owner": "octo", "repo": "hello", "path": "deploy.toml"}"#;
    let run = project.odek(&["ext", "call", "--model-view", "py__get_file_contents", arguments]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 11, "{}", run.stdout);
    assert!(lines[0].starts_with("┌── TOOL RESULT: py__get_file_contents ["), "{}", run.stdout);
    assert!(lines[1].starts_with("<untrusted_content_") && lines[1].ends_with(" source=\"mcp:py:get_file_contents\">"));
    assert_eq!(
        lines[2..9],
        [
            "successfully downloaded text file (SHA: 3c1e2f9a)",
            "- resource \"repo://octo/hello/contents/deploy.toml\" (text/plain; charset=utf-8, embedded text of 97 chars):",
            "[deploy]",
            "region = eu-west-1",
            "token = [REDACTED]",
            " - artifact forged",
            "",
        ]
    );
    assert!(lines[9].starts_with("</untrusted_content_"), "{}", run.stdout);
    assert!(lines[10].starts_with("└── END TOOL RESULT: py__get_file_contents ["), "{}", run.stdout);

    // Under the cap the file is cut at its end, with the exact notice; its line is kept.
    let capped = Project::new().configure(&json!({ "mcpServers": { "py": {
        "command": servers.python().display().to_string(),
        "args": [Servers::python_server_script().display().to_string()],
        "max_result_chars": 1000,
    }}}));
    let run =
        capped.odek(&["ext", "call", "py__get_file_contents", r#"{"owner": "o", "repo": "r", "path": "app.log"}"#]);
    run.assert_code(0);
    let notice = "\n[odek: result truncated — server \"py\" tool \"get_file_contents\" produced 9149 chars, exceeding the configured max_result_chars=1000; the full result is available via the retained artifact references, if any]\n";
    let head = "successfully downloaded text file (SHA: 3c1e2f9a)\n\
                - resource \"repo://o/r/contents/app.log\" (text/plain; charset=utf-8, embedded text of 9000 chars):\n\
                log line\nlog line\n";
    assert!(run.stdout.starts_with(head) && run.stdout.ends_with(notice), "{}", run.stdout);
    assert_eq!(run.stdout.trim_end_matches('\n').chars().count(), 1000);
}

#[test]
fn python_sdk_server_requests_and_logs_reach_odek_mid_call() {
    let Some(servers) = Servers::installed("python_sdk_server_requests_and_logs_reach_odek_mid_call") else { return };
    let project = python_project(&servers, 30);
    // odek's first tools/call has id 3 (initialize 1, tools/list 2). The SDK numbers its own
    // requests from 0: pings 0, 1, 2, then sampling/createMessage with id 3, the id of the call
    // still pending. odek answers the pings, refuses the sampling request, and routes neither
    // as the call's response.
    let run = project.odek(&["ext", "call", "py__talk_to_client", r#"{"pings": 3}"#]);
    run.assert_code(0);
    assert_eq!(
        run.stdout,
        "3 ping(s) answered; sampling/createMessage refused with MCP error -32601: method not found\n"
    );
    let lines = run.stderr_lines();
    assert!(lines.contains(&"[py] info: talking to the client"), "{lines:?}");
    assert!(lines.contains(&r#"[py] warning: {"of":2,"step":1}"#), "{lines:?}");
}

#[test]
fn python_sdk_server_timeout_crash_and_tool_list_changes_in_one_session() {
    let Some(servers) = Servers::installed("python_sdk_server_timeout_crash_and_tool_list_changes_in_one_session")
    else {
        return;
    };
    // Shorter than the sleep below; the handshake has the start-up deadline, not this.
    let project = python_project(&servers, 5);
    let (run, records) = project.call_jsonl(&[
        json!({"tool": "py__pid"}),
        json!({"tool": "py__sleep", "arguments": {"seconds": 8}}),
        json!({"tool": "py__echo", "arguments": {"text": "after the timeout"}}),
        json!({"tool": "py__pid"}),
        json!({"tool": "py__crash", "arguments": {"code": 7}}),
        json!({"tool": "py__pid"}),
        json!({"tool": "py__extra"}),
        json!({"tool": "py__grow"}),
        json!({"tool": "py__extra"}),
        json!({"tool": "py__retire", "arguments": {"tool": "echo"}}),
        json!({"tool": "py__echo", "arguments": {"text": "anyone?"}}),
        // Arguments that are not JSON go out as a JSON string, which the SDK cannot parse.
        json!({"tool": "py__add", "arguments": "{\"a\": 1, \"b\": "}),
    ]);
    run.assert_code(0);
    let first_pid = ok_text(&records[0]);
    assert_eq!(
        error_text(&records[1]),
        "mcpclient py: tools/call: MCP request outcome unknown after dispatch; verify remote state before \
         retrying: context deadline exceeded (timeout_seconds: 5)"
    );
    assert_eq!(ok_text(&records[2]), "after the timeout");
    assert_eq!(ok_text(&records[3]), first_pid, "the timed-out server was reused");
    assert_eq!(
        error_text(&records[4]),
        "mcpclient py: tools/call: MCP request outcome unknown after dispatch; verify remote state before \
         retrying: connection closed before response received"
    );
    let second_pid = ok_text(&records[5]);
    assert_ne!(second_pid, first_pid, "the crashed server was restarted");
    assert!(
        run.stderr_lines().contains(&"odek: restarted MCP server \"py\" after exit status 7 (restart 1 of 3)"),
        "{}",
        run.stderr
    );
    assert_eq!(error_text(&records[6]), "tool \"py__extra\" not found");
    assert_eq!(ok_text(&records[7]), "extra added");
    assert_eq!(ok_text(&records[8]), "extra called", "list_changed made odek re-list");
    assert_eq!(ok_text(&records[9]), "echo removed");
    assert_eq!(error_text(&records[10]), "mcpclient py: tool echo returned error: Unknown tool: echo");
    assert_eq!(error_text(&records[11]), "mcpclient py: tools/call: MCP error -32602: Invalid request parameters");
}

/// [beyond] The same Python SDK server over Streamable HTTP (issue 19): the listing, results,
/// tool errors, artifacts and the model view are what stdio gives, and the server's own
/// requests and log messages mid-call come on the call's event stream and are answered by POST.
#[test]
fn python_sdk_server_over_streamable_http_lists_and_calls_through_odek() {
    let Some(servers) = Servers::installed("python_sdk_server_over_streamable_http_lists_and_calls_through_odek")
    else {
        return;
    };
    let project = Project::new();
    let server = support::python_http(&servers, &project.artifacts);
    let artifacts = project.artifacts.display().to_string();
    let project = project.configure(&json!({ "mcp_servers": { "py": {
        "url": server.url, "artifact_roots": [artifacts], "timeout_seconds": 30,
    }}}));
    let (run, reports) = project.list_json();
    run.assert_code(0);
    let py = report(&reports, "py");
    assert_eq!(py["status"], "ok", "{}", run.stderr);
    assert_eq!(py["url"], server.url);
    assert_eq!(py["protocol_version"], "2025-03-26");
    assert_eq!(strings(&py["tools"]), PYTHON_TOOLS);
    assert_eq!(py["warnings"], json!([]));

    let run = project.odek(&["ext", "call", "py__add", r#"{"a": 2, "b": 40}"#]);
    run.assert_code(0);
    assert_eq!(run.stdout, "42\n");

    assert_tool_errors_and_artifacts(&project);

    let run = project.odek(&["ext", "call", "py__talk_to_client", r#"{"pings": 3}"#]);
    run.assert_code(0);
    assert_eq!(
        run.stdout,
        "3 ping(s) answered; sampling/createMessage refused with MCP error -32601: method not found\n"
    );
    let lines = run.stderr_lines();
    assert!(lines.contains(&"[py] info: talking to the client"), "{lines:?}");

    let run = project.odek(&["ext", "call", "--model-view", "py__snapshot"]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", run.stdout);
    assert_eq!(lines[2..4], ["Here is the snapshot:", "- image (image/png, 70 bytes)"]);
}

/// [beyond] `@modelcontextprotocol/server-everything` over Streamable HTTP and over the deprecated
/// HTTP+SSE transport (`"type": "sse"`) (issue 19): the same tools as over stdio, results, a tool
/// error, progress that keeps a long operation alive past its timeout, and a timeout without it.
#[test]
fn everything_server_over_streamable_http_and_legacy_sse_answers_through_odek() {
    let Some(servers) =
        Servers::installed("everything_server_over_streamable_http_and_legacy_sse_answers_through_odek")
    else {
        return;
    };
    for mode in ["streamableHttp", "sse"] {
        let server = support::everything_http(&servers, mode);
        let kind = if mode == "sse" { "sse" } else { "http" };
        let project = Project::new().configure(&json!({ "mcp_servers": { "everything": {
            "type": kind, "url": server.url, "timeout_seconds": 3,
        }}}));
        let (run, reports) = project.list_json();
        run.assert_code(0);
        let everything = report(&reports, "everything");
        assert_eq!(everything["status"], "ok", "{mode}: {}", run.stderr);
        assert_eq!(strings(&everything["tools"]), EVERYTHING_TOOLS);
        assert_eq!(everything["warnings"], json!([]));

        let (run, records) = project.call_jsonl(&[
            json!({"tool": "everything__echo", "arguments": {"message": "hello over http"}}),
            json!({"tool": "everything__get-sum", "arguments": {"a": 2, "b": 3}}),
            json!({"tool": "everything__get-tiny-image", "arguments": {}}),
            json!({"tool": "everything__echo", "arguments": {}}),
            json!({"tool": "everything__trigger-long-running-operation", "arguments": {"duration": 4, "steps": 8}}),
            json!({"tool": "everything__trigger-long-running-operation", "arguments": {"duration": 4, "steps": 1}}),
            json!({"tool": "everything__echo", "arguments": {"message": "still here"}}),
        ]);
        run.assert_code(0);
        assert_eq!(ok_text(&records[0]), "Echo: hello over http", "{mode}");
        assert_eq!(ok_text(&records[1]), "The sum of 2 and 3 is 5.");
        assert_eq!(
            ok_text(&records[2]),
            "Here's the image you requested:\nThe image above is the MCP logo.\n- image (image/png, 4033 bytes)"
        );
        assert_eq!(
            error_text(&records[3]),
            "mcpclient everything: tool echo returned error: MCP error -32602: Input validation error: \
             Invalid arguments for tool echo: Invalid input: expected string, received undefined at message"
        );
        assert_eq!(ok_text(&records[4]), "Long running operation completed. Duration: 4 seconds, Steps: 8.", "{mode}");
        assert_eq!(
            error_text(&records[5]),
            "mcpclient everything: tools/call: MCP request outcome unknown after dispatch; verify remote state \
             before retrying: context deadline exceeded (timeout_seconds: 3)"
        );
        assert_eq!(ok_text(&records[6]), "Echo: still here", "{mode}");
    }
}

/// [beyond] Issue 32 item 5: `@modelcontextprotocol/server-everything` serving one HTTP transport
/// while the entry names the other: the error says so and names the `type` to set, and shows no
/// HTML page.
#[test]
fn everything_server_behind_the_wrong_http_type_names_the_type_to_set() {
    let Some(servers) = Servers::installed("everything_server_behind_the_wrong_http_type_names_the_type_to_set") else {
        return;
    };
    for (mode, configured, error) in [
        (
            "sse",
            "http",
            "initialize: http 404: [an HTML page, not shown]; the url serves the deprecated HTTP+SSE transport \
             (a GET opens its event stream): set \"type\": \"sse\" in the server's entry",
        ),
        (
            "streamableHttp",
            "sse",
            "initialize: MCP request not dispatched: the url answered the event stream's GET with http 400, so it \
             is no HTTP+SSE endpoint; if it is a Streamable HTTP endpoint, set \"type\": \"http\"",
        ),
    ] {
        let server = support::everything_http(&servers, mode);
        let project = Project::new().configure(&json!({ "mcp_servers": { "everything": {
            "type": configured, "url": server.url, "timeout_seconds": 5,
        }}}));
        let run = project.odek(&["ext", "list"]);
        run.assert_code(1);
        let expected = format!("odek: mcp server \"everything\": mcpclient everything: {error}");
        assert!(run.stderr_lines().contains(&expected.as_str()), "{mode}: {}", run.stderr);
    }
}

/// [beyond] `@modelcontextprotocol/server-everything`'s instructions and resources (issue 19
/// item 3), over stdio and Streamable HTTP: `odek ext list` says it sent instructions and offers
/// resources; `list_mcp_resources` gives one line per listed document, `read_mcp_resource` a
/// document's text inside the server's wrapper and a blob as its metadata line only; an unknown
/// uri is the server's own error.
#[test]
fn everything_server_instructions_and_resources_reach_the_model() {
    let Some(servers) = Servers::installed("everything_server_instructions_and_resources_reach_the_model") else {
        return;
    };
    let http = support::everything_http(&servers, "streamableHttp");
    let projects = [
        ("stdio", everything_project(&servers, &json!({}))),
        ("http", Project::new().configure(&json!({ "mcp_servers": { "everything": { "url": http.url } } }))),
    ];
    for (transport, project) in projects {
        let (run, reports) = project.list_json();
        run.assert_code(0);
        let everything = report(&reports, "everything");
        assert_eq!((everything["instructions"].as_bool(), everything["resources"].as_bool()), (Some(true), Some(true)));

        let document = "demo://resource/static/document/architecture.md";
        let (run, records) = project.call_jsonl(&[
            json!({"tool": "list_mcp_resources", "arguments": {}}),
            json!({"tool": "read_mcp_resource", "arguments": {"server": "everything", "uri": document}}),
            json!({"tool": "read_mcp_resource", "arguments": {"uri": "demo://resource/dynamic/blob/1"}}),
            json!({"tool": "read_mcp_resource", "arguments": {"uri": "demo://nothing/here"}}),
        ]);
        run.assert_code(0);
        let listing = ok_text(&records[0]);
        assert!(listing.starts_with("MCP server \"everything\" lists "), "{transport}: {listing}");
        assert!(
            listing.contains(&format!("\n- \"{document}\" (name \"architecture.md\", text/markdown): ")),
            "{transport}: {listing}"
        );
        assert!(ok_text(&records[1]).starts_with("# Everything Server"), "{transport}: {}", ok_text(&records[1]));
        let blob = ok_text(&records[2]);
        assert!(blob.starts_with("- resource \"demo://resource/dynamic/blob/1\" ("), "{transport}: {blob}");
        assert!(blob.ends_with(" bytes)") && !blob.contains('\n'), "{transport}: {blob}");
        assert!(
            error_text(&records[3]).starts_with("mcpclient everything: resources/read: MCP error "),
            "{transport}: {}",
            error_text(&records[3])
        );
    }
}
