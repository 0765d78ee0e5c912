//! OAuth 2.1 for remote MCP servers (the MCP authorization spec, 2025-11-25): a server that
//! answers `401` is discovered (`discovery`), odek gets a client identity (a pre-registered
//! `client_id`, a Client ID Metadata Document, or dynamic registration), and a grant
//! (`grant`: the authorization code with PKCE through a loopback redirect (`loopback`) shown by
//! an [`Opener`], or \[beyond\] client credentials); the tokens live in the token file (`store`)
//! and are refreshed before they expire, one refresh for any number of waiting calls.
//!
//! Start at [`Authorizer::for_server`]: the transport asks [`Authorizer::bearer`] before each
//! request and [`Authorizer::renew`] after a `401` (or a `403` asking for more scope); `odek ext
//! login` calls [`Authorizer::login`]. A headless authorizer (no [`LoginOptions`]) never opens a
//! browser: it uses stored or refreshed tokens, or fails naming `odek ext login <server>`.
//! Not here: when a request is retried (once, by the transport).

mod challenge;
mod client;
mod discovery;
mod error;
mod grant;
mod loopback;
mod opener;
mod store;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::{AuthUrl, ClientId, CsrfToken, PkceCodeChallenge, RedirectUrl, Scope};
use odek_contract::quoting::quote;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde::Deserialize;
use url::Url;

pub use challenge::Challenge;
pub use error::OAuthError;
pub use opener::{OpenFuture, Opener, browser_for, in_process_browser};

use client::{EXCHANGE_TIMEOUT, OAuthHttp};
use discovery::{Discovered, discover};
use grant::{AuthMethod, ClientIdentity, GrantContext, GrantError, TokenSet, choose_auth_method, unix_now};
use loopback::{Expected, RedirectListener};
use store::{Credentials, Registration, TokenRecord, TokenStore};

use crate::server_config::{SecretValue, ServerSpec, Transport};

/// A token this close to its expiry is refreshed before use.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// Default wait for the login's redirect.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// Step-ups (`403 insufficient_scope`) one authorizer performs before it gives up.
const MAX_STEP_UPS: u32 = 3;
/// The `initialize` a login sends unauthenticated to learn the server's challenge.
const PROBE_BODY: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"odek","version":"0"}}}"#;

/// A server entry's `oauth` object; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct OAuthConfig {
    /// A client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// The variable holding that client's secret.
    pub client_secret_env: Option<String>,
    /// The HTTPS URL of odek's Client ID Metadata Document, used as `client_id` where supported.
    pub client_metadata_url: Option<String>,
    /// Scopes asked for when the server's challenge names none.
    pub scopes: Vec<String>,
    pub grant: Grant,
    /// \[beyond\] A PKCS#8 PEM key (EC P-256 or RSA) for `private_key_jwt`.
    pub private_key_file: Option<String>,
}

/// Which grant gets tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A user authorizes in a browser (`odek ext login`).
    #[default]
    AuthorizationCode,
    /// \[beyond\] No user: the client's own credentials (CI).
    ClientCredentials,
}

impl OAuthConfig {
    /// The entry's rules, worded for `mcpclient <name>: oauth: …`.
    pub fn check(&self) -> Result<(), String> {
        if self.grant == Grant::ClientCredentials
            && (self.client_id.is_none() || (self.client_secret_env.is_none() && self.private_key_file.is_none()))
        {
            return Err(
                "grant \"client_credentials\" needs client_id and client_secret_env or private_key_file".to_owned()
            );
        }
        if let Some(url) = &self.client_metadata_url {
            let parsed = Url::parse(url).map_err(|err| format!("client_metadata_url: {err}"))?;
            let loopback = parsed.host().is_some_and(|host| crate::remote::is_loopback_host(&host));
            if !(parsed.scheme() == "https" || loopback) || parsed.path().len() <= 1 {
                return Err("client_metadata_url must be an https URL with a path".to_owned());
            }
        }
        if self.client_secret_env.is_some() && self.client_id.is_none() {
            return Err("client_secret_env needs client_id".to_owned());
        }
        Ok(())
    }
}

