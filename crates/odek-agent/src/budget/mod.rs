//! Execution budgets (spec `budgets.md`): the five dimensions, price resolution and cost, the
//! checks the loop makes at its fixed points, and the typed error that makes `odek` exit 4.
//! The loop decides *when* to check (`run`); this module decides *whether* a limit is hit.
//! Share mode (a sub-agent's part of its parent's budget, §8–§9) is in `share`.

mod share;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use odek_llm::Usage;

pub use share::{BudgetShare, InputGrant, ShareBudget, clamp_to_share, share_spawn_gate};

/// The operator's limits for one run (`0` = no limit) and the resolved prices.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetLimits {
    pub max_runtime_seconds: u64,
    pub max_tool_calls: u64,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    pub max_cost_usd: f64,
    /// USD per million input tokens for the run's model (`0` = no price).
    pub input_price_per_million: f64,
    /// USD per million output tokens for the run's model (`0` = no price).
    pub output_price_per_million: f64,
    /// \[beyond\] USD per million input tokens read from the prompt cache (`0` = the input
    /// price).
    pub cache_read_price_per_million: f64,
    /// \[beyond\] USD per million input tokens written to the prompt cache (`0` = the input
    /// price).
    pub cache_write_price_per_million: f64,
}

impl BudgetLimits {
    /// Cost is enforced only with a cap and both prices.
    pub fn cost_enforced(&self) -> bool {
        self.max_cost_usd > 0.0 && self.input_price_per_million > 0.0 && self.output_price_per_million > 0.0
    }

    /// §3's startup warning when a cost cap cannot be enforced (without the `odek: warning: `
    /// prefix); `None` when there is nothing to warn about.
    pub fn cost_warning(&self, model: &str) -> Option<String> {
        (self.max_cost_usd > 0.0 && !self.cost_enforced()).then(|| {
            format!(
                "max_cost_usd is set but no input/output prices resolve for model {}; cost enforcement is disabled (token budgets still apply)",
                odek_contract::quoting::quote(model)
            )
        })
    }

    /// Estimated cost of `usage` in USD. Absurd prices times large token counts can make it
    /// infinite (or NaN); [`BudgetLimits::cost_exceeded`] counts that as exhausted.
    /// Cache-read and cache-write tokens are priced at their own prices where set, at the
    /// input price otherwise.
    pub fn cost_usd(&self, usage: Usage) -> f64 {
        let or_input = |price: f64| if price > 0.0 { price } else { self.input_price_per_million };
        usage.uncached_input_tokens() as f64 / 1e6 * self.input_price_per_million
            + usage.cache_read_tokens as f64 / 1e6 * or_input(self.cache_read_price_per_million)
            + usage.cache_write_tokens as f64 / 1e6 * or_input(self.cache_write_price_per_million)
            + usage.output_tokens as f64 / 1e6 * self.output_price_per_million
    }

    /// Estimated cost of `usage` in whole micro-USD (rounded to nearest), saturating at
    /// `u64::MAX` for a cost too large (or not finite) to count.
    pub fn cost_micro_usd(&self, usage: Usage) -> u64 {
        to_micro(self.cost_usd(usage))
    }

    /// The cost check (§3, §4): with cost enforced, `usage` costing at least `max_cost_usd`
    /// (compared in whole micro-USD) is the typed error. A cost that is not a finite number
    /// always exhausts the budget: the cap never fails open.
    /// The cost check for a cost already computed.
    fn cost_exceeded_at(&self, cost: f64) -> Option<BudgetExceeded> {
        if !self.cost_enforced() {
            return None;
        }
        let exhausted = !cost.is_finite() || to_micro(cost) >= to_micro(self.max_cost_usd);
        exhausted.then(|| BudgetExceeded {
            limit_name: LimitName::CostUsd,
            observed: BudgetValue::Usd(if cost.is_finite() { to_micro(cost) as f64 / 1e6 } else { cost }),
            limit: BudgetValue::Usd(self.max_cost_usd),
        })
    }
}

