//! The page `odek serve` shows a person: its assets, embedded in the binary (no Node toolchain
//! builds or runs odek), served under a strict Content-Security-Policy; and the one way a
//! browser gets the token — `/?token=` sets an HttpOnly SameSite=Strict cookie and redirects
//! to `/`, so the token leaves the address bar and is never readable by the page's script.

use std::path::Path;

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use crate::auth::{COOKIE, Token};

/// Every response's policy: the page's own script and style only, no inline code, no
/// framing, no request to any other site.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The embedded files: path, media type, body.
const ASSETS: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("../assets/index.html")),
    ("/assets/app.js", "text/javascript; charset=utf-8", include_str!("../assets/app.js")),
    ("/assets/app.css", "text/css; charset=utf-8", include_str!("../assets/app.css")),
];

/// The page's address for a listener on `addr`, with the token when it is to be shown.
pub fn address(addr: std::net::SocketAddr, token: Option<&Token>) -> String {
    match token {
        Some(token) => format!("http://{addr}/?token={}", token.expose()),
        None => format!("http://{addr}/"),
    }
}

/// The token a request offers in its query (`?token=`), only on the page's own address.
pub fn query_token(uri: &Uri) -> Option<&str> {
    if uri.path() != "/" {
        return None;
    }
    uri.query()?.split('&').find_map(|pair| pair.strip_prefix("token="))
}

/// The answer to `GET /?token=<valid>`: the cookie, and a redirect to the bare address.
pub fn admit(token: &Token) -> Response {
    let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", token.expose());
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}

/// What a browser without the token sees on the page's address.
pub fn locked() -> Response {
    let body = "<!doctype html><meta charset=utf-8><title>odek serve</title>\
        <p>odek serve needs its token: open the address <code>odek serve</code> printed on stderr \
        (it ends with <code>?token=</code>).</p>";
    let mut response = (StatusCode::UNAUTHORIZED, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// An embedded asset, if `path` names one.
pub fn asset(path: &str) -> Option<Response> {
    let (_, media_type, body) = ASSETS.iter().find(|(name, _, _)| *name == path)?;
    let mut response = (StatusCode::OK, *body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    Some(response)
}

/// The headers every response carries.
pub fn harden(headers: &mut HeaderMap) {
    // A response with a stricter policy of its own (an artifact's) keeps it.
    headers.entry(header::CONTENT_SECURITY_POLICY).or_insert(HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The first address carries the token; no request the page makes tells another site it.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
}

/// How long the system's opener may take before it is stopped.
const OPENER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// `--open`: the system's browser on the page. The address with the token goes through a
/// file only the user can read (`~/.odek/serve/open.html`, redirecting to it), never through
/// a command line other users can see.
pub async fn open_in_browser(home: &Path, page: &str) -> Result<(), String> {
    let dir = home.join(".odek").join("serve");
    std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
    let file = dir.join("open.html");
    let escaped = page.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;");
    let body = format!(
        "<!doctype html><meta charset=utf-8><meta http-equiv=\"refresh\" content=\"0;url={escaped}\"><title>odek serve</title>"
    );
    write_private(&file, body.as_bytes()).map_err(|error| format!("{}: {error}", file.display()))?;
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let mut child = tokio::process::Command::new(opener)
        .arg(&file)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("{opener}: {error}"))?;
    match tokio::time::timeout(OPENER_DEADLINE, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("{opener} exited with {status}")),
        Ok(Err(error)) => Err(format!("{opener}: {error}")),
        Err(_) => Err(format!("{opener} did not finish within {} s", OPENER_DEADLINE.as_secs())),
    }
}

/// Writes `bytes` to `path`, readable and writable by the user only.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_page_address_takes_a_token_from_the_query_red() {
        let uri: Uri = "/?token=abc&x=1".parse().unwrap();
        assert_eq!(query_token(&uri), Some("abc"));
        let api: Uri = "/api/runs?token=abc".parse().unwrap();
        assert_eq!(query_token(&api), None);
        let other: Uri = "/?mytoken=abc".parse().unwrap();
        assert_eq!(query_token(&other), None);
    }

    #[test]
    fn the_cookie_is_http_only_and_same_site_strict() {
        let token = Token::generate().unwrap();
        let response = admit(&token);
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
        assert_eq!(response.headers()[header::LOCATION], "/");
    }
}
