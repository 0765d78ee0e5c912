//! A sub-agent's run (spec `subagents.md` §4–§7). First the rules that turn its task into the
//! settings of the run (§4 steps 2–5): the profile, the trust lockdown no profile can lift, the
//! task's `max_risk`, the budgets (flags within the caps, clamped to the parent's share in share
//! mode), and what a child never has — a plan of its own, streaming, `artifact_read`, and MCP
//! servers when it is untrusted. Then the run itself, to its §7 result: the soft and the hard
//! deadline, the artifacts staged in the workspace and moved into the artifact root, and what
//! the result may carry. Start at [`Runtime::prepare_child`], then [`Runtime::run_child`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use odek_agent::budget::{BudgetLimits, clamp_to_share, share_spawn_gate};
use odek_agent::finish::output_schema::compile_inline_schema;
use odek_agent::run::RunError;
use odek_agent::subagent::artifacts::{
    TaskId, append_artifact_flags, prepare_staging, relocate_staged, scan_artifact_root,
};
use odek_agent::subagent::prompt::{Lifespan, TaskText, subagent_system_prompt, subagent_user_message};
use odek_agent::subagent::result::{RunEnd, SubagentResult};
use odek_agent::subagent::task::TaskFile;
use odek_contract::quoting::quote;
use odek_contract::redaction::redact;
use odek_contract::untrusted::new_nonce;
use odek_danger::{DangerClass, NonInteractive};
use odek_llm::Message;
use tokio_util::sync::CancellationToken;

use crate::agent_parts::budget_limits;
use crate::config::{NO_PROFILE, SUBAGENT_MAX_ITERATIONS, SUBAGENT_MAX_TIMEOUT_SECONDS};
use crate::error::RuntimeError;
use crate::runtime::{Runtime, TurnControl};

/// Most artifact flags appended to a summary; a child that leaves thousands of files behind must
/// not turn its result into a flood.
const MAX_ARTIFACT_FLAGS: usize = 32;

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
    /// The task, or its parent, is not `trusted`: the §4 lockdown applies.
    pub untrusted: bool,
    /// The cap on the child's whole run (seconds): the hard deadline.
    pub timeout_seconds: u64,
    /// The cap on the child's iterations.
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

