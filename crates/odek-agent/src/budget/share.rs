//! Share mode (spec `budgets.md` §8–§9): a parent's budget as `delegate_tasks` sees it — what
//! remains, the input-token grants and the charge-back of a child's spend — the budget block a
//! task file carries to the child, and the child's side: its limits clamped to that block and
//! the spawn gate. Start at [`Budget::share`] (parent) and [`clamp_to_share`] (child).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use odek_llm::Usage;
use serde::{Deserialize, Serialize};

use super::{Budget, BudgetExceeded, BudgetLimits, BudgetValue, Ledger, LimitName, exceeded_at_or_above, to_micro};

impl Budget {
    /// The handle `delegate_tasks` uses in share mode.
    pub fn share(&self) -> BudgetShare {
        BudgetShare { limits: self.limits, started: self.started, ledger: Arc::clone(&self.ledger) }
    }
}

/// A parent's budget as `delegate_tasks` sees it in share mode (`budgets.md` §8): snapshots of
/// what remains, the input-token grants, and the charge-back of a child's spend.
#[derive(Debug, Clone)]
pub struct BudgetShare {
    limits: BudgetLimits,
    started: Instant,
    ledger: Arc<Ledger>,
}

/// Input tokens reserved for one child; give it back with `BudgetShare::settle`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InputGrant(pub u64);

impl BudgetShare {
    fn totals(&self) -> Usage {
        let charged = self.ledger.child_charges.load(Ordering::Acquire);
        let mut totals = self.ledger.usage();
        totals.input_tokens = totals.input_tokens.saturating_add(charged);
        totals
    }

    fn budget(&self) -> Budget {
        Budget {
            limits: self.limits,
            started: self.started,
            // The ledger's usage already includes earlier turns' spend.
            prior: Usage::default(),
            executed_tool_calls: self.ledger.executed_tool_calls.load(Ordering::Acquire),
            ledger: Arc::clone(&self.ledger),
            other_models: Arc::default(),
        }
    }

    /// The first exhausted dimension in the order runtime, tool calls, cost, input tokens.
    pub(crate) fn exhausted(&self) -> Option<BudgetExceeded> {
        let budget = self.budget();
        let totals = self.totals();
        if let Err(exceeded) = budget.check_runtime() {
            return Some(exceeded);
        }
        if budget.tool_calls_exhausted() {
            return Some(BudgetExceeded {
                limit_name: LimitName::ToolCalls,
                observed: BudgetValue::Count(budget.executed_tool_calls),
                limit: BudgetValue::Count(self.limits.max_tool_calls),
            });
        }
        if let Some(exceeded) = self.limits.cost_exceeded_at(self.ledger.cost_usd(&self.limits, totals)) {
            return Some(exceeded);
        }
        exceeded_at_or_above(LimitName::InputTokens, totals.input_tokens, self.limits.max_input_tokens).err()
    }

    /// §8's snapshot right before a spawn: what remains of runtime, tool calls and cost (cost
    /// only when enforced), each clamped at 0, with the exhausted flags. Input tokens are set
    /// by the grant. `None` when the parent limits none of the four dimensions.
    pub(crate) fn snapshot(&self) -> Option<ShareBudget> {
        let limits = &self.limits;
        if limits.max_runtime_seconds == 0
            && limits.max_tool_calls == 0
            && limits.max_input_tokens == 0
            && !limits.cost_enforced()
        {
            return None;
        }
        let mut share = ShareBudget::default();
        if limits.max_runtime_seconds > 0 {
            let elapsed = self.started.elapsed().as_secs();
            share.max_runtime_seconds = limits.max_runtime_seconds.saturating_sub(elapsed);
            share.runtime_exhausted = elapsed >= limits.max_runtime_seconds;
        }
        if limits.max_tool_calls > 0 {
            let executed = self.ledger.executed_tool_calls.load(Ordering::Acquire);
            share.max_tool_calls = limits.max_tool_calls.saturating_sub(executed);
            share.tool_calls_exhausted = executed >= limits.max_tool_calls;
        }
        if limits.cost_enforced() {
            let totals = self.totals();
            let cost_usd = self.ledger.cost_usd(limits, totals);
            let cost = to_micro(cost_usd) as f64 / 1e6;
            share.cost_exhausted = limits.cost_exceeded_at(cost_usd).is_some();
            share.max_cost_usd = if share.cost_exhausted { 0.0 } else { (limits.max_cost_usd - cost).max(0.0) };
        }
        if limits.max_input_tokens > 0 {
            share.input_tokens_exhausted = self.totals().input_tokens >= limits.max_input_tokens;
        }
        Some(share)
    }

