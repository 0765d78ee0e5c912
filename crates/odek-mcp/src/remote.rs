//! The rules of a remote (Streamable HTTP) server entry, before any connection: its URL (spec
//! `mcp-client.md` §14: absolute `http`/`https`, a host, no credentials; \[beyond\] plain `http`
//! only to a loopback host unless `allow_insecure_http`), link-local addresses, and the
//! `headers` odek sends, and the bearer token `token_env` names ([`bearer_token`]); and the name
//! resolution every HTTP client of the crate uses ([`GuardedResolver`]: no link-local address).
//! Start at [`check_endpoint`].

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use odek_contract::quoting::quote;

use crate::error::McpError;
use crate::server_config::SecretValue;

/// Headers odek sets itself on every request of the transport; an entry may not set them.
pub const TRANSPORT_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "mcp-method",
    "mcp-name",
];

/// Longest header value accepted from a config file (bytes).
pub const MAX_HEADER_VALUE_BYTES: usize = 8 * 1024;

/// Most headers one entry may set.
pub const MAX_HEADERS: usize = 64;

/// A remote entry's URL and headers, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: url::Url,
    /// In the entry's order (sorted by name), values exactly as configured (`${VAR}` already
    /// substituted by the config loader).
    pub headers: Vec<(String, SecretValue)>,
}

/// Checks `url` and `headers` of server `server` (errors without the `mcp server "<name>": `
/// wrapper, which the caller adds once).
pub fn check_endpoint(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, SecretValue>,
    token_env: &str,
    allow_insecure_http: bool,
) -> Result<Endpoint, McpError> {
    let error = |detail: String| McpError::Config(format!("mcpclient {server}: {detail}"));
    let parsed = url::Url::parse(url).map_err(|err| error(format!("invalid url: {err}")))?;
    match parsed.scheme() {
        "http" | "https" => {}
        other => return Err(error(format!("unsupported scheme {} (want http or https)", quote(other)))),
    }
    let Some(host) = parsed.host() else { return Err(error("missing host".to_owned())) };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(error("credentials in the URL are not allowed; use token_env instead".to_owned()));
    }
    let literal = match host {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    };
    if let Some(ip) = literal.filter(is_link_local) {
        return Err(error(format!("refusing to connect to link-local address {ip}")));
    }
    if parsed.scheme() == "http" && !allow_insecure_http && !is_loopback_host(&host) {
        return Err(error(
            "plain http is allowed only to a loopback host; use https, or set \"allow_insecure_http\": true".to_owned(),
        ));
    }
    if headers.len() > MAX_HEADERS {
        return Err(error(format!("more than {MAX_HEADERS} headers")));
    }
    for (name, value) in headers {
        check_header(name, value.expose(), !token_env.is_empty()).map_err(&error)?;
    }
    let headers = headers.iter().map(|(name, value)| (name.clone(), value.clone())).collect();
    Ok(Endpoint { url: parsed, headers })
}

/// The bearer token `token_env` names, looked up in `env` (odek's environment; spec §14):
/// `(None, None)` when no variable is named. An unset or empty variable gives no token and the
/// spec's warning (without the `odek: warning: ` prefix): the requests go unauthenticated. A
/// token found is registered for redaction, so no report or log line can show it.
pub fn bearer_token(
    server: &str,
    token_env: &str,
    env: impl IntoIterator<Item = (String, String)>,
) -> (Option<SecretValue>, Option<String>) {
    if token_env.is_empty() {
        return (None, None);
    }
    match env.into_iter().find(|(name, value)| name == token_env && !value.is_empty()) {
        Some((_, token)) => {
            odek_contract::redaction::register_secret(&token);
            (Some(SecretValue::new(token)), None)
        }
        None => (
            None,
            Some(format!(
                "mcp server {}: token_env {token_env} is set but the environment variable is empty; requests will be sent unauthenticated",
                quote(server)
            )),
        ),
    }
}

