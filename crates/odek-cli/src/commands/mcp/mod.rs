//! `odek mcp`: odek as an MCP server (the odek-extension/v1 contract used outward), for other
//! agents and editors. It answers the revision a client asks for when the SDK speaks it
//! (2025-03-26, the contract's and the default; 2025-06-18; 2025-11-25), else the newest, and over
//! HTTP refuses an `MCP-Protocol-Version` it does not speak with 400. It serves, on the
//! `odek-extension` SDK:
//!
//! - the built-in tools `read_file`, `write_file`, `patch`, `search_files` and `shell`
//!   ([`builtins`]): odek-agent's own implementations with the runtime's tool context — the
//!   danger classes and the non-interactive policy (nothing prompts; what would need approval is
//!   denied with the exact denial text) — confined to the directory `odek mcp` started in;
//! - `run_task` ([`run_task`]): a whole agent run on the runtime's task runs (an `odek subagent`
//!   child process under the sub-agent rules), reported
//!   per iteration as `notifications/progress`, stopped by `notifications/cancelled`, answered
//!   with an `odek.tool-result/v1` envelope whose artifacts are verified `odek.artifact-ref/v1`
//!   refs.
//!
//! Over stdio by default (stdout is the protocol and nothing else; warnings go to stderr), or
//! Streamable HTTP with `--http <addr>`: loopback only unless `--allow-remote`, and a bearer
//! token, printed once on stderr, required on every request. Start at [`run`].
//!
//! Not here: the protocol itself (the SDK's), the tools (odek-agent's), the runs
//! ([`odek::task_runs`]) and the child's run (`odek subagent`'s).

mod builtins;
mod run_task;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use odek::config::CliOverrides;
use odek::task_runs::{TaskRunSettings, TaskRuns};
use odek::{Overrides, Runtime, Subscriber};
use odek_contract::quoting::quote;
use odek_extension::{CancelPolicy, HttpOptions, Server, UnknownTool};
use tokio_util::sync::CancellationToken;

use super::run::load_setup;
use crate::cli::McpArgs;
use crate::interrupt::{cancel_on_stop_signals, received_stop_signal};
use crate::outcome::CommandError;
use crate::terminal::print_warning;

/// Default for `--max-concurrent-runs`: `run_task` calls running at once.
pub const DEFAULT_MAX_CONCURRENT_RUNS: usize = 2;

/// The most `--max-concurrent-runs` may be.
const MAX_CONCURRENT_RUNS: usize = 64;

/// `tools/list` page size: every tool fits one page today; clients that page still work.
const TOOLS_PER_PAGE: usize = 50;

/// How long calls still running when the client leaves may take to answer (runs are stopped
/// first, and a stopped child ends within about two seconds).
const DISCONNECT_GRACE: Duration = Duration::from_secs(5);

/// How long, at exit, runs still stopping are waited for.
const RUNS_STOP_WAIT: Duration = Duration::from_secs(5);

/// Random bytes behind the HTTP bearer token (hex: 64 characters).
const TOKEN_BYTES: usize = 32;

/// What the flags decided, checked before anything starts.
#[derive(Debug, Clone)]
struct Options {
    http: Option<SocketAddr>,
    artifact_root: Option<PathBuf>,
    max_concurrent_runs: usize,
    events_jsonl: Option<String>,
}

impl Options {
    fn from_args(args: &McpArgs) -> Result<Options, CommandError> {
        let max_concurrent_runs = super::max_concurrent_runs(
            args.max_concurrent_runs.as_deref(),
            DEFAULT_MAX_CONCURRENT_RUNS,
            MAX_CONCURRENT_RUNS,
        )?;
        if args.events_jsonl.as_deref() == Some("-") {
            return Err(CommandError::Fatal(
                "--events-jsonl -: stdout carries the MCP protocol; give a file".to_owned(),
            ));
        }
        let http = match &args.http {
            None => None,
            Some(address) => Some(listen_address(address, args.allow_remote)?),
        };
        Ok(Options {
            http,
            artifact_root: args.artifact_root.clone(),
            max_concurrent_runs,
            events_jsonl: args.events_jsonl.clone(),
        })
    }
}

/// `--http <addr>`: `host:port` with an IP address or `localhost`. Anything but loopback is
/// refused unless `--allow-remote`: the server runs shell commands and agent runs.
fn listen_address(address: &str, allow_remote: bool) -> Result<SocketAddr, CommandError> {
    let parsed = address.parse::<SocketAddr>().ok().or_else(|| {
        let (host, port) = address.rsplit_once(':')?;
        let port = port.parse::<u16>().ok()?;
        host.eq_ignore_ascii_case("localhost").then_some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
    });
    let Some(parsed) = parsed else {
        return Err(CommandError::Fatal(format!(
            "--http {}: want host:port with an IP address or localhost (e.g. 127.0.0.1:7300)",
            quote(address)
        )));
    };
    if !parsed.ip().is_loopback() && !allow_remote {
        return Err(CommandError::Fatal(format!(
            "--http {}: not a loopback address; odek mcp serves a shell and agent runs, so it listens on \
             loopback unless --allow-remote is given (every request still needs the bearer token)",
            quote(address)
        )));
    }
    Ok(parsed)
}

