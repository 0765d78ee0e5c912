//! The `odek-extension/v1` contract as pure rules: server and tool names, the tool-result
//! envelope, artifact refs and their validation, rendering for the model, truncation, secret
//! redaction and the untrusted-content wrapper. No async, no processes; the MCP client and the
//! agent call in here so each rule lives in exactly one place.
//!
//! Start at `tool_result::decode_tool_result`, which composes the rest for one `tools/call` result.

pub mod error;
pub mod names;
pub mod quoting;
pub mod secret_names;
pub mod truncation;

pub use error::ContractError;
