//! The `odek-extension/v1` contract as pure rules: server and tool names, the tool-result
//! envelope, artifact refs and their validation, rendering for the model, truncation, secret
//! redaction, prompt-injection detection and the untrusted-content wrapper. No async, no
//! processes; the only I/O is the filesystem access artifact validation needs and the one rule
//! for opening a file by name ([`regular_file`]). The MCP client and the agent call in here so
//! each rule lives in exactly one place.
//!
//! Start at [`model_view::model_view`], the rule for everything one `tools/call` result shows
//! the model, and [`tool_result::decode_tool_result`], which composes the spec's rules for its
//! text items.

pub mod artifact_ref;
pub mod canonical_json;
pub mod content_lines;
pub mod envelope;
pub mod error;
pub mod escaped_text;
pub mod model_view;
pub mod names;
pub mod prompt_injection;
pub mod quoting;
pub mod redaction;
pub mod regular_file;
pub mod render;
pub mod secret_names;
pub mod terminal_text;
pub mod tool_result;
pub mod truncation;
pub mod untrusted;

pub use error::ContractError;
