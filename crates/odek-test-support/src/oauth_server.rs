//! A scripted OAuth 2.1 authorization server on 127.0.0.1 (std threads, no async runtime), and
//! the guard that makes an [`crate::mcp_http::McpHttpServer`] an OAuth-protected resource. It
//! checks what a strict server checks — PKCE S256, the redirect URI, the `resource`, the
//! client's authentication, single-use codes — and counts what it was asked, so a test can say
//! "exactly one refresh".
//!
//! Start at [`OAuthServer::start`] with an [`AsScript`], and [`OAuthServer::guard`] for the MCP
//! server (`McpScript::new().guard(server.guard())`).
//!
//! # Endpoints
//! - `GET /.well-known/oauth-authorization-server` (and `/.well-known/openid-configuration`):
//!   the metadata, issuer `http://127.0.0.1:<port>`, or [`AsScript::metadata_answer`]'s answer.
//! - `POST /register` (RFC 7591): a public client `client-<n>` for the given `redirect_uris`.
//! - `GET /authorize`: checks the request and redirects (302) to the `redirect_uri` with `code`,
//!   `state` and `iss` ([`AsScript::redirect_state`], [`AsScript::redirect_iss`] lie on demand).
//! - `POST /token`: `authorization_code`, `refresh_token` (rotated unless
//!   [`AsScript::keep_refresh_tokens`]), `client_credentials` for [`AsScript::client`]s.
//! - `POST /revoke` (RFC 7009).
//!
//! # The guard
//! Serves the Protected Resource Metadata at `/.well-known/oauth-protected-resource/mcp` (and at
//! the root), naming this issuer, and answers `401` with `WWW-Authenticate: Bearer
//! resource_metadata="…"` to any MCP request without a live token for that resource.
//! [`OAuthServer::invalidate_tokens_at_next_call`] makes the next `tools/call` kill every live
//! access token (the expiry a run meets mid-way).

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::mcp_http::{McpHttpRequest, ToolAnswer, read_request};

/// How long one connection may take to send its request.
const READ_DEADLINE: Duration = Duration::from_secs(10);

/// How the redirect's `iss` is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Iss {
    /// The issuer, and advertised (`authorization_response_iss_parameter_supported`).
    Correct,
    /// Not sent, not advertised.
    Omitted,
    /// This value instead of the issuer.
    Wrong(String),
}

/// What an [`OAuthServer`] does.
#[derive(Debug, Clone)]
pub struct AsScript {
    expires_in: Option<u64>,
    rotate: bool,
    iss: Iss,
    wrong_state: bool,
    metadata: Option<(u16, String, Vec<u8>)>,
    prm: Option<(u16, String, Vec<u8>)>,
    registration: bool,
    without_access_token: bool,
    clients: Vec<(String, String)>,
    cimd: bool,
    scopes: Vec<String>,
    call_scope: Option<String>,
}

impl Default for AsScript {
    fn default() -> AsScript {
        AsScript::new()
    }
}

impl AsScript {
    /// Access tokens for an hour, refresh tokens rotated, `iss` sent, registration open.
    pub fn new() -> AsScript {
        AsScript {
            expires_in: Some(3600),
            rotate: true,
            iss: Iss::Correct,
            wrong_state: false,
            metadata: None,
            prm: None,
            registration: true,
            without_access_token: false,
            clients: Vec::new(),
            cimd: false,
            scopes: Vec::new(),
            call_scope: None,
        }
    }

    /// `tools/call` needs a token granted `scope`: others get `403` with
    /// `error="insufficient_scope"` naming it (the step-up).
    pub fn calls_need_scope(mut self, scope: &str) -> AsScript {
        self.call_scope = Some(scope.to_owned());
        self
    }

    /// `expires_in` of every access token (`None`: not sent).
    pub fn expires_in(mut self, seconds: Option<u64>) -> AsScript {
        self.expires_in = seconds;
        self
    }

    /// A refresh keeps the refresh token instead of rotating it.
    pub fn keep_refresh_tokens(mut self) -> AsScript {
        self.rotate = false;
        self
    }

    pub fn redirect_iss(mut self, iss: Iss) -> AsScript {
        self.iss = iss;
        self
    }

    /// The redirect carries a `state` that is not the request's.
    pub fn redirect_state_wrong(mut self) -> AsScript {
        self.wrong_state = true;
        self
    }

