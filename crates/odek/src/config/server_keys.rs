//! The keys of one `mcp_servers.<name>` entry as written, checked at the JSON level before the
//! entry is decoded: \[beyond\] the keys other agent CLIs write (Codex's `disabled_tools` and
//! `startup_timeout_sec`, Gemini CLI's `excludeTools`, Cline's `disabled`, the `timeout` whose unit
//! they disagree on…) honoured where their meaning is clear or named in a warning
//! ([`adopt_other_clients_keys`]); a warning for an unknown key that looks like a typo of a known
//! one (edit distance ≤ 2, [`likely_typo_of`]); and the keys of the `.mcp.json` format whose
//! meaning depends on the entry, `type` and `headers` ([`check_foreign_keys`]). Every other
//! unknown key stays silently ignored (the additive rule).
//!
//! Start at [`check_server_entries`]; it runs on every file (global, `./odek.json`,
//! `./.mcp.json`) with the file's display path.

use odek_contract::quoting::quote;
use serde_json::{Map, Value};

use super::mcp_servers::SERVER_MAP_KEYS;
use super::substitution::Trust;

/// Every key odek reads in a server entry: the fields of `ServerEntry`, then `type` (read here,
/// never decoded).
pub const SERVER_ENTRY_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "token_env",
    "timeout_seconds",
    "startup_timeout_seconds",
    "max_response_bytes",
    "max_result_chars",
    "artifact_roots",
    "enabled",
    "auto_approve",
    "exclude_tools",
    "required",
    "secret_env",
    "headers",
    "allow_insecure_http",
    "oauth",
    "sandbox",
    "writable",
    "protocol_version",
    "type",
];

/// The `type` values odek can serve: a child process, a Streamable HTTP `url`, or \[beyond\] a
/// `url` speaking the deprecated HTTP+SSE transport.
pub const SUPPORTED_SERVER_TYPES: &[&str] = &["stdio", "http", "sse"];

/// Keys a project file's typo is never taken for: the project may not set them (`auto_approve`
/// is stripped, §13.4), so suggesting one would only invite a key that is thrown away.
const OPERATOR_ONLY_SERVER_KEYS: &[&str] = &["auto_approve"];

/// Largest edit distance at which an unknown key is taken for a typo.
const MAX_TYPO_DISTANCE: usize = 2;

/// Checks every server entry of every server map of `top`: typo warnings, then the `type` and
/// `headers` rules. An entry whose `type` odek cannot serve is removed (with its warning).
pub(crate) fn check_server_entries(
    display: &str,
    top: &mut Map<String, Value>,
    trust: Trust,
    warnings: &mut Vec<String>,
) {
    for map_key in SERVER_MAP_KEYS {
        let Some(Value::Object(servers)) = top.get_mut(*map_key) else {
            continue;
        };
        servers.retain(|name, entry| {
            let Value::Object(fields) = entry else {
                return true;
            };
            adopt_other_clients_keys(display, name, fields, warnings);
            warn_about_typos(display, name, fields, trust, warnings);
            check_foreign_keys(display, name, fields, warnings)
        });
    }
}

