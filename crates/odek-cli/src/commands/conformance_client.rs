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

use odek::mcp::oauth::{Grant, LoginOptions, OAuthConfig, OAuthOptions, in_process_browser};

use crate::outcome::CommandError;

/// The name the scenario's server is known by (its tools are `conformance__<tool>`).
const SERVER: &str = "conformance";
/// How long the server may take to start, and each call.
const DEADLINE: Duration = Duration::from_secs(20);

pub async fn run(url: &str) -> Result<(), CommandError> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let revision = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        Ok(version) if !version.is_empty() => version,
        _ => Revision::NEWEST_STATEFUL.as_str().to_owned(),
    };
    eprintln!("odek conformance-client: scenario {scenario:?}, revision {revision}, server {url}");
    let scratch = std::env::temp_dir().join(format!("odek-conformance-{}", std::process::id()));
    let (oauth, parent_env) = oauth_entry(&scenario, &scratch)?;
    let entry = ServerEntry {
        url: Some(url.to_owned()),
        protocol_version: Some(revision),
        timeout_seconds: DEADLINE.as_secs().try_into().unwrap_or(i64::MAX),
        oauth: Some(oauth),
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
        parent_env,
        startup_timeout: DEADLINE,
        sandbox: ServerSandbox::Off,
        // Nobody to ask: a form is accepted with its defaults (SEP-1034), as CI would be.
        elicitation: ElicitationSettings::policy(ElicitationPolicy::AcceptDefaults),
        // A fresh token file per scenario; the login is the suite's: its authorization server
        // redirects at once, and the in-process browser follows that to odek's listener.
        oauth: Some(OAuthOptions {
            store_dir: scratch.join("oauth"),
            login: Some(LoginOptions {
                opener: in_process_browser(DEADLINE),
                timeout: DEADLINE,
                say: Arc::new(|line: &str| eprintln!("odek: {line}")),
            }),
        }),
    };
    let hub = McpHub::start(vec![spec], options).await.map_err(|error| CommandError::Fatal(error.to_string()));
    let hub = match hub {
        Ok(hub) => hub,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&scratch);
            return Err(error);
        }
    };
    let outcome = call_every_tool(&hub).await;
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

/// The client metadata document URL the suite's CIMD scenario expects.
const CONFORMANCE_CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The entry's `oauth` for a scenario, from the suite's context (`client_id`, `client_secret`,
/// `private_key_pem`), and the environment that carries its secret.
fn oauth_entry(
    scenario: &str,
    scratch: &std::path::Path,
) -> Result<(OAuthConfig, Vec<(String, String)>), CommandError> {
    let context: serde_json::Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let text = |key: &str| context.get(key).and_then(serde_json::Value::as_str).map(str::to_owned);
    let mut oauth = OAuthConfig {
        client_metadata_url: Some(CONFORMANCE_CLIENT_METADATA_URL.to_owned()),
        client_id: text("client_id"),
        ..OAuthConfig::default()
    };
    let mut env = Vec::new();
    if let Some(secret) = text("client_secret") {
        env.push(("CONFORMANCE_CLIENT_SECRET".to_owned(), secret));
        oauth.client_secret_env = Some("CONFORMANCE_CLIENT_SECRET".to_owned());
    }
    if let Some(pem) = text("private_key_pem") {
        // A directory of this process's own (0700; one already there is refused), the key 0600.
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(scratch)?;
        let key = scratch.join("key.pem");
        let mut file =
            std::os::unix::fs::OpenOptionsExt::mode(std::fs::OpenOptions::new().write(true).create_new(true), 0o600)
                .open(&key)?;
        std::io::Write::write_all(&mut file, pem.as_bytes())?;
        oauth.private_key_file = Some(key.to_string_lossy().into_owned());
    }
    if scenario.contains("client-credentials") {
        oauth.grant = Grant::ClientCredentials;
    }
    Ok((oauth, env))
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