    /// The metadata endpoints answer this instead (a huge, malformed or lying document, a redirect).
    pub fn metadata_answer(mut self, status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> AsScript {
        self.metadata = Some((status, content_type.to_owned(), body.into()));
        self
    }

    /// The guard's Protected Resource Metadata answers this instead.
    pub fn prm_answer(mut self, status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> AsScript {
        self.prm = Some((status, content_type.to_owned(), body.into()));
        self
    }

    /// No `registration_endpoint`.
    pub fn without_registration(mut self) -> AsScript {
        self.registration = false;
        self
    }

    /// Token answers lack `access_token`.
    pub fn without_access_token(mut self) -> AsScript {
        self.without_access_token = true;
        self
    }

    /// A pre-registered confidential client (client credentials, `client_secret_basic` or `_post`).
    pub fn client(mut self, client_id: &str, secret: &str) -> AsScript {
        self.clients.push((client_id.to_owned(), secret.to_owned()));
        self
    }

    /// Advertises `client_id_metadata_document_supported` (any `https` client id is accepted).
    pub fn client_id_metadata_documents(mut self) -> AsScript {
        self.cimd = true;
        self
    }

    /// The PRM's `scopes_supported`.
    pub fn scopes_supported(mut self, scopes: &[&str]) -> AsScript {
        self.scopes = scopes.iter().map(|scope| (*scope).to_owned()).collect();
        self
    }
}

#[derive(Debug, Clone)]
struct CodeGrant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
    scope: String,
}

#[derive(Debug, Clone)]
struct Grant {
    client_id: String,
    resource: String,
    /// The granted scopes, space-separated.
    scope: String,
    live: bool,
}

#[derive(Debug, Default)]
struct State {
    /// `client_id` → its redirect URIs.
    registered: BTreeMap<String, Vec<String>>,
    codes: BTreeMap<String, CodeGrant>,
    access: BTreeMap<String, Grant>,
    refresh: BTreeMap<String, Grant>,
    next: u64,
    /// Grant types of the token requests, in order.
    token_requests: Vec<String>,
    registrations: usize,
    authorizations: usize,
    revocations: usize,
    invalidate_at_call: bool,
    /// Every request's head and body, for leak checks.
    seen: Vec<McpHttpRequest>,
}

struct Shared {
    script: AsScript,
    issuer: String,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running authorization server.
pub struct OAuthServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for OAuthServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthServer").field("address", &self.address).finish_non_exhaustive()
    }
}

