//! Approval keys (spec `config.md` §13.3): every hashed field changes the key; nothing else does.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns too.

use std::collections::BTreeSet;
use std::path::Path;

use odek::approvals::{server_approval_key, tool_approval_key};
use odek_mcp::server_config::ServerEntry;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn base_entry() -> ServerEntry {
    ServerEntry {
        command: Some("fs-mcp".into()),
        args: vec!["--root".into(), "/srv".into()],
        env: [("LOG".to_owned(), "1".to_owned()), ("MODE".to_owned(), "ro".to_owned())].into(),
        timeout_seconds: 60,
        max_response_bytes: 1024,
        max_result_chars: 5000,
        artifact_roots: vec!["/srv/out".into(), "/tmp/a".into()],
        ..ServerEntry::default()
    }
}

fn base_schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}})
}

struct Variant {
    what: &'static str,
    dir: &'static str,
    server: &'static str,
    entry: ServerEntry,
}

fn variant(what: &'static str, change: impl FnOnce(&mut ServerEntry)) -> Variant {
    let mut entry = base_entry();
    change(&mut entry);
    Variant { what, dir: "/work/p", server: "fs", entry }
}

fn server_variants() -> Vec<Variant> {
    vec![
        variant("base", |_| {}),
        Variant { what: "dir", dir: "/work/q", server: "fs", entry: base_entry() },
        Variant { what: "server", dir: "/work/p", server: "fs2", entry: base_entry() },
        variant("command", |e| e.command = Some("fs-mcp2".into())),
        variant("first arg", |e| e.args[0] = "--rootx".into()),
        variant("second arg", |e| e.args[1] = "/".into()),
        variant("extra arg", |e| e.args.push(String::new())),
        variant("fewer args", |e| _ = e.args.pop()),
        variant("args joined differently", |e| {
            e.args = vec!["--root /srv".into()];
        }),
        variant("env key", |e| {
            let value = e.env.remove("LOG").unwrap();
            e.env.insert("LOG2".into(), value);
        }),
        variant("env value", |e| _ = e.env.insert("LOG".into(), "2".into())),
        variant("extra env", |e| _ = e.env.insert("X".into(), String::new())),
        variant("env key/value boundary", |e| {
            e.env.clear();
            e.env.insert("LOG1".into(), String::new());
            e.env.insert("MODE".into(), "ro".into());
        }),
        variant("timeout_seconds", |e| e.timeout_seconds = 61),
        variant("timeout_seconds absent", |e| e.timeout_seconds = 0),
        variant("max_response_bytes", |e| e.max_response_bytes = 1025),
        variant("max_result_chars", |e| e.max_result_chars = 5001),
        variant("root changed", |e| e.artifact_roots[0] = "/srv".into()),
        variant("root added", |e| e.artifact_roots.push("/".into())),
        variant("root removed", |e| _ = e.artifact_roots.pop()),
        variant("url", |e| e.url = Some("https://mcp.example".into())),
    ]
}

#[test]
fn every_hashed_server_field_changes_the_key() {
    let mut seen = BTreeSet::new();
    for v in server_variants() {
        let key = server_approval_key(Path::new(v.dir), v.server, &v.entry);
        assert!(seen.insert(key), "{} did not change the server key", v.what);
    }
}

#[test]
fn every_hashed_field_changes_the_tool_key() {
    let mut seen = BTreeSet::new();
    for v in server_variants() {
        let key = tool_approval_key(Path::new(v.dir), v.server, &v.entry, "read", &base_schema(), "Reads.");
        assert!(seen.insert(key), "{} did not change the tool key", v.what);
    }
    let dir = Path::new("/work/p");
    let entry = base_entry();
    for (what, tool, schema, description) in [
        ("tool", "read2", base_schema(), "Reads."),
        ("schema", "read", json!({"type": "object"}), "Reads."),
        ("schema value", "read", json!({"type": "object", "properties": {"path": {"type": "integer"}}}), "Reads."),
        ("description", "read", base_schema(), "Reads. "),
        ("empty description", "read", base_schema(), ""),
    ] {
        let key = tool_approval_key(dir, "fs", &entry, tool, &schema, description);
        assert!(seen.insert(key), "{what} did not change the tool key");
    }
    // A server key never equals a tool key of the same server.
    assert!(!seen.contains(&server_approval_key(dir, "fs", &entry)));
}

#[test]
fn http_keys_hash_url_and_token_env() {
    let http = ServerEntry {
        url: Some("https://mcp.example/mcp".into()),
        token_env: Some("MCP_TOKEN".into()),
        ..ServerEntry::default()
    };
    let dir = Path::new("/work/p");
    let base = server_approval_key(dir, "web", &http);
    let other_url = ServerEntry { url: Some("https://evil.example/mcp".into()), ..http.clone() };
    let other_token = ServerEntry { token_env: Some("OTHER_TOKEN".into()), ..http.clone() };
    let no_token = ServerEntry { token_env: None, ..http.clone() };
    for changed in [other_url, other_token, no_token] {
        assert_ne!(server_approval_key(dir, "web", &changed), base);
    }
    // With a url the (ignored) command and args are not part of the key.
    let with_command = ServerEntry { command: Some("x".into()), args: vec!["y".into()], ..http };
    assert_eq!(server_approval_key(dir, "web", &with_command), base);
}

#[test]
fn fields_outside_the_key_do_not_change_it() {
    let dir = Path::new("/work/p");
    let base = server_approval_key(dir, "fs", &base_entry());
    let mut entry = base_entry();
    entry.auto_approve = true;
    entry.enabled = Some(true);
    entry.artifact_roots.reverse();
    entry.token_env = Some("IGNORED_FOR_STDIO".into());
    assert_eq!(server_approval_key(dir, "fs", &entry), base);
    assert_eq!(server_approval_key(dir, "fs", &ServerEntry { url: Some(String::new()), ..base_entry() }), base);

    let reordered = json!({"properties": {"path": {"type": "string"}}, "type": "object"});
    assert_eq!(
        tool_approval_key(dir, "fs", &base_entry(), "read", &reordered, "d"),
        tool_approval_key(dir, "fs", &base_entry(), "read", &base_schema(), "d")
    );
}

#[test]
fn tool_key_matches_the_spec_encoding() {
    let entry = ServerEntry { command: Some("c".into()), ..ServerEntry::default() };
    let schema = json!({"type": "object"});
    let schema_hex = hex::encode(Sha256::digest(br#"{"type":"object"}"#));
    let mut bytes = Vec::new();
    for (label, value) in [
        ("dir", "/d"),
        ("server", "s"),
        ("command", "c"),
        ("timeout_seconds", "0"),
        ("max_response_bytes", "0"),
        ("max_result_chars", "0"),
        ("tool", "t"),
        ("schema", schema_hex.as_str()),
        ("description", "héllo"),
    ] {
        bytes.extend_from_slice(label.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(value.len().to_string().as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(value.as_bytes());
    }
    assert_eq!(
        tool_approval_key(Path::new("/d"), "s", &entry, "t", &schema, "héllo"),
        hex::encode(Sha256::digest(&bytes))
    );
}
