//! \[beyond\] Denials as facts (issue 17): the operations a turn refused, counted and the first
//! [`DENIALS_LISTED`] kept for the result object, and the `--strict` refusals that end a turn
//! before its first model call (an MCP server that did not start, a named tool that is missing).

use std::sync::{Mutex, PoisonError};

use odek_agent::observer::{LoopEvent, LoopObserver};
use odek_contract::quoting::quote;
use odek_contract::redaction::redact;
use odek_llm::{StreamObserver, ToolDefinition};
use serde::Serialize;

use crate::config::ToolsConfig;

/// How many denials a turn's result lists; the count covers them all.
pub const DENIALS_LISTED: usize = 20;

/// One refused operation, redacted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeniedOperation {
    /// The tool the model called.
    pub tool: String,
    /// The operation's danger class (`destructive`, `local_write`, …).
    pub class: String,
    /// Why it was refused.
    pub reason: String,
}

/// The operations a turn refused: the `denials` of the `--json` result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Denials {
    /// Every operation the turn refused (a sandbox summary counts as the refusals it stands for).
    pub count: usize,
    /// The first [`DENIALS_LISTED`] of them, in the order they happened.
    pub first: Vec<DeniedOperation>,
}

impl Denials {
    /// `denial`, standing for `count` refused operations (a sandbox summary stands for many).
    fn record(&mut self, denial: DeniedOperation, count: usize) {
        self.count = self.count.saturating_add(count.max(1));
        if self.first.len() < DENIALS_LISTED {
            self.first.push(denial);
        }
    }
}

/// Collects a turn's denials from the loop's events.
#[derive(Debug, Default)]
pub(crate) struct DenialRecorder(Mutex<Denials>);

impl DenialRecorder {
    /// What was recorded, leaving the recorder empty.
    pub(crate) fn take(&self) -> Denials {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl StreamObserver for DenialRecorder {}

impl LoopObserver for DenialRecorder {
    fn on_event(&self, event: &LoopEvent<'_>) {
        if let LoopEvent::OperationDenied { tool, denial, .. } = event {
            let denial_count = denial.count;
            let denial = DeniedOperation {
                tool: redact(tool).into_owned(),
                class: denial.class.as_str().to_owned(),
                reason: redact(&denial.reason).into_owned(),
            };
            self.0.lock().unwrap_or_else(PoisonError::into_inner).record(denial, denial_count);
        }
    }
}

/// The names of the tools whitelist (`--tool`, `tools.enabled`, a profile's or task's tools)
/// that the turn does not have: not offered by any built-in or started server, or disabled.
pub(crate) fn named_but_unavailable(tools: &ToolsConfig, offered: &[ToolDefinition]) -> Vec<String> {
    let Some(named) = &tools.enabled else { return Vec::new() };
    named.iter().filter(|name| !offered.iter().any(|tool| &tool.name == *name)).cloned().collect()
}

/// `--strict`'s refusal of a turn whose `missing_servers` did not start or whose named tools
/// are `unavailable`; `None` when there is neither.
pub(crate) fn strict_refusal(missing_servers: &[String], unavailable: &[String]) -> Option<String> {
    let listed = |names: &[String]| names.iter().map(|name| quote(&redact(name))).collect::<Vec<_>>().join(", ");
    let mut reasons = Vec::new();
    if !missing_servers.is_empty() {
        reasons.push(format!("MCP server(s) did not start: {}", listed(missing_servers)));
    }
    if !unavailable.is_empty() {
        reasons.push(format!("named tool(s) not available: {}", listed(unavailable)));
    }
    (!reasons.is_empty()).then(|| format!("denied (strict): {}", reasons.join("; ")))
}

/// The warning for named tools that are not available, when `--strict` is off.
pub(crate) fn unavailable_warning(unavailable: &[String]) -> Option<String> {
    let listed = unavailable.iter().map(|name| quote(&redact(name))).collect::<Vec<_>>().join(", ");
    (!unavailable.is_empty()).then(|| format!("named tool(s) not available: {listed}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use odek_agent::tool::Denial;
    use odek_danger::DangerClass;

    fn definition(name: &str) -> ToolDefinition {
        ToolDefinition { name: name.to_owned(), description: String::new(), parameters: serde_json::json!({}) }
    }

    #[test]
    fn the_count_covers_every_denial_and_the_list_stops_at_twenty() {
        let recorder = DenialRecorder::default();
        let denial = Denial::new(DangerClass::Destructive, "rm is destructive");
        for index in 0..25 {
            let call_id = format!("call-{index}");
            recorder.on_event(&LoopEvent::OperationDenied {
                iteration: 1,
                call_id: &call_id,
                tool: "shell",
                denial: &denial,
            });
        }
        let denials = recorder.take();
        assert_eq!(denials.count, 25);
        assert_eq!(denials.first.len(), DENIALS_LISTED);
        assert_eq!(
            denials.first[0],
            DeniedOperation {
                tool: "shell".to_owned(),
                class: "destructive".to_owned(),
                reason: "rm is destructive".to_owned()
            }
        );
        assert_eq!(recorder.take(), Denials::default(), "take leaves it empty");
    }

    #[test]
    fn a_sandbox_summary_counts_every_refusal_it_stands_for_red() {
        let recorder = DenialRecorder::default();
        let one = Denial::new(DangerClass::NetworkEgress, "sandbox: connect 127.0.0.1:2 refused (network: deny)");
        let summary =
            Denial { count: 40, ..Denial::new(DangerClass::NetworkEgress, "sandbox: 40 more refused operation(s)") };
        for denial in [&one, &summary] {
            recorder.on_event(&LoopEvent::OperationDenied { iteration: 1, call_id: "c", tool: "shell", denial });
        }
        let denials = recorder.take();
        assert_eq!(denials.count, 41);
        assert_eq!(denials.first.len(), 2, "the summary is listed once");
    }

    #[test]
    fn a_secret_in_a_denial_is_redacted_red() {
        let secret = format!("sk-{}", "q".repeat(40));
        let recorder = DenialRecorder::default();
        let denial = Denial::new(DangerClass::NetworkEgress, format!("curl -H {secret}"));
        recorder.on_event(&LoopEvent::OperationDenied { iteration: 1, call_id: "c", tool: "shell", denial: &denial });
        let text = serde_json::to_string(&recorder.take()).unwrap();
        assert!(!text.contains(&secret), "{text}");
    }

    #[test]
    fn only_whitelisted_names_that_are_not_offered_are_unavailable() {
        let offered = [definition("read_file"), definition("fixture__echo")];
        let everything = ToolsConfig::default();
        assert!(named_but_unavailable(&everything, &offered).is_empty());
        let named = ToolsConfig {
            enabled: Some(vec!["read_file".to_owned(), "fixture__echo".to_owned(), "nope".to_owned()]),
            disabled: Vec::new(),
        };
        assert_eq!(named_but_unavailable(&named, &offered), vec!["nope".to_owned()]);
    }

    #[test]
    fn strict_refuses_for_missing_servers_and_tools_and_not_otherwise() {
        assert_eq!(strict_refusal(&[], &[]), None);
        assert_eq!(
            strict_refusal(&["broken".to_owned()], &["nope".to_owned()]).as_deref(),
            Some(r#"denied (strict): MCP server(s) did not start: "broken"; named tool(s) not available: "nope""#)
        );
        assert_eq!(unavailable_warning(&[]), None);
    }
}
