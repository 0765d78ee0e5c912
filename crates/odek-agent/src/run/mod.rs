//! The agent loop (spec `loop-and-sessions.md` §1–§2, §5–§7): iterations of one model call and
//! the tool batch it asks for, until a final answer, the iteration cap or an error. Everything
//! the loop does to text before the model sees it is in `framing`; trimming is in `trim`;
//! side calls in `side_calls`; hints in `hints`. Of those, the binary uses only what is
//! re-exported here: [`outcome_text`] and [`tool_message`] (`odek ext call`), [`context_window`]
//! and [`estimate_messages_tokens`], [`format_duration`] (the status line) and the partial-summary
//! prefixes.
//!
//! Start at [`Agent::run`].

mod framing;
mod hints;
mod side_calls;
pub(crate) mod trim;

use std::collections::HashSet;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use odek_contract::outcome::Outcome;
use odek_contract::quoting::quote;
use odek_contract::redaction::redact;
use odek_llm::{
    ChatRequest, ChatResponse, LlmError, Message, Provider, Role, Thinking, ToolCall, ToolDefinition, Usage,
};
use thiserror::Error;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::budget::{Budget, BudgetExceeded, LimitName};
use crate::finish::checks::CheckReport;
use crate::finish::{FinishGates, Review, ReviewContext};
use crate::liveness::{Liveness, Phase, Stall};
use crate::observer::{CallResult, LoopEvent, LoopObserver, TrimMode};
use crate::plan::{PLAN_TOOL_NAME, PlanBoard, PlanTool};
use crate::tool::{Denial, FileEdit, Risk, Tool, ToolContext, ToolError, ToolOutcome};
pub use framing::{outcome_text, tool_message};
use hints::HintTracker;
pub use hints::format_duration;
use odek_danger::DangerClass;
use side_calls::{BUDGET_SUMMARY_PREFIX, compaction_digest, digest_body, partial_summary};
pub use side_calls::{ITERATION_SUMMARY_PREFIX, TIME_SUMMARY_PREFIX};
use trim::{
    ContextBudget, DIGEST_PREFIX, SURVIVAL_MODE_PREFIX, TrimTotals, estimate_tools_tokens, is_context_length_error,
    proactive_trim, protected_head_len, survival_trim, upsert_trim_warning,
};
pub use trim::{context_window, estimate_messages_tokens};

/// How long the calls of a batch get to wind down once the runtime budget cancelled them; a
/// call still running after that is abandoned. Long enough for a sub-agent, which is asked to
/// stop and killed a second later.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The loop's knobs (resolved config).
#[derive(Debug, Clone)]
pub struct LoopSettings {
    pub model: String,
    pub thinking: Thinking,
    pub stream: bool,
    pub max_iterations: u32,
    pub max_tool_parallel: usize,
    pub compaction: bool,
    /// The model's context window; `None` = no proactive trimming.
    pub context_window: Option<u64>,
    /// \[beyond\] `--strict`: a refused operation ends the run (outcome `denied`) once its batch
    /// is observed.
    pub strict: bool,
}

/// How a run failed. Texts are the spec's.
#[derive(Debug, Error)]
pub enum RunError {
    #[error("context canceled")]
    Cancelled,
    #[error("iteration {iteration}: {source}")]
    Provider { iteration: u32, source: LlmError },
    #[error("reached max iterations ({0}) without final answer")]
    MaxIterations(u32),
    #[error("time budget reached after {0} iterations without final answer")]
    TimeBudget(u32),
    #[error("{0}")]
    Checkpoint(String),
    /// The typed budget error: `odek` exits 4 on this and only this.
    #[error("{0}")]
    Budget(BudgetExceeded),
    /// \[beyond\] Under `--strict`, an operation was refused.
    #[error("operation denied (strict): {tool}: {reason} (risk: {class})", reason = redact(&.denial.reason), class = .denial.class)]
    Denied { tool: String, denial: Denial },
    /// \[beyond\] A phase deadline fired (the provider sent nothing for its first-byte or
    /// stream-idle limit): `run stalled: no progress in <phase> for <n>s (limit <limit>s)`.
    #[error("{0}")]
    Stalled(Stall),
    /// \[beyond\] The final answer never matched the output schema (`origin` names it).
    #[error("final answer does not match {origin} after {attempts} attempt(s): {detail}")]
    InvalidOutput { attempts: u32, detail: String, origin: String },
    /// \[beyond\] The `--check`s still failed when the cycles ran out, or one was denied;
    /// `checks` is the last cycle's reports.
    #[error("checks failed after {cycles} cycle(s): {detail}")]
    ChecksFailed { cycles: u32, detail: String, checks: Vec<CheckReport> },
}

impl RunError {
    /// `run_failed.error_class` (spec `events.md` §8).
    pub fn class(&self) -> &'static str {
        match self {
            RunError::Cancelled => "context_canceled",
            RunError::Provider { source, .. } => source.class(),
            RunError::Budget(_) => "execution_budget",
            RunError::Denied { .. } => "denied",
            RunError::Stalled(_) => "stalled",
            RunError::InvalidOutput { .. } => "invalid_output",
            RunError::ChecksFailed { .. } => "checks_failed",
            RunError::MaxIterations(_) | RunError::TimeBudget(_) | RunError::Checkpoint(_) => "error",
        }
    }

    /// How a run that ended in this error ended (`data.outcome`).
    pub fn outcome(&self) -> Outcome {
        match self {
            RunError::Cancelled => Outcome::Cancelled,
            RunError::Provider { .. } => Outcome::ModelError,
            RunError::Budget(_) => Outcome::BudgetExceeded,
            RunError::Denied { .. } => Outcome::Denied,
            RunError::Stalled(_) => Outcome::Stalled,
            RunError::InvalidOutput { .. } => Outcome::InvalidOutput,
            RunError::ChecksFailed { .. } => Outcome::ChecksFailed,
            RunError::MaxIterations(_) | RunError::TimeBudget(_) | RunError::Checkpoint(_) => Outcome::Error,
        }
    }
}

