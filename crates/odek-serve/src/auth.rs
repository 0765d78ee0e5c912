//! Who may talk to `odek serve`: the per-start bearer token (or the operator's token file),
//! sent as `Authorization: Bearer` or as the HttpOnly cookie the page gets, compared in
//! constant time; and the Host and Origin rules that keep a web page of another site, or a
//! DNS-rebound name, away from a loopback listener. CORS stays closed: no response ever
//! carries an `Access-Control-Allow-*` header.

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq;

/// Random bytes behind a generated token (hex: 64 characters, 256 bits).
const TOKEN_BYTES: usize = 32;

/// The shortest token a token file may hold.
const MIN_TOKEN_CHARS: usize = 32;

/// The largest token file read.
const MAX_TOKEN_FILE_BYTES: u64 = 4096;

/// The cookie the page gets once it is opened with `?token=`.
pub const COOKIE: &str = "odek_token";

/// Why there is no token.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The OS has no randomness to give.
    #[error("no randomness for the token: {0}")]
    Randomness(String),
    /// The token file cannot be used.
    #[error("--token-file {path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The secret every request must carry.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// A fresh token from the OS's CSPRNG.
    pub fn generate() -> Result<Token, TokenError> {
        let mut bytes = [0_u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|error| TokenError::Randomness(error.to_string()))?;
        Ok(Token(hex::encode(bytes)))
    }

    /// The token the operator provisioned in `path`: a regular file (never a FIFO or a device,
    /// which would block the open), at most 4 KiB, holding one token of at least 32 printable
    /// ASCII characters (surrounding whitespace ignored).
    pub fn from_file(path: &Path) -> Result<Token, TokenError> {
        let fail = |reason: String| TokenError::File { path: path.display().to_string(), reason };
        let metadata = std::fs::metadata(path).map_err(|error| fail(error.to_string()))?;
        if !metadata.is_file() {
            return Err(fail("not a regular file".to_owned()));
        }
        let file = std::fs::File::open(path).map_err(|error| fail(error.to_string()))?;
        let mut text = String::new();
        file.take(MAX_TOKEN_FILE_BYTES + 1).read_to_string(&mut text).map_err(|error| fail(error.to_string()))?;
        if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
            return Err(fail(format!("larger than {MAX_TOKEN_FILE_BYTES} bytes")));
        }
        let token = text.trim();
        if token.len() < MIN_TOKEN_CHARS || !token.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(fail(format!(
                "want one token of at least {MIN_TOKEN_CHARS} printable ASCII characters without spaces"
            )));
        }
        Ok(Token(token.to_owned()))
    }

    /// The token's text (for the one line that shows it, and the page's cookie).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `offered` is the token, in time that does not depend on where they differ.
    pub fn matches(&self, offered: &str) -> bool {
        bool::from(self.0.as_bytes().ct_eq(offered.as_bytes()))
    }

    /// Whether the request carries the token, as a bearer token or as the page's cookie.
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .is_some_and(|offered| self.matches(offered.trim()));
        bearer || cookie(headers, COOKIE).is_some_and(|offered| self.matches(offered))
    }
}

/// The value of cookie `name` in the request.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

/// The `Host` and `Origin` rules of a listener on `addr`.
#[derive(Debug, Clone)]
pub struct Origins {
    /// The host names a request may name: the listener's address, and `localhost` for a
    /// loopback one; `None`: any (`--allow-remote`, behind the operator's proxy).
    hosts: Option<Vec<String>>,
}

impl Origins {
    /// The rules for a listener on `addr`.
    pub fn new(addr: SocketAddr, allow_remote: bool) -> Origins {
        if allow_remote {
            return Origins { hosts: None };
        }
        let port = addr.port();
        let mut hosts = vec![addr.to_string()];
        if addr.ip().is_loopback() {
            hosts.push(format!("localhost:{port}"));
            hosts.push(format!("127.0.0.1:{port}"));
            hosts.push(format!("[::1]:{port}"));
        }
        Origins { hosts: Some(hosts) }
    }

