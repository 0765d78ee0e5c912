//! An SDK for writing odek-extension/v1 servers in Rust: MCP over stdio (JSON-RPC 2.0, one
//! message per line), or over Streamable HTTP with the `http` feature.
//!
//! Start at [`Server`]: name it, add tools with [`Server::typed_tool`] (arguments are a Rust
//! type; the `inputSchema` is derived from it with schemars) or [`Server::tool`] (raw JSON
//! arguments, a schema you write), and call [`Server::run_stdio`]. A handler receives an
//! `Arc<`[`CallContext`]`>` and the arguments and returns a [`ToolResponse`]. The [`CallContext`]
//! sends progress, log messages and requests to the client, changes the tool list at runtime, and
//! observes cancellation. For output too large for the model, [`ArtifactRoot::write`] writes a
//! file under the artifact root and returns its [`ArtifactRef`] (sha256 and size measured from
//! the bytes written), and [`Envelope`] wraps a short text and the refs into an
//! `odek.tool-result/v1` result.
//!
//! A complete server with an artifact (`examples/minimal.rs`):
//!
//! ```no_run
#![doc = include_str!("../examples/minimal.rs")]
//! ```
//!
//! What the server does on its own: answers `initialize` (the revision the client asked for
//! when the SDK speaks it — [`SUPPORTED_PROTOCOL_VERSIONS`] — else the newest, and the
//! contract's [`PROTOCOL_VERSION`] to a client that names none; capabilities
//! `{"tools":{"listChanged":true}}` plus whatever else is offered, and the
//! [`Server::instructions`] when given), `ping`, `tools/list` (optionally paginated) and
//! `tools/call`; answers any other method with `-32601 "method not found"`; reports an unknown
//! tool as an `isError` result (or `-32602`, with [`Server::unknown_tool`]); ignores unknown
//! params, unknown notifications and unknown
//! argument members; and exits cleanly when stdin closes.
//!
//! Resources are opt-in: once [`Server::resource`] (a static resource: a [`ResourceDef`] and
//! its [`ResourceBody`], text or base64 blob), [`Server::dynamic_resource`] (a listed resource
//! whose contents are made on each read) or [`Server::resource_reader`] (contents of unlisted
//! uris) is used, `initialize` also announces `"resources":{"listChanged":false}`,
//! `resources/list` lists the listed ones (paginated like `tools/list`, same cursors), and
//! `resources/read` answers `{"contents":[…]}`, `-32002 "Resource not found: \"<uri>\""` for a
//! uri nobody serves, or `-32602` when `uri` is missing or not a string. Without them the
//! `resources/*` methods stay `-32601` and no capability is announced. So are the rest:
//! [`Server::resource_template`] (`resources/templates/list`, and reads of the uris a template
//! matches), [`Server::resource_subscriptions`], [`Server::prompt`] (`prompts/list`,
//! `prompts/get`), [`Server::completion`] (`completion/complete`) and [`Server::logging`]
//! (`logging/setLevel`, which [`CallContext::log`] then follows). A handler asks the client's
//! model or user with [`CallContext::create_message`] and [`CallContext::elicit`].
//!
//! Each `tools/call` (and `resources/read`) runs in its own task, and one writer task owns
//! stdout, so a slow call never delays another and lines are always written whole. Stdin and
//! stdout pipes are waited on by the tokio runtime itself (no thread of the SDK's between the
//! pipe and a handler); a terminal or a regular file gets a thread of its own.
//!
//! With the `http` feature (off by default, so a stdio-only server compiles no HTTP stack),
//! `Server::bind_http` or `Server::serve_http` serve the same server over MCP 2025-03-26
//! Streamable HTTP instead: sessions (`Mcp-Session-Id`), answers as JSON or SSE, the standalone
//! `GET` stream, resumption with `Last-Event-ID`, and an optional bearer token, configured with
//! `HttpOptions`. Both transports hand every message to the same handling, so tools,
//! interceptors, cancellation and pagination behave alike.
//!
//! Built on [`contract`] (odek-contract without its `client` feature): the schema ids, caps, the
//! tool-name rule, the wire form of an artifact ref and its `file://` encoding are the ones odek
//! decodes and checks with, not copies.
//!
//! Not here: an MCP client, TLS, odek's own validation of artifact refs, and the contract
//! fixture server (its own crate, `odek-fixture-server`, built on this one).

