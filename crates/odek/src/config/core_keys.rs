//! The core keys (spec `config.md` §4) merged from both files over the built-in defaults.
//!
//! Layering rule used here: an absent key, `null`, an empty string and (for the counts) `0` all
//! mean "not set at this layer", so the lower layer — ultimately the default — shows through.
//! The project's operator-only keys (`provider`, `base_url`, `api_key`, `system`) never reach
//! this module (`sandbox` is a section of its own, `super::sandbox`). The `ODEK_*` and flag layers are applied by the caller later.

use serde::Deserialize;

use super::ConfigError;

/// Default `model`.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
/// Default `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com/v1";
/// Default `max_iterations` (think→act cycles per run).
pub const DEFAULT_MAX_ITERATIONS: u32 = 90;
/// Default `max_tool_parallel` (concurrent tool calls per batch).
pub const DEFAULT_MAX_TOOL_PARALLEL: u32 = 4;
/// Default `max_concurrency` (sub-agent parallelism).
pub const DEFAULT_MAX_CONCURRENCY: u32 = 3;
/// Default `approval_timeout_seconds`: how long a face waits for a person's answer to an
/// approval request before it counts as a denial.
pub const DEFAULT_APPROVAL_TIMEOUT_SECONDS: u32 = 300;

/// The core keys as written in one file (`None` = not set).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct CoreFile {
    model: Option<String>,
    provider: Option<String>,
    base_url: Option<String>,
    api_key: Option<String>,
    thinking: Option<String>,
    max_iterations: Option<i64>,
    max_tool_parallel: Option<i64>,
    max_concurrency: Option<i64>,
    approval_timeout_seconds: Option<i64>,
    stream: Option<bool>,
    compaction: Option<bool>,
    prompt_caching: Option<bool>,
    system: Option<String>,
    no_agents: Option<bool>,
}

/// The resolved core settings. `Debug` hides a non-empty `api_key`.
#[derive(Clone, PartialEq, Eq)]
pub struct CoreConfig {
    /// Model id sent to the provider.
    pub model: String,
    /// Adapter id; empty = OpenAI-compatible `/chat/completions`.
    pub provider: String,
    /// Provider endpoint.
    pub base_url: String,
    /// The global file's `api_key` only; resolution against the environment happens later.
    pub api_key: String,
    /// `enabled`, `disabled`, `low`, `medium`, `high`; empty = model default. Not validated here.
    pub thinking: String,
    /// Think→act cycles per run (never 0).
    pub max_iterations: u32,
    /// Concurrent tool calls per batch; 1 = sequential (never 0).
    pub max_tool_parallel: u32,
    /// Default sub-agent parallelism (never 0).
    pub max_concurrency: u32,
    /// How long a face waits for the answer to an approval request before denying it (never 0).
    pub approval_timeout_seconds: u32,
    /// Stream the main LLM call.
    pub stream: bool,
    /// Model digest of trimmed context.
    pub compaction: bool,
    /// \[beyond\] Ask the provider to cache the prompt prefix (Anthropic `cache_control`
    /// breakpoints); on by default.
    pub prompt_caching: bool,
    /// Identity prompt override; empty = built-in.
    pub system: String,
    /// Skip `./AGENTS.md`.
    pub no_agents: bool,
}

impl std::fmt::Debug for CoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let api_key = if self.api_key.is_empty() { "" } else { "[REDACTED]" };
        f.debug_struct("CoreConfig")
            .field("model", &self.model)
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &api_key)
            .field("thinking", &self.thinking)
            .field("max_iterations", &self.max_iterations)
            .field("max_tool_parallel", &self.max_tool_parallel)
            .field("max_concurrency", &self.max_concurrency)
            .field("approval_timeout_seconds", &self.approval_timeout_seconds)
            .field("stream", &self.stream)
            .field("compaction", &self.compaction)
            .field("prompt_caching", &self.prompt_caching)
            .field("system", &self.system)
            .field("no_agents", &self.no_agents)
            .finish()
    }
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            model: DEFAULT_MODEL.to_owned(),
            provider: String::new(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: String::new(),
            thinking: String::new(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_tool_parallel: DEFAULT_MAX_TOOL_PARALLEL,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            approval_timeout_seconds: DEFAULT_APPROVAL_TIMEOUT_SECONDS,
            stream: false,
            compaction: true,
            prompt_caching: true,
            system: String::new(),
            no_agents: false,
        }
    }
}

/// Fails with `config <path>: <key> must be >= 0` on a negative count.
pub(crate) fn check_counts_not_negative(path: &str, file: &CoreFile) -> Result<(), ConfigError> {
    for (key, value) in [
        ("max_iterations", file.max_iterations),
        ("max_tool_parallel", file.max_tool_parallel),
        ("max_concurrency", file.max_concurrency),
        ("approval_timeout_seconds", file.approval_timeout_seconds),
    ] {
        if value.is_some_and(|v| v < 0) {
            return Err(ConfigError::NegativeValue { path: path.to_owned(), key });
        }
    }
    Ok(())
}

impl CoreConfig {
    /// Applies one file's core keys on top of `self` (counts already checked non-negative).
    pub(crate) fn apply_file(&mut self, file: &CoreFile) {
        set_string(&mut self.model, &file.model);
        set_string(&mut self.provider, &file.provider);
        set_string(&mut self.base_url, &file.base_url);
        set_string(&mut self.api_key, &file.api_key);
        set_string(&mut self.thinking, &file.thinking);
        set_string(&mut self.system, &file.system);
        set_count(&mut self.max_iterations, file.max_iterations);
        set_count(&mut self.max_tool_parallel, file.max_tool_parallel);
        set_count(&mut self.max_concurrency, file.max_concurrency);
        set_count(&mut self.approval_timeout_seconds, file.approval_timeout_seconds);
        set_bool(&mut self.stream, file.stream);
        set_bool(&mut self.compaction, file.compaction);
        set_bool(&mut self.prompt_caching, file.prompt_caching);
        set_bool(&mut self.no_agents, file.no_agents);
    }
}

fn set_string(target: &mut String, value: &Option<String>) {
    if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
        value.clone_into(target);
    }
}

fn set_count(target: &mut u32, value: Option<i64>) {
    if let Some(value) = value.filter(|&v| v > 0) {
        *target = u32::try_from(value).unwrap_or(u32::MAX);
    }
}

fn set_bool(target: &mut bool, value: Option<bool>) {
    if let Some(value) = value {
        *target = value;
    }
}
