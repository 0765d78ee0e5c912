//! What every face that starts MCP servers does first: the config files loaded with their
//! warnings reported ([`Setup`]), then the enabled servers validated, approved and started
//! ([`start_hub`], [`start_servers`]). A run, a sub-agent, a REPL session and the `odek ext`
//! commands all start here, so a server starts the same way whichever face asked for it.

use std::sync::Arc;

use odek_agent::session::{SessionError, SessionStore};
use odek_contract::quoting::quote;
use odek_mcp::elicitation::PolicyElicitor;
use odek_mcp::hub::report_optional_failure;
use odek_mcp::{
    ElicitationSettings, Elicitor, HubOptions, McpError, McpHub, McpObserver, ServerSandbox, ServerSpec, ToolApprover,
    validate_server,
};

use crate::approvals::{Console, McpApprovals};
use crate::config::{
    CliOverrides, ConfigError, ConfigSources, LoadedConfig, McpServerConfig, SandboxConfig, load_config,
    load_handed_config, resolve_effective,
};
use crate::error::RuntimeError;
use crate::run_sandbox::{RunSandbox, prepare_sandbox, server_sandbox};

/// The config files loaded (global file, project file with its restrictions, `secrets.env`),
/// their warnings reported: the common start of every face.
pub struct Setup {
    /// Where the config came from: home, working directory, environment snapshot.
    pub sources: ConfigSources,
    /// The files merged, before the environment layer and the flags.
    pub loaded: LoadedConfig,
    /// \[beyond\] How the servers that ask for the sandbox are confined (issue 20); off until a
    /// runtime or [`Setup::prepare_server_sandbox`] says otherwise.
    server_sandbox: ServerSandbox,
    /// The sandbox prepared by [`Setup::prepare_server_sandbox`] (its temporary directory lives
    /// as long as the setup).
    own_sandbox: Option<RunSandbox>,
    /// \[beyond\] Who asks a person the servers' elicitations; `None`: nobody, the config's
    /// `elicitation` policy answers.
    elicitor: Option<Arc<dyn Elicitor>>,
}

impl Setup {
    /// Loads the files of `sources`; each loader warning goes to `warn`, secrets redacted.
    pub fn load(sources: ConfigSources, warn: &dyn Fn(&str)) -> Result<Setup, ConfigError> {
        let loaded = load_config(&sources)?;
        Ok(Setup::loaded(sources, loaded, warn))
    }

    /// \[beyond\] As [`Setup::load`], with the MCP servers a face's client offered, as project
    /// servers ([`crate::config::load_config_with_client_servers`]).
    pub fn load_with_client_servers(
        sources: ConfigSources,
        servers: &serde_json::Map<String, serde_json::Value>,
        warn: &dyn Fn(&str),
    ) -> Result<Setup, ConfigError> {
        let loaded = crate::config::load_config_with_client_servers(&sources, servers)?;
        Ok(Setup::loaded(sources, loaded, warn))
    }

    fn loaded(sources: ConfigSources, loaded: LoadedConfig, warn: &dyn Fn(&str)) -> Setup {
        for warning in &loaded.warnings {
            warn(&odek_contract::redaction::redact(warning));
        }
        let server_sandbox = server_sandbox(&loaded.config.sandbox, None);
        Setup { sources, loaded, server_sandbox, own_sandbox: None, elicitor: None }
    }

    /// \[beyond\] As [`Setup::load`], with the global file's bytes as a parent handed them over
    /// (an untrusted sub-agent in the sandbox, which cannot read `~/.odek`; no `secrets.env`).
    pub fn load_handed(sources: ConfigSources, global: &[u8], warn: &dyn Fn(&str)) -> Result<Setup, ConfigError> {
        let loaded = load_handed_config(&sources, global)?;
        Ok(Setup::loaded(sources, loaded, warn))
    }

