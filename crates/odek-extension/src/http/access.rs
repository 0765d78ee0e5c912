//! Who may talk to the HTTP endpoint, one rule per function: [`origin_allowed`] (no foreign
//! `Origin`, against DNS rebinding), [`bearer_token_matches`] (with [`constant_time_eq`]), and
//! what a request's `Accept` allows ([`Accepts`]). Pure functions of header values; the
//! service decides the status codes.

use std::net::{Ipv4Addr, Ipv6Addr};

use hyper::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue};

/// Whether a request carrying `Origin: <origin>` may proceed: a loopback origin always may,
/// another only if it is one of `allowed` (ASCII case ignored). `null` and anything that is
/// not `scheme://host[:port]` count as foreign.
pub(crate) fn origin_allowed(origin: &HeaderValue, allowed: &[String]) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    is_loopback_origin(origin) || allowed.iter().any(|allowed| allowed.eq_ignore_ascii_case(origin))
}

/// `http(s)://localhost`, `http(s)://127.x.y.z` or `http(s)://[::1]`, with an optional port.
fn is_loopback_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let (host_is_loopback, port) = match rest.strip_prefix('[') {
        Some(bracketed) => {
            let Some((host, port)) = bracketed.split_once(']') else {
                return false;
            };
            (host.parse::<Ipv6Addr>().is_ok_and(|address| address.is_loopback()), port)
        }
        None => {
            let (host, port) = rest.split_at(rest.find(':').unwrap_or(rest.len()));
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host.parse::<Ipv4Addr>().is_ok_and(|address| address.is_loopback());
            (loopback, port)
        }
    };
    let port_ok = match port.strip_prefix(':') {
        Some(digits) => !digits.is_empty() && digits.len() <= 5 && digits.bytes().all(|byte| byte.is_ascii_digit()),
        None => port.is_empty(),
    };
    host_is_loopback && port_ok
}

/// Whether the request's `Authorization` is `Bearer <expected>` (scheme case ignored). The
/// token bytes are compared in constant time; a request without the header never matches.
pub(crate) fn bearer_token_matches(headers: &HeaderMap, expected: &str) -> bool {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let Some((scheme, token)) = value.split_at_checked(7) else {
        return false;
    };
    scheme.eq_ignore_ascii_case(b"bearer ") && constant_time_eq(token, expected.as_bytes())
}

/// `a == b` in a time that depends only on their lengths, not on where they differ, so the
/// time a rejection takes tells an attacker nothing about how much of a guess was right.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |difference, (x, y)| difference | (x ^ y));
    // Keeps the optimiser from turning the fold into an early-exit comparison.
    std::hint::black_box(difference) == 0
}

/// Which of the two response types a request's `Accept` allows. No header allows both;
/// wildcards count; a media range with `q=0` is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) event_stream: bool,
}

impl Accepts {
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        let mut accepts = Self { json: false, event_stream: false };
        let mut any_header = false;
        for value in headers.get_all(ACCEPT) {
            any_header = true;
            let Ok(value) = value.to_str() else { continue };
            for range in value.split(',') {
                let mut parts = range.split(';');
                let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
                let refused = parts.any(|parameter| {
                    parameter.trim().strip_prefix("q=").is_some_and(|q| q.trim().parse::<f32>() == Ok(0.0))
                });
                if refused {
                    continue;
                }
                match media.as_str() {
                    "*/*" => {
                        accepts.json = true;
                        accepts.event_stream = true;
                    }
                    "application/json" | "application/*" => accepts.json = true,
                    "text/event-stream" | "text/*" => accepts.event_stream = true,
                    _ => {}
                }
            }
        }
        if !any_header {
            return Self { json: true, event_stream: true };
        }
        accepts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(text: &str) -> bool {
        origin_allowed(&HeaderValue::from_str(text).unwrap(), &["https://app.example".to_owned()])
    }

    #[test]
    fn loopback_and_allowed_origins_pass_and_others_do_not() {
        for good in [
            "http://localhost",
            "http://localhost:3000",
            "https://LOCALHOST:443",
            "http://127.0.0.1:8080",
            "http://127.9.9.9",
            "http://[::1]:9",
            "http://[::1]",
            "https://app.example",
            "HTTPS://APP.EXAMPLE",
        ] {
            assert!(origin(good), "{good} should pass");
        }
        for bad in [
            "null",
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "http://localhost:",
            "http://localhost:99999a",
            "http://localhost/path",
            "file://localhost",
            "http://[::2]",
            "http://::1",
            "http://[::1",
            "localhost",
            "http://0.0.0.0",
            "https://app.example:8443",
        ] {
            assert!(!origin(bad), "{bad} should be refused");
        }
        assert!(!origin_allowed(&HeaderValue::from_bytes(b"http://\xffhost").unwrap(), &[]));
    }

    #[test]
    fn bearer_tokens_match_exactly() {
        let mut headers = HeaderMap::new();
        assert!(!bearer_token_matches(&headers, "s3cret"));
        for (value, matches) in [
            ("Bearer s3cret", true),
            ("bearer s3cret", true),
            ("Bearer s3cret ", false),
            ("Bearer s3cre", false),
            ("Bearer S3CRET", false),
            ("Basic s3cret", false),
            ("Bearer", false),
            ("", false),
        ] {
            headers.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
            assert_eq!(bearer_token_matches(&headers, "s3cret"), matches, "{value:?}");
        }
    }

    #[test]
    fn constant_time_eq_is_plain_equality() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"xbc", b"abc"));
    }

    #[test]
    fn accept_ranges_wildcards_and_refusals() {
        let accepts = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(ACCEPT, HeaderValue::from_str(value).unwrap());
            }
            let accepts = Accepts::of(&headers);
            (accepts.json, accepts.event_stream)
        };
        assert_eq!(accepts(&[]), (true, true));
        assert_eq!(accepts(&["application/json, text/event-stream"]), (true, true));
        assert_eq!(accepts(&["application/json"]), (true, false));
        assert_eq!(accepts(&["Text/Event-Stream;q=0.5"]), (false, true));
        assert_eq!(accepts(&["*/*"]), (true, true));
        assert_eq!(accepts(&["text/*", "image/png"]), (false, true));
        assert_eq!(accepts(&["application/json;q=0, text/event-stream"]), (false, true));
        assert_eq!(accepts(&["text/html"]), (false, false));
    }
}
