//! The odek-mcp row: one server named `echo` validated from a `ServerEntry` with
//! `validate_server` (a `command` over stdio, a `url` over HTTP), started with `McpHub::start`,
//! and called through `McpHub::call` — the full pipeline (catalogue routing, argument encoding,
//! the connection's writer and bounded reader or its POST per message, id routing, result
//! decoding, envelope probe, sanitising and the result cap).

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use odek_mcp::{CallOptions, McpHub, ServerEntry, validate_server};

use crate::probe::{BigLine, MemoryCall, Outcome, Target};
use crate::usage::{EchoOnce, Timed, timed_calls};

/// The configured server name; its tools are exposed as `echo__<tool>`.
const SERVER_NAME: &str = "echo";
/// The model's argument string of every throughput call.
const ECHO_ARGUMENTS: &str = r#"{"text":"hello"}"#;
/// How long shutting the hub down may take after a measurement (10 s).
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

/// `calls` sequential `echo__echo` calls after `warmup` untimed ones.
pub async fn throughput(target: &Target, calls: u64, warmup: u64) -> anyhow::Result<Timed> {
    let hub = start_hub(target, None).await?;
    let options = CallOptions::default();
    let timed = timed_calls(&mut EchoCaller { hub: &hub, options }, calls, warmup).await?;
    shutdown(&hub).await;
    Ok(timed)
}

/// The hub and the options every throughput call is made with.
struct EchoCaller<'a> {
    hub: &'a McpHub,
    options: CallOptions,
}

impl EchoOnce for EchoCaller<'_> {
    async fn echo_once(&mut self) -> anyhow::Result<()> {
        let output = self.hub.call("echo__echo", ECHO_ARGUMENTS, &self.options).await?;
        ensure!(output.text == "hello", "unexpected echo result {:?}", output.text);
        Ok(())
    }
}

/// One `echo__big_line` call under the default cap or `max_response_bytes`.
pub async fn memory(
    target: &Target,
    line: BigLine,
    max_response_bytes: Option<u64>,
    timeout: Duration,
) -> anyhow::Result<MemoryCall> {
    let hub = start_hub(target, max_response_bytes).await?;
    let arguments = serde_json::Value::Object(line.arguments()).to_string();
    let started = Instant::now();
    let result = tokio::time::timeout(timeout, hub.call("echo__big_line", &arguments, &CallOptions::default())).await;
    let elapsed = started.elapsed();
    let (outcome, detail) = match result {
        Ok(Ok(output)) => (
            Outcome::Ok,
            format!(
                "model text of {} chars (result observed: {} chars)",
                output.text.chars().count(),
                output.observed_chars.map_or_else(|| "not cut".to_owned(), |chars| chars.to_string())
            ),
        ),
        Ok(Err(error)) => (Outcome::Error, error.to_string()),
        Err(_) => (Outcome::Timeout, format!("no answer after {} s", timeout.as_secs())),
    };
    shutdown(&hub).await;
    Ok(MemoryCall { outcome, elapsed, detail })
}

async fn start_hub(target: &Target, max_response_bytes: Option<u64>) -> anyhow::Result<McpHub> {
    let mut entry = ServerEntry {
        max_response_bytes: max_response_bytes.map_or(Ok(0), i64::try_from).context("max_response_bytes")?,
        ..ServerEntry::default()
    };
    match target {
        Target::Stdio(server) => {
            let Some((command, args)) = server.split_first() else { bail!("empty server command") };
            entry.command = Some(command.clone());
            entry.args = args.to_vec();
        }
        Target::Http(url) => entry.url = Some(url.clone()),
    }
    let (spec, _warnings) = validate_server(SERVER_NAME, &entry)?;
    Ok(McpHub::start(vec![spec], crate::quiet_hub::options()).await?)
}

async fn shutdown(hub: &McpHub) {
    let _ = tokio::time::timeout(SHUTDOWN_DEADLINE, hub.shutdown()).await;
}
