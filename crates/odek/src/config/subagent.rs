//! The operator-only `subagent` and `profiles` sections (spec `config.md` §7, `subagents.md`
//! §1, §4). They are validated and stored here; `delegate_tasks` and `odek subagent` apply them.
//! Start at [`validate_subagent`] and [`validate_profiles`].
//!
//! Range rule for the numbers: `≤ 0` (or absent) = the default, a value above the cap is clamped
//! to it with a warning. `max_concurrency` has no default of its own — it follows the resolved
//! global `max_concurrency` — so it is kept as `Option` and read through
//! [`SubagentConfig::max_concurrency_or`]. The project file never reaches this module (§9).

use std::collections::BTreeMap;

use odek_contract::quoting::quote;
use odek_danger::DangerClass;
use serde::Deserialize;

use super::dangerous::{non_blank, parse_max_risk};
use super::tools::{ToolsConfig, ToolsFile};

/// Most sub-agents running at once (process-wide slots).
pub const SUBAGENT_MAX_CONCURRENCY: u32 = 8;
/// Default and largest per-child timeout (seconds).
pub const SUBAGENT_MAX_TIMEOUT_SECONDS: u64 = 1800;
/// Default child iterations.
pub const DEFAULT_SUBAGENT_MAX_ITERATIONS: u32 = 15;
/// Largest child iterations.
pub const SUBAGENT_MAX_ITERATIONS: u32 = 100;
/// Default delegation depth.
pub const DEFAULT_SUBAGENT_MAX_DEPTH: u32 = 2;
/// Largest delegation depth.
pub const SUBAGENT_MAX_DEPTH: u32 = 8;
/// The profile applied when none is selected, and the built-in profile's name.
pub const DEFAULT_PROFILE: &str = "default";
/// The `default_profile` value that applies no profile.
pub const NO_PROFILE: &str = "none";

/// `subagent` as written in the global file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct SubagentFile {
    max_concurrency: Option<i64>,
    timeout_seconds: Option<i64>,
    max_iterations: Option<i64>,
    max_depth: Option<i64>,
    announce_budget: Option<bool>,
    budget_inherit: Option<String>,
    default_profile: Option<String>,
}

/// How a child's budget relates to its parent's (`budgets.md` §7–9).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BudgetInherit {
    /// The child enforces the operator limits only.
    #[default]
    Operator,
    /// The child is further clamped to the parent's remaining budget.
    Share,
}

/// The validated `subagent` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentConfig {
    /// Configured slots (1..=8); `None` = follow the global `max_concurrency`.
    pub max_concurrency: Option<u32>,
    /// Per-child timeout in seconds (1..=1800).
    pub timeout_seconds: u64,
    /// Child iterations (1..=100).
    pub max_iterations: u32,
    /// Delegation depth (1..=8); `1` = children may not delegate.
    pub max_depth: u32,
    /// Children get the lifespan block and 50/75/90 % budget hints.
    pub announce_budget: bool,
    /// How a child's budgets relate to its parent's (`budget_inherit`: independent or shared).
    pub budget_inherit: BudgetInherit,
    /// Profile applied when none is selected; [`NO_PROFILE`] = none.
    pub default_profile: String,
}

impl Default for SubagentConfig {
    fn default() -> Self {
        SubagentConfig {
            max_concurrency: None,
            timeout_seconds: SUBAGENT_MAX_TIMEOUT_SECONDS,
            max_iterations: DEFAULT_SUBAGENT_MAX_ITERATIONS,
            max_depth: DEFAULT_SUBAGENT_MAX_DEPTH,
            announce_budget: true,
            budget_inherit: BudgetInherit::Operator,
            default_profile: DEFAULT_PROFILE.to_owned(),
        }
    }
}

impl SubagentConfig {
    /// The slot count: the configured value, else the resolved global `max_concurrency`, clamped
    /// to 1..=8.
    pub fn max_concurrency_or(&self, global_max_concurrency: u32) -> u32 {
        self.max_concurrency.unwrap_or(global_max_concurrency).clamp(1, SUBAGENT_MAX_CONCURRENCY)
    }
}

/// Validates the global file's `subagent` section.
pub(crate) fn validate_subagent(file: Option<&SubagentFile>, warnings: &mut Vec<String>) -> SubagentConfig {
    let mut config = SubagentConfig::default();
    let Some(file) = file else {
        return config;
    };
    config.max_concurrency = file
        .max_concurrency
        .filter(|&value| value > 0)
        .map(|value| clamp_to_cap("max_concurrency", value, u64::from(SUBAGENT_MAX_CONCURRENCY), warnings))
        .and_then(|value| u32::try_from(value).ok());
    config.timeout_seconds = capped_or_default(
        "timeout_seconds",
        file.timeout_seconds,
        SUBAGENT_MAX_TIMEOUT_SECONDS,
        SUBAGENT_MAX_TIMEOUT_SECONDS,
        warnings,
    );
    config.max_iterations = capped_count(
        "max_iterations",
        file.max_iterations,
        DEFAULT_SUBAGENT_MAX_ITERATIONS,
        SUBAGENT_MAX_ITERATIONS,
        warnings,
    );
    config.max_depth =
        capped_count("max_depth", file.max_depth, DEFAULT_SUBAGENT_MAX_DEPTH, SUBAGENT_MAX_DEPTH, warnings);
    config.announce_budget = file.announce_budget.unwrap_or(true);
    config.budget_inherit = match file.budget_inherit.as_deref().unwrap_or("") {
        "" | "operator" => BudgetInherit::Operator,
        "share" => BudgetInherit::Share,
        other => {
            warnings.push(format!("subagent.budget_inherit: invalid value {}; using \"operator\"", quote(other)));
            BudgetInherit::Operator
        }
    };
    if let Some(profile) = file.default_profile.as_deref().filter(|profile| !profile.is_empty()) {
        profile.clone_into(&mut config.default_profile);
    }
    config
}