/// One configured header: a token name that is not the transport's own, and a value of one line.
fn check_header(name: &str, value: &str, has_token: bool) -> Result<(), String> {
    let token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token_char) {
        return Err(format!("header {}: not a valid header name", quote(name)));
    }
    let lower = name.to_ascii_lowercase();
    if TRANSPORT_HEADERS.contains(&lower.as_str()) {
        return Err(format!("header {}: set by the transport; remove it", quote(name)));
    }
    if lower == "authorization" && has_token {
        return Err("both token_env and an Authorization header are set; keep one".to_owned());
    }
    // The value is never quoted back: it is often a credential.
    if value.contains(['\r', '\n']) {
        return Err(format!("header {}: the value contains a line break", quote(name)));
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!("header {}: the value contains a control character", quote(name)));
    }
    if value.len() > MAX_HEADER_VALUE_BYTES {
        return Err(format!("header {}: the value is longer than {MAX_HEADER_VALUE_BYTES} bytes", quote(name)));
    }
    Ok(())
}

/// `localhost` (and its subdomains, RFC 6761), 127.0.0.0/8 and ::1.
pub(crate) fn is_loopback_host(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

/// 169.254.0.0/16 and fe80::/10 (and IPv4-mapped forms of the former): cloud metadata
/// endpoints live there, and no MCP server does.
pub fn is_link_local(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => ip.is_link_local(),
        IpAddr::V6(ip) => {
            (ip.segments()[0] & 0xffc0) == 0xfe80 || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_link_local())
        }
    }
}

/// Name resolution that never hands out a link-local address (cloud metadata endpoints live
/// there): such addresses are dropped, and a name that has only those is refused. Every HTTP
/// client of the crate (the transport, OAuth) resolves through it.
pub(crate) struct GuardedResolver;

/// A name that resolved only to link-local addresses.
#[derive(Debug, thiserror::Error)]
#[error("refusing to connect to link-local address {0}")]
pub(crate) struct LinkLocalRefused(IpAddr);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed = allowed_addresses(&resolved).map_err(Box::new)?;
            let addresses: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addresses)
        })
    }
}