/// How a login shows itself: where the URL goes, how long it waits, and where its lines go.
#[derive(Clone)]
pub struct LoginOptions {
    pub opener: Opener,
    pub timeout: Duration,
    /// Prints one line for the user (stderr).
    pub say: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for LoginOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginOptions").field("opener", &self.opener).field("timeout", &self.timeout).finish()
    }
}

/// What the hub (or an embedder) gives every authorizer.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// Where the token file lives (`~/.odek/oauth`).
    pub store_dir: PathBuf,
    /// `None`: headless, never a browser.
    pub login: Option<LoginOptions>,
}

/// A server's authorization as `odek ext list` shows it (no network).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthState {
    /// A token is stored; `expires_in` when the server said, `refreshable` with a refresh token.
    LoggedIn {
        expires_in: Option<Duration>,
        refreshable: bool,
    },
    NotLoggedIn,
    /// The token file cannot be used (its error).
    Unusable(String),
}

impl AuthState {
    /// `logged in (expires in 52 min)`, `not logged in — run odek ext login <server>`, ….
    pub fn describe(&self, server: &str) -> String {
        match self {
            AuthState::LoggedIn { expires_in: None, .. } => "logged in".to_owned(),
            AuthState::LoggedIn { expires_in: Some(left), refreshable } if left.is_zero() => {
                if *refreshable {
                    "logged in (expired; refreshed on next use)".to_owned()
                } else {
                    format!("expired — run odek ext login {server}")
                }
            }
            AuthState::LoggedIn { expires_in: Some(left), .. } => {
                format!("logged in (expires in {} min)", left.as_secs().div_ceil(60))
            }
            AuthState::NotLoggedIn => format!("not logged in — run odek ext login {server}"),
            AuthState::Unusable(error) => error.clone(),
        }
    }
}

/// The current access token of one authorizer.
struct Current {
    token: SecretValue,
    /// `Bearer <token>`, built once: the request path only clones it.
    header: Option<HeaderValue>,
    expires_at: Option<u64>,
}

/// The authorization of one remote server: its tokens, their refresh, its login.
pub struct Authorizer {
    server: String,
    server_url: Url,
    /// The canonical server URL: the token file's key.
    resource: String,
    config: OAuthConfig,
    client_secret: Option<SecretValue>,
    env: Vec<(String, String)>,
    store: TokenStore,
    http: OAuthHttp,
    login: Option<LoginOptions>,
    current: Mutex<Option<Current>>,
    /// Single flight: held across the awaits of a refresh or a login on purpose, so concurrent
    /// callers wait for the one renewal and then use its token.
    renewing: tokio::sync::Mutex<()>,
    step_ups: AtomicU32,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").field("server", &self.server).field("resource", &self.resource).finish()
    }
}

/// The canonical URI of a server (RFC 8707, MCP §Resource Parameter): no fragment, no lone `/`.
pub fn canonical_resource(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    let text = url.to_string();
    if url.path() == "/" && url.query().is_none() { text.trim_end_matches('/').to_owned() } else { text }
}

