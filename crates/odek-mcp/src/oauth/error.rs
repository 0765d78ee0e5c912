//! What can go wrong while authorizing a remote server, each kind worded once. No text here ever
//! holds a token, a client secret or a response body that could carry one.

use odek_contract::quoting::quote;

/// Why a server could not be authorized. The texts are one line and say what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// A headless face met a server that needs a login it cannot do.
    #[error("not logged in; run odek ext login {server}")]
    NotLoggedIn { server: String },
    /// The stored grant is gone (a revoked or expired refresh token, a step-up headless).
    #[error("{reason}; run odek ext login {server}")]
    LoginRequired { server: String, reason: String },
    /// A metadata document (protected resource or authorization server) was refused.
    #[error("{} metadata at {}: {reason}", kind, quote(url))]
    Metadata { kind: &'static str, url: String, reason: String },
    /// A URL from configuration or a document that odek will not contact.
    #[error("refusing {}: {reason}", quote(url))]
    Url { url: String, reason: String },
    /// The transport failed (connect, deadline, a body over its cap, a redirect).
    #[error("{0}")]
    Http(String),
    /// Dynamic client registration failed.
    #[error("client registration: {0}")]
    Registration(String),
    /// The token endpoint refused or answered something unusable.
    #[error("token request: {0}")]
    Token(String),
    /// The authorization redirect was refused (state, issuer, error, stray requests).
    #[error("authorization redirect: {0}")]
    Redirect(String),
    /// The login waited longer than it may.
    #[error("no authorization arrived within {seconds} s; run odek ext login {server} again")]
    LoginTimedOut { server: String, seconds: u64 },
    /// The token file cannot be used.
    #[error("{0}")]
    Store(String),
    /// The server's `oauth` entry cannot work.
    #[error("oauth: {0}")]
    Config(String),
}
