//! The seam through which the client asks for per-tool approval (spec `config.md` §13.2).
//! The policy itself (persisted keys, prompts, `ODEK_APPROVE_MCP`, `auto_approve`) lives in the
//! binary; the client only asks, once per server with all of that server's tools awaiting
//! approval ([`ToolApprover::approve_tools`]), after the registration checks.

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

    /// Every tool of one server that awaits approval, in list order, asked at once so an
    /// approver can offer "this server's tools" beside per-tool answers. The answers are in
    /// request order; at startup (`relist` false) they stop after the first
    /// [`ToolApproval::Required`], which fails the server, so there may be fewer answers than
    /// requests. Each approval still stands for one tool as listed now, never for later ones.
    fn approve_tools(&self, requests: &[ToolApprovalRequest]) -> Vec<ToolApproval> {
        let mut answers = Vec::with_capacity(requests.len());
        for request in requests {
            let answer = self.approve_tool(request);
            let stop = !request.relist && matches!(answer, ToolApproval::Required(_));
            answers.push(answer);
            if stop {
                break;
            }
        }
        answers
    }
}

/// Approves everything: for tests, benchmarks and embedders that vet servers themselves.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

impl ToolApprover for ApproveAll {
    fn approve_tool(&self, _request: &ToolApprovalRequest) -> ToolApproval {
        ToolApproval::Approved
    }

    fn approve_tools(&self, requests: &[ToolApprovalRequest]) -> Vec<ToolApproval> {
        vec![ToolApproval::Approved; requests.len()]
    }
}
