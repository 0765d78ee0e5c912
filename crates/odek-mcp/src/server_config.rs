//! One configured MCP server: the raw `mcp_servers.<name>` entry as the config files spell it, and
//! the validated [`ServerSpec`] the client runs with (limits defaulted, clamped and floored).
//!
//! Start at [`validate_server`]; the limit rules of spec `mcp-client.md` §2 live in
//! `effective_limits`.

use std::collections::BTreeMap;
use std::time::Duration;

use odek_contract::names::validate_server_name;
use odek_contract::truncation::result_floor;
use serde::Deserialize;

use crate::error::McpError;

/// Default per-request timeout (seconds) when `timeout_seconds` is 0 or absent.
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 30;
/// Hard cap on `timeout_seconds` (seconds); larger values are clamped with a warning.
pub(crate) const MAX_TIMEOUT_SECONDS: i64 = 3600;
/// \[beyond\] Default start-up deadline of a server (seconds): spawn, `initialize` and the
/// whole `tools/list`, when neither its entry nor `limits.mcp_startup_timeout_seconds` sets one.
pub const DEFAULT_STARTUP_TIMEOUT_SECONDS: u64 = 30;
/// Default `max_response_bytes` (10 MiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: i64 = 10 * 1024 * 1024;
/// Absolute ceiling of `max_response_bytes` (64 MiB); larger values are an error.
pub(crate) const MAX_RESPONSE_BYTES_CEILING: i64 = 64 * 1024 * 1024;
/// Default `max_result_chars` (runes).
pub const DEFAULT_MAX_RESULT_CHARS: i64 = 200_000;
/// Hard cap on `max_result_chars` (runes); larger values are clamped with a warning.
pub(crate) const MAX_RESULT_CHARS_CAP: i64 = 1_000_000;

/// A `mcp_servers.<name>` entry exactly as written in a config file. Unknown fields are ignored
/// (additive rule); absent fields take their defaults. `enabled` and `required` stay `Option`s so
/// "absent" and "true" can be told apart when comparing entries for `auto_approve`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ServerEntry {
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// \[beyond\] The stdio server's working directory (absolute once loaded: `~/` expanded, a
    /// relative one taken from the workspace; a project server's only beneath the workspace);
    /// absent: odek's own.
    pub cwd: Option<String>,
    pub url: Option<String>,
    pub token_env: Option<String>,
    /// [beyond] Headers sent on every request to a `url` server (`${VAR}` substituted by the
    /// loader, values registered for redaction; a project file may not set secret-looking ones).
    pub headers: BTreeMap<String, SecretValue>,
    /// [beyond] Allows plain `http://` to a host that is not loopback.
    pub allow_insecure_http: bool,
    /// \[beyond\] OAuth for a `url` server (issue 35): the client, scopes and grant; absent, a
    /// server without `token_env` still gets OAuth with dynamic registration on its first `401`.
    pub oauth: Option<crate::oauth::OAuthConfig>,
    /// `type` as Claude-style files write it (`stdio`, `http`, [beyond] `sse`: the deprecated
    /// HTTP+SSE transport for a `url`); absent means "what `url` or `command` says".
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub timeout_seconds: i64,
    /// [beyond] The start-up deadline of this server (spawn, `initialize`, the whole
    /// `tools/list`); `0`/absent = the run's `limits.mcp_startup_timeout_seconds`.
    pub startup_timeout_seconds: i64,
    pub max_response_bytes: i64,
    pub max_result_chars: i64,
    pub artifact_roots: Vec<String>,
    pub enabled: Option<bool>,
    pub auto_approve: bool,
    /// [beyond] Raw tool names to leave out of this server's `tools/list` before any check:
    /// the operator's way to use a server with a tool whose name breaks the naming rules
    /// (which would otherwise reject the whole server) or a tool they don't want offered.
    pub exclude_tools: Vec<String>,
    /// [beyond] `false`: a failure of this server at startup is a warning and the run goes on
    /// without it. Absent means required (the contract's fail-closed rule) — except in a
    /// Claude-style `mcpServers` map, whose loader makes it `false` (Claude Code's rule).
    pub required: Option<bool>,
    /// [beyond] Variables handed to a stdio server on purpose, past the secret-looking filter of
    /// the environment allowlist: the operator's way to give a server its API key. Honoured only
    /// from the global config (the loader refuses it in a project file); values are `${VAR}`
    /// references or literals, registered for redaction when loaded.
    pub secret_env: BTreeMap<String, SecretValue>,
    /// \[beyond\] Start this stdio server confined by the kernel sandbox (issue 20). The loader
    /// settles it: absent is `false` for a global server and `true` for a project one, which may
    /// not turn it off.
    pub sandbox: Option<bool>,
    /// \[beyond\] Paths a confined server may write besides the workspace and the run's
    /// temporary directory (absolute once loaded: `~/` expanded; a project server's only beneath
    /// the workspace).
    pub writable: Vec<String>,
    /// \[beyond\] The MCP revision asked for in `initialize` (`2025-03-26`, the contract's, when
    /// absent; the loader fills in the config's top-level `mcp_protocol_version`).
    pub protocol_version: Option<String>,
}

