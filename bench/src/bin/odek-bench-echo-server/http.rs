//! `--http ADDR`: the echo server over Streamable HTTP (MCP 2025-03-26), as little of it as the
//! clients under test need, so that the server costs every client the same few microseconds.
//!
//! One endpoint, `/mcp`. `POST` carries one JSON-RPC message: a request is answered with
//! `200 application/json` (the `initialize` answer carries `Mcp-Session-Id`), a notification
//! or a response with `202`, a body that is not JSON-RPC with `400`; a `big_line` call streams
//! its line as the body (`Content-Length` known in advance), or with `event_stream: true` as
//! the `data` of one SSE event. `GET` is `405` (no standalone stream), `DELETE` `204`. The
//! session id is never checked and batches are not supported.
//!
//! HTTP/1.1 with keep-alive and blocking I/O: each connection is served by one thread until the
//! client closes it. Threads are kept and reused (a spare one always waits in `accept`), so a
//! client that opens a connection per call pays for `connect` and `accept`, not for spawning a
//! thread. The server prints `listening http://<ip>:<port>/mcp` once bound and exits at EOF on
//! stdin: the process that started it holds the other end. Start at [`serve`].

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{IO_BUFFER_BYTES, Reply, answer};

/// The endpoint's path.
const MCP_PATH: &str = "/mcp";
/// The session id every `initialize` answer carries.
const SESSION_ID: &str = "odek-bench-echo-session";
/// Longest request head (request line and headers) read (64 KiB); longer ones get `431`.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Longest request body read (1 MiB); longer ones get `413`.
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Most connections served at once (one thread each); later ones wait in the listen backlog.
const MAX_THREADS: usize = 256;
/// What precedes the line of a `big_line` answer sent as an SSE event, and what follows it
/// (the line's own newline ends the `data` line, this one the event).
const EVENT_HEAD: &str = "event: message\ndata: ";
const EVENT_TAIL: &str = "\n";

/// Binds `address`, prints where it listens and serves until stdin reaches EOF.
pub fn serve(address: &str) -> io::Result<()> {
    let listener = TcpListener::bind(address)?;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "listening http://{}{MCP_PATH}", listener.local_addr()?)?;
    stdout.flush()?;
    drop(stdout);
    let pool = Arc::new(Pool { listener, threads: AtomicUsize::new(0), idle: AtomicUsize::new(0) });
    pool.add_thread()?;
    io::copy(&mut io::stdin().lock(), &mut io::sink())?;
    Ok(())
}

/// The listener and the threads that take turns accepting from it.
struct Pool {
    listener: TcpListener,
    threads: AtomicUsize,
    /// Threads waiting in `accept`.
    idle: AtomicUsize,
}

impl Pool {
    fn add_thread(self: &Arc<Self>) -> io::Result<()> {
        if self.threads.fetch_add(1, Ordering::AcqRel) >= MAX_THREADS {
            self.threads.fetch_sub(1, Ordering::AcqRel);
            return Ok(());
        }
        self.idle.fetch_add(1, Ordering::AcqRel);
        let pool = Arc::clone(self);
        std::thread::Builder::new().name("connection".to_owned()).spawn(move || pool.accept_loop())?;
        Ok(())
    }

