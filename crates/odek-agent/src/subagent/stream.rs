//! The protocol-2 progress stream of `odek subagent --stream` (spec `subagents.md` §6): one
//! NDJSON record per line on stdout, every record carrying the `task_id`, ending in the framed
//! `result`. [`ProgressStream`] is a [`LoopObserver`] for the tool records; the command writes
//! the start, finish and result records through the same writer. Start at [`ProgressStream`].

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use odek_contract::redaction::redact;
use odek_llm::{StreamObserver, Usage};
use serde_json::{Map, Value};

use super::artifacts::FinishedArtifact;
use super::result::SubagentResult;
use crate::budget::BudgetLimits;
use crate::observer::{CallResult, LoopEvent, LoopObserver};

/// **[beyond]** The type of the record written after each iteration of the child's loop:
/// `{"type":"subagent_iteration","task_id","iteration","tools_called","tokens_used"}` plus the
/// budget fields and `cost_usd` as on `subagent_progress`.
pub const ITERATION_RECORD: &str = "subagent_iteration";

/// Largest `data` of a `tool_call` / `tool_result` record, in bytes.
const RECORD_DATA_MAX_BYTES: usize = 4096;

/// Budget figures repeated on the start and progress records (absent when zero).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetFields {
    /// The wall-clock budget (`--timeout`), seconds.
    pub seconds: u64,
    /// The iteration budget (`--max-iter`).
    pub iterations: u32,
    /// The execution cost cap, USD.
    pub cost_usd: f64,
}

impl BudgetFields {
    fn add_to(&self, record: &mut Map<String, Value>) {
        if self.seconds > 0 {
            record.insert("budget_seconds".into(), self.seconds.into());
        }
        if self.iterations > 0 {
            record.insert("budget_iterations".into(), self.iterations.into());
        }
        if self.cost_usd > 0.0 {
            record.insert("budget_cost_usd".into(), self.cost_usd.into());
        }
    }
}

/// Writes the records of one task to stdout, a whole line per write.
#[derive(Debug)]
pub struct ProgressStream {
    task_id: String,
    budget: BudgetFields,
    steps: AtomicU64,
    /// The run's prices, when any is configured: progress records then carry `cost_usd`.
    pricing: Option<BudgetLimits>,
    /// The run's usage so far.
    totals: Mutex<Usage>,
}

impl ProgressStream {
    /// `limits` carries the run's prices; without any price no record carries `cost_usd`.
    pub fn new(task_id: &str, budget: BudgetFields, limits: &BudgetLimits) -> ProgressStream {
        let priced = limits.input_price_per_million > 0.0 || limits.output_price_per_million > 0.0;
        ProgressStream {
            task_id: task_id.to_owned(),
            budget,
            steps: AtomicU64::new(0),
            pricing: priced.then_some(*limits),
            totals: Mutex::new(Usage::default()),
        }
    }

    /// The estimated cost of `usage` in USD, when prices are configured.
    fn cost_of(&self, usage: Usage) -> Option<f64> {
        self.pricing.map(|limits| limits.cost_micro_usd(usage) as f64 / 1e6)
    }

    /// `subagent_started`; `profile` and `max_risk` when non-empty.
    pub fn started(&self, pid: u32, depth: u32, timeout_s: u64, max_iter: u32, profile: &str, max_risk: &str) {
        let mut record = self.record("subagent_started");
        record.insert("pid".into(), pid.into());
        record.insert("depth".into(), depth.into());
        record.insert("timeout_s".into(), timeout_s.into());
        record.insert("max_iter".into(), max_iter.into());
        if !profile.is_empty() {
            record.insert("profile".into(), profile.into());
        }
        if !max_risk.is_empty() {
            record.insert("max_risk".into(), max_risk.into());
        }
        self.budget.add_to(&mut record);
        self.write(record);
    }