/// A finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// The final answer (not yet redacted for printing); under an output schema, the compact
    /// JSON of `output`.
    pub answer: String,
    pub usage: Usage,
    pub iterations: u32,
    /// \[beyond\] The answer's value, when it matched an output schema.
    pub output: Option<serde_json::Value>,
    /// \[beyond\] The last cycle of the `--check`s (empty without checks).
    pub checks: Vec<CheckReport>,
}

/// What one checkpoint save reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Saved {
    /// Messages in the saved file (`session_saved.message_count`).
    pub message_count: usize,
    /// A warning for the operator (without the `odek: warning: ` prefix).
    pub warning: Option<String>,
}

/// Persists the conversation after each completed step (`odek run --session`, `continue`).
pub trait Checkpoint: Send + Sync {
    /// Saves `messages`; `totals` is the run's usage so far.
    fn save(&mut self, messages: &[Message], totals: Usage) -> Result<Saved, String>;
}

/// One risky call on an approval card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalItem {
    pub tool: String,
    pub risk: Risk,
}

/// The operator's answer to an approval card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateAnswer {
    /// Run the batch.
    Approve,
    /// Run the batch and approve these exact commands for the rest of the run.
    ApproveAlways,
    Deny,
}

/// Asks the operator about a batch (interactive runs only).
pub trait BatchApprover: Send + Sync {
    /// `allow_always` is false when blanket trust must be refused.
    fn approve<'a>(&'a self, items: &'a [ApprovalItem], allow_always: bool) -> odek_llm::BoxFuture<'a, GateAnswer>;
}

/// The tools of the run: built-ins plus the MCP hub's tools (re-read when a list went stale),
/// filtered by the operator's `tools` settings.
pub struct ToolSet {
    builtins: Vec<Arc<dyn Tool>>,
    hub: Option<Arc<odek_mcp::McpHub>>,
    allowed: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    current: Vec<(String, Arc<dyn Tool>)>,
    definitions: Vec<ToolDefinition>,
    /// The run's plan, when the `plan` tool is registered (`plan.md`).
    plan: Option<Arc<PlanBoard>>,
}

impl ToolSet {
    pub fn new(
        builtins: Vec<Arc<dyn Tool>>,
        hub: Option<Arc<odek_mcp::McpHub>>,
        allowed: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    ) -> ToolSet {
        let mut set = ToolSet { builtins, hub, allowed, current: Vec::new(), definitions: Vec::new(), plan: None };
        set.rebuild();
        set
    }

    fn rebuild(&mut self) {
        let mut tools: Vec<Arc<dyn Tool>> = self.builtins.clone();
        if let Some(hub) = &self.hub {
            tools.extend(crate::mcp_tool::McpTool::all(hub));
            tools.extend(crate::mcp_resources::resource_tools(hub));
        }
        self.current.clear();
        self.definitions.clear();
        for tool in tools {
            let definition = tool.definition();
            if (self.allowed)(&definition.name) && !self.current.iter().any(|(name, _)| *name == definition.name) {
                self.current.push((definition.name.clone(), tool));
                self.definitions.push(definition);
            }
        }
    }

    /// §1 step 2 [beyond]: re-list stale MCP servers before the model call.
    async fn refresh(&mut self) {
        if let Some(hub) = &self.hub
            && hub.has_stale()
        {
            hub.refresh_stale().await;
            self.rebuild();
        }
    }

    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.current.iter().find(|(tool, _)| tool == name).map(|(_, tool)| Arc::clone(tool))
    }

    /// Registers the `plan` tool over `board` (planning enabled), unless the operator's `tools`
    /// settings filter `plan` out: then there is neither a tool nor a plan message.
    pub fn with_plan(mut self, board: Arc<PlanBoard>) -> ToolSet {
        if (self.allowed)(PLAN_TOOL_NAME) {
            self.builtins.push(Arc::new(PlanTool::new(Arc::clone(&board))));
            self.plan = Some(board);
            self.rebuild();
        }
        self
    }

    /// The run's plan, when the `plan` tool is registered.
    pub fn plan(&self) -> Option<&Arc<PlanBoard>> {
        self.plan.as_ref()
    }
}

/// Everything one run needs.
pub struct Agent {
    pub provider: Arc<dyn Provider>,
    pub tools: ToolSet,
    pub settings: LoopSettings,
    /// The context every call gets (`approved` is set per call by the gate).
    pub tool_context: ToolContext,
    pub observer: Arc<dyn LoopObserver>,
    /// Present on interactive runs: asks before `prompt`-class calls run.
    pub gate: Option<Arc<dyn BatchApprover>>,
    pub checkpoint: Option<Box<dyn Checkpoint>>,
    /// The run's execution budgets (`Budget::unlimited()` when none are set).
    pub budget: Budget,
    /// \[beyond\] The gates on the final answer (`FinishGates::default()`: none).
    pub finish: FinishGates,
}

/// What the loop carries from one iteration to the next.
struct RunState {
    /// The run's usage so far: model calls, side calls and children's charge-back.
    totals: Usage,
    hints: HintTracker,
    /// The context window and what the last model call used of it (proactive trimming).
    context: ContextBudget,
    trim_totals: TrimTotals,
    /// Resources approved with "always" for the rest of the run.
    always_approved: HashSet<String>,
    /// Messages already checked for untrusted content (see `note_untrusted_ingest`).
    untrusted_scanned: usize,
}

