//! The errors of session storage and external-state refs. Every spec text (loop-and-sessions.md
//! §10) lives here once; tests compare `to_string()` with the spec.

use odek_contract::quoting::quote;

/// A failed session operation.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session: invalid session ID {}", quote(.0))]
    InvalidId(String),
    #[error("session: load {}: file too large ({size} bytes, max {max})", quote(.id))]
    TooLarge { id: String, size: u64, max: u64 },
    #[error("session: load {}: ID mismatch (file contains {})", quote(.id), quote(.found))]
    IdMismatch { id: String, found: String },
    #[error("session: load {}: corrupt session file: {detail}", quote(.id))]
    Corrupt { id: String, detail: String },
    #[error("session: load {}: the session file is a symlink; refusing to follow it", quote(.id))]
    Symlink { id: String },
    #[error("session: load {}: the session file is not a regular file", quote(.id))]
    NotRegularFile { id: String },
    #[error("session: {action} {}: no such session", quote(.id))]
    NotFound { action: &'static str, id: String },
    #[error("session: save {}: does not fit in {max} bytes even with every removable message group trimmed", quote(.id))]
    TooLargeToSave { id: String, max: u64 },
    /// [beyond] Another process holds the session's lock (see `session::lock`).
    #[error(
        "session: {} is in use by another odek process{}; wait for it to finish, or continue another session",
        quote(.id),
        .pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    InUse { id: String, pid: Option<u32> },
    #[error("session: no randomness for a new session ID: {0}")]
    Randomness(String),
    #[error("session: {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("session: encode {}: {detail}", quote(.id))]
    Encode { id: String, detail: String },
    #[error(transparent)]
    ExternalRef(#[from] ExternalRefError),
}

impl SessionError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> SessionError {
        SessionError::Io { context: context.into(), source }
    }
}

/// An external-state ref that breaks the §10.4 rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExternalRefError {
    #[error("session: external ref kind must be 1-64 chars, got {0}")]
    KindLength(usize),
    #[error("session: external ref kind {}: only lowercase ASCII letters, digits, '_' and '-' allowed", quote(.0))]
    KindCharacters(String),
    #[error("session: external ref uri must be 1-2048 chars, got {0}")]
    UriLength(usize),
    #[error("session: external ref uri contains a control character (U+{:04X})", u32::from(*.0))]
    UriControlCharacter(char),
    #[error("session: external ref created_by must be 1-128 chars, got {0}")]
    CreatedByLength(usize),
}

/// An `--external-ref <spec>` the CLI cannot use: `invalid --external-ref "<spec>": <problem>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid --external-ref {}: {problem}", quote(.spec))]
pub struct ExternalRefSpecError {
    /// The spec as given, redacted (it may carry a credential-bearing URI).
    pub(crate) spec: String,
    pub(crate) problem: ExternalRefSpecProblem,
}

/// What is wrong with an `--external-ref` spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExternalRefSpecProblem {
    #[error("want the kind=uri shorthand or comma-separated key=value pairs")]
    NoForm,
    #[error("malformed pair {} (want key=value)", quote(.0))]
    MalformedPair(String),
    #[error("read_only must be true or false, got {}", quote(.0))]
    ReadOnly(String),
    #[error("unknown key {} (want kind, uri, created_by, read_only)", quote(.0))]
    UnknownKey(String),
    #[error(transparent)]
    Invalid(#[from] ExternalRefError),
}