impl ServerEntry {
    /// `enabled: false` servers are never started; absent means enabled.
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// Whether a startup failure of this server fails the run; absent means required.
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(true)
    }
}

/// A `secret_env` value. `Debug` never shows it, so no dump of a config or a spec can leak it;
/// [`SecretValue::expose`] is the one way to read it.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        SecretValue(value.into())
    }

    /// The secret itself, for the server's environment and the redaction registry only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() { "\"\"" } else { "[REDACTED]" })
    }
}

/// How odek reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC over stdio, one message per line.
    Stdio { command: String, args: Vec<String>, env: BTreeMap<String, String> },
    /// Streamable HTTP (spec §14): the checked URL and headers, and the variable holding the
    /// bearer token (`""`: none). \[beyond\] `legacy_sse`: the deprecated HTTP+SSE transport
    /// (2024-11-05; `"type": "sse"`), whose `url` is the event stream.
    Http { endpoint: crate::remote::Endpoint, token_env: String, legacy_sse: bool },
}

/// Effective limits after defaults, clamps and the result floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Per-request timeout.
    pub timeout: Duration,
    /// \[beyond\] The start-up deadline the entry sets; `None` = the hub's default.
    pub startup_timeout: Option<Duration>,
    /// Largest accepted response line, newline included (bytes).
    pub max_response_bytes: usize,
    /// Largest result or error text forwarded to the model (runes).
    pub max_result_chars: usize,
}

impl Default for Limits {
    /// The limits of an entry that sets none (the `DEFAULT_*` values).
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECONDS.unsigned_abs()),
            startup_timeout: None,
            max_response_bytes: usize::try_from(DEFAULT_MAX_RESPONSE_BYTES).unwrap_or(usize::MAX),
            max_result_chars: usize::try_from(DEFAULT_MAX_RESULT_CHARS).unwrap_or(usize::MAX),
        }
    }
}

/// A validated server, ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    pub limits: Limits,
    pub artifact_roots: Vec<String>,
    /// Raw tool names dropped from every listing ([`ServerEntry::exclude_tools`]).
    pub exclude_tools: Vec<String>,
    /// [`ServerEntry::is_required`]: whether a startup failure fails the run.
    pub required: bool,
    /// [`ServerEntry::secret_env`], applied to a stdio server's environment after `env`.
    pub secret_env: BTreeMap<String, SecretValue>,
    /// \[beyond\] [`ServerEntry::sandbox`] as the loader settled it: started confined.
    pub sandbox: bool,
    /// \[beyond\] [`ServerEntry::writable`]: what a confined server may write besides the
    /// workspace and the run's temporary directory.
    pub writable: Vec<std::path::PathBuf>,
    /// \[beyond\] [`ServerEntry::oauth`], checked: a `url` server's OAuth settings.
    pub oauth: Option<crate::oauth::OAuthConfig>,
    /// \[beyond\] [`ServerEntry::cwd`]: the stdio server's working directory (an existing
    /// directory); `None`: odek's own.
    pub cwd: Option<std::path::PathBuf>,
    /// \[beyond\] [`ServerEntry::protocol_version`]: the revision `initialize` asks for.
    pub protocol: crate::revision::Revision,
}