impl Authorizer {
    /// The authorizer of an HTTP server that has no static credential (`token_env`, an
    /// `Authorization` header); `None` for the others. `env` is odek's environment (the client
    /// secret's variable, `$BROWSER`).
    pub fn for_server(
        spec: &ServerSpec,
        options: &OAuthOptions,
        env: &[(String, String)],
    ) -> Result<Option<Authorizer>, OAuthError> {
        let Transport::Http { endpoint, token_env, .. } = &spec.transport else { return Ok(None) };
        let has_header = endpoint.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        if !token_env.is_empty() || has_header {
            return Ok(None);
        }
        let config = spec.oauth.clone().unwrap_or_default();
        // A plain-http server beyond loopback passed the entry's `allow_insecure_http`: its
        // authorization server may be plain http too.
        let insecure = endpoint.url.scheme() == "http"
            && !endpoint.url.host().is_some_and(|host| crate::remote::is_loopback_host(&host));
        let client_secret = match &config.client_secret_env {
            Some(name) => match env.iter().find(|(key, value)| key == name && !value.is_empty()) {
                Some((_, value)) => {
                    odek_contract::redaction::register_secret(value);
                    Some(SecretValue::new(value.clone()))
                }
                None => {
                    return Err(OAuthError::Config(format!(
                        "client_secret_env {name} is set but the environment variable is empty"
                    )));
                }
            },
            None => None,
        };
        Ok(Some(Authorizer {
            server: spec.name.clone(),
            server_url: endpoint.url.clone(),
            resource: canonical_resource(&endpoint.url),
            config,
            client_secret,
            env: env.to_vec(),
            store: TokenStore::new(&options.store_dir),
            http: OAuthHttp::new(EXCHANGE_TIMEOUT.min(spec.limits.timeout.max(Duration::from_secs(1))), insecure)?,
            login: options.login.clone(),
            current: Mutex::new(None),
            renewing: tokio::sync::Mutex::new(()),
            step_ups: AtomicU32::new(0),
        }))
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The token to send now: the current one while it is fresh, else a stored or refreshed
    /// one; `None` when there is none yet (the request goes without, and a `401` brings the
    /// server's challenge to [`Authorizer::renew`]). Cancel-safe.
    pub async fn bearer(&self) -> Result<Option<SecretValue>, OAuthError> {
        if let Some(token) = self.fresh_current() {
            return Ok(Some(token));
        }
        let _single = self.renewing.lock().await;
        if let Some(token) = self.fresh_current() {
            return Ok(Some(token));
        }
        let credentials = self.store.load()?;
        let Some(record) = credentials.token_for(&self.resource, self.config.client_id.as_deref()).cloned() else {
            return Ok(None);
        };
        if !expiring(record.expires_at) {
            return Ok(Some(self.adopt(&record)));
        }
        match &record.refresh_token {
            Some(refresh_token) => self.refresh(&record, refresh_token).await.map(Some),
            None if self.config.grant == Grant::ClientCredentials => Ok(None),
            None => Err(OAuthError::LoginRequired {
                server: self.server.clone(),
                reason: "the stored token expired and cannot be refreshed".to_owned(),
            }),
        }
    }

    /// After a `401` (or a `403` with `insufficient_scope`) for `stale`: a new token — the one
    /// another caller already got, a refreshed one, one from client credentials, or (with
    /// [`LoginOptions`]) one from a login; headless, an error naming `odek ext login`.
    pub async fn renew(
        &self,
        stale: Option<&SecretValue>,
        challenge: Option<Challenge>,
    ) -> Result<SecretValue, OAuthError> {
        let step_up = challenge.as_ref().is_some_and(Challenge::is_insufficient_scope);
        let _single = self.renewing.lock().await;
        if !step_up
            && let Some(token) = self.fresh_current()
            && Some(token.expose()) != stale.map(SecretValue::expose)
        {
            return Ok(token);
        }
        let credentials = self.store.load()?;
        let mut record = credentials.token_for(&self.resource, self.config.client_id.as_deref()).cloned();
        // SEP-2352: a server that now names another authorization server gets a new grant there
        // (and a new registration), never the old one's refresh.
        let mut discovered = None;
        if !step_up
            && let (Some(stored), Some(challenge)) = (&record, &challenge)
            && challenge.resource_metadata.is_some()
            && let Ok(found) = discover(&self.http, &self.server_url, Some(challenge)).await
        {
            if found.metadata.issuer != stored.issuer {
                record = None;
            }
            discovered = Some(found);
        }
        if step_up {
            if self.step_ups.fetch_add(1, Ordering::AcqRel) >= MAX_STEP_UPS {
                return Err(OAuthError::LoginRequired {
                    server: self.server.clone(),
                    reason: format!("the server asked for more scope {MAX_STEP_UPS} times"),
                });
            }
        } else if let Some(record) = &record
            && let Some(refresh_token) = &record.refresh_token
            && stale.is_none_or(|stale| stale.expose() == record.access_token)
        {
            match self.refresh(record, refresh_token).await {
                Ok(token) => return Ok(token),
                Err(error @ OAuthError::LoginRequired { .. }) if self.login.is_none() => return Err(error),
                Err(_) => {}
            }
        } else if let Some(record) = &record
            && stale.is_none_or(|stale| stale.expose() != record.access_token)
            && !expiring(record.expires_at)
        {
            // Another process stored a newer token meanwhile.
            return Ok(self.adopt(record));
        }
        let mut scopes = challenge.as_ref().map(|challenge| challenge.scopes.clone()).unwrap_or_default();
        if step_up && let Some(record) = &record {
            for scope in &record.scopes {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
        }
        let discovered = match discovered {
            Some(discovered) => discovered,
            None if self.config.grant == Grant::ClientCredentials || self.login.is_some() => {
                discover(&self.http, &self.server_url, challenge.as_ref()).await?
            }
            None => return Err(self.headless_refusal(step_up, record.is_some(), &scopes)),
        };
        if self.config.grant == Grant::ClientCredentials {
            return self.by_client_credentials(&discovered, &scopes).await;
        }
        let Some(login) = &self.login else { return Err(self.headless_refusal(step_up, record.is_some(), &scopes)) };
        self.by_authorization_code(&discovered, &scopes, login).await
    }

    /// Why a face that cannot log in gets no token: one line naming `odek ext login`.
    fn headless_refusal(&self, step_up: bool, stored: bool, scopes: &[String]) -> OAuthError {
        let server = self.server.clone();
        match (step_up, stored) {
            (true, _) => OAuthError::LoginRequired {
                server,
                reason: format!("the server asks for scope {}", quote(&scopes.join(" "))),
            },
            (false, true) => OAuthError::LoginRequired { server, reason: "the stored token was refused".to_owned() },
            (false, false) => OAuthError::NotLoggedIn { server },
        }
    }

    /// Sends `request` with the current bearer; after a `401` (or a `403` asking for more
    /// scope) the token is renewed and the request sent once more, never more. The outer error
    /// is OAuth's (no token could be had), the inner the transport's.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Result<reqwest::Response, reqwest::Error>, OAuthError> {
        let retry = request.try_clone();
        let (header, bearer) = match self.fresh_header() {
            Some(header) => (Some(header), None),
            None => {
                let bearer = self.bearer().await?;
                (bearer.as_ref().and_then(bearer_header), bearer)
            }
        };
        let sent = match &header {
            Some(header) => request.header(AUTHORIZATION, header.clone()),
            None => request,
        };
        let response = match sent.send().await {
            Ok(response) => response,
            Err(error) => return Ok(Err(error)),
        };
        let Some(challenge) = asks_for_authorization(&response) else { return Ok(Ok(response)) };
        let Some(retry) = retry else { return Ok(Ok(response)) };
        drop(response);
        // The token the server refused, for the renewal to tell it from a newer one.
        let stale = bearer.or_else(|| {
            let value = header.as_ref()?.to_str().ok()?.strip_prefix("Bearer ")?;
            Some(SecretValue::new(value))
        });
        let token = self.renew(stale.as_ref(), challenge).await?;
        let retried = match bearer_header(&token) {
            Some(header) => retry.header(AUTHORIZATION, header),
            None => retry,
        };
        Ok(retried.send().await)
    }

    /// `odek ext login`: learns the server's challenge (an unauthenticated `initialize`), then
    /// gets tokens by the entry's grant, interactively for the authorization code.
    pub async fn login(&self) -> Result<(), OAuthError> {
        let _single = self.renewing.lock().await;
        self.http.check_url(&self.server_url)?;
        let probe = self.http.probe(&self.server_url, PROBE_BODY).await?;
        let challenge = Challenge::from_headers(&probe.headers);
        let scopes = challenge.as_ref().map(|challenge| challenge.scopes.clone()).unwrap_or_default();
        let discovered = discover(&self.http, &self.server_url, challenge.as_ref()).await?;
        if self.config.grant == Grant::ClientCredentials {
            return self.by_client_credentials(&discovered, &scopes).await.map(|_| ());
        }
        let Some(login) = &self.login else { return Err(OAuthError::NotLoggedIn { server: self.server.clone() }) };
        self.by_authorization_code(&discovered, &scopes, login).await.map(|_| ())
    }

    /// `odek ext logout`: forgets this server's tokens (the registration stays) and asks the
    /// authorization server to revoke them, best effort. Whether there was a token.
    pub async fn logout(&self) -> Result<bool, OAuthError> {
        let _single = self.renewing.lock().await;
        let (gone, credentials) =
            self.store.update(|credentials| (credentials.forget_resource(&self.resource), credentials.clone()))?;
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
        for record in &gone {
            self.revoke(record, &credentials).await;
        }
        Ok(!gone.is_empty())
    }

    /// What is stored for this server, without any request.
    pub fn state(&self) -> AuthState {
        let credentials = match self.store.load() {
            Ok(credentials) => credentials,
            Err(error) => return AuthState::Unusable(error.to_string()),
        };
        match credentials.token_for(&self.resource, self.config.client_id.as_deref()) {
            Some(record) => AuthState::LoggedIn {
                expires_in: record.expires_at.map(|at| Duration::from_secs(at.saturating_sub(unix_now()))),
                refreshable: record.refresh_token.is_some(),
            },
            None => AuthState::NotLoggedIn,
        }
    }

    fn fresh_current(&self) -> Option<SecretValue> {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().filter(|current| !expiring(current.expires_at)).map(|current| current.token.clone())
    }

    /// The current token's header while it is fresh (the request path: no allocation).
    fn fresh_header(&self) -> Option<HeaderValue> {
        let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().filter(|current| !expiring(current.expires_at)).and_then(|current| current.header.clone())
    }

    /// Makes `record`'s access token the current one.
    fn adopt(&self, record: &TokenRecord) -> SecretValue {
        odek_contract::redaction::register_secret(&record.access_token);
        let token = SecretValue::new(record.access_token.clone());
        let header = bearer_header(&token);
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Current { token: token.clone(), header, expires_at: record.expires_at });
        token
    }

