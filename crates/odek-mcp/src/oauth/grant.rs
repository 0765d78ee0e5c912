//! The token endpoint's grants, on the `oauth2` crate through odek's bounded client: the
//! authorization code with its PKCE verifier, the refresh token (a rotated one honoured), and
//! \[beyond\] client credentials (the `io.modelcontextprotocol/oauth-client-credentials`
//! extension). Each request carries the `resource` (RFC 8707) and the client's authentication:
//! none, `client_secret_basic`, `client_secret_post`, or `private_key_jwt` (RFC 7523: a fresh
//! ES256 or RS256 assertion per request). Every token received is registered for redaction.
//!
//! Start at [`ClientIdentity`] and [`exchange_code`] / [`refresh`] / [`client_credentials`].

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicErrorResponseType, BasicTokenResponse};
use oauth2::{
    AuthType, AuthorizationCode, ClientId, ClientSecret, EndpointNotSet, EndpointSet, PkceCodeVerifier, RedirectUrl,
    RefreshToken, RequestTokenError, Scope, StandardErrorResponse, TokenResponse, TokenUrl,
};

use super::client::{ExchangeError, OAuthHttp};
use super::error::OAuthError;
use crate::server_config::SecretValue;

/// Largest private key file read (bytes).
const MAX_KEY_BYTES: u64 = 64 * 1024;
/// Lifetime of one client assertion.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(300);
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How the client proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    None,
    SecretBasic,
    SecretPost,
    PrivateKeyJwt,
}

impl AuthMethod {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::SecretBasic => "client_secret_basic",
            AuthMethod::SecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<AuthMethod> {
        [AuthMethod::None, AuthMethod::SecretBasic, AuthMethod::SecretPost, AuthMethod::PrivateKeyJwt]
            .into_iter()
            .find(|method| method.as_str() == text)
    }
}

/// `token_endpoint_auth_method` from what the client has and what the server supports (an
/// empty list means the RFC 8414 default, `client_secret_basic`).
pub(crate) fn choose_auth_method(supported: &[String], has_secret: bool, has_key: bool) -> AuthMethod {
    let offers = |method: AuthMethod| supported.iter().any(|name| name == method.as_str());
    if has_key {
        return AuthMethod::PrivateKeyJwt;
    }
    if !has_secret {
        return AuthMethod::None;
    }
    if supported.is_empty() || offers(AuthMethod::SecretBasic) || !offers(AuthMethod::SecretPost) {
        AuthMethod::SecretBasic
    } else {
        AuthMethod::SecretPost
    }
}

/// A private key for `private_key_jwt`.
#[derive(Clone)]
pub(crate) struct SigningKey {
    key: jsonwebtoken::EncodingKey,
    algorithm: jsonwebtoken::Algorithm,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({:?})", self.algorithm)
    }
}

/// Reads a PKCS#8 PEM private key: EC P-256 signs ES256, RSA signs RS256.
pub(crate) fn load_signing_key(path: &std::path::Path) -> Result<SigningKey, OAuthError> {
    let fail = |what: String| OAuthError::Config(format!("private_key_file {}: {what}", path.display()));
    let file = std::fs::File::open(path).map_err(|error| fail(format!("cannot be read: {error}")))?;
    let mut pem = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_KEY_BYTES), &mut pem)
        .map_err(|error| fail(format!("cannot be read: {error}")))?;
    if let Ok(key) = jsonwebtoken::EncodingKey::from_ec_pem(&pem) {
        return Ok(SigningKey { key, algorithm: jsonwebtoken::Algorithm::ES256 });
    }
    match jsonwebtoken::EncodingKey::from_rsa_pem(&pem) {
        Ok(key) => Ok(SigningKey { key, algorithm: jsonwebtoken::Algorithm::RS256 }),
        Err(_) => Err(fail("not a PKCS#8 PEM EC (P-256) or RSA private key".to_owned())),
    }
}

/// Who odek is to one authorization server.
#[derive(Debug, Clone)]
pub(crate) struct ClientIdentity {
    pub client_id: String,
    pub secret: Option<SecretValue>,
    pub key: Option<SigningKey>,
    pub auth_method: AuthMethod,
}

/// A token endpoint's answer, checked.
#[derive(Debug, Clone)]
pub(crate) struct TokenSet {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at: Option<u64>,
    pub scopes: Vec<String>,
}

/// How a grant failed: refused by the server (`invalid_grant` and friends), or anything else.
#[derive(Debug)]
pub(crate) enum GrantError {
    Refused { code: String, description: Option<String> },
    Failed(OAuthError),
}

