//! The raw Rust echo server every client of the benchmark talks to: a minimal, synchronous MCP
//! server with blocking std I/O and one flush per message, so the server never is the
//! bottleneck of a round trip. By default it speaks stdio; with `--http ADDR` it serves
//! Streamable HTTP instead (`http.rs`), answering the same messages the same way.
//!
//! It answers `initialize` (echoing the client's protocol version), `ping`, `tools/list` (two
//! tools) and `tools/call`:
//! - `echo {text}` returns `{"content":[{"type":"text","text":<text>}]}`, the text copied
//!   verbatim from the request line;
//! - `big_line {bytes, newline_every, event_stream}` streams one response line of exactly
//!   `bytes` bytes (newline included) whose single text item fills the rest of the line with
//!   `x`, or, with `newline_every: n`, with lines of `n - 1` `x` each ended by an escaped newline
//!   (`\n` on the wire), the shape of real file contents. It is written in fixed chunks and
//!   never allocated whole; a reader that stops reading makes the write fail and the server
//!   exit (over HTTP: that connection end). Over HTTP the line is the JSON body, or with
//!   `event_stream: true` the `data` of one SSE event.
//!
//! Notifications and unparsable lines are ignored; other requests get `-32601`. The stdio server
//! exits at EOF on stdin or at the first write error. Start at [`answer`], which both transports
//! call for each message.

mod http;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Bytes per write of a `big_line` body (64 KiB, one pipe buffer).
const BIG_LINE_CHUNK_BYTES: usize = 64 * 1024;
/// Capacity of the stdin and stdout buffers (64 KiB).
const IO_BUFFER_BYTES: usize = 64 * 1024;
/// The protocol version answered when the client names none.
const DEFAULT_PROTOCOL_VERSION: &str = "\"2025-06-18\"";

const TOOLS_LIST_RESULT: &str = concat!(
    r#"{"tools":["#,
    r#"{"name":"echo","description":"Returns its text argument unchanged.","#,
    r#""inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},"#,
    r#"{"name":"big_line","description":"Returns one text item that makes the response line exactly `bytes` bytes long.","#,
    r#""inputSchema":{"type":"object","properties":{"bytes":{"type":"integer","minimum":0},"#,
    r#""newline_every":{"type":"integer","minimum":0},"event_stream":{"type":"boolean"}},"required":["bytes"]}}"#,
    r#"]}"#
);

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Arguments<'a>>,
    #[serde(borrow, default, rename = "protocolVersion")]
    protocol_version: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct Arguments<'a> {
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(default)]
    newline_every: Option<u64>,
    #[serde(default)]
    event_stream: Option<bool>,
}

/// What answering one message left to do.
enum Reply {
    /// Nothing to send: a notification or a response.
    Nothing,
    /// Not a JSON-RPC message (stdio ignores it; HTTP answers 400).
    Unparsable,
    /// The answer was written; `initialize` tells the handshake's answer apart.
    Written { initialize: bool },
    /// A `big_line` call, whose answer the transport streams itself.
    BigLine(BigLine),
}

/// The response of a `big_line` call, described but not yet written.
struct BigLine {
    /// `{"jsonrpc":"2.0","id":…,"result":{"content":[{"type":"text","text":"`.
    head: String,
    /// Bytes of text between the head and [`BIG_LINE_TAIL`].
    text_bytes: u64,
    newline_every: usize,
    /// Over HTTP: send it as one SSE event instead of a JSON body.
    event_stream: bool,
}

