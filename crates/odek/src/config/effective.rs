//! The last two layers of spec `config.md` §1 — `ODEK_*` variables and CLI flags — applied on
//! top of the loaded files, giving the settings a run uses. Start at [`resolve_effective`].
//!
//! What stays outside: `--system` (the identity chain of `loop-and-sessions.md` §8 lives in
//! `odek_agent::prompt`, which takes the flag and the resolved `system` separately), and the
//! parsing of flag values (the command line parser owns those errors).

use super::env_layer::read_env_layer;
use super::{Config, ConfigError, LoadedConfig, resolve_api_key};

/// The CLI flags of §10 that set configuration, already parsed. `None` / empty = not given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CliOverrides {
    /// `--model`.
    pub model: Option<String>,
    /// `--provider`.
    pub provider: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--max-iter` (positive).
    pub max_iterations: Option<u32>,
    /// `--no-agents`.
    pub no_agents: bool,
    /// `--planning` (`Some(true)`) / `--no-planning` (`Some(false)`).
    pub planning: Option<bool>,
    /// `--compaction` / `--no-compaction`.
    pub compaction: Option<bool>,
    /// \[beyond\] `--no-prompt-caching` (`Some(false)`).
    pub prompt_caching: Option<bool>,
    /// `--tool` names: the whitelist of the highest layer.
    pub tools: Vec<String>,
    /// `--no-tool` names: merged into `tools.disabled`.
    pub no_tools: Vec<String>,
    /// \[beyond\] `--sandbox` (`Some(true)`) / `--no-sandbox` (`Some(false)`).
    pub sandbox: Option<bool>,
    /// `--max-runtime` (seconds), overriding both files in either direction.
    pub max_runtime_seconds: Option<u64>,
    /// `--max-tool-calls`.
    pub max_tool_calls: Option<u64>,
    /// `--max-input-tokens`.
    pub max_input_tokens: Option<u64>,
    /// `--max-output-tokens`.
    pub max_output_tokens: Option<u64>,
    /// `--max-cost-usd`.
    pub max_cost_usd: Option<f64>,
    /// `--strict`: turns `limits.strict` on (never off).
    pub strict: bool,
    /// \[beyond\] `--first-byte-timeout` (seconds), over `limits.first_byte_timeout_seconds`.
    pub first_byte_timeout_seconds: Option<u64>,
    /// \[beyond\] `--stream-idle-timeout` (seconds), over `limits.stream_idle_timeout_seconds`.
    pub stream_idle_timeout_seconds: Option<u64>,
    /// \[beyond\] `--mcp-startup-timeout` (seconds), over `limits.mcp_startup_timeout_seconds`
    /// (the deadline of servers whose entry sets no `startup_timeout_seconds`).
    pub mcp_startup_timeout_seconds: Option<u64>,
    /// \[beyond\] `--shutdown-drain` (seconds), over `limits.shutdown_drain_seconds`.
    pub shutdown_drain_seconds: Option<u64>,
    /// \[beyond\] `--heartbeat` (seconds, `0` = off), over `events.heartbeat_seconds`.
    pub heartbeat_seconds: Option<u64>,
}

/// The settings of one run, every layer applied. `Debug` hides the key.
#[derive(Clone, PartialEq)]
pub struct EffectiveConfig {
    /// Files, `ODEK_*` and flags merged. `config.core.system` is the `ODEK_SYSTEM` / config
    /// identity (without `--system`); `config.tools` includes `--tool` / `--no-tool`.
    pub config: Config,
    /// The resolved API key, already registered for redaction.
    pub api_key: Option<String>,
    /// `ODEK_NO_COLOR`.
    pub no_color: bool,
    /// The loader's warnings followed by the environment layer's, without the
    /// `odek: warning: ` prefix.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for EffectiveConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectiveConfig")
            .field("config", &self.config)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .field("no_color", &self.no_color)
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// Applies `ODEK_*` (from `loaded.env`) and then the flags to the loaded files, and resolves the
/// API key. \[beyond\] Fails when a required sandbox is switched off
/// (`sandbox.required is set: the sandbox cannot be turned off`).
pub fn resolve_effective(loaded: &LoadedConfig, cli: &CliOverrides) -> Result<EffectiveConfig, ConfigError> {
    let mut warnings = loaded.warnings.clone();
    let env_layer = read_env_layer(&loaded.env, &mut warnings)?;
    let mut config = loaded.config.clone();
    env_layer.apply_to(&mut config);
    super::apply_sandbox_switches(&mut config.sandbox, env_layer.sandbox, env_layer.require_sandbox, cli.sandbox)?;
    apply_cli_overrides(&mut config, cli);
    apply_named_provider_model(&mut config, env_layer.model.is_some() || cli.model.is_some());
    let api_key = resolve_api_key(&loaded.env, &config);
    Ok(EffectiveConfig { config, api_key, no_color: env_layer.no_color.unwrap_or(false), warnings })
}

/// \[beyond\] A named provider's `model` is the run's model unless `--model` or `ODEK_MODEL`
/// chose one (`model_chosen`): it overrides the files' `model`, which may be meant for another
/// provider.
fn apply_named_provider_model(config: &mut Config, model_chosen: bool) {
    if model_chosen {
        return;
    }
    if let Some(named) = config.providers.get(&config.core.provider).filter(|named| !named.model.is_empty()) {
        config.core.model.clone_from(&named.model);
    }
}

/// The flag layer: every flag given replaces the value below it; `--no-agents` only turns the
/// skip on; `--max-*` replace the merged limits in either direction.
pub fn apply_cli_overrides(config: &mut Config, cli: &CliOverrides) {
    let core = &mut config.core;
    for (target, value) in
        [(&mut core.model, &cli.model), (&mut core.provider, &cli.provider), (&mut core.base_url, &cli.base_url)]
    {
        if let Some(value) = value.as_deref().filter(|value| !value.is_empty()) {
            value.clone_into(target);
        }
    }
    if let Some(max_iterations) = cli.max_iterations.filter(|&value| value > 0) {
        core.max_iterations = max_iterations;
    }
    core.no_agents |= cli.no_agents;
    if let Some(compaction) = cli.compaction {
        core.compaction = compaction;
    }
    if let Some(prompt_caching) = cli.prompt_caching {
        core.prompt_caching = prompt_caching;
    }
    if let Some(planning) = cli.planning {
        config.planning.enabled = planning;
    }
    if !cli.tools.is_empty() {
        config.tools.replace_enabled(Some(&cli.tools));
    }
    config.tools.disable(&cli.no_tools);

    let limits = &mut config.limits;
    for (target, value) in [
        (&mut limits.max_runtime_seconds, cli.max_runtime_seconds),
        (&mut limits.max_tool_calls, cli.max_tool_calls),
        (&mut limits.max_input_tokens, cli.max_input_tokens),
        (&mut limits.max_output_tokens, cli.max_output_tokens),
        (&mut limits.first_byte_timeout_seconds, cli.first_byte_timeout_seconds),
        (&mut limits.stream_idle_timeout_seconds, cli.stream_idle_timeout_seconds),
        (&mut limits.mcp_startup_timeout_seconds, cli.mcp_startup_timeout_seconds),
        (&mut limits.shutdown_drain_seconds, cli.shutdown_drain_seconds),
        (&mut config.events.heartbeat_seconds, cli.heartbeat_seconds),
    ] {
        if let Some(value) = value {
            *target = value;
        }
    }
    if let Some(max_cost_usd) = cli.max_cost_usd {
        limits.max_cost_usd = max_cost_usd;
    }
    limits.strict |= cli.strict;
}
