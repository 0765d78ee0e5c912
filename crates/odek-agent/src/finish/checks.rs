//! \[beyond\] `--check "<command>"`: once the model gives its final answer (and it matched the
//! output schema, if any), odek runs each check, in order, as the `shell` tool runs a command
//! line — the same danger policy, the approval card on an interactive run, the non-interactive
//! rule without one, its own process group killed at the deadline (`--check-timeout`), the
//! output capped ([`crate::tools::shell::run_policed`]). A check passes when it exits 0.
//!
//! When any check fails, its exit status and the tail of its output (redacted, inside the
//! untrusted wrapper) go back to the model as a new user message and the loop goes on, at most
//! `--max-check-cycles` times; the checks of the answer after the last of those decide: failing,
//! the run fails with [`RunError::ChecksFailed`]. A check the policy refuses is not run and is no
//! use to the model: the run fails at once, and the refusal is in the check's report
//! ([`CheckReport::denial`], carried by `LoopEvent::CheckCompleted`) and an `operation_denied`
//! whose `call_id` is the check's id and whose tool is [`CHECK_TOOL`].
//!
//! A check is named `check-<n>` by its position (1-based) among the run's checks; a cycle is one
//! run of the checks, 1 for the first.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use odek_contract::quoting::quote;
use odek_contract::redaction::redact;
use odek_contract::untrusted::wrap_untrusted;
use odek_danger::{Decision, classify_command_in};
use serde_json::{Value, json};

use super::{Review, ReviewContext};
use crate::liveness::Phase;
use crate::observer::LoopEvent;
use crate::run::{ApprovalItem, GateAnswer, RunError};
use crate::tool::{Denial, Risk, ToolContext};
use crate::tools::shell::{Policed, RunEnd, run_policed};

/// The tool a refused check's `operation_denied` names.
pub const CHECK_TOOL: &str = "check";

/// Bytes of a failed check's output the model gets: its end, where test runners and compilers
/// put their verdict.
const MAX_TAIL_BYTES: usize = 4096;
/// Failed checks whose output goes back in one message; the others are listed by status only.
const MAX_CHECKS_WITH_OUTPUT: usize = 8;

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckStatus {
    /// Exited 0.
    Passed,
    /// Exited non-zero, was killed by a signal, or could not start.
    Failed,
    /// Still running at `--check-timeout`; its process group was killed.
    TimedOut,
    /// Refused by the danger policy (or the operator); not run.
    Denied,
}

impl CheckStatus {
    /// `passed`, `failed`, `timed_out` or `denied`.
    /// Every status.
    pub(crate) const ALL: [CheckStatus; 4] =
        [CheckStatus::Passed, CheckStatus::Failed, CheckStatus::TimedOut, CheckStatus::Denied];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "failed",
            CheckStatus::TimedOut => "timed_out",
            CheckStatus::Denied => "denied",
        }
    }
}

/// One check of one cycle, after it ran (or was refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// `check-<n>`.
    pub check_id: String,
    /// The command line as configured (not redacted: redact before showing it).
    pub command: String,
    /// The run of the checks this belongs to, 1 for the first.
    pub cycle: u32,
    pub status: CheckStatus,
    /// The exit status (128 + signal for a signal) when the command exited.
    pub exit_code: Option<i32>,
    pub duration: Duration,
    /// Bytes of output captured (the shell tool's head and tail).
    pub output_bytes: u64,
    /// Present exactly when the status is [`CheckStatus::Denied`].
    pub denial: Option<Denial>,
}

impl CheckReport {
    /// The report as the `--json` result's `checks` lists it (the command redacted).
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "check_id": self.check_id,
            "command": redact(&self.command),
            "cycle": self.cycle,
            "status": self.status.as_str(),
            "duration_ms": u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            "output_bytes": self.output_bytes,
        });
        if let Some(code) = self.exit_code {
            value["exit_code"] = Value::from(code);
        }
        if let Some(denial) = &self.denial {
            value["denied"] = json!({"class": denial.class.as_str(), "reason": redact(&denial.reason)});
        }
        value
    }

    /// `check-1 ("cargo test") exit status 1`, for messages.
    fn summary(&self) -> String {
        let command = quote(&redact(&self.command));
        let status = match (self.status, self.exit_code, &self.denial) {
            (CheckStatus::Passed, _, _) => "passed".to_owned(),
            (CheckStatus::Denied, _, Some(denial)) => format!("was denied ({}), not run", redact(&denial.reason)),
            (CheckStatus::TimedOut, _, _) => "timed out; its process group was killed".to_owned(),
            (_, Some(code), _) => format!("exit status {code}"),
            _ => "could not run".to_owned(),
        };
        format!("{} ({command}) {status}", self.check_id)
    }
}

