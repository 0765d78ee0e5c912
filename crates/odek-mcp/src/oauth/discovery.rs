//! Where a server's authorization lives: its Protected Resource Metadata (RFC 9728: the
//! challenge's `resource_metadata`, else the well-known URL with the path inserted, else at the
//! root), then its authorization server's metadata (RFC 8414 and OpenID Connect Discovery, every
//! path variant the MCP authorization spec lists, then the root forms). Each document is read to
//! a cap and checked: a PRM must name this resource, an AS document must name the issuer it was
//! fetched for. A server without PRM is taken as its own authorization server (MCP 2025-03-26),
//! and one without AS metadata gets that revision's default endpoints.
//!
//! Start at [`discover`].

use serde::Deserialize;
use url::Url;

use super::challenge::Challenge;
use super::client::{Fetched, OAuthHttp};
use super::error::OAuthError;

const PRM: &str = "protected resource";
const AS: &str = "authorization server";
/// Most authorization servers of one PRM looked at.
const MAX_AUTHORIZATION_SERVERS: usize = 8;

/// RFC 9728 §2, the fields odek reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ProtectedResource {
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

/// RFC 8414 §2 (and OpenID Discovery), the fields odek reads.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct AuthServerMetadata {
    pub issuer: String,
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Vec<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    pub resource: ProtectedResource,
    pub metadata: AuthServerMetadata,
}

/// From a challenge (or none) to the authorization server's metadata.
pub(crate) async fn discover(
    http: &OAuthHttp,
    server_url: &Url,
    challenge: Option<&Challenge>,
) -> Result<Discovered, OAuthError> {
    let resource = match protected_resource(http, server_url, challenge).await? {
        Some(resource) => resource,
        // MCP 2025-03-26: no PRM, the server's origin is the authorization server.
        None => ProtectedResource {
            resource: None,
            authorization_servers: vec![origin_of(server_url)],
            scopes_supported: Vec::new(),
        },
    };
    let mut last_error = None;
    for issuer in resource.authorization_servers.iter().take(MAX_AUTHORIZATION_SERVERS) {
        match authorization_server(http, issuer).await {
            Ok(metadata) => return Ok(Discovered { resource, metadata }),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.unwrap_or_else(|| OAuthError::Metadata {
        kind: PRM,
        url: server_url.to_string(),
        reason: "authorization_servers is empty".to_owned(),
    }))
}

/// The PRM URLs to try, in order: the challenge's, else path-inserted, else root.
pub(crate) fn protected_resource_urls(server_url: &Url, challenge: Option<&Challenge>) -> Vec<String> {
    if let Some(url) = challenge.and_then(|challenge| challenge.resource_metadata.clone()) {
        return vec![url];
    }
    let origin = origin_of(server_url);
    let path = server_url.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/oauth-protected-resource{path}"));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls
}

/// The AS metadata URLs of an issuer, in the MCP authorization spec's order, then the root forms.
pub(crate) fn authorization_server_urls(issuer: &Url) -> Vec<String> {
    let origin = origin_of(issuer);
    let path = issuer.path().trim_end_matches('/');
    let root = [
        format!("{origin}/.well-known/oauth-authorization-server"),
        format!("{origin}/.well-known/openid-configuration"),
    ];
    if path.is_empty() {
        return root.to_vec();
    }
    let mut urls = vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ];
    urls.extend(root);
    urls
}

async fn protected_resource(
    http: &OAuthHttp,
    server_url: &Url,
    challenge: Option<&Challenge>,
) -> Result<Option<ProtectedResource>, OAuthError> {
    let urls = protected_resource_urls(server_url, challenge);
    for url in &urls {
        let Some((url, fetched)) = fetch_document(http, PRM, url).await? else { continue };
        let resource: ProtectedResource = parse_document(PRM, &url, &fetched)?;
        check_resource_names_server(&resource, server_url).map_err(|reason| OAuthError::Metadata {
            kind: PRM,
            url: url.to_string(),
            reason,
        })?;
        return Ok(Some(resource));
    }
    Ok(None)
}

/// RFC 9728 §3.3: the document must be about this server — its `resource` has the server's
/// origin and a path the server's URL starts with.
fn check_resource_names_server(resource: &ProtectedResource, server_url: &Url) -> Result<(), String> {
    let Some(named) = &resource.resource else { return Ok(()) };
    let parsed = Url::parse(named).map_err(|_| format!("resource {} is not a URL", quote_short(named)))?;
    let prefix = parsed.path().trim_end_matches('/');
    let path = server_url.path();
    let under = path == prefix || path.starts_with(&format!("{prefix}/")) || prefix.is_empty();
    if parsed.origin() != server_url.origin() || !under {
        return Err(format!("resource {} is not this server ({})", quote_short(named), server_url));
    }
    Ok(())
}

