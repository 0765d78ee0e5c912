//! Per-tool approval (spec `config.md` §13.2) behind the MCP client's
//! [`odek_mcp::approval::ToolApprover`] seam, asked \[beyond\] once per server: one tool pending is
//! the spec's prompt; several are one card listing them all ([`tool_approval_card`]), then one
//! single-key answer per tool in list order where `a` approves that tool and every one after it
//! ("this server's tools", as listed now) and `N`/Esc declines the rest ([`decision_for_key`]).
//! Every approval is still one tool's own §13.3 key, so a tool that changes asks again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use odek_contract::quoting::quote;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
use odek_mcp::approval::{ToolApproval, ToolApprovalRequest, ToolApprover};

use super::ApprovalError;
use super::console::{Console, cut_for_prompt};
use super::key::{SchemaDigest, tool_approval_key};
use super::store::ApprovalStore;
use crate::config::McpServerConfig;

/// Decides per-tool approval for one invocation: `ODEK_APPROVE_MCP=1`, then the server's
/// effective `auto_approve`, then a persisted key, then a prompt at a terminal. Without a
/// terminal an unapproved tool is `Required` at startup and `Declined` on a mid-run re-list.
///
/// Prompts are serialised: the store lock is held from the key lookup through the answer and
/// the save, so servers discovered concurrently never interleave their questions.
pub struct CliToolApprover {
    cwd: PathBuf,
    approve_all: bool,
    servers: BTreeMap<String, McpServerConfig>,
    store: Mutex<ApprovalStore>,
    console: Arc<dyn Console>,
}

impl std::fmt::Debug for CliToolApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CliToolApprover")
            .field("cwd", &self.cwd)
            .field("approve_all", &self.approve_all)
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl CliToolApprover {
    /// Usually built by [`super::McpApprovals::tool_approver`]. A request for a server not in
    /// `servers` is never approved except by `approve_all`.
    pub fn new(
        cwd: PathBuf,
        approve_all: bool,
        servers: &[McpServerConfig],
        store: ApprovalStore,
        console: Arc<dyn Console>,
    ) -> Self {
        CliToolApprover {
            cwd,
            approve_all,
            servers: servers.iter().map(|server| (server.name.clone(), server.clone())).collect(),
            store: Mutex::new(store),
            console,
        }
    }

    fn not_approved(request: &ToolApprovalRequest) -> ToolApproval {
        if request.relist {
            ToolApproval::Declined
        } else {
            let required =
                ApprovalError::ToolApprovalRequired { server: request.server.clone(), tool: request.tool.clone() };
            ToolApproval::Required(required.to_string())
        }
    }

    /// Asks about the pending tools (all of one server) and returns one decision per tool.
    fn ask(&self, pending: &[&ToolApprovalRequest]) -> Vec<bool> {
        if let [only] = pending {
            let key = self.console.prompt_key(&tool_approval_prompt(only));
            // `a` ("this and the rest") approves the one tool too.
            return vec![matches!(decision_for_key(key), ToolDecision::Approve | ToolDecision::ApproveRest)];
        }
        let server = pending.first().map(|request| request.server.as_str()).unwrap_or_default();
        let mut prompt = tool_approval_card(server, pending);
        let mut rest = None;
        let mut decisions = Vec::with_capacity(pending.len());
        for (index, request) in pending.iter().enumerate() {
            if let Some(all) = rest {
                decisions.push(all);
                continue;
            }
            prompt.push_str(&tool_decision_prompt(index + 1, pending.len(), &request.tool));
            let decision = decision_for_key(self.console.prompt_key(&prompt));
            prompt.clear();
            decisions.push(matches!(decision, ToolDecision::Approve | ToolDecision::ApproveRest));
            match decision {
                ToolDecision::ApproveRest => rest = Some(true),
                ToolDecision::DeclineRest => rest = Some(false),
                ToolDecision::Approve | ToolDecision::Decline => {}
            }
        }
        decisions
    }
}

impl ToolApprover for CliToolApprover {
    fn approve_tool(&self, request: &ToolApprovalRequest) -> ToolApproval {
        self.approve_tools(std::slice::from_ref(request)).pop().unwrap_or_else(|| Self::not_approved(request))
    }