impl GrantError {
    pub(crate) fn into_error(self) -> OAuthError {
        match self {
            GrantError::Refused { code, description } => {
                let description = description.map(|text| format!(" ({})", short(&text))).unwrap_or_default();
                OAuthError::Token(format!("refused: {}{description}", short(&code)))
            }
            GrantError::Failed(error) => error,
        }
    }
}

type TokenClient = BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The `oauth2` client of one identity and token endpoint.
fn token_client(identity: &ClientIdentity, token_endpoint: &str) -> Result<TokenClient, GrantError> {
    let token_url = TokenUrl::new(token_endpoint.to_owned())
        .map_err(|err| GrantError::Failed(OAuthError::Token(format!("token endpoint is not a URL: {err}"))))?;
    let mut client = BasicClient::new(ClientId::new(identity.client_id.clone())).set_token_uri(token_url);
    match (identity.auth_method, &identity.secret) {
        (AuthMethod::SecretBasic, Some(secret)) => {
            client = client
                .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
                .set_auth_type(AuthType::BasicAuth);
        }
        (AuthMethod::SecretPost, Some(secret)) => {
            client = client
                .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
                .set_auth_type(AuthType::RequestBody);
        }
        _ => client = client.set_auth_type(AuthType::RequestBody),
    }
    Ok(client)
}

/// The `client_assertion` parameters of a `private_key_jwt` client (none for others).
fn assertion_params(identity: &ClientIdentity, audience: &str) -> Result<Vec<(String, String)>, GrantError> {
    let (AuthMethod::PrivateKeyJwt, Some(key)) = (identity.auth_method, &identity.key) else { return Ok(Vec::new()) };
    let now = unix_now();
    let claims = serde_json::json!({
        "iss": identity.client_id,
        "sub": identity.client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME.as_secs(),
        "jti": oauth2::CsrfToken::new_random().secret(),
    });
    let assertion = jsonwebtoken::encode(&jsonwebtoken::Header::new(key.algorithm), &claims, &key.key)
        .map_err(|err| GrantError::Failed(OAuthError::Token(format!("sign the client assertion: {err}"))))?;
    Ok(vec![
        ("client_assertion_type".to_owned(), ASSERTION_TYPE.to_owned()),
        ("client_assertion".to_owned(), assertion),
    ])
}

/// What one grant request needs besides its own parameters.
pub(crate) struct GrantContext<'a> {
    pub http: &'a OAuthHttp,
    pub identity: &'a ClientIdentity,
    pub token_endpoint: &'a str,
    pub issuer: &'a str,
    pub resource: &'a str,
    pub scopes: &'a [String],
}

/// Authorization code + PKCE verifier → tokens.
pub(crate) async fn exchange_code(
    context: &GrantContext<'_>,
    code: String,
    verifier: PkceCodeVerifier,
    redirect_uri: &str,
) -> Result<TokenSet, GrantError> {
    let redirect = RedirectUrl::new(redirect_uri.to_owned())
        .map_err(|err| GrantError::Failed(OAuthError::Token(format!("redirect uri: {err}"))))?;
    let client = token_client(context.identity, context.token_endpoint)?.set_redirect_uri(redirect);
    let mut request = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", context.resource);
    for (name, value) in assertion_params(context.identity, context.issuer)? {
        request = request.add_extra_param(name, value);
    }
    let send = sender(context.http);
    finish(request.request_async(&send).await, context.scopes)
}

/// Refresh token → tokens; a rotated refresh token replaces the old one, an absent one keeps it.
pub(crate) async fn refresh(context: &GrantContext<'_>, refresh_token: &str) -> Result<TokenSet, GrantError> {
    let client = token_client(context.identity, context.token_endpoint)?;
    let token = RefreshToken::new(refresh_token.to_owned());
    let mut request = client.exchange_refresh_token(&token).add_extra_param("resource", context.resource);
    for (name, value) in assertion_params(context.identity, context.issuer)? {
        request = request.add_extra_param(name, value);
    }
    let send = sender(context.http);
    let mut tokens = finish(request.request_async(&send).await, context.scopes)?;
    if tokens.refresh_token.is_none() {
        tokens.refresh_token = Some(refresh_token.to_owned());
    }
    Ok(tokens)
}