mod blocking_io;
mod bounded_lines;
mod builtins;
mod client_requests;
mod completion;
mod connection;
mod context;
mod dispatch;
mod envelope;
mod error;
#[cfg(feature = "http")]
mod http;
mod jsonrpc;
mod logging;
mod offerings;
mod prompts;
mod resources;
mod revision;
mod server;
mod tools;
mod transport;
mod typed;
mod uri_template;

/// The contract crate the SDK is built on (without its `client` feature): the schema ids, caps,
/// name rules, artifact-ref shapes and `file://` encoding odek itself checks with.
pub use odek_contract as contract;

// Serving: the builder, its defaults, and what an interceptor sees and answers.
pub use builtins::{Reply, Request};
pub use server::{
    CancelPolicy, DEFAULT_EOF_GRACE, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_LINE_BYTES, PROTOCOL_VERSION, Server,
    UnknownTool,
};
// Tools: definitions, results, the name rule, handlers and the runtime tool set.
pub use context::{ToolHandler, ToolSet, tool_handler};
pub use tools::{
    BoxFuture, Content, MAX_TOOL_NAME_BYTES, ToolAnnotations, ToolDef, ToolResponse, ToolResult, arguments,
    validate_tool_name,
};
pub use typed::{input_schema_for, typed_def, typed_handler};
// Resources: definitions, what a read answers, and the not-found rule.
pub use connection::{MAX_SUBSCRIBED_URI_BYTES, MAX_SUBSCRIPTIONS};
pub use jsonrpc::MAX_SHOWN_URI_RUNES;
pub use resources::{ReadOutcome, ResourceBody, ResourceContents, ResourceDef, ResourceTemplateDef};
pub use uri_template::{MAX_TEMPLATE_VARIABLES, TemplateVariables};
// Protocol revisions: which the SDK speaks and how one is chosen.
pub use revision::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, negotiate_protocol_version};
// Prompts, completion and logging.
pub use completion::{Completion, CompletionOutcome, CompletionReference, CompletionRequest, MAX_COMPLETION_VALUES};
pub use logging::LogLevel;
pub use prompts::{PromptArgument, PromptArguments, PromptDef, PromptMessage, PromptOutcome, PromptResult, Role};
// Requests a handler sends the client: sampling and elicitation.
pub use client_requests::{
    ElicitAction, ElicitationRequest, ElicitationResult, SamplingMessage, SamplingRequest, SamplingResult,
};
// What a handler can do while it runs.
pub use context::{CallContext, PendingReply};
pub use transport::{Chunk, RawStream};
// Results too large for the model: envelopes and artifact refs.
pub use envelope::{
    ARTIFACT_REF_SCHEMA, ArtifactRef, ArtifactRoot, Envelope, MAX_ARTIFACT_BYTES, MAX_ARTIFACTS_PER_RESULT,
    TOOL_RESULT_SCHEMA, file_uri, measure_file,
};
// Streamable HTTP (feature `http`): options, their defaults, and the running server.
#[cfg(feature = "http")]
pub use http::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_HTTP_PATH, DEFAULT_KEEP_ALIVE_INTERVAL,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_SESSIONS, DEFAULT_SHUTDOWN_GRACE, HttpOptions, HttpServer, HttpShutdown,
    MAX_RETAINED_STREAMS, REPLAY_BUFFER_BYTES,
};
// Errors and JSON-RPC ids.
pub use error::Error;
pub use jsonrpc::{RequestId, RpcError, codes};
