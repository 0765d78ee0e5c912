//! What every face builds its agent from: the provider `core.provider` names
//! ([`build_provider`]), the budget limits with the model's prices ([`budget_limits`]), the
//! built-in tools' settings ([`builtin_settings`]) and `delegate_tasks`' settings for this
//! process ([`delegate_settings`]). Each face adds what is its own (a session, a status line; a
//! task file, deadlines) around these.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use odek_agent::budget::{Budget, BudgetLimits};
use odek_agent::subagent::delegate::DelegateSettings;
use odek_agent::subagent::task::TaskReplay;
use odek_agent::tools::BuiltinSettings;
use std::collections::BTreeMap;

use odek_llm::{
    AnthropicOptions, AnthropicProvider, EndpointConfig, FallbackEntry, FallbackProvider, LlmError, OpenAiProvider,
    Provider, RecordingProvider, ReplayProvider, ResponsesProvider,
};

use crate::config::{
    BudgetInherit, Config, FallbackTarget, NamedProvider, ProviderKind, ResolvedProvider, resolve_provider,
};
use crate::error::RuntimeError;
use crate::setup::Setup;

/// The OpenAI-compatible kind's name (`--provider openai`, also the default).
pub const OPENAI_PROVIDER: &str = "openai";
/// The replay provider: answers from an `odek.replay/v1` script (docs/REPLAY.md), no network.
pub const REPLAY_PROVIDER: &str = "replay";

/// The environment variable carrying the current delegation depth (`0` when unset).
pub const DEPTH_VARIABLE: &str = "ODEK_SUBAGENT_DEPTH";

/// The program sub-agents run by default: this process's own executable (`odek`).
pub fn this_program() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("odek"))
}

/// This process's delegation depth: [`DEPTH_VARIABLE`], `0` when unset or unreadable.
pub fn delegation_depth() -> u32 {
    std::env::var(DEPTH_VARIABLE).ok().and_then(|depth| depth.parse().ok()).unwrap_or(0)
}

/// The provider `core.provider` names — a wire kind (`openai`, `openai-responses`,
/// `anthropic`), a `providers` entry, or the replay script — with the `fallback_models` chain
/// after it when there is one ([`odek_llm::FallbackProvider`]), wrapped to record when `record`
/// is set. An HTTP provider needs a key unless its endpoint is loopback or its headers carry
/// the credential; its first-byte and stream-idle deadlines come from `limits`.
pub fn build_provider(
    config: &Config,
    api_key: Option<&str>,
    fallbacks: &[FallbackTarget],
    replay: Option<&TaskReplay>,
    record: Option<&std::path::Path>,
) -> Result<Arc<dyn Provider>, RuntimeError> {
    let core = &config.core;
    let provider: Box<dyn Provider> = if core.provider == REPLAY_PROVIDER {
        let replay = replay.ok_or_else(|| RuntimeError::Setup("--provider replay needs --replay <file>".into()))?;
        // A script handed down in a task file was not parsed from a file here.
        replay.script.validate().map_err(|detail| LlmError::Replay { path: replay.source.clone(), detail })?;
        Box::new(ReplayProvider::from_script(replay.source.clone(), replay.script.clone()))
    } else {
        let target = resolve_provider(&core.provider, core, &config.providers, &BTreeMap::new(), api_key)
            .ok_or_else(|| {
                RuntimeError::Setup(format!(
                    "unknown provider {} (want openai, openai-responses, anthropic, replay or a name from providers in ~/.odek/config.json)",
                    odek_contract::quoting::quote(&core.provider)
                ))
            })?;
        let primary = endpoint_provider(&target, config)?;
        if fallbacks.is_empty() {
            primary
        } else {
            let chain = fallbacks
                .iter()
                .map(|fallback| {
                    Ok(FallbackEntry {
                        provider_name: fallback.provider.name.clone(),
                        model: fallback.model.clone(),
                        provider: endpoint_provider(&fallback.provider, config)?,
                    })
                })
                .collect::<Result<Vec<_>, RuntimeError>>()?;
            let first =
                FallbackEntry { provider_name: target.name.clone(), model: core.model.clone(), provider: primary };
            Box::new(FallbackProvider::new(first, chain))
        }
    };
    let provider: Box<dyn Provider> = match record {
        Some(path) => Box::new(RecordingProvider::new(provider, path)?),
        None => provider,
    };
    Ok(Arc::from(provider))
}