    /// One refresh; a refused refresh token is forgotten and named as such.
    async fn refresh(&self, record: &TokenRecord, refresh_token: &str) -> Result<SecretValue, OAuthError> {
        let credentials = self.store.load()?;
        let identity = self.identity_of(record, &credentials)?;
        let context = GrantContext {
            http: &self.http,
            identity: &identity,
            token_endpoint: &record.token_endpoint,
            issuer: &record.issuer,
            resource: record.audience.as_deref().unwrap_or(&record.resource),
            scopes: &record.scopes,
        };
        match grant::refresh(&context, refresh_token).await {
            Ok(tokens) => self.keep(record.clone(), tokens),
            Err(GrantError::Refused { code, .. }) if code == "invalid_grant" || code == "invalid_token" => {
                self.store.update(|credentials| {
                    credentials.forget_resource(&self.resource);
                })?;
                *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
                Err(OAuthError::LoginRequired {
                    server: self.server.clone(),
                    reason: "the refresh token was refused (revoked or expired)".to_owned(),
                })
            }
            Err(error) => Err(error.into_error()),
        }
    }

    /// Stores what a grant returned under `record`'s key and makes it current.
    fn keep(&self, mut record: TokenRecord, tokens: TokenSet) -> Result<SecretValue, OAuthError> {
        record.access_token = tokens.access_token;
        record.refresh_token = tokens.refresh_token.or(record.refresh_token);
        record.expires_at = tokens.expires_at;
        record.scopes = tokens.scopes;
        self.store.update(|credentials| credentials.put_token(record.clone()))?;
        Ok(self.adopt(&record))
    }