    /// \[beyond\] For a face without a runtime (`odek ext`): prepares the sandbox the servers
    /// that ask for it are confined in — the config files' `sandbox` with `ODEK_SANDBOX` and
    /// `ODEK_REQUIRE_SANDBOX` applied exactly as a run applies them ([`resolve_effective`], no
    /// flags), their warnings through `warn`. A kernel that cannot enforce it is a warning
    /// (those servers then fail to start), or an error when the sandbox is required.
    pub fn prepare_server_sandbox(&mut self, warn: &dyn Fn(&str)) -> Result<(), RuntimeError> {
        let effective = resolve_effective(&self.loaded, &CliOverrides::default())?;
        for warning in effective.warnings.get(self.loaded.warnings.len()..).unwrap_or_default() {
            warn(warning);
        }
        let config = effective.config.sandbox;
        self.own_sandbox = prepare_sandbox(&config, &self.sources, warn)?;
        self.server_sandbox = server_sandbox(&config, self.own_sandbox.as_ref());
        Ok(())
    }

    /// \[beyond\] The runtime's sandbox (`config` after the switches, `run` when in force) is
    /// the one servers are confined in.
    pub(crate) fn adopt_sandbox(&mut self, config: &SandboxConfig, run: Option<&RunSandbox>) {
        self.server_sandbox = server_sandbox(config, run);
    }

    /// \[beyond\] Has `elicitor` ask a person the servers' elicitations (`None`: nobody asks;
    /// the config's `elicitation` policy answers).
    pub fn answer_elicitations_with(&mut self, elicitor: Option<Arc<dyn Elicitor>>) {
        self.elicitor = elicitor;
    }

    /// \[beyond\] How the servers' elicitations are answered: the face's elicitor within
    /// `elicitation_timeout_seconds`, else the `elicitation` policy.
    pub fn elicitation(&self) -> ElicitationSettings {
        let config = &self.loaded.config.elicitation;
        let elicitor = self.elicitor.clone().unwrap_or_else(|| Arc::new(PolicyElicitor(config.policy)));
        ElicitationSettings { elicitor, timeout: config.timeout() }
    }

    /// The configured servers that are not `disabled`.
    pub fn enabled_servers(&self) -> Vec<McpServerConfig> {
        self.loaded.config.mcp_servers.iter().filter(|server| server.entry.is_enabled()).cloned().collect()
    }

    /// The MCP approvals of this config, asked on `console` (\[beyond\] offering to run a
    /// confined project server unconfined when the sandbox is in force).
    pub fn approvals(&self, console: Arc<dyn Console>) -> McpApprovals {
        McpApprovals::new(&self.sources, &self.loaded.env, console)
            .with_sandbox_in_force(matches!(self.server_sandbox, ServerSandbox::Policy(_)))
    }

    /// The hub's options: this process's version and the environment servers may inherit from.
    pub fn hub_options(&self, observer: Arc<dyn McpObserver>, approver: Arc<dyn ToolApprover>) -> HubOptions {
        HubOptions {
            observer,
            approver,
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            parent_env: self.loaded.env.iter().map(|(key, value)| (key.clone(), value.clone())).collect(),
            startup_timeout: self.loaded.config.limits.mcp_startup_timeout(),
            sandbox: self.server_sandbox.clone(),
            oauth: Some(self.oauth_options()),
            elicitation: self.elicitation(),
        }
    }

    /// \[beyond\] OAuth as every face starts with it: the token file under `~/.odek/oauth`,
    /// headless (a face that may log in sets `login`).
    pub fn oauth_options(&self) -> odek_mcp::oauth::OAuthOptions {
        odek_mcp::oauth::OAuthOptions { store_dir: self.sources.odek_dir().join("oauth"), login: None }
    }

    /// `~/.odek/sessions`, with `~/.odek/artifacts` for the artifacts sessions refer to.
    pub fn session_store(&self) -> Result<SessionStore, SessionError> {
        session_store_in(&self.sources.odek_dir())
    }
}

