//! `odek ext login <server>` and `odek ext logout <server>`: a remote server's OAuth tokens got
//! interactively (the authorization page opened with `$BROWSER`, the desktop's opener, or
//! printed with `--no-browser`; the redirect awaited within `--timeout`) or, for an entry with
//! `"grant": "client_credentials"`, without a browser; and forgotten. The work is odek-mcp's
//! `oauth::Authorizer`; this face only finds the entry and prints. No token is ever printed.
//! Also the auth column of `odek ext list` ([`auth_state`]).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use odek::config::McpServerConfig;
use odek::mcp::oauth::{AuthState, Authorizer, LoginOptions, OAuthOptions, Opener};
use odek::mcp::{ServerSpec, StderrObserver, Transport};
use odek::setup::{Setup, validated};
use odek_contract::quoting::quote;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};

use crate::commands::run::load_setup;
use crate::outcome::CommandError;

pub async fn login(server: &str, no_browser: bool, timeout: u64) -> Result<(), CommandError> {
    let setup = load_setup()?;
    let spec = remote_spec(&setup, server)?;
    let say: Arc<dyn Fn(&str) + Send + Sync> =
        Arc::new(|line: &str| eprintln!("odek: {}", sanitise_for_terminal(line, Layout::Line)));
    let options = OAuthOptions {
        login: Some(LoginOptions {
            opener: if no_browser { Opener::Print } else { Opener::Browser },
            timeout: Duration::from_secs(timeout),
            say,
        }),
        ..setup.oauth_options()
    };
    let authorizer = authorizer(&setup, &spec, &options)?;
    authorizer.login().await.map_err(|error| fail(server, &error))?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "logged in to {}: {}", quote(server), authorizer.state().describe(server))?;
    stdout.flush()?;
    Ok(())
}

pub async fn logout(server: &str) -> Result<(), CommandError> {
    let setup = load_setup()?;
    let spec = remote_spec(&setup, server)?;
    let authorizer = authorizer(&setup, &spec, &setup.oauth_options())?;
    let had = authorizer.logout().await.map_err(|error| fail(server, &error))?;
    let mut stdout = std::io::stdout().lock();
    if had {
        writeln!(stdout, "logged out of {}", quote(server))?;
    } else {
        writeln!(stdout, "{} had no stored tokens", quote(server))?;
    }
    stdout.flush()?;
    Ok(())
}

/// `odek ext list`'s auth line of a remote server, once the servers were started: the static
/// credential's source, the stored OAuth grant, or what the start-up showed (`none` when the
/// server answered without asking).
pub fn auth_state(setup: &Setup, spec: &ServerSpec, started: bool) -> Option<String> {
    let Transport::Http { endpoint, token_env, .. } = &spec.transport else { return None };
    if !token_env.is_empty() {
        return Some("token_env".to_owned());
    }
    if endpoint.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization")) {
        return Some("header".to_owned());
    }
    let authorizer = match Authorizer::for_server(spec, &setup.oauth_options(), &process_env(setup)) {
        Ok(Some(authorizer)) => authorizer,
        Ok(None) => return Some("none".to_owned()),
        Err(error) => return Some(format!("oauth: {}", plain(&error))),
    };
    Some(match authorizer.state() {
        AuthState::NotLoggedIn if started && spec.oauth.is_none() => "none".to_owned(),
        state => format!("oauth: {}", state.describe(&spec.name)),
    })
}

/// The configured, enabled remote server `name`, validated.
fn remote_spec(setup: &Setup, name: &str) -> Result<ServerSpec, CommandError> {
    let configured: Vec<&McpServerConfig> = setup.loaded.config.mcp_servers.iter().collect();
    let Some(server) = configured.iter().find(|server| server.name == name) else {
        let names: Vec<String> = configured.iter().map(|server| quote(&server.name)).collect();
        let listing = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        return Err(CommandError::Fatal(format!(
            "ext: no MCP server {} is configured (configured: {listing})",
            quote(name)
        )));
    };
    let spec = validated(server, &StderrObserver).map_err(|error| CommandError::Fatal(error.to_string()))?;
    if !matches!(spec.transport, Transport::Http { .. }) {
        return Err(CommandError::Fatal(format!("ext: MCP server {} is not a remote (url) server", quote(name))));
    }
    Ok(spec)
}

fn authorizer(setup: &Setup, spec: &ServerSpec, options: &OAuthOptions) -> Result<Authorizer, CommandError> {
    match Authorizer::for_server(spec, options, &process_env(setup)) {
        Ok(Some(authorizer)) => Ok(authorizer),
        Ok(None) => Err(CommandError::Fatal(format!(
            "ext: MCP server {} sends a static token (token_env or an Authorization header); OAuth is not used",
            quote(&spec.name)
        ))),
        Err(error) => Err(fail(&spec.name, &error)),
    }
}

/// odek's environment as the hub hands it on (the client secret's variable, `$BROWSER`).
fn process_env(setup: &Setup) -> Vec<(String, String)> {
    setup.loaded.env.iter().map(|(key, value)| (key.clone(), value.clone())).collect()
}

fn fail(server: &str, error: &dyn std::fmt::Display) -> CommandError {
    CommandError::Fatal(format!("mcp server {}: {}", quote(server), plain(error)))
}

/// An error's text, redacted (it never holds a token, but a server's words may echo one).
fn plain(error: &dyn std::fmt::Display) -> String {
    odek_contract::redaction::redact(&error.to_string()).into_owned()
}