/// `operator` lowered to `task` when the task sets a cap (`0`: none of its own).
fn lower_cap<T: Ord + Default>(operator: T, task: T) -> T {
    if task == T::default() { operator } else { operator.min(task) }
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
        let untrusted = task.is_untrusted();
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
        // [beyond] The task's own caps only lower what the operator allows.
        let timeout_seconds = lower_cap(timeout_seconds, task.timeout_seconds);
        let max_iterations = lower_cap(max_iterations, task.max_iterations);
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

        // [beyond] The task's output schema and checks.
        let output_schema = match &task.output_schema {
            Some(schema) => {
                Some(Arc::new(compile_inline_schema(schema).map_err(|error| ChildError::Setup(error.to_string()))?))
            }
            None => None,
        };

        let settings = self.settings_mut();
        if output_schema.is_some() {
            settings.finish.output_schema = output_schema;
        }
        // Only the task's checks: the configured ones verify the top-level run, not each child.
        settings.finish.checks = task.checks.iter().filter(|check| !check.trim().is_empty()).cloned().collect();
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

impl Runtime {
    /// Runs the child prepared by [`Runtime::prepare_child`] to its §7 result: one turn on the
    /// task under the plan's soft deadline (the loop is asked to finalize) and hard deadline (the
    /// run is cancelled), cancelled as well when `interrupt` fires; deliverables staged in the
    /// workspace are moved into the task's artifact root and listed; secrets are redacted from
    /// the summary and the error. `Err` is a setup failure (the provider or, for a trusted child,
    /// an MCP server could not start): the face reports it as such (exit 3).
    pub async fn run_child(
        &self,
        task: &TaskFile,
        plan: &ChildPlan,
        started: Instant,
        interrupt: &CancellationToken,
    ) -> Result<SubagentResult, RuntimeError> {
        let mut session = self.session(Vec::new(), None)?;
        // The provider, then (trusted children only) the MCP servers.
        session.ready().await?;

        let cwd = self.setup().sources.cwd.clone();
        let artifact_task = artifact_task(task);
        let mut artifact_flags = Vec::new();
        if let Some((task_id, _)) = &artifact_task
            && let Err(err) = prepare_staging(&cwd, task_id)
        {
            artifact_flags.push(format!("[artifact] staging lookup failed: {err}"));
        }
        let lifespan = Lifespan {
            timeout_seconds: plan.timeout_seconds,
            max_iterations: plan.max_iterations,
            limits: plan.limits,
        };
        let task_text = TaskText {
            goal: &task.goal,
            guidance: &task.guidance,
            context: &task.context,
            artifact_task_id: artifact_task.as_ref().map(|(task_id, _)| task_id.as_str()),
        };
        let announce_budget = self.settings().config.subagent.announce_budget;
        session.reset(vec![Message::system(subagent_system_prompt(&lifespan, announce_budget))], None)?;
        let user = subagent_user_message(&task_text, plan.untrusted, &new_nonce());

        let control = TurnControl { started: Some(started), ..TurnControl::default() };
        let hard_deadline_hit = Arc::new(AtomicBool::new(false));
        let deadlines =
            spawn_deadlines(plan.timeout_seconds, interrupt, &control.cancel, &control.finalize, &hard_deadline_hit);
        let outcome = session.turn_with(user, &control).await;
        deadlines.abort();
        let messages = session.messages().to_vec();
        let spent = session.spent().usage;
        session.close().await;

        let mut validated = None;
        let (end, usage) = match outcome {
            Ok(outcome) => {
                validated = outcome.output.is_some().then(|| outcome.answer.clone());
                (RunEnd::Answer(outcome.answer), outcome.usage)
            }
            Err(RuntimeError::Run(RunError::Budget(exceeded))) => (RunEnd::Budget(exceeded.to_string()), spent),
            Err(RuntimeError::Run(RunError::Cancelled)) if hard_deadline_hit.load(Ordering::Acquire) => {
                (RunEnd::HardTimeout { seconds: plan.timeout_seconds }, spent)
            }
            Err(RuntimeError::Run(RunError::Cancelled)) => (RunEnd::Cancelled, spent),
            Err(other) => (RunEnd::Failed(other.to_string(), other.outcome()), spent),
        };
        let mut result = SubagentResult::from_run(&end, &messages, usage, started.elapsed().as_secs_f64());
        if let Some(answer) = &validated {
            result.set_summary(answer);
        }
        if let Some((task_id, root)) = artifact_task {
            let collected = tokio::task::spawn_blocking(move || {
                let mut flags = relocate_staged(&cwd, &task_id, &root);
                let scan = scan_artifact_root(&root);
                flags.extend(scan.flags);
                (scan.artifacts, flags)
            })
            .await;
            match collected {
                Ok((artifacts, flags)) => {
                    result.artifacts = artifacts;
                    artifact_flags.extend(flags);
                }
                Err(err) => artifact_flags.push(format!("[artifact] staging relocation failed: {err}")),
            }
        }
        result.summary = append_artifact_flags(&result.summary, &cap_flags(artifact_flags));
        result.summary = redact(&result.summary).into_owned();
        result.error = redact(&result.error).into_owned();
        result.parent_session = self.settings().parent_session.clone().unwrap_or_default();
        let limits = &plan.limits;
        if limits.input_price_per_million > 0.0 || limits.output_price_per_million > 0.0 {
            result.cost_usd = Some(limits.cost_micro_usd(usage) as f64 / 1e6);
        }
        Ok(result)
    }
}

/// The task's id and artifact root, when the task file names both (a parent's task).
fn artifact_task(task: &TaskFile) -> Option<(TaskId, PathBuf)> {
    if task.artifact_root.is_empty() {
        return None;
    }
    let task_id = TaskId::parse(&task.task_id).ok()?;
    Some((task_id, PathBuf::from(&task.artifact_root)))
}

/// The first [`MAX_ARTIFACT_FLAGS`] flags, then how many more there were.
fn cap_flags(mut flags: Vec<String>) -> Vec<String> {
    if flags.len() > MAX_ARTIFACT_FLAGS {
        let hidden = flags.len() - MAX_ARTIFACT_FLAGS;
        flags.truncate(MAX_ARTIFACT_FLAGS);
        flags.push(format!("[artifact] (+{hidden} more)"));
    }
    flags
}

/// The hard deadline cancels the run (and so does `interrupt`); the soft deadline asks it to
/// finalize: `timeout − min(15 s, timeout / 8)`, at least 1 s.
fn spawn_deadlines(
    timeout_seconds: u64,
    interrupt: &CancellationToken,
    cancel: &CancellationToken,
    finalize: &CancellationToken,
    hard_deadline_hit: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let hard = Duration::from_secs(timeout_seconds);
    let soft = Duration::from_secs(timeout_seconds.saturating_sub((timeout_seconds / 8).min(15)).max(1));
    let (interrupt, cancel, finalize, hit) =
        (interrupt.clone(), cancel.clone(), finalize.clone(), Arc::clone(hard_deadline_hit));
    tokio::spawn(async move {
        let soft_deadline = tokio::time::sleep(soft);
        let hard_deadline = tokio::time::sleep(hard);
        tokio::pin!(soft_deadline, hard_deadline);
        loop {
            tokio::select! {
                () = &mut soft_deadline, if !finalize.is_cancelled() => finalize.cancel(),
                () = &mut hard_deadline => {
                    hit.store(true, Ordering::Release);
                    cancel.cancel();
                    return;
                }
                () = interrupt.cancelled() => {
                    cancel.cancel();
                    return;
                }
            }
        }
    })
}
