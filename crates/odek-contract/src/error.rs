//! The one error type of `odek-contract`. Each variant's text is the spec's exact wording; tests
//! compare `to_string()` with the spec.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ContractError {
    #[error("server name cannot be empty")]
    ServerNameEmpty,
    #[error("server name {quoted} too long ({len} > 64)")]
    ServerNameTooLong { quoted: String, len: usize },
    #[error("server name {quoted} cannot contain \"__\"")]
    ServerNameQualifier { quoted: String },
    #[error("server name {quoted} contains invalid character {c} at position {position}")]
    ServerNameChar { quoted: String, c: String, position: usize },
    #[error("tool name is empty")]
    ToolNameEmpty,
    #[error("tool name {quoted} exceeds 64 characters")]
    ToolNameTooLong { quoted: String },
    #[error("tool name {quoted} cannot contain \"__\"")]
    ToolNameQualifier { quoted: String },
    #[error("tool name {quoted} contains invalid character {c}")]
    ToolNameChar { quoted: String, c: String },
}