impl RunState {
    fn new(context_window: Option<u64>) -> RunState {
        RunState {
            totals: Usage::default(),
            hints: HintTracker::default(),
            context: ContextBudget::new(context_window),
            trim_totals: TrimTotals::default(),
            always_approved: HashSet::new(),
            untrusted_scanned: 0,
        }
    }
}

/// A batch of tool calls after it ran (or was denied), for the observe step.
struct Batch {
    calls: Vec<ToolCall>,
    /// The names as shown (redacted), by call.
    names: Vec<String>,
    call_ids: Vec<String>,
    finished: Vec<Finished>,
    /// The runtime budget ran out while the batch ran or the gate waited.
    expired: Option<BudgetExceeded>,
}

/// One call of a batch after it ran.
struct Finished {
    output: String,
    failed: bool,
    observed_chars: Option<u64>,
    duration: Duration,
    /// The call was refused, or operations were refused while it ran.
    denials: Vec<Denial>,
    /// \[beyond\] The file the call changed, for the observers.
    edit: Option<FileEdit>,
    /// \[beyond\] The verified artifact refs of its result, for the observers.
    artifacts: Vec<odek_contract::artifact_ref::ArtifactRef>,
}

impl Agent {
    /// Runs the loop on `messages` (system prompt and user task already in place) until a final
    /// answer. The conversation is left in `messages` whatever happens; on error it holds the
    /// latest safe state (no assistant tool-call message without all its results).
    pub async fn run(
        &mut self,
        messages: &mut Vec<Message>,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        self.run_until(messages, cancel, &CancellationToken::new()).await
    }

    /// [`Agent::run`] with a soft deadline (§6 finalization, a sub-agent's): once `finalize` is
    /// cancelled, no new batch starts; the run ends with the time-budget partial summary.
    pub async fn run_until(
        &mut self,
        messages: &mut Vec<Message>,
        cancel: &CancellationToken,
        finalize: &CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        let mut state = RunState::new(self.settings.context_window);
        let max_iterations = self.settings.max_iterations.max(1);
        if let Some(plan) = self.tools.plan() {
            plan.restore(messages);
        }

        for iteration in 1..=max_iterations {
            if cancel.is_cancelled() {
                return Err(RunError::Cancelled);
            }
            if finalize.is_cancelled() {
                return self.finalize(iteration - 1, messages, state.totals).await;
            }
            let Some(response) = self.think(iteration, messages, &mut state, cancel).await? else {
                continue;
            };
            let calls = response.message.tool_calls.len();
            if calls == 0 {
                let answer = response.message.content.clone();
                messages.push(response.message);
                let can_go_on = iteration < max_iterations;
                let review = self.review(iteration, &answer, messages, state.totals, can_go_on).await;
                // A budget stop has saved the session and reported itself already.
                if !matches!(review, Err(RunError::Budget(_))) {
                    self.persist(iteration, messages, state.totals)?;
                    self.observer.on_event(&LoopEvent::IterationCompleted {
                        iteration,
                        totals: state.totals,
                        tools_called: 0,
                    });
                }
                match review? {
                    Some((answer, output)) => return Ok(self.outcome(answer, output, state.totals, iteration)),
                    None => continue,
                }
            }
            if let Err(exceeded) = self.budget.check_tool_calls(calls) {
                return Err(self.exhausted(iteration, exceeded, messages, state.totals).await);
            }
            // The deadline passed while the model was thinking: this batch never starts.
            if finalize.is_cancelled() {
                return self.finalize(iteration - 1, messages, state.totals).await;
            }
            let batch = self.call(iteration, response.message, messages, &mut state, cancel).await;
            self.observe(iteration, batch, messages, &mut state).await?;
        }

        // §6: the iteration cap; an exhausted budget skips the side call.
        if self.budget.any_exhausted(state.totals) {
            return Err(RunError::MaxIterations(max_iterations));
        }
        self.tool_context.liveness.enter(Phase::Finalizing);
        let summary = self
            .until_runtime_deadline(partial_summary(
                self.provider.as_ref(),
                &self.settings.model,
                messages,
                ITERATION_SUMMARY_PREFIX,
            ))
            .await;
        match summary {
            Some(Ok((answer, usage))) => {
                state.totals.add(usage);
                messages.push(Message::assistant(answer.clone()));
                let review = self.review(max_iterations, &answer, messages, state.totals, false).await;
                if !matches!(review, Err(RunError::Budget(_))) {
                    self.persist(max_iterations, messages, state.totals)?;
                }
                let (answer, output) = review?.unwrap_or((answer, None));
                Ok(self.outcome(answer, output, state.totals, max_iterations))
            }
            Some(Err(_)) => Err(RunError::MaxIterations(max_iterations)),
            None => Err(self.exhausted(max_iterations, self.budget.runtime_expired(), messages, state.totals).await),
        }
    }