/// The checks gate of one run: the commands and the cycles so far.
#[derive(Debug)]
pub(crate) struct ChecksGate {
    commands: Vec<String>,
    timeout: Duration,
    max_cycles: u32,
    cycle: u32,
    last: Vec<CheckReport>,
}

impl ChecksGate {
    pub(crate) fn new(commands: Vec<String>, timeout: Duration, max_cycles: u32) -> ChecksGate {
        ChecksGate { commands, timeout, max_cycles, cycle: 0, last: Vec::new() }
    }

    pub(crate) fn last_cycle(&self) -> &[CheckReport] {
        &self.last
    }

    /// Runs the checks once; `None` when all passed, else the verdict.
    pub(crate) async fn review(&mut self, ctx: &ReviewContext<'_>) -> Option<Review> {
        self.cycle += 1;
        let cycle = self.cycle;
        self.last.clear();
        let mut outputs = Vec::new();
        for (index, command) in self.commands.iter().enumerate() {
            let check_id = format!("check-{}", index + 1);
            ctx.tool_context.liveness.enter(Phase::Checks);
            ctx.observer.on_event(&LoopEvent::CheckStarted { iteration: ctx.iteration, check_id: &check_id, cycle });
            let Some((report, output, sandbox_denials)) = run_check(check_id, command, cycle, self.timeout, ctx).await
            else {
                return Some(Review::Fail(RunError::Cancelled));
            };
            // What the sandbox refused while the check ran is a fact of the stream too, and so is
            // a refused check itself, like a refused call: first the sandbox's, then the check's.
            for denial in sandbox_denials.iter().chain(&report.denial) {
                ctx.observer.on_event(&LoopEvent::OperationDenied {
                    iteration: ctx.iteration,
                    call_id: &report.check_id,
                    tool: CHECK_TOOL,
                    denial,
                });
            }
            ctx.observer.on_event(&LoopEvent::CheckCompleted { iteration: ctx.iteration, check: &report });
            let denied = report.status == CheckStatus::Denied;
            self.last.push(report);
            outputs.push(output);
            if denied {
                let failure = self.failure();
                return Some(Review::Fail(failure));
            }
        }
        if self.last.iter().all(|report| report.status == CheckStatus::Passed) {
            return None;
        }
        let failure = self.failure();
        if cycle > self.max_cycles {
            return Some(Review::Fail(failure));
        }
        Some(Review::Revise { feedback: self.feedback(&outputs), failure })
    }

    fn failure(&self) -> RunError {
        let failed: Vec<String> =
            self.last.iter().filter(|report| report.status != CheckStatus::Passed).map(CheckReport::summary).collect();
        RunError::ChecksFailed { cycles: self.cycle, detail: failed.join("; "), checks: self.last.clone() }
    }

    /// The user message after a failed cycle: every check's status, the failed ones' output
    /// tails, and what to do.
    fn feedback(&self, outputs: &[String]) -> String {
        let left = self.max_cycles + 1 - self.cycle;
        let mut text = format!(
            "[odek: checks] odek ran the checks on your final answer and they failed (cycle {} of at most {}; \
             {left} more fix(es) allowed):\n",
            self.cycle,
            self.max_cycles + 1
        );
        let mut shown = 0;
        for (report, output) in self.last.iter().zip(outputs) {
            let _ = writeln!(text, "- {}", report.summary());
            if report.status != CheckStatus::Passed && shown < MAX_CHECKS_WITH_OUTPUT && !output.is_empty() {
                shown += 1;
                let _ = writeln!(text, "{}", wrap_untrusted(&format!("$ {}", report.command), &output_tail(output)));
            }
        }
        text.push_str("Fix what the failing checks report, then give your final answer again.");
        redact(&text).into_owned()
    }
}

