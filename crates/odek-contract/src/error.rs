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

    // Envelopes (results-and-artifacts.md §2, §3, §4). `quoted_*` fields already carry the
    // JSON-style quotes of the spec's `"<x>"`.
    #[error("malformed odek.tool-result/v1 envelope: {detail}")]
    MalformedEnvelope { detail: String },
    #[error("odek.tool-result/v1 envelope carries {count} artifacts; the cap is 64")]
    TooManyArtifacts { count: usize },
    #[error("odek.tool-result/v1 envelope carries duplicate artifact id {quoted_id}")]
    DuplicateArtifactId { quoted_id: String },
    /// Wraps exactly one of the `Artifact*` rule variants below.
    #[error("artifact ref rejected: {0}")]
    ArtifactRefRejected(Box<ContractError>),

    // Artifact-ref rules 1-20 (results-and-artifacts.md §4), in rule order.
    #[error("artifact schema {quoted_schema} does not match \"odek.artifact-ref/v1\"")]
    ArtifactSchemaMismatch { quoted_schema: String },
    #[error("artifact ref is missing required field id")]
    ArtifactMissingId,
    #[error("artifact {quoted_id} is missing required field uri")]
    ArtifactMissingUri { quoted_id: String },
    #[error("artifact {quoted_id} is missing required field media_type")]
    ArtifactMissingMediaType { quoted_id: String },
    #[error("artifact {quoted_id} rejected: no artifact roots configured for this server")]
    ArtifactNoRoots { quoted_id: String },
    #[error("artifact {quoted_id} has an unparseable uri: {detail}")]
    ArtifactUnparseableUri { quoted_id: String, detail: String },
    #[error("artifact {quoted_id} uses uri scheme {quoted_scheme}; only file:// is accepted")]
    ArtifactUriScheme { quoted_id: String, quoted_scheme: String },
    #[error("artifact {quoted_id} uri must be a plain file:// path (no host, userinfo, query, or fragment)")]
    ArtifactUriNotPlain { quoted_id: String },
    #[error("artifact {quoted_id} path {quoted_path} is not absolute")]
    ArtifactPathNotAbsolute { quoted_id: String, quoted_path: String },
    #[error("artifact {quoted_id} path {quoted_path} is not clean (contains .., //, or . elements)")]
    ArtifactPathNotClean { quoted_id: String, quoted_path: String },
    #[error("artifact {quoted_id} file is not resolvable (missing or dangling symlink): {detail}")]
    ArtifactNotResolvable { quoted_id: String, detail: String },
    #[error("artifact {quoted_id} resolves outside every configured artifact root")]
    ArtifactOutsideRoots { quoted_id: String },
    #[error("artifact {quoted_id}: stat: {detail}")]
    ArtifactStat { quoted_id: String, detail: String },
    #[error("artifact {quoted_id} is not a regular file")]
    ArtifactNotRegularFile { quoted_id: String },
    #[error("artifact {quoted_id} is {size} bytes; the absolute artifact cap is 67108864 bytes")]
    ArtifactTooLarge { quoted_id: String, size: u64 },
    #[error("artifact {quoted_id} declares a negative size_bytes")]
    ArtifactNegativeSize { quoted_id: String },
    #[error("artifact {quoted_id} size mismatch: ref declares {declared} bytes, file has {actual}")]
    ArtifactSizeMismatch { quoted_id: String, declared: i64, actual: u64 },
    #[error("artifact {quoted_id} sha256 {quoted_sha256} is not a lowercase hex SHA-256 digest")]
    ArtifactMalformedDigest { quoted_id: String, quoted_sha256: String },
    #[error(
        "artifact {quoted_id}: hash: content is at least {read} bytes; the absolute artifact cap is 67108864 bytes"
    )]
    ArtifactGrewWhileHashing { quoted_id: String, read: u64 },
    /// Not in the spec's table: opening or reading the file for rule 19 failed (unreadable file,
    /// final component swapped for a symlink after resolution, I/O error).
    #[error("artifact {quoted_id}: hash: {detail}")]
    ArtifactHashIo { quoted_id: String, detail: String },
    #[error(
        "artifact {quoted_id} sha256 mismatch: ref declares {declared_prefix}\u{2026}, file hashes to {actual_prefix}\u{2026}"
    )]
    ArtifactDigestMismatch { quoted_id: String, declared_prefix: String, actual_prefix: String },

    /// [beyond] `structuredContent` that does not match the tool's declared `outputSchema`
    /// (docs/MODEL-VIEW.md): the first failing location as a JSON pointer, and the validator's
    /// message, both cleaned and cut.
    #[error("structuredContent does not match the tool's outputSchema at {quoted_pointer}: {detail}")]
    StructuredContentMismatch { quoted_pointer: String, detail: String },

    /// [beyond] `structuredContent` the declared `outputSchema` could not be checked against
    /// within the work bounds (docs/MODEL-VIEW.md): fails closed, never accepted unchecked.
    #[error("structuredContent not checked: {reason}")]
    StructuredContentUnchecked { reason: String },

    // Writing a `file://` uri for an artifact (`artifact_ref::file_uri`).
    #[error("artifact path {quoted_path} is not absolute")]
    FileUriNotAbsolute { quoted_path: String },
    #[error("artifact path {quoted_path} is not clean (contains .. or . elements)")]
    FileUriNotClean { quoted_path: String },

    // Server-sent events (`event_stream`): a line or an event past the bound, and a line that is
    // not UTF-8 where the stream must be text.
    #[error("stream event longer than {max_bytes} bytes")]
    StreamEventTooLong { max_bytes: usize },
    #[error("stream line is not UTF-8")]
    StreamLineNotUtf8,

    /// The operating system's CSPRNG failed; no wrapper nonce can be made.
    #[error("untrusted wrapper nonce: operating-system randomness unavailable: {detail}")]
    NonceUnavailable { detail: String },
}

impl ContractError {
    /// For [`ContractError::ArtifactRefRejected`], the rule error inside; otherwise `self`.
    pub fn artifact_rule(&self) -> &ContractError {
        match self {
            ContractError::ArtifactRefRejected(rule) => rule,
            other => other,
        }
    }
}
