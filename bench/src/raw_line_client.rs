//! The raw-line row, the baseline: a hand-written tokio client that writes one request line,
//! reads one response line and checks it just enough to know it is the answer (its id and the
//! echoed text). No routing table, no JSON decoding, no limits: what is left is the cost of the
//! pipes and the runtime, which no real client can go below.

use std::io::Write as _;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::usage::{EchoOnce, Timed, timed_calls};

/// Read buffer of the response stream (64 KiB).
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// How long the server may take to exit once its stdin is closed (5 s).
const EXIT_DEADLINE: Duration = Duration::from_secs(5);

struct LineClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    request: Vec<u8>,
    response: Vec<u8>,
    expected_prefix: Vec<u8>,
    next_id: u64,
}

/// `calls` sequential echo round trips after `warmup` untimed ones.
pub async fn throughput(server: &[String], calls: u64, warmup: u64) -> anyhow::Result<Timed> {
    let mut client = LineClient::spawn(server)?;
    client.handshake().await?;
    let timed = timed_calls(&mut client, calls, warmup).await?;
    client.close().await;
    Ok(timed)
}

impl EchoOnce for LineClient {
    fn echo_once(&mut self) -> impl Future<Output = anyhow::Result<()>> + Send {
        self.echo()
    }
}

impl LineClient {
    fn spawn(server: &[String]) -> anyhow::Result<LineClient> {
        let Some((command, args)) = server.split_first() else { bail!("empty server command") };
        let mut child = Command::new(command)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {command}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("server pipes unavailable");
        };
        Ok(LineClient {
            child,
            stdin,
            stdout: BufReader::with_capacity(READ_BUFFER_BYTES, stdout),
            request: Vec::with_capacity(256),
            response: Vec::with_capacity(256),
            expected_prefix: Vec::with_capacity(64),
            next_id: 1,
        })
    }

    async fn handshake(&mut self) -> anyhow::Result<()> {
        self.round_trip(|request, id| {
            write!(
                request,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw-line","version":"0"}}}}}}"#
            )
        })
        .await?;
        self.stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await?;
        Ok(())
    }

    async fn echo(&mut self) -> anyhow::Result<()> {
        self.round_trip(|request, id| {
            write!(
                request,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
            )
        })
        .await?;
        ensure!(
            memchr::memmem::find(&self.response, br#""text":"hello""#).is_some(),
            "unexpected echo response {}",
            String::from_utf8_lossy(&self.response)
        );
        Ok(())
    }

    /// Writes the request `encode` produces for the next id and reads the response line into
    /// `self.response`, checking that it answers that id.
    async fn round_trip(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>, u64) -> std::io::Result<()>,
    ) -> anyhow::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        self.request.clear();
        encode(&mut self.request, id)?;
        self.request.push(b'\n');
        self.stdin.write_all(&self.request).await?;

        self.response.clear();
        if self.stdout.read_until(b'\n', &mut self.response).await? == 0 {
            bail!("server closed stdout");
        }
        self.expected_prefix.clear();
        write!(self.expected_prefix, r#"{{"jsonrpc":"2.0","id":{id},"#)?;
        ensure!(
            self.response.starts_with(&self.expected_prefix),
            "response does not answer id {id}: {}",
            String::from_utf8_lossy(&self.response)
        );
        Ok(())
    }

    /// Closes stdin and reaps the server, killing it if it lingers.
    async fn close(self) {
        let LineClient { mut child, stdin, .. } = self;
        drop(stdin);
        if tokio::time::timeout(EXIT_DEADLINE, child.wait()).await.is_err() {
            let _ = child.kill().await;
        }
    }
}