pub(crate) fn allowed_addresses(resolved: &[SocketAddr]) -> Result<Vec<SocketAddr>, LinkLocalRefused> {
    let allowed: Vec<SocketAddr> = resolved.iter().filter(|address| !is_link_local(&address.ip())).copied().collect();
    match (allowed.is_empty(), resolved.first()) {
        (true, Some(first)) => Err(LinkLocalRefused(first.ip())),
        _ => Ok(allowed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str) -> Result<Endpoint, String> {
        check_endpoint("web", url, &BTreeMap::new(), "", false).map_err(|err| err.to_string())
    }

    fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, SecretValue> {
        pairs.iter().map(|(name, value)| ((*name).to_owned(), SecretValue::new(*value))).collect()
    }

    #[test]
    fn urls_are_absolute_http_with_a_host_and_no_credentials_red() {
        assert!(check("https://mcp.example.com/mcp").is_ok());
        assert!(check("http://127.0.0.1:8080/mcp").is_ok());
        assert!(check("http://[::1]:8080/mcp").is_ok());
        assert!(check("http://localhost/mcp").is_ok());
        assert!(check("http://api.localhost./mcp").is_ok());
        for (url, want) in [
            ("not a url", "mcpclient web: invalid url: relative URL without a base"),
            ("ftp://x.example/mcp", "mcpclient web: unsupported scheme \"ftp\" (want http or https)"),
            ("file:///etc/passwd", "mcpclient web: unsupported scheme \"file\" (want http or https)"),
            (
                "https://user:pw@mcp.example.com/mcp",
                "mcpclient web: credentials in the URL are not allowed; use token_env instead",
            ),
            (
                "https://user@mcp.example.com/mcp",
                "mcpclient web: credentials in the URL are not allowed; use token_env instead",
            ),
            (
                "http://169.254.169.254/latest",
                "mcpclient web: refusing to connect to link-local address 169.254.169.254",
            ),
            ("https://[fe80::1]/mcp", "mcpclient web: refusing to connect to link-local address fe80::1"),
            (
                "http://mcp.example.com/mcp",
                "mcpclient web: plain http is allowed only to a loopback host; use https, or set \"allow_insecure_http\": true",
            ),
            (
                "http://127.0.0.1.example.com/mcp",
                "mcpclient web: plain http is allowed only to a loopback host; use https, or set \"allow_insecure_http\": true",
            ),
        ] {
            assert_eq!(check(url).unwrap_err(), want, "{url}");
        }
        let insecure = check_endpoint("web", "http://10.0.0.5/mcp", &BTreeMap::new(), "", true);
        assert!(insecure.is_ok());
        // The URL's password never reaches the error.
        assert!(!check("https://u:hunter2@x.example/").unwrap_err().contains("hunter2"));
    }

    #[test]
    fn headers_are_one_line_tokens_the_transport_does_not_own_red() {
        let ok = check_endpoint("web", "https://x.example/", &headers(&[("X-Team", "t 1\t2")]), "", false).unwrap();
        assert_eq!(ok.headers[0].0, "X-Team");
        for (pairs, token_env, want) in [
            (
                &[("X-A", "v\r\nX-Injected: 1")][..],
                "",
                "mcpclient web: header \"X-A\": the value contains a line break",
            ),
            (&[("X-A", "v\n")][..], "", "mcpclient web: header \"X-A\": the value contains a line break"),
            (&[("X-A", "v\u{0}")][..], "", "mcpclient web: header \"X-A\": the value contains a control character"),
            (&[("Bad Name", "v")][..], "", "mcpclient web: header \"Bad Name\": not a valid header name"),
            (&[("", "v")][..], "", "mcpclient web: header \"\": not a valid header name"),
            (
                &[("Mcp-Session-Id", "s")][..],
                "",
                "mcpclient web: header \"Mcp-Session-Id\": set by the transport; remove it",
            ),
            (
                &[("content-type", "s")][..],
                "",
                "mcpclient web: header \"content-type\": set by the transport; remove it",
            ),
            (
                &[("Authorization", "Bearer x")][..],
                "TOKEN",
                "mcpclient web: both token_env and an Authorization header are set; keep one",
            ),
        ] {
            let error = check_endpoint("web", "https://x.example/", &headers(pairs), token_env, false).unwrap_err();
            assert_eq!(error.to_string(), want);
            assert!(!error.to_string().contains("Injected"), "a value is never echoed");
        }
        let long = "v".repeat(MAX_HEADER_VALUE_BYTES + 1);
        assert!(check_endpoint("web", "https://x.example/", &headers(&[("X", &long)]), "", false).is_err());
        let many: BTreeMap<String, SecretValue> =
            (0..=MAX_HEADERS).map(|n| (format!("X-{n}"), SecretValue::new("v"))).collect();
        assert!(check_endpoint("web", "https://x.example/", &many, "", false).is_err());
    }

    #[test]
    fn the_bearer_token_comes_from_the_named_variable_and_is_never_shown_red() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect()
        };
        assert_eq!(bearer_token("web", "", env(&[("T", "x")])), (None, None));
        let (token, warning) = bearer_token("web", "WEB_TOKEN", env(&[("WEB_TOKEN", "tok-remote-0123456789")]));
        assert_eq!((token.as_ref().map(SecretValue::expose), warning), (Some("tok-remote-0123456789"), None));
        assert_eq!(odek_contract::redaction::redact("sent tok-remote-0123456789"), "sent [REDACTED]");
        let want = "mcp server \"web\": token_env WEB_TOKEN is set but the environment variable is empty; requests will be sent unauthenticated";
        for pairs in [&[][..], &[("WEB_TOKEN", "")][..]] {
            assert_eq!(bearer_token("web", "WEB_TOKEN", env(pairs)), (None, Some(want.to_owned())));
        }
    }

    #[test]
    fn resolution_drops_link_local_addresses_and_refuses_a_name_with_only_those_red() {
        let address = |text: &str| text.parse::<SocketAddr>().unwrap();
        let mixed = [address("169.254.169.254:0"), address("10.1.2.3:0"), address("[fe80::1]:0")];
        assert_eq!(allowed_addresses(&mixed).unwrap(), [address("10.1.2.3:0")]);
        let only = [address("169.254.169.254:0")];
        assert_eq!(
            allowed_addresses(&only).unwrap_err().to_string(),
            "refusing to connect to link-local address 169.254.169.254"
        );
        assert!(allowed_addresses(&[]).unwrap().is_empty());
    }

    #[test]
    fn link_local_covers_both_families_and_mapped_addresses() {
        for ip in ["169.254.0.1", "fe80::1", "febf::1", "::ffff:169.254.1.1"] {
            assert!(is_link_local(&ip.parse().unwrap()), "{ip}");
        }
        for ip in ["127.0.0.1", "10.0.0.1", "::1", "fec0::1", "2001:db8::1"] {
            assert!(!is_link_local(&ip.parse().unwrap()), "{ip}");
        }
    }
}