/// Whole micro-USD, rounded to nearest; `0` for nothing (or less), `u64::MAX` for more than a
/// `u64` holds and for NaN, so a broken number can only ever look expensive.
fn to_micro(usd: f64) -> u64 {
    let micro = (usd * 1e6).round();
    if micro.is_nan() || micro >= u64::MAX as f64 {
        u64::MAX
    } else if micro > 0.0 {
        micro as u64
    } else {
        0
    }
}

/// \[beyond\] The prices of a model other than the run's (a `fallback_models` entry), as
/// [`BudgetLimits`] carries the run model's: USD per million tokens, `0` = none (cache prices:
/// the input price).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelPrices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl BudgetLimits {
    /// These limits with `prices` in place of the run model's.
    pub fn priced_at(mut self, prices: ModelPrices) -> BudgetLimits {
        self.input_price_per_million = prices.input;
        self.output_price_per_million = prices.output;
        self.cache_read_price_per_million = prices.cache_read;
        self.cache_write_price_per_million = prices.cache_write;
        self
    }
}

/// §3: the exact model id's prices, each missing or non-positive one falling back to the flat
/// price on its own.
pub fn resolve_price(model_price: Option<(f64, f64)>, flat: (f64, f64)) -> (f64, f64) {
    let pick = |specific: Option<f64>, flat: f64| specific.filter(|price| *price > 0.0).unwrap_or(flat);
    (pick(model_price.map(|price| price.0), flat.0), pick(model_price.map(|price| price.1), flat.1))
}

/// A budget dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitName {
    Runtime,
    ToolCalls,
    InputTokens,
    OutputTokens,
    CostUsd,
}

impl LimitName {
    /// Every dimension.
    pub(crate) const ALL: [LimitName; 5] =
        [LimitName::Runtime, LimitName::ToolCalls, LimitName::InputTokens, LimitName::OutputTokens, LimitName::CostUsd];

    /// The dimension's name as events and limits spell it (`input_tokens`, `cost_usd`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            LimitName::Runtime => "runtime",
            LimitName::ToolCalls => "tool_calls",
            LimitName::InputTokens => "input_tokens",
            LimitName::OutputTokens => "output_tokens",
            LimitName::CostUsd => "cost_usd",
        }
    }
}

/// An observed value or a limit: integers for every dimension but cost (USD).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetValue {
    Count(u64),
    Usd(f64),
}

/// The typed budget error (§5 step 4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetExceeded {
    pub limit_name: LimitName,
    pub observed: BudgetValue,
    pub limit: BudgetValue,
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.limit_name.as_str();
        match (self.observed, self.limit) {
            (BudgetValue::Usd(observed), BudgetValue::Usd(limit)) => {
                write!(f, "execution budget exceeded: {name} observed ${observed:.6} (limit ${limit:.6})")
            }
            (observed, limit) => {
                write!(f, "execution budget exceeded: {name} observed {} (limit {})", plain(observed), plain(limit))
            }
        }
    }
}

fn plain(value: BudgetValue) -> String {
    match value {
        BudgetValue::Count(count) => count.to_string(),
        BudgetValue::Usd(usd) => format!("{usd:.6}"),
    }
}

impl std::error::Error for BudgetExceeded {}

/// The run's budget state.
#[derive(Debug, Clone)]
pub struct Budget {
    limits: BudgetLimits,
    started: Instant,
    /// What earlier turns of the same session spent ([`Budget::after`]): counted with this
    /// run's usage against the token and cost limits.
    prior: Usage,
    /// Tool calls executed, earlier turns' included.
    executed_tool_calls: u64,
    /// What `delegate_tasks` sees of this run in share mode, and what it charges back.
    ledger: Arc<Ledger>,
    /// \[beyond\] The prices of the models a fallback may answer with, by model id.
    other_models: Arc<BTreeMap<String, ModelPrices>>,
}

