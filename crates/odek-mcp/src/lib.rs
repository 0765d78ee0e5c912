//! odek's MCP client (spec `mcp-client.md`): validated server configs, the stdio transport with
//! its bounded line reader and single writer, routing by integer id, deadlines and cancellation,
//! discovery, crash recovery, and the call pipeline that turns a `tools/call` result into the
//! exact text the model sees.
//!
//! Start at [`McpHub::start`] (startup of every server of a run) and [`McpHub::call`] (one tool
//! call through the whole pipeline).

pub mod approval;
pub mod bounded_lines;
pub mod call;
mod catalogue;
pub mod connection;
pub mod discovery;
pub mod env_allowlist;
pub mod error;
pub mod frame_scan;
pub mod hub;
pub mod observer;
pub mod output_schema;
pub mod server_config;
pub mod server_lines;

pub use approval::{ApproveAll, ToolApproval, ToolApprovalRequest, ToolApprover};
pub use connection::CallOptions;
pub use discovery::{ToolDescriptor, ToolHints};
pub use error::{Cause, McpError, RequestFailure};
pub use hub::{HubOptions, McpHub, ServerInfo};
pub use observer::{McpEvent, McpObserver, StderrObserver};
pub use odek_contract::tool_result::ToolOutput;
pub use server_config::{Limits, SecretValue, ServerEntry, ServerSpec, Transport, validate_server};
