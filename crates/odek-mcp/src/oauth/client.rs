//! The one HTTP client of OAuth: odek's own reqwest client with the transport's rules (rustls,
//! no redirects followed, link-local addresses refused by name and by literal, plain `http` only
//! to loopback unless the entry allows it), every body read to a cap and every exchange under a
//! deadline. It also drives the `oauth2` crate's requests ([`OAuthHttp::send`]).
//!
//! Start at [`OAuthHttp::new`]. Not here: what a document means (`discovery`) or a grant (`grant`).

use std::sync::Arc;
use std::time::Duration;

use odek_contract::error_chain::one_line;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};

use super::error::OAuthError;
use crate::remote::{GuardedResolver, is_link_local, is_loopback_host};

/// Largest metadata, registration or token answer read (bytes); more is an error.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// Default deadline of one exchange (connect, send and the capped body).
pub(crate) const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// An answer read whole (at most [`MAX_DOCUMENT_BYTES`]).
#[derive(Debug)]
pub(crate) struct Fetched {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

/// A transport failure as `oauth2` sees it: one line, never a body.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ExchangeError(pub String);

/// odek's bounded client for authorization exchanges.
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    client: reqwest::Client,
    timeout: Duration,
    allow_insecure_http: bool,
}

impl OAuthHttp {
    pub(crate) fn new(timeout: Duration, allow_insecure_http: bool) -> Result<OAuthHttp, OAuthError> {
        let client = reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_native_certs(true)
            .tls_built_in_webpki_certs(false)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .dns_resolver(Arc::new(GuardedResolver))
            .user_agent(concat!("odek/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| OAuthError::Http(format!("build the HTTP client: {}", one_line(&err))))?;
        Ok(OAuthHttp { client, timeout, allow_insecure_http })
    }

    /// A URL odek may contact for authorization: `https` (or `http` to a loopback host, or
    /// anywhere when the entry allows insecure http), a host that is not a link-local literal,
    /// no credentials.
    pub(crate) fn check_url(&self, url: &url::Url) -> Result<(), OAuthError> {
        let refuse = |reason: &str| Err(OAuthError::Url { url: url.to_string(), reason: reason.to_owned() });
        let Some(host) = url.host() else { return refuse("no host") };
        if !url.username().is_empty() || url.password().is_some() {
            return refuse("credentials in the URL");
        }
        let literal = match host {
            url::Host::Ipv4(ip) => Some(std::net::IpAddr::V4(ip)),
            url::Host::Ipv6(ip) => Some(std::net::IpAddr::V6(ip)),
            url::Host::Domain(_) => None,
        };
        if literal.is_some_and(|ip| is_link_local(&ip)) {
            return refuse("a link-local address");
        }
        match url.scheme() {
            "https" => Ok(()),
            "http" if self.allow_insecure_http || is_loopback_host(&host) => Ok(()),
            "http" => refuse("plain http to a host that is not loopback"),
            _ => refuse("not an http or https URL"),
        }
    }

    /// `GET` for a JSON document.
    pub(crate) async fn get_json(&self, url: &url::Url) -> Result<Fetched, OAuthError> {
        self.check_url(url)?;
        let request = self.client.get(url.clone()).header(ACCEPT, "application/json");
        self.exchange(request).await.map_err(|err| OAuthError::Http(err.0))
    }

    /// `POST` of a JSON body (dynamic client registration).
    pub(crate) async fn post_json(&self, url: &url::Url, body: &serde_json::Value) -> Result<Fetched, OAuthError> {
        self.check_url(url)?;
        let request = self
            .client
            .post(url.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        self.exchange(request).await.map_err(|err| OAuthError::Http(err.0))
    }

    /// `POST` of a form (token revocation, RFC 7009).
    pub(crate) async fn post_form(&self, url: &url::Url, form: &[(&str, &str)]) -> Result<Fetched, OAuthError> {
        self.check_url(url)?;
        let body: String = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let request =
            self.client.post(url.clone()).header(CONTENT_TYPE, "application/x-www-form-urlencoded").body(body);
        self.exchange(request).await.map_err(|err| OAuthError::Http(err.0))
    }

    /// `POST` of a JSON-RPC message to the MCP server itself, for its `WWW-Authenticate`
    /// challenge (the login's first step); the body is not kept.
    pub(crate) async fn probe(&self, url: &url::Url, body: &'static str) -> Result<Fetched, OAuthError> {
        let request = self
            .client
            .post(url.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let mut fetched = self.exchange(request).await.map_err(|err| OAuthError::Http(err.0))?;
        fetched.body.clear();
        Ok(fetched)
    }

    /// One request `oauth2` built (a token, refresh or revocation request).
    pub(crate) async fn send(&self, request: oauth2::HttpRequest) -> Result<oauth2::HttpResponse, ExchangeError> {
        let (parts, body) = request.into_parts();
        let url =
            url::Url::parse(&parts.uri.to_string()).map_err(|err| ExchangeError(format!("invalid url: {err}")))?;
        self.check_url(&url).map_err(|err| ExchangeError(err.to_string()))?;
        let mut headers = parts.headers;
        for value in headers.values_mut() {
            value.set_sensitive(true);
        }
        let request = self.client.request(parts.method, url).headers(headers).body(body);
        let fetched = self.exchange(request).await?;
        let mut response = oauth2::http::Response::builder().status(fetched.status);
        if let Some(headers) = response.headers_mut() {
            *headers = fetched.headers;
        }
        response.body(fetched.body).map_err(|err| ExchangeError(format!("answer: {err}")))
    }

    /// Sends and reads the body to [`MAX_DOCUMENT_BYTES`], all within the deadline. A redirect
    /// is an error (never followed).
    async fn exchange(&self, request: reqwest::RequestBuilder) -> Result<Fetched, ExchangeError> {
        let work = async {
            let mut response = request.send().await.map_err(|err| ExchangeError(one_line(&err.without_url())))?;
            let status = response.status();
            if status.is_redirection() {
                let to = response.headers().get(reqwest::header::LOCATION).map(HeaderValue::as_bytes);
                let to = String::from_utf8_lossy(to.unwrap_or_default()).chars().take(200).collect::<String>();
                return Err(ExchangeError(format!(
                    "http {}: a redirect (to {}) is not followed",
                    status.as_u16(),
                    odek_contract::quoting::quote(&to)
                )));
            }
            let headers = response.headers().clone();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|err| ExchangeError(one_line(&err.without_url())))? {
                if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                    return Err(ExchangeError(format!("the answer exceeds {MAX_DOCUMENT_BYTES} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Fetched { status: status.as_u16(), headers, body })
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ExchangeError(format!("no answer within {} s", self.timeout.as_secs()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_and_never_link_local_red() {
        let http = OAuthHttp::new(EXCHANGE_TIMEOUT, false).unwrap();
        let check = |url: &str| http.check_url(&url::Url::parse(url).unwrap()).map_err(|err| err.to_string());
        assert!(check("https://auth.example.com/token").is_ok());
        assert!(check("http://127.0.0.1:9/token").is_ok());
        assert!(check("http://localhost/token").is_ok());
        assert_eq!(
            check("http://169.254.169.254/latest/meta-data").unwrap_err(),
            "refusing \"http://169.254.169.254/latest/meta-data\": a link-local address"
        );
        assert!(check("https://[fe80::1]/x").unwrap_err().contains("link-local"));
        assert!(check("http://auth.example.com/token").unwrap_err().contains("plain http"));
        assert!(check("https://u:p@auth.example.com/").unwrap_err().contains("credentials"));
        assert!(check("file:///etc/passwd").is_err());
    }
}
