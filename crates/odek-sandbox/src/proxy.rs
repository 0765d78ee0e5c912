//! The allow-list proxy: an HTTP proxy on 127.0.0.1 that odek runs outside the sandbox for a
//! confined command whose allow-list names hosts (a kernel cannot filter by name). The command
//! is pointed at it (`HTTP(S)_PROXY`) and the supervisor lets it reach nothing else. `CONNECT
//! host:port` and absolute-form `GET http://host/…` are served when `host:port` is on the list;
//! anything else is a 403 and a recorded [`Denial`]. The name is resolved here, and an answer in
//! link-local space (or loopback, unless loopback is open) is refused. Every read has a deadline
//! and every buffer a bound. Start at [`Proxy::start`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::denials::{Denial, DenialLog};
use crate::policy::{Host, HostPort};

/// Longest request head read (16 KiB).
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Longest wait for a request head, a name lookup, or a connection to the destination.
const STEP_DEADLINE: Duration = Duration::from_secs(10);
/// Connections served at once; more are closed at once.
const MAX_CONNECTIONS: usize = 64;

/// A running proxy; stopped when dropped.
#[derive(Debug)]
pub(crate) struct Proxy {
    address: SocketAddr,
    task: JoinHandle<()>,
}

struct Rules {
    allow: Vec<HostPort>,
    loopback: bool,
}

impl Proxy {
    /// Listens on 127.0.0.1 (a port the kernel picks) within the current tokio runtime,
    /// recording its refusals in `denials`.
    pub(crate) fn start(allow: Vec<HostPort>, loopback: bool, denials: Arc<DenialLog>) -> std::io::Result<Proxy> {
        let runtime = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let rules = Arc::new(Rules { allow, loopback });
        let task = runtime.spawn(async move {
            let Ok(listener) = TcpListener::from_std(listener) else { return };
            serve(listener, rules, denials).await;
        });
        Ok(Proxy { address, task })
    }

    /// Where it listens.
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: TcpListener, rules: Arc<Rules>, denials: Arc<DenialLog>) {
    let active = Arc::new(AtomicUsize::new(0));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else { continue };
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let (rules, denials, active) = (Arc::clone(&rules), Arc::clone(&denials), Arc::clone(&active));
        connections.spawn(async move {
            serve_one(client, &rules, &denials).await;
            active.fetch_sub(1, Ordering::AcqRel);
        });
        while connections.try_join_next().is_some() {}
    }
}

/// One client connection: its request head, the decision, then bytes both ways.
async fn serve_one(mut client: TcpStream, rules: &Rules, denials: &DenialLog) {
    let Ok(Ok(head)) = tokio::time::timeout(STEP_DEADLINE, read_head(&mut client)).await else { return };
    let Some(request) = parse_request(&head.bytes[..head.end]) else {
        let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").await;
        return;
    };
    let target = format!("{}:{}", request.host, request.port);
    if !allowed(&rules.allow, &request.host, request.port) {
        refuse(&mut client, denials, &target, "not on the allow-list").await;
        return;
    }
    let Some(mut upstream) = connect_upstream(&request.host, request.port, rules.loopback).await else {
        refuse(&mut client, denials, &target, "its address is not reachable from the sandbox").await;
        return;
    };
    let sent = match &request.kind {
        Kind::Connect => client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await,
        Kind::Forward { head: rewritten } => {
            let mut first = rewritten.clone();
            first.extend_from_slice(&head.bytes[head.end..]);
            upstream.write_all(&first).await
        }
    };
    if sent.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    }
}

async fn refuse(client: &mut TcpStream, denials: &DenialLog, target: &str, why: &str) {
    denials.record(Denial {
        operation: "connect",
        target: target.to_owned(),
        reason: format!("{why}, through the proxy"),
    });
    let body = format!("odek sandbox: {target} is refused: {why}\n");
    let answer = format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(answer.as_bytes()).await;
}

/// A request head and what was read past it.
struct Head {
    bytes: Vec<u8>,
    /// Where the head ends (after its blank line).
    end: usize,
}

