//! The crate's one error type.
//!
//! A bad tool name is odek-contract's own error ([`Error::ToolName`]), so a server author sees
//! the words of `mcp-client.md` §3 the odek client prints when it rejects the server. Names and
//! paths in messages are quoted by the contract's rule (`odek_contract::quoting::quote`).

use std::io;
use std::path::PathBuf;

use odek_contract::ContractError;
use odek_contract::quoting::quote;

/// Everything that can go wrong in the SDK.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tool name breaks the contract's naming rules ([`crate::validate_tool_name`]): it is
    /// empty, longer than [`crate::MAX_TOOL_NAME_BYTES`] bytes, contains `__` (odek's
    /// `<server>__<tool>` qualifier) or a character outside `[A-Za-z0-9_-]`.
    #[error(transparent)]
    ToolName(ContractError),

    /// A tool with this name is already registered.
    #[error("tool {} is already registered", quote(.name))]
    DuplicateTool { name: String },

    /// A resource with this uri is already registered.
    #[error("resource {} is already registered", quote(.uri))]
    DuplicateResource { uri: String },

    /// A prompt with this name is already registered.
    #[error("prompt {} is already registered", quote(.name))]
    DuplicatePrompt { name: String },

    /// A resource template's `uriTemplate` is not one the SDK can match (RFC 6570 level 1:
    /// literal text and `{name}` variables, separated).
    #[error("resource template {}: {reason}", quote(.template))]
    UriTemplate { template: String, reason: String },

    /// A typed request to the client needs a capability the client did not declare in
    /// `initialize`, so it was not sent.
    #[error("the client did not declare the {capability} capability")]
    ClientCapabilityMissing { capability: &'static str },

    /// The client's reply to a typed request does not have the shape MCP gives it.
    #[error("the client's reply to {method} is malformed: {reason}")]
    InvalidReply { method: &'static str, reason: String },

    /// The connection to the client is gone (stdin reached EOF or stdout failed), so nothing
    /// can be sent and no reply can arrive.
    #[error("connection closed")]
    ConnectionClosed,

    /// A server-initiated request got no reply before its deadline.
    #[error("request {} got no reply within {timeout_ms} ms", quote(.method))]
    RequestTimeout { method: String, timeout_ms: u128 },

    /// The client answered a server-initiated request with a JSON-RPC error.
    #[error("MCP error {code}: {message}")]
    Rpc { code: i64, message: String },

    /// An artifact path is relative, so no `file://` URI can name it.
    #[error("artifact path {} is not absolute", quote(&.path.to_string_lossy()))]
    ArtifactPathNotAbsolute { path: PathBuf },

    /// An artifact path contains `.` or `..` components, which odek rejects (rule 10).
    #[error("artifact path {} is not clean (contains .. or . elements)", quote(&.path.to_string_lossy()))]
    ArtifactPathNotClean { path: PathBuf },

    /// An artifact file name is empty or not a single plain path component.
    #[error("artifact file name {} must be one plain path component", quote(.name))]
    ArtifactFileName { name: String },

    /// [`Server::run`](crate::Server::run) was called outside a tokio runtime.
    #[error("the server must run inside a tokio runtime")]
    NoRuntime,

    /// An [`HttpOptions`](crate::HttpOptions) value no request could satisfy.
    #[cfg(feature = "http")]
    #[error("invalid HTTP option: {reason}")]
    HttpOption { reason: String },

    /// An I/O operation failed; `context` names the operation and the path.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io { context: context.into(), source }
    }
}