    /// Think: the model call of one iteration, after refreshing stale tool lists, the proactive
    /// trim and the runtime check, with the usage counted and checked. `None`: the context was
    /// too long and the survival trim ran; the iteration starts over.
    async fn think(
        &mut self,
        iteration: u32,
        messages: &mut Vec<Message>,
        state: &mut RunState,
        cancel: &CancellationToken,
    ) -> Result<Option<ChatResponse>, RunError> {
        self.observer.on_event(&LoopEvent::IterationStarted { iteration });
        self.tool_context.liveness.enter(Phase::Model);
        self.tools.refresh().await;
        self.proactive_trim(iteration, messages, state).await;
        if let Err(exceeded) = self.budget.check_runtime() {
            return Err(self.exhausted(iteration, exceeded, messages, state.totals).await);
        }

        self.note_untrusted_ingest(messages, &mut state.untrusted_scanned);
        let response = match self.model_call(iteration, messages, &mut state.context, cancel).await {
            Ok(response) => response,
            Err(RunError::Provider { source, .. }) if is_context_length_error(&source.to_string()) => {
                self.survival(iteration, messages);
                return Ok(None);
            }
            Err(RunError::Provider { source, .. }) => return Err(RunError::Provider { iteration, source }),
            Err(RunError::Budget(exceeded)) => {
                return Err(self.exhausted(iteration, exceeded, messages, state.totals).await);
            }
            Err(other) => return Err(other),
        };
        state.totals.add(response.usage);
        if let Some(model) = &response.model {
            self.budget.charge_model(model, response.usage);
        }
        self.budget.publish_usage(state.totals);
        state.context.record_reported_input(response.usage.input_tokens);
        self.observer.on_event(&LoopEvent::ModelResponded {
            iteration,
            usage: response.usage,
            totals: state.totals,
            tool_calls: response.message.tool_calls.len(),
        });
        // A response that crosses a token or cost limit is not acted on, nor kept.
        if let Err(exceeded) = self.budget.check_usage(state.totals) {
            return Err(self.exhausted(iteration, exceeded, messages, state.totals).await);
        }
        Ok(Some(response))
    }

    /// Call: the assistant message with its tool calls (each given an id of its own,
    /// [`unique_call_ids`]) into the history, the started events, the approval gate, then the
    /// batch, or a denial for every call.
    async fn call(
        &mut self,
        iteration: u32,
        mut assistant: Message,
        messages: &mut Vec<Message>,
        state: &mut RunState,
        cancel: &CancellationToken,
    ) -> Batch {
        assistant.role = Role::Assistant;
        let call_ids = unique_call_ids(iteration, &assistant.tool_calls, messages);
        // The ids go into history too, so each result answers exactly one call.
        for (call, id) in assistant.tool_calls.iter_mut().zip(&call_ids) {
            call.id.clone_from(id);
        }
        let batch = assistant.tool_calls.clone();
        messages.push(assistant);
        let names: Vec<String> = batch.iter().map(|call| shown_tool_name(&call.function.name)).collect();

        let risks: Vec<Option<Risk>> = batch
            .iter()
            .map(|call| {
                self.tools
                    .get(&call.function.name)
                    .and_then(|tool| tool.risk(&call.function.arguments, &self.tool_context))
            })
            .collect();
        for (index, call) in batch.iter().enumerate() {
            self.observer.on_event(&LoopEvent::ToolCallStarted {
                iteration,
                call_id: &call_ids[index],
                tool: &names[index],
                arguments: &call.function.arguments,
                risk: risks[index].as_ref(),
            });
        }

        let mut approved = self.approval_gate(&batch, &risks, &mut state.always_approved).await;
        // The runtime budget ran out while the batch was running (its calls were cancelled),
        // or while the gate waited for an answer (none of them starts).
        let mut expired = None;
        if approved.is_some()
            && let Err(exceeded) = self.budget.check_runtime()
        {
            expired = Some(exceeded);
            approved = None;
        }
        let finished = match approved {
            Some(approved) => {
                let (finished, ran_out) = self.execute_batch(&batch, approved, cancel).await;
                expired = ran_out;
                self.budget.record_executed(batch.len());
                // Share mode: children's spend counts as this run's input tokens.
                state.totals.input_tokens = state.totals.input_tokens.saturating_add(self.budget.take_child_charges());
                self.budget.publish_usage(state.totals);
                finished
            }
            None => risks
                .iter()
                .map(|risk| match expired {
                    Some(_) => failure(outcome_text(&Err(ToolError::new("cancelled"))), Duration::ZERO),
                    None => Finished {
                        denials: vec![Denial::new(
                            risk.as_ref().map_or(DangerClass::Safe, |risk| risk.class),
                            BATCH_DENIED,
                        )],
                        ..failure(format!("error: {BATCH_DENIED}"), Duration::ZERO)
                    },
                })
                .collect(),
        };
        Batch { calls: batch, names, call_ids, finished, expired }
    }

    /// Observe: the plan's events, each call's finished event and result message, the loop's
    /// hints, the plan message, then the budget that ran out during the batch or the checkpoint.
    async fn observe(
        &mut self,
        iteration: u32,
        batch: Batch,
        messages: &mut Vec<Message>,
        state: &mut RunState,
    ) -> Result<(), RunError> {
        let Batch { calls: batch, names, call_ids, finished, expired } = batch;
        // Plan events sit between the batch's started and finished events (events.md §11).
        if let Some(plan) = self.tools.plan() {
            for event in plan.take_events() {
                self.observer.on_plan_event(&event);
            }
        }

        let mut iteration_hints = Vec::new();
        for (((call, name), id), result) in batch.iter().zip(&names).zip(&call_ids).zip(&finished) {
            for denial in &result.denials {
                self.observer.on_event(&LoopEvent::OperationDenied { iteration, call_id: id, tool: name, denial });
            }
            let call_result = if result.failed {
                CallResult::Failed { output: &result.output }
            } else {
                CallResult::Completed { output: &result.output, observed_chars: result.observed_chars }
            };
            self.observer.on_event(&LoopEvent::ToolCallFinished {
                iteration,
                call_id: id,
                tool: name,
                duration: result.duration,
                result: call_result,
                edit: result.edit.as_ref(),
                artifacts: &result.artifacts,
            });
            let framed = tool_message(name, &result.output);
            messages.push(Message::tool(id.clone(), name.clone(), framed));
            if let Some(hint) = state.hints.observe_call(name, &call.function.arguments, result.failed, &result.output)
            {
                iteration_hints.push(hint);
            }
        }
        if !iteration_hints.is_empty() {
            messages.push(Message::system(iteration_hints.join("\n")));
        }
        if let Some(plan) = self.tools.plan() {
            plan.upsert_message(messages);
        }
        if let Some(exceeded) = expired {
            return Err(self.exhausted(iteration, exceeded, messages, state.totals).await);
        }
        self.persist(iteration, messages, state.totals)?;
        self.observer.on_event(&LoopEvent::IterationCompleted {
            iteration,
            totals: state.totals,
            tools_called: batch.len(),
        });
        strict_stop(self.settings.strict, &names, finished)
    }

