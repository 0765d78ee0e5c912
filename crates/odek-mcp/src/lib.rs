//! odek's MCP client (spec `mcp-client.md`): validated server configs, the stdio transport with
//! its bounded line reader and single writer, routing by integer id, deadlines and cancellation,
//! discovery, crash recovery, and the call pipeline that turns a `tools/call` result into the
//! exact text the model sees.

pub mod approval;
pub mod error;
pub mod observer;
pub mod server_config;

pub use error::McpError;