/// The run's spend as the loop last published it, plus what children charged back and what
/// they were granted but have not yet spent (`budgets.md` §8).
#[derive(Debug, Default)]
struct Ledger {
    executed_tool_calls: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    cache_read_tokens: AtomicU64,
    cache_write_tokens: AtomicU64,
    /// Children's `tokens_used`, not yet added to the loop's totals.
    child_charges: AtomicU64,
    /// Input tokens granted to children still running.
    outstanding_grants: AtomicU64,
    /// \[beyond\] USD to add to the cost of the totals (an `f64`'s bits): the totals are priced
    /// at the run model's prices, and an answer from another model (a fallback) adds here the
    /// difference to its own. Cost is linear in usage, so the sum is exact.
    repricing_usd: AtomicU64,
}

impl Ledger {
    /// The usage as last published.
    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens.load(Ordering::Acquire),
            output_tokens: self.output_tokens.load(Ordering::Acquire),
            cache_read_tokens: self.cache_read_tokens.load(Ordering::Acquire),
            cache_write_tokens: self.cache_write_tokens.load(Ordering::Acquire),
        }
    }

    fn repricing_usd(&self) -> f64 {
        f64::from_bits(self.repricing_usd.load(Ordering::Acquire))
    }

    /// The cost of `totals` at the run's prices, with the fallback answers repriced.
    fn cost_usd(&self, limits: &BudgetLimits, totals: Usage) -> f64 {
        limits.cost_usd(totals) + self.repricing_usd()
    }
}

impl Budget {
    /// `started` is the run's start (runtime counts from there).
    pub fn new(limits: BudgetLimits, started: Instant) -> Budget {
        Budget {
            limits,
            started,
            prior: Usage::default(),
            executed_tool_calls: 0,
            ledger: Arc::default(),
            other_models: Arc::default(),
        }
    }

    /// \[beyond\] This budget, knowing the prices of the models a fallback may answer with.
    pub fn with_model_prices(mut self, prices: BTreeMap<String, ModelPrices>) -> Budget {
        self.other_models = Arc::new(prices);
        self
    }