/// Validates one enabled entry (spec `mcp-client.md` §1 step 2): server name, transport, limits.
/// Returns the spec and the warnings to print (without the `odek: warning: ` prefix). Errors
/// are not yet wrapped in `mcp server "<name>": `; the caller does that once.
pub fn validate_server(name: &str, entry: &ServerEntry) -> Result<(ServerSpec, Vec<String>), McpError> {
    validate_server_name(name).map_err(|err| McpError::Config(err.to_string()))?;
    let mut warnings = Vec::new();
    let transport = match (&entry.url, &entry.command) {
        (Some(url), command) if !url.is_empty() => {
            let has_command = command.as_deref().is_some_and(|c| !c.is_empty());
            // [beyond] `secret_env` only reaches a child process: say so rather than drop it silently.
            let ignored = match (has_command, !entry.secret_env.is_empty()) {
                (true, false) => Some("command, args and env are ignored"),
                (true, true) => Some("command, args, env and secret_env are ignored"),
                (false, true) => Some("secret_env is ignored"),
                (false, false) => None,
            };
            if let Some(ignored) = ignored {
                warnings.push(format!("mcp server {}: url is set; {ignored}", odek_contract::quoting::quote(name)));
            }
            let token_env = entry.token_env.clone().unwrap_or_default();
            let endpoint =
                crate::remote::check_endpoint(name, url, &entry.headers, &token_env, entry.allow_insecure_http)?;
            if let Some(oauth) = &entry.oauth {
                if !token_env.is_empty() {
                    return Err(McpError::Config(format!(
                        "mcpclient {name}: both token_env and oauth are set; keep one"
                    )));
                }
                oauth.check().map_err(|error| McpError::Config(format!("mcpclient {name}: oauth: {error}")))?;
            }
            Transport::Http { endpoint, token_env, legacy_sse: entry.kind.as_deref() == Some("sse") }
        }
        _ if entry.kind.as_deref() == Some("sse") => {
            return Err(McpError::Config(format!(
                "mcpclient {name}: type \"sse\" is the HTTP+SSE transport and needs a url"
            )));
        }
        (_, Some(command)) if !command.is_empty() => {
            Transport::Stdio { command: command.clone(), args: entry.args.clone(), env: entry.env.clone() }
        }
        _ => {
            return Err(McpError::Config(format!("mcpclient {name}: server config must set either url or command")));
        }
    };
    let limits = effective_limits(name, entry, &mut warnings)?;
    let protocol = crate::revision::Revision::parse(entry.protocol_version.as_deref().unwrap_or_default())
        .map_err(|detail| McpError::Config(format!("mcpclient {name}: {detail}")))?;
    let cwd = working_directory(name, entry, &transport, &mut warnings)?;
    let sandbox = entry.sandbox.unwrap_or(false);
    let writable = confined_writable(name, entry)?;
    if matches!(transport, Transport::Http { .. }) && (sandbox || !writable.is_empty()) {
        warnings.push(format!(
            "mcp server {}: url is set; sandbox and writable apply to stdio servers only and are ignored",
            odek_contract::quoting::quote(name)
        ));
    }
    let oauth = entry.oauth.clone().filter(|_| matches!(transport, Transport::Http { .. }));
    Ok((
        ServerSpec {
            name: name.to_owned(),
            transport,
            limits,
            artifact_roots: entry.artifact_roots.clone(),
            exclude_tools: entry.exclude_tools.clone(),
            required: entry.is_required(),
            secret_env: entry.secret_env.clone(),
            sandbox,
            writable,
            oauth,
            cwd,
            protocol,
        },
        warnings,
    ))
}

