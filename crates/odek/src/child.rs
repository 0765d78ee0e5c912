//! The rules that turn a sub-agent's task into the settings of its run (spec `subagents.md` §4
//! steps 2–5): the profile, the trust lockdown no profile can lift, the task's `max_risk`, the
//! budgets (flags within the caps, clamped to the parent's share in share mode), and what a
//! child never has — a plan of its own, streaming, `artifact_read`, and MCP servers when it is
//! untrusted. Start at [`Runtime::prepare_child`].

use std::sync::Arc;

use odek_agent::budget::{BudgetLimits, clamp_to_share, share_spawn_gate};
use odek_agent::subagent::task::TaskFile;
use odek_contract::quoting::quote;
use odek_danger::{DangerClass, NonInteractive};

use crate::agent_parts::budget_limits;
use crate::config::{NO_PROFILE, SUBAGENT_MAX_ITERATIONS, SUBAGENT_MAX_TIMEOUT_SECONDS};
use crate::runtime::Runtime;

/// Classes an untrusted child always denies (§4 step 3).
pub const UNTRUSTED_DENIED: [DangerClass; 9] = [
    DangerClass::Destructive,
    DangerClass::CodeExecution,
    DangerClass::Install,
    DangerClass::SystemWrite,
    DangerClass::Persistence,
    DangerClass::UnreadExec,
    DangerClass::NetworkEgress,
    DangerClass::Unknown,
    DangerClass::Blocked,
];

/// What the child was asked to do, beside its task file: the command's flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChildFlags<'a> {
    /// `--profile`, which wins over the task's.
    pub profile: Option<&'a str>,
    /// `--timeout` as given (≤ 0 = the configured default).
    pub timeout: Option<i64>,
    /// `--max-iter` as given (≤ 0 = the configured default).
    pub max_iter: Option<i64>,
    /// `--parent-session`: named as the parent of the child's own children.
    pub parent_session: Option<&'a str>,
}

/// The child's run as decided.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildPlan {
    /// The profile applied (`""` for none).
    pub profile: String,
    pub untrusted: bool,
    /// The cap on the child's whole run (seconds) and on its iterations.
    pub timeout_seconds: u64,
    pub max_iterations: u32,
    /// The operator's limits, before any share clamp.
    pub operator_limits: BudgetLimits,
    /// The limits the run enforces.
    pub limits: BudgetLimits,
    /// The risk cap from the profile and the task, the lower of the two.
    pub max_risk: Option<DangerClass>,
}

/// Why the child may not run.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildError {
    /// A setup error with the spec's text (exit 3).
    Setup(String),
    /// The parent's shared budget is spent (exit 4): the spawn gate's text, and the plan as far
    /// as it was decided.
    SpawnGate(String, Box<ChildPlan>),
}

impl Runtime {
    /// Decides the child's profile, trust, risk cap and budgets from `task` and `flags` and
    /// applies them to this runtime's settings (steps 2–5 of `subagents.md` §4).
    pub fn prepare_child(&mut self, task: &TaskFile, flags: &ChildFlags<'_>) -> Result<ChildPlan, ChildError> {
        let config = self.settings().config.clone();
        let subagent = &config.subagent;

        // Step 2: the profile.
        let chosen =
            [flags.profile.unwrap_or_default(), task.profile.as_str()].into_iter().find(|name| !name.is_empty());
        // `none` switches the default off; only the operator's config can say so.
        let profile_name = match chosen {
            Some(name) => name.to_owned(),
            None if subagent.default_profile == NO_PROFILE => String::new(),
            None => subagent.default_profile.clone(),
        };
        let profile = if profile_name.is_empty() {
            None
        } else {
            Some(config.profiles.get(&profile_name).cloned().ok_or_else(|| {
                ChildError::Setup(format!(
                    "unknown profile {} (define it in the top-level profiles config section, or adjust subagent.default_profile)",
                    quote(&profile_name)
                ))
            })?)
        };
        let mut policy = config.dangerous.policy_settings();
        policy.non_interactive = NonInteractive::Deny;
        let mut tools_filter = config.tools.clone();
        if let Some(profile) = &profile {
            policy.max_risk = Some(profile.max_risk);
            if let Some(allowlist) = &profile.allowlist {
                policy.allowlist.clone_from(allowlist);
            }
            if let Some(tools) = &profile.tools {
                tools_filter = tools.clone();
            }
        }

        // Step 3: trust, which the profile cannot lift.
        let declared_untrusted = task.trust_level != "trusted";
        let parent_untrusted = !task.parent_trust.is_empty() && task.parent_trust != "trusted";
        let untrusted = declared_untrusted || parent_untrusted;
        if untrusted {
            policy.hard_deny.extend(UNTRUSTED_DENIED);
        }
        if !task.max_risk.is_empty() {
            let cap = DangerClass::parse(&task.max_risk)
                .filter(|class| class.rank().is_some())
                .ok_or_else(|| ChildError::Setup(format!("invalid max_risk {}", quote(&task.max_risk))))?;
            policy.max_risk = Some(match policy.max_risk {
                Some(current) if current.rank() <= cap.rank() => current,
                _ => cap,
            });
        }

        // Step 4: budgets, clamped to the parent's remaining budget in share mode.
        let operator_limits = budget_limits(&config, &|warning| self.warn(warning));
        let timeout_seconds = match flags.timeout {
            Some(seconds) if seconds > 0 => {
                u64::try_from(seconds).unwrap_or(u64::MAX).min(SUBAGENT_MAX_TIMEOUT_SECONDS)
            }
            _ => subagent.timeout_seconds,
        };
        let max_iterations = match flags.max_iter {
            Some(n) if n > 0 => u32::try_from(n).unwrap_or(u32::MAX).min(SUBAGENT_MAX_ITERATIONS),
            _ => subagent.max_iterations,
        };
        let mut plan = ChildPlan {
            profile: profile_name,
            untrusted,
            timeout_seconds,
            max_iterations,
            operator_limits,
            limits: operator_limits,
            max_risk: policy.max_risk,
        };
        if let Some(share) = &task.budget {
            if let Some(error) = share_spawn_gate(share) {
                return Err(ChildError::SpawnGate(error, Box::new(plan)));
            }
            plan.limits = clamp_to_share(operator_limits, share);
        }

        let settings = self.settings_mut();
        settings.policy = policy;
        settings.config.tools = tools_filter;
        settings.config.core.max_iterations = max_iterations;
        // A child plans nothing of its own and streams nothing: its parent reads its result.
        settings.config.planning.enabled = false;
        settings.stream = false;
        settings.limits = Some(plan.limits);
        // Step 5: MCP servers only for trusted children.
        settings.mcp_servers = !untrusted;
        settings.untrusted = untrusted;
        settings.artifact_read = false;
        settings.replay_script = task.replay.clone().map(Arc::new);
        settings.parent_session = flags.parent_session.map(str::to_owned);
        Ok(plan)
    }
}
