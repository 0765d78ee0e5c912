//! A tiny HTTP forward proxy on 127.0.0.1 for tests, on plain std threads: it takes plain-HTTP
//! requests in absolute form (`POST http://host:port/path HTTP/1.1`, what a client configured
//! with `HTTP_PROXY` sends), records each ([`ForwardProxy::requests`]) and forwards it to
//! 127.0.0.1 at the port the target names — whatever host the target names, so a test never
//! leaves the machine and a name nothing resolves still arrives — then relays the answer, event
//! streams included, until either side closes. One request per connection: `Connection: close`
//! goes both ways. `CONNECT` (an `https` tunnel) answers 501, a request not in absolute form
//! 400, an upstream that cannot be reached 502.
//!
//! [`ForwardProxy::gateway`] is the same relay in front of one server instead: it takes
//! origin-form requests (`POST /mcp HTTP/1.1`, what a client pointed at the proxy's own url
//! sends), forwards each to that server with every header verbatim (`Host` and `Origin`
//! included) except that the gateway's own headers replace any the client sent under the same
//! names — so a test can let a client that cannot send a bearer token reach a server that needs
//! one, without weakening the server.
//!
//! Start at [`ForwardProxy::start`]. Dropping the proxy shuts every socket down and joins its
//! threads (5 s at most, then leaves stragglers detached).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest request or response head relayed: 64 KiB (bytes).
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// How long a connection to the upstream may take.
const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long dropping the proxy waits for its threads.
const JOIN_DEADLINE: Duration = Duration::from_secs(5);
/// Headers about the hop to the proxy, never forwarded (`Connection: close` replaces them).
const HOP_HEADERS: &[&str] = &["connection", "proxy-connection", "keep-alive", "proxy-authorization"];

/// One request as the proxy received it.
#[derive(Debug, Clone)]
pub struct ProxiedRequest {
    pub method: String,
    /// The request target as sent: `http://host:port/path` for a proxied request.
    pub target: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
}

impl ProxiedRequest {
    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
    }
}

#[derive(Debug)]
pub struct ForwardProxy {
    address: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    shutdown: AtomicBool,
    /// `Some` for a gateway: where every request goes, and what it adds.
    gateway: Option<Gateway>,
}

/// A gateway's one upstream and the headers it sets on every request (names lowercased).
#[derive(Debug)]
struct Gateway {
    upstream_port: u16,
    headers: Vec<(String, String)>,
}

#[derive(Debug, Default)]
struct State {
    requests: Vec<ProxiedRequest>,
    /// Every socket still open, to be shut down when the proxy is dropped.
    sockets: Vec<(u64, TcpStream)>,
    next_socket: u64,
    live_threads: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ForwardProxy {
    /// Listens on 127.0.0.1 at a port the kernel picks.
    pub fn start() -> ForwardProxy {
        Self::listen(Shared::default())
    }

    /// A gateway on 127.0.0.1 in front of the server on 127.0.0.1 at `upstream_port`: every
    /// request, in origin form, goes there with `headers` set (replacing the client's own of
    /// those names) and every other header as the client sent it.
    pub fn gateway(upstream_port: u16, headers: &[(&str, &str)]) -> ForwardProxy {
        let headers = headers.iter().map(|(name, value)| (name.to_ascii_lowercase(), (*value).to_owned())).collect();
        Self::listen(Shared { gateway: Some(Gateway { upstream_port, headers }), ..Shared::default() })
    }

    fn listen(shared: Shared) -> ForwardProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|error| panic!("bind the proxy: {error}"));
        let address = listener.local_addr().unwrap_or_else(|error| panic!("the proxy's address: {error}"));
        let shared = Arc::new(shared);
        let accepting = Arc::clone(&shared);
        let acceptor = std::thread::spawn(move || accept(&listener, &accepting));
        ForwardProxy { address, shared, acceptor: Some(acceptor) }
    }

    /// `http://127.0.0.1:<port>`, for `HTTP_PROXY` and its kin.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<ProxiedRequest> {
        self.shared.lock().requests.clone()
    }
}

impl Drop for ForwardProxy {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        for (_, socket) in &self.shared.lock().sockets {
            let _ = socket.shutdown(Shutdown::Both);
        }
        // Wake the blocking accept so the acceptor sees the flag.
        let _ = TcpStream::connect_timeout(&self.address, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let deadline = Instant::now() + JOIN_DEADLINE;
        let mut state = self.shared.lock();
        while state.live_threads > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
            state = self.shared.changed.wait_timeout(state, left).unwrap_or_else(PoisonError::into_inner).0;
        }
    }
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    for client in listener.incoming() {
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let shared_by_thread = Arc::clone(shared);
        spawn_counted(shared, move || relay(client, &shared_by_thread));
    }
}