async fn read_head(client: &mut TcpStream) -> std::io::Result<Head> {
    let mut bytes = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 4096];
    loop {
        let read = client.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let searched_from = bytes.len().saturating_sub(3);
        bytes.extend_from_slice(&chunk[..read]);
        if let Some(at) = bytes[searched_from..].windows(4).position(|window| window == b"\r\n\r\n") {
            return Ok(Head { end: searched_from + at + 4, bytes });
        }
        if bytes.len() > MAX_HEAD_BYTES {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Connect,
    /// The head to send the destination: origin-form target, hop-by-hop proxy headers dropped,
    /// `Connection: close` (one request per connection, so a second request cannot name
    /// another host).
    Forward {
        head: Vec<u8>,
    },
}

#[derive(Debug, PartialEq, Eq)]
struct Request {
    host: String,
    port: u16,
    kind: Kind,
}

/// `CONNECT host:port HTTP/1.x` or `METHOD http://host[:port]/path HTTP/1.x` with its headers.
fn parse_request(head: &[u8]) -> Option<Request> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target, version) = (first.next()?, first.next()?, first.next()?);
    if first.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    if method == "CONNECT" {
        let (host, port) = split_host_port(target)?;
        return Some(Request { host, port, kind: Kind::Connect });
    }
    let rest = target.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return None;
    }
    let (host, port) = if authority.contains(':') && !authority.ends_with(']') {
        split_host_port(authority)?
    } else {
        (authority.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase(), 80)
    };
    let mut rewritten = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|line| !line.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if matches!(name.as_str(), "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive") {
            continue;
        }
        rewritten.push_str(line);
        rewritten.push_str("\r\n");
    }
    rewritten.push_str("Connection: close\r\n\r\n");
    Some(Request { host, port, kind: Kind::Forward { head: rewritten.into_bytes() } })
}

/// `host:port` or `[v6]:port`, the host lowercased without a trailing dot.
fn split_host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => rest.split_once("]:")?,
        None => text.rsplit_once(':')?,
    };
    let port: u16 = port.parse().ok().filter(|port| *port != 0)?;
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    (!host.is_empty()).then_some((host, port))
}

/// Whether `host:port` is on the list (a name matches a name; an address matches an address).
fn allowed(list: &[HostPort], host: &str, port: u16) -> bool {
    let ip: Option<IpAddr> = host.parse().ok();
    list.iter().any(|entry| {
        entry.port == port
            && match (&entry.host, ip) {
                (Host::Name(name), None) => name == host,
                (Host::Ip(allowed), Some(ip)) => *allowed == ip,
                _ => false,
            }
    })
}

/// Resolves `host` and connects to the first usable address within the deadline; link-local
/// answers (and loopback ones unless `loopback`) are skipped.
async fn connect_upstream(host: &str, port: u16, loopback: bool) -> Option<TcpStream> {
    let lookup = tokio::time::timeout(STEP_DEADLINE, tokio::net::lookup_host((host, port))).await.ok()?.ok()?;
    for address in lookup {
        if !usable(address.ip(), loopback) {
            continue;
        }
        if let Ok(Ok(stream)) = tokio::time::timeout(STEP_DEADLINE, TcpStream::connect(address)).await {
            return Some(stream);
        }
    }
    None
}

fn usable(ip: IpAddr, loopback: bool) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    };
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    !link_local && (loopback || !ip.is_loopback()) && !ip.is_unspecified()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::parse_allow_host;

    #[test]
    fn connect_and_absolute_form_requests_parse() {
        let connect = parse_request(b"CONNECT API.example.com.:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(connect, Request { host: "api.example.com".into(), port: 443, kind: Kind::Connect });
        let get = parse_request(
            b"GET http://example.com:8080/a?b HTTP/1.1\r\nHost: example.com\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert_eq!((get.host.as_str(), get.port), ("example.com", 8080));
        assert_eq!(
            get.kind,
            Kind::Forward {
                head: b"GET /a?b HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n".to_vec()
            }
        );
        assert_eq!(parse_request(b"GET http://example.com HTTP/1.0\r\n\r\n").unwrap().port, 80);
    }

    #[test]
    fn malformed_requests_are_refused() {
        for head in [
            &b"GET /relative HTTP/1.1\r\n\r\n"[..],
            b"GET https://example.com/ HTTP/1.1\r\n\r\n",
            b"GET http://user@example.com/ HTTP/1.1\r\n\r\n",
            b"CONNECT example.com HTTP/1.1\r\n\r\n",
            b"CONNECT example.com:0 HTTP/1.1\r\n\r\n",
            b"CONNECT example.com:443 SPDY/3\r\n\r\n",
            b"\xff\xfe\r\n\r\n",
        ] {
            assert_eq!(parse_request(head), None, "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn only_listed_host_and_port_pairs_pass_red() {
        let list = vec![parse_allow_host("api.example.com:443").unwrap(), parse_allow_host("10.0.0.5:5432").unwrap()];
        assert!(allowed(&list, "api.example.com", 443));
        assert!(allowed(&list, "10.0.0.5", 5432));
        assert!(!allowed(&list, "api.example.com", 80));
        assert!(!allowed(&list, "evil.example.com", 443));
        assert!(!allowed(&list, "10.0.0.5", 22));
    }

    #[test]
    fn link_local_and_loopback_answers_are_skipped_red() {
        assert!(!usable("169.254.169.254".parse().unwrap(), true));
        assert!(!usable("fe80::1".parse().unwrap(), true));
        assert!(!usable("127.0.0.1".parse().unwrap(), false));
        assert!(!usable("::ffff:127.0.0.1".parse().unwrap(), false));
        assert!(usable("127.0.0.1".parse().unwrap(), true));
        assert!(usable("93.184.216.34".parse().unwrap(), false));
    }
}