fn capped_count(key: &str, value: Option<i64>, default: u32, cap: u32, warnings: &mut Vec<String>) -> u32 {
    let value = capped_or_default(key, value, u64::from(default), u64::from(cap), warnings);
    u32::try_from(value).unwrap_or(default)
}

/// `≤ 0` or absent ⇒ `default`; above `cap` ⇒ `cap` with a warning.
fn capped_or_default(key: &str, value: Option<i64>, default: u64, cap: u64, warnings: &mut Vec<String>) -> u64 {
    match value.filter(|&value| value > 0) {
        Some(value) => clamp_to_cap(key, value, cap, warnings),
        None => default,
    }
}

/// A positive value clamped to `cap`, warning when it moved.
fn clamp_to_cap(key: &str, value: i64, cap: u64, warnings: &mut Vec<String>) -> u64 {
    let value = value.unsigned_abs();
    if value > cap {
        warnings.push(format!("subagent.{key} {value} exceeds the maximum {cap}; clamped to {cap}"));
        return cap;
    }
    value
}

/// One entry of `profiles` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct ProfileFile {
    max_risk: Option<String>,
    allowlist: Option<Vec<String>>,
    tools: Option<ToolsFile>,
}

/// A validated operator profile for sub-agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Every class ranked above this one is denied.
    pub max_risk: DangerClass,
    /// Replaces `dangerous.allowlist` when present.
    pub allowlist: Option<Vec<String>>,
    /// Replaces the tool filter when present.
    pub tools: Option<ToolsConfig>,
}

impl Profile {
    /// The built-in `default` profile: `{"max_risk": "local_write"}`.
    pub fn builtin_default() -> Self {
        Profile { max_risk: DangerClass::LocalWrite, allowlist: None, tools: None }
    }
}

/// The validated profiles by name; always holds `default` (the operator's, or the built-in one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profiles(BTreeMap<String, Profile>);

impl Default for Profiles {
    fn default() -> Self {
        Profiles(BTreeMap::from([(DEFAULT_PROFILE.to_owned(), Profile::builtin_default())]))
    }
}

impl Profiles {
    /// The profile of that exact name.
    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.0.get(name)
    }

    /// Every profile in ascending byte order of name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Profile)> {
        self.0.iter().map(|(name, profile)| (name.as_str(), profile))
    }
}

/// Validates the global file's `profiles`: a profile whose `max_risk` is missing or not a
/// ranked class is dropped with the §7 warning (a missing one shows as `""`). The built-in
/// `default` fills in when the operator has no valid profile of that name.
pub(crate) fn validate_profiles(file: Option<&BTreeMap<String, ProfileFile>>, warnings: &mut Vec<String>) -> Profiles {
    let mut profiles = BTreeMap::new();
    for (name, entry) in file.into_iter().flatten() {
        let max_risk = entry.max_risk.as_deref().unwrap_or("");
        let Some(max_risk) = parse_max_risk(max_risk) else {
            warnings.push(format!("profile {}: invalid max_risk {}; profile ignored", quote(name), quote(max_risk)));
            continue;
        };
        let profile = Profile {
            max_risk,
            allowlist: entry.allowlist.as_deref().map(|list| non_blank(Some(list))),
            tools: entry.tools.as_ref().map(ToolsConfig::from_file),
        };
        profiles.insert(name.clone(), profile);
    }
    profiles.entry(DEFAULT_PROFILE.to_owned()).or_insert_with(Profile::builtin_default);
    Profiles(profiles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_default_and_clamp() {
        let file = SubagentFile {
            max_concurrency: Some(20),
            timeout_seconds: Some(-1),
            max_iterations: Some(500),
            max_depth: Some(1),
            budget_inherit: Some("shared".to_owned()),
            default_profile: Some(String::new()),
            ..SubagentFile::default()
        };
        let mut warnings = Vec::new();
        let config = validate_subagent(Some(&file), &mut warnings);
        assert_eq!(
            config,
            SubagentConfig {
                max_concurrency: Some(8),
                timeout_seconds: 1800,
                max_iterations: 100,
                max_depth: 1,
                announce_budget: true,
                budget_inherit: BudgetInherit::Operator,
                default_profile: "default".to_owned(),
            }
        );
        assert_eq!(
            warnings,
            vec![
                "subagent.max_concurrency 20 exceeds the maximum 8; clamped to 8",
                "subagent.max_iterations 500 exceeds the maximum 100; clamped to 100",
                "subagent.budget_inherit: invalid value \"shared\"; using \"operator\"",
            ]
        );
        assert_eq!(SubagentConfig::default().max_concurrency_or(3), 3);
        assert_eq!(SubagentConfig::default().max_concurrency_or(50), 8);
        assert_eq!(config.max_concurrency_or(3), 8);
    }
}