/// What closes a `big_line` response, newline included.
const BIG_LINE_TAIL: &str = "\"}]}}\n";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let served = match args.as_slice() {
        [] => serve(),
        [flag, address] if flag == "--http" => http::serve(address),
        _ => {
            let _ = writeln!(io::stderr(), "usage: odek-bench-echo-server [--http ADDR]");
            return ExitCode::from(2);
        }
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        // A client that went away mid-response is the normal end of the memory scenarios.
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(io::stderr(), "odek-bench-echo-server: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Reads requests until EOF and answers each one, flushing after every message.
fn serve() -> io::Result<()> {
    // Own file handles on fds 0 and 1: no std line buffering or locking on the hot path.
    let stdin = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    let mut input = BufReader::with_capacity(IO_BUFFER_BYTES, stdin);
    let mut output = BufWriter::with_capacity(IO_BUFFER_BYTES, stdout);
    let mut line = Vec::with_capacity(IO_BUFFER_BYTES);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        match answer(&line, &mut output)? {
            Reply::Nothing | Reply::Unparsable => continue,
            Reply::Written { .. } => {}
            Reply::BigLine(big_line) => big_line.write(&mut output)?,
        }
        output.flush()?;
    }
}

/// Answers one message into `output`, except a `big_line` call, which it only describes.
fn answer(message: &[u8], output: &mut impl Write) -> io::Result<Reply> {
    let Ok(request) = serde_json::from_slice::<Request<'_>>(message) else { return Ok(Reply::Unparsable) };
    let Some(id) = request.id.filter(|id| id.get() != "null") else { return Ok(Reply::Nothing) };
    let params = request.params.unwrap_or_default();
    let method = request.method.as_deref().unwrap_or("");
    match method {
        "initialize" => {
            let version = params.protocol_version.map_or(DEFAULT_PROTOCOL_VERSION, RawValue::get);
            write_result(
                output,
                id,
                &[
                    r#"{"protocolVersion":"#,
                    version,
                    r#","capabilities":{"tools":{}},"serverInfo":{"name":"odek-bench-echo-server","version":"0.1.0"}}"#,
                ],
            )?;
        }
        "ping" => write_result(output, id, &["{}"])?,
        "tools/list" => write_result(output, id, &[TOOLS_LIST_RESULT])?,
        "tools/call" => return call_tool(output, id, &params),
        _ => write_message(
            output,
            &[
                r#"{"jsonrpc":"2.0","id":"#,
                id.get(),
                ",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n",
            ],
        )?,
    }
    Ok(Reply::Written { initialize: method == "initialize" })
}

fn call_tool(output: &mut impl Write, id: &RawValue, params: &Params<'_>) -> io::Result<Reply> {
    let arguments = params.arguments.as_ref();
    match params.name.as_deref().unwrap_or("") {
        "echo" => match arguments.and_then(|arguments| arguments.text).filter(|text| text.get().starts_with('"')) {
            Some(text) => write_result(output, id, &[r#"{"content":[{"type":"text","text":"#, text.get(), "}]}"])?,
            None => write_tool_error(output, id, "echo needs a string argument `text`")?,
        },
        "big_line" => match arguments.and_then(|arguments| arguments.bytes) {
            Some(bytes) => {
                let newline_every = arguments.and_then(|arguments| arguments.newline_every).unwrap_or(0);
                let event_stream = arguments.and_then(|arguments| arguments.event_stream).unwrap_or(false);
                return big_line(output, id, bytes, newline_every, event_stream);
            }
            None => write_tool_error(output, id, "big_line needs an integer argument `bytes`")?,
        },
        _ => write_tool_error(output, id, "unknown tool")?,
    }
    Ok(Reply::Written { initialize: false })
}

/// Describes a response line of exactly `total_bytes` bytes including its newline, or answers
/// with a tool error when the line cannot be that short.
fn big_line(
    output: &mut impl Write,
    id: &RawValue,
    total_bytes: u64,
    newline_every: u64,
    event_stream: bool,
) -> io::Result<Reply> {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":""#, id.get());
    let overhead = (head.len() + BIG_LINE_TAIL.len()) as u64;
    let Some(text_bytes) = total_bytes.checked_sub(overhead) else {
        write_tool_error(output, id, &format!("big_line needs at least {overhead} bytes for this id"))?;
        return Ok(Reply::Written { initialize: false });
    };
    let newline_every = usize::try_from(newline_every).unwrap_or(0);
    Ok(Reply::BigLine(BigLine { head, text_bytes, newline_every, event_stream }))
}

impl BigLine {
    /// The line's size, newline included.
    fn len(&self) -> u64 {
        (self.head.len() + BIG_LINE_TAIL.len()) as u64 + self.text_bytes
    }

    /// Streams the line in chunks. With `newline_every > 1`, every `newline_every`-th character
    /// of the text is a newline.
    fn write(&self, output: &mut impl Write) -> io::Result<()> {
        output.write_all(self.head.as_bytes())?;
        let chunk = text_chunk(self.newline_every);
        let mut remaining = self.text_bytes;
        // Whole chunks only, so an escape is never cut; the last (< 64 KiB) bytes are plain `x`.
        while remaining >= chunk.len() as u64 {
            output.write_all(&chunk)?;
            remaining -= chunk.len() as u64;
        }
        output.write_all(&vec![b'x'; usize::try_from(remaining).unwrap_or(0)])?;
        output.write_all(BIG_LINE_TAIL.as_bytes())
    }
}

/// About 64 KiB of JSON string body: `x` only, or whole periods of `n - 1` `x` and a `\n` escape.
fn text_chunk(newline_every: usize) -> Vec<u8> {
    if newline_every < 2 {
        return vec![b'x'; BIG_LINE_CHUNK_BYTES];
    }
    let mut period = vec![b'x'; newline_every - 1];
    period.extend_from_slice(b"\\n");
    let periods = (BIG_LINE_CHUNK_BYTES / period.len()).max(1);
    period.repeat(periods)
}

fn write_tool_error(output: &mut impl Write, id: &RawValue, message: &str) -> io::Result<()> {
    let message = serde_json::to_string(message).map_err(io::Error::other)?;
    write_result(output, id, &[r#"{"content":[{"type":"text","text":"#, &message, r#"}],"isError":true}"#])
}

fn write_result(output: &mut impl Write, id: &RawValue, result: &[&str]) -> io::Result<()> {
    write_message(output, &[r#"{"jsonrpc":"2.0","id":"#, id.get(), r#","result":"#])?;
    write_message(output, result)?;
    output.write_all(b"}\n")
}

fn write_message(output: &mut impl Write, parts: &[&str]) -> io::Result<()> {
    parts.iter().try_for_each(|part| output.write_all(part.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_copies_the_text_and_initialize_is_told_apart() {
        let mut output = Vec::new();
        let call =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
        assert!(matches!(answer(call, &mut output).unwrap(), Reply::Written { initialize: false }));
        assert_eq!(
            output,
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n"
        );
        let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        assert!(matches!(answer(initialize, &mut Vec::new()).unwrap(), Reply::Written { initialize: true }));
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(matches!(answer(notification, &mut Vec::new()).unwrap(), Reply::Nothing));
        assert!(matches!(answer(b"not json", &mut Vec::new()).unwrap(), Reply::Unparsable));
    }

    #[test]
    fn a_big_line_is_exactly_as_long_as_announced() {
        for (bytes, newline_every) in [(200_000_u64, 0_u64), (200_000, 80), (131_072, 0)] {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"big_line","arguments":{{"bytes":{bytes},"newline_every":{newline_every}}}}}}}"#
            );
            let Reply::BigLine(big_line) = answer(call.as_bytes(), &mut Vec::new()).unwrap() else {
                panic!("no big line for {bytes}");
            };
            let mut line = Vec::new();
            big_line.write(&mut line).unwrap();
            assert_eq!((line.len() as u64, big_line.len()), (bytes, bytes));
            assert!(serde_json::from_slice::<serde_json::Value>(&line).is_ok());
        }
    }
}
