//! Per-tool approval (spec `config.md` §13.2) behind the MCP client's
//! [`odek_mcp::approval::ToolApprover`] seam.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use odek_contract::quoting::quote;
use odek_mcp::approval::{ToolApproval, ToolApprovalRequest, ToolApprover};

use super::ApprovalError;
use super::console::{Console, cut_for_prompt, is_yes, sanitize_for_terminal};
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
}

impl ToolApprover for CliToolApprover {
    fn approve_tool(&self, request: &ToolApprovalRequest) -> ToolApproval {
        if self.approve_all {
            return ToolApproval::Approved;
        }
        let Some(server) = self.servers.get(&request.server) else {
            return Self::not_approved(request);
        };
        if server.auto_approve_effective {
            return ToolApproval::Approved;
        }
        let key = tool_approval_key(
            &self.cwd,
            &server.name,
            &server.entry,
            &request.tool,
            &request.input_schema,
            &request.description,
        );
        let mut store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        if store.contains(&key) {
            return ToolApproval::Approved;
        }
        if !self.console.is_interactive() {
            return Self::not_approved(request);
        }
        let answer = self.console.prompt(&tool_approval_prompt(request));
        if !answer.as_deref().is_some_and(is_yes) {
            return ToolApproval::Declined;
        }
        if let Err(err) = store.insert_and_save(key) {
            self.console.warn(&err.to_string());
        }
        ToolApproval::Approved
    }
}

/// The §13.2 prompt: server and raw tool name, the terminal-sanitised description cut to 200
/// bytes, the schema digest, and `Approve? [y/N] `.
pub fn tool_approval_prompt(request: &ToolApprovalRequest) -> String {
    let description = cut_for_prompt(&sanitize_for_terminal(&request.description));
    let schema = SchemaDigest::of(&request.input_schema);
    let short_hash = schema.hex.get(..16).unwrap_or(&schema.hex);
    format!(
        "\nMCP server {} wants to register tool {}\n  description: {description}\n  schema: sha256:{short_hash} ({} bytes)\nApprove? [y/N] ",
        quote(&request.server),
        quote(&request.tool),
        schema.len
    )
}
