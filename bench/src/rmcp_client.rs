//! The rmcp rows (feature `peers`): rmcp's client as its documentation shows it, `().serve(...)`
//! over `TokioChildProcess`, calling `call_tool`. For the large-line scenario the transport is
//! built by hand (`AsyncRwTransport` over the same child's pipes) so its line cap can be raised to
//! the scenario's 64 MiB; the child-process transport only has rmcp's default (16 MiB).
//!
//! Over HTTP, `rmcp` is `StreamableHttpClientTransport::from_config` (what `from_uri` builds:
//! rmcp's default reqwest client, which keeps no idle connection, so every POST opens one), and
//! `rmcp-pooled` the same transport over a reqwest client with reqwest's default pool, which
//! keeps the connection between calls as odek-mcp's and the SDK's clients do.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::{StreamableHttpClient, StreamableHttpClientTransportConfig};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use tokio::process::{Child, Command};

use crate::clients::ClientKind;
use crate::probe::{BigLine, MemoryCall, Outcome, Target};
use crate::usage::{EchoOnce, Timed, timed_calls};

/// How long closing the client may take after a measurement (10 s).
const CLOSE_DEADLINE: Duration = Duration::from_secs(10);

type Client = RunningService<RoleClient, ()>;

/// `calls` sequential echo calls after `warmup` untimed ones.
pub async fn throughput(kind: ClientKind, target: &Target, calls: u64, warmup: u64) -> anyhow::Result<Timed> {
    let client = match target {
        Target::Stdio(server) => ().serve(TokioChildProcess::new(command(server)?)?).await?,
        Target::Http(url) => ().serve(http_transport(kind, url, None)?).await?,
    };
    let mut arguments = serde_json::Map::new();
    arguments.insert("text".to_owned(), "hello".into());
    let params = CallToolRequestParams::new("echo").with_arguments(arguments);
    let timed = timed_calls(&mut EchoCaller { client: &client, params }, calls, warmup).await?;
    close(client).await;
    Ok(timed)
}

/// The client and the parameters every throughput call is made with.
struct EchoCaller<'a> {
    client: &'a Client,
    params: CallToolRequestParams,
}

impl EchoOnce for EchoCaller<'_> {
    async fn echo_once(&mut self) -> anyhow::Result<()> {
        let result = self.client.call_tool(self.params.clone()).await?;
        let text = result.content.first().and_then(|item| item.as_text()).map(|text| text.text.as_str());
        ensure!(text == Some("hello"), "unexpected echo result {text:?}");
        Ok(())
    }
}

/// One `big_line` call; `max_response_bytes` raises rmcp's line cap (over HTTP: its JSON body
/// and SSE event caps), absent keeps its default.
pub async fn memory(
    kind: ClientKind,
    target: &Target,
    line: BigLine,
    max_response_bytes: Option<u64>,
    timeout: Duration,
) -> anyhow::Result<MemoryCall> {
    // Holds the hand-spawned child (killed on drop) when the transport is built by hand.
    let mut own_child: Option<Child> = None;
    let client = match (target, max_response_bytes) {
        (Target::Http(url), cap) => ().serve(http_transport(kind, url, cap)?).await?,
        (Target::Stdio(server), None) => ().serve(TokioChildProcess::new(command(server)?)?).await?,
        (Target::Stdio(server), Some(cap)) => {
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

/// rmcp's Streamable HTTP transport to `url` for the `rmcp` or the `rmcp-pooled` row, with
/// `cap` as its JSON body and SSE event limits when given.
fn http_transport(
    kind: ClientKind,
    url: &str,
    cap: Option<u64>,
) -> anyhow::Result<StreamableHttpClientTransport<impl StreamableHttpClient>> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(cap) = cap {
        let cap = usize::try_from(cap).context("response cap")?;
        config = config.max_json_response_size(cap).max_sse_event_size(cap);
    }
    Ok(match kind {
        ClientKind::RmcpPooled => StreamableHttpClientTransport::with_client(
            default_client_of(StreamableHttpClientTransport::from_config),
            config,
        ),
        _ => StreamableHttpClientTransport::from_config(config),
    })
}

/// A default-built client of the type `from_config` uses (reqwest's, pooled). rmcp does not
/// re-export reqwest, and the bench takes its type from rmcp's signature rather than depending
/// on a second reqwest major version itself.
fn default_client_of<C: StreamableHttpClient + Default>(
    _from_config: fn(StreamableHttpClientTransportConfig) -> StreamableHttpClientTransport<C>,
) -> C {
    C::default()
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