    /// `ODEK_APPROVE_MCP=1`, then each server's effective `auto_approve`, then the persisted
    /// keys; what is left is asked on one card, or — without a terminal — is `Required` at
    /// startup (the answers stop there) and `Declined` on a re-list. The store stays locked from
    /// the lookups through the answers and the one save.
    fn approve_tools(&self, requests: &[ToolApprovalRequest]) -> Vec<ToolApproval> {
        if self.approve_all {
            return vec![ToolApproval::Approved; requests.len()];
        }
        let mut store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        let mut answers: Vec<Option<ToolApproval>> = vec![None; requests.len()];
        let mut pending: Vec<(usize, String)> = Vec::new();
        for (index, request) in requests.iter().enumerate() {
            match self.servers.get(&request.server) {
                None => answers[index] = Some(Self::not_approved(request)),
                Some(server) if server.auto_approve_effective => answers[index] = Some(ToolApproval::Approved),
                Some(server) => {
                    let key = tool_approval_key(
                        &self.cwd,
                        &server.name,
                        &server.entry,
                        &request.tool,
                        &request.input_schema,
                        &request.description,
                    );
                    if store.contains(&key) {
                        answers[index] = Some(ToolApproval::Approved);
                    } else {
                        pending.push((index, key));
                    }
                }
            }
        }
        // At startup a tool nobody can approve fails the server: asking about the others first
        // would only be thrown away.
        let blocked = answers.iter().any(|answer| matches!(answer, Some(ToolApproval::Required(_))));
        if !pending.is_empty() && !blocked && self.console.is_interactive() {
            let asked: Vec<&ToolApprovalRequest> = pending.iter().map(|(index, _)| &requests[*index]).collect();
            let decisions = self.ask(&asked);
            let mut approved_keys = Vec::new();
            for ((index, key), approved) in pending.into_iter().zip(decisions) {
                answers[index] = Some(if approved {
                    approved_keys.push(key);
                    ToolApproval::Approved
                } else {
                    ToolApproval::Declined
                });
            }
            if !approved_keys.is_empty()
                && let Err(err) = store.insert_all_and_save(approved_keys)
            {
                self.console.warn(&err.to_string());
            }
        }
        let mut out = Vec::with_capacity(requests.len());
        for (request, answer) in requests.iter().zip(answers) {
            let answer = answer.unwrap_or_else(|| Self::not_approved(request));
            let stop = matches!(answer, ToolApproval::Required(_));
            out.push(answer);
            if stop {
                break;
            }
        }
        out
    }
}

/// One answer on the tool approval card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolDecision {
    /// `y`: this tool.
    Approve,
    /// `n`, and any key without a meaning (Enter, space…): not this tool; the next is asked.
    Decline,
    /// `a`: this tool and every listed tool after it.
    ApproveRest,
    /// `N`, Esc, Ctrl-D or end of input: not this tool, nor any after it.
    DeclineRest,
}

/// The answer a key stands for (see [`ToolDecision`]); only `y`/`Y` and `a`/`A` approve.
pub fn decision_for_key(key: Option<char>) -> ToolDecision {
    match key {
        Some('y' | 'Y') => ToolDecision::Approve,
        Some('a' | 'A') => ToolDecision::ApproveRest,
        None | Some('N' | '\u{1b}' | '\u{4}') => ToolDecision::DeclineRest,
        Some(_) => ToolDecision::Decline,
    }
}

/// \[beyond\] The card for several pending tools of one server: each tool numbered with its raw
/// name, its description (terminal-sanitised on one line, cut to 200 bytes) and its schema
/// digest, then the key legend. The first [`tool_decision_prompt`] follows on the same screen.
pub fn tool_approval_card(server: &str, requests: &[&ToolApprovalRequest]) -> String {
    let mut card = format!("\nMCP server {} wants to register {} tools:\n", quote(server), requests.len());
    for (index, request) in requests.iter().enumerate() {
        let description = cut_for_prompt(&sanitise_for_terminal(&request.description, Layout::Line));
        card.push_str(&format!(
            "  {}. {}\n     description: {description}\n     schema: {}\n",
            index + 1,
            quote(&request.tool),
            schema_line(&request.input_schema)
        ));
    }
    card.push_str("[y] approve  [n] decline  [a] approve this and every tool after it  [N] decline this and every tool after it\n");
    card
}

/// The question for one tool of the card: `Tool <i> of <n> "<tool>"? [y/n/a/N] `.
pub fn tool_decision_prompt(position: usize, total: usize, tool: &str) -> String {
    format!("Tool {position} of {total} {}? [y/n/a/N] ", quote(tool))
}

/// `sha256:<first 16 hex> (<n> bytes)` of a schema, as both prompts show it.
fn schema_line(schema: &serde_json::Value) -> String {
    let digest = SchemaDigest::of(schema);
    let short_hash = digest.hex.get(..16).unwrap_or(&digest.hex);
    format!("sha256:{short_hash} ({} bytes)", digest.len)
}

/// The §13.2 prompt: server and raw tool name, the terminal-sanitised description cut to 200
/// bytes, the schema digest, and `Approve? [y/N] `.
pub fn tool_approval_prompt(request: &ToolApprovalRequest) -> String {
    let description = cut_for_prompt(&sanitise_for_terminal(&request.description, Layout::Block));
    format!(
        "\nMCP server {} wants to register tool {}\n  description: {description}\n  schema: {}\nApprove? [y/N] ",
        quote(&request.server),
        quote(&request.tool),
        schema_line(&request.input_schema)
    )
}
