//! The bounded line reader against a model of its contract, under both policies, for any
//! limit and any way the stream is cut into reads.
//!
//! Input: `[limit, policy, read sizes…, 0xFF, stream bytes…]`.

#![no_main]

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use libfuzzer_sys::fuzz_target;
use odek_fuzz::{PART_SEPARATOR, run_ready};
use odek_mcp::bounded_lines::{BoundedLineReader, Line, LineError, Overflow};
use tokio::io::{AsyncRead, ReadBuf};

/// Hands out `stream` in reads of the given sizes (cycled), never more than asked for.
struct Chopped<'a> {
    stream: &'a [u8],
    sizes: Vec<usize>,
    turn: usize,
}

impl AsyncRead for Chopped<'_> {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let size = self.sizes[self.turn % self.sizes.len()];
        self.turn += 1;
        let take = size.min(buf.remaining()).min(self.stream.len());
        let (head, rest) = self.stream.split_at(take);
        buf.put_slice(head);
        self.stream = rest;
        Poll::Ready(Ok(()))
    }
}

#[derive(Debug, PartialEq)]
enum Item {
    Line(Line),
    TooLong,
}

/// What the reader must return, derived from the documented guarantees only.
fn model(stream: &[u8], limit: usize, overflow: Overflow) -> Vec<Item> {
    let limit = limit.max(1);
    let mut items = Vec::new();
    let mut pieces: Vec<&[u8]> = stream.split(|byte| *byte == b'\n').collect();
    // The piece after the last newline is an unterminated tail; an empty one is no line.
    if pieces.last().is_some_and(|tail| tail.is_empty()) {
        pieces.pop();
    }
    for piece in pieces {
        match overflow {
            Overflow::Fail if piece.len() + 1 > limit => {
                items.push(Item::TooLong);
                return items;
            }
            Overflow::Fail => items.push(Item::Line(Line { bytes: piece.to_vec(), truncated: false })),
            Overflow::Truncate => {
                let keep = piece.len().min(limit);
                items.push(Item::Line(Line { bytes: piece[..keep].to_vec(), truncated: piece.len() > limit }));
            }
        }
    }
    items
}

fuzz_target!(|data: &[u8]| {
    let Some(split) = data.iter().position(|byte| *byte == PART_SEPARATOR) else { return };
    let (header, stream) = (&data[..split], &data[split + 1..]);
    let [limit, policy, sizes @ ..] = header else { return };
    // Small limits exercise the edges; 0 is clamped to 1 by the reader.
    let limit = usize::from(*limit) * if policy & 0x80 != 0 { 257 } else { 1 };
    let overflow = if policy & 1 == 0 { Overflow::Fail } else { Overflow::Truncate };
    let mut sizes: Vec<usize> = sizes.iter().map(|size| usize::from(*size) + 1).collect();
    if sizes.is_empty() {
        sizes.push(usize::MAX);
    }
    let expected = model(stream, limit, overflow);

    let mut reader = BoundedLineReader::new(Chopped { stream, sizes, turn: 0 }, limit, overflow);
    let mut got = Vec::new();
    loop {
        match run_ready(reader.next_line()) {
            Ok(Some(line)) => {
                assert!(!line.bytes.contains(&b'\n'), "a line contains a newline");
                got.push(Item::Line(line));
            }
            Ok(None) => break,
            Err(LineError::TooLong { limit: reported }) => {
                assert_eq!(reported, limit.max(1));
                got.push(Item::TooLong);
                break;
            }
            Err(LineError::Io(err)) => panic!("io error from an in-memory stream: {err}"),
        }
        assert!(got.len() <= expected.len(), "more lines than the stream holds: {got:?} vs {expected:?}");
    }
    assert_eq!(got, expected);
});
