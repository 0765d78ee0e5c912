//! The child side of one measurement: `odek-bench probe` runs one client once, in a fresh
//! process the parent pinned, and prints one JSON line ([`ProbeReport`]). Rust clients run
//! in-process on a tokio current-thread runtime; the SDK clients run as this process's only
//! reaped child so their peak RSS can be read after they are reaped. Over HTTP the probe first
//! starts the server (`http_server`) and hands the client its URL. Start at [`run`].

use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::clients::{ClientKind, Transport};
use crate::http_server::HttpServer;
use crate::usage::Timed;

/// Arguments of one probe (internal: written by the parent).
#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[arg(long)]
    pub client: ClientKind,
    #[arg(long)]
    pub mode: ProbeMode,
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,
    /// Throughput: timed calls.
    #[arg(long, default_value_t = 0)]
    pub calls: u64,
    /// Throughput: untimed calls before the timed ones.
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Memory: the size of the response line the server sends, newline included.
    #[arg(long, default_value_t = 0)]
    pub line_bytes: u64,
    /// Memory: every n-th character of the response text is a newline (0: none).
    #[arg(long, default_value_t = 0)]
    pub newline_every: u64,
    /// Memory over HTTP: the response is one SSE event instead of a JSON body.
    #[arg(long)]
    pub event_stream: bool,
    /// Memory: the client's response-line cap; absent means the client's default.
    #[arg(long)]
    pub max_response_bytes: Option<u64>,
    /// Memory: how long to wait for the call before giving up.
    #[arg(long, default_value_t = 20)]
    pub timeout_secs: u64,
    /// The server command line.
    #[arg(last = true, required = true)]
    pub server: Vec<String>,
}

/// Where a client finds the server.
#[derive(Debug, Clone)]
pub enum Target {
    /// The command the client spawns and talks to over stdio.
    Stdio(Vec<String>),
    /// The Streamable HTTP endpoint of the server the probe started.
    Http(String),
}

impl Target {
    /// The stdio command; an HTTP target is an error for a client without an HTTP row.
    pub fn command(&self) -> anyhow::Result<&[String]> {
        match self {
            Target::Stdio(command) => Ok(command),
            Target::Http(_) => anyhow::bail!("this client has no HTTP row"),
        }
    }

    /// The HTTP endpoint; a stdio target is an error for a client without a stdio row.
    pub fn url(&self) -> anyhow::Result<&str> {
        match self {
            Target::Http(url) => Ok(url),
            Target::Stdio(_) => anyhow::bail!("this client has no stdio row"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeMode {
    Throughput,
    Memory,
}

/// The one line a probe prints. The SDK peer scripts print the same shapes (without
/// `peak_rss_bytes`, which the probe adds).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProbeReport {
    Throughput {
        calls: u64,
        seconds: f64,
        /// User + system CPU time of the client process during the timed calls.
        cpu_seconds: f64,
        /// Over HTTP: user + system CPU time of the server over the whole probe (handshake,
        /// warm-up and timed calls).
        #[serde(default)]
        server_cpu_seconds: Option<f64>,
    },
    Memory {
        outcome: Outcome,
        elapsed_ms: f64,
        detail: String,
        #[serde(default)]
        peak_rss_bytes: Option<u64>,
    },
}

/// How a memory-scenario call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The call returned a result.
    Ok,
    /// The call failed with an error.
    Error,
    /// No answer before the scenario's timeout.
    Timeout,
    /// The client process died without reporting.
    Crashed,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "result",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::Crashed => "crashed",
        }
    }
}

/// The `big_line` call of a memory scenario.
#[derive(Debug, Clone, Copy)]
pub struct BigLine {
    /// The response line's size, newline included.
    pub bytes: u64,
    /// Every n-th character of the text is a newline (an escape on the wire); 0 for none.
    pub newline_every: u64,
    /// Over HTTP: the server sends the line as one SSE event instead of a JSON body.
    pub event_stream: bool,
}

impl BigLine {
    /// The tool arguments.
    pub fn arguments(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut arguments = serde_json::Map::new();
        arguments.insert("bytes".to_owned(), self.bytes.into());
        if self.newline_every > 0 {
            arguments.insert("newline_every".to_owned(), self.newline_every.into());
        }
        if self.event_stream {
            arguments.insert("event_stream".to_owned(), true.into());
        }
        arguments
    }
}

