//! The one error type of config loading. Each variant's `#[error]` holds the spec's exact text
//! (`config.md` §2, §4, §5); `<path>` is the display path chosen by [`super::ConfigFile`].

use std::io;

use odek_contract::quoting::quote;
use thiserror::Error;

use super::file::MAX_CONFIG_BYTES;

/// Why the configuration could not be loaded (spec `config.md`); every text is the spec's.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A config file over the read cap.
    #[error("config {path}: file too large ({size} bytes, max {MAX_CONFIG_BYTES})")]
    TooLarge {
        /// The config file's path as shown.
        path: String,
        /// Its size in bytes.
        size: u64,
    },
    /// A config file that exists but could not be read (or is not a regular file).
    #[error("config {path}: {source}")]
    Read {
        /// The config file's path as shown.
        path: String,
        /// The read's error.
        source: io::Error,
    },
    /// A config file that is not JSON.
    #[error("config {path}: {source}")]
    Parse {
        /// The config file's path as shown.
        path: String,
        /// serde's message, with its line and column.
        source: serde_json::Error,
    },
    /// A config file whose top level is not an object.
    #[error("config {path}: top level must be a JSON object")]
    NotAnObject {
        /// The config file's path as shown.
        path: String,
    },
    /// A known key holding the wrong JSON type; `key` is the dotted path (`limits.max_tool_calls`,
    /// `mcp_servers.fs.args[0]`); `detail` is serde's message with every `${VAR}` expansion
    /// written back as its reference (serde quotes the value it rejected).
    #[error("config {path}: {}: {detail}", key_for_display(key))]
    KeyType {
        /// The config file's path as shown.
        path: String,
        /// The key's dotted path.
        key: String,
        /// What was wrong with its value.
        detail: String,
    },
    /// A negative value under `limits`.
    #[error("config {path}: limits.{key} must be >= 0")]
    NegativeLimit {
        /// The config file's path as shown.
        path: String,
        /// The key inside `limits`.
        key: String,
    },
    /// \[beyond\] A `providers` entry that cannot be used.
    #[error("config {path}: providers.{name}: {detail}")]
    InvalidProvider {
        /// The config file's path as shown.
        path: String,
        /// The entry's name.
        name: String,
        /// What is wrong with it.
        detail: String,
    },
    /// \[beyond\] A `fallback_models` entry that is not `<provider>/<model>` with a known
    /// provider.
    #[error(
        "config {path}: fallback_models: {entry:?} is not <provider>/<model> with a provider odek knows (openai, openai-responses, anthropic or a providers name)"
    )]
    InvalidFallback {
        /// The config file's path as shown.
        path: String,
        /// The entry as written.
        entry: String,
    },
    /// \[beyond\] A liveness deadline or the heartbeat interval outside its range; `key` is the
    /// dotted path (`limits.first_byte_timeout_seconds`, `events.heartbeat_seconds`).
    #[error("config {path}: {key} must be {rule}, got {value}")]
    OutOfRange {
        /// The config file's path as shown.
        path: String,
        /// The key's dotted path.
        key: String,
        /// The allowed range, in words.
        rule: &'static str,
        /// The value given.
        value: i64,
    },
    /// \[beyond\] `elicitation` is not one of its words.
    #[error("config {path}: elicitation must be \"decline\", \"cancel\" or \"accept_defaults\", got {}", quote(value))]
    BadElicitation {
        /// The config file's path as shown.
        path: String,
        /// The word given.
        value: String,
    },
    /// A negative count for a core key whose only documented special value is `0`.
    #[error("config {path}: {key} must be >= 0")]
    NegativeValue {
        /// The config file's path as shown.
        path: String,
        /// The top-level key.
        key: &'static str,
    },
    /// One file names the same server under both `mcp_servers` and `mcpServers`.
    #[error("config {path}: mcp server {} is defined in both \"mcp_servers\" and \"mcpServers\"", quote(name))]
    DuplicateServer {
        /// The config file's path as shown.
        path: String,
        /// The server's name.
        name: String,
    },
    /// \[beyond\] A project file (`./odek.json`, `./.mcp.json`) may not hand a server secrets.
    #[error("config {path}: mcp server {}: secret_env is allowed only in ~/.odek/config.json", quote(name))]
    ProjectSecretEnv {
        /// The config file's path as shown.
        path: String,
        /// The server's name.
        name: String,
    },
    /// \[beyond\] A `secret_env` name that no process environment can hold.
    #[error(
        "config {path}: mcp server {}: secret_env name {} is not a valid variable name",
        quote(server),
        quote(name)
    )]
    SecretEnvName {
        /// The config file's path as shown.
        path: String,
        /// The server's name.
        server: String,
        /// The refused variable name.
        name: String,
    },
    /// \[beyond\] A server defined in two project sources: `./.mcp.json` and `./odek.json`, or a
    /// client's `mcpServers` and a project file.
    #[error("config {path}: mcp server {} is also defined in {other}", quote(name))]
    DefinedInBothProjectFiles {
        /// The later source as shown.
        path: String,
        /// The server's name.
        name: String,
        /// The source that defined it first.
        other: &'static str,
    },
    /// \[beyond\] A bad value in the global file's `sandbox` section.
    #[error("config {path}: {detail}")]
    Sandbox {
        /// The config file's path as shown.
        path: String,
        /// What was wrong.
        detail: String,
    },
    /// \[beyond\] `--no-sandbox` or `ODEK_SANDBOX=0` with `sandbox.required` (or
    /// `ODEK_REQUIRE_SANDBOX=1`).
    #[error("sandbox.required is set: the sandbox cannot be turned off")]
    SandboxRequired,
    /// `HOME` is unset, so `~/.odek` has no place.
    #[error("cannot determine the home directory: HOME is not set")]
    NoHome,
    /// The working directory could not be read (deleted, or no permission).
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
