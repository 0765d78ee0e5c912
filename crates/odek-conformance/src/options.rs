//! What one check run is told: the server to check (a command over stdio or a URL over
//! Streamable HTTP), its limits, the author's examples and which tools may be called. A leaf:
//! every other module of the crate reads it.

use std::collections::BTreeMap;
use std::time::Duration;

use odek_mcp::remote::Endpoint;
use odek_mcp::revision::Revision;
use odek_mcp::server_config::{Limits, SecretValue};
use serde::Serialize;
use serde_json::Value;

/// Concurrent calls of the load check, by default.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// What to check and with which limits.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The server name used for exposed names and stderr prefixes.
    pub server: String,
    pub target: Target,
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
    /// The revision `initialize` asks for (the entry's `protocol_version`).
    pub protocol: Revision,
}

impl CheckOptions {
    /// A check of `target`, shown as `server`, with a server's default limits: no examples,
    /// skips, exclusions or artifact roots; every tool not annotated destructive may be called,
    /// [`DEFAULT_CONCURRENCY`] at a time.
    pub fn new(server: String, target: Target) -> Self {
        let limits = Limits::default();
        CheckOptions {
            server,
            target,
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
            protocol: Revision::default(),
        }
    }
}

/// How the server is reached.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command started over stdio, with its environment (already built by the allowlist rules).
    Stdio { command: String, args: Vec<String>, env: BTreeMap<String, String> },
    /// A Streamable HTTP endpoint, checked by odek's rules
    /// ([`odek_mcp::remote::check_endpoint`]), with the bearer token
    /// ([`odek_mcp::remote::bearer_token`]); `legacy_sse` for the deprecated HTTP+SSE transport.
    Http { endpoint: Endpoint, token: Option<SecretValue>, legacy_sse: bool },
}

impl Target {
    /// Whether the server is reached over HTTP (no process, no stdout, no stderr).
    pub fn is_remote(&self) -> bool {
        matches!(self, Target::Http { .. })
    }

    /// `stdio`, `streamable-http` or `http+sse`, as the report names the transport.
    pub fn transport(&self) -> &'static str {
        match self {
            Target::Stdio { .. } => "stdio",
            Target::Http { legacy_sse: false, .. } => "streamable-http",
            Target::Http { legacy_sse: true, .. } => "http+sse",
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
