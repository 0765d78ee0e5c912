//! The seam through which the client asks for per-tool approval (spec `config.md` §13.2).
//! The policy itself (persisted keys, prompts, `ODEK_APPROVE_MCP`, `auto_approve`) lives in the
//! binary; the client only asks, once per tool, after the registration checks.

use serde_json::Value;

/// One tool awaiting approval. `description` is the raw server text; `input_schema` the schema
/// after `null` became `{"type":"object"}`.
#[derive(Debug, Clone)]
pub struct ToolApprovalRequest {
    pub server: String,
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
    /// True when the tool list is being re-read mid-run (restart or `list_changed`): a tool that
    /// is not approved is then left out with a warning instead of failing the run.
    pub relist: bool,
}

/// The answer for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolApproval {
    Approved,
    /// Declined interactively: the tool is skipped, the server stays.
    Declined,
    /// Not approved and no way to ask: at startup this is fatal with the given message.
    Required(String),
}

/// Decides per-tool approval. May block (an interactive prompt); the client calls it from a
/// blocking-capable context.
pub trait ToolApprover: Send + Sync {
    fn approve_tool(&self, request: &ToolApprovalRequest) -> ToolApproval;
}

/// Approves everything: for tests, benchmarks and embedders that vet servers themselves.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

impl ToolApprover for ApproveAll {
    fn approve_tool(&self, _request: &ToolApprovalRequest) -> ToolApproval {
        ToolApproval::Approved
    }
}