async fn authorization_server(http: &OAuthHttp, issuer: &str) -> Result<AuthServerMetadata, OAuthError> {
    let issuer_url = Url::parse(issuer).map_err(|err| OAuthError::Metadata {
        kind: PRM,
        url: issuer.to_owned(),
        reason: format!("authorization server {} is not a URL: {err}", quote_short(issuer)),
    })?;
    http.check_url(&issuer_url)?;
    let urls = authorization_server_urls(&issuer_url);
    for url in &urls {
        let Some((url, fetched)) = fetch_document(http, AS, url).await? else { continue };
        let metadata: AuthServerMetadata = parse_document(AS, &url, &fetched)?;
        if metadata.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(OAuthError::Metadata {
                kind: AS,
                url: url.to_string(),
                reason: format!(
                    "issuer {} is not {} it was fetched for",
                    quote_short(&metadata.issuer),
                    quote_short(issuer)
                ),
            });
        }
        return Ok(metadata);
    }
    // MCP 2025-03-26's default endpoints for a server without metadata.
    let origin = origin_of(&issuer_url);
    Ok(AuthServerMetadata {
        issuer: issuer.trim_end_matches('/').to_owned(),
        authorization_endpoint: Some(format!("{origin}/authorize")),
        token_endpoint: format!("{origin}/token"),
        registration_endpoint: Some(format!("{origin}/register")),
        revocation_endpoint: None,
        scopes_supported: Vec::new(),
        token_endpoint_auth_methods_supported: Vec::new(),
        code_challenge_methods_supported: vec!["S256".to_owned()],
        client_id_metadata_document_supported: false,
        authorization_response_iss_parameter_supported: false,
    })
}

/// One candidate document: `None` when it is not there (a 4xx), so the next URL is tried;
/// anything else that is not 200 is an error.
async fn fetch_document(http: &OAuthHttp, kind: &'static str, url: &str) -> Result<Option<(Url, Fetched)>, OAuthError> {
    let parsed = Url::parse(url).map_err(|err| OAuthError::Metadata {
        kind,
        url: url.to_owned(),
        reason: format!("not a URL: {err}"),
    })?;
    let fetched = http.get_json(&parsed).await.map_err(|error| match error {
        OAuthError::Http(reason) => OAuthError::Metadata { kind, url: url.to_owned(), reason },
        other => other,
    })?;
    match fetched.status {
        200 => Ok(Some((parsed, fetched))),
        400..=499 => Ok(None),
        status => Err(OAuthError::Metadata { kind, url: url.to_owned(), reason: format!("http {status}") }),
    }
}

fn parse_document<T: for<'de> Deserialize<'de>>(
    kind: &'static str,
    url: &Url,
    fetched: &Fetched,
) -> Result<T, OAuthError> {
    serde_json::from_slice(&fetched.body).map_err(|err| OAuthError::Metadata {
        kind,
        url: url.to_string(),
        reason: format!("not a valid document: {err}"),
    })
}

/// `scheme://host[:port]` of a URL.
fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// A value from a document, quoted and cut, for an error line.
fn quote_short(text: &str) -> String {
    let cut: String = text.chars().take(200).collect();
    odek_contract::quoting::quote(&cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn protected_resource_urls_follow_rfc_9728_with_the_challenge_first() {
        assert_eq!(
            protected_resource_urls(&url("https://mcp.example.com/public/mcp"), None),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            protected_resource_urls(&url("https://mcp.example.com/"), None),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
        let challenge = Challenge { resource_metadata: Some("https://m.example/prm".into()), ..Challenge::default() };
        assert_eq!(
            protected_resource_urls(&url("https://mcp.example.com/mcp"), Some(&challenge)),
            ["https://m.example/prm"]
        );
    }

    #[test]
    fn authorization_server_urls_cover_every_path_variant_then_the_root() {
        assert_eq!(
            authorization_server_urls(&url("https://auth.example.com/tenant1")),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_urls(&url("https://auth.example.com")),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_protected_resource_document_must_name_this_server_red() {
        let server = url("https://mcp.example.com/v1/mcp");
        let named = |resource: &str| ProtectedResource { resource: Some(resource.to_owned()), ..Default::default() };
        assert!(check_resource_names_server(&named("https://mcp.example.com/v1/mcp"), &server).is_ok());
        assert!(check_resource_names_server(&named("https://mcp.example.com"), &server).is_ok());
        assert!(check_resource_names_server(&named("https://mcp.example.com/v1"), &server).is_ok());
        assert!(check_resource_names_server(&named("https://evil.example.com/v1/mcp"), &server).is_err());
        assert!(check_resource_names_server(&named("https://mcp.example.com/v2"), &server).is_err());
        assert!(check_resource_names_server(&named("https://mcp.example.com/v"), &server).is_err());
        assert!(check_resource_names_server(&named("not a url"), &server).is_err());
    }
}