/// `odek mcp`: loads the config as `odek run` does, then serves until the client leaves (stdio)
/// or a stop signal (both).
pub async fn run(args: McpArgs) -> Result<(), CommandError> {
    let options = Options::from_args(&args)?;
    let setup = load_setup()?;
    let overrides = Overrides {
        config: CliOverrides {
            model: args.model.clone(),
            provider: args.provider.clone(),
            base_url: args.base_url.clone(),
            ..CliOverrides::default()
        },
        replay: args.replay.clone(),
        ..Overrides::default()
    };
    let runtime = Runtime::new(setup, &overrides, Arc::new(McpFace))?;
    let shutdown = CancellationToken::new();
    let settings = TaskRunSettings {
        artifact_root: options.artifact_root.clone(),
        max_concurrent_runs: options.max_concurrent_runs,
        events_jsonl: options.events_jsonl.clone().map(PathBuf::from),
    };
    let runs =
        TaskRuns::new(&runtime, &settings, shutdown.clone()).map_err(|error| CommandError::Fatal(error.to_string()))?;
    let server = server(&runtime, &runs)?;
    let stop = cancel_on_stop_signals();
    let outcome = match options.http {
        None => serve_stdio(server, &shutdown, &stop).await,
        Some(address) => serve_http(server, address, &stop).await,
    };
    shutdown.cancel();
    runs.wait_stopped(RUNS_STOP_WAIT).await;
    outcome?;
    match received_stop_signal() {
        Some(signal) => Err(CommandError::Stopped { signal, error: Box::new(CommandError::Reported) }),
        None => Ok(()),
    }
}

/// The server: the built-in tools the config allows, then `run_task`.
fn server(runtime: &Runtime, runs: &Arc<TaskRuns>) -> Result<Server, CommandError> {
    let server = Server::new("odek", env!("CARGO_PKG_VERSION"))
        .instructions(
            "odek's tools, confined to the directory odek mcp started in: read_file, write_file, patch, \
             search_files and shell (risky operations are denied, never prompted), and run_task, which runs \
             a whole odek agent on a goal and returns its summary with verified artifact references.",
        )
        .cancel_policy(CancelPolicy::Signal)
        .unknown_tool(UnknownTool::InvalidParams)
        .page_size(TOOLS_PER_PAGE)
        .eof_grace(DISCONNECT_GRACE);
    let server = builtins::add_builtin_tools(server, runtime)
        .map_err(|error| CommandError::Fatal(format!("odek mcp: {error}")))?;
    Ok(run_task::add_run_task(server, runs))
}

async fn serve_stdio(
    server: Server,
    shutdown: &CancellationToken,
    stop: &CancellationToken,
) -> Result<(), CommandError> {
    let server = server.on_disconnect({
        let shutdown = shutdown.clone();
        move || shutdown.cancel()
    });
    tokio::select! {
        served = server.run_stdio() => served.map_err(|error| CommandError::Fatal(format!("odek mcp: {error}"))),
        () = stop.cancelled() => Ok(()),
    }
}

async fn serve_http(server: Server, address: SocketAddr, stop: &CancellationToken) -> Result<(), CommandError> {
    let token = bearer_token()?;
    let options = HttpOptions::new().bearer_token(token.clone());
    let http = server
        .bind_http(address, options)
        .await
        .map_err(|error| CommandError::Fatal(format!("odek mcp: --http {address}: {error}")))?;
    // The token once, on stderr; it is never written anywhere else.
    eprintln!("odek mcp: serving MCP over Streamable HTTP at {}", http.url());
    eprintln!("odek mcp: bearer token (send as \"Authorization: Bearer <token>\"; shown once): {token}");
    stop.cancelled().await;
    http.shutdown().await;
    Ok(())
}

/// A fresh bearer token from the OS's CSPRNG.
fn bearer_token() -> Result<String, CommandError> {
    let mut bytes = [0_u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|error| CommandError::Fatal(format!("odek mcp: no randomness for the bearer token: {error}")))?;
    Ok(hex::encode(bytes))
}

/// The runtime's subscriber for `odek mcp`: warnings on stderr, nothing on stdout (it is the
/// protocol).
struct McpFace;

impl Subscriber for McpFace {
    fn warning(&self, text: &str) {
        print_warning(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_loopback_addresses_need_allow_remote() {
        assert_eq!(listen_address("127.0.0.1:0", false).unwrap().port(), 0);
        assert!(listen_address("[::1]:7300", false).is_ok());
        assert!(listen_address("localhost:7300", false).unwrap().ip().is_loopback());
        let CommandError::Fatal(text) = listen_address("0.0.0.0:7300", false).unwrap_err() else { panic!() };
        assert!(text.starts_with("--http \"0.0.0.0:7300\": not a loopback address;"), "{text}");
        assert!(listen_address("0.0.0.0:7300", true).is_ok());
        assert!(listen_address("example.com:80", true).is_err());
        assert!(listen_address("127.0.0.1", false).is_err());
    }
}