    /// Why the request is refused (403), or `None`: its `Host` is one of the listener's names
    /// (DNS rebinding points a foreign name at 127.0.0.1), and its `Origin`, when a browser
    /// sent one, is this very site.
    pub fn refuses(&self, headers: &HeaderMap) -> Option<&'static str> {
        let host = headers.get(header::HOST).and_then(|value| value.to_str().ok()).unwrap_or_default();
        if let Some(hosts) = &self.hosts
            && !hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(host))
        {
            return Some("the Host header names another site");
        }
        match headers.get(header::ORIGIN).map(|value| value.to_str().unwrap_or_default()) {
            None => None,
            Some(origin) if origin.eq_ignore_ascii_case(&format!("http://{host}")) => None,
            Some(_) => Some("the request comes from a page of another site"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn the_token_is_taken_from_the_bearer_header_or_the_cookie_only_red() {
        let token = Token::generate().unwrap();
        assert_eq!(token.expose().len(), 64);
        let bearer = format!("Bearer {}", token.expose());
        assert!(token.admits(&headers(&[(header::AUTHORIZATION, &bearer)])));
        let cookie = format!("theme=dark; {COOKIE}={}", token.expose());
        assert!(token.admits(&headers(&[(header::COOKIE, &cookie)])));
        assert!(!token.admits(&headers(&[])));
        assert!(!token.admits(&headers(&[(header::AUTHORIZATION, "Bearer wrong")])));
        assert!(!token.admits(&headers(&[(header::AUTHORIZATION, token.expose())])));
        let prefix = format!("Bearer {}", &token.expose()[..63]);
        assert!(!token.admits(&headers(&[(header::AUTHORIZATION, &prefix)])));
        assert!(!token.admits(&headers(&[(header::COOKIE, &format!("x{COOKIE}={}", token.expose()))])));
        assert_eq!(format!("{token:?}"), "Token(<redacted>)");
    }

    #[test]
    fn foreign_hosts_and_origins_are_refused_red() {
        let origins = Origins::new("127.0.0.1:7420".parse().unwrap(), false);
        assert_eq!(origins.refuses(&headers(&[(header::HOST, "127.0.0.1:7420")])), None);
        assert_eq!(origins.refuses(&headers(&[(header::HOST, "localhost:7420")])), None);
        assert!(origins.refuses(&headers(&[(header::HOST, "evil.example:7420")])).is_some());
        assert!(origins.refuses(&headers(&[])).is_some());
        let same = [(header::HOST, "127.0.0.1:7420"), (header::ORIGIN, "http://127.0.0.1:7420")];
        assert_eq!(origins.refuses(&headers(&same)), None);
        let foreign = [(header::HOST, "127.0.0.1:7420"), (header::ORIGIN, "http://evil.example")];
        assert!(origins.refuses(&headers(&foreign)).is_some());
        let open = Origins::new("0.0.0.0:7420".parse().unwrap(), true);
        assert_eq!(open.refuses(&headers(&[(header::HOST, "odek.internal")])), None);
    }

    #[test]
    fn a_token_file_must_be_a_small_regular_file_with_a_long_token_red() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("token");
        std::fs::write(&good, "  0123456789abcdef0123456789abcdef\n").unwrap();
        assert_eq!(Token::from_file(&good).unwrap().expose(), "0123456789abcdef0123456789abcdef");
        let short = dir.path().join("short");
        std::fs::write(&short, "abc").unwrap();
        assert!(Token::from_file(&short).is_err());
        assert!(Token::from_file(dir.path()).unwrap_err().to_string().ends_with("not a regular file"));
        let big = dir.path().join("big");
        std::fs::write(&big, "a".repeat(5000)).unwrap();
        assert!(Token::from_file(&big).is_err());
    }
}
