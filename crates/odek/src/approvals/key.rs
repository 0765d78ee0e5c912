//! Approval keys (spec `config.md` §13.3): SHA-256 over labelled fields, each encoded as
//! `<label>` 0x00 `<decimal byte length of value>` 0x00 `<value>`, in a fixed order. Any change
//! to a hashed field yields a different key and so re-prompts. `auto_approve` and `enabled` are
//! never hashed.
//!
//! Field order: `dir`, `server`; stdio `command` + one `arg` per argument, or HTTP `url` +
//! `token_env`; `env`/`envval` per variable in ascending byte order of name (for both
//! transports, as the spec lists it unconditionally); the three limit fields as configured
//! (before defaulting or clamping); one `artifact_root` per root in ascending byte order;
//! \[beyond\] `cwd` after the arguments, when set; \[beyond\] one `secret_env` per `secret_env`
//! name in ascending byte order — names only, so a
//! rotated token does not re-prompt, and nothing at all when there are none, so every key of an
//! entry without `secret_env` is the spec's; and for tool keys `tool`, `schema` (hex SHA-256 of
//! the canonical schema JSON), `description`; \[beyond\] for the approval to run a server
//! unconfined, `sandbox` = `unconfined` after the server's fields.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use odek_contract::canonical_json::to_canonical_string;
use odek_mcp::server_config::ServerEntry;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The key of a project server approval, as stored in `mcp_approvals.json`.
pub fn server_approval_key(cwd: &Path, server: &str, entry: &ServerEntry) -> String {
    let mut key = KeyHasher::default();
    key.server_fields(cwd, server, entry);
    key.finish()
}

/// \[beyond\] The key of a project server approved to run unconfined (issue 32), stored in
/// `mcp_approvals.json` beside the others: the server key's fields and then `sandbox` =
/// `unconfined`, so it never equals a server key and a changed entry asks again.
pub fn unconfined_server_approval_key(cwd: &Path, server: &str, entry: &ServerEntry) -> String {
    let mut key = KeyHasher::default();
    key.server_fields(cwd, server, entry);
    key.field("sandbox", b"unconfined");
    key.finish()
}

/// The key of one tool approval, as stored in `mcp_tool_approvals.json`.
pub fn tool_approval_key(
    cwd: &Path,
    server: &str,
    entry: &ServerEntry,
    tool: &str,
    input_schema: &Value,
    description: &str,
) -> String {
    let mut key = KeyHasher::default();
    key.server_fields(cwd, server, entry);
    key.field("tool", tool.as_bytes());
    key.field("schema", SchemaDigest::of(input_schema).hex.as_bytes());
    key.field("description", description.as_bytes());
    key.finish()
}

#[derive(Default)]
struct KeyHasher(Sha256);

impl KeyHasher {
    fn field(&mut self, label: &str, value: &[u8]) {
        self.0.update(label.as_bytes());
        self.0.update([0]);
        self.0.update(value.len().to_string().as_bytes());
        self.0.update([0]);
        self.0.update(value);
    }

