//! The raw-http row, the HTTP baseline: a hand-written tokio client that keeps one TCP
//! connection to the server and, per call, writes one `POST` with its JSON body and reads one
//! `Content-Length` response, checking it just enough to know it is the answer (status, id and
//! the echoed text). No HTTP library, no JSON decoding, no limits: what is left is the cost of
//! loopback TCP and the runtime, which no real client can go below.

use std::io::Write as _;

use anyhow::{Context, bail, ensure};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::usage::{EchoOnce, Timed, timed_calls};

/// Read buffer of the response stream (64 KiB).
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// Longest response head or body read (1 MiB).
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

struct HttpClient {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    /// `host:port` for the `Host` header, and the request target.
    authority: String,
    path: String,
    session: Option<String>,
    request: Vec<u8>,
    body: Vec<u8>,
    response: Vec<u8>,
    line: String,
    next_id: u64,
}

/// `calls` sequential echo round trips after `warmup` untimed ones.
pub async fn throughput(url: &str, calls: u64, warmup: u64) -> anyhow::Result<Timed> {
    let mut client = HttpClient::connect(url).await?;
    client.handshake().await?;
    timed_calls(&mut client, calls, warmup).await
}

impl EchoOnce for HttpClient {
    fn echo_once(&mut self) -> impl Future<Output = anyhow::Result<()>> + Send {
        self.echo()
    }
}

impl HttpClient {
    async fn connect(url: &str) -> anyhow::Result<HttpClient> {
        let Some(rest) = url.strip_prefix("http://") else { bail!("not an http:// URL: {url}") };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let stream = TcpStream::connect(authority).await.with_context(|| format!("connecting to {authority}"))?;
        stream.set_nodelay(true)?;
        let (reader, writer) = stream.into_split();
        Ok(HttpClient {
            reader: BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            writer,
            authority: authority.to_owned(),
            path: if path.is_empty() { "/".to_owned() } else { path.to_owned() },
            session: None,
            request: Vec::with_capacity(512),
            body: Vec::with_capacity(256),
            response: Vec::with_capacity(256),
            line: String::with_capacity(128),
            next_id: 1,
        })
    }

    async fn handshake(&mut self) -> anyhow::Result<()> {
        let id = self.next_id();
        write!(
            self.body,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"raw-http","version":"0"}}}}}}"#
        )?;
        let status = self.post().await?;
        ensure!(status == 200, "initialize: status {status}");
        self.body.extend_from_slice(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let status = self.post().await?;
        ensure!(status == 202, "notifications/initialized: status {status}");
        Ok(())
    }

    async fn echo(&mut self) -> anyhow::Result<()> {
        let id = self.next_id();
        write!(
            self.body,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
        )?;
        let status = self.post().await?;
        ensure!(status == 200, "tools/call: status {status}");
        let id_member = format!(r#""id":{id},"#);
        ensure!(
            memchr::memmem::find(&self.response, id_member.as_bytes()).is_some()
                && memchr::memmem::find(&self.response, br#""text":"hello""#).is_some(),
            String::from_utf8_lossy(&self.response).into_owned()
        );
        Ok(())
    }

    fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// POSTs `self.body` (then cleared) and reads the response body into `self.response`;
    /// returns the status.
    async fn post(&mut self) -> anyhow::Result<u16> {
        self.request.clear();
        write!(
            self.request,
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
            self.path,
            self.authority,
            self.body.len()
        )?;
        if let Some(session) = &self.session {
            write!(self.request, "mcp-session-id: {session}\r\n")?;
        }
        self.request.extend_from_slice(b"\r\n");
        self.request.extend_from_slice(&self.body);
        self.body.clear();
        self.writer.write_all(&self.request).await?;
        self.read_response().await
    }

    async fn read_response(&mut self) -> anyhow::Result<u16> {
        let mut status = None;
        let mut content_length = 0;
        let mut head_bytes = 0;
        loop {
            self.line.clear();
            let read = self.reader.read_line(&mut self.line).await?;
            ensure!(read > 0, "the server closed the connection");
            head_bytes += read;
            ensure!(head_bytes <= MAX_RESPONSE_BYTES, "response head too long");
            let line = self.line.trim_end();
            if status.is_none() {
                let code = line.split(' ').nth(1).and_then(|code| code.parse::<u16>().ok());
                status = Some(code.with_context(|| format!("bad status line {line:?}"))?);
                continue;
            }
            if line.is_empty() {
                break;
            }
            let Some((name, value)) = line.split_once(':') else { bail!("bad header line {line:?}") };
            if name.eq_ignore_ascii_case("content-length") {
                content_length = value.trim().parse::<usize>().context("content-length")?;
            } else if name.eq_ignore_ascii_case("mcp-session-id") && self.session.is_none() {
                self.session = Some(value.trim().to_owned());
            }
        }
        ensure!(content_length <= MAX_RESPONSE_BYTES, "response body of {content_length} bytes");
        self.response.resize(content_length, 0);
        self.reader.read_exact(&mut self.response).await?;
        status.context("no status line")
    }
}
