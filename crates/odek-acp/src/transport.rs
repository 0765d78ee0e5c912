//! The stdio transport of `odek acp`: one JSON-RPC message per line, each line read with a
//! bound ([`MAX_MESSAGE_BYTES`]) instead of the SDK's unbounded reader. An oversized line is
//! skipped to its end and replaced by an `_odek/message_too_large` request carrying the id it
//! began with, so the client gets an error for that request and the connection lives on.

use std::io;
use std::os::fd::AsFd;

use futures_util::{Sink, Stream};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Longest message `odek acp` reads (bytes of one line).
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The method an oversized message is replaced with.
pub const TOO_LARGE_METHOD: &str = "_odek/message_too_large";

/// The lines of `input`, each at most `limit` bytes (without its newline).
pub fn bounded_lines<R>(input: R, limit: usize) -> impl Stream<Item = io::Result<String>> + Send + 'static
where
    R: AsyncRead + Send + Unpin + 'static,
{
    futures_util::stream::unfold(BufReader::new(input), move |mut reader| async move {
        match next_line(&mut reader, limit).await {
            Ok(Some(line)) => Some((Ok(line), reader)),
            Ok(None) => None,
            Err(error) => Some((Err(error), reader)),
        }
    })
}

/// The next line; `None` at the end of input. Blank lines are skipped.
async fn next_line<R: AsyncBufRead + Unpin>(reader: &mut R, limit: usize) -> io::Result<Option<String>> {
    loop {
        let mut line = Vec::new();
        let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        let read = (&mut *reader).take(cap).read_until(b'\n', &mut line).await?;
        if read == 0 {
            return Ok(None);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        } else if line.len() > limit {
            let skipped = skip_to_newline(reader).await?;
            return Ok(Some(too_large(&line, line.len().saturating_add(skipped))));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        return Ok(Some(lenient_initialize(String::from_utf8_lossy(&line).into_owned())));
    }
}

/// Largest `initialize` line looked into by [`lenient_initialize`].
const MAX_INITIALIZE_BYTES: usize = 64 * 1024;

/// \[beyond\] An `initialize` request whose `protocolVersion` is a string of digits (`"1"`, as
/// some clients and linters send it) gets the integer ACP defines, which the SDK insists on;
/// every other line is passed on untouched.
fn lenient_initialize(line: String) -> String {
    if line.len() > MAX_INITIALIZE_BYTES || !line.contains("\"initialize\"") {
        return line;
    }
    let Ok(mut message) = serde_json::from_str::<serde_json::Value>(&line) else { return line };
    if message.get("method").and_then(serde_json::Value::as_str) != Some("initialize") {
        return line;
    }
    let Some(version) = message.pointer_mut("/params/protocolVersion") else { return line };
    match version.as_str().and_then(|text| text.parse::<u16>().ok()) {
        Some(number) => {
            *version = serde_json::Value::from(number);
            message.to_string()
        }
        None => line,
    }
}

/// Reads and drops the rest of a line; the bytes dropped.
async fn skip_to_newline<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<usize> {
    let mut skipped = 0usize;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(skipped);
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(skipped.saturating_add(end));
            }
            None => {
                let length = buffer.len();
                reader.consume(length);
                skipped = skipped.saturating_add(length);
            }
        }
    }
}

/// The request an oversized message becomes: the `id` it began with, when one is found in its
/// first bytes (a number or a short string), else `null` (then nothing can be answered).
fn too_large(start: &[u8], bytes: usize) -> String {
    let id = leading_id(&start[..start.len().min(4096)]).unwrap_or_else(|| "null".to_owned());
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{TOO_LARGE_METHOD}","params":{{"bytes":{bytes}}}}}"#)
}

