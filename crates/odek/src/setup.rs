//! What every command that starts MCP servers does first: the config loaded with its warnings
//! printed ([`Setup`]), then the enabled servers validated, approved and started
//! ([`start_hub`], [`start_servers`]). `odek run`, `odek subagent` and the `odek ext` commands
//! all start here, so a server starts the same way whichever face asked for it.

use std::sync::Arc;

use odek_mcp::hub::report_optional_failure;
use odek_mcp::{HubOptions, McpError, McpHub, McpObserver, ServerSpec, validate_server};

use crate::approvals::{McpApprovals, StdConsole};
use crate::config::{ConfigSources, LoadedConfig, McpServerConfig, load_config};
use crate::outcome::CommandError;
use crate::terminal::print_warning;

/// Config loaded and printed warnings: the common start of every `ext` command and of a run.
pub(crate) struct Setup {
    pub(crate) sources: ConfigSources,
    pub(crate) loaded: LoadedConfig,
}

impl Setup {
    pub(crate) fn load() -> Result<Setup, CommandError> {
        let sources = ConfigSources::from_process()?;
        let loaded = load_config(&sources)?;
        for warning in &loaded.warnings {
            print_warning(&odek_contract::redaction::redact(warning));
        }
        Ok(Setup { sources, loaded })
    }

    pub(crate) fn enabled_servers(&self) -> Vec<McpServerConfig> {
        self.loaded.config.mcp_servers.iter().filter(|server| server.entry.is_enabled()).cloned().collect()
    }

    pub(crate) fn approvals(&self) -> McpApprovals {
        McpApprovals::new(&self.sources, &self.loaded.env, Arc::new(StdConsole))
    }

    pub(crate) fn hub_options(
        &self,
        observer: Arc<dyn McpObserver>,
        approver: Arc<dyn odek_mcp::ToolApprover>,
    ) -> HubOptions {
        HubOptions {
            observer,
            approver,
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            parent_env: self.loaded.env.iter().map(|(key, value)| (key.clone(), value.clone())).collect(),
        }
    }
}

/// One enabled server validated (spec `mcp-client.md` §1 step 2), its warnings reported;
/// errors carry the startup prefix.
pub(crate) fn validated(server: &McpServerConfig, observer: &dyn McpObserver) -> Result<ServerSpec, McpError> {
    let (spec, warnings) =
        validate_server(&server.name, &server.entry).map_err(|err| McpError::at_startup(&server.name, err))?;
    for warning in warnings {
        observer.warning(&server.name, &warning);
    }
    Ok(spec)
}

/// Validates, approves and starts every enabled server of `setup`.
pub(crate) async fn start_hub(setup: &Setup, observer: Arc<dyn McpObserver>) -> Result<McpHub, CommandError> {
    start_servers(setup, setup.enabled_servers(), observer).await
}

/// Spec `mcp-client.md` §1 steps 2–5 for `servers`: validate them all, approve the project ones,
/// then start them; a failure is fatal. [beyond] A `required: false` server that fails
/// validation or is not approved is reported (`mcp_server_failed` when it failed, and the
/// warning) and left out; one that fails to start is left out by the hub the same way.
pub(crate) async fn start_servers(
    setup: &Setup,
    servers: Vec<McpServerConfig>,
    observer: Arc<dyn McpObserver>,
) -> Result<McpHub, CommandError> {
    let mut startable = Vec::with_capacity(servers.len());
    let mut specs = Vec::with_capacity(servers.len());
    for server in servers {
        match validated(&server, observer.as_ref()) {
            Ok(spec) => {
                specs.push(spec);
                startable.push(server);
            }
            Err(error) if !server.entry.is_required() => {
                report_optional_failure(observer.as_ref(), &server.name, &error, Some(error.error_class()));
            }
            Err(error) => return Err(error.into()),
        }
    }
    let approvals = setup.approvals();
    // The prompts block on the terminal: off the async workers, so the stop-signal handlers
    // keep running and a signal ends the wait.
    let (asking, candidates) = (approvals.clone(), startable.clone());
    let skipped = tokio::task::spawn_blocking(move || asking.approve_startup_servers(&candidates))
        .await
        .map_err(|err| CommandError::Fatal(format!("mcp approval: server approval prompt failed: {err}")))??;
    for skipped in skipped {
        report_optional_failure(observer.as_ref(), &skipped.name, &skipped.error, skipped.failure_class);
        specs.retain(|spec| spec.name != skipped.name);
        startable.retain(|server| server.name != skipped.name);
    }
    let approver = Arc::new(approvals.tool_approver(&startable)?);
    Ok(McpHub::start(specs, setup.hub_options(observer, approver)).await?)
}
