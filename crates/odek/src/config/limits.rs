//! The `limits` object (spec `config.md` §5): execution budgets and prices.
//!
//! Rules: every value is optional, `0`/absent means "no limit / no price", a negative value is
//! fatal. \[beyond\] `shell_timeout_seconds` caps the shell tool's `timeout_seconds`; `0`/absent
//! there means the default cap (1800 s), which a project may only lower. \[beyond\] The liveness
//! deadlines (`first_byte_timeout_seconds`, `stream_idle_timeout_seconds`,
//! `mcp_startup_timeout_seconds`, `shutdown_drain_seconds`) work the same way, except that a
//! deadline cannot be switched off: `0` is an error, as is more than a day
//! ([`check_deadlines`]). Merging is a clamp: a project limit may only lower a global one
//! ([`clamp_project_limit`]); prices are operator-only (the project's were already removed by
//! [`super::project_restrictions`]). \[beyond\] `strict` may be turned on by either file and
//! off by neither.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::Duration;

use odek_agent::budget::{BudgetLimits, ModelPrices, resolve_price};
use serde::Deserialize;

use super::{Config, ConfigError, PROJECT_DISPLAY};

/// The shell timeout cap when no config sets one (seconds).
const DEFAULT_SHELL_CAP: i64 = odek_agent::tools::DEFAULT_SHELL_TIMEOUT_SECONDS as i64;

/// \[beyond\] The liveness deadlines under `limits`, with their defaults (seconds).
pub const DEADLINE_KEYS: [(&str, u64); 4] = [
    ("first_byte_timeout_seconds", odek_llm::DEFAULT_FIRST_BYTE_TIMEOUT.as_secs()),
    ("stream_idle_timeout_seconds", odek_llm::DEFAULT_STREAM_IDLE_TIMEOUT.as_secs()),
    ("mcp_startup_timeout_seconds", odek_mcp::server_config::DEFAULT_STARTUP_TIMEOUT_SECONDS),
    ("shutdown_drain_seconds", DEFAULT_SHUTDOWN_DRAIN_SECONDS),
];

/// \[beyond\] The longest a liveness deadline (or the heartbeat interval) may be: one day
/// (seconds). Larger values are an error, so no deadline can overflow a clock.
pub const MAX_DEADLINE_SECONDS: u64 = 86_400;

/// \[beyond\] Default bound of the shutdown drain (seconds): MCP servers get this long to exit
/// after a run before their process groups are killed.
pub const DEFAULT_SHUTDOWN_DRAIN_SECONDS: u64 = 10;

/// The `limits` keys that set a price; a project may set none of them.
pub const PRICE_KEYS: &[&str] = &[
    "input_cost_per_million_usd",
    "output_cost_per_million_usd",
    "cache_read_cost_per_million_usd",
    "cache_write_cost_per_million_usd",
    "model_prices",
];

/// `limits` as written in one file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct LimitsFile {
    max_runtime_seconds: Option<i64>,
    max_tool_calls: Option<i64>,
    max_input_tokens: Option<i64>,
    max_output_tokens: Option<i64>,
    shell_timeout_seconds: Option<i64>,
    first_byte_timeout_seconds: Option<i64>,
    stream_idle_timeout_seconds: Option<i64>,
    mcp_startup_timeout_seconds: Option<i64>,
    shutdown_drain_seconds: Option<i64>,
    max_cost_usd: Option<f64>,
    input_cost_per_million_usd: Option<f64>,
    output_cost_per_million_usd: Option<f64>,
    cache_read_cost_per_million_usd: Option<f64>,
    cache_write_cost_per_million_usd: Option<f64>,
    model_prices: Option<BTreeMap<String, ModelPriceFile>>,
    strict: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
struct ModelPriceFile {
    input_cost_per_million_usd: Option<f64>,
    output_cost_per_million_usd: Option<f64>,
    cache_read_cost_per_million_usd: Option<f64>,
    cache_write_cost_per_million_usd: Option<f64>,
}

