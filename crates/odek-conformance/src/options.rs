//! What one check run is told: the server to start, its limits, the author's examples and which
//! tools may be called. A leaf: every other module of the crate reads it.

use std::collections::BTreeMap;
use std::time::Duration;

use odek_mcp::server_config::Limits;
use serde::Serialize;
use serde_json::Value;

/// Concurrent calls of the load check, by default.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// What to check and with which limits.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The server name used for exposed names and stderr prefixes.
    pub server: String,
    pub command: String,
    pub args: Vec<String>,
    /// The environment the server runs with (already built by the allowlist rules).
    pub env: BTreeMap<String, String>,
    /// Per-request timeout.
    pub timeout: Duration,
    pub max_response_bytes: usize,
    pub max_result_chars: usize,
    pub artifact_roots: Vec<String>,
    /// Author-supplied arguments per raw tool name, in flag order; they replace the arguments
    /// derived from the schema.
    pub examples: Vec<(String, Value)>,
    /// Raw tool names never called.
    pub skip_calls: Vec<String>,
    /// Raw tool names dropped from the listing before any check, as odek drops a configured
    /// server's `exclude_tools`.
    pub exclude_tools: Vec<String>,
    /// Which tools may be called (a tool with a `--call` example always is).
    pub calls: CallPolicy,
    pub concurrency: usize,
    /// Sent as `clientInfo.version`.
    pub client_version: String,
}

impl CheckOptions {
    /// A check of `command args`, shown as `server`, run in `env` with a stdio server's default
    /// limits: no examples, skips, exclusions or artifact roots; every tool not annotated
    /// destructive may be called, [`DEFAULT_CONCURRENCY`] at a time.
    pub fn new(server: String, command: String, args: Vec<String>, env: BTreeMap<String, String>) -> Self {
        let limits = Limits::default();
        CheckOptions {
            server,
            command,
            args,
            env,
            timeout: limits.timeout,
            max_response_bytes: limits.max_response_bytes,
            max_result_chars: limits.max_result_chars,
            artifact_roots: Vec::new(),
            examples: Vec::new(),
            skip_calls: Vec::new(),
            exclude_tools: Vec::new(),
            calls: CallPolicy::All,
            concurrency: DEFAULT_CONCURRENCY,
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// Which listed tools the check may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CallPolicy {
    /// Only tools annotated `readOnlyHint: true`.
    ReadOnly,
    /// Every tool not annotated `destructiveHint: true`.
    All,
}

impl CallPolicy {
    /// The `--calls` value.
    pub fn as_str(self) -> &'static str {
        match self {
            CallPolicy::ReadOnly => "read-only",
            CallPolicy::All => "all",
        }
    }
}