    /// Before every model call: once any message the model is about to read holds an untrusted
    /// wrapper (a tool result, failed or not, a `--ctx` file, a resumed transcript, a compaction
    /// digest), the run has ingested untrusted content, and `delegate_tasks` forces its children
    /// untrusted (`subagents.md` §2). Only messages not yet checked are scanned; a trim that
    /// shortened the conversation starts the scan over.
    fn note_untrusted_ingest(&self, messages: &[Message], scanned: &mut usize) {
        let flag = &self.tool_context.untrusted_ingested;
        if flag.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let from = if *scanned > messages.len() { 0 } else { *scanned };
        // The plan's own wrapper fences what the model itself wrote; it is not ingested content.
        // \[beyond\] Nor are the servers' screened `instructions` in the system prompt: like their
        // tool descriptions, they describe tools rather than carry what the run read.
        let ingested = |message: &Message| {
            odek_contract::untrusted::untrusted_sources(&message.content).any(|source| {
                source != crate::plan::render::PLAN_SOURCE && !source.starts_with(odek_mcp::INSTRUCTIONS_SOURCE_PREFIX)
            })
        };
        if messages[from..].iter().any(ingested) {
            flag.store(true, std::sync::atomic::Ordering::Release);
        }
        *scanned = messages.len();
    }

    /// §6 finalization after `completed` iterations: the time-budget partial summary as the
    /// final answer, or the time-budget error when the side call fails.
    async fn finalize(
        &mut self,
        completed: u32,
        messages: &mut Vec<Message>,
        mut totals: Usage,
    ) -> Result<RunOutcome, RunError> {
        self.tool_context.liveness.enter(Phase::Finalizing);
        let summary = self
            .until_runtime_deadline(partial_summary(
                self.provider.as_ref(),
                &self.settings.model,
                messages,
                TIME_SUMMARY_PREFIX,
            ))
            .await;
        match summary {
            Some(Ok((answer, usage))) => {
                totals.add(usage);
                messages.push(Message::assistant(answer.clone()));
                let review = self.review(completed.max(1), &answer, messages, totals, false).await;
                if !matches!(review, Err(RunError::Budget(_))) {
                    self.persist(completed.max(1), messages, totals)?;
                }
                let (answer, output) = review?.unwrap_or((answer, None));
                Ok(self.outcome(answer, output, totals, completed))
            }
            Some(Err(_)) => Err(RunError::TimeBudget(completed)),
            None => Err(self.exhausted(completed.max(1), self.budget.runtime_expired(), messages, totals).await),
        }
    }

    /// The final-answer gates on `answer` (already in `messages`). `Some((answer, output))`:
    /// accepted, as the run returns it. `None`: a gate sent the model a new user message (now in
    /// `messages`) and the loop goes on. A run that cannot go on (`can_go_on` false: the last
    /// iteration, a partial summary) fails instead; so does one whose runtime budget runs out
    /// while the checks run.
    async fn review(
        &mut self,
        iteration: u32,
        answer: &str,
        messages: &mut Vec<Message>,
        totals: Usage,
        can_go_on: bool,
    ) -> Result<Option<(String, Option<serde_json::Value>)>, RunError> {
        if self.finish.is_empty() {
            return Ok(Some((answer.to_owned(), None)));
        }
        let ctx = ReviewContext {
            iteration,
            observer: self.observer.as_ref(),
            tool_context: &self.tool_context,
            approver: self.gate.as_deref(),
        };
        let review = self.finish.review(answer, &ctx);
        let review = match self.budget.runtime_deadline() {
            Some(deadline) => tokio::time::timeout_at(deadline.into(), review).await.ok(),
            None => Some(review.await),
        };
        match review {
            None => Err(self.exhausted(iteration, self.budget.runtime_expired(), messages, totals).await),
            Some(Review::Accept { answer, output }) => Ok(Some((answer, output))),
            Some(Review::Revise { feedback, .. }) if can_go_on => {
                messages.push(Message::user(feedback));
                Ok(None)
            }
            Some(Review::Revise { failure, .. } | Review::Fail(failure)) => Err(failure),
        }
    }

    fn outcome(&self, answer: String, output: Option<serde_json::Value>, usage: Usage, iterations: u32) -> RunOutcome {
        RunOutcome { answer, usage, iterations, output, checks: self.finish.last_checks().to_vec() }
    }

    /// budgets.md §5: the event, the partial summary (tool calls only, when every other budget
    /// has headroom), the safe state persisted, and the typed error.
    async fn exhausted(
        &mut self,
        iteration: u32,
        exceeded: BudgetExceeded,
        messages: &mut Vec<Message>,
        mut totals: Usage,
    ) -> RunError {
        self.observer.on_event(&LoopEvent::BudgetExceeded { iteration, exceeded: &exceeded });
        if exceeded.limit_name == LimitName::ToolCalls && self.budget.others_have_headroom(totals) {
            self.tool_context.liveness.enter(Phase::Finalizing);
            let summary = self
                .until_runtime_deadline(partial_summary(
                    self.provider.as_ref(),
                    &self.settings.model,
                    messages,
                    BUDGET_SUMMARY_PREFIX,
                ))
                .await;
            if let Some(Ok((answer, usage))) = summary {
                totals.add(usage);
                messages.push(Message::assistant(answer));
            }
        }
        if let Err(err) = self.persist(iteration, messages, totals) {
            return err;
        }
        RunError::Budget(exceeded)
    }