/// Runs `work` on a thread counted in `live_threads`, which the drop waits for.
fn spawn_counted(shared: &Arc<Shared>, work: impl FnOnce() + Send + 'static) {
    shared.lock().live_threads += 1;
    let counted = Arc::clone(shared);
    let spawned = std::thread::Builder::new().spawn(move || {
        work();
        counted.lock().live_threads -= 1;
        counted.changed.notify_all();
    });
    if spawned.is_err() {
        shared.lock().live_threads -= 1;
    }
}

/// Keeps a clone of `socket` for the drop to shut down; `None` once the proxy is shutting down.
fn register(shared: &Shared, socket: &TcpStream) -> Option<u64> {
    let clone = socket.try_clone().ok()?;
    let mut state = shared.lock();
    if shared.shutdown.load(Ordering::SeqCst) {
        return None;
    }
    state.next_socket += 1;
    let key = state.next_socket;
    state.sockets.push((key, clone));
    Some(key)
}

fn unregister(shared: &Shared, keys: &[u64]) {
    shared.lock().sockets.retain(|(key, _)| !keys.contains(key));
}

/// One proxied exchange: the request head rewritten to origin form with `Connection: close`,
/// its body copied as it comes, the answer's head given `Connection: close`, its body relayed.
fn relay(client: TcpStream, shared: &Arc<Shared>) {
    let Some(client_key) = register(shared, &client) else { return };
    let Ok(mut to_client) = client.try_clone() else { return unregister(shared, &[client_key]) };
    let mut from_client = BufReader::new(client);
    let Some((request_line, headers)) = read_head(&mut from_client) else {
        return unregister(shared, &[client_key]);
    };
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
    shared.lock().requests.push(ProxiedRequest {
        method: method.clone(),
        target: target.clone(),
        headers: headers.clone(),
    });
    shared.changed.notify_all();
    let destination = match &shared.gateway {
        Some(gateway) => target.starts_with('/').then(|| (gateway.upstream_port, target.clone())),
        None => origin_of(&target),
    };
    let Some((port, path)) = destination.filter(|_| method != "CONNECT") else {
        let status = if method == "CONNECT" { "501 Not Implemented" } else { "400 Bad Request" };
        let _ = write!(to_client, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return unregister(shared, &[client_key]);
    };
    let upstream = TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), UPSTREAM_CONNECT_TIMEOUT);
    let Ok(upstream) = upstream else {
        let _ = to_client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return unregister(shared, &[client_key]);
    };
    let Some(upstream_key) = register(shared, &upstream) else { return unregister(shared, &[client_key]) };
    let keys = [client_key, upstream_key];
    let (Ok(mut to_upstream), Ok(mut from_upstream)) = (upstream.try_clone(), upstream.try_clone()) else {
        return unregister(shared, &keys);
    };
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    let added = shared.gateway.as_ref().map_or(&[][..], |gateway| &gateway.headers[..]);
    let kept: Vec<_> = headers.iter().filter(|(name, _)| !added.iter().any(|(set, _)| set == name)).cloned().collect();
    push_headers(&mut head, &[kept, added.to_vec()].concat());
    if to_upstream.write_all(head.as_bytes()).is_err() {
        return unregister(shared, &keys);
    }
    // The body, and anything else the client sends, until it closes; then both ends go.
    let (client_end, upstream_end) = (to_client.try_clone(), upstream.try_clone());
    spawn_counted(shared, move || {
        let _ = std::io::copy(&mut from_client, &mut to_upstream);
        for socket in [client_end.ok(), upstream_end.ok()].into_iter().flatten() {
            let _ = socket.shutdown(Shutdown::Both);
        }
    });
    let mut from_upstream = BufReader::new(&mut from_upstream);
    if let Some((status_line, headers)) = read_head(&mut from_upstream) {
        let mut head = format!("{status_line}\r\n");
        push_headers(&mut head, &headers);
        if to_client.write_all(head.as_bytes()).is_ok() {
            let _ = std::io::copy(&mut from_upstream, &mut to_client);
        }
    }
    for socket in [&to_client, &upstream] {
        let _ = socket.shutdown(Shutdown::Both);
    }
    unregister(shared, &keys);
}

/// The upstream port and the origin-form path of an absolute `http://` target.
fn origin_of(target: &str) -> Option<(u16, String)> {
    let rest = target.strip_prefix("http://")?;
    let (authority, path) = rest.find('/').map_or((rest, "/"), |slash| (&rest[..slash], &rest[slash..]));
    let port = match authority.rsplit_once(':') {
        Some((_, port)) if !port.ends_with(']') => port.parse().ok()?,
        _ => 80,
    };
    Some((port, path.to_owned()))
}

/// `headers` as header lines, the hop's own left out, then `Connection: close` and the blank line.
fn push_headers(head: &mut String, headers: &[(String, String)]) {
    for (name, value) in headers.iter().filter(|(name, _)| !HOP_HEADERS.contains(&name.as_str())) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
}