    /// \[beyond\] `usage` (already in the totals) was answered by `model`, not the run's: its
    /// cost follows that model's prices. A model without an entry costs what the run's does.
    pub(crate) fn charge_model(&self, model: &str, usage: Usage) {
        let Some(prices) = self.other_models.get(model) else { return };
        let delta = self.limits.priced_at(*prices).cost_usd(usage) - self.limits.cost_usd(usage);
        let _ = self
            .ledger
            .repricing_usd
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |bits| Some((f64::from_bits(bits) + delta).to_bits()));
    }

    /// This budget for a later turn of a session whose earlier turns spent `usage` and ran
    /// `tool_calls` calls: the token, cost and tool-call limits hold for the whole session (the
    /// runtime limit and the iterations stay per turn), and a limit already reached stops the
    /// turn before its first model call, with the session's figures.
    pub fn after(mut self, usage: Usage, tool_calls: u64) -> Budget {
        self.prior = usage;
        self.executed_tool_calls = tool_calls;
        self.ledger.executed_tool_calls.store(tool_calls, Ordering::Release);
        self.publish_usage(Usage::default());
        self
    }

    /// The spend so far, earlier turns included: usage as last published and tool calls run.
    pub fn spent(&self) -> (Usage, u64) {
        (self.ledger.usage(), self.executed_tool_calls)
    }

    /// Publishes the run's usage so far (earlier turns' added) for [`BudgetShare`] snapshots.
    pub(crate) fn publish_usage(&self, totals: Usage) {
        let totals = self.with_prior(totals);
        self.ledger.input_tokens.store(totals.input_tokens, Ordering::Release);
        self.ledger.output_tokens.store(totals.output_tokens, Ordering::Release);
        self.ledger.cache_read_tokens.store(totals.cache_read_tokens, Ordering::Release);
        self.ledger.cache_write_tokens.store(totals.cache_write_tokens, Ordering::Release);
    }

    /// The run's `totals` with what earlier turns spent.
    fn with_prior(&self, totals: Usage) -> Usage {
        let mut sum = self.prior;
        sum.add(totals);
        sum
    }

    /// Children's spend charged back since the last call: add it to the run's input tokens.
    pub(crate) fn take_child_charges(&self) -> u64 {
        self.ledger.child_charges.swap(0, Ordering::AcqRel)
    }

    /// No limits at all.
    pub fn unlimited() -> Budget {
        Budget::new(BudgetLimits::default(), Instant::now())
    }

    #[cfg(test)]
    fn limits(&self) -> &BudgetLimits {
        &self.limits
    }

    /// Before every main LLM call: whole elapsed seconds `>=` max.
    pub(crate) fn check_runtime(&self) -> Result<(), BudgetExceeded> {
        let max = self.limits.max_runtime_seconds;
        let elapsed = self.started.elapsed().as_secs();
        exceeded_at_or_above(LimitName::Runtime, elapsed, max)
    }

    /// When the runtime budget runs out (`None` without one): the moment the whole elapsed
    /// seconds reach the max, so the check is also enforced while a model call or a tool batch
    /// is in flight, not only before the next call. A limit too far away for the clock to
    /// represent (`--max-runtime 18446744073709551615`) can never be reached: no deadline.
    pub(crate) fn runtime_deadline(&self) -> Option<Instant> {
        let max = self.limits.max_runtime_seconds;
        if max == 0 {
            return None;
        }
        self.started.checked_add(std::time::Duration::from_secs(max))
    }

    /// The runtime error at (or after) [`Budget::runtime_deadline`].
    pub(crate) fn runtime_expired(&self) -> BudgetExceeded {
        let max = self.limits.max_runtime_seconds;
        BudgetExceeded {
            limit_name: LimitName::Runtime,
            observed: BudgetValue::Count(self.started.elapsed().as_secs().max(max)),
            limit: BudgetValue::Count(max),
        }
    }

    /// After every LLM response: input tokens, output tokens, then cost, each `>=` max.
    pub fn check_usage(&self, totals: Usage) -> Result<(), BudgetExceeded> {
        let totals = self.with_prior(totals);
        exceeded_at_or_above(LimitName::InputTokens, totals.input_tokens, self.limits.max_input_tokens)?;
        exceeded_at_or_above(LimitName::OutputTokens, totals.output_tokens, self.limits.max_output_tokens)?;
        self.limits.cost_exceeded_at(self.ledger.cost_usd(&self.limits, totals)).map_or(Ok(()), Err)
    }

    /// The estimated cost of the run's `totals` (earlier turns' added) in USD, fallback answers
    /// at their own models' prices.
    pub fn cost_usd(&self, totals: Usage) -> f64 {
        self.ledger.cost_usd(&self.limits, self.with_prior(totals))
    }

    /// Before a batch is scheduled: executed + batch `>` max (a batch reaching the cap runs).
    pub(crate) fn check_tool_calls(&self, batch: usize) -> Result<(), BudgetExceeded> {
        let max = self.limits.max_tool_calls;
        let observed = self.executed_tool_calls.saturating_add(batch as u64);
        if max > 0 && observed > max {
            return Err(BudgetExceeded {
                limit_name: LimitName::ToolCalls,
                observed: BudgetValue::Count(observed),
                limit: BudgetValue::Count(max),
            });
        }
        Ok(())
    }

    /// Counts a batch that ran.
    pub(crate) fn record_executed(&mut self, calls: usize) {
        self.executed_tool_calls = self.executed_tool_calls.saturating_add(calls as u64);
        self.ledger.executed_tool_calls.store(self.executed_tool_calls, Ordering::Release);
    }

    /// Whether any dimension is exhausted now (side calls are skipped then).
    pub(crate) fn any_exhausted(&self, totals: Usage) -> bool {
        self.check_runtime().is_err() || self.check_usage(totals).is_err() || self.tool_calls_exhausted()
    }

    fn tool_calls_exhausted(&self) -> bool {
        self.limits.max_tool_calls > 0 && self.executed_tool_calls >= self.limits.max_tool_calls
    }

    /// Every budget other than tool calls still has headroom (the partial-summary condition).
    pub(crate) fn others_have_headroom(&self, totals: Usage) -> bool {
        self.check_runtime().is_ok() && self.check_usage(totals).is_ok()
    }
}