    /// The identity a stored grant was made with: the entry's client, a registration, or the
    /// metadata document URL.
    fn identity_of(&self, record: &TokenRecord, credentials: &Credentials) -> Result<ClientIdentity, OAuthError> {
        let auth_method = AuthMethod::parse(&record.auth_method).unwrap_or(AuthMethod::None);
        if self.config.client_id.as_deref() == Some(record.client_id.as_str()) {
            return Ok(ClientIdentity {
                client_id: record.client_id.clone(),
                secret: self.client_secret.clone(),
                key: self.signing_key()?,
                auth_method,
            });
        }
        let secret = credentials
            .registration_for(&record.issuer)
            .filter(|registration| registration.client_id == record.client_id)
            .and_then(|registration| registration.client_secret.clone())
            .map(SecretValue::new);
        Ok(ClientIdentity { client_id: record.client_id.clone(), secret, key: None, auth_method })
    }

    fn signing_key(&self) -> Result<Option<grant::SigningKey>, OAuthError> {
        self.config
            .private_key_file
            .as_deref()
            .map(|path| grant::load_signing_key(std::path::Path::new(path)))
            .transpose()
    }

    /// The configured client, for a server with its metadata.
    fn configured_identity(&self, discovered: &Discovered) -> Result<Option<ClientIdentity>, OAuthError> {
        let Some(client_id) = &self.config.client_id else { return Ok(None) };
        let key = self.signing_key()?;
        let auth_method = choose_auth_method(
            &discovered.metadata.token_endpoint_auth_methods_supported,
            self.client_secret.is_some(),
            key.is_some(),
        );
        Ok(Some(ClientIdentity { client_id: client_id.clone(), secret: self.client_secret.clone(), key, auth_method }))
    }