impl OAuthServer {
    pub fn start(script: AsScript) -> OAuthServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|error| panic!("bind the AS: {error}"));
        let address = listener.local_addr().unwrap_or_else(|error| panic!("the AS's address: {error}"));
        let shared =
            Arc::new(Shared { script, issuer: format!("http://{address}"), state: Mutex::new(State::default()) });
        let shutdown = Arc::new(AtomicBool::new(false));
        let (serving, stop) = (Arc::clone(&shared), Arc::clone(&shutdown));
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let serving = Arc::clone(&serving);
                std::thread::spawn(move || serve(stream, &serving));
            }
        });
        OAuthServer { address, shared, shutdown, acceptor: Some(acceptor) }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn issuer(&self) -> String {
        self.shared.issuer.clone()
    }

    /// The guard of an MCP server protected by this issuer (see the module doc).
    pub fn guard(&self) -> impl Fn(&McpHttpRequest) -> Option<ToolAnswer> + Send + Sync + 'static {
        let shared = Arc::clone(&self.shared);
        move |request| guard(&shared, request)
    }

    /// Grant types of the token requests so far, in order (`authorization_code`, `refresh_token`, …).
    pub fn token_requests(&self) -> Vec<String> {
        self.shared.lock().token_requests.clone()
    }

    /// How many token requests asked for `grant_type`.
    pub fn token_requests_of(&self, grant_type: &str) -> usize {
        self.shared.lock().token_requests.iter().filter(|grant| *grant == grant_type).count()
    }

    pub fn registrations(&self) -> usize {
        self.shared.lock().registrations
    }

    pub fn authorizations(&self) -> usize {
        self.shared.lock().authorizations
    }

    pub fn revocations(&self) -> usize {
        self.shared.lock().revocations
    }

    /// Every refresh token stops working (an operator revoked the grant).
    pub fn revoke_refresh_tokens(&self) {
        for grant in self.shared.lock().refresh.values_mut() {
            grant.live = false;
        }
    }

    /// The next `tools/call` the guard sees kills every live access token and is refused.
    pub fn invalidate_tokens_at_next_call(&self) {
        self.shared.lock().invalidate_at_call = true;
    }

    /// Every access token issued so far (for leak checks).
    pub fn issued_tokens(&self) -> Vec<String> {
        let state = self.shared.lock();
        state.access.keys().chain(state.refresh.keys()).cloned().collect()
    }

    /// Every request this server received.
    pub fn requests(&self) -> Vec<McpHttpRequest> {
        self.shared.lock().seen.clone()
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.address);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// The MCP server's side: PRM documents, then a live token for the resource, or 401.
fn guard(shared: &Shared, request: &McpHttpRequest) -> Option<ToolAnswer> {
    let host = request.header("host").unwrap_or("127.0.0.1").to_owned();
    let resource = format!("http://{host}/mcp");
    let path = request.path.split('?').next().unwrap_or_default();
    if path.starts_with("/.well-known/oauth-protected-resource") {
        if let Some((status, content_type, body)) = &shared.script.prm {
            return Some(ToolAnswer::http(*status, content_type.clone(), body.clone()));
        }
        let document = json!({
            "resource": resource,
            "authorization_servers": [shared.issuer],
            "scopes_supported": shared.script.scopes,
            "bearer_methods_supported": ["header"],
        });
        return Some(ToolAnswer::http(200, "application/json", document.to_string()));
    }
    let presented = request.header("authorization").and_then(|value| value.strip_prefix("Bearer ")).unwrap_or("");
    let mut state = shared.lock();
    let live = state.access.get(presented).is_some_and(|grant| grant.live && grant.resource == resource);
    let is_call = request.rpc_method() == Some("tools/call");
    if live && is_call && state.invalidate_at_call {
        state.invalidate_at_call = false;
        for grant in state.access.values_mut() {
            grant.live = false;
        }
    }
    let grant = state.access.get(presented).filter(|grant| grant.live);
    if let Some(grant) = grant {
        let needed = shared.script.call_scope.as_deref().filter(|_| is_call);
        return match needed {
            Some(scope) if !grant.scope.split(' ').any(|granted| granted == scope) => Some(
                ToolAnswer::http(403, "application/json", r#"{"error":"insufficient_scope"}"#).with_header(
                    "WWW-Authenticate",
                    format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"http://{host}/.well-known/oauth-protected-resource/mcp\""),
                ),
            ),
            _ => None,
        };
    }
    let metadata = format!("http://{host}/.well-known/oauth-protected-resource/mcp");
    let challenge = if presented.is_empty() {
        format!("Bearer resource_metadata=\"{metadata}\"")
    } else {
        format!("Bearer error=\"invalid_token\", resource_metadata=\"{metadata}\"")
    };
    Some(
        ToolAnswer::http(401, "application/json", r#"{"error":"invalid_token"}"#)
            .with_header("WWW-Authenticate", challenge),
    )
}

fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(READ_DEADLINE));
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let Ok(request) = read_request(&mut reader) else { return };
    shared.lock().seen.push(request.clone());
    let (status, headers, body) = route(shared, &request);
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    let _ = writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(&body)).and_then(|()| writer.flush());
}

type Answer = (u16, Vec<(String, String)>, Vec<u8>);

fn json_answer(status: u16, body: &Value) -> Answer {
    (status, vec![("Content-Type".to_owned(), "application/json".to_owned())], body.to_string().into_bytes())
}

fn oauth_error(code: &str) -> Answer {
    json_answer(400, &json!({"error": code}))
}

fn route(shared: &Shared, request: &McpHttpRequest) -> Answer {
    let (path, query) = request.path.split_once('?').unwrap_or((request.path.as_str(), ""));
    match (request.method.as_str(), path) {
        ("GET", "/.well-known/oauth-authorization-server" | "/.well-known/openid-configuration") => {
            match &shared.script.metadata {
                Some((status, content_type, body)) => {
                    let mut headers = vec![("Content-Type".to_owned(), content_type.clone())];
                    if (300..400).contains(status) {
                        headers.push(("Location".to_owned(), "http://127.0.0.2:9/elsewhere".to_owned()));
                    }
                    (*status, headers, body.clone())
                }
                None => json_answer(200, &metadata(shared)),
            }
        }
        ("POST", "/register") if shared.script.registration => register(shared, request),
        ("GET", "/authorize") => authorize(shared, query),
        ("POST", "/token") => token(shared, request),
        ("POST", "/revoke") => {
            let form = form(&request.body);
            let mut guard = shared.lock();
            let state = &mut *guard;
            state.revocations += 1;
            if let Some(token) = form.get("token") {
                for grants in [&mut state.access, &mut state.refresh] {
                    if let Some(grant) = grants.get_mut(token) {
                        grant.live = false;
                    }
                }
            }
            (200, Vec::new(), Vec::new())
        }
        _ => json_answer(404, &json!({"error": "not_found"})),
    }
}

