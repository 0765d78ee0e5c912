//! `mcp_servers` (spec `config.md` §6) merged across both files, and the `auto_approve` marker
//! of §13.4.
//!
//! Each file may spell the map `mcp_servers` or, Claude-style, `mcpServers` (same per-server
//! fields), or both; one file naming the same server under both keys is fatal. \[beyond\] The
//! project's `./.mcp.json` adds its `mcpServers` to the project's servers; a name in both project
//! files is fatal too. Across files a project entry replaces the same-named global entry as a
//! whole and makes the server project-defined. Start at [`merge_mcp_servers`].
//!
//! \[beyond\] An entry of a Claude-style map is optional unless it says `"required"`
//! ([`make_claude_style_optional`]), as Claude Code treats a server that fails.
//!
//! Also the \[beyond\] `secret_env` rules of the global file: names a process environment can hold
//! ([`check_secret_env`]), every value registered for redaction
//! ([`register_server_secret_values`]), and the `env` entries that pass one of odek's variables
//! by reference and so are handled as `secret_env` ([`pass_env_references_as_secrets`]); and
//! \[beyond\] each server's `sandbox` and `writable` settled by origin ([`settle_server_sandbox`]: a
//! project server is confined and may not say otherwise — only the operator's own entry for it can
//! ([`project_server_unconfined`]) — writes only beneath the workspace, and does not choose a
//! package runner's directories or registry), its `cwd` likewise ([`settle_server_cwd`]), and the
//! variables its entry read ([`note_server_variables`], for the approval card).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use odek_contract::quoting::quote;
use odek_contract::secret_names::is_secret_looking;
use odek_mcp::server_config::ServerEntry;
use serde_json::{Map, Value};

use super::ConfigError;
use super::substitution::only_reference;
use super::variable_name::is_variable_name;

/// The keys under which a file may define MCP servers.
pub const SERVER_MAP_KEYS: &[&str] = &["mcp_servers", "mcpServers"];

/// The one key odek reads from `./.mcp.json`.
pub const MCP_JSON_MAP_KEY: &str = "mcpServers";

/// Which file a server's entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerOrigin {
    /// `~/.odek/config.json`: operator-trusted, no server approval.
    Global,
    /// `./odek.json`: needs server approval before spawn (§13.1).
    Project,
}

/// One configured MCP server after merging, ready for validation and approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name, the key of its entry (and the prefix of its exposed tool names).
    pub name: String,
    /// The entry as written (after `${VAR}` substitution). For a project server `auto_approve`
    /// is always `false`: the project may not set it.
    pub entry: ServerEntry,
    /// Which file defined it: the global config or a project file.
    pub origin: ServerOrigin,
    /// Whether §13.4 lets this server skip server and per-tool approval prompts.
    pub auto_approve_effective: bool,
    /// \[beyond\] The names of odek's variables the entry's `${...}` read, in order of first use
    /// (the server approval card lists them).
    pub variables: Vec<String>,
}

/// Joins one file's `mcp_servers` and `mcpServers` maps; a name in both is fatal. \[beyond\]
/// An `mcpServers` entry follows Claude Code's semantics: optional unless it says
/// `"required": true` ([`make_claude_style_optional`]).
pub(crate) fn servers_of_file(
    path: &str,
    mcp_servers: Option<BTreeMap<String, ServerEntry>>,
    claude_style: Option<BTreeMap<String, ServerEntry>>,
) -> Result<BTreeMap<String, ServerEntry>, ConfigError> {
    let mut servers = mcp_servers.unwrap_or_default();
    for (name, mut entry) in claude_style.unwrap_or_default() {
        if servers.contains_key(&name) {
            return Err(ConfigError::DuplicateServer { path: path.to_owned(), name });
        }
        make_claude_style_optional(&mut entry);
        servers.insert(name, entry);
    }
    Ok(servers)
}

/// \[beyond\] A server of a Claude-style map (`mcpServers`, the only map of `./.mcp.json`) is
/// optional unless its entry says `"required"`: Claude Code goes on without a server that fails,
/// and a pasted `.mcp.json` should not stop every run over one broken entry. `mcp_servers` keeps
/// the contract's required default.
fn make_claude_style_optional(entry: &mut ServerEntry) {
    entry.required.get_or_insert(false);
}