    fn server_fields(&mut self, cwd: &Path, server: &str, entry: &ServerEntry) {
        self.field("dir", cwd.as_os_str().as_bytes());
        self.field("server", server.as_bytes());
        match ServerLaunch::of(entry) {
            ServerLaunch::Http { url, token_env } => {
                self.field("url", url.as_bytes());
                self.field("token_env", token_env.as_bytes());
                // \[beyond\] Header names and values, ascending by name: a project that changes
                // what odek sends is asked about again.
                for (name, value) in &entry.headers {
                    self.field("header", name.as_bytes());
                    self.field("headerval", value.expose().as_bytes());
                }
                if entry.allow_insecure_http {
                    self.field("allow_insecure_http", b"true");
                }
                if entry.kind.as_deref() == Some("sse") {
                    self.field("type", b"sse");
                }
            }
            ServerLaunch::Stdio { command, args } => {
                self.field("command", command.as_bytes());
                for arg in args {
                    self.field("arg", arg.as_bytes());
                }
                // \[beyond\] Only when set, so every other key stays the spec's.
                if let Some(cwd) = entry.cwd.as_deref().filter(|cwd| !cwd.is_empty()) {
                    self.field("cwd", cwd.as_bytes());
                }
            }
        }
        // `env` is a BTreeMap<String, _>: iteration is ascending byte order of the name.
        for (name, value) in &entry.env {
            self.field("env", name.as_bytes());
            self.field("envval", value.as_bytes());
        }
        for (label, value) in [
            ("timeout_seconds", entry.timeout_seconds),
            ("max_response_bytes", entry.max_response_bytes),
            ("max_result_chars", entry.max_result_chars),
        ] {
            self.field(label, value.to_string().as_bytes());
        }
        let mut roots: Vec<&str> = entry.artifact_roots.iter().map(String::as_str).collect();
        roots.sort_unstable();
        for root in roots {
            self.field("artifact_root", root.as_bytes());
        }
        for name in entry.secret_env.keys() {
            self.field("secret_env", name.as_bytes());
        }
    }

    fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// How an entry launches its server, by the same rule as validation: a non-empty `url` wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerLaunch<'a> {
    Stdio { command: &'a str, args: &'a [String] },
    Http { url: &'a str, token_env: &'a str },
}

impl<'a> ServerLaunch<'a> {
    pub(crate) fn of(entry: &'a ServerEntry) -> Self {
        match entry.url.as_deref() {
            Some(url) if !url.is_empty() => {
                ServerLaunch::Http { url, token_env: entry.token_env.as_deref().unwrap_or_default() }
            }
            _ => ServerLaunch::Stdio { command: entry.command.as_deref().unwrap_or_default(), args: &entry.args },
        }
    }
}

/// SHA-256 of a schema's canonical JSON, and that JSON's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaDigest {
    /// Lowercase hex SHA-256 (64 characters).
    pub hex: String,
    /// Length of the canonical JSON in bytes.
    pub len: usize,
}

impl SchemaDigest {
    /// The digest of `schema` in canonical JSON (sorted keys, compact).
    pub fn of(schema: &Value) -> Self {
        let canonical = to_canonical_string(schema);
        SchemaDigest { hex: hex::encode(Sha256::digest(canonical.as_bytes())), len: canonical.len() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_is_sha256_of_the_labelled_field_encoding() {
        let entry = ServerEntry {
            command: Some("srv".into()),
            args: vec!["-v".into()],
            env: [("B".to_owned(), "2".to_owned()), ("A".to_owned(), "1".to_owned())].into(),
            artifact_roots: vec!["/z".into(), "/a".into()],
            timeout_seconds: 7,
            ..ServerEntry::default()
        };
        let mut expected = Vec::new();
        for (label, value) in [
            ("dir", "/work"),
            ("server", "fs"),
            ("command", "srv"),
            ("arg", "-v"),
            ("env", "A"),
            ("envval", "1"),
            ("env", "B"),
            ("envval", "2"),
            ("timeout_seconds", "7"),
            ("max_response_bytes", "0"),
            ("max_result_chars", "0"),
            ("artifact_root", "/a"),
            ("artifact_root", "/z"),
        ] {
            expected.extend_from_slice(format!("{label}\0{}\0{value}", value.len()).as_bytes());
        }
        assert_eq!(server_approval_key(Path::new("/work"), "fs", &entry), hex::encode(Sha256::digest(&expected)));
    }

    #[test]
    fn schema_digest_is_over_canonical_json() {
        let digest = SchemaDigest::of(&json!({"type": "object"}));
        assert_eq!(digest.len, r#"{"type":"object"}"#.len());
        assert_eq!(digest.hex, hex::encode(Sha256::digest(br#"{"type":"object"}"#)));
    }
}