fn metadata(shared: &Shared) -> Value {
    let issuer = &shared.issuer;
    let mut document = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "revocation_endpoint": format!("{issuer}/revoke"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"],
        "authorization_response_iss_parameter_supported": shared.script.iss == Iss::Correct,
        "client_id_metadata_document_supported": shared.script.cimd,
    });
    if shared.script.registration {
        document["registration_endpoint"] = json!(format!("{issuer}/register"));
    }
    document
}

fn register(shared: &Shared, request: &McpHttpRequest) -> Answer {
    let Some(body) = &request.json else { return oauth_error("invalid_client_metadata") };
    let redirect_uris: Vec<String> = body["redirect_uris"]
        .as_array()
        .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if redirect_uris.is_empty() {
        return oauth_error("invalid_redirect_uri");
    }
    let mut state = shared.lock();
    state.registrations += 1;
    state.next += 1;
    let client_id = format!("client-{}", state.next);
    state.registered.insert(client_id.clone(), redirect_uris.clone());
    json_answer(
        201,
        &json!({"client_id": client_id, "redirect_uris": redirect_uris, "token_endpoint_auth_method": "none"}),
    )
}

fn authorize(shared: &Shared, query: &str) -> Answer {
    let params = form(query.as_bytes());
    let get = |name: &str| params.get(name).cloned().unwrap_or_default();
    let client_id = get("client_id");
    let redirect_uri = get("redirect_uri");
    let mut state = shared.lock();
    state.authorizations += 1;
    let known = state.registered.get(&client_id).is_some_and(|uris| uris.contains(&redirect_uri))
        || shared.script.clients.iter().any(|(id, _)| *id == client_id)
        || (shared.script.cimd && client_id.starts_with("https://"));
    if !known || !redirect_uri.starts_with("http://127.0.0.1:") {
        return (400, Vec::new(), b"unknown client or redirect_uri".to_vec());
    }
    if get("response_type") != "code" || get("code_challenge_method") != "S256" || get("code_challenge").is_empty() {
        return (400, Vec::new(), b"PKCE S256 and response_type=code required".to_vec());
    }
    state.next += 1;
    let code = format!("code-{}-{}", state.next, random_hex());
    state.codes.insert(
        code.clone(),
        CodeGrant {
            client_id,
            redirect_uri: redirect_uri.clone(),
            challenge: get("code_challenge"),
            resource: get("resource"),
            scope: get("scope"),
        },
    );
    let sent_state = if shared.script.wrong_state { "not-the-state".to_owned() } else { get("state") };
    let mut location = format!("{redirect_uri}?code={}&state={}", encode(&code), encode(&sent_state));
    match &shared.script.iss {
        Iss::Correct => location.push_str(&format!("&iss={}", encode(&shared.issuer))),
        Iss::Wrong(iss) => location.push_str(&format!("&iss={}", encode(iss))),
        Iss::Omitted => {}
    }
    (302, vec![("Location".to_owned(), location)], Vec::new())
}

fn token(shared: &Shared, request: &McpHttpRequest) -> Answer {
    let params = form(&request.body);
    let get = |name: &str| params.get(name).cloned().unwrap_or_default();
    let grant_type = get("grant_type");
    let mut state = shared.lock();
    state.token_requests.push(grant_type.clone());
    let (client_id, secret) = client_of(request, &params);
    let resource = get("resource");
    let grant = match grant_type.as_str() {
        "authorization_code" => {
            let Some(code) = state.codes.remove(&get("code")) else { return oauth_error("invalid_grant") };
            let verifier = get("code_verifier");
            if code.client_id != client_id
                || code.redirect_uri != get("redirect_uri")
                || code.resource != resource
                || s256(&verifier) != code.challenge
            {
                return oauth_error("invalid_grant");
            }
            Grant { client_id, resource, scope: code.scope, live: true }
        }
        "refresh_token" => {
            let presented = get("refresh_token");
            let Some(grant) = state.refresh.get(&presented).filter(|grant| grant.live).cloned() else {
                return oauth_error("invalid_grant");
            };
            if grant.client_id != client_id {
                return oauth_error("invalid_client");
            }
            if shared.script.rotate
                && let Some(old) = state.refresh.get_mut(&presented)
            {
                old.live = false;
            }
            if !shared.script.rotate {
                return issue(shared, &mut state, grant, Some(presented));
            }
            grant
        }
        "client_credentials" => {
            let assertion = get("client_assertion");
            let authenticated = shared.script.clients.iter().any(|(id, known)| {
                *id == client_id && (secret.as_deref() == Some(known.as_str()) || !assertion.is_empty())
            });
            if !authenticated {
                return json_answer(401, &json!({"error": "invalid_client"}));
            }
            let issued = Grant { client_id, resource, scope: get("scope"), live: true };
            return issue(shared, &mut state, issued, None).map_refresh_away();
        }
        _ => return oauth_error("unsupported_grant_type"),
    };
    issue(shared, &mut state, grant, None)
}