/// A memory-scenario call as the Rust clients return it (before peak RSS is read).
#[derive(Debug, Clone)]
pub struct MemoryCall {
    pub outcome: Outcome,
    pub elapsed: Duration,
    pub detail: String,
}

pub fn run(args: ProbeArgs) -> anyhow::Result<()> {
    let report = match args.transport {
        Transport::Stdio => measure(&args, &Target::Stdio(args.server.clone()))?,
        Transport::Http => {
            let server = HttpServer::start(&args.server)?;
            let report = measure(&args, &Target::Http(server.url().to_owned()));
            let server_cpu = server.cpu_time();
            server.stop();
            match report? {
                ProbeReport::Throughput { calls, seconds, cpu_seconds, .. } => ProbeReport::Throughput {
                    calls,
                    seconds,
                    cpu_seconds,
                    server_cpu_seconds: Some(server_cpu?.as_secs_f64()),
                },
                memory @ ProbeReport::Memory { .. } => memory,
            }
        }
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

fn measure(args: &ProbeArgs, target: &Target) -> anyhow::Result<ProbeReport> {
    if args.client.is_rust() { run_rust_client(args, target) } else { crate::sdk_peers::probe(args, target) }
}

fn run_rust_client(args: &ProbeArgs, target: &Target) -> anyhow::Result<ProbeReport> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("building the tokio runtime")?;
    let report = match args.mode {
        ProbeMode::Throughput => {
            let timed = runtime.block_on(throughput(args, target))?;
            ProbeReport::Throughput {
                calls: timed.calls,
                seconds: timed.elapsed.as_secs_f64(),
                cpu_seconds: timed.cpu.as_secs_f64(),
                server_cpu_seconds: None,
            }
        }
        ProbeMode::Memory => {
            let call = runtime.block_on(memory(args, target))?;
            ProbeReport::Memory {
                outcome: call.outcome,
                elapsed_ms: call.elapsed.as_secs_f64() * 1000.0,
                detail: call.detail,
                peak_rss_bytes: Some(crate::usage::own_peak_bytes()?),
            }
        }
    };
    // Whatever a client left running (a server still streaming) must not outlive the report.
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(report)
}

/// The call loop runs in a spawned task, as an embedder's would: woken by the client's reader
/// task it is simply the next task in the run queue, while a `block_on` future that is woken
/// makes the current-thread scheduler poll the I/O driver once more (an `epoll_wait(0)` per call).
async fn throughput(args: &ProbeArgs, target: &Target) -> anyhow::Result<Timed> {
    let (client, target, calls, warmup) = (args.client, target.clone(), args.calls, args.warmup);
    let calls = tokio::spawn(async move {
        match client {
            ClientKind::OdekMcp => crate::odek_client::throughput(&target, calls, warmup).await,
            ClientKind::RawLine => crate::raw_line_client::throughput(target.command()?, calls, warmup).await,
            ClientKind::RawHttp => crate::raw_http_client::throughput(target.url()?, calls, warmup).await,
            #[cfg(feature = "peers")]
            ClientKind::Rmcp | ClientKind::RmcpPooled => {
                crate::rmcp_client::throughput(client, &target, calls, warmup).await
            }
            other => anyhow::bail!("{other} cannot run in-process in this build"),
        }
    });
    calls.await.context("the call loop task failed")?
}

async fn memory(args: &ProbeArgs, target: &Target) -> anyhow::Result<MemoryCall> {
    let timeout = Duration::from_secs(args.timeout_secs);
    let line = BigLine { bytes: args.line_bytes, newline_every: args.newline_every, event_stream: args.event_stream };
    match args.client {
        ClientKind::OdekMcp => crate::odek_client::memory(target, line, args.max_response_bytes, timeout).await,
        #[cfg(feature = "peers")]
        ClientKind::Rmcp | ClientKind::RmcpPooled => {
            crate::rmcp_client::memory(args.client, target, line, args.max_response_bytes, timeout).await
        }
        other => anyhow::bail!("{other} has no memory scenario in this build"),
    }
}