impl ModelPriceFile {
    fn fields(&self) -> [(&'static str, Option<f64>); 4] {
        [
            ("input_cost_per_million_usd", self.input_cost_per_million_usd),
            ("output_cost_per_million_usd", self.output_cost_per_million_usd),
            ("cache_read_cost_per_million_usd", self.cache_read_cost_per_million_usd),
            ("cache_write_cost_per_million_usd", self.cache_write_cost_per_million_usd),
        ]
    }
}

/// Per-model prices (USD per million tokens); `0` = no price (for the cache prices: the
/// input price).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelPrice {
    /// USD per million input tokens.
    pub input_cost_per_million_usd: f64,
    /// USD per million output tokens.
    pub output_cost_per_million_usd: f64,
    /// \[beyond\] USD per million input tokens read from the prompt cache.
    pub cache_read_cost_per_million_usd: f64,
    /// \[beyond\] USD per million input tokens written to the prompt cache.
    pub cache_write_cost_per_million_usd: f64,
}

/// The merged budgets and prices of both files. Every `0` means "no limit" / "no price". The
/// loop's limits for a run come from it by `BudgetLimits::from(&config)`, which resolves the
/// run model's prices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitsConfig {
    /// Wall-clock budget (seconds).
    pub max_runtime_seconds: u64,
    /// Total executed tool calls.
    pub max_tool_calls: u64,
    /// Cumulative provider-reported input tokens.
    pub max_input_tokens: u64,
    /// Cumulative provider-reported output tokens.
    pub max_output_tokens: u64,
    /// \[beyond\] The cap on the shell tool's `timeout_seconds` (seconds); never `0` once merged.
    pub shell_timeout_seconds: u64,
    /// \[beyond\] Per provider attempt: request sent to the first byte of the answer (seconds;
    /// `0` = the default 120). See [`LimitsConfig::first_byte_timeout`].
    pub first_byte_timeout_seconds: u64,
    /// \[beyond\] Longest silence of a streamed answer (seconds; `0` = the default 90).
    pub stream_idle_timeout_seconds: u64,
    /// \[beyond\] Start-up deadline of an MCP server whose entry sets none (seconds; `0` = the
    /// default 30).
    pub mcp_startup_timeout_seconds: u64,
    /// \[beyond\] Bound of the shutdown drain (seconds; `0` = the default 10).
    pub shutdown_drain_seconds: u64,
    /// Estimated cost cap (USD).
    pub max_cost_usd: f64,
    /// Flat input price (USD per million tokens).
    pub input_cost_per_million_usd: f64,
    /// Flat output price (USD per million tokens).
    pub output_cost_per_million_usd: f64,
    /// \[beyond\] Flat cache-read price (USD per million tokens; `0` = the input price).
    pub cache_read_cost_per_million_usd: f64,
    /// \[beyond\] Flat cache-write price (USD per million tokens; `0` = the input price).
    pub cache_write_cost_per_million_usd: f64,
    /// Prices by exact model id; global file only.
    pub model_prices: BTreeMap<String, ModelPrice>,
    /// \[beyond\] Any refused operation, MCP server that did not start or named tool that is not
    /// available ends the run with outcome `denied`. Either file may turn it on; neither can turn
    /// off what the other turned on.
    pub strict: bool,
}

/// Fails with `config <path>: limits.<key> must be >= 0` on the first negative value.
pub(crate) fn check_limits_not_negative(path: &str, limits: &LimitsFile) -> Result<(), ConfigError> {
    let negative = |key: String| ConfigError::NegativeLimit { path: path.to_owned(), key };
    for (key, value) in int_limits(limits) {
        if value.is_some_and(|v| v < 0) {
            return Err(negative(key.to_owned()));
        }
    }
    for (key, value) in float_fields(limits) {
        if value.is_some_and(|v| v < 0.0) {
            return Err(negative(key.to_owned()));
        }
    }
    for (model, price) in limits.model_prices.iter().flatten() {
        for (field, value) in price.fields() {
            if value.is_some_and(|v| v < 0.0) {
                return Err(negative(format!("model_prices.{model}.{field}")));
            }
        }
    }
    Ok(())
}