/// One HTTP provider of the kind `target` speaks.
fn endpoint_provider(target: &ResolvedProvider, config: &Config) -> Result<Box<dyn Provider>, RuntimeError> {
    let key = target.api_key.clone().unwrap_or_default();
    if key.is_empty() && target.headers.is_empty() && !is_loopback(&target.base_url) {
        return Err(RuntimeError::Setup(missing_key_message(target, &config.providers)));
    }
    let limits = &config.limits;
    let endpoint = EndpointConfig {
        first_byte_timeout: limits.first_byte_timeout(),
        stream_idle_timeout: limits.stream_idle_timeout(),
        headers: target.headers.clone(),
        ..EndpointConfig::new(&target.base_url, key)
    };
    Ok(match target.kind {
        ProviderKind::OpenAi => Box::new(OpenAiProvider::new(endpoint)?),
        ProviderKind::OpenAiResponses => Box::new(ResponsesProvider::new(endpoint)?),
        ProviderKind::Anthropic => Box::new(AnthropicProvider::new(
            endpoint,
            AnthropicOptions { prompt_caching: config.core.prompt_caching, ..AnthropicOptions::default() },
        )?),
    })
}

/// Where the key of `target` comes from, for the error when there is none.
fn missing_key_message(target: &ResolvedProvider, providers: &BTreeMap<String, NamedProvider>) -> String {
    let sources = match (providers.get(&target.name), target.kind) {
        (Some(named), _) if !named.api_key_env.is_empty() => format!("set {}", named.api_key_env),
        (Some(_), _) => format!("set providers.{}.api_key_env (or headers) in ~/.odek/config.json", target.name),
        (None, ProviderKind::OpenAi) => {
            "set ODEK_API_KEY (or DEEPSEEK_API_KEY / OPENAI_API_KEY), or api_key in ~/.odek/config.json".to_owned()
        }
        (None, ProviderKind::OpenAiResponses) => {
            "set ODEK_API_KEY or OPENAI_API_KEY, or api_key in ~/.odek/config.json".to_owned()
        }
        (None, ProviderKind::Anthropic) => "set ANTHROPIC_API_KEY, or api_key in ~/.odek/config.json".to_owned(),
    };
    format!("no API key for {}: {sources}", target.base_url)
}

/// Local endpoints (llama.cpp, Ollama, vLLM on this machine) may run without a key.
fn is_loopback(base_url: &str) -> bool {
    let rest = base_url.split_once("://").map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    matches!(host.to_ascii_lowercase().as_str(), "localhost" | "127.0.0.1" | "::1")
}

/// The merged `limits` with the model's prices resolved; `warn` hears when a cost cap has no
/// prices.
pub fn budget_limits(config: &Config, warn: &dyn Fn(&str)) -> BudgetLimits {
    let budget_limits = BudgetLimits::from(config);
    if let Some(warning) = budget_limits.cost_warning(&config.core.model) {
        warn(&warning);
    }
    budget_limits
}

/// The built-in tools' settings from the merged config.
pub fn builtin_settings(config: &Config) -> BuiltinSettings {
    BuiltinSettings { shell_timeout_seconds: config.limits.shell_timeout_seconds }
}

/// The settings of `delegate_tasks` for this process: top level (`depth` 0, which also offers
/// `artifact_read`) or a child that may delegate further. Children run
/// `<this program> subagent` ([`this_program`]).
pub fn delegate_settings(
    setup: &Setup,
    config: &Config,
    api_key: Option<&str>,
    session_id: Option<&str>,
    untrusted: bool,
    budget: &Budget,
    replay: Option<Arc<TaskReplay>>,
) -> DelegateSettings {
    let depth = delegation_depth();
    let core = &config.core;
    let subagent = &config.subagent;
    DelegateSettings {
        program: this_program(),
        cwd: setup.sources.cwd.clone(),
        odek_home: setup.sources.odek_dir(),
        parent_env: setup.sources.env.iter().map(|(name, value)| (name.clone(), value.clone())).collect(),
        secret_names: setup.loaded.secrets.names.clone(),
        api_key: api_key.map(str::to_owned),
        provider: core.provider.clone(),
        model: core.model.clone(),
        base_url: core.base_url.clone(),
        prompt_caching: (!core.prompt_caching).then_some(false),
        depth,
        max_depth: subagent.max_depth,
        max_concurrency: usize::try_from(subagent.max_concurrency_or(core.max_concurrency)).unwrap_or(1),
        timeout: Duration::from_secs(subagent.timeout_seconds),
        profiles: config.profiles.iter().map(|(name, _)| name.to_owned()).collect(),
        session_id: session_id.map(str::to_owned),
        untrusted_parent: untrusted,
        artifact_read: depth == 0,
        share: (subagent.budget_inherit == BudgetInherit::Share).then(|| budget.share()),
        replay,
        sandbox: None,
        // The session's own, set by the runtime when a session assembles its tools.
        registry: Default::default(),
    }
}
