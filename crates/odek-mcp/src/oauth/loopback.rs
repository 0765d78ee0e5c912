//! The login's redirect listener (RFC 8252 §7.3): `http://127.0.0.1:<port>/callback` on an
//! ephemeral port (or the one a registration names, when free). It answers one request at a
//! time, each read to a small cap under a short deadline, and ends at the first request to the
//! callback path: its `state` must be the login's, and its `iss` the issuer's (RFC 9207) when the
//! server sends one or promised to. Stray requests (a browser's `/favicon.ico`) get 404, and too
//! many of them end the login.
//!
//! Start at [`RedirectListener::bind`], then [`RedirectListener::wait`].

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::error::OAuthError;

/// The path the authorization server redirects to.
pub(crate) const CALLBACK_PATH: &str = "/callback";
/// Largest request head read (bytes).
const MAX_HEAD_BYTES: usize = 8 * 1024;
/// How long one connection may take to send its request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// Requests to other paths tolerated before the login ends.
const MAX_STRAY_REQUESTS: usize = 32;

/// What the redirect must carry to be accepted.
pub(crate) struct Expected<'a> {
    pub state: &'a str,
    pub issuer: &'a str,
    /// The server advertised `authorization_response_iss_parameter_supported`.
    pub iss_required: bool,
}

/// A bound redirect listener.
pub(crate) struct RedirectListener {
    listener: TcpListener,
    uri: String,
}

impl RedirectListener {
    /// Binds 127.0.0.1 on `port` when given and free, else on an ephemeral port.
    pub(crate) async fn bind(port: Option<u16>) -> Result<RedirectListener, OAuthError> {
        let preferred = match port {
            Some(port) => TcpListener::bind(("127.0.0.1", port)).await.ok(),
            None => None,
        };
        let listener = match preferred {
            Some(listener) => listener,
            None => TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|error| OAuthError::Redirect(format!("cannot listen on 127.0.0.1: {error}")))?,
        };
        let address = listener
            .local_addr()
            .map_err(|error| OAuthError::Redirect(format!("cannot listen on 127.0.0.1: {error}")))?;
        Ok(RedirectListener { listener, uri: format!("http://127.0.0.1:{}{CALLBACK_PATH}", address.port()) })
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub(crate) fn uri(&self) -> &str {
        &self.uri
    }

    /// Waits for the redirect and returns its `code`. Every failure is final: a redirect with a
    /// wrong `state` or `iss` is an attack or a stale tab, and the login starts over.
    pub(crate) async fn wait(self, expected: &Expected<'_>) -> Result<String, OAuthError> {
        let mut stray = 0;
        loop {
            let (mut stream, _) =
                self.listener.accept().await.map_err(|error| OAuthError::Redirect(format!("accept: {error}")))?;
            let Some(target) = read_target(&mut stream).await else { continue };
            let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
            if path != CALLBACK_PATH {
                respond(&mut stream, 404, "Not found.").await;
                stray += 1;
                if stray > MAX_STRAY_REQUESTS {
                    return Err(OAuthError::Redirect(format!(
                        "more than {MAX_STRAY_REQUESTS} requests to other paths than the callback"
                    )));
                }
                continue;
            }
            let outcome = judge_redirect(query, expected);
            match &outcome {
                Ok(_) => respond(&mut stream, 200, "odek is authorized. You can close this tab.").await,
                Err(error) => respond(&mut stream, 400, &format!("odek refused this authorization: {error}")).await,
            }
            return outcome;
        }
    }
}

/// The callback's query judged: the code, or why it is refused.
pub(crate) fn judge_redirect(query: &str, expected: &Expected<'_>) -> Result<String, OAuthError> {
    let mut code = None;
    let mut state = None;
    let mut iss = None;
    let mut error = None;
    let mut description = None;
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match name.as_ref() {
            "code" => code = Some(value.into_owned()),
            "state" => state = Some(value.into_owned()),
            "iss" => iss = Some(value.into_owned()),
            "error" => error = Some(value.into_owned()),
            "error_description" => description = Some(value.into_owned()),
            _ => {}
        }
    }
    if state.as_deref() != Some(expected.state) {
        return Err(OAuthError::Redirect("the state does not match this login (refused)".to_owned()));
    }
    match iss.as_deref() {
        // RFC 9207 §2.4: a simple string comparison, no normalization of any kind.
        Some(iss) if iss != expected.issuer => {
            return Err(OAuthError::Redirect(format!(
                "the issuer {} is not {} (RFC 9207; refused)",
                short(iss),
                short(expected.issuer)
            )));
        }
        None if expected.iss_required => {
            return Err(OAuthError::Redirect(
                "no iss parameter, which the authorization server promised (RFC 9207; refused)".to_owned(),
            ));
        }
        _ => {}
    }
    if let Some(error) = error {
        let description = description.map(|text| format!(": {}", short(&text))).unwrap_or_default();
        return Err(OAuthError::Redirect(format!("the authorization server answered {}{description}", short(&error))));
    }
    code.filter(|code| !code.is_empty()).ok_or_else(|| OAuthError::Redirect("no code".to_owned()))
}