/// The session store of `odek_dir` (`~/.odek`): `sessions/`, deleting into `artifacts/`.
pub fn session_store_in(odek_dir: &std::path::Path) -> Result<SessionStore, SessionError> {
    SessionStore::new(odek_dir.join("sessions")).map(|store| store.with_artifacts_dir(odek_dir.join("artifacts")))
}

/// One enabled server validated (spec `mcp-client.md` §1 step 2), its warnings reported;
/// errors carry the startup prefix.
pub fn validated(server: &McpServerConfig, observer: &dyn McpObserver) -> Result<ServerSpec, McpError> {
    let (spec, warnings) =
        validate_server(&server.name, &server.entry).map_err(|err| McpError::at_startup(&server.name, err))?;
    for warning in warnings {
        observer.warning(&server.name, &warning);
    }
    Ok(spec)
}

/// Validates, approves (on `console`) and starts every enabled server of `setup`.
pub async fn start_hub(
    setup: &Setup,
    observer: Arc<dyn McpObserver>,
    console: Arc<dyn Console>,
) -> Result<McpHub, RuntimeError> {
    start_servers(setup, setup.enabled_servers(), observer, console).await
}

/// Spec `mcp-client.md` §1 steps 2–5 for `servers`: validate them all, approve the project ones,
/// then start them; a failure is fatal (\[beyond\] naming every required server that failed
/// validation, or else every one that failed to start). \[beyond\] A `required: false` server that fails
/// validation or is not approved is reported (`mcp_server_failed` when it failed, and the
/// warning) and left out; one that fails to start is left out by the hub the same way.
pub async fn start_servers(
    setup: &Setup,
    servers: Vec<McpServerConfig>,
    observer: Arc<dyn McpObserver>,
    console: Arc<dyn Console>,
) -> Result<McpHub, RuntimeError> {
    let mut startable = Vec::with_capacity(servers.len());
    let mut specs = Vec::with_capacity(servers.len());
    let mut invalid = Vec::new();
    for server in servers {
        match validated(&server, observer.as_ref()) {
            Ok(spec) => {
                specs.push(spec);
                startable.push(server);
            }
            Err(error) if !server.entry.is_required() => {
                report_optional_failure(observer.as_ref(), &server.name, &error, Some(error.error_class()));
            }
            Err(error) => invalid.push(error),
        }
    }
    if !invalid.is_empty() {
        // Every invalid required entry at once, before anything is spawned.
        return Err(McpError::RequiredServersFailed { failures: invalid }.into());
    }
    let approvals = setup.approvals(console);
    // The prompts block on the terminal: off the async workers, so the stop-signal handlers
    // keep running and a signal ends the wait.
    let (asking, candidates) = (approvals.clone(), startable.clone());
    let approved = tokio::task::spawn_blocking(move || asking.approve_startup_servers(&candidates))
        .await
        .map_err(|err| RuntimeError::Setup(format!("mcp approval: server approval prompt failed: {err}")))??;
    run_unconfined(&mut specs, &approved.unconfined, observer.as_ref());
    for skipped in approved.skipped {
        report_optional_failure(observer.as_ref(), &skipped.name, &skipped.error, skipped.failure_class);
        specs.retain(|spec| spec.name != skipped.name);
        startable.retain(|server| server.name != skipped.name);
    }
    let approver = Arc::new(approvals.tool_approver(&startable)?);
    McpHub::start(specs, setup.hub_options(observer, approver)).await.map_err(RuntimeError::from_mcp_startup)
}

/// \[beyond\] Issue 32: the servers of `specs` named in `unconfined` (approved to run outside the
/// sandbox) start unconfined, each with a warning saying so.
pub fn run_unconfined(specs: &mut [ServerSpec], unconfined: &[String], observer: &dyn McpObserver) {
    for spec in specs.iter_mut().filter(|spec| unconfined.contains(&spec.name)) {
        spec.sandbox = false;
        observer.warning(
            &spec.name,
            &format!("mcp server {}: runs unconfined (approved to run outside the sandbox)", quote(&spec.name)),
        );
    }
}