/// The project's servers: `./odek.json`'s, then `./.mcp.json`'s. A name in both is fatal (as it
/// is for the two map keys of one file): which entry would win is not something a project should
/// leave to a precedence rule the operator has to remember.
pub(crate) fn join_project_servers(
    mcp_json_display: &str,
    mut odek_json: BTreeMap<String, ServerEntry>,
    mcp_json: BTreeMap<String, ServerEntry>,
    first: &'static str,
) -> Result<BTreeMap<String, ServerEntry>, ConfigError> {
    for (name, entry) in mcp_json {
        if odek_json.contains_key(&name) {
            return Err(ConfigError::DefinedInBothProjectFiles {
                path: mcp_json_display.to_owned(),
                name,
                other: first,
            });
        }
        odek_json.insert(name, entry);
    }
    Ok(odek_json)
}

/// \[beyond\] The global file's `secret_env`: every name must be a valid variable name
/// (`[A-Za-z_][A-Za-z0-9_]*`, fatal otherwise); an empty value — typically a `${VAR}` that is unset
/// — warns (for an enabled server) and the name is not passed, so a server never starts with an
/// empty token unannounced. The warning names the variable, never a value, and an entry
/// `passed_by_reference` ([`pass_env_references_as_secrets`]) as the `env` entry it was written as.
pub(crate) fn check_secret_env(
    display: &str,
    servers: &BTreeMap<String, ServerEntry>,
    passed_by_reference: &[(String, String)],
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    for (server, entry) in servers {
        for (name, value) in &entry.secret_env {
            if !is_variable_name(name) {
                return Err(ConfigError::SecretEnvName {
                    path: display.to_owned(),
                    server: server.clone(),
                    name: name.clone(),
                });
            }
            if value.is_empty() && entry.is_enabled() {
                let by_reference = passed_by_reference.iter().any(|(known, key)| known == server && key == name);
                let field = if by_reference { "env" } else { "secret_env" };
                warnings.push(format!(
                    "{display}: mcp server {}: {field} {name} is empty (is its variable set?); not passed to the server",
                    quote(server)
                ));
            }
        }
    }
    Ok(())
}

/// \[beyond\] In the operator's file, an `env` entry that the secret filter would drop (a
/// secret-looking name) but whose value is nothing but a reference to one of odek's variables
/// (`"X_API_KEY": "${X_API_KEY}"`, or `${NAME:-default}`) is the operator passing that variable
/// on, as Claude Code lets them: it becomes a `secret_env` entry (expanded, registered for
/// redaction, its name alone in approval keys and listings) instead of being dropped. A literal
/// value stays in `env` and is dropped at start-up as the contract says. Returns `(server, name)`
/// of each entry moved; an entry also in `secret_env` is left to `secret_env`, with a warning.
/// Runs on the JSON before substitution, so the variables read count among those a project file
/// may not read.
pub(crate) fn pass_env_references_as_secrets(
    display: &str,
    top: &mut Map<String, Value>,
    warnings: &mut Vec<String>,
) -> Vec<(String, String)> {
    let mut moved = Vec::new();
    for map_key in SERVER_MAP_KEYS {
        let Some(Value::Object(servers)) = top.get_mut(*map_key) else { continue };
        for (server, entry) in servers.iter_mut() {
            let Value::Object(fields) = entry else { continue };
            let Some(Value::Object(env)) = fields.get_mut("env") else { continue };
            let by_reference: Vec<String> = env
                .iter()
                .filter(|(name, value)| is_secret_looking(name) && value.as_str().and_then(only_reference).is_some())
                .map(|(name, _)| name.clone())
                .collect();
            let mut taken = Map::new();
            for name in by_reference {
                if let Some(value) = env.remove(&name) {
                    taken.insert(name, value);
                }
            }
            if taken.is_empty() {
                continue;
            }
            let secret_env = fields.entry("secret_env").or_insert_with(|| Value::Object(Map::new()));
            if secret_env.is_null() {
                *secret_env = Value::Object(Map::new());
            }
            // A `secret_env` that is no object is refused by the typed decode, naming the key.
            let Value::Object(secret_env) = secret_env else { continue };
            for (name, value) in taken {
                if secret_env.contains_key(&name) {
                    warnings.push(format!(
                        "{display}: mcp server {}: {name} is in both env and secret_env; the secret_env value is passed",
                        quote(server)
                    ));
                    continue;
                }
                moved.push((server.clone(), name.clone()));
                secret_env.insert(name, value);
            }
        }
    }
    moved
}