/// What odek does with a key other agent CLIs write in a server entry.
#[derive(Debug, Clone, Copy)]
enum OtherClientsKey {
    /// Tool names appended to `exclude_tools` (Codex `disabled_tools`, Gemini CLI
    /// `excludeTools`).
    ExcludeTools,
    /// Seconds into the named odek key, rounded up, unless that key is set (Codex
    /// `startup_timeout_sec`, `tool_timeout_sec`).
    Seconds(&'static str),
    /// Milliseconds into the named odek key, rounded up to whole seconds (Codex
    /// `startup_timeout_ms`).
    Milliseconds(&'static str),
    /// `true` means `"enabled": false` (Cline, Roo Code).
    Disabled,
    /// The Streamable HTTP url (Gemini CLI `httpUrl`), into `url` unless that is set.
    HttpUrl,
    /// Not read; the warning says why and what to set instead.
    Unread(&'static str),
}

/// The keys of other agent CLIs' server entries that mean something odek can honour, or that
/// it must say it does not (never silently ignored). `cwd` is one of odek's own keys.
const OTHER_CLIENTS_KEYS: &[(&str, OtherClientsKey)] = &[
    ("disabled_tools", OtherClientsKey::ExcludeTools),
    ("excludeTools", OtherClientsKey::ExcludeTools),
    ("startup_timeout_sec", OtherClientsKey::Seconds("startup_timeout_seconds")),
    ("tool_timeout_sec", OtherClientsKey::Seconds("timeout_seconds")),
    ("startup_timeout_ms", OtherClientsKey::Milliseconds("startup_timeout_seconds")),
    ("disabled", OtherClientsKey::Disabled),
    ("httpUrl", OtherClientsKey::HttpUrl),
    (
        "timeout",
        OtherClientsKey::Unread(
            "clients disagree on its unit (milliseconds in Gemini CLI, seconds in Cline); set \"timeout_seconds\" (each request) or \"startup_timeout_seconds\"",
        ),
    ),
    (
        "enabled_tools",
        OtherClientsKey::Unread("odek cannot keep only some tools of a server; list the others in \"exclude_tools\""),
    ),
    (
        "includeTools",
        OtherClientsKey::Unread("odek cannot keep only some tools of a server; list the others in \"exclude_tools\""),
    ),
    ("alwaysAllow", OtherClientsKey::Unread("odek asks about each tool once and remembers the answer")),
    ("trust", OtherClientsKey::Unread("odek asks about each tool once and remembers the answer")),
];

/// \[beyond\] Applies [`OTHER_CLIENTS_KEYS`] to one entry: each such key is taken out and its
/// meaning moved to odek's key, or a warning names it. A value of the wrong type is ignored with a
/// warning; odek's own key, when set, wins (with a warning).
fn adopt_other_clients_keys(display: &str, name: &str, fields: &mut Map<String, Value>, warnings: &mut Vec<String>) {
    let server = quote(name);
    for (key, meaning) in OTHER_CLIENTS_KEYS {
        let Some(value) = fields.remove(*key) else { continue };
        let mut warn = |text: String| warnings.push(format!("{display}: mcp server {server}: {}: {text}", quote(key)));
        let own_set = |fields: &Map<String, Value>, own: &str| fields.get(own).is_some_and(|value| !value.is_null());
        match meaning {
            OtherClientsKey::ExcludeTools => {
                let Some(names) = value.as_array().filter(|names| names.iter().all(Value::is_string)) else {
                    warn("not a list of tool names; ignored".to_owned());
                    continue;
                };
                let exclude = fields.entry("exclude_tools").or_insert_with(|| Value::Array(Vec::new()));
                match exclude {
                    Value::Array(excluded) => {
                        for tool in names {
                            if !excluded.contains(tool) {
                                excluded.push(tool.clone());
                            }
                        }
                    }
                    // `exclude_tools` of the wrong type: the typed decode refuses it by name.
                    _ => continue,
                }
            }
            OtherClientsKey::Seconds(own) | OtherClientsKey::Milliseconds(own) => {
                let per_second = if matches!(meaning, OtherClientsKey::Milliseconds(_)) { 1000.0 } else { 1.0 };
                let Some(amount) = value.as_f64().filter(|amount| amount.is_finite()) else {
                    warn("not a number; ignored".to_owned());
                    continue;
                };
                if own_set(fields, own) {
                    warn(format!("ignored: {} is set", quote(own)));
                    continue;
                }
                // Rounded up: a fraction of a second still gets its second. Saturating cast.
                let seconds = (amount / per_second).ceil() as i64;
                fields.insert((*own).to_owned(), Value::from(seconds));
            }
            OtherClientsKey::Disabled => match value {
                Value::Bool(disabled) if own_set(fields, "enabled") => {
                    if fields.get("enabled").and_then(Value::as_bool) == Some(disabled) {
                        warn("ignored: \"enabled\" is set and says otherwise".to_owned());
                    }
                }
                Value::Bool(disabled) => {
                    fields.insert("enabled".to_owned(), Value::Bool(!disabled));
                }
                Value::Null => {}
                _ => warn("not a boolean; ignored".to_owned()),
            },
            OtherClientsKey::HttpUrl => match value {
                Value::String(_) if has_url(fields) => warn("ignored: \"url\" is set".to_owned()),
                Value::String(url) => {
                    fields.insert("url".to_owned(), Value::String(url));
                }
                _ => warn("not a string; ignored".to_owned()),
            },
            OtherClientsKey::Unread(why) => warn(format!("not read ({why})")),
        }
    }
}

/// Whether an entry has a non-empty `url` (which, when set, is the transport the entry uses).
fn has_url(entry: &Map<String, Value>) -> bool {
    entry.get("url").and_then(Value::as_str).is_some_and(|url| !url.is_empty())
}

/// One warning per unknown key within [`MAX_TYPO_DISTANCE`] of a known key, naming the closest
/// (in a project file, never one of [`OPERATOR_ONLY_SERVER_KEYS`]).
fn warn_about_typos(display: &str, name: &str, fields: &Map<String, Value>, trust: Trust, warnings: &mut Vec<String>) {
    for key in fields.keys() {
        let suggestion =
            likely_typo_of(key).filter(|known| trust == Trust::Operator || !OPERATOR_ONLY_SERVER_KEYS.contains(known));
        if let Some(known) = suggestion {
            warnings.push(format!(
                "{display}: mcp server {}: unknown key {} (did you mean {}?)",
                quote(name),
                quote(key),
                quote(known)
            ));
        }
    }
}

/// The known key an unknown `key` is most likely a typo of: the first of [`SERVER_ENTRY_KEYS`]
/// at the smallest edit distance, if that is at most 2. `None` for a known key.
pub fn likely_typo_of(key: &str) -> Option<&'static str> {
    if SERVER_ENTRY_KEYS.contains(&key) {
        return None;
    }
    let mut best: Option<(usize, &'static str)> = None;
    for known in SERVER_ENTRY_KEYS {
        if let Some(distance) = edit_distance_within(key, known, MAX_TYPO_DISTANCE)
            && best.is_none_or(|(best_distance, _)| distance < best_distance)
        {
            best = Some((distance, known));
        }
    }
    best.map(|(_, known)| known)
}

/// The optimal-string-alignment distance of `a` and `b` (insertions, deletions, substitutions
/// and transpositions of adjacent characters each count 1), or `None` when it exceeds `limit`.
/// A length difference beyond `limit` answers at once, so a huge key costs nothing.
fn edit_distance_within(a: &str, b: &str, limit: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().take(b.len() + limit + 1).collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let width = b.len() + 1;
    let mut rows = vec![0_usize; (a.len() + 1) * width];
    for (j, cell) in rows.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        rows[i * width] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[(i - 1) * width + j] + 1)
                .min(rows[i * width + j - 1] + 1)
                .min(rows[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[(i - 2) * width + j - 2] + 1);
            }
            rows[i * width + j] = best;
        }
    }
    let distance = rows[a.len() * width + b.len()];
    (distance <= limit).then_some(distance)
}