/// The JSON text of a top-level-looking `"id"` member: digits, or a string of at most 200
/// bytes without escapes.
fn leading_id(start: &[u8]) -> Option<String> {
    let at = start.windows(4).position(|window| window == b"\"id\"")?;
    let rest = &start[at + 4..];
    let rest = &rest[rest.iter().position(|byte| !byte.is_ascii_whitespace())?..];
    let rest = rest.strip_prefix(b":")?;
    let rest = &rest[rest.iter().position(|byte| !byte.is_ascii_whitespace())?..];
    if rest.first() == Some(&b'"') {
        let end = rest[1..].iter().position(|byte| *byte == b'"' || *byte == b'\\')?;
        let text = &rest[..end + 2];
        return (end <= 200 && text.last() == Some(&b'"')).then(|| String::from_utf8_lossy(text).into_owned());
    }
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit() || **byte == b'-').count();
    (1..=20).contains(&digits).then(|| String::from_utf8_lossy(&rest[..digits]).into_owned())
}

/// A sink writing each message as one line to `output` in one write, flushed.
pub fn line_sink<W>(output: W) -> impl Sink<String, Error = io::Error> + Send + 'static
where
    W: AsyncWrite + Send + Unpin + 'static,
{
    futures_util::sink::unfold(output, |mut output, line: String| async move {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        output.write_all(&bytes).await?;
        output.flush().await?;
        Ok::<_, io::Error>(output)
    })
}

/// The process's stdout: a pipe (what an editor gives its agent) is written without a thread
/// hop per write, from a duplicate of the descriptor in non-blocking mode; anything else through
/// tokio's blocking stdout.
pub fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    let pipe = std::io::stdout().as_fd().try_clone_to_owned().and_then(tokio::net::unix::pipe::Sender::from_owned_fd);
    match pipe {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    }
}

/// The process's stdin, as [`stdout`] takes stdout.
pub fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    let pipe = std::io::stdin().as_fd().try_clone_to_owned().and_then(tokio::net::unix::pipe::Receiver::from_owned_fd);
    match pipe {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;

    use super::*;

    async fn lines(input: &'static [u8], limit: usize) -> Vec<String> {
        bounded_lines(input, limit).map(|line| line.unwrap()).collect().await
    }

    #[tokio::test]
    async fn lines_are_split_and_blank_ones_skipped() {
        assert_eq!(lines(b"{\"a\":1}\r\n\n  \n{\"b\":2}", 100).await, vec![r#"{"a":1}"#, r#"{"b":2}"#]);
    }

    #[tokio::test]
    async fn an_oversized_message_becomes_an_error_request_with_its_id_red() {
        let mut input = br#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"x":""#.to_vec();
        input.extend(std::iter::repeat_n(b'a', 500));
        input.extend(b"\"}}\n{\"next\":true}\n");
        let input: &'static [u8] = Box::leak(input.into_boxed_slice());
        let got = lines(input, 100).await;
        assert_eq!(got.len(), 2);
        let replaced: serde_json::Value = serde_json::from_str(&got[0]).unwrap();
        assert_eq!(replaced["id"], 7);
        assert_eq!(replaced["method"], TOO_LARGE_METHOD);
        assert_eq!(replaced["params"]["bytes"], input.len() - "\n{\"next\":true}\n".len());
        assert_eq!(got[1], r#"{"next":true}"#);
    }

    #[test]
    fn a_string_protocol_version_in_initialize_becomes_the_integer() {
        let fixed = lenient_initialize(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1"}}"#.into(),
        );
        let fixed: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(fixed["params"]["protocolVersion"], 1);
        for untouched in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"v1"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"text":"\"initialize\"","protocolVersion":"1"}}"#,
            "{not json \"initialize\"",
        ] {
            assert_eq!(lenient_initialize(untouched.to_owned()), untouched);
        }
    }

    #[test]
    fn ids_are_read_from_the_start_only_when_plain() {
        assert_eq!(leading_id(br#"{"id": "abc","#).as_deref(), Some(r#""abc""#));
        assert_eq!(leading_id(br#"{"id":12,"#).as_deref(), Some("12"));
        assert_eq!(leading_id(br#"{"id":"a\"b"}"#), None);
        assert_eq!(leading_id(br#"{"method":"x"}"#), None);
    }
}