    /// `subagent_finished`, then the framed `result` — always the last line.
    pub fn finished(&self, result: &SubagentResult) {
        let mut record = self.record("subagent_finished");
        record.insert("status".into(), result.status.clone().into());
        record.insert("iterations".into(), result.iterations.into());
        record.insert("duration_s".into(), result.duration_seconds.into());
        record.insert("tokens_used".into(), result.tokens_used.into());
        if let Some(cost) = result.cost_usd {
            record.insert("cost_usd".into(), cost.into());
        }
        if !result.artifacts.is_empty() {
            let artifacts: Vec<FinishedArtifact> = result.artifacts.iter().map(FinishedArtifact::from).collect();
            record.insert("artifacts".into(), serde_json::to_value(artifacts).unwrap_or(Value::Null));
        }
        self.write(record);
        self.result(result);
    }

    /// The framed result alone (setup errors and the spawn gate).
    pub fn result(&self, result: &SubagentResult) {
        let value = serde_json::to_value(result).unwrap_or(Value::Null);
        let mut record = self.record("result");
        record.insert("result".into(), value);
        self.write(record);
    }

    fn record(&self, kind: &str) -> Map<String, Value> {
        let mut record = Map::new();
        record.insert("type".into(), kind.into());
        record.insert("task_id".into(), self.task_id.clone().into());
        record
    }

    fn write(&self, record: Map<String, Value>) {
        // Keys sorted, whatever order `serde_json` keeps.
        let mut line = Value::Object(odek_contract::canonical_json::sorted_keys(record)).to_string();
        line.push('\n');
        let mut stdout = std::io::stdout().lock();
        // A parent that stopped reading cannot be reported to; the run goes on regardless.
        let _ = stdout.write_all(line.as_bytes()).and_then(|()| stdout.flush());
    }
}

/// `text` redacted and cut to at most [`RECORD_DATA_MAX_BYTES`] on a character boundary.
fn record_data(text: &str) -> String {
    let redacted = redact(text);
    let mut end = redacted.len().min(RECORD_DATA_MAX_BYTES);
    while !redacted.is_char_boundary(end) {
        end -= 1;
    }
    redacted[..end].to_owned()
}

impl StreamObserver for ProgressStream {}

impl LoopObserver for ProgressStream {
    fn on_event(&self, event: &LoopEvent<'_>) {
        match *event {
            LoopEvent::ToolCallStarted { tool, arguments, .. } => {
                let mut record = self.record("tool_call");
                record.insert("name".into(), tool.into());
                record.insert("data".into(), record_data(arguments).into());
                self.write(record);
            }
            LoopEvent::ToolCallFinished { tool, result, .. } => {
                let output = match result {
                    CallResult::Completed { output, .. } | CallResult::Failed { output } => output,
                };
                let mut record = self.record("tool_result");
                record.insert("name".into(), tool.into());
                record.insert("data".into(), record_data(output).into());
                self.write(record);
                let step = self.steps.fetch_add(1, Ordering::Relaxed) + 1;
                let mut progress = self.record("subagent_progress");
                progress.insert("step".into(), step.into());
                progress.insert("tool".into(), tool.into());
                self.budget.add_to(&mut progress);
                let totals = *self.totals.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(cost) = self.cost_of(totals) {
                    progress.insert("cost_usd".into(), cost.into());
                }
                self.write(progress);
            }
            LoopEvent::ModelResponded { totals, .. } => {
                *self.totals.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = totals;
            }
            // [beyond] One record per finished iteration, for a parent that reports progress
            // per iteration (`odek mcp`'s `run_task`); parents that do not know it ignore it.
            LoopEvent::IterationCompleted { iteration, totals, tools_called } => {
                let mut record = self.record(ITERATION_RECORD);
                record.insert("iteration".into(), iteration.into());
                record.insert("tools_called".into(), tools_called.into());
                record.insert("tokens_used".into(), (totals.input_tokens + totals.output_tokens).into());
                self.budget.add_to(&mut record);
                if let Some(cost) = self.cost_of(totals) {
                    record.insert("cost_usd".into(), cost.into());
                }
                self.write(record);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_data_is_cut_on_a_char_boundary() {
        let text = format!("{}é", "a".repeat(RECORD_DATA_MAX_BYTES - 1));
        let cut = record_data(&text);
        assert_eq!(cut.len(), RECORD_DATA_MAX_BYTES - 1);
    }
}