fn int_limits(limits: &LimitsFile) -> [(&'static str, Option<i64>); 9] {
    let [first_byte, stream_idle, mcp_startup, drain] = deadline_fields(limits);
    [
        ("max_runtime_seconds", limits.max_runtime_seconds),
        ("max_tool_calls", limits.max_tool_calls),
        ("max_input_tokens", limits.max_input_tokens),
        ("max_output_tokens", limits.max_output_tokens),
        ("shell_timeout_seconds", limits.shell_timeout_seconds),
        first_byte,
        stream_idle,
        mcp_startup,
        drain,
    ]
}

/// The liveness deadlines of one file, in [`DEADLINE_KEYS`] order.
fn deadline_fields(limits: &LimitsFile) -> [(&'static str, Option<i64>); 4] {
    [
        (DEADLINE_KEYS[0].0, limits.first_byte_timeout_seconds),
        (DEADLINE_KEYS[1].0, limits.stream_idle_timeout_seconds),
        (DEADLINE_KEYS[2].0, limits.mcp_startup_timeout_seconds),
        (DEADLINE_KEYS[3].0, limits.shutdown_drain_seconds),
    ]
}

/// \[beyond\] A liveness deadline cannot be off and cannot run past a day: `0` and values
/// above [`MAX_DEADLINE_SECONDS`] are fatal, `config <path>: limits.<key> must be from 1 to
/// 86400 seconds (leave it out for the default), got <v>`. Negatives were refused already.
pub(crate) fn check_deadlines(path: &str, limits: &LimitsFile) -> Result<(), ConfigError> {
    for (key, value) in deadline_fields(limits) {
        if let Some(value) = value
            && (value == 0 || value.unsigned_abs() > MAX_DEADLINE_SECONDS)
        {
            return Err(ConfigError::OutOfRange {
                path: path.to_owned(),
                key: format!("limits.{key}"),
                rule: "from 1 to 86400 seconds (leave it out for the default)",
                value,
            });
        }
    }
    Ok(())
}

fn float_fields(limits: &LimitsFile) -> [(&'static str, Option<f64>); 5] {
    [
        ("max_cost_usd", limits.max_cost_usd),
        ("input_cost_per_million_usd", limits.input_cost_per_million_usd),
        ("output_cost_per_million_usd", limits.output_cost_per_million_usd),
        ("cache_read_cost_per_million_usd", limits.cache_read_cost_per_million_usd),
        ("cache_write_cost_per_million_usd", limits.cache_write_cost_per_million_usd),
    ]
}

/// Merges the global and project `limits` (both already checked non-negative; the project's
/// prices already stripped). Prices come from the global file only.
pub(crate) fn merge_limits(global: &LimitsFile, project: &LimitsFile, warnings: &mut Vec<String>) -> LimitsConfig {
    let mut merge_int = |key: &str, global: Option<i64>, project: Option<i64>| {
        clamp_project_limit(key, global.unwrap_or(0), project.unwrap_or(0), warnings).unsigned_abs()
    };
    let max_runtime_seconds = merge_int("max_runtime_seconds", global.max_runtime_seconds, project.max_runtime_seconds);
    let max_tool_calls = merge_int("max_tool_calls", global.max_tool_calls, project.max_tool_calls);
    let max_input_tokens = merge_int("max_input_tokens", global.max_input_tokens, project.max_input_tokens);
    let max_output_tokens = merge_int("max_output_tokens", global.max_output_tokens, project.max_output_tokens);
    // Unset globally is the default cap, not "no cap": a project may only lower it.
    let global_shell = global.shell_timeout_seconds.filter(|seconds| *seconds > 0).unwrap_or(DEFAULT_SHELL_CAP);
    let shell_timeout_seconds = merge_int("shell_timeout_seconds", Some(global_shell), project.shell_timeout_seconds);
    // The deadlines likewise: unset globally is the default, which a project may only lower.
    let mut deadlines = [0; 4];
    for (merged, (((key, global), (_, project)), (_, default))) in
        deadlines.iter_mut().zip(deadline_fields(global).into_iter().zip(deadline_fields(project)).zip(DEADLINE_KEYS))
    {
        let global = global.filter(|seconds| *seconds > 0).unwrap_or(default.cast_signed());
        *merged = merge_int(key, Some(global), project);
    }
    let [first_byte, stream_idle, mcp_startup, drain] = deadlines;
    let max_cost_usd = clamp_project_limit(
        "max_cost_usd",
        global.max_cost_usd.unwrap_or(0.0),
        project.max_cost_usd.unwrap_or(0.0),
        warnings,
    );
    let model_prices = global
        .model_prices
        .iter()
        .flatten()
        .map(|(model, price)| {
            let price = ModelPrice {
                input_cost_per_million_usd: price.input_cost_per_million_usd.unwrap_or(0.0),
                output_cost_per_million_usd: price.output_cost_per_million_usd.unwrap_or(0.0),
                cache_read_cost_per_million_usd: price.cache_read_cost_per_million_usd.unwrap_or(0.0),
                cache_write_cost_per_million_usd: price.cache_write_cost_per_million_usd.unwrap_or(0.0),
            };
            (model.clone(), price)
        })
        .collect();
    LimitsConfig {
        max_runtime_seconds,
        max_tool_calls,
        max_input_tokens,
        max_output_tokens,
        shell_timeout_seconds,
        first_byte_timeout_seconds: first_byte,
        stream_idle_timeout_seconds: stream_idle,
        mcp_startup_timeout_seconds: mcp_startup,
        shutdown_drain_seconds: drain,
        max_cost_usd,
        input_cost_per_million_usd: global.input_cost_per_million_usd.unwrap_or(0.0),
        output_cost_per_million_usd: global.output_cost_per_million_usd.unwrap_or(0.0),
        cache_read_cost_per_million_usd: global.cache_read_cost_per_million_usd.unwrap_or(0.0),
        cache_write_cost_per_million_usd: global.cache_write_cost_per_million_usd.unwrap_or(0.0),
        model_prices,
        strict: global.strict.unwrap_or(false) || project.strict.unwrap_or(false),
    }
}

impl LimitsConfig {
    /// `first_byte_timeout_seconds` as a duration, the default for `0`.
    pub fn first_byte_timeout(&self) -> Duration {
        seconds_or_default(self.first_byte_timeout_seconds, DEADLINE_KEYS[0].1)
    }

    /// `stream_idle_timeout_seconds` as a duration, the default for `0`.
    pub fn stream_idle_timeout(&self) -> Duration {
        seconds_or_default(self.stream_idle_timeout_seconds, DEADLINE_KEYS[1].1)
    }

    /// `mcp_startup_timeout_seconds` as a duration, the default for `0`.
    pub fn mcp_startup_timeout(&self) -> Duration {
        seconds_or_default(self.mcp_startup_timeout_seconds, DEADLINE_KEYS[2].1)
    }

    /// `shutdown_drain_seconds` as a duration, the default for `0`.
    pub fn shutdown_drain(&self) -> Duration {
        seconds_or_default(self.shutdown_drain_seconds, DEADLINE_KEYS[3].1)
    }
}

/// `seconds` (at most a day), or `default` for `0`.
fn seconds_or_default(seconds: u64, default: u64) -> Duration {
    let seconds = if seconds == 0 { default } else { seconds.min(MAX_DEADLINE_SECONDS) };
    Duration::from_secs(seconds)
}

impl LimitsConfig {
    /// The prices of `model` (§3): its `model_prices` entry, each missing or non-positive price
    /// falling back to the flat one on its own; a cache price still `0` then means the input
    /// price, when the cost is computed.
    pub fn prices_of(&self, model: &str) -> ModelPrices {
        let specific = self.model_prices.get(model);
        let pick =
            |field: fn(&ModelPrice) -> f64, flat: f64| specific.map(field).filter(|price| *price > 0.0).unwrap_or(flat);
        let (input, output) = resolve_price(
            specific.map(|price| (price.input_cost_per_million_usd, price.output_cost_per_million_usd)),
            (self.input_cost_per_million_usd, self.output_cost_per_million_usd),
        );
        ModelPrices {
            input,
            output,
            cache_read: pick(|price| price.cache_read_cost_per_million_usd, self.cache_read_cost_per_million_usd),
            cache_write: pick(|price| price.cache_write_cost_per_million_usd, self.cache_write_cost_per_million_usd),
        }
    }
}

/// The loop's limits for the run `config` describes: the merged budgets, and the prices of
/// `core.model` ([`LimitsConfig::prices_of`]). `shell_timeout_seconds` is the shell tool's, not
/// a budget.
impl From<&Config> for BudgetLimits {
    fn from(config: &Config) -> BudgetLimits {
        let limits = &config.limits;
        BudgetLimits {
            max_runtime_seconds: limits.max_runtime_seconds,
            max_tool_calls: limits.max_tool_calls,
            max_input_tokens: limits.max_input_tokens,
            max_output_tokens: limits.max_output_tokens,
            max_cost_usd: limits.max_cost_usd,
            ..BudgetLimits::default()
        }
        .priced_at(limits.prices_of(&config.core.model))
    }
}

/// The §5 clamp for one limit: a project `0` inherits the global value, a project value may set
/// a limit the global file leaves at `0`, and a project value above a global one is clamped to
/// it with a warning.
pub(crate) fn clamp_project_limit<T>(key: &str, global: T, project: T, warnings: &mut Vec<String>) -> T
where
    T: Copy + Default + PartialOrd + Display,
{
    let zero = T::default();
    if project == zero {
        return global;
    }
    if global > zero && project > global {
        warnings.push(format!(
            "{PROJECT_DISPLAY}: limits.{key} {project} exceeds the global limit {global}; clamped to {global}"
        ));
        return global;
    }
    project
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell_limits(seconds: i64) -> LimitsFile {
        LimitsFile { shell_timeout_seconds: Some(seconds), ..LimitsFile::default() }
    }

    #[test]
    fn the_shell_timeout_cap_defaults_to_1800_and_a_project_may_only_lower_it() {
        let mut warnings = Vec::new();
        let none = LimitsFile::default();
        assert_eq!(merge_limits(&none, &none, &mut warnings).shell_timeout_seconds, 1800);
        assert_eq!(merge_limits(&shell_limits(7200), &none, &mut warnings).shell_timeout_seconds, 7200);
        assert_eq!(merge_limits(&none, &shell_limits(60), &mut warnings).shell_timeout_seconds, 60);
        assert!(warnings.is_empty());
        assert_eq!(merge_limits(&none, &shell_limits(3600), &mut warnings).shell_timeout_seconds, 1800);
        assert_eq!(
            warnings,
            ["./odek.json: limits.shell_timeout_seconds 3600 exceeds the global limit 1800; clamped to 1800"]
        );
        let error = check_limits_not_negative("x.json", &shell_limits(-1)).unwrap_err();
        assert_eq!(error.to_string(), "config x.json: limits.shell_timeout_seconds must be >= 0");
    }

    #[test]
    fn the_loops_limits_take_the_budgets_and_the_models_prices() {
        let mut config = Config::default();
        config.core.model = "m1".to_owned();
        config.limits = LimitsConfig {
            first_byte_timeout_seconds: 120,
            stream_idle_timeout_seconds: 90,
            mcp_startup_timeout_seconds: 30,
            shutdown_drain_seconds: 10,
            max_runtime_seconds: 60,
            max_tool_calls: 7,
            max_input_tokens: 1000,
            max_output_tokens: 77,
            shell_timeout_seconds: 1800,
            max_cost_usd: 2.5,
            input_cost_per_million_usd: 0.3,
            output_cost_per_million_usd: 1.2,
            cache_read_cost_per_million_usd: 0.03,
            cache_write_cost_per_million_usd: 0.0,
            model_prices: BTreeMap::from([(
                "m1".to_owned(),
                ModelPrice {
                    input_cost_per_million_usd: 3.0,
                    cache_write_cost_per_million_usd: 3.75,
                    ..ModelPrice::default()
                },
            )]),
            strict: false,
        };
        let limits = BudgetLimits::from(&config);
        assert_eq!(
            limits,
            BudgetLimits {
                max_runtime_seconds: 60,
                max_tool_calls: 7,
                max_input_tokens: 1000,
                max_output_tokens: 77,
                max_cost_usd: 2.5,
                input_price_per_million: 3.0,
                output_price_per_million: 1.2,
                cache_read_price_per_million: 0.03,
                cache_write_price_per_million: 3.75,
            }
        );
        config.core.model = "other".to_owned();
        assert_eq!(BudgetLimits::from(&config).input_price_per_million, 0.3);
    }

    fn deadline_limits(first_byte: Option<i64>, drain: Option<i64>) -> LimitsFile {
        LimitsFile { first_byte_timeout_seconds: first_byte, shutdown_drain_seconds: drain, ..LimitsFile::default() }
    }

    #[test]
    fn deadlines_default_and_a_project_may_only_shorten_them() {
        let mut warnings = Vec::new();
        let none = LimitsFile::default();
        let merged = merge_limits(&none, &none, &mut warnings);
        assert_eq!(
            (
                merged.first_byte_timeout_seconds,
                merged.stream_idle_timeout_seconds,
                merged.mcp_startup_timeout_seconds,
                merged.shutdown_drain_seconds
            ),
            (120, 90, 30, 10)
        );
        assert_eq!(
            merge_limits(&deadline_limits(Some(600), None), &none, &mut warnings).first_byte_timeout(),
            Duration::from_secs(600)
        );
        assert_eq!(
            merge_limits(&none, &deadline_limits(Some(5), Some(2)), &mut warnings).shutdown_drain(),
            Duration::from_secs(2)
        );
        assert!(warnings.is_empty());
        assert_eq!(
            merge_limits(&none, &deadline_limits(Some(500), None), &mut warnings).first_byte_timeout_seconds,
            120
        );
        assert_eq!(
            warnings,
            ["./odek.json: limits.first_byte_timeout_seconds 500 exceeds the global limit 120; clamped to 120"]
        );
        assert_eq!(LimitsConfig::default().stream_idle_timeout(), Duration::from_secs(90));
    }

    #[test]
    fn a_deadline_of_zero_or_over_a_day_is_refused() {
        for (value, shown) in [(0, "0"), (86_401, "86401"), (i64::MAX, "9223372036854775807")] {
            let error = check_deadlines("x.json", &deadline_limits(Some(value), None)).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!(
                    "config x.json: limits.first_byte_timeout_seconds must be from 1 to 86400 seconds (leave it out for the default), got {shown}"
                )
            );
        }
        assert!(check_deadlines("x.json", &deadline_limits(Some(86_400), Some(1))).is_ok());
        let error = check_limits_not_negative("x.json", &deadline_limits(None, Some(-3))).unwrap_err();
        assert_eq!(error.to_string(), "config x.json: limits.shutdown_drain_seconds must be >= 0");
    }

    #[test]
    fn strict_is_on_when_either_file_turns_it_on_and_a_project_cannot_turn_it_off_red() {
        let strict = |value| LimitsFile { strict: Some(value), ..LimitsFile::default() };
        let none = LimitsFile::default();
        let mut warnings = Vec::new();
        assert!(!merge_limits(&none, &none, &mut warnings).strict);
        assert!(merge_limits(&strict(true), &none, &mut warnings).strict);
        assert!(merge_limits(&none, &strict(true), &mut warnings).strict);
        assert!(merge_limits(&strict(true), &strict(false), &mut warnings).strict);
        assert!(warnings.is_empty());
    }

    #[test]
    fn clamp_rule() {
        let mut warnings = Vec::new();
        assert_eq!(clamp_project_limit("max_tool_calls", 10, 0, &mut warnings), 10);
        assert_eq!(clamp_project_limit("max_tool_calls", 10, 5, &mut warnings), 5);
        assert_eq!(clamp_project_limit("max_tool_calls", 10, 10, &mut warnings), 10);
        assert_eq!(clamp_project_limit("max_tool_calls", 0, 50, &mut warnings), 50);
        assert!(warnings.is_empty());
        assert_eq!(clamp_project_limit("max_tool_calls", 10, 11, &mut warnings), 10);
        assert_eq!(clamp_project_limit("max_cost_usd", 2.5, 7.25, &mut warnings), 2.5);
        assert_eq!(clamp_project_limit("max_cost_usd", 2.0, 3.0, &mut warnings), 2.0);
        assert_eq!(
            warnings,
            vec![
                "./odek.json: limits.max_tool_calls 11 exceeds the global limit 10; clamped to 10",
                "./odek.json: limits.max_cost_usd 7.25 exceeds the global limit 2.5; clamped to 2.5",
                "./odek.json: limits.max_cost_usd 3 exceeds the global limit 2; clamped to 2",
            ]
        );
    }
}