/// \[beyond\] Client credentials → tokens (no user, no browser: CI's path).
pub(crate) async fn client_credentials(context: &GrantContext<'_>) -> Result<TokenSet, GrantError> {
    let client = token_client(context.identity, context.token_endpoint)?;
    let mut request = client
        .exchange_client_credentials()
        .add_scopes(context.scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", context.resource);
    for (name, value) in assertion_params(context.identity, context.issuer)? {
        request = request.add_extra_param(name, value);
    }
    let send = sender(context.http);
    finish(request.request_async(&send).await, context.scopes)
}

/// The `oauth2` HTTP client: each request's future owns its client handle, so it is `Send`
/// for any lifetime (a closure borrowing the client is not, to the compiler).
fn sender(
    http: &OAuthHttp,
) -> impl Fn(
    oauth2::HttpRequest,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, ExchangeError>> + Send>> {
    let http = http.clone();
    move |request| {
        let http = http.clone();
        Box::pin(async move { http.send(request).await })
    }
}

type TokenOutcome =
    Result<BasicTokenResponse, RequestTokenError<ExchangeError, StandardErrorResponse<BasicErrorResponseType>>>;

/// The answer checked and its tokens registered for redaction; a failure worded without any
/// part of the body (which may hold a token).
fn finish(outcome: TokenOutcome, asked: &[String]) -> Result<TokenSet, GrantError> {
    let response = match outcome {
        Ok(response) => response,
        Err(RequestTokenError::ServerResponse(error)) => {
            return Err(GrantError::Refused {
                code: error.error().as_ref().to_owned(),
                description: error.error_description().cloned(),
            });
        }
        Err(RequestTokenError::Request(error)) => return Err(GrantError::Failed(OAuthError::Token(error.0))),
        Err(RequestTokenError::Parse(error, body)) => {
            let missing = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .is_some_and(|value| value.get("access_token").is_none_or(|token| !token.is_string()));
            let what = if missing {
                "the answer has no access_token".to_owned()
            } else {
                format!("the answer is not a token response (at {})", error.path())
            };
            return Err(GrantError::Failed(OAuthError::Token(what)));
        }
        Err(RequestTokenError::Other(text)) => return Err(GrantError::Failed(OAuthError::Token(short(&text)))),
    };
    let access_token = response.access_token().secret().clone();
    if access_token.is_empty() {
        return Err(GrantError::Failed(OAuthError::Token("the answer has an empty access_token".to_owned())));
    }
    odek_contract::redaction::register_secret(&access_token);
    let refresh_token = response.refresh_token().map(|token| token.secret().clone());
    if let Some(token) = &refresh_token {
        odek_contract::redaction::register_secret(token);
    }
    let expires_at = response.expires_in().map(|lifetime| unix_now().saturating_add(lifetime.as_secs()));
    let scopes = match response.scopes() {
        Some(scopes) => scopes.iter().map(|scope| scope.to_string()).collect(),
        None => asked.to_vec(),
    };
    Ok(TokenSet { access_token, refresh_token, expires_at, scopes })
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())
}

fn short(text: &str) -> String {
    let cut: String = text.chars().take(200).collect();
    odek_contract::quoting::quote(&cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_auth_method_follows_what_the_client_has_and_the_server_supports() {
        let list = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        assert_eq!(choose_auth_method(&list(&[]), false, false), AuthMethod::None);
        assert_eq!(choose_auth_method(&list(&[]), true, false), AuthMethod::SecretBasic);
        assert_eq!(choose_auth_method(&list(&["client_secret_post"]), true, false), AuthMethod::SecretPost);
        assert_eq!(
            choose_auth_method(&list(&["client_secret_post", "client_secret_basic"]), true, false),
            AuthMethod::SecretBasic
        );
        assert_eq!(choose_auth_method(&list(&["none"]), true, false), AuthMethod::SecretBasic);
        assert_eq!(choose_auth_method(&list(&["private_key_jwt"]), false, true), AuthMethod::PrivateKeyJwt);
        for method in ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"] {
            assert_eq!(AuthMethod::parse(method).map(AuthMethod::as_str), Some(method));
        }
    }

    #[test]
    fn a_token_answer_without_access_token_is_refused_without_echoing_it_red() {
        let body = br#"{"token_type":"Bearer","refresh_token":"rt-should-not-leak-0123456789"}"#.to_vec();
        let parse: Result<BasicTokenResponse, _> =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(&body));
        let error = finish(Err(RequestTokenError::Parse(parse.unwrap_err(), body)), &[]).unwrap_err().into_error();
        assert_eq!(error.to_string(), "token request: the answer has no access_token");
    }
}