    async fn by_client_credentials(
        &self,
        discovered: &Discovered,
        scopes: &[String],
    ) -> Result<SecretValue, OAuthError> {
        let identity = self
            .configured_identity(discovered)?
            .ok_or_else(|| OAuthError::Config("grant \"client_credentials\" needs client_id".to_owned()))?;
        let scopes = self.scopes_to_ask(discovered, scopes);
        let record = self.record_for(discovered, &identity, &scopes);
        let context = self.grant_context(discovered, &identity, &record, &scopes);
        let tokens = grant::client_credentials(&context).await.map_err(GrantError::into_error)?;
        self.keep(record, tokens)
    }

    async fn by_authorization_code(
        &self,
        discovered: &Discovered,
        scopes: &[String],
        login: &LoginOptions,
    ) -> Result<SecretValue, OAuthError> {
        let metadata = &discovered.metadata;
        let methods = &metadata.code_challenge_methods_supported;
        if !methods.iter().any(|method| method == "S256") {
            return Err(OAuthError::Config(
                "the authorization server does not advertise PKCE S256 (code_challenge_methods_supported); refusing to log in".to_owned(),
            ));
        }
        let authorization_endpoint = metadata
            .authorization_endpoint
            .as_deref()
            .ok_or_else(|| OAuthError::Config("the authorization server has no authorization_endpoint".to_owned()))?;
        let authorization_url = Url::parse(authorization_endpoint)
            .map_err(|err| OAuthError::Config(format!("authorization_endpoint: {err}")))?;
        self.http.check_url(&authorization_url)?;
        let registered = self.store.load()?.registration_for(&metadata.issuer).cloned();
        let port = registered.as_ref().and_then(|registration| Url::parse(&registration.redirect_uri).ok()?.port());
        let listener = RedirectListener::bind(port).await?;
        let identity = match self.configured_identity(discovered)? {
            Some(identity) => identity,
            None => self.unconfigured_identity(discovered, registered, listener.uri()).await?,
        };
        let scopes = self.scopes_to_ask(discovered, scopes);
        let (pkce, verifier) = PkceCodeChallenge::new_random_sha256();
        let redirect = RedirectUrl::new(listener.uri().to_owned())
            .map_err(|err| OAuthError::Config(format!("redirect uri: {err}")))?;
        let auth_url = AuthUrl::from_url(authorization_url);
        let record = self.record_for(discovered, &identity, &scopes);
        let (url, state) = BasicClient::new(ClientId::new(identity.client_id.clone()))
            .set_auth_uri(auth_url)
            .set_redirect_uri(redirect)
            .authorize_url(CsrfToken::new_random)
            .add_scopes(scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(pkce)
            .add_extra_param("resource", record.audience.clone().unwrap_or_else(|| record.resource.clone()))
            .url();
        let expected = Expected {
            state: state.secret(),
            issuer: &metadata.issuer,
            iss_required: metadata.authorization_response_iss_parameter_supported,
        };
        let redirect_uri = listener.uri().to_owned();
        let say = |line: &str| (login.say)(line);
        // Concurrently: an in-process opener only returns once the listener answered it.
        let opening = login.opener.open(&url, &self.env, &say, login.timeout);
        let waiting = tokio::time::timeout(login.timeout, listener.wait(&expected));
        let ((), waited) = tokio::join!(opening, waiting);
        let code = match waited {
            Ok(code) => code?,
            Err(_) => {
                return Err(OAuthError::LoginTimedOut {
                    server: self.server.clone(),
                    seconds: login.timeout.as_secs(),
                });
            }
        };
        let context = self.grant_context(discovered, &identity, &record, &scopes);
        let tokens =
            grant::exchange_code(&context, code, verifier, &redirect_uri).await.map_err(GrantError::into_error)?;
        self.keep(record, tokens)
    }

    /// CIMD when the server supports it and the entry names a document, else the issuer's
    /// registration (reused when its redirect is this listener's, else made anew).
    async fn unconfigured_identity(
        &self,
        discovered: &Discovered,
        registered: Option<Registration>,
        redirect_uri: &str,
    ) -> Result<ClientIdentity, OAuthError> {
        let metadata = &discovered.metadata;
        if metadata.client_id_metadata_document_supported
            && let Some(document) = &self.config.client_metadata_url
        {
            return Ok(ClientIdentity {
                client_id: document.clone(),
                secret: None,
                key: None,
                auth_method: AuthMethod::None,
            });
        }
        let registration = match registered.filter(|registration| registration.redirect_uri == redirect_uri) {
            Some(registration) => registration,
            None => {
                let endpoint = metadata.registration_endpoint.as_deref().ok_or_else(|| {
                    OAuthError::Config(format!(
                        "the authorization server offers no client registration; set oauth.client_id for {}",
                        quote(&self.server)
                    ))
                })?;
                let registration = register(&self.http, endpoint, &metadata.issuer, redirect_uri).await?;
                self.store.update(|credentials| credentials.put_registration(registration.clone()))?;
                registration
            }
        };
        Ok(ClientIdentity {
            client_id: registration.client_id.clone(),
            secret: registration.client_secret.clone().map(SecretValue::new),
            key: None,
            auth_method: AuthMethod::parse(&registration.auth_method).unwrap_or(AuthMethod::None),
        })
    }

    /// The challenge's scopes, else the entry's, else the resource's `scopes_supported`, else none.
    fn scopes_to_ask(&self, discovered: &Discovered, from_challenge: &[String]) -> Vec<String> {
        [from_challenge, &self.config.scopes, &discovered.resource.scopes_supported]
            .into_iter()
            .find(|scopes| !scopes.is_empty())
            .map(<[String]>::to_vec)
            .unwrap_or_default()
    }

    /// A grant's record before its tokens are known.
    fn record_for(&self, discovered: &Discovered, identity: &ClientIdentity, scopes: &[String]) -> TokenRecord {
        let audience = discovered.resource.resource.clone().filter(|named| *named != self.resource);
        TokenRecord {
            issuer: discovered.metadata.issuer.clone(),
            resource: self.resource.clone(),
            audience,
            client_id: identity.client_id.clone(),
            access_token: String::new(),
            refresh_token: None,
            expires_at: None,
            scopes: scopes.to_vec(),
            token_endpoint: discovered.metadata.token_endpoint.clone(),
            revocation_endpoint: discovered.metadata.revocation_endpoint.clone(),
            auth_method: identity.auth_method.as_str().to_owned(),
        }
    }

    fn grant_context<'a>(
        &'a self,
        discovered: &'a Discovered,
        identity: &'a ClientIdentity,
        record: &'a TokenRecord,
        scopes: &'a [String],
    ) -> GrantContext<'a> {
        GrantContext {
            http: &self.http,
            identity,
            token_endpoint: &discovered.metadata.token_endpoint,
            issuer: &discovered.metadata.issuer,
            resource: record.audience.as_deref().unwrap_or(&record.resource),
            scopes,
        }
    }

    /// RFC 7009 revocation of a grant's refresh and access tokens, best effort.
    async fn revoke(&self, record: &TokenRecord, credentials: &Credentials) {
        let Some(endpoint) = &record.revocation_endpoint else { return };
        let Ok(url) = Url::parse(endpoint) else { return };
        let Ok(identity) = self.identity_of(record, credentials) else { return };
        for token in record.refresh_token.iter().chain(std::iter::once(&record.access_token)) {
            let mut form = vec![("token", token.as_str()), ("client_id", identity.client_id.as_str())];
            if let Some(secret) = &identity.secret {
                form.push(("client_secret", secret.expose()));
            }
            let _ = self.http.post_form(&url, &form).await;
        }
    }
}