    async fn model_call(
        &self,
        iteration: u32,
        messages: &[Message],
        budget: &mut ContextBudget,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, RunError> {
        let tools = self.tools.definitions();
        budget.record_estimate(estimate_messages_tokens(messages) + estimate_tools_tokens(tools));
        let request = ChatRequest {
            model: &self.settings.model,
            messages,
            tools,
            thinking: self.settings.thinking,
            stream: self.settings.stream,
            side_call: false,
            timeout: None,
            output_schema: self.finish.output_schema(),
        };
        let observer =
            NotingProgress { inner: self.observer.as_ref(), liveness: &self.tool_context.liveness, iteration };
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(RunError::Cancelled),
            response = self.until_runtime_deadline(self.provider.complete(request, &observer)) => response,
        };
        match response {
            Some(response) => response.map_err(model_call_error),
            None => Err(RunError::Budget(self.budget.runtime_expired())),
        }
    }

    /// `work`, or `None` once the runtime budget runs out first (the future is dropped, which
    /// abandons a model call; budgets.md §4 enforced while it is in flight).
    async fn until_runtime_deadline<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        match self.budget.runtime_deadline() {
            Some(deadline) => tokio::time::timeout_at(deadline.into(), work).await.ok(),
            None => Some(work.await),
        }
    }

    /// §7.3, with the digest of §7.4 when groups were dropped.
    async fn proactive_trim(&self, iteration: u32, messages: &mut Vec<Message>, state: &mut RunState) {
        let Some(limit) = state.context.budget() else {
            return;
        };
        let pass = proactive_trim(messages, estimate_tools_tokens(self.tools.definitions()), limit);
        if pass.is_empty() {
            return;
        }
        state.trim_totals.add(&pass);
        if pass.dropped_groups > 0 && self.settings.compaction && !self.budget.any_exhausted(state.totals) {
            self.update_digest(messages, &pass.dropped, &mut state.totals).await;
        }
        let has_digest = messages.iter().any(|message| message.content.starts_with(DIGEST_PREFIX));
        upsert_trim_warning(messages, state.trim_totals.warning(has_digest));
        self.observer.on_event(&LoopEvent::ContextTrimmed {
            iteration,
            mode: TrimMode::Proactive,
            dropped_groups: pass.dropped_groups,
            truncated_results: pass.truncated_results,
        });
    }

    async fn update_digest(&self, messages: &mut Vec<Message>, dropped: &[Message], totals: &mut Usage) {
        let existing = messages
            .iter()
            .position(|message| message.role == Role::System && message.content.starts_with(DIGEST_PREFIX));
        let previous = existing.and_then(|index| digest_body(&messages[index].content).map(str::to_owned));
        let digest = self
            .until_runtime_deadline(compaction_digest(
                self.provider.as_ref(),
                &self.settings.model,
                previous.as_deref(),
                dropped,
            ))
            .await;
        // The runtime budget ran out meanwhile: the check before the model call reports it.
        let Some(digest) = digest else { return };
        match digest {
            Ok((digest, usage)) => {
                totals.add(usage);
                match existing {
                    Some(index) => messages[index].content = digest,
                    None => {
                        let head = protected_head_len(messages);
                        messages.insert(head, Message::system(digest));
                    }
                }
            }
            Err(err) => {
                let text = format!("compaction failed; keeping the previous digest: {}", redact(&err.to_string()));
                self.observer.on_event(&LoopEvent::Warning { text: &text });
            }
        }
    }

    /// §1 step 4 after a context-length error: survival trim and the notice.
    fn survival(&self, iteration: u32, messages: &mut Vec<Message>) {
        let dropped = survival_trim(messages);
        messages.push(Message::system(format!(
            "{SURVIVAL_MODE_PREFIX} the conversation no longer fit the model's context window and was cut hard. Continue the task from the most recent context above; re-read anything you need.]"
        )));
        self.observer.on_event(&LoopEvent::ContextTrimmed {
            iteration,
            mode: TrimMode::Survival,
            dropped_groups: dropped,
            truncated_results: 0,
        });
    }

    /// §11's batch gate. `None` = the batch was denied; otherwise which calls were approved.
    async fn approval_gate(
        &self,
        batch: &[ToolCall],
        risks: &[Option<Risk>],
        always_approved: &mut HashSet<String>,
    ) -> Option<Vec<bool>> {
        let mut approved = vec![false; batch.len()];
        let Some(gate) = &self.gate else {
            return Some(approved);
        };
        let policy = &self.tool_context.policy;
        let mut items = Vec::new();
        let mut indices = Vec::new();
        for (index, (call, risk)) in batch.iter().zip(risks).enumerate() {
            let name = &call.function.name;
            if risk.is_none()
                && self.tool_context.ask_unclassified
                && !crate::tool::READ_ONLY_TOOLS.contains(&name.as_str())
            {
                // Nothing classifies it: asked about as an unknown operation (never "always").
                let resource = format!("{} {}", shown_tool_name(name), call.function.arguments);
                items.push(ApprovalItem { tool: name.clone(), risk: Risk { class: DangerClass::Unknown, resource } });
                indices.push(index);
                continue;
            }
            let Some(risk) = risk else { continue };
            if always_approved.contains(&always_key(name, risk)) {
                approved[index] = true;
                continue;
            }
            if policy.decide(risk.class, &risk.resource, true, false) == odek_danger::Decision::Prompt {
                items.push(ApprovalItem { tool: call.function.name.clone(), risk: risk.clone() });
                indices.push(index);
            }
        }
        if items.is_empty() {
            return Some(approved);
        }
        let allow_always = items.iter().all(|item| item.risk.class != DangerClass::Unknown);
        match gate.approve(&items, allow_always).await {
            GateAnswer::Deny => None,
            answer => {
                for (index, item) in indices.into_iter().zip(&items) {
                    approved[index] = true;
                    if answer == GateAnswer::ApproveAlways {
                        always_approved.insert(always_key(&item.tool, &item.risk));
                    }
                }
                Some(approved)
            }
        }
    }

    /// §2: the batch runs concurrently, at most `max_tool_parallel` at a time; results by index.
    /// A batch of one runs inline on the loop's task (no hand-off to another worker), with its
    /// panic contained the same way as a spawned call's.
    ///
    /// When the runtime budget runs out mid-batch, every call still running is cancelled (shell
    /// process groups killed, MCP calls sent `notifications/cancelled`, sub-agents stopped) and
    /// gets [`CANCEL_GRACE`] to wind down; a call that does not is abandoned. Such calls end as
    /// `error: cancelled`, so the transcript has a result for every call, and the exceeded
    /// budget comes back with the results.
    async fn execute_batch(
        &self,
        batch: &[ToolCall],
        approved: Vec<bool>,
        cancel: &CancellationToken,
    ) -> (Vec<Finished>, Option<BudgetExceeded>) {
        let permits = Arc::new(Semaphore::new(self.settings.max_tool_parallel.max(1)));
        self.tool_context.liveness.enter(Phase::Tools);
        let inline = batch.len() == 1;
        let batch_cancel = cancel.child_token();
        let mut running = Vec::with_capacity(batch.len());
        let mut spawned = Vec::new();
        for (call, approved) in batch.iter().zip(approved) {
            let name = call.function.name.clone();
            let Some(tool) = self.tools.get(&name) else {
                running.push((name, None));
                continue;
            };
            let arguments = call.function.arguments.clone();
            let call_id = call.id.clone();
            let mut ctx = self.tool_context.clone();
            ctx.approved = approved;
            ctx.cancel = batch_cancel.child_token();
            let permits = Arc::clone(&permits);
            let task = async move {
                let _permit = permits.acquire_owned().await;
                // A call still waiting for its slot when the batch was cancelled never starts.
                if ctx.cancel.is_cancelled() {
                    return (Err(ToolError::new("cancelled")), Duration::ZERO);
                }
                let started = Instant::now();
                ctx.liveness.call_started(&call_id);
                let outcome = tool.call(&arguments, &ctx).await;
                ctx.liveness.call_finished(&call_id);
                (outcome, started.elapsed())
            };
            let call = if inline {
                Running::Inline(Box::pin(task))
            } else {
                let handle = tokio::spawn(task);
                spawned.push(handle.abort_handle());
                Running::Spawned(handle)
            };
            running.push((name, Some(call)));
        }
        let mut slots: Vec<Option<Finished>> = (0..running.len()).map(|_| None).collect();
        let expired = {
            let collect = async {
                for (slot, (name, call)) in slots.iter_mut().zip(running) {
                    *slot = Some(match call {
                        None => {
                            failure(format!("error: tool {} not found", quote(&shown_tool_name(&name))), Duration::ZERO)
                        }
                        Some(call) => match call.outcome().await {
                            Ok((Ok(outcome), duration)) => success(outcome, duration),
                            Ok((Err(mut error), duration)) => {
                                let denials = std::mem::take(&mut error.denials);
                                Finished { denials, ..failure(outcome_text(&Err(error)), duration) }
                            }
                            Err(detail) => failure(
                                format!("error: tool {} panicked: {}", quote(&shown_tool_name(&name)), redact(&detail)),
                                Duration::ZERO,
                            ),
                        },
                    });
                }
            };
            tokio::pin!(collect);
            match self.until_runtime_deadline(&mut collect).await {
                Some(()) => None,
                None => {
                    batch_cancel.cancel();
                    if tokio::time::timeout(CANCEL_GRACE, &mut collect).await.is_err() {
                        for handle in &spawned {
                            handle.abort();
                        }
                    }
                    Some(self.budget.runtime_expired())
                }
            }
        };
        let finished = slots
            .into_iter()
            .map(|slot| slot.unwrap_or_else(|| failure("error: cancelled".to_owned(), Duration::ZERO)))
            .collect();
        (finished, expired)
    }

    fn persist(&mut self, iteration: u32, messages: &[Message], totals: Usage) -> Result<(), RunError> {
        let Some(checkpoint) = self.checkpoint.as_mut() else {
            return Ok(());
        };
        // The durable save (fsyncs) blocks: on a multi-threaded runtime the worker hands its
        // other tasks on first, so a host's other sessions and its faces' streams go on meanwhile.
        let saved = off_the_worker(|| checkpoint.save(messages, totals)).map_err(RunError::Checkpoint)?;
        if let Some(warning) = &saved.warning {
            self.observer.on_event(&LoopEvent::Warning { text: warning });
        }
        self.observer.on_event(&LoopEvent::SessionSaved { iteration, message_count: saved.message_count });
        Ok(())
    }
}

