//! An SDK for writing odek-extension/v1 servers in Rust: MCP over stdio, JSON-RPC 2.0, one
//! message per line.
//!
//! Start at [`Server`]: name it, add tools with [`Server::tool`], and call
//! [`Server::run_stdio`]. A tool handler is an async closure taking an `Arc<`[`CallContext`]`>` and
//! the call's `arguments`, returning a [`ToolResponse`]. The [`CallContext`] sends progress,
//! log messages and requests to the client, changes the tool list at runtime, and observes
//! cancellation. [`Envelope`] and [`ArtifactRef`] build `odek.tool-result/v1` results whose
//! artifact digests and sizes are correct by construction.
//!
//! ```no_run
//! use odek_extension::{Server, ToolDef, ToolResponse, arguments};
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize)]
//! struct EchoArgs {
//!     text: String,
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), odek_extension::Error> {
//!     Server::new("echo-server", "0.1.0")
//!         .tool(
//!             ToolDef::new(
//!                 "echo",
//!                 "Returns its text argument",
//!                 json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
//!             ),
//!             |_context, args| async move {
//!                 match arguments::<EchoArgs>(args) {
//!                     Ok(args) => ToolResponse::text(args.text),
//!                     Err(response) => response,
//!                 }
//!             },
//!         )
//!         .run_stdio()
//!         .await
//! }
//! ```
//!
//! What the server does on its own: answers `initialize` (protocol version
//! [`PROTOCOL_VERSION`] unless configured, capabilities `{"tools":{"listChanged":true}}`),
//! `ping`, `tools/list` (optionally paginated) and `tools/call`; answers any other method with
//! `-32601 "method not found"`; reports an unknown tool as an `isError` result; ignores unknown
//! params, unknown notifications and unknown argument members; and exits cleanly when stdin
//! closes. Each `tools/call` runs in its own task, and one writer thread owns stdout, so a slow
//! call never delays another and lines are always written whole.
//!
//! Not here: an MCP client, HTTP transports, and odek's own validation of artifact refs.

mod bounded_lines;
mod context;
mod envelope;
mod error;
mod jsonrpc;
mod server;
mod tools;
mod transport;

pub use context::{CallContext, PendingReply};
pub use envelope::{
    ARTIFACT_REF_SCHEMA, ArtifactRef, Envelope, MAX_ARTIFACT_BYTES, MAX_ARTIFACTS_PER_RESULT, TOOL_RESULT_SCHEMA,
    file_uri, measure_file,
};
pub use error::Error;
pub use jsonrpc::{RequestId, RpcError, codes};
pub use server::{
    CancelPolicy, DEFAULT_EOF_GRACE, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE_BYTES, PROTOCOL_VERSION, Reply, Request,
    Server,
};
pub use tools::{
    BoxFuture, Content, MAX_TOOL_NAME_BYTES, ToolDef, ToolHandler, ToolResponse, ToolResult, ToolSet, arguments,
    tool_handler, validate_tool_name,
};
pub use transport::{Chunk, RawStream};