/// RFC 7591: registers odek as a public client for the loopback redirect.
async fn register(
    http: &OAuthHttp,
    endpoint: &str,
    issuer: &str,
    redirect_uri: &str,
) -> Result<Registration, OAuthError> {
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
    }
    let url = Url::parse(endpoint).map_err(|err| OAuthError::Registration(format!("endpoint: {err}")))?;
    let body = serde_json::json!({
        "client_name": "odek",
        // SEP-837: a native application (its redirect is a loopback one).
        "application_type": "native",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let fetched = http.post_json(&url, &body).await.map_err(|error| OAuthError::Registration(error.to_string()))?;
    if !(200..300).contains(&fetched.status) {
        return Err(OAuthError::Registration(format!("http {}", fetched.status)));
    }
    let registered: Registered = serde_json::from_slice(&fetched.body)
        .map_err(|err| OAuthError::Registration(format!("not a registration answer ({err})")))?;
    if registered.client_id.is_empty() {
        return Err(OAuthError::Registration("no client_id".to_owned()));
    }
    if let Some(secret) = &registered.client_secret {
        odek_contract::redaction::register_secret(secret);
    }
    let auth_method = registered
        .token_endpoint_auth_method
        .as_deref()
        .and_then(AuthMethod::parse)
        .filter(|method| *method != AuthMethod::PrivateKeyJwt)
        .unwrap_or(if registered.client_secret.is_some() { AuthMethod::SecretBasic } else { AuthMethod::None });
    Ok(Registration {
        issuer: issuer.to_owned(),
        client_id: registered.client_id,
        client_secret: registered.client_secret,
        redirect_uri: redirect_uri.to_owned(),
        auth_method: auth_method.as_str().to_owned(),
    })
}

/// `Bearer <token>`, marked sensitive; `None` for a token no header can carry.
fn bearer_header(token: &SecretValue) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose())).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The challenge of an answer that asks for (other) authorization: any `401`, and a `403` with
/// `error="insufficient_scope"` (step-up).
fn asks_for_authorization(response: &reqwest::Response) -> Option<Option<Challenge>> {
    let challenge = Challenge::from_headers(response.headers());
    match response.status().as_u16() {
        401 => Some(challenge),
        403 if challenge.as_ref().is_some_and(Challenge::is_insufficient_scope) => Some(challenge),
        _ => None,
    }
}

