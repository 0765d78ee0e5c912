//! A JSON-RPC client over blocking pipes ([`Peer`]), the way an MCP client talks to a server
//! on stdio: the SDK's tests drive an in-process server with it, the fixture server's tests the
//! built binary.
//!
//! Every read has a deadline ([`READ_DEADLINE`]); a test that waits for a line that never comes
//! fails instead of hanging. Lines longer than [`LONG_LINE_BYTES`] are counted, not kept.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// How long any single read may wait.
pub const READ_DEADLINE: Duration = Duration::from_secs(30);

/// Lines longer than this many bytes are reported as [`Line::Long`].
pub const LONG_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line read from the server's stdout.
#[derive(Debug)]
pub enum Line {
    /// A line without its `\n`.
    Text(String),
    /// A long line: its length without the `\n`, and its first and last bytes.
    Long { bytes: u64, head: Vec<u8>, tail: Vec<u8> },
}

/// Spawns a thread that reads `reader` into lines until EOF.
pub fn line_channel<R: Read + Send + 'static>(reader: R) -> Receiver<Line> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::with_capacity(1 << 16, reader);
        loop {
            let mut kept = Vec::new();
            let mut bytes = 0u64;
            let mut tail: Vec<u8> = Vec::new();
            let mut terminated = false;
            while let Ok(buffer) = reader.fill_buf() {
                if buffer.is_empty() {
                    break;
                }
                let (chunk, consumed, done) = match buffer.iter().position(|&byte| byte == b'\n') {
                    Some(end) => (&buffer[..end], end + 1, true),
                    None => (buffer, buffer.len(), false),
                };
                bytes += chunk.len() as u64;
                if kept.len() < LONG_LINE_BYTES {
                    let room = LONG_LINE_BYTES - kept.len();
                    kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                tail.extend_from_slice(chunk);
                if tail.len() > 256 {
                    tail.drain(..tail.len() - 256);
                }
                reader.consume(consumed);
                if done {
                    terminated = true;
                    break;
                }
            }
            if !terminated && bytes == 0 {
                return;
            }
            let line = if bytes as usize > LONG_LINE_BYTES {
                kept.truncate(256);
                Line::Long { bytes, head: kept, tail }
            } else {
                Line::Text(String::from_utf8_lossy(&kept).into_owned())
            };
            if sender.send(line).is_err() || !terminated {
                return;
            }
        }
    });
    receiver
}

/// A JSON-RPC client speaking to a server over pipes.
pub struct Peer {
    input: Option<Box<dyn Write + Send>>,
    lines: Receiver<Line>,
    next_id: i64,
}

impl Peer {
    pub fn new(input: Box<dyn Write + Send>, lines: Receiver<Line>) -> Self {
        Self { input: Some(input), lines, next_id: 1 }
    }

    /// Writes one line (a `\n` is appended).
    pub fn send_raw(&mut self, line: &str) {
        let Some(input) = self.input.as_mut() else { panic!("stdin already closed") };
        let written =
            input.write_all(line.as_bytes()).and_then(|()| input.write_all(b"\n")).and_then(|()| input.flush());
        written.unwrap_or_else(|error| panic!("write to the server: {error}"));
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// Closes the server's stdin.
    pub fn close_input(&mut self) {
        self.input = None;
    }

    /// The next line, or `None` at EOF; panics after [`READ_DEADLINE`].
    pub fn next_line(&self) -> Option<Line> {
        match self.lines.recv_timeout(READ_DEADLINE) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!("no line within {READ_DEADLINE:?}"),
        }
    }

    /// The next line as text; panics on EOF or a long line.
    pub fn next_text(&self) -> String {
        match self.next_line() {
            Some(Line::Text(text)) => text,
            other => panic!("expected a text line, got {other:?}"),
        }
    }

    /// The next line parsed as JSON.
    pub fn recv(&self) -> Value {
        let text = self.next_text();
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("not JSON ({error}): {text:?}"))
    }

    /// Sends a request with the next integer id and returns that id.
    pub fn send_request(&mut self, method: &str, params: Option<Value>) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"jsonrpc":"2.0","id":id,"method":method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.send(&message);
        id
    }

    /// Reads messages until the response with `id`; returns it and everything before it.
    pub fn wait_response(&self, id: i64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let message = self.recv();
            if message.get("method").is_none() && message["id"] == json!(id) {
                return (message, before);
            }
            before.push(message);
        }
    }

    /// Sends a request and returns its response, asserting nothing else came first.
    pub fn request(&mut self, method: &str, params: Option<Value>) -> Value {
        let id = self.send_request(method, params);
        let (response, before) = self.wait_response(id);
        assert!(before.is_empty(), "unexpected messages before the response: {before:?}");
        response
    }

    /// `initialize` + `notifications/initialized`; returns the initialize result.
    pub fn initialize(&mut self) -> Value {
        let response = self.request(
            "initialize",
            Some(json!({"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}})),
        );
        self.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        response["result"].clone()
    }

    /// `tools/call`; returns the whole response.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", Some(json!({"name":tool,"arguments":arguments})))
    }

    /// `tools/call`; returns the text of the first content item, asserting success.
    pub fn call_text(&mut self, tool: &str, arguments: Value) -> String {
        let response = self.call(tool, arguments);
        assert_eq!(response["result"]["isError"], json!(false), "{response}");
        response["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text item: {response}"))
            .to_owned()
    }
}