/// `type` and `headers`, as `.mcp.json` files of other agent CLIs write them. `type` `stdio` or
/// `http` is accepted (the entry's `command` or `url` says the same), and `sse` (the legacy
/// transport, for a `url`); any other `type` is one odek cannot serve, so the entry is dropped
/// with a warning (returns false). `headers` go only to a `url` server: on a local entry they are ignored with
/// a warning that names no header (their values are often credentials).
fn check_foreign_keys(display: &str, name: &str, fields: &mut Map<String, Value>, warnings: &mut Vec<String>) -> bool {
    if !has_url(fields) {
        let set = |headers: &Value| !headers.is_null() && headers.as_object().is_none_or(|headers| !headers.is_empty());
        if fields.get("headers").is_some_and(set) {
            warnings
                .push(format!("{display}: mcp server {}: headers are sent only to a url server; ignored", quote(name)));
        }
        fields.remove("headers");
    }
    match fields.get("type") {
        None | Some(Value::Null) => true,
        Some(Value::String(kind)) if SUPPORTED_SERVER_TYPES.contains(&kind.as_str()) => true,
        Some(other) => {
            let shown = match other {
                Value::String(kind) => quote(kind),
                other => other.to_string().chars().take(64).collect(),
            };
            warnings.push(format!(
                "{display}: mcp server {}: type {shown} is not supported (only \"stdio\", \"http\" and \"sse\"); server ignored",
                quote(name)
            ));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use odek_contract::canonical_json::sorted_value;

    use super::*;
    use serde_json::json;

    #[test]
    fn typos_within_two_edits_name_the_closest_key() {
        for (typo, known) in [
            ("comand", "command"),
            ("Command", "command"),
            ("agrs", "args"),
            ("envs", "env"),
            ("timeout_second", "timeout_seconds"),
            ("secretenv", "secret_env"),
            ("requried", "required"),
            ("tpye", "type"),
            ("autoApprove", "auto_approve"),
            ("enabeld", "enabled"),
        ] {
            assert_eq!(likely_typo_of(typo), Some(known), "{typo}");
        }
        for quiet in ["command", "type", "cwd", "description", "disabled", "timeout", "alwaysAllow", "trust", "", "x"] {
            assert_eq!(likely_typo_of(quiet), None, "{quiet}");
        }
        assert_eq!(likely_typo_of(&"c".repeat(100_000)), None);
    }

    /// A field added to (or renamed in) `ServerEntry` and not to [`SERVER_ENTRY_KEYS`] would be
    /// taken for a typo of a known key.
    #[test]
    fn server_entry_keys_are_the_entry_fields_then_type_and_headers() {
        use odek_mcp::server_config::ServerEntry;
        // The pattern has no `..`: a field added to `ServerEntry` (or one removed) breaks the build
        // here.
        macro_rules! entry_fields {
            ($($field:ident),* $(,)?) => {{
                let ServerEntry { $($field: _),* } = ServerEntry::default();
                vec![$(stringify!($field)),*]
            }};
        }
        let mut fields = entry_fields!(
            command,
            args,
            env,
            cwd,
            url,
            token_env,
            timeout_seconds,
            startup_timeout_seconds,
            max_response_bytes,
            max_result_chars,
            artifact_roots,
            enabled,
            auto_approve,
            exclude_tools,
            required,
            secret_env,
            headers,
            allow_insecure_http,
            oauth,
            sandbox,
            writable,
            protocol_version,
            kind,
        );
        // `kind` is read from the key `type`.
        for field in &mut fields {
            if *field == "kind" {
                *field = "type";
            }
        }
        // Each is the key serde reads: a value no field type accepts is refused under it.
        for field in &fields {
            let refused = serde_json::from_value::<ServerEntry>(json!({ *field: [[{}]] }));
            assert!(refused.is_err(), "{field} is not a key ServerEntry reads");
        }
        assert!(serde_json::from_value::<ServerEntry>(json!({"not_a_field": [[{}]]})).is_ok());
        assert_eq!(SERVER_ENTRY_KEYS, fields);
    }

    #[test]
    fn a_project_typo_is_never_taken_for_an_operator_only_key() {
        let Value::Object(mut top) =
            sorted_value(json!({"mcp_servers": {"p": {"command": "x", "autoApprove": true, "agrs": []}}}))
        else {
            unreachable!()
        };
        let mut project = Vec::new();
        check_server_entries("./odek.json", &mut top.clone(), Trust::Project, &mut project);
        assert_eq!(project, ["./odek.json: mcp server \"p\": unknown key \"agrs\" (did you mean \"args\"?)"]);
        let mut operator = Vec::new();
        check_server_entries("/h/.odek/config.json", &mut top, Trust::Operator, &mut operator);
        assert_eq!(operator.len(), 2, "{operator:?}");
        assert!(operator[1].ends_with("unknown key \"autoApprove\" (did you mean \"auto_approve\"?)"), "{operator:?}");
    }

    #[test]
    fn other_clients_keys_are_honoured_or_named() {
        // Config files reach these checks with their keys sorted (`config_object`).
        let Value::Object(mut top) = sorted_value(json!({"mcpServers": {
            "codex": {"command": "x", "disabled_tools": ["a", "b"], "exclude_tools": ["b"], "startup_timeout_sec": 12.5,
                      "tool_timeout_sec": 90, "cwd": "tools"},
            "gemini": {"httpUrl": "https://mcp.example/mcp", "excludeTools": ["rm"], "timeout": 30000, "includeTools": ["x"]},
            "cline": {"command": "y", "disabled": true, "alwaysAllow": ["read"], "startup_timeout_ms": 1500},
            "mixed": {"command": "z", "startup_timeout_sec": 5, "startup_timeout_seconds": 60, "disabled": "no"}
        }})) else {
            unreachable!()
        };
        let mut warnings = Vec::new();
        check_server_entries("./.mcp.json", &mut top, Trust::Project, &mut warnings);
        let servers = &top["mcpServers"];
        assert_eq!(
            servers["codex"],
            json!({"command": "x", "exclude_tools": ["b", "a"], "startup_timeout_seconds": 13, "timeout_seconds": 90, "cwd": "tools"})
        );
        assert_eq!(servers["gemini"], json!({"url": "https://mcp.example/mcp", "exclude_tools": ["rm"]}));
        assert_eq!(servers["cline"], json!({"command": "y", "enabled": false, "startup_timeout_seconds": 2}));
        assert_eq!(servers["mixed"], json!({"command": "z", "startup_timeout_seconds": 60}));
        assert_eq!(
            warnings,
            [
                "./.mcp.json: mcp server \"cline\": \"alwaysAllow\": not read (odek asks about each tool once and remembers the answer)",
                "./.mcp.json: mcp server \"gemini\": \"timeout\": not read (clients disagree on its unit (milliseconds in Gemini CLI, seconds in Cline); set \"timeout_seconds\" (each request) or \"startup_timeout_seconds\")",
                "./.mcp.json: mcp server \"gemini\": \"includeTools\": not read (odek cannot keep only some tools of a server; list the others in \"exclude_tools\")",
                "./.mcp.json: mcp server \"mixed\": \"startup_timeout_sec\": ignored: \"startup_timeout_seconds\" is set",
                "./.mcp.json: mcp server \"mixed\": \"disabled\": not a boolean; ignored",
            ]
        );
    }

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(edit_distance_within("abcd", "abdc", 2), Some(1));
        assert_eq!(edit_distance_within("kitten", "sitting", 3), Some(3));
        assert_eq!(edit_distance_within("kitten", "sitting", 2), None);
        assert_eq!(edit_distance_within("é", "e", 2), Some(1));
    }

    #[test]
    fn unsupported_types_drop_the_entry_and_local_headers_are_ignored() {
        // Config files reach these checks with their keys sorted (`config_object`).
        let Value::Object(mut top) = sorted_value(json!({"mcpServers": {
            "local": {"type": "stdio", "command": "x", "comand": "y", "headers": {"X-Key": "s3cret"}},
            "remote": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer s3cret"}},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
            "odd": {"type": 7, "command": "x"}
        }})) else {
            unreachable!()
        };
        let mut warnings = Vec::new();
        check_server_entries("./.mcp.json", &mut top, Trust::Project, &mut warnings);
        let names: Vec<&String> = top["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["legacy", "local", "remote"]);
        assert_eq!(top["mcpServers"]["remote"]["headers"]["Authorization"], "Bearer s3cret");
        assert!(top["mcpServers"]["local"].get("headers").is_none());
        assert_eq!(
            warnings,
            [
                "./.mcp.json: mcp server \"local\": unknown key \"comand\" (did you mean \"command\"?)",
                "./.mcp.json: mcp server \"local\": headers are sent only to a url server; ignored",
                "./.mcp.json: mcp server \"odd\": type 7 is not supported (only \"stdio\", \"http\" and \"sse\"); server ignored",
            ]
        );
        assert!(!warnings.concat().contains("s3cret"));
    }
}