/// \[beyond\] `cwd` of a stdio server: an absolute path (the loader resolved it) naming a
/// directory, checked now so a missing one is named as such rather than as the command that
/// could not be started there. A `url` server has no process: its `cwd` is ignored with a warning.
fn working_directory(
    name: &str,
    entry: &ServerEntry,
    transport: &Transport,
    warnings: &mut Vec<String>,
) -> Result<Option<std::path::PathBuf>, McpError> {
    let Some(text) = entry.cwd.as_deref().filter(|text| !text.is_empty()) else { return Ok(None) };
    if matches!(transport, Transport::Http { .. }) {
        warnings.push(format!("mcp server {}: url is set; cwd is ignored", odek_contract::quoting::quote(name)));
        return Ok(None);
    }
    let path = std::path::PathBuf::from(text);
    if !path.is_absolute() {
        return Err(McpError::Config(format!(
            "mcpclient {name}: cwd {text:?} must be an absolute path or start with ~/"
        )));
    }
    if !std::fs::metadata(&path).is_ok_and(|metadata| metadata.is_dir()) {
        return Err(McpError::Config(format!("mcpclient {name}: cwd {text:?} is not a directory")));
    }
    Ok(Some(path))
}

/// \[beyond\] `writable` as paths: each absolute (the loader expanded `~/`) and never `/`.
fn confined_writable(name: &str, entry: &ServerEntry) -> Result<Vec<std::path::PathBuf>, McpError> {
    let mut paths = Vec::with_capacity(entry.writable.len());
    for text in &entry.writable {
        let path = std::path::PathBuf::from(text);
        if !path.is_absolute() {
            return Err(McpError::Config(format!(
                "mcpclient {name}: writable entry {text:?} must be an absolute path or start with ~/"
            )));
        }
        if path.parent().is_none() {
            return Err(McpError::Config(format!("mcpclient {name}: writable entry \"/\" cannot be writable")));
        }
        paths.push(path);
    }
    Ok(paths)
}

