//! `odek serve`: the flags of `odek run` resolved the same way, then the HTTP face
//! (`odek_serve`) over a session host until SIGINT or SIGTERM. stdout stays empty; the address
//! and the token go to stderr.

use std::net::SocketAddr;
use std::sync::Arc;

use odek::config::{ConfigSources, SERVE_MAX_CONCURRENT_RUNS};
use odek::host::HostSettings;
use odek::setup::Setup;
use odek_contract::quoting::quote;
use odek_serve::{AcpConnector, AcpInput, AcpOutput, DEFAULT_MAX_CONCURRENT_RUNS, ServeSettings, Token};

use crate::cli::ServeArgs;
use crate::commands::acp::refuse_run_only_flags;
use crate::commands::run::overrides;
use crate::interrupt::{cancel_on_stop_signals, received_stop_signal};
use crate::outcome::CommandError;

pub async fn run(args: &ServeArgs) -> Result<(), CommandError> {
    refuse_run_only_flags(&args.run, "odek serve")?;
    let addr: SocketAddr = args.addr.parse().map_err(|_| {
        CommandError::Fatal(format!(
            "--addr {}: want an IP address and a port (e.g. 127.0.0.1:7420)",
            quote(&args.addr)
        ))
    })?;
    // The flag, else the operator's `serve.max_concurrent_runs`, else the default.
    let configured = match args.max_concurrent_runs {
        Some(_) => None,
        None => {
            let setup = Setup::load(ConfigSources::from_process()?, &|warning| eprintln!("odek: warning: {warning}"))?;
            setup.loaded.config.serve.max_concurrent_runs
        }
    };
    let max_concurrent_runs = super::max_concurrent_runs(
        args.max_concurrent_runs.as_deref(),
        configured.unwrap_or(DEFAULT_MAX_CONCURRENT_RUNS),
        SERVE_MAX_CONCURRENT_RUNS,
    )?;
    let (token, show_token) = match &args.token_file {
        Some(path) => (Token::from_file(path)?, false),
        None => (Token::generate()?, true),
    };
    let host = HostSettings::from_process(overrides(&args.run.common, Some(&args.run))?)?;
    // `/acp` serves each WebSocket connection with the ACP face, on a host of its own as an
    // `odek acp` process has.
    let acp_host = host.clone();
    let acp: AcpConnector = Arc::new(move |output: AcpOutput, input: AcpInput| {
        let settings = acp_host.clone();
        Box::pin(async move {
            if let Err(error) = odek_acp::serve_on(settings, output, input).await {
                eprintln!("odek serve: /acp: {error}");
            }
        })
    });
    let cwd = std::env::current_dir().map_err(|error| CommandError::Fatal(format!("working directory: {error}")))?;
    let settings = ServeSettings {
        host,
        addr,
        allow_remote: args.allow_remote,
        token,
        show_token,
        max_concurrent_runs,
        cwd,
        open: args.open,
        acp: Some(acp),
    };
    let stop = cancel_on_stop_signals();
    odek_serve::serve(settings, stop).await?;
    match received_stop_signal() {
        Some(signal) => Err(CommandError::Stopped { signal, error: Box::new(CommandError::Reported) }),
        None => Ok(()),
    }
}
