//! Bodies both ways: reading a request body under a size cap and a deadline
//! ([`read_request_body`]), splitting it into JSON-RPC messages ([`parse_messages`]), and the
//! one response body type ([`ResponseBody`]: bytes, or an SSE stream).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use serde_json::value::RawValue;

use super::event_stream::EventBody;
use crate::jsonrpc::{self, Message};

/// What the buffer for a request body starts at, however large a `Content-Length` claims.
const INITIAL_BODY_CAPACITY: usize = 64 * 1024;

/// Why a request body was not read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// It is longer than the cap; reading stopped at the first byte past it.
    TooLarge,
    /// It did not arrive before the deadline.
    TimedOut,
    /// The connection failed while it was read.
    Broken,
}

/// Reads a whole request body of at most `max_bytes` within `deadline`. A declared
/// `Content-Length` above the cap fails before anything is read, and a body that turns out
/// longer fails at its first byte past the cap: no more than `max_bytes` is ever buffered.
pub(crate) async fn read_request_body(
    mut body: Incoming,
    max_bytes: usize,
    deadline: Duration,
) -> Result<Vec<u8>, BodyError> {
    let declared = body.size_hint().exact();
    if declared.is_some_and(|length| length > max_bytes as u64) {
        return Err(BodyError::TooLarge);
    }
    let capacity = declared.map_or(INITIAL_BODY_CAPACITY, |length| length as usize).min(INITIAL_BODY_CAPACITY);
    let read = async {
        let mut bytes = Vec::with_capacity(capacity);
        while let Some(frame) = std::future::poll_fn(|context| Pin::new(&mut body).poll_frame(context)).await {
            let frame = frame.map_err(|_| BodyError::Broken)?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > max_bytes {
                    return Err(BodyError::TooLarge);
                }
                bytes.extend_from_slice(&data);
            }
        }
        Ok(bytes)
    };
    tokio::time::timeout(deadline, read).await.unwrap_or(Err(BodyError::TimedOut))
}

/// The messages of a POST body: one JSON-RPC message, or a batch (a non-empty array).
pub(crate) struct Messages {
    pub(crate) messages: Vec<Result<Message, serde_json::Error>>,
    pub(crate) batch: bool,
}

/// Why a body holds no messages.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ParseError {
    NotJson,
    EmptyBatch,
}

/// Splits a body into messages, each classified exactly as a stdio line is
/// (`jsonrpc::parse_message`).
pub(crate) fn parse_messages(body: &[u8]) -> Result<Messages, ParseError> {
    let first = body.iter().find(|byte| !byte.is_ascii_whitespace());
    if first != Some(&b'[') {
        let message = jsonrpc::parse_message(body).map_err(|_| ParseError::NotJson)?;
        return Ok(Messages { messages: vec![Ok(message)], batch: false });
    }
    let members: Vec<&RawValue> = serde_json::from_slice(body).map_err(|_| ParseError::NotJson)?;
    if members.is_empty() {
        return Err(ParseError::EmptyBatch);
    }
    let messages = members.into_iter().map(|member| jsonrpc::parse_message(member.get().as_bytes())).collect();
    Ok(Messages { messages, batch: true })
}

/// Every response's body.
pub(crate) enum ResponseBody {
    /// Sent whole, with its `Content-Length`.
    Bytes(Option<Bytes>),
    /// An SSE stream.
    Events(Box<EventBody>),
}

impl ResponseBody {
    pub(crate) fn empty() -> Self {
        Self::Bytes(None)
    }
}

impl From<Vec<u8>> for ResponseBody {
    fn from(bytes: Vec<u8>) -> Self {
        Self::Bytes(Some(Bytes::from(bytes)))
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Self::Bytes(bytes) => Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes)))),
            Self::Events(events) => Pin::new(events.as_mut()).poll_frame(context),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Bytes(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Bytes(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |bytes| bytes.len() as u64)),
            Self::Events(_) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_messages_batches_and_what_is_not_a_body() {
        let single = parse_messages(br#" {"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        assert!(!single.batch);
        assert!(matches!(single.messages[..], [Ok(Message::Request { .. })]));

        let batch =
            parse_messages(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},7]"#).unwrap();
        assert!(batch.batch);
        assert!(matches!(
            batch.messages[..],
            [Ok(Message::Request { .. }), Ok(Message::Notification { .. }), Ok(Message::Invalid { id: None })]
        ));

        assert_eq!(parse_messages(b"[]").err(), Some(ParseError::EmptyBatch));
        assert_eq!(parse_messages(b"{\"id\":").err(), Some(ParseError::NotJson));
        assert_eq!(parse_messages(b"[1,").err(), Some(ParseError::NotJson));
        assert_eq!(parse_messages(b"").err(), Some(ParseError::NotJson));
    }
}
