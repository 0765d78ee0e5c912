//! `odek-bench`: odek-mcp's full client pipeline measured side by side with its peers (a raw
//! tokio line client, rmcp, the TypeScript SDK, the Python SDK) against one raw Rust echo server,
//! `odek-bench-echo-server`, over stdio or (`--transport http`) Streamable HTTP on 127.0.0.1.
//! It owns the measurement harness only; it never changes a client.
//!
//! Every measurement runs in a fresh child process, `odek-bench probe`, pinned to one core with
//! `taskset` while the server it spawns (the client's child over stdio, the probe's over HTTP)
//! is pinned to another; the parent repeats, takes medians and prints markdown tables. Start at [`throughput::run`] (sequential `tools/call` round trips)
//! and [`memory::run`] (the oversized and large response-line scenarios); [`probe::run`] is the
//! child side.

mod child;
mod clients;
mod http_server;
mod memory;
mod odek_client;
mod pinning;
mod probe;
mod quiet_hub;
mod raw_http_client;
mod raw_line_client;
mod report;
#[cfg(feature = "peers")]
mod rmcp_client;
mod sdk_peers;
mod throughput;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::clients::{ClientKind, Transport};
use crate::pinning::Setup;

#[derive(Parser)]
#[command(name = "odek-bench", version, about = "odek-mcp against rmcp and the MCP SDK clients, side by side")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The throughput table, then the memory table.
    All {
        #[command(flatten)]
        setup: SetupArgs,
        #[command(flatten)]
        throughput: throughput::ThroughputOptions,
        #[command(flatten)]
        memory: memory::MemoryOptions,
    },
    /// Sequential `tools/call` round trips per client: median calls/s over repeated runs.
    Throughput {
        #[command(flatten)]
        setup: SetupArgs,
        #[command(flatten)]
        throughput: throughput::ThroughputOptions,
    },
    /// The oversized (1 GiB) and large (50 MB) response-line scenarios (over HTTP: the 1 GiB
    /// response as a JSON body and as one SSE event): time, outcome, peak RSS.
    Memory {
        #[command(flatten)]
        setup: SetupArgs,
        #[command(flatten)]
        memory: memory::MemoryOptions,
    },
    /// One measurement of one client, run by the parent as a pinned child process; prints one
    /// JSON line.
    #[command(hide = true)]
    Probe(probe::ProbeArgs),
}

/// Where the server is and how processes are pinned.
#[derive(Args)]
struct SetupArgs {
    /// How the clients reach the server: stdio (the server is each client's child) or Streamable
    /// HTTP (the server is started with `--http 127.0.0.1:0` and prints where it listens).
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// Clients to run, comma-separated (default: every client of the transport).
    #[arg(long, value_delimiter = ',')]
    clients: Vec<ClientKind>,
    /// The echo server binary (default: `odek-bench-echo-server` next to this binary). Over
    /// HTTP any server taking `--http ADDR` and printing `listening <url>` will do, such as
    /// `odek-fixture-server` (throughput only: it has no `big_line`).
    #[arg(long)]
    server: Option<PathBuf>,
    /// Run without `taskset` pinning.
    #[arg(long)]
    no_pin: bool,
    /// CPU the client process is pinned to.
    #[arg(long, default_value_t = 0)]
    client_cpu: usize,
    /// CPU the echo server is pinned to (may equal --client-cpu: the shared-core layout).
    #[arg(long, default_value_t = 1)]
    server_cpu: usize,
}

impl SetupArgs {
    fn resolve(&self) -> anyhow::Result<Setup> {
        Setup::new(
            self.transport,
            self.server.clone(),
            self.clients.clone(),
            !self.no_pin,
            self.client_cpu,
            self.server_cpu,
        )
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("odek-bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::All { setup, throughput, memory } => {
            let setup = setup.resolve()?;
            println!("{}", report::environment(&setup));
            println!("{}", throughput::run(&setup, &throughput)?);
            println!("{}", memory::run(&setup, &memory)?);
        }
        Command::Throughput { setup, throughput } => {
            let setup = setup.resolve()?;
            println!("{}", report::environment(&setup));
            println!("{}", throughput::run(&setup, &throughput)?);
        }
        Command::Memory { setup, memory } => {
            let setup = setup.resolve()?;
            println!("{}", report::environment(&setup));
            println!("{}", memory::run(&setup, &memory)?);
        }
        Command::Probe(args) => probe::run(args)?,
    }
    Ok(())
}