/// The last [`MAX_TAIL_BYTES`] of `output`, redacted, with a note of what was cut.
fn output_tail(output: &str) -> String {
    let redacted = redact(output);
    if redacted.len() <= MAX_TAIL_BYTES {
        return redacted.into_owned();
    }
    let start = redacted.ceil_char_boundary(redacted.len() - MAX_TAIL_BYTES);
    format!("[… {start} bytes before this omitted …]\n{}", &redacted[start..])
}

/// One check: the policy (and the approval card on an interactive run), then the shell's run.
/// `None` when the run was cancelled meanwhile; else the report, the output and what the sandbox
/// refused while it ran.
async fn run_check(
    check_id: String,
    command: &str,
    cycle: u32,
    timeout: Duration,
    ctx: &ReviewContext<'_>,
) -> Option<(CheckReport, String, Vec<Denial>)> {
    let mut tool_context = ctx.tool_context.clone();
    tool_context.approved = ask_if_prompted(command, &tool_context, ctx).await;
    let started = Instant::now();
    let policed = run_policed(command, &tool_context.cwd, timeout, &tool_context).await;
    let duration = started.elapsed();
    let report = |status, exit_code, output_bytes, denial| CheckReport {
        check_id: check_id.clone(),
        command: command.to_owned(),
        cycle,
        status,
        exit_code,
        duration,
        output_bytes,
        denial,
    };
    Some(match policed {
        Ok(Policed::Denied(denied)) => {
            (report(CheckStatus::Denied, None, 0, denied.denial().cloned()), String::new(), Vec::new())
        }
        Ok(Policed::Ran(run)) => {
            let bytes = run.output.len() as u64;
            let (status, code) = match run.end {
                RunEnd::Exited(0) => (CheckStatus::Passed, Some(0)),
                RunEnd::Exited(code) => (CheckStatus::Failed, Some(code)),
                RunEnd::TimedOut => (CheckStatus::TimedOut, None),
                RunEnd::Cancelled => return None,
            };
            let sandbox_denials = run.sandbox_denials();
            (report(status, code, bytes, None), run.output, sandbox_denials)
        }
        Err(_) if tool_context.cancel.is_cancelled() => return None,
        Err(error) => (report(CheckStatus::Failed, None, 0, None), error.message, Vec::new()),
    })
}

/// On an interactive run, a check whose class the policy leaves to the operator gets the
/// approval card; whether the operator approved it.
async fn ask_if_prompted(command: &str, tool_context: &ToolContext, ctx: &ReviewContext<'_>) -> bool {
    let Some(approver) = ctx.approver else { return false };
    let class = classify_command_in(command, &tool_context.cwd, &tool_context.odek_home).class;
    if tool_context.policy.decide(class, command, tool_context.interactive, false) != Decision::Prompt {
        return false;
    }
    let items = [ApprovalItem { tool: "check".to_owned(), risk: Risk { class, resource: command.to_owned() } }];
    approver.approve(&items, false).await != GateAnswer::Deny
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_end_on_a_character_boundary() {
        let output = format!("{}é{}", "a".repeat(5000), "z".repeat(MAX_TAIL_BYTES - 1));
        let tail = output_tail(&output);
        assert!(tail.ends_with(&"z".repeat(MAX_TAIL_BYTES - 1)));
        assert!(tail.starts_with("[… 5002 bytes before this omitted …]\n"), "{}", &tail[..60]);
        assert_eq!(output_tail("short"), "short");
    }

    #[test]
    fn reports_as_json() {
        let report = CheckReport {
            check_id: "check-1".into(),
            command: "cargo test".into(),
            cycle: 2,
            status: CheckStatus::Failed,
            exit_code: Some(101),
            duration: Duration::from_millis(1500),
            output_bytes: 42,
            denial: None,
        };
        assert_eq!(
            report.to_json(),
            json!({"check_id": "check-1", "command": "cargo test", "cycle": 2, "status": "failed",
                "exit_code": 101, "duration_ms": 1500, "output_bytes": 42})
        );
        assert_eq!(report.summary(), "check-1 (\"cargo test\") exit status 101");
    }
}