/// Gives each merged server the variables its own file's entry read.
pub(crate) fn note_server_variables(
    servers: &mut [McpServerConfig],
    mut global: BTreeMap<String, Vec<String>>,
    mut project: BTreeMap<String, Vec<String>>,
) {
    for server in servers {
        let read = match server.origin {
            ServerOrigin::Global => global.remove(&server.name),
            ServerOrigin::Project => project.remove(&server.name),
        };
        server.variables = read.unwrap_or_default();
    }
}

/// \[beyond\] Each stdio server's `cwd` (a key other agent CLIs write) resolved as its origin
/// allows: `~/` expanded, a relative path taken from the workspace, then canonical when it
/// exists. A project server's must lie beneath the workspace (else it is ignored with a warning,
/// as a `writable` entry would be): the sandbox confines a project server there anyway. A
/// command given as a relative path (`./server`) is then resolved from that directory, as a
/// shell that changed into it would. A directory that does not exist is left for validation to
/// refuse, naming it.
pub(crate) fn settle_server_cwd(servers: &mut [McpServerConfig], home: &Path, cwd: &Path, warnings: &mut Vec<String>) {
    let workspace = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    for server in servers {
        let entry = &mut server.entry;
        let Some(text) = entry.cwd.take().filter(|text| !text.is_empty()) else { continue };
        let resolved = match text.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None if text == "~" => home.to_path_buf(),
            None => workspace.join(&text),
        };
        let resolved = std::fs::canonicalize(&resolved).unwrap_or(resolved);
        let escapes = resolved.components().any(|part| part == std::path::Component::ParentDir);
        if server.origin == ServerOrigin::Project && (escapes || !resolved.starts_with(&workspace)) {
            warnings.push(format!(
                "project config: mcp server {}: cwd {} is not beneath the workspace; ignored",
                quote(&server.name),
                resolved.display()
            ));
            continue;
        }
        if let Some(command) =
            entry.command.as_mut().filter(|command| command.contains('/') && !command.starts_with('/'))
        {
            *command = resolved.join(&*command).to_string_lossy().into_owned();
        }
        entry.cwd = Some(resolved.to_string_lossy().into_owned());
    }
}

/// \[beyond\] The config's top-level `mcp_protocol_version` (the project file's over the global
/// one's; empty = unset) becomes the `protocol_version` of every entry that names none. A value
/// odek does not speak fails the load here, once, rather than once per server.
pub(crate) fn default_protocol_version(
    servers: &mut [McpServerConfig],
    named: Option<(&str, String)>,
) -> Result<(), ConfigError> {
    let Some((display, version)) = named else { return Ok(()) };
    odek_mcp::revision::Revision::parse(&version).map_err(|detail| ConfigError::KeyType {
        path: display.to_owned(),
        key: "mcp_protocol_version".to_owned(),
        detail,
    })?;
    for server in servers.iter_mut().filter(|server| server.entry.protocol_version.is_none()) {
        server.entry.protocol_version = Some(version.clone());
    }
    Ok(())
}

/// Every `secret_env` value and \[beyond\] every header value of a remote server becomes a known
/// secret, wherever it came from (`${VAR}` or a literal), so a server, a tool result or the model
/// repeating it is redacted everywhere odek writes (values shorter than the redactor's minimum
/// are skipped by it).
pub(crate) fn register_server_secret_values(servers: &BTreeMap<String, ServerEntry>) {
    for value in servers.values().flat_map(|entry| entry.secret_env.values().chain(entry.headers.values())) {
        if !value.is_empty() {
            odek_contract::redaction::register_secret(value.expose());
        }
    }
}

/// Merges by name, in ascending byte order of name: project entries replace global ones
/// wholesale and are project-defined; `auto_approve_effective` follows §13.4.
pub(crate) fn merge_mcp_servers(
    global: &BTreeMap<String, ServerEntry>,
    project: BTreeMap<String, ServerEntry>,
) -> Vec<McpServerConfig> {
    let mut merged: BTreeMap<String, McpServerConfig> = global
        .iter()
        .map(|(name, entry)| {
            let server = McpServerConfig {
                name: name.clone(),
                entry: entry.clone(),
                origin: ServerOrigin::Global,
                auto_approve_effective: entry.auto_approve,
                variables: Vec::new(),
            };
            (name.clone(), server)
        })
        .collect();
    for (name, entry) in project {
        let auto_approve_effective = project_server_auto_approved(global.get(&name), &entry);
        let server = McpServerConfig {
            name: name.clone(),
            entry,
            origin: ServerOrigin::Project,
            auto_approve_effective,
            variables: Vec::new(),
        };
        merged.insert(name, server);
    }
    merged.into_values().collect()
}

