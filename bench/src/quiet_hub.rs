//! The options every odek-mcp client of the benches starts its `McpHub` with: nothing printed
//! (a measurement must not pay for printing), every tool approved, no sandbox, the default
//! start-up deadline. Shared by `odek-bench` and `odek-bench-mcp-serve`.

use std::sync::Arc;
use std::time::Duration;

use odek_mcp::{ApproveAll, HubOptions, McpEvent, McpObserver};

/// Drops everything.
struct SilentObserver;

impl McpObserver for SilentObserver {
    fn event(&self, _event: McpEvent) {}
    fn warning(&self, _server: &str, _text: &str) {}
    fn server_line(&self, _server: &str, _line: &str) {}
}

pub fn options() -> HubOptions {
    HubOptions {
        observer: Arc::new(SilentObserver),
        approver: Arc::new(ApproveAll),
        client_version: env!("CARGO_PKG_VERSION").to_owned(),
        parent_env: odek_mcp::env_allowlist::process_env().collect(),
        startup_timeout: Duration::from_secs(odek_mcp::server_config::DEFAULT_STARTUP_TIMEOUT_SECONDS),
        sandbox: odek_mcp::ServerSandbox::Off,
        oauth: None,
        elicitation: odek_mcp::ElicitationSettings::default(),
    }
}