/// Client credentials get no refresh token.
trait NoRefresh {
    fn map_refresh_away(self) -> Answer;
}

impl NoRefresh for Answer {
    fn map_refresh_away(self) -> Answer {
        let (status, headers, body) = self;
        let mut value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if let Some(object) = value.as_object_mut() {
            object.remove("refresh_token");
        }
        (status, headers, value.to_string().into_bytes())
    }
}

/// A new access token (and refresh token, unless `keep` names the one to keep).
fn issue(shared: &Shared, state: &mut State, grant: Grant, keep: Option<String>) -> Answer {
    state.next += 1;
    let access = format!("at-{}-{}", state.next, random_hex());
    let refresh = keep.unwrap_or_else(|| format!("rt-{}-{}", state.next, random_hex()));
    state.access.insert(access.clone(), grant.clone());
    state.refresh.insert(refresh.clone(), grant);
    if shared.script.without_access_token {
        return json_answer(200, &json!({"token_type": "Bearer", "refresh_token": refresh}));
    }
    let mut answer = json!({"access_token": access, "token_type": "Bearer", "refresh_token": refresh});
    if let Some(seconds) = shared.script.expires_in {
        answer["expires_in"] = json!(seconds);
    }
    json_answer(200, &answer)
}

/// The client of a token request: `Authorization: Basic`, else the body's `client_id` (and secret).
fn client_of(request: &McpHttpRequest, params: &BTreeMap<String, String>) -> (String, Option<String>) {
    if let Some(basic) = request.header("authorization").and_then(|value| value.strip_prefix("Basic ")) {
        let decoded = decode_base64(basic);
        let text = String::from_utf8_lossy(&decoded).into_owned();
        if let Some((id, secret)) = text.split_once(':') {
            let unescape = |value: &str| form(format!("v={value}").as_bytes()).remove("v").unwrap_or_default();
            return (unescape(id), Some(unescape(secret)));
        }
    }
    (params.get("client_id").cloned().unwrap_or_default(), params.get("client_secret").cloned())
}

fn form(bytes: &[u8]) -> BTreeMap<String, String> {
    let text = String::from_utf8_lossy(bytes);
    text.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (percent_decode(name), percent_decode(value)))
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' => out.push(b' '),
            b'%' if index + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        index += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// BASE64URL(SHA256(verifier)) without padding (RFC 7636 S256).
fn s256(verifier: &str) -> String {
    crate::base64(&Sha256::digest(verifier.as_bytes())).trim_end_matches('=').replace('+', "-").replace('/', "_")
}

/// Base64, standard or URL-safe (a JWT's parts), padded or not; other bytes are skipped.
pub fn decode_base64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0_u32;
    let mut count = 0;
    let mut out = Vec::new();
    for byte in text.bytes().filter(|byte| *byte != b'=') {
        let byte = match byte {
            b'-' => b'+',
            b'_' => b'/',
            other => other,
        };
        let Some(value) = ALPHABET.iter().position(|known| *known == byte) else { continue };
        bits = (bits << 6) | value as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

/// 16 hex digits no test can guess.
fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    if let Ok(mut file) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut file, &mut bytes);
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        302 => "Found",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        assert_eq!(s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn forms_and_basic_credentials_decode() {
        let parsed = form(b"a=1&b=x%20y+z&c=%2");
        assert_eq!(parsed["b"], "x y z");
        assert_eq!(parsed["c"], "%2");
        assert_eq!(decode_base64(&crate::base64(b"id:secret")), b"id:secret");
    }
}