    /// Accepts a connection and serves it to its end, again and again; whenever this thread was
    /// the last one waiting in `accept`, it first starts another.
    fn accept_loop(self: Arc<Self>) {
        loop {
            let accepted = self.listener.accept();
            if self.idle.fetch_sub(1, Ordering::AcqRel) == 1 && self.add_thread().is_err() {
                eprintln!("odek-bench-echo-server: cannot start another connection thread");
            }
            if let Ok((stream, _)) = accepted {
                // A connection's end (the client closed it, or stopped reading) is no error here.
                let _ = serve_connection(stream);
            }
            self.idle.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// One request's head, as far as this server looks at it.
struct Head {
    method: String,
    path: String,
    content_length: usize,
    /// `Transfer-Encoding` other than `identity`: a body this server cannot read.
    encoded_body: bool,
    close: bool,
}

/// Requests on one connection, answered in order until the client closes it.
fn serve_connection(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut input = BufReader::with_capacity(IO_BUFFER_BYTES, stream.try_clone()?);
    let mut output = BufWriter::with_capacity(IO_BUFFER_BYTES, stream);
    let mut line = Vec::with_capacity(1024);
    let mut body = Vec::with_capacity(1024);
    let mut answer_body = Vec::with_capacity(1024);
    loop {
        let head = match read_head(&mut input, &mut line)? {
            None => return Ok(()),
            Some(Err(status)) => return respond_empty(&mut output, status, true),
            Some(Ok(head)) => head,
        };
        if head.encoded_body {
            return respond_empty(&mut output, "501 Not Implemented", true);
        }
        if head.content_length > MAX_BODY_BYTES {
            return respond_empty(&mut output, "413 Content Too Large", true);
        }
        body.resize(head.content_length, 0);
        input.read_exact(&mut body)?;
        if head.path.split('?').next() != Some(MCP_PATH) {
            respond_empty(&mut output, "404 Not Found", head.close)?;
        } else {
            match head.method.as_str() {
                "POST" => post(&mut output, &body, &mut answer_body, head.close)?,
                "DELETE" => respond_empty(&mut output, "204 No Content", head.close)?,
                _ => {
                    write_head(&mut output, "405 Method Not Allowed", None, 0, head.close, &["allow: POST, DELETE"])?;
                    output.flush()?;
                }
            }
        }
        if head.close {
            return Ok(());
        }
    }
}

/// Reads a request head: `None` at a clean end of the connection, `Some(Err(status))` for a head
/// this server refuses.
fn read_head(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Option<Result<Head, &'static str>>> {
    let mut head =
        Head { method: String::new(), path: String::new(), content_length: 0, encoded_body: false, close: false };
    let mut read = 0;
    let mut first = true;
    loop {
        line.clear();
        let bytes = input.by_ref().take((MAX_HEAD_BYTES - read + 1) as u64).read_until(b'\n', line)?;
        if bytes == 0 && first {
            return Ok(None);
        }
        read += bytes;
        if read > MAX_HEAD_BYTES || !line.ends_with(b"\n") {
            return Ok(Some(Err("431 Request Header Fields Too Large")));
        }
        let text = String::from_utf8_lossy(line.trim_ascii_end());
        if first {
            let mut parts = text.split(' ');
            let (Some(method), Some(path), Some(_version)) = (parts.next(), parts.next(), parts.next()) else {
                return Ok(Some(Err("400 Bad Request")));
            };
            head.method = method.to_owned();
            head.path = path.to_owned();
            first = false;
            continue;
        }
        if text.is_empty() {
            return Ok(Some(Ok(head)));
        }
        let Some((name, value)) = text.split_once(':') else { return Ok(Some(Err("400 Bad Request"))) };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let Ok(length) = value.parse() else { return Ok(Some(Err("400 Bad Request"))) };
            head.content_length = length;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            head.encoded_body = !value.eq_ignore_ascii_case("identity");
        } else if name.eq_ignore_ascii_case("connection") {
            head.close = value.eq_ignore_ascii_case("close");
        }
    }
}

/// A POSTed message and its answer.
fn post(output: &mut BufWriter<TcpStream>, body: &[u8], answer_body: &mut Vec<u8>, close: bool) -> io::Result<()> {
    answer_body.clear();
    match answer(body, answer_body)? {
        Reply::Nothing => respond_empty(output, "202 Accepted", close),
        Reply::Unparsable => respond_empty(output, "400 Bad Request", close),
        Reply::Written { initialize } => {
            let session = format!("mcp-session-id: {SESSION_ID}");
            let extra: &[&str] = if initialize { &[&session] } else { &[] };
            write_head(output, "200 OK", Some("application/json"), answer_body.len() as u64, close, extra)?;
            output.write_all(answer_body)?;
            output.flush()
        }
        Reply::BigLine(big_line) if big_line.event_stream => {
            let length = (EVENT_HEAD.len() + EVENT_TAIL.len()) as u64 + big_line.len();
            write_head(output, "200 OK", Some("text/event-stream"), length, close, &["cache-control: no-cache"])?;
            output.write_all(EVENT_HEAD.as_bytes())?;
            big_line.write(output)?;
            output.write_all(EVENT_TAIL.as_bytes())?;
            output.flush()
        }
        Reply::BigLine(big_line) => {
            write_head(output, "200 OK", Some("application/json"), big_line.len(), close, &[])?;
            big_line.write(output)?;
            output.flush()
        }
    }
}

fn respond_empty(output: &mut impl Write, status: &str, close: bool) -> io::Result<()> {
    write_head(output, status, None, 0, close, &[])?;
    output.flush()
}

fn write_head(
    output: &mut impl Write,
    status: &str,
    content_type: Option<&str>,
    content_length: u64,
    close: bool,
    extra: &[&str],
) -> io::Result<()> {
    write!(output, "HTTP/1.1 {status}\r\ncontent-length: {content_length}\r\n")?;
    if let Some(content_type) = content_type {
        write!(output, "content-type: {content_type}\r\n")?;
    }
    if close {
        output.write_all(b"connection: close\r\n")?;
    }
    for header in extra {
        write!(output, "{header}\r\n")?;
    }
    output.write_all(b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head_of(request: &[u8]) -> Option<Result<Head, &'static str>> {
        read_head(&mut &request[..], &mut Vec::new()).unwrap()
    }

    #[test]
    fn a_request_head_is_read_up_to_the_blank_line() {
        let request =
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{\"body\":1}\r\n";
        let head = head_of(request).unwrap().unwrap();
        assert_eq!((head.method.as_str(), head.path.as_str()), ("POST", "/mcp"));
        assert_eq!(head.content_length, 12);
        assert!(head.close && !head.encoded_body);
        assert!(head_of(b"").is_none(), "a closed connection is no request");
    }

    #[test]
    fn oversized_or_malformed_heads_are_refused() {
        let mut long = b"GET /mcp HTTP/1.1\r\nx: ".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES));
        long.extend_from_slice(b"\r\n\r\n");
        assert_eq!(head_of(&long).unwrap().err(), Some("431 Request Header Fields Too Large"));
        assert_eq!(head_of(b"GET\r\n\r\n").unwrap().err(), Some("400 Bad Request"));
        let chunked = head_of(b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap().unwrap();
        assert!(chunked.encoded_body);
    }
}
