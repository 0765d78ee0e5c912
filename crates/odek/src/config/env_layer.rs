//! The `ODEK_*` environment layer (spec `config.md` §11), read from the environment map of
//! [`super::LoadedConfig`] — never from the process — so it is a pure function of its input.
//! Start at [`read_env_layer`].
//!
//! An unset or empty variable means "not set at this layer", like an empty string in a config
//! file. Booleans accept `1`/`true`/`0`/`false` in any case; integers are non-negative decimal
//! numbers, and `0` inherits the lower layer like a `0` in the files. Anything else is ignored
//! with `<VAR>: invalid boolean "<v>"; ignored` / `<VAR>: invalid integer "<v>"; ignored`. Tool
//! lists are comma-separated; blank names are dropped. There is deliberately no variable for
//! `limits` or `dangerous`.

use std::collections::BTreeMap;

use odek_contract::quoting::quote;

use super::{Config, ConfigError};

/// What the `ODEK_*` variables set; `None` = not set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvLayer {
    /// `ODEK_MODEL`.
    pub model: Option<String>,
    /// `ODEK_PROVIDER`.
    pub provider: Option<String>,
    /// `ODEK_BASE_URL`.
    pub base_url: Option<String>,
    /// `ODEK_MAX_ITER`.
    pub max_iterations: Option<u32>,
    /// `ODEK_THINKING`, as written (validated where the level is chosen).
    pub thinking: Option<String>,
    /// `ODEK_SYSTEM`: the system prompt's override.
    pub system: Option<String>,
    /// `ODEK_STREAM`.
    pub stream: Option<bool>,
    /// `ODEK_COMPACTION`.
    pub compaction: Option<bool>,
    /// `ODEK_PLANNING`.
    pub planning: Option<bool>,
    /// `ODEK_NO_AGENTS`: leave `AGENTS.md` out of the system prompt.
    pub no_agents: Option<bool>,
    /// `ODEK_NO_COLOR`: not a config key; the terminal UX reads it.
    pub no_color: Option<bool>,
    /// `ODEK_MAX_TOOL_PARALLEL`: tool calls of one batch run at once.
    pub max_tool_parallel: Option<u32>,
    /// `ODEK_MAX_CONCURRENCY`: sub-agents run at once.
    pub max_concurrency: Option<u32>,
    /// `ODEK_TOOLS_ENABLED`: replaces the whitelist.
    pub tools_enabled: Option<Vec<String>>,
    /// `ODEK_TOOLS_DISABLED`: added to the blacklist.
    pub tools_disabled: Vec<String>,
    /// \[beyond\] `ODEK_SANDBOX`: confine the processes odek starts, or not.
    pub sandbox: Option<bool>,
    /// \[beyond\] `ODEK_REQUIRE_SANDBOX`: a kernel that cannot confine them is an error.
    pub require_sandbox: Option<bool>,
}

/// Reads every `ODEK_*` variable of §11 that configures a run. Warnings are pushed without the
/// `odek: warning: ` prefix, in the order of the §11 table. \[beyond\] `ODEK_SANDBOX` and
/// `ODEK_REQUIRE_SANDBOX` switch the sandbox (issue 20); turning off a required one is an error.
pub fn read_env_layer(env: &BTreeMap<String, String>, warnings: &mut Vec<String>) -> Result<EnvLayer, ConfigError> {
    let sandbox = env_bool(env, "ODEK_SANDBOX", warnings);
    let string = |name: &str| env.get(name).filter(|value| !value.is_empty()).cloned();
    Ok(EnvLayer {
        model: string("ODEK_MODEL"),
        provider: string("ODEK_PROVIDER"),
        base_url: string("ODEK_BASE_URL"),
        max_iterations: env_count(env, "ODEK_MAX_ITER", warnings),
        thinking: string("ODEK_THINKING"),
        system: string("ODEK_SYSTEM"),
        stream: env_bool(env, "ODEK_STREAM", warnings),
        compaction: env_bool(env, "ODEK_COMPACTION", warnings),
        planning: env_bool(env, "ODEK_PLANNING", warnings),
        no_agents: env_bool(env, "ODEK_NO_AGENTS", warnings),
        no_color: env_bool(env, "ODEK_NO_COLOR", warnings),
        max_tool_parallel: env_count(env, "ODEK_MAX_TOOL_PARALLEL", warnings),
        max_concurrency: env_count(env, "ODEK_MAX_CONCURRENCY", warnings),
        tools_enabled: env.get("ODEK_TOOLS_ENABLED").and_then(|value| tool_list(value)),
        tools_disabled: env.get("ODEK_TOOLS_DISABLED").and_then(|value| tool_list(value)).unwrap_or_default(),
        sandbox,
        require_sandbox: env_bool(env, "ODEK_REQUIRE_SANDBOX", warnings),
    })
}

impl EnvLayer {
    /// Applies the layer on top of the merged files.
    pub fn apply_to(&self, config: &mut Config) {
        let core = &mut config.core;
        for (target, value) in [
            (&mut core.model, &self.model),
            (&mut core.provider, &self.provider),
            (&mut core.base_url, &self.base_url),
            (&mut core.thinking, &self.thinking),
            (&mut core.system, &self.system),
        ] {
            if let Some(value) = value {
                value.clone_into(target);
            }
        }
        for (target, value) in [
            (&mut core.max_iterations, self.max_iterations),
            (&mut core.max_tool_parallel, self.max_tool_parallel),
            (&mut core.max_concurrency, self.max_concurrency),
        ] {
            if let Some(value) = value {
                *target = value;
            }
        }
        for (target, value) in [
            (&mut core.stream, self.stream),
            (&mut core.compaction, self.compaction),
            (&mut core.no_agents, self.no_agents),
            (&mut config.planning.enabled, self.planning),
        ] {
            if let Some(value) = value {
                *target = value;
            }
        }
        config.tools.replace_enabled(self.tools_enabled.as_deref());
        config.tools.disable(&self.tools_disabled);
    }
}

/// `1`/`true` and `0`/`false`, case-insensitive; unset or empty = `None` silently.
pub fn env_bool(env: &BTreeMap<String, String>, name: &str, warnings: &mut Vec<String>) -> Option<bool> {
    let value = env.get(name).filter(|value| !value.is_empty())?;
    if value == "1" || value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value == "0" || value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        warnings.push(format!("{name}: invalid boolean {}; ignored", quote(value)));
        None
    }
}

/// A non-negative decimal count; `0` = not set at this layer. Unset or empty = `None` silently.
pub fn env_count(env: &BTreeMap<String, String>, name: &str, warnings: &mut Vec<String>) -> Option<u32> {
    let value = env.get(name).filter(|value| !value.is_empty())?;
    match value.parse::<u32>() {
        Ok(0) => None,
        Ok(count) => Some(count),
        Err(_) => {
            warnings.push(format!("{name}: invalid integer {}; ignored", quote(value)));
            None
        }
    }
}

/// Comma-separated names, trimmed, blanks dropped; `None` when no name is left (an empty
/// variable is "not set", never "no tools").
fn tool_list(value: &str) -> Option<Vec<String>> {
    let names: Vec<String> =
        value.split(',').map(str::trim).filter(|name| !name.is_empty()).map(str::to_owned).collect();
    (!names.is_empty()).then_some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists() {
        assert_eq!(tool_list(" a, b ,,c "), Some(vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]));
        assert_eq!(tool_list(" , "), None);
    }
}