    /// §8: reserves `floor(uncommitted headroom / unspawned)` input tokens for the next child,
    /// where the headroom is max − used − grants outstanding. `Ok(None)` when input tokens are
    /// not limited; `Err(())` when the grant would be zero (the spawn is refused).
    #[allow(clippy::result_unit_err)]
    pub fn grant_input_tokens(&self, unspawned: usize) -> Result<Option<InputGrant>, ()> {
        let max = self.limits.max_input_tokens;
        if max == 0 {
            return Ok(None);
        }
        let used = self.totals().input_tokens;
        let divisor = unspawned.max(1) as u64;
        // Computed and reserved in one step: two calls granting at once cannot both spend the
        // same headroom.
        let mut grant = 0;
        let reserved =
            self.ledger.outstanding_grants.fetch_update(Ordering::AcqRel, Ordering::Acquire, |outstanding| {
                grant = max.saturating_sub(used).saturating_sub(outstanding) / divisor;
                (grant > 0).then(|| outstanding.saturating_add(grant))
            });
        if reserved.is_err() {
            return Err(());
        }
        Ok(Some(InputGrant(grant)))
    }

    /// A child ended: its grant is released and its `tokens_used` charged to the parent.
    pub(crate) fn settle(&self, grant: Option<InputGrant>, tokens_used: u64) {
        if let Some(InputGrant(grant)) = grant {
            let _ = self.ledger.outstanding_grants.fetch_update(Ordering::AcqRel, Ordering::Acquire, |outstanding| {
                Some(outstanding.saturating_sub(grant))
            });
        }
        self.ledger.child_charges.fetch_add(tokens_used, Ordering::AcqRel);
    }
}

/// The parent's remaining budget (share mode). Zero values and false flags are omitted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShareBudget {
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub max_runtime_seconds: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub max_tool_calls: u64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub max_cost_usd: f64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub max_input_tokens: u64,
    #[serde(skip_serializing_if = "is_false")]
    pub runtime_exhausted: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub tool_calls_exhausted: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub cost_exhausted: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub input_tokens_exhausted: bool,
}

fn is_zero_u64(value: &u64) -> bool {
    *value == 0
}

fn is_zero_f64(value: &f64) -> bool {
    *value == 0.0
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `budgets.md` §9: the child's limits clamped to the parent's remaining budget. An exhausted
/// flag makes the cap 0 (the spawn gate stops the child first); a positive block value caps the
/// operator value (an unlimited operator value takes it); `max_output_tokens` is never shared.
pub fn clamp_to_share(operator: BudgetLimits, share: &ShareBudget) -> BudgetLimits {
    fn clamp(operator: u64, shared: u64) -> u64 {
        if shared == 0 {
            operator
        } else if operator == 0 {
            shared
        } else {
            operator.min(shared)
        }
    }
    let mut limits = operator;
    limits.max_runtime_seconds = clamp(operator.max_runtime_seconds, share.max_runtime_seconds);
    limits.max_tool_calls = clamp(operator.max_tool_calls, share.max_tool_calls);
    limits.max_input_tokens = clamp(operator.max_input_tokens, share.max_input_tokens);
    if share.max_cost_usd > 0.0 {
        limits.max_cost_usd = if operator.max_cost_usd > 0.0 {
            operator.max_cost_usd.min(share.max_cost_usd)
        } else {
            share.max_cost_usd
        };
    }
    if share.runtime_exhausted {
        limits.max_runtime_seconds = 0;
    }
    if share.tool_calls_exhausted {
        limits.max_tool_calls = 0;
    }
    if share.cost_exhausted {
        limits.max_cost_usd = 0.0;
    }
    if share.input_tokens_exhausted {
        limits.max_input_tokens = 0;
    }
    limits
}

/// `budgets.md` §9 spawn gate: the first exhausted dimension, in the order runtime, tool calls,
/// cost, input tokens, as the child's error text.
pub fn share_spawn_gate(share: &ShareBudget) -> Option<String> {
    let exhausted = [
        (share.runtime_exhausted, LimitName::Runtime),
        (share.tool_calls_exhausted, LimitName::ToolCalls),
        (share.cost_exhausted, LimitName::CostUsd),
        (share.input_tokens_exhausted, LimitName::InputTokens),
    ];
    let (_, limit) = exhausted.into_iter().find(|(flag, _)| *flag)?;
    Some(format!(
        "parent budget exhausted before start: execution budget exceeded: {} observed 0 (limit 0)",
        limit.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_clamps_each_dimension() {
        let operator = BudgetLimits { max_tool_calls: 10, max_runtime_seconds: 0, ..BudgetLimits::default() };
        let share =
            ShareBudget { max_tool_calls: 4, max_runtime_seconds: 30, max_input_tokens: 0, ..ShareBudget::default() };
        let limits = clamp_to_share(operator, &share);
        assert_eq!(limits.max_tool_calls, 4);
        assert_eq!(limits.max_runtime_seconds, 30);
        assert_eq!(limits.max_input_tokens, 0);
        let exhausted = ShareBudget { tool_calls_exhausted: true, ..ShareBudget::default() };
        assert_eq!(clamp_to_share(operator, &exhausted).max_tool_calls, 0);
    }

    #[test]
    fn spawn_gate_names_the_first_exhausted_dimension() {
        let share = ShareBudget { cost_exhausted: true, input_tokens_exhausted: true, ..ShareBudget::default() };
        assert_eq!(
            share_spawn_gate(&share).unwrap(),
            "parent budget exhausted before start: execution budget exceeded: cost_usd observed 0 (limit 0)"
        );
        assert_eq!(share_spawn_gate(&ShareBudget::default()), None);
    }
}
