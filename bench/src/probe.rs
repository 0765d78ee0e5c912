//! The child side of one measurement: `odek-bench probe` runs one client once, in a fresh
//! process the parent pinned, and prints one JSON line ([`ProbeReport`]). Rust clients run
//! in-process on a tokio current-thread runtime; the SDK clients run as this process's only
//! child so their peak RSS can be read after they are reaped. Start at [`run`].

use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::clients::ClientKind;
use crate::usage::Timed;

/// Arguments of one probe (internal: written by the parent).
#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[arg(long)]
    pub client: ClientKind,
    #[arg(long)]
    pub mode: ProbeMode,
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
}

impl BigLine {
    /// The tool arguments.
    pub fn arguments(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut arguments = serde_json::Map::new();
        arguments.insert("bytes".to_owned(), self.bytes.into());
        if self.newline_every > 0 {
            arguments.insert("newline_every".to_owned(), self.newline_every.into());
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
    let report = if args.client.is_rust() { run_rust_client(&args)? } else { crate::sdk_peers::probe(&args)? };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

fn run_rust_client(args: &ProbeArgs) -> anyhow::Result<ProbeReport> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("building the tokio runtime")?;
    let report = match args.mode {
        ProbeMode::Throughput => {
            let timed = runtime.block_on(throughput(args))?;
            ProbeReport::Throughput {
                calls: timed.calls,
                seconds: timed.elapsed.as_secs_f64(),
                cpu_seconds: timed.cpu.as_secs_f64(),
            }
        }
        ProbeMode::Memory => {
            let call = runtime.block_on(memory(args))?;
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
async fn throughput(args: &ProbeArgs) -> anyhow::Result<Timed> {
    let (client, server, calls, warmup) = (args.client, args.server.clone(), args.calls, args.warmup);
    let calls = tokio::spawn(async move {
        match client {
            ClientKind::OdekMcp => crate::odek_client::throughput(&server, calls, warmup).await,
            ClientKind::RawLine => crate::raw_line_client::throughput(&server, calls, warmup).await,
            #[cfg(feature = "peers")]
            ClientKind::Rmcp => crate::rmcp_client::throughput(&server, calls, warmup).await,
            other => anyhow::bail!("{other} cannot run in-process in this build"),
        }
    });
    calls.await.context("the call loop task failed")?
}

async fn memory(args: &ProbeArgs) -> anyhow::Result<MemoryCall> {
    let timeout = Duration::from_secs(args.timeout_secs);
    let line = BigLine { bytes: args.line_bytes, newline_every: args.newline_every };
    match args.client {
        ClientKind::OdekMcp => crate::odek_client::memory(&args.server, line, args.max_response_bytes, timeout).await,
        #[cfg(feature = "peers")]
        ClientKind::Rmcp => crate::rmcp_client::memory(&args.server, line, args.max_response_bytes, timeout).await,
        other => anyhow::bail!("{other} has no memory scenario in this build"),
    }
}