/// Reads a head (a first line, then header lines up to a blank one, at most
/// [`MAX_HEAD_BYTES`]): the first line and the headers, names lowercased; `None` at the end of
/// the connection or past the bound.
fn read_head(reader: &mut impl BufRead) -> Option<(String, Vec<(String, String)>)> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let room = MAX_HEAD_BYTES.checked_sub(head.len()).filter(|room| *room > 0)?;
        let read = reader.by_ref().take(room as u64).read_until(b'\n', &mut head).ok()?;
        if read == 0 {
            return None;
        }
        if before > 0 && (head[before..] == *b"\r\n" || head[before..] == *b"\n") {
            break;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let mut lines = head.lines();
    let first = lines.next()?.to_owned();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Some((first, headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_forwarded_to_loopback_at_their_port() {
        assert_eq!(origin_of("http://127.0.0.1:8123/mcp?x=1"), Some((8123, "/mcp?x=1".to_owned())));
        assert_eq!(origin_of("http://mcp.invalid:9/mcp"), Some((9, "/mcp".to_owned())));
        assert_eq!(origin_of("http://example.test"), Some((80, "/".to_owned())));
        assert_eq!(origin_of("http://[::1]/x"), Some((80, "/x".to_owned())));
        assert_eq!(origin_of("/mcp"), None);
        assert_eq!(origin_of("https://example.test/"), None);
    }

    #[test]
    fn a_request_is_recorded_forwarded_in_origin_form_and_its_answer_relayed() {
        let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = upstream.local_addr().unwrap().port();
        let served = std::thread::spawn(move || {
            let (socket, _) = upstream.accept().unwrap();
            let mut reader = BufReader::new(socket.try_clone().unwrap());
            let (line, headers) = read_head(&mut reader).unwrap();
            let mut body = [0; 4];
            reader.read_exact(&mut body).unwrap();
            (&socket).write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok").unwrap();
            (line, headers, body)
        });
        let proxy = ForwardProxy::start();
        let mut client = TcpStream::connect(proxy.address).unwrap();
        let request = format!(
            "POST http://mcp.invalid:{port}/mcp HTTP/1.1\r\nHost: mcp.invalid:{port}\r\nProxy-Connection: keep-alive\r\nContent-Length: 4\r\n\r\nbody"
        );
        client.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nConnection: close\r\n\r\nok");
        let (line, headers, body) = served.join().unwrap();
        assert_eq!(line, "POST /mcp HTTP/1.1");
        assert_eq!(
            headers,
            [
                ("host".to_owned(), format!("mcp.invalid:{port}")),
                ("content-length".to_owned(), "4".to_owned()),
                ("connection".to_owned(), "close".to_owned())
            ]
        );
        assert_eq!(&body, b"body");
        let recorded = proxy.requests();
        assert_eq!((recorded[0].method.as_str(), recorded[0].header("proxy-connection")), ("POST", Some("keep-alive")));
        assert_eq!(recorded[0].target, format!("http://mcp.invalid:{port}/mcp"));
    }

    #[test]
    fn a_gateway_forwards_origin_form_to_its_upstream_with_its_headers_set() {
        let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = upstream.local_addr().unwrap().port();
        let served = std::thread::spawn(move || {
            let (socket, _) = upstream.accept().unwrap();
            let head = read_head(&mut BufReader::new(socket.try_clone().unwrap())).unwrap();
            (&socket).write_all(b"HTTP/1.1 204 No Content\r\n\r\n").unwrap();
            head
        });
        let gateway = ForwardProxy::gateway(port, &[("Authorization", "Bearer t0ken")]);
        let mut client = TcpStream::connect(gateway.address).unwrap();
        let request = "GET /mcp HTTP/1.1\r\nHost: evil.example.com\r\nOrigin: http://evil.example.com\r\nauthorization: Bearer guess\r\n\r\n";
        client.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        let (line, headers) = served.join().unwrap();
        assert_eq!(line, "GET /mcp HTTP/1.1");
        let pair = |name: &str, value: &str| (name.to_owned(), value.to_owned());
        assert_eq!(
            headers,
            [
                pair("host", "evil.example.com"),
                pair("origin", "http://evil.example.com"),
                pair("authorization", "Bearer t0ken"),
                pair("connection", "close")
            ]
        );
        let mut absolute = TcpStream::connect(gateway.address).unwrap();
        absolute.write_all(format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n").as_bytes()).unwrap();
        let mut refused = String::new();
        absolute.read_to_string(&mut refused).unwrap();
        assert!(refused.starts_with("HTTP/1.1 400 Bad Request"), "{refused}");
    }

    #[test]
    fn connect_and_origin_form_are_refused() {
        let proxy = ForwardProxy::start();
        for request in ["CONNECT example.test:443 HTTP/1.1\r\n\r\n", "GET /mcp HTTP/1.1\r\n\r\n"] {
            let mut client = TcpStream::connect(proxy.address).unwrap();
            client.write_all(request.as_bytes()).unwrap();
            let mut answer = String::new();
            client.read_to_string(&mut answer).unwrap();
            let status = if request.starts_with("CONNECT") { "501 Not Implemented" } else { "400 Bad Request" };
            assert_eq!(answer, format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
        }
        assert_eq!(proxy.requests().len(), 2);
    }
}
