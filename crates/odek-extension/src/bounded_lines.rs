//! An async line reader that never holds more than one bounded line in memory.
//!
//! Entry point: [`BoundedLineReader::next_line`]. The policy at the limit is explicit: a line
//! longer than `max_line_bytes` is consumed and discarded up to its newline and reported as
//! [`Line::TooLong`] with its length, never buffered whole.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Initial buffer size in bytes; the buffer grows only while one line is longer than this.
const INITIAL_CAPACITY: usize = 64 * 1024;

/// One item produced by the reader.
#[derive(Debug, PartialEq)]
pub(crate) enum Line<'a> {
    /// A complete line without its `\n` (the last line at EOF may lack the `\n`).
    Complete(&'a [u8]),
    /// A line longer than the limit was skipped; `bytes` counts it without its `\n`.
    TooLong { bytes: u64 },
}

/// Reads `\n`-terminated lines from a byte stream.
pub(crate) struct BoundedLineReader<R> {
    inner: R,
    buffer: Vec<u8>,
    /// First byte of the line being assembled.
    start: usize,
    /// End of the valid bytes in `buffer`.
    end: usize,
    /// Bytes in `start..scanned` are known to hold no `\n`.
    scanned: usize,
    max_line_bytes: usize,
    eof: bool,
}

impl<R: AsyncRead + Unpin> BoundedLineReader<R> {
    /// A reader that accepts lines of at most `max_line_bytes` bytes (newline excluded).
    pub(crate) fn new(inner: R, max_line_bytes: usize) -> Self {
        Self {
            inner,
            buffer: vec![0; INITIAL_CAPACITY.min(max_line_bytes.saturating_add(1)).max(1)],
            start: 0,
            end: 0,
            scanned: 0,
            max_line_bytes,
            eof: false,
        }
    }

    /// The next line, or `None` at EOF. The returned slice never contains a partial line,
    /// except for a final line that the peer did not terminate before closing the pipe.
    pub(crate) async fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            if let Some(offset) = self.buffer[self.scanned..self.end].iter().position(|&byte| byte == b'\n') {
                let newline = self.scanned + offset;
                let line_start = self.start;
                self.start = newline + 1;
                self.scanned = self.start;
                return Ok(Some(Line::Complete(&self.buffer[line_start..newline])));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let line_start = self.start;
                self.start = self.end;
                return Ok(Some(Line::Complete(&self.buffer[line_start..self.end])));
            }
            if self.end - self.start > self.max_line_bytes {
                let bytes = self.discard_rest_of_line().await?;
                return Ok(Some(Line::TooLong { bytes }));
            }
            self.make_room();
            let read = read_retrying(&mut self.inner, &mut self.buffer[self.end..]).await?;
            if read == 0 {
                self.eof = true;
            }
            self.end += read;
        }
    }

    /// Moves the partial line to the front, or grows the buffer (up to the limit plus one byte,
    /// enough to tell "too long" apart from "exactly at the limit").
    fn make_room(&mut self) {
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.end == self.buffer.len() {
            let ceiling = self.max_line_bytes.saturating_add(1);
            let grown = (self.buffer.len() * 2).clamp(1, ceiling.max(self.buffer.len() + 1));
            self.buffer.resize(grown, 0);
        }
    }

    /// Drops buffered and further bytes up to the next `\n`; returns the dropped line's length.
    async fn discard_rest_of_line(&mut self) -> io::Result<u64> {
        let mut dropped = (self.end - self.start) as u64;
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        loop {
            let read = read_retrying(&mut self.inner, &mut self.buffer).await?;
            if read == 0 {
                self.eof = true;
                return Ok(dropped);
            }
            if let Some(offset) = self.buffer[..read].iter().position(|&byte| byte == b'\n') {
                dropped += offset as u64;
                self.start = offset + 1;
                self.scanned = self.start;
                self.end = read;
                return Ok(dropped);
            }
            dropped += read as u64;
        }
    }
}

async fn read_retrying<R: AsyncRead + Unpin>(reader: &mut R, buffer: &mut [u8]) -> io::Result<usize> {
    loop {
        match reader.read(buffer).await {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out at most `chunk` bytes per read, to exercise lines split across reads.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
    }

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buffer: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            let count = self.chunk.min(buffer.remaining()).min(self.data.len());
            buffer.put_slice(&self.data[..count]);
            self.data = &self.data[count..];
            std::task::Poll::Ready(Ok(()))
        }
    }

    async fn collect(data: &[u8], chunk: usize, max: usize) -> Vec<Result<Vec<u8>, u64>> {
        let mut reader = BoundedLineReader::new(Trickle { data, chunk }, max);
        let mut lines = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            lines.push(match line {
                Line::Complete(bytes) => Ok(bytes.to_vec()),
                Line::TooLong { bytes } => Err(bytes),
            });
        }
        lines
    }

    #[tokio::test]
    async fn splits_lines_across_reads_and_keeps_the_unterminated_tail() {
        for chunk in [1, 2, 3, 7, 1024] {
            assert_eq!(
                collect(b"ab\n\ncde\nf", chunk, 16).await,
                vec![Ok(b"ab".to_vec()), Ok(Vec::new()), Ok(b"cde".to_vec()), Ok(b"f".to_vec())]
            );
        }
    }

    #[tokio::test]
    async fn a_line_at_the_limit_passes_and_one_byte_more_is_skipped() {
        for chunk in [1, 3, 64] {
            assert_eq!(
                collect(b"abcd\nabcde\nxy\n", chunk, 4).await,
                vec![Ok(b"abcd".to_vec()), Err(5), Ok(b"xy".to_vec())]
            );
        }
    }

    #[tokio::test]
    async fn never_grows_past_the_limit_on_a_huge_line() {
        let mut data = vec![b'x'; 1 << 20];
        data.extend_from_slice(b"\nok\n");
        let mut reader = BoundedLineReader::new(Trickle { data: &data, chunk: 4096 }, 1000);
        assert_eq!(reader.next_line().await.unwrap(), Some(Line::TooLong { bytes: 1 << 20 }));
        assert!(reader.buffer.len() <= 1001);
        assert_eq!(reader.next_line().await.unwrap(), Some(Line::Complete(b"ok")));
        assert_eq!(reader.next_line().await.unwrap(), None);
    }
}