fn exceeded_at_or_above(limit_name: LimitName, observed: u64, max: u64) -> Result<(), BudgetExceeded> {
    if max > 0 && observed >= max {
        return Err(BudgetExceeded {
            limit_name,
            observed: BudgetValue::Count(observed),
            limit: BudgetValue::Count(max),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage::new(input_tokens, output_tokens)
    }

    /// `started + max` overflowed the clock and panicked for a limit as large as the flag or the
    /// config accepts.
    #[test]
    fn a_later_turn_counts_what_the_session_spent() {
        let limits = BudgetLimits { max_input_tokens: 100, max_tool_calls: 3, ..BudgetLimits::default() };
        let budget = Budget::new(limits, Instant::now()).after(usage(90, 0), 2);
        assert!(budget.check_usage(usage(9, 0)).is_ok());
        let err = budget.check_usage(usage(10, 0)).unwrap_err();
        assert_eq!((err.observed, err.limit), (BudgetValue::Count(100), BudgetValue::Count(100)));
        assert!(budget.check_tool_calls(1).is_ok());
        assert!(budget.check_tool_calls(2).is_err());
        budget.publish_usage(usage(5, 1));
        assert_eq!(budget.spent(), (usage(95, 1), 2));
        let spent_out = Budget::new(limits, Instant::now()).after(usage(100, 0), 0);
        assert!(spent_out.check_usage(Usage::default()).is_err(), "a spent session stops before a model call");
    }

    #[test]
    fn a_runtime_limit_beyond_the_clock_is_no_deadline_red() {
        for max_runtime_seconds in [u64::MAX, i64::MAX as u64] {
            let budget = Budget::new(BudgetLimits { max_runtime_seconds, ..BudgetLimits::default() }, Instant::now());
            assert_eq!(budget.runtime_deadline(), None);
            assert!(budget.check_runtime().is_ok());
        }
        let budget = Budget::new(BudgetLimits { max_runtime_seconds: 5, ..BudgetLimits::default() }, Instant::now());
        assert!(budget.runtime_deadline().is_some());
    }

    #[test]
    fn token_limits_are_inclusive_and_checked_in_order() {
        let budget = Budget::new(
            BudgetLimits { max_input_tokens: 100, max_output_tokens: 10, ..BudgetLimits::default() },
            Instant::now(),
        );
        assert!(budget.check_usage(usage(99, 9)).is_ok());
        let err = budget.check_usage(usage(100, 10)).unwrap_err();
        assert_eq!(err.to_string(), "execution budget exceeded: input_tokens observed 100 (limit 100)");
        let err = budget.check_usage(usage(5, 12)).unwrap_err();
        assert_eq!(err.to_string(), "execution budget exceeded: output_tokens observed 12 (limit 10)");
    }

    #[test]
    fn tool_calls_are_exclusive_a_batch_reaching_the_cap_runs() {
        let mut budget = Budget::new(BudgetLimits { max_tool_calls: 3, ..BudgetLimits::default() }, Instant::now());
        assert!(budget.check_tool_calls(3).is_ok());
        budget.record_executed(2);
        assert!(budget.check_tool_calls(1).is_ok());
        let err = budget.check_tool_calls(2).unwrap_err();
        assert_eq!(err.to_string(), "execution budget exceeded: tool_calls observed 4 (limit 3)");
    }

    #[test]
    fn runtime_counts_whole_seconds_inclusive() {
        let started = Instant::now().checked_sub(Duration::from_millis(2500)).unwrap();
        let budget = Budget::new(BudgetLimits { max_runtime_seconds: 2, ..BudgetLimits::default() }, started);
        assert_eq!(
            budget.check_runtime().unwrap_err().to_string(),
            "execution budget exceeded: runtime observed 2 (limit 2)"
        );
        let budget = Budget::new(BudgetLimits { max_runtime_seconds: 3, ..BudgetLimits::default() }, started);
        assert!(budget.check_runtime().is_ok());
    }

    #[test]
    fn the_runtime_deadline_is_where_the_check_starts_to_fire() {
        let started = Instant::now();
        let budget = Budget::new(BudgetLimits { max_runtime_seconds: 2, ..BudgetLimits::default() }, started);
        assert_eq!(budget.runtime_deadline(), Some(started + Duration::from_secs(2)));
        assert_eq!(budget.runtime_expired().to_string(), "execution budget exceeded: runtime observed 2 (limit 2)");
        assert_eq!(Budget::unlimited().runtime_deadline(), None);
    }

    #[test]
    fn cost_uses_micro_usd_and_the_spec_format() {
        let limits = BudgetLimits {
            max_cost_usd: 0.1,
            input_price_per_million: 1.0,
            output_price_per_million: 2.0,
            ..BudgetLimits::default()
        };
        let budget = Budget::new(limits, Instant::now());
        assert!(budget.check_usage(usage(90_000, 4_999)).is_ok());
        let err = budget.check_usage(usage(90_000, 10_000)).unwrap_err();
        assert_eq!(err.to_string(), "execution budget exceeded: cost_usd observed $0.110000 (limit $0.100000)");
        assert_eq!(err.observed, BudgetValue::Usd(0.11));
    }

    #[test]
    fn cost_without_prices_is_not_enforced_and_warns() {
        let limits = BudgetLimits { max_cost_usd: 0.1, input_price_per_million: 1.0, ..BudgetLimits::default() };
        assert!(!limits.cost_enforced());
        assert!(Budget::new(limits, Instant::now()).check_usage(usage(u64::MAX / 2, 0)).is_ok());
        assert_eq!(
            limits.cost_warning("m1").unwrap(),
            "max_cost_usd is set but no input/output prices resolve for model \"m1\"; cost enforcement is disabled (token budgets still apply)"
        );
    }

    fn absurd_prices() -> BudgetLimits {
        BudgetLimits {
            max_cost_usd: 1.0,
            input_price_per_million: 1e308,
            output_price_per_million: 1e308,
            ..BudgetLimits::default()
        }
    }

    /// A cost that overflows to infinity used to round to 0 micro-USD, so the cap never fired.
    #[test]
    fn an_infinite_cost_exhausts_the_budget_red() {
        let budget = Budget::new(absurd_prices(), Instant::now());
        assert!(budget.limits().cost_usd(usage(1_000_000, 1_000_000)).is_infinite());
        let err = budget.check_usage(usage(1_000_000, 1_000_000)).unwrap_err();
        assert_eq!(err.limit_name, LimitName::CostUsd);
        assert_eq!(err.to_string(), "execution budget exceeded: cost_usd observed $inf (limit $1.000000)");
        assert!(budget.any_exhausted(usage(1_000_000, 1_000_000)));
    }

    /// A finite cost beyond what `u64` micro-USD can hold saturates instead of wrapping to 0.
    #[test]
    fn a_cost_too_large_to_count_exhausts_the_budget_red() {
        let limits = BudgetLimits { output_price_per_million: 1.0, ..absurd_prices() };
        let huge = usage(1_000_000, 0);
        assert!(limits.cost_usd(huge).is_finite());
        assert_eq!(limits.cost_micro_usd(huge), u64::MAX);
        assert!(limits.cost_exceeded_at(limits.cost_usd(huge)).is_some());
    }

    #[test]
    fn a_nan_cost_exhausts_the_budget_red() {
        // 0 tokens at an infinite price is NaN, which used to round to 0 micro-USD.
        let limits = BudgetLimits { input_price_per_million: f64::INFINITY, ..absurd_prices() };
        assert!(limits.cost_enforced());
        assert!(limits.cost_usd(usage(0, 5)).is_nan());
        let err = limits.cost_exceeded_at(limits.cost_usd(usage(0, 5))).unwrap();
        assert_eq!(err.to_string(), "execution budget exceeded: cost_usd observed $NaN (limit $1.000000)");
        assert_eq!(to_micro(f64::NEG_INFINITY), 0);
    }

    /// The share-mode snapshot (the task file's remaining cost) used to report headroom for a
    /// cost that had overflowed.
    #[test]
    fn the_share_snapshot_of_an_infinite_cost_is_exhausted_red() {
        let budget = Budget::new(absurd_prices(), Instant::now());
        budget.publish_usage(usage(1_000_000, 1_000_000));
        let share = budget.share();
        let snapshot = share.snapshot().unwrap();
        assert!(snapshot.cost_exhausted);
        assert_eq!(snapshot.max_cost_usd, 0.0);
        assert_eq!(share.exhausted().unwrap().limit_name, LimitName::CostUsd);
    }

    #[test]
    fn cache_tokens_have_their_own_prices_or_the_input_price() {
        let limits = BudgetLimits {
            input_price_per_million: 3.0,
            output_price_per_million: 15.0,
            cache_read_price_per_million: 0.3,
            cache_write_price_per_million: 3.75,
            ..BudgetLimits::default()
        };
        let usage =
            Usage { input_tokens: 1_100_000, output_tokens: 0, cache_read_tokens: 1_000_000, cache_write_tokens: 0 };
        assert!((limits.cost_usd(usage) - (0.3 + 0.3)).abs() < 1e-9);
        let written = Usage { cache_read_tokens: 0, cache_write_tokens: 1_000_000, ..usage };
        assert!((limits.cost_usd(written) - (0.3 + 3.75)).abs() < 1e-9);
        let unpriced = BudgetLimits { cache_read_price_per_million: 0.0, cache_write_price_per_million: 0.0, ..limits };
        assert!((unpriced.cost_usd(usage) - 3.3).abs() < 1e-9, "cache tokens fall back to the input price");
    }

    #[test]
    fn a_fallback_answer_is_priced_at_its_own_model() {
        let limits = BudgetLimits {
            max_cost_usd: 1.0,
            input_price_per_million: 1.0,
            output_price_per_million: 1.0,
            ..BudgetLimits::default()
        };
        let prices = ModelPrices { input: 10.0, output: 10.0, ..ModelPrices::default() };
        let budget =
            Budget::new(limits, Instant::now()).with_model_prices(BTreeMap::from([("big".to_owned(), prices)]));
        let answer = usage(50_000, 0);
        budget.charge_model("big", answer);
        budget.charge_model("unknown", answer);
        assert!((budget.cost_usd(usage(100_000, 0)) - (0.05 + 0.5)).abs() < 1e-9);
        assert!(budget.check_usage(usage(100_000, 0)).is_ok());
        budget.charge_model("big", usage(50_000, 0));
        assert!(budget.check_usage(usage(150_000, 0)).is_err(), "0.05 + 0.5 + 0.5 reaches the cap");
    }

    #[test]
    fn prices_fall_back_per_field() {
        assert_eq!(resolve_price(Some((3.0, 0.0)), (1.0, 2.0)), (3.0, 2.0));
        assert_eq!(resolve_price(Some((-1.0, 5.0)), (1.0, 2.0)), (1.0, 5.0));
        assert_eq!(resolve_price(None, (1.0, 2.0)), (1.0, 2.0));
    }
}