/// Runs blocking `work` where it holds up no other task: in place, after the worker's other
/// tasks move on, on a multi-threaded runtime; as is elsewhere.
fn off_the_worker<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// A model call's failure: a provider that sent nothing for a liveness deadline is a stall of
/// the `model` phase; anything else is the provider's error.
fn model_call_error(source: LlmError) -> RunError {
    match source.silence() {
        Some(limit) => RunError::Stalled(Stall { phase: Phase::Model, idle: limit, limit }),
        None => RunError::Provider { iteration: 0, source },
    }
}

/// The loop's observer as the provider sees it: every chunk that added to the answer is also
/// progress of the run's liveness, and a fallback is a loop event of the iteration.
struct NotingProgress<'a> {
    inner: &'a dyn LoopObserver,
    liveness: &'a Liveness,
    iteration: u32,
}

impl odek_llm::StreamObserver for NotingProgress<'_> {
    fn on_delta(&self, text: &str, reasoning: bool) {
        self.inner.on_delta(text, reasoning);
    }

    fn on_progress(&self) {
        self.liveness.note_progress();
        self.inner.on_progress();
    }

    fn on_fallback(&self, fallback: &odek_llm::Fallback<'_>) {
        self.liveness.note_progress();
        self.inner.on_event(&LoopEvent::ProviderFallback { iteration: self.iteration, fallback });
    }
}