/// Applies the limit table of spec `mcp-client.md` §2: `0` means default, negatives are errors,
/// `timeout_seconds` and `max_result_chars` are clamped to their caps with a warning,
/// `max_response_bytes` above its ceiling is an error, and `max_result_chars` below the result
/// floor is raised to it with a warning.
pub(crate) fn effective_limits(
    name: &str,
    entry: &ServerEntry,
    warnings: &mut Vec<String>,
) -> Result<Limits, McpError> {
    for (field, value) in [
        ("timeout_seconds", entry.timeout_seconds),
        ("startup_timeout_seconds", entry.startup_timeout_seconds),
        ("max_response_bytes", entry.max_response_bytes),
        ("max_result_chars", entry.max_result_chars),
    ] {
        if value < 0 {
            return Err(McpError::Config(format!("mcpclient {name}: {field} must be >= 0, got {value}")));
        }
    }
    let quoted = odek_contract::quoting::quote(name);

    let mut timeout = or_default(entry.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
    if timeout > MAX_TIMEOUT_SECONDS {
        warnings.push(format!(
            "mcp server {quoted}: timeout_seconds {timeout} exceeds the hard cap; clamped to {MAX_TIMEOUT_SECONDS}"
        ));
        timeout = MAX_TIMEOUT_SECONDS;
    }

    let mut startup_timeout = entry.startup_timeout_seconds;
    if startup_timeout > MAX_TIMEOUT_SECONDS {
        warnings.push(format!(
            "mcp server {quoted}: startup_timeout_seconds {startup_timeout} exceeds the hard cap; clamped to {MAX_TIMEOUT_SECONDS}"
        ));
        startup_timeout = MAX_TIMEOUT_SECONDS;
    }

    let max_response_bytes = or_default(entry.max_response_bytes, DEFAULT_MAX_RESPONSE_BYTES);
    if max_response_bytes > MAX_RESPONSE_BYTES_CEILING {
        return Err(McpError::Config(format!(
            "mcpclient {name}: max_response_bytes {max_response_bytes} exceeds the absolute ceiling of {MAX_RESPONSE_BYTES_CEILING} bytes"
        )));
    }

    let mut max_result_chars = or_default(entry.max_result_chars, DEFAULT_MAX_RESULT_CHARS);
    if max_result_chars > MAX_RESULT_CHARS_CAP {
        warnings.push(format!(
            "mcp server {quoted}: max_result_chars {max_result_chars} exceeds the hard cap; clamped to {MAX_RESULT_CHARS_CAP}"
        ));
        max_result_chars = MAX_RESULT_CHARS_CAP;
    }
    let floor = result_floor(name) as i64;
    if max_result_chars < floor {
        warnings.push(format!(
            "mcp server {quoted}: max_result_chars {max_result_chars} is below the minimum of {floor} (the truncation notice plus 64 chars); raised to {floor}"
        ));
        max_result_chars = floor;
    }

    Ok(Limits {
        timeout: Duration::from_secs(timeout.unsigned_abs()),
        startup_timeout: (startup_timeout > 0).then(|| Duration::from_secs(startup_timeout.unsigned_abs())),
        max_response_bytes: usize::try_from(max_response_bytes).unwrap_or(usize::MAX),
        max_result_chars: usize::try_from(max_result_chars).unwrap_or(usize::MAX),
    })
}

fn or_default(value: i64, default: i64) -> i64 {
    if value == 0 { default } else { value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limits_are_those_of_an_entry_that_sets_none() {
        let mut warnings = Vec::new();
        let limits = effective_limits("srv", &ServerEntry::default(), &mut warnings).unwrap();
        assert_eq!(limits, Limits::default());
        assert!(warnings.is_empty());
    }

    #[test]
    fn the_startup_deadline_is_checked_like_the_request_timeout() {
        let mut warnings = Vec::new();
        let entry = |seconds| ServerEntry { startup_timeout_seconds: seconds, ..ServerEntry::default() };
        assert_eq!(effective_limits("srv", &entry(0), &mut warnings).unwrap().startup_timeout, None);
        assert_eq!(
            effective_limits("srv", &entry(5), &mut warnings).unwrap().startup_timeout,
            Some(Duration::from_secs(5))
        );
        assert!(warnings.is_empty());
        assert_eq!(
            effective_limits("srv", &entry(999_999_999_999), &mut warnings).unwrap().startup_timeout,
            Some(Duration::from_secs(3600))
        );
        assert_eq!(
            warnings,
            ["mcp server \"srv\": startup_timeout_seconds 999999999999 exceeds the hard cap; clamped to 3600"]
        );
        let error = effective_limits("srv", &entry(-1), &mut warnings).unwrap_err();
        assert_eq!(error.to_string(), "mcpclient srv: startup_timeout_seconds must be >= 0, got -1");
    }

    #[test]
    fn type_sse_needs_a_url() {
        let sse = ServerEntry { kind: Some("sse".into()), command: Some("x".into()), ..ServerEntry::default() };
        assert_eq!(
            validate_server("web", &sse).unwrap_err().to_string(),
            "mcpclient web: type \"sse\" is the HTTP+SSE transport and needs a url"
        );
        let with_url = ServerEntry { url: Some("http://127.0.0.1:1/sse".into()), ..sse };
        let (spec, _) = validate_server("web", &with_url).unwrap();
        assert!(matches!(spec.transport, Transport::Http { legacy_sse: true, .. }));
    }

    #[test]
    fn a_url_warns_about_every_launch_field_it_overrides() {
        let url = ServerEntry { url: Some("https://mcp.example/mcp".into()), ..ServerEntry::default() };
        let secret_env = BTreeMap::from([("TOKEN".to_owned(), SecretValue::new("v"))]);
        for (entry, want) in [
            (url.clone(), None),
            (
                ServerEntry { command: Some("x".into()), ..url.clone() },
                Some("mcp server \"web\": url is set; command, args and env are ignored"),
            ),
            (
                ServerEntry { command: Some("x".into()), secret_env: secret_env.clone(), ..url.clone() },
                Some("mcp server \"web\": url is set; command, args, env and secret_env are ignored"),
            ),
            (ServerEntry { secret_env, ..url }, Some("mcp server \"web\": url is set; secret_env is ignored")),
        ] {
            let (_, warnings) = validate_server("web", &entry).unwrap();
            assert_eq!(warnings.first().map(String::as_str), want, "{warnings:?}");
        }
    }
}