/// The request target of one connection's request line; `None` for anything unusable.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let read = tokio::time::timeout(HEAD_DEADLINE, async {
        let mut buffer = [0u8; 1024];
        while !head.windows(4).any(|window| window == b"\r\n\r\n") && head.len() < MAX_HEAD_BYTES {
            let count = stream.read(&mut buffer).await.ok()?;
            if count == 0 {
                break;
            }
            head.extend_from_slice(&buffer[..count]);
        }
        Some(())
    })
    .await;
    read.ok().flatten()?;
    let line = head.split(|byte| *byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    (method == "GET").then(|| target.to_owned())
}

async fn respond(stream: &mut TcpStream, status: u16, text: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!("<!doctype html><meta charset=utf-8><title>odek</title><p>{}</p>\n", escape_html(text));
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(HEAD_DEADLINE, stream.write_all(response.as_bytes())).await;
    let _ = stream.shutdown().await;
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn short(text: &str) -> String {
    let cut: String = text.chars().take(120).collect();
    odek_contract::quoting::quote(&cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPECTED: Expected<'static> =
        Expected { state: "s1", issuer: "https://auth.example.com", iss_required: false };

    #[test]
    fn the_state_and_the_issuer_must_match_red() {
        assert_eq!(judge_redirect("code=c1&state=s1", &EXPECTED).unwrap(), "c1");
        assert_eq!(judge_redirect("code=c1&state=s1&iss=https%3A%2F%2Fauth.example.com", &EXPECTED).unwrap(), "c1");
        let refused = |query: &str, expected: &Expected<'_>| judge_redirect(query, expected).unwrap_err().to_string();
        assert_eq!(
            refused("code=c1&state=s2", &EXPECTED),
            "authorization redirect: the state does not match this login (refused)"
        );
        assert_eq!(
            refused("code=c1", &EXPECTED),
            "authorization redirect: the state does not match this login (refused)"
        );
        assert!(refused("code=c1&state=s1&iss=https%3A%2F%2Fevil.example", &EXPECTED).contains("RFC 9207"));
        // Not normalized: a trailing slash or another case is another issuer.
        assert!(refused("code=c1&state=s1&iss=https%3A%2F%2Fauth.example.com%2F", &EXPECTED).contains("RFC 9207"));
        assert!(refused("code=c1&state=s1&iss=https%3A%2F%2FAUTH.example.com", &EXPECTED).contains("RFC 9207"));
        let strict = Expected { iss_required: true, ..EXPECTED };
        assert!(refused("code=c1&state=s1", &strict).contains("no iss parameter"));
        assert!(refused("state=s1&error=access_denied", &EXPECTED).contains("\"access_denied\""));
        assert!(refused("state=s1", &EXPECTED).contains("no code"));
    }

    #[tokio::test]
    async fn stray_requests_get_404_and_too_many_end_the_login_red() {
        let listener = RedirectListener::bind(None).await.unwrap();
        let address = listener.uri().trim_start_matches("http://").trim_end_matches(CALLBACK_PATH).to_owned();
        let hits = tokio::spawn(async move {
            for _ in 0..1000 {
                let Ok(mut stream) = TcpStream::connect(&address).await else { break };
                let _ = stream.write_all(b"GET /favicon.ico HTTP/1.1\r\nHost: x\r\n\r\n").await;
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer).await;
            }
        });
        let error = listener.wait(&EXPECTED).await.unwrap_err();
        assert!(error.to_string().contains("requests to other paths"), "{error}");
        hits.await.unwrap();
    }
}
