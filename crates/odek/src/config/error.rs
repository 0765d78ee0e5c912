//! The one error type of config loading. Each variant's `#[error]` holds the spec's exact text
//! (`config.md` §2, §4, §5); `<path>` is the display path chosen by [`super::ConfigFile`].

use std::io;

use odek_contract::quoting::quote;
use thiserror::Error;

use super::file::MAX_CONFIG_BYTES;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("config {path}: file too large ({size} bytes, max {MAX_CONFIG_BYTES})")]
    TooLarge { path: String, size: u64 },
    #[error("config {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("config {path}: {source}")]
    Parse { path: String, source: serde_json::Error },
    #[error("config {path}: top level must be a JSON object")]
    NotAnObject { path: String },
    /// A known key holding the wrong JSON type; `key` is the dotted path (`limits.max_tool_calls`,
    /// `mcp_servers.fs.args[0]`); `detail` is serde's message with every `${VAR}` expansion
    /// written back as its reference (serde quotes the value it rejected).
    #[error("config {path}: {}: {detail}", key_for_display(key))]
    KeyType { path: String, key: String, detail: String },
    #[error("config {path}: limits.{key} must be >= 0")]
    NegativeLimit { path: String, key: String },
    /// A negative count for a core key whose only documented special value is `0`.
    #[error("config {path}: {key} must be >= 0")]
    NegativeValue { path: String, key: &'static str },
    /// One file names the same server under both `mcp_servers` and `mcpServers`.
    #[error("config {path}: mcp server {} is defined in both \"mcp_servers\" and \"mcpServers\"", quote(name))]
    DuplicateServer { path: String, name: String },
    /// \[beyond\] A project file (`./odek.json`, `./.mcp.json`) may not hand a server secrets.
    #[error("config {path}: mcp server {}: secret_env is allowed only in ~/.odek/config.json", quote(name))]
    ProjectSecretEnv { path: String, name: String },
    /// \[beyond\] A `secret_env` name that no process environment can hold.
    #[error(
        "config {path}: mcp server {}: secret_env name {} is not a valid variable name",
        quote(server),
        quote(name)
    )]
    SecretEnvName { path: String, server: String, name: String },
    /// \[beyond\] A server defined in both project files; `path` is `./.mcp.json`.
    #[error("config {path}: mcp server {} is also defined in ./odek.json", quote(name))]
    DefinedInBothProjectFiles { path: String, name: String },
    #[error("sandbox is not available in this build")]
    SandboxUnavailable,
    #[error("cannot determine the home directory: HOME is not set")]
    NoHome,
    #[error("cannot determine the current directory: {0}")]
    CurrentDir(io::Error),
}

/// A key path as written, unless a (project-chosen) name in it holds control characters: then it
/// is quoted, so it cannot forge a line of odek's output.
fn key_for_display(key: &str) -> std::borrow::Cow<'_, str> {
    if key.chars().any(char::is_control) {
        std::borrow::Cow::Owned(quote(key))
    } else {
        std::borrow::Cow::Borrowed(key)
    }
}
