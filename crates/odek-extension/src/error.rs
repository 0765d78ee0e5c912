//! The crate's one error type.
//!
//! Tool-name variants carry the exact texts of `mcp-client.md` §3, so a server author sees the
//! same words the odek client would print when it rejects the server.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in the SDK.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tool name is the empty string.
    #[error("tool name is empty")]
    EmptyToolName,

    /// A tool name is longer than [`crate::MAX_TOOL_NAME_BYTES`] bytes.
    #[error("tool name {} exceeds 64 characters", json_quote(.name))]
    ToolNameTooLong { name: String },

    /// A tool name contains `__`, odek's `<server>__<tool>` qualifier separator.
    #[error("tool name {} cannot contain \"__\"", json_quote(.name))]
    ToolNameContainsQualifier { name: String },

    /// A tool name contains a character outside `[A-Za-z0-9_-]`.
    #[error("tool name {} contains invalid character {}", json_quote(.name), single_quote(*.character))]
    ToolNameInvalidCharacter { name: String, character: char },

    /// A tool with this name is already registered.
    #[error("tool {} is already registered", json_quote(.name))]
    DuplicateTool { name: String },

    /// The connection to the client is gone (stdin reached EOF or stdout failed), so nothing
    /// can be sent and no reply can arrive.
    #[error("connection closed")]
    ConnectionClosed,

    /// A server-initiated request got no reply before its deadline.
    #[error("request {} got no reply within {timeout_ms} ms", json_quote(.method))]
    RequestTimeout { method: String, timeout_ms: u128 },

    /// The client answered a server-initiated request with a JSON-RPC error.
    #[error("MCP error {code}: {message}")]
    Rpc { code: i64, message: String },

    /// An artifact path is relative, so no `file://` URI can name it.
    #[error("artifact path {} is not absolute", json_quote(&.path.to_string_lossy()))]
    ArtifactPathNotAbsolute { path: PathBuf },

    /// An artifact path contains `.` or `..` components, which odek rejects (rule 10).
    #[error("artifact path {} is not clean (contains .. or . elements)", json_quote(&.path.to_string_lossy()))]
    ArtifactPathNotClean { path: PathBuf },

    /// An artifact file name is empty or not a single plain path component.
    #[error("artifact file name {} must be one plain path component", json_quote(.name))]
    ArtifactFileName { name: String },

    /// [`Server::run`](crate::Server::run) was called outside a tokio runtime.
    #[error("the server must run inside a tokio runtime")]
    NoRuntime,

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

/// `"<s>"` with JSON-style escaping, the spec's notation for quoted names.
pub(crate) fn json_quote(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// `'<c>'` with JSON-style escaping of the character, the spec's notation for one character.
fn single_quote(character: char) -> String {
    let quoted = json_quote(character.encode_utf8(&mut [0; 4]));
    let inner = quoted.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')).unwrap_or(&quoted);
    format!("'{inner}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_name_errors_match_the_spec_texts() {
        assert_eq!(Error::EmptyToolName.to_string(), "tool name is empty");
        assert_eq!(
            Error::ToolNameInvalidCharacter { name: "read file".into(), character: ' ' }.to_string(),
            "tool name \"read file\" contains invalid character ' '"
        );
        assert_eq!(
            Error::ToolNameContainsQualifier { name: "a__b".into() }.to_string(),
            "tool name \"a__b\" cannot contain \"__\""
        );
        assert_eq!(
            Error::ToolNameInvalidCharacter { name: "a\tb".into(), character: '\t' }.to_string(),
            "tool name \"a\\tb\" contains invalid character '\\t'"
        );
    }
}
