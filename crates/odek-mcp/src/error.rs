//! The one error type of the MCP client. Every variant's text is the spec's exact wording; the
//! strings live here and nowhere else.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum McpError {
    /// A configuration error, already worded (`mcpclient <name>: …` or a name rule).
    #[error("{0}")]
    Config(String),
}
