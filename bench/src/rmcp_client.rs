//! The rmcp row (feature `peers`): rmcp's client as its documentation shows it, `().serve(...)`
//! over `TokioChildProcess`, calling `call_tool`. For the large-line scenario the transport is
//! built by hand (`AsyncRwTransport` over the same child's pipes) so its line cap can be raised to
//! the scenario's 64 MiB; the child-process transport only has rmcp's default (16 MiB).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ServiceError, ServiceExt};
use tokio::process::{Child, Command};

use crate::probe::{BigLine, MemoryCall, Outcome};
use crate::usage::{Stopwatch, Timed};

/// How long closing the client may take after a measurement (10 s).
const CLOSE_DEADLINE: Duration = Duration::from_secs(10);

type Client = RunningService<RoleClient, ()>;

/// `calls` sequential echo calls after `warmup` untimed ones.
pub async fn throughput(server: &[String], calls: u64, warmup: u64) -> anyhow::Result<Timed> {
    let client = ().serve(TokioChildProcess::new(command(server)?)?).await?;
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".to_owned(), "hello".into());
    let params = CallToolRequestParams::new("echo").with_arguments(arguments);
    for _ in 0..warmup {
        echo_once(&client, &params).await?;
    }
    let stopwatch = Stopwatch::start()?;
    for _ in 0..calls {
        echo_once(&client, &params).await?;
    }
    let timed = stopwatch.stop(calls)?;
    close(client).await;
    Ok(timed)
}

async fn echo_once(client: &Client, params: &CallToolRequestParams) -> anyhow::Result<()> {
    let result = client.call_tool(params.clone()).await?;
    let text = result.content.first().and_then(|item| item.as_text()).map(|text| text.text.as_str());
    ensure!(text == Some("hello"), "unexpected echo result {text:?}");
    Ok(())
}

/// One `big_line` call; `max_response_bytes` raises rmcp's line cap, absent keeps its default.
pub async fn memory(
    server: &[String],
    line: BigLine,
    max_response_bytes: Option<u64>,
    timeout: Duration,
) -> anyhow::Result<MemoryCall> {
    // Holds the hand-spawned child (killed on drop) when the transport is built by hand.
    let mut own_child: Option<Child> = None;
    let client = match max_response_bytes {
        None => ().serve(TokioChildProcess::new(command(server)?)?).await?,
        Some(cap) => {
            let mut child = command(server)?
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .context("spawning the server")?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                bail!("server pipes unavailable");
            };
            own_child = Some(child);
            let transport = AsyncRwTransport::new_client(stdout, stdin)
                .with_max_line_length(usize::try_from(cap).context("line cap")?);
            ().serve(transport).await?
        }
    };
    let params = CallToolRequestParams::new("big_line").with_arguments(line.arguments());

    let started = Instant::now();
    let result = tokio::time::timeout(timeout, client.call_tool(params)).await;
    let elapsed = started.elapsed();
    let (outcome, detail) = describe(result, timeout);
    close(client).await;
    drop(own_child);
    Ok(MemoryCall { outcome, elapsed, detail })
}

fn describe(
    result: Result<Result<CallToolResult, ServiceError>, tokio::time::error::Elapsed>,
    timeout: Duration,
) -> (Outcome, String) {
    match result {
        Ok(Ok(result)) => {
            let chars: usize =
                result.content.iter().filter_map(|item| item.as_text()).map(|text| text.text.chars().count()).sum();
            (Outcome::Ok, format!("text of {chars} chars"))
        }
        Ok(Err(error)) => (Outcome::Error, error.to_string()),
        Err(_) => (Outcome::Timeout, format!("no answer after {} s", timeout.as_secs())),
    }
}

fn command(server: &[String]) -> anyhow::Result<Command> {
    let Some((program, args)) = server.split_first() else { bail!("empty server command") };
    let mut command = Command::new(program);
    command.args(args);
    Ok(command)
}

async fn close(client: Client) {
    let _ = tokio::time::timeout(CLOSE_DEADLINE, client.cancel()).await;
}