/// \[beyond\] Issue 20: `sandbox` and `writable` of every server as its origin allows. A global
/// server is confined only when its entry says so; a project server always is (`"sandbox":
/// false` is ignored with a warning, like every loosening a project tries) — \[beyond\] unless
/// the operator runs that very server unconfined: the global file has the same-named entry with
/// `"sandbox": false`, launching the same thing ([`project_server_unconfined`]). `writable` paths
/// get `~/` expanded and those that do not exist are left out with a warning; a project
/// server's must lie beneath the workspace `cwd` (relative ones are taken from there), others are
/// ignored with a warning. A remote (`url`) server keeps what its entry says. \[beyond\] Issue
/// 32: a confined project server that is a package runner may not choose where the runner writes
/// or which registry it reaches: those variables of its `env` are dropped with a warning
/// ([`odek_mcp::package_runner::PackageRunner::is_setting`]); the operator's are used instead.
pub(crate) fn settle_server_sandbox(
    servers: &mut [McpServerConfig],
    global: &BTreeMap<String, ServerEntry>,
    home: &Path,
    cwd: &Path,
    warnings: &mut Vec<String>,
) {
    let workspace = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    for server in servers {
        let name = quote(&server.name);
        // A remote server is no process of ours: only what its entry says, which validation
        // then warns about.
        let project = server.origin == ServerOrigin::Project && server.entry.url.as_deref().is_none_or(str::is_empty);
        let unconfined = project && project_server_unconfined(global.get(&server.name), &server.entry);
        let entry = &mut server.entry;
        if unconfined {
            warnings.push(format!(
                "mcp server {name}: runs unconfined (its entry in ~/.odek/config.json says \"sandbox\": false)"
            ));
        } else if project && entry.sandbox == Some(false) {
            warnings.push(format!(
                "project config: mcp server {name}: sandbox false ignored (a project's servers always run in the sandbox)"
            ));
        }
        entry.sandbox = Some(!unconfined && (project || entry.sandbox.unwrap_or(false)));
        if project && !unconfined {
            drop_runner_settings(&name, entry, warnings);
        }
        let mut kept = Vec::with_capacity(entry.writable.len());
        for text in &entry.writable {
            let path = match text.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None if text == "~" => home.to_path_buf(),
                None if project => workspace.join(text),
                None => PathBuf::from(text),
            };
            if !path.is_absolute() {
                // Validation refuses it with the server's name.
                kept.push(text.clone());
                continue;
            }
            let Ok(path) = std::fs::canonicalize(&path) else {
                warnings.push(format!("mcp server {name}: writable entry {} does not exist; ignored", path.display()));
                continue;
            };
            if project && !path.starts_with(&workspace) {
                warnings.push(format!(
                    "project config: mcp server {name}: writable entry {} is not beneath the workspace; ignored",
                    path.display()
                ));
                continue;
            }
            kept.push(path.to_string_lossy().into_owned());
        }
        entry.writable = kept;
    }
}

/// \[beyond\] Issue 32: a project server runs unconfined only when the operator says so for
/// exactly that server: the global file's same-named entry says `"sandbox": false`, launches
/// something, and has the launch fields §13.4 compares identical to the project entry's. A name
/// alone is not enough (a project chooses its servers' names), and a project's own `"sandbox":
/// false` never counts.
fn project_server_unconfined(global: Option<&ServerEntry>, project: &ServerEntry) -> bool {
    global.is_some_and(|global| {
        global.sandbox == Some(false) && launches_something(global) && same_launch_fields(global, project)
    })
}

/// Drops from a confined project runner's `env` the variables a package runner's grant is made
/// from (its directories, its registry), with a warning each.
fn drop_runner_settings(name: &str, entry: &mut ServerEntry, warnings: &mut Vec<String>) {
    let Some(runner) =
        odek_mcp::package_runner::PackageRunner::of(entry.command.as_deref().unwrap_or_default(), &entry.args)
    else {
        return;
    };
    entry.env.retain(|variable, _| {
        let setting = runner.is_setting(variable);
        if setting {
            warnings.push(format!(
                "project config: mcp server {name}: env {variable} ignored (where a package runner writes and which registry it reaches are the operator's to choose)"
            ));
        }
        !setting
    });
}