/// A tool name as the model sent it, made fit to show anywhere — the terminal, events, the
/// transcript's results and error texts, sessions: a model can put a secret in a name (call a
/// tool named like the API key), so names pass through secret redaction like any other model
/// output. The lookup of the tool uses the name as sent.
/// The id each call of an answer goes by: the provider's, unless it is missing or already taken
/// — by a call earlier in this answer or in `history` — then `it<iteration>-call<index>` (with
/// a `-<n>` suffix should that be taken too). A provider may repeat an id; answering both calls
/// under it would send two results for one call, which the APIs refuse, and the model could not
/// tell the outcomes apart. So no two calls of a conversation share an id, and every call gets
/// its own result and events.
fn unique_call_ids(iteration: u32, calls: &[ToolCall], history: &[Message]) -> Vec<String> {
    let mut taken: HashSet<&str> =
        history.iter().flat_map(|message| message.tool_calls.iter().map(|call| call.id.as_str())).collect();
    let mut synthetic: HashSet<String> = HashSet::new();
    let mut ids = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let free = |id: &str, synthetic: &HashSet<String>| !taken.contains(id) && !synthetic.contains(id);
        if !call.id.is_empty() && free(&call.id, &synthetic) {
            taken.insert(&call.id);
            ids.push(call.id.clone());
            continue;
        }
        let base = format!("it{iteration}-call{index}");
        let mut id = base.clone();
        let mut suffix = 1_u32;
        while !free(&id, &synthetic) {
            id = format!("{base}-{suffix}");
            suffix = suffix.saturating_add(1);
        }
        synthetic.insert(id.clone());
        ids.push(id);
    }
    ids
}

fn shown_tool_name(name: &str) -> String {
    redact(name).into_owned()
}

/// \[beyond\] `--strict`: the first refused call of an observed batch ends the run.
fn strict_stop(strict: bool, names: &[String], finished: Vec<Finished>) -> Result<(), RunError> {
    if !strict {
        return Ok(());
    }
    let first = names.iter().zip(finished).find_map(|(name, result)| Some((name, result.denials.into_iter().next()?)));
    match first {
        Some((tool, denial)) => Err(RunError::Denied { tool: tool.clone(), denial }),
        None => Ok(()),
    }
}

/// What "approve always" remembers for the rest of the run: the tool and its operation, so an
/// answer about writing a path never approves running it as a command.
fn always_key(tool: &str, risk: &Risk) -> String {
    format!("{tool}\u{1f}{}\u{1f}{}", risk.class, risk.resource)
}

/// What every call of a batch gets when the approval of the batch was answered no.
const BATCH_DENIED: &str = "batch approval denied";

fn success(mut outcome: ToolOutcome, duration: Duration) -> Finished {
    let observed_chars = outcome.truncated_observed_chars;
    let denials = std::mem::take(&mut outcome.denials);
    let edit = outcome.edit.take();
    let artifacts = std::mem::take(&mut outcome.artifacts);
    Finished { output: outcome_text(&Ok(outcome)), failed: false, observed_chars, duration, denials, edit, artifacts }
}

fn failure(output: String, duration: Duration) -> Finished {
    Finished {
        output,
        failed: true,
        observed_chars: None,
        duration,
        denials: Vec::new(),
        edit: None,
        artifacts: Vec::new(),
    }
}

/// What a tool call yields: its outcome and duration.
type CallYield = (Result<ToolOutcome, ToolError>, Duration);

/// One call of a batch, running on the loop's own task or on a worker of its own.
enum Running {
    Inline(Pin<Box<dyn Future<Output = CallYield> + Send>>),
    Spawned(tokio::task::JoinHandle<CallYield>),
}

impl Running {
    /// The call's yield, or the text of its panic.
    async fn outcome(self) -> Result<CallYield, String> {
        match self {
            Running::Inline(task) => {
                AssertUnwindSafe(task).catch_unwind().await.map_err(|payload| panic_text(&*payload))
            }
            Running::Spawned(handle) => handle.await.map_err(|error| {
                if error.is_cancelled() { "task cancelled".to_owned() } else { panic_text(&*error.into_panic()) }
            }),
        }
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(ids: &[&str]) -> Vec<ToolCall> {
        ids.iter().map(|id| ToolCall::new(*id, "read_file", "{}")).collect()
    }

    #[test]
    fn each_call_gets_an_id_of_its_own_red() {
        assert_eq!(unique_call_ids(1, &calls(&["a", "b"]), &[]), ["a", "b"]);
        assert_eq!(unique_call_ids(1, &calls(&["", ""]), &[]), ["it1-call0", "it1-call1"]);
        // A repeated id: the first call keeps it, the second gets one of its own.
        assert_eq!(unique_call_ids(2, &calls(&["dup", "dup", "dup"]), &[]), ["dup", "it2-call1", "it2-call2"]);
        // Taken earlier in the conversation.
        let earlier = Message { tool_calls: calls(&["old"]), ..Message::assistant("") };
        assert_eq!(unique_call_ids(3, &calls(&["old", "new"]), &[earlier]), ["it3-call0", "new"]);
        // A synthetic id a provider already used is not reused.
        assert_eq!(
            unique_call_ids(4, &calls(&["it4-call1", "", "it4-call1"]), &[]),
            ["it4-call1", "it4-call1-1", "it4-call2"]
        );
    }
}