/// Whether a token expiring at `expires_at` should be refreshed before use.
fn expiring(expires_at: Option<u64>) -> bool {
    expires_at.is_some_and(|at| at <= unix_now().saturating_add(REFRESH_MARGIN.as_secs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_resource_drops_the_fragment_and_a_lone_slash() {
        let canonical = |text: &str| canonical_resource(&Url::parse(text).unwrap());
        assert_eq!(canonical("https://MCP.example.com/"), "https://mcp.example.com");
        assert_eq!(canonical("https://mcp.example.com/mcp#x"), "https://mcp.example.com/mcp");
        assert_eq!(canonical("http://127.0.0.1:8080/mcp/"), "http://127.0.0.1:8080/mcp/");
    }

    #[test]
    fn the_entry_rules_name_what_is_missing() {
        let config = |value: serde_json::Value| serde_json::from_value::<OAuthConfig>(value).unwrap();
        assert!(config(serde_json::json!({})).check().is_ok());
        assert_eq!(
            config(serde_json::json!({"grant": "client_credentials", "client_id": "c"})).check().unwrap_err(),
            "grant \"client_credentials\" needs client_id and client_secret_env or private_key_file"
        );
        assert!(
            config(serde_json::json!({"grant": "client_credentials", "client_id": "c", "client_secret_env": "S"}))
                .check()
                .is_ok()
        );
        assert!(config(serde_json::json!({"client_metadata_url": "http://x.example/c.json"})).check().is_err());
        assert!(config(serde_json::json!({"client_metadata_url": "https://x.example/"})).check().is_err());
        assert!(config(serde_json::json!({"client_metadata_url": "https://x.example/odek.json"})).check().is_ok());
        assert!(config(serde_json::json!({"client_secret_env": "S"})).check().is_err());
    }

    #[test]
    fn the_state_reads_as_the_listing_shows_it() {
        assert_eq!(AuthState::NotLoggedIn.describe("gh"), "not logged in — run odek ext login gh");
        let in_52 = AuthState::LoggedIn { expires_in: Some(Duration::from_secs(52 * 60 - 10)), refreshable: true };
        assert_eq!(in_52.describe("gh"), "logged in (expires in 52 min)");
        let expired = AuthState::LoggedIn { expires_in: Some(Duration::ZERO), refreshable: false };
        assert_eq!(expired.describe("gh"), "expired — run odek ext login gh");
    }
}