/// §13.4: a project-defined server is auto-approved only if the global file has the same-named
/// entry with `auto_approve: true` that launches something (a command or a url — a
/// command-less, url-less entry is not a wildcard) and whose `command`, `args`, `env`, `url`,
/// `token_env`, limit fields and `artifact_roots` are identical to the project entry's.
/// \[beyond\] The project may not widen the entry either: it must exclude at least the tools the
/// global entry excludes, and a server the operator disabled is never auto-approved.
pub fn project_server_auto_approved(global: Option<&ServerEntry>, project: &ServerEntry) -> bool {
    let Some(global) = global else {
        return false;
    };
    global.auto_approve
        && global.is_enabled()
        && launches_something(global)
        && same_launch_fields(global, project)
        && global.exclude_tools.iter().all(|tool| project.exclude_tools.contains(tool))
}

fn launches_something(entry: &ServerEntry) -> bool {
    non_empty(&entry.command).is_some() || non_empty(&entry.url).is_some()
}

/// Field-by-field identity for §13.4. Absent and empty strings are the same (both mean "not
/// set"); `artifact_roots` compare as sorted lists, as in the approval key. \[beyond\] The
/// `secret_env` names count too: a project entry can have none, so a global entry that hands
/// its server secrets never auto-approves a project look-alike; and so do `headers`,
/// `allow_insecure_http` and `type`.
fn same_launch_fields(a: &ServerEntry, b: &ServerEntry) -> bool {
    non_empty(&a.command) == non_empty(&b.command)
        && a.args == b.args
        && a.env == b.env
        && non_empty(&a.url) == non_empty(&b.url)
        && non_empty(&a.token_env) == non_empty(&b.token_env)
        && a.timeout_seconds == b.timeout_seconds
        && a.max_response_bytes == b.max_response_bytes
        && a.max_result_chars == b.max_result_chars
        && sorted(&a.artifact_roots) == sorted(&b.artifact_roots)
        && a.secret_env.keys().eq(b.secret_env.keys())
        && a.headers == b.headers
        && a.allow_insecure_http == b.allow_insecure_http
        && a.kind == b.kind
        && non_empty(&a.cwd) == non_empty(&b.cwd)
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

fn sorted(values: &[String]) -> Vec<&str> {
    let mut values: Vec<&str> = values.iter().map(String::as_str).collect();
    values.sort_unstable();
    values
}

#[cfg(test)]
mod tests {
    use odek_mcp::SecretValue;

    use super::*;

    fn stdio(command: &str) -> ServerEntry {
        ServerEntry {
            command: Some(command.to_owned()),
            args: vec!["--root".into(), "/srv".into()],
            artifact_roots: vec!["/b".into(), "/a".into()],
            ..ServerEntry::default()
        }
    }

    #[test]
    fn identical_entry_with_global_marker_is_auto_approved() {
        let global = ServerEntry { auto_approve: true, ..stdio("fs-server") };
        let mut project = stdio("fs-server");
        project.artifact_roots.reverse();
        project.url = Some(String::new());
        assert!(project_server_auto_approved(Some(&global), &project));
        assert!(!project_server_auto_approved(None, &project));
        let unmarked = stdio("fs-server");
        assert!(!project_server_auto_approved(Some(&unmarked), &project));
    }

    #[test]
    fn any_launch_field_difference_breaks_auto_approve() {
        let global = ServerEntry { auto_approve: true, ..stdio("fs-server") };
        type Change = Box<dyn Fn(&mut ServerEntry)>;
        let variants: Vec<(&str, Change)> = vec![
            ("command", Box::new(|e| e.command = Some("evil".into()))),
            ("arg", Box::new(|e| e.args[1] = "/".into())),
            ("extra arg", Box::new(|e| e.args.push("-x".into()))),
            ("env", Box::new(|e| _ = e.env.insert("A".into(), "1".into()))),
            ("url", Box::new(|e| e.url = Some("http://127.0.0.1:1/mcp".into()))),
            ("token_env", Box::new(|e| e.token_env = Some("T".into()))),
            ("timeout", Box::new(|e| e.timeout_seconds = 5)),
            ("bytes", Box::new(|e| e.max_response_bytes = 5)),
            ("chars", Box::new(|e| e.max_result_chars = 5000)),
            ("roots", Box::new(|e| e.artifact_roots.push("/c".into()))),
            ("secret_env", Box::new(|e| _ = e.secret_env.insert("T".into(), SecretValue::new("v")))),
        ];
        for (what, change) in variants {
            let mut project = stdio("fs-server");
            change(&mut project);
            assert!(!project_server_auto_approved(Some(&global), &project), "{what}");
        }
    }

    #[test]
    fn duplicate_name_across_both_map_keys_is_fatal() {
        let one = BTreeMap::from([("fs".to_owned(), stdio("a"))]);
        let err = servers_of_file("./odek.json", Some(one.clone()), Some(one)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "config ./odek.json: mcp server \"fs\" is defined in both \"mcp_servers\" and \"mcpServers\""
        );
    }

    #[test]
    fn a_project_runner_may_not_choose_its_directories_or_registry_and_a_global_one_may() {
        let npx = ServerEntry {
            command: Some("npx".into()),
            args: vec!["-y".into(), "pkg".into()],
            env: BTreeMap::from([
                ("NPM_CONFIG_CACHE".to_owned(), "/home/u/.ssh".to_owned()),
                ("npm_config_registry".to_owned(), "https://evil.example/".to_owned()),
                ("npm_config_offline".to_owned(), "true".to_owned()),
            ]),
            ..ServerEntry::default()
        };
        let server = |origin| McpServerConfig {
            name: "ev".to_owned(),
            entry: npx.clone(),
            origin,
            auto_approve_effective: false,
            variables: Vec::new(),
        };
        let mut servers = vec![server(ServerOrigin::Project)];
        let mut warnings = Vec::new();
        let dir = tempfile::tempdir().unwrap();
        settle_server_sandbox(&mut servers, &BTreeMap::new(), dir.path(), dir.path(), &mut warnings);
        assert_eq!(servers[0].entry.env.keys().collect::<Vec<_>>(), vec!["npm_config_offline"]);
        assert_eq!(
            warnings,
            [
                "project config: mcp server \"ev\": env NPM_CONFIG_CACHE ignored (where a package runner writes and which registry it reaches are the operator's to choose)",
                "project config: mcp server \"ev\": env npm_config_registry ignored (where a package runner writes and which registry it reaches are the operator's to choose)",
            ]
        );
        let mut servers = vec![server(ServerOrigin::Global)];
        settle_server_sandbox(&mut servers, &BTreeMap::new(), dir.path(), dir.path(), &mut Vec::new());
        assert_eq!(servers[0].entry.env, npx.env);
    }

    #[test]
    fn only_the_operator_s_entry_for_exactly_that_server_runs_a_project_server_unconfined() {
        let project = stdio("srv");
        let twin = ServerEntry { sandbox: Some(false), ..stdio("srv") };
        assert!(project_server_unconfined(Some(&twin), &project));
        assert!(!project_server_unconfined(None, &ServerEntry { sandbox: Some(false), ..stdio("srv") }));
        assert!(!project_server_unconfined(Some(&stdio("srv")), &project), "sandbox not said");
        let other = ServerEntry { sandbox: Some(false), ..stdio("other") };
        assert!(!project_server_unconfined(Some(&other), &project));
        let bare = ServerEntry { sandbox: Some(false), ..ServerEntry::default() };
        assert!(!project_server_unconfined(Some(&bare), &ServerEntry::default()), "not a wildcard");
    }

    #[test]
    fn a_project_stdio_server_is_confined_and_a_project_remote_server_is_left_as_written() {
        let server = |name: &str, entry: ServerEntry| McpServerConfig {
            name: name.to_owned(),
            entry,
            origin: ServerOrigin::Project,
            auto_approve_effective: false,
            variables: Vec::new(),
        };
        let remote = ServerEntry { url: Some("https://mcp.example/mcp".into()), ..ServerEntry::default() };
        let mut servers = vec![server("local", stdio("srv")), server("remote", remote)];
        let mut warnings = Vec::new();
        let dir = tempfile::tempdir().unwrap();
        settle_server_sandbox(&mut servers, &BTreeMap::new(), dir.path(), dir.path(), &mut warnings);
        assert_eq!(servers[0].entry.sandbox, Some(true));
        assert_eq!(servers[1].entry.sandbox, Some(false));
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
