//! The HTTP transport's configuration ([`HttpOptions`]): the endpoint path, who may talk to it
//! (bearer token, allowed origins), whether the standalone `GET` stream exists, and every bound
//! and deadline, each with a documented default. Checking a request against them is `access`'s
//! and the service's job, not this module's.

use std::time::Duration;

use crate::Error;

/// Default for [`HttpOptions::path`]: the one MCP endpoint.
pub const DEFAULT_HTTP_PATH: &str = "/mcp";

/// Default for [`HttpOptions::max_sessions`]: sessions alive at once.
pub const DEFAULT_MAX_SESSIONS: usize = 64;

/// Default for [`HttpOptions::max_connections`]: TCP connections served at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// Default for [`HttpOptions::header_read_timeout`]: 10 s for a request's headers.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Default for [`HttpOptions::body_read_timeout`]: 30 s for a request's body.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Default for [`HttpOptions::keep_alive_interval`]: 15 s between SSE keep-alive comments.
pub const DEFAULT_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(15);

/// Default for [`HttpOptions::shutdown_grace`]: 5 s, as long as stdio waits at EOF.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How [`Server::serve_http`](crate::Server::serve_http) serves: built with [`HttpOptions::new`]
/// and its setters, each of which documents its default.
#[derive(Clone)]
pub struct HttpOptions {
    pub(crate) path: String,
    pub(crate) bearer_token: Option<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) get_stream: bool,
    pub(crate) max_sessions: usize,
    pub(crate) max_connections: usize,
    pub(crate) header_read_timeout: Duration,
    pub(crate) body_read_timeout: Duration,
    pub(crate) keep_alive_interval: Duration,
    pub(crate) shutdown_grace: Duration,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("HttpOptions")
            .field("path", &self.path)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<redacted>"))
            .field("allowed_origins", &self.allowed_origins)
            .field("get_stream", &self.get_stream)
            .field("max_sessions", &self.max_sessions)
            .field("max_connections", &self.max_connections)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("keep_alive_interval", &self.keep_alive_interval)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpOptions {
    /// Every default: endpoint [`DEFAULT_HTTP_PATH`], no bearer token, only loopback origins,
    /// the `GET` stream on, and the `DEFAULT_*` bounds.
    pub fn new() -> Self {
        Self {
            path: DEFAULT_HTTP_PATH.to_owned(),
            bearer_token: None,
            allowed_origins: Vec::new(),
            get_stream: true,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            keep_alive_interval: DEFAULT_KEEP_ALIVE_INTERVAL,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }

    /// The endpoint's path (default [`DEFAULT_HTTP_PATH`]); it must start with `/` and carry no
    /// query. Every other path gets `404`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Requires `Authorization: Bearer <token>` on every request (default: none required). A
    /// missing or different token gets `401` with `WWW-Authenticate: Bearer`; the comparison
    /// takes the same time wherever the tokens differ. The token must be non-empty visible
    /// ASCII.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Also accepts requests whose `Origin` header is exactly `origin` (ASCII case ignored),
    /// e.g. `https://app.example`. Loopback origins (`localhost`, `127.0.0.0/8`, `[::1]`) and
    /// requests without `Origin` are always accepted; any other origin gets `403`, which stops
    /// a web page from reaching a local server through DNS rebinding.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Whether `GET` opens the session's standalone stream (default `true`). With `false`,
    /// `GET` gets `405`, so server messages unrelated to a request go out on request streams
    /// only.
    pub fn get_stream(mut self, enabled: bool) -> Self {
        self.get_stream = enabled;
        self
    }

    /// Sessions alive at once (default [`DEFAULT_MAX_SESSIONS`], at least 1). At the limit an
    /// `initialize` ends the least recently used idle session (no request running, no stream
    /// being read); when none is idle it gets `503`.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions.max(1);
        self
    }

    /// TCP connections served at once (default [`DEFAULT_MAX_CONNECTIONS`], at least 1). When
    /// all are taken, a new connection makes room by dropping the oldest one that has not yet
    /// made a request past the origin and token checks; when every one has, it waits in the
    /// listen backlog.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How long a client may take to send a request's headers, also while a kept-alive
    /// connection is idle (default [`DEFAULT_HEADER_READ_TIMEOUT`]); then the connection is
    /// closed.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a client may take to send a request's body (default
    /// [`DEFAULT_BODY_READ_TIMEOUT`]); then it gets `408` and the connection is closed.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// How often an SSE stream with nothing to send gets a comment line (default
    /// [`DEFAULT_KEEP_ALIVE_INTERVAL`]), so a client that went away is noticed and its
    /// connection freed.
    pub fn keep_alive_interval(mut self, interval: Duration) -> Self {
        self.keep_alive_interval = interval;
        self
    }

    /// How long a shutdown waits for open connections to finish once every session has ended
    /// (default [`DEFAULT_SHUTDOWN_GRACE`]); the rest are dropped.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Rejects options no request could satisfy.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if !self.path.starts_with('/') || self.path.contains(['?', '#']) {
            return Err(Error::HttpOption {
                reason: format!("path {:?} must start with / and have no query", self.path),
            });
        }
        if let Some(token) = &self.bearer_token
            && (token.is_empty() || !token.bytes().all(|byte| byte.is_ascii_graphic()))
        {
            return Err(Error::HttpOption { reason: "the bearer token must be non-empty visible ASCII".to_owned() });
        }
        if self.keep_alive_interval.is_zero() {
            return Err(Error::HttpOption { reason: "keep_alive_interval must be above zero".to_owned() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_rejected_options() {
        let options = HttpOptions::new();
        assert_eq!(options.path, "/mcp");
        assert!(options.get_stream && options.bearer_token.is_none());
        assert!(options.validate().is_ok());
        assert_eq!(
            HttpOptions::new().path("mcp").validate().unwrap_err().to_string(),
            "invalid HTTP option: path \"mcp\" must start with / and have no query"
        );
        assert!(HttpOptions::new().path("/mcp?x=1").validate().is_err());
        assert!(HttpOptions::new().bearer_token("").validate().is_err());
        assert!(HttpOptions::new().bearer_token("a b").validate().is_err());
        assert!(HttpOptions::new().keep_alive_interval(Duration::ZERO).validate().is_err());
        assert_eq!(HttpOptions::new().max_sessions(0).max_sessions, 1);
        assert!(!format!("{:?}", HttpOptions::new().bearer_token("s3cret")).contains("s3cret"));
    }
}
