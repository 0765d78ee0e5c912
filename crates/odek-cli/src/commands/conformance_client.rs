//! `odek ext conformance-client <url>` (hidden): the client leg of the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`) runs this for each scenario. It drives odek's own
//! client — the hub a run starts, its HTTP transport, handshake and call pipeline — against the
//! scenario's server: start, list, call every tool with arguments derived from its schema, shut
//! down. Nothing here is scenario-specific beyond reading the suite's environment.
//!
//! The suite passes the server's URL as the last argument, the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`, the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION` (absent: the
//! newest odek speaks) and scenario data in `MCP_CONFORMANCE_CONTEXT` (JSON).

use std::sync::Arc;
use std::time::Duration;

use odek::mcp::elicitation::ElicitationPolicy;
use odek::mcp::revision::Revision;
use odek::mcp::server_config::ServerEntry;
use odek::mcp::{
    ApproveAll, CallOptions, ElicitationSettings, HubOptions, McpHub, ServerSandbox, StderrObserver, validate_server,
};

use crate::outcome::CommandError;

/// The name the scenario's server is known by (its tools are `conformance__<tool>`).
const SERVER: &str = "conformance";
/// How long the server may take to start, and each call.
const DEADLINE: Duration = Duration::from_secs(20);

pub async fn run(url: &str) -> Result<(), CommandError> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let revision = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        Ok(version) if !version.is_empty() => version,
        _ => Revision::ALL[Revision::ALL.len() - 1].as_str().to_owned(),
    };
    eprintln!("odek conformance-client: scenario {scenario:?}, revision {revision}, server {url}");
    let entry = ServerEntry {
        url: Some(url.to_owned()),
        protocol_version: Some(revision),
        timeout_seconds: DEADLINE.as_secs().try_into().unwrap_or(i64::MAX),
        ..ServerEntry::default()
    };
    let (spec, warnings) = validate_server(SERVER, &entry).map_err(|error| CommandError::Fatal(error.to_string()))?;
    for warning in warnings {
        eprintln!("odek: warning: {warning}");
    }
    let options = HubOptions {
        observer: Arc::new(StderrObserver),
        approver: Arc::new(ApproveAll),
        client_version: env!("CARGO_PKG_VERSION").to_owned(),
        parent_env: Vec::new(),
        startup_timeout: DEADLINE,
        sandbox: ServerSandbox::Off,
        // Nobody to ask: a form is accepted with its defaults (SEP-1034), as CI would be.
        elicitation: ElicitationSettings::policy(ElicitationPolicy::AcceptDefaults),
        oauth: None,
    };
    let hub = McpHub::start(vec![spec], options).await.map_err(|error| CommandError::Fatal(error.to_string()))?;
    let outcome = call_every_tool(&hub).await;
    hub.shutdown().await;
    outcome
}

/// Each listed tool once, in listing order, with arguments derived from its input schema; the
/// first failure (transport or protocol: a tool's own error result is an answer) ends the run.
async fn call_every_tool(hub: &McpHub) -> Result<(), CommandError> {
    for tool in hub.tools() {
        let arguments = odek_conformance::arguments_from_schema(&tool.input_schema).unwrap_or_default();
        let options = CallOptions { deadline: Some(tokio::time::Instant::now() + DEADLINE), ..CallOptions::default() };
        let output = hub
            .call(tool.exposed.as_str(), &arguments.to_string(), &options)
            .await
            .map_err(|error| CommandError::Fatal(error.to_string()))?;
        println!("{}: {}", tool.exposed.as_str(), output.text);
    }
    Ok(())
}
