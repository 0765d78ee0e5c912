//! odek's MCP client (spec `mcp-client.md`): validated server configs, the stdio transport with
//! its bounded line reader and single writer, routing by integer id, deadlines and cancellation,
//! discovery, crash recovery, and the call pipeline that turns a `tools/call` result into the
//! exact text the model sees. It also lends `odek ext check` (crate `odek-conformance`) the
//! pieces a server is checked with — the spawn, the HTTP connection, the wire frames, the
//! listing, the registration checks and the result decoding — so a server is judged by what the
//! client does with it.
//!
//! Start at [`McpHub::start`] (startup of every server of a run) and [`McpHub::call`] (one tool
//! call through the whole pipeline). The public modules are those other crates reach into by
//! path: `wire` (the frames odek writes and reads), `process` (starting a server and killing its
//! group), `discovery` (the listing and the registration checks), `remote` (a remote entry's
//! URL, headers and token), `oauth` (\[beyond\] OAuth 2.1 for remote servers: the
//! per-server `Authorizer`, its options and `odek ext login`'s flow), `remote_session` (one HTTP connection driven by its caller),
//! `bounded_lines`, `observer`, `server_lines`, `server_config`, `env_allowlist`, `approval`,
//! `elicitation` (a server's requests for input: the form rules, the policies),
//! `package_runner` (what a confined package runner is granted) and `hub`; everything else is re-exported below or private. Imports go one way: `wire`,
//! `bounded_lines`, `observer`, `caps`, `approval` and `elicitation` import nothing else of the crate, and no
//! module imports back from a module that imports it (`hub` is on top).

pub mod approval;
pub mod bounded_lines;
mod call;
mod caps;
mod catalogue;
mod connection;
pub mod discovery;
pub mod elicitation;
pub mod env_allowlist;
mod error;
pub mod hub;
mod instructions;
pub mod oauth;
pub mod observer;
mod output_schema;
pub mod package_runner;
pub mod process;
pub mod remote;
pub mod remote_session;
mod resources;
pub mod revision;
pub mod server_config;
pub mod server_lines;
pub mod server_sandbox;
pub mod wire;

/// Approves every tool: for tests, benchmarks and embedders that vet servers themselves.
pub use approval::ApproveAll;
/// The answer to one [`ToolApprovalRequest`].
pub use approval::ToolApproval;
/// A tool waiting for approval, as the approver sees it.
pub use approval::ToolApprovalRequest;
/// Decides whether tools may be offered to the model.
pub use approval::ToolApprover;
/// A `tools/call` result decoded for the model, for a tool without an `outputSchema`.
pub use call::decode_call_result;
/// A `tools/call` result decoded for the model, `structuredContent` checked against a schema.
pub use call::decode_checked_call_result;
/// The caller's deadline and cancellation of one request.
pub use connection::CallOptions;
/// How long a server may take to exit once its stdin is closed (5 s).
pub use connection::EXIT_GRACE;
/// How long progress can extend one request after its dispatch (3600 s).
pub use connection::PROGRESS_CAP;
/// A listed tool that passed every check and may be offered to the model.
pub use discovery::ToolDescriptor;
/// The `annotations` hints odek acts on.
pub use discovery::ToolHints;
/// \[beyond\] Who answers a server's elicitations, and how long a person has.
pub use elicitation::ElicitationSettings;
/// \[beyond\] Asks the person a server's elicitation is for.
pub use elicitation::Elicitor;
/// Why a request failed at the transport.
pub use error::Cause;
/// \[beyond\] Which limit ended a request that ran out of time.
pub use error::DeadlineLimit;
/// How an HTTP answer failed a request (spec §14's wording).
pub use error::HttpFailure;
/// The error of every client operation; its text is the spec's.
pub use error::McpError;
/// A listed tool name the name rules reject, and why.
pub use error::RejectedName;
/// How one request failed, and whether it may have reached the server.
pub use error::RequestFailure;
/// \[beyond\] The hint after the start-up failure of one required server, and of several.
pub use error::{MAKE_OPTIONAL_HINT_MANY, MAKE_OPTIONAL_HINT_ONE};
/// What the hub needs besides the server specs.
pub use hub::HubOptions;
/// Every MCP server of a run, started, routed to and shut down together.
pub use hub::McpHub;
/// A server's state as `odek ext list` shows it.
pub use hub::ServerInfo;
/// A server's `instructions` as the model may see them, and the cap on them.
pub use hub::ServerInstructions;
/// The untrusted source of a server's instructions (`mcp-instructions:<server>`).
pub use instructions::{INSTRUCTIONS_SOURCE_PREFIX, MAX_INSTRUCTIONS_BYTES, instructions_source};
/// The MCP lifecycle events of spec `events.md` §3.
pub use observer::McpEvent;
/// Receives events, warnings and server lines.
pub use observer::McpObserver;
/// Prints warnings and server lines on stderr.
pub use observer::StderrObserver;
/// What a tool call gives the model: the text and the validated artifacts.
pub use odek_contract::tool_result::ToolOutput;
/// A declared `outputSchema`, compiled and bounded.
pub use output_schema::OutputSchema;
/// Compiles a declared `outputSchema`, or says why it is ignored.
pub use output_schema::compile_output_schema;
/// The work bounds of one check, and why a value was not checked.
pub use output_schema::{MAX_CHECK_DEPTH, MAX_CHECK_STEPS, Unbounded};
/// Compiles a schema, saying where in it an error is.
pub use output_schema::{SchemaError, compile_schema};
/// Most resources of one `resources/list` page given a line.
pub use resources::MAX_LISTED_RESOURCES;
/// A server's effective limits: timeout, response bytes, result characters.
pub use server_config::Limits;
/// A `secret_env` value that `Debug` never shows.
pub use server_config::SecretValue;
/// One `mcp_servers` entry as configured.
pub use server_config::ServerEntry;
/// A validated server, ready to start.
pub use server_config::ServerSpec;
/// How a server is reached: a command over stdio or a URL.
pub use server_config::Transport;
/// Validates one configured server into a [`ServerSpec`] and its warnings.
pub use server_config::validate_server;
/// \[beyond\] How the hub confines the stdio servers that ask for the sandbox.
pub use server_sandbox::ServerSandbox;
