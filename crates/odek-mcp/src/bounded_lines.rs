//! The bounded line reader: splits a byte stream into `\n`-terminated lines without ever
//! holding more than `max_line_bytes` (plus one read chunk) for a single line.
//!
//! Two policies at the limit, fixed at construction: [`Overflow::Fail`] (stdout of an MCP
//! server: the line is rejected and the stream must be abandoned) and [`Overflow::Truncate`]
//! (stderr: keep the head, discard the rest of that line). Start at [`BoundedLineReader::next_line`].

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Bytes requested from the stream per read (64 KiB).
pub(crate) const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What happens when a line does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Return [`LineError::TooLong`]; the reader must not be used afterwards.
    Fail,
    /// Return the first `max_line_bytes` bytes with `truncated: true` and skip to the next line.
    Truncate,
}

/// One line, without its terminating `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub bytes: Vec<u8>,
    /// True when [`Overflow::Truncate`] cut the line.
    pub truncated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The line, including its newline, would exceed the limit.
    #[error("line exceeds {limit} bytes")]
    TooLong { limit: usize },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Reads lines from `inner`. Guarantees: a returned line never contains `\n`; under
/// [`Overflow::Fail`] an accepted line plus its newline fits in `max_line_bytes`; the reader
/// never buffers more than `max_line_bytes + READ_CHUNK_BYTES` bytes.
#[derive(Debug)]
pub struct BoundedLineReader<R> {
    inner: R,
    max_line_bytes: usize,
    overflow: Overflow,
    chunk: Box<[u8]>,
    start: usize,
    end: usize,
    /// The current line's head when it spans more than one chunk.
    partial: Vec<u8>,
    /// Under `Truncate`: the current line was already cut; drop bytes until the next newline.
    discarding: bool,
    eof: bool,
}

impl<R: AsyncRead + Unpin> BoundedLineReader<R> {
    /// `max_line_bytes` counts the terminating newline (so a limit of 10 accepts 9 bytes + `\n`).
    /// Under [`Overflow::Truncate`] it is the number of bytes kept of a long line.
    pub fn new(inner: R, max_line_bytes: usize, overflow: Overflow) -> Self {
        Self {
            inner,
            max_line_bytes: max_line_bytes.max(1),
            overflow,
            chunk: vec![0; READ_CHUNK_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            partial: Vec::new(),
            discarding: false,
            eof: false,
        }
    }

    /// The next line, or `None` at end of stream. A final line without a newline is returned
    /// as a line at end of stream (when it fits).
    pub async fn next_line(&mut self) -> Result<Option<Line>, LineError> {
        loop {
            if let Some(newline) = memchr::memchr(b'\n', &self.chunk[self.start..self.end]) {
                let head = self.start..self.start + newline;
                self.start += newline + 1;
                if self.discarding {
                    self.discarding = false;
                    continue;
                }
                return self.finish_line(head).map(Some);
            }
            let buffered = &self.chunk[self.start..self.end];
            // No newline in the buffer: move it to `partial` (bounded) and read more.
            if !self.discarding && !buffered.is_empty() {
                let room = self.room();
                if buffered.len() > room {
                    match self.overflow {
                        Overflow::Fail => {
                            return Err(LineError::TooLong { limit: self.max_line_bytes });
                        }
                        Overflow::Truncate => {
                            let keep = buffered.len().min(self.truncate_room());
                            self.partial.extend_from_slice(&buffered[..keep]);
                            self.discarding = true;
                            self.start = self.end;
                            let bytes = std::mem::take(&mut self.partial);
                            return Ok(Some(Line { bytes, truncated: true }));
                        }
                    }
                }
                self.partial.extend_from_slice(buffered);
            }
            self.start = 0;
            self.end = 0;
            if self.eof {
                return Ok(self.finish_at_eof());
            }
            let read = self.inner.read(&mut self.chunk).await?;
            if read == 0 {
                self.eof = true;
            }
            self.end = read;
        }
    }

    /// Bytes the current line may still take before its newline no longer fits.
    fn room(&self) -> usize {
        match self.overflow {
            Overflow::Fail => self.max_line_bytes.saturating_sub(1).saturating_sub(self.partial.len()),
            Overflow::Truncate => self.truncate_room(),
        }
    }

    fn truncate_room(&self) -> usize {
        self.max_line_bytes.saturating_sub(self.partial.len())
    }

    fn finish_line(&mut self, head: std::ops::Range<usize>) -> Result<Line, LineError> {
        let head = &self.chunk[head];
        let total = self.partial.len() + head.len();
        if total < self.max_line_bytes {
            let bytes = if self.partial.is_empty() {
                head.to_vec()
            } else {
                let mut bytes = std::mem::take(&mut self.partial);
                bytes.extend_from_slice(head);
                bytes
            };
            return Ok(Line { bytes, truncated: false });
        }
        match self.overflow {
            Overflow::Fail => Err(LineError::TooLong { limit: self.max_line_bytes }),
            Overflow::Truncate => {
                let keep = head.len().min(self.max_line_bytes.saturating_sub(self.partial.len()));
                let mut bytes = std::mem::take(&mut self.partial);
                bytes.extend_from_slice(&head[..keep]);
                Ok(Line { bytes, truncated: total > self.max_line_bytes })
            }
        }
    }

    fn finish_at_eof(&mut self) -> Option<Line> {
        if self.discarding || self.partial.is_empty() {
            self.discarding = false;
            return None;
        }
        Some(Line { bytes: std::mem::take(&mut self.partial), truncated: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], limit: usize, overflow: Overflow) -> Vec<Result<Line, String>> {
        let mut reader = BoundedLineReader::new(input, limit, overflow);
        let mut out = Vec::new();
        loop {
            match reader.next_line().await {
                Ok(Some(line)) => out.push(Ok(line)),
                Ok(None) => break,
                Err(err) => {
                    out.push(Err(err.to_string()));
                    break;
                }
            }
        }
        out
    }

    fn ok(text: &str) -> Result<Line, String> {
        Ok(Line { bytes: text.as_bytes().to_vec(), truncated: false })
    }

    #[tokio::test]
    async fn splits_lines_and_keeps_an_unterminated_tail() {
        assert_eq!(lines(b"a\n\nbc\nd", 100, Overflow::Fail).await, vec![ok("a"), ok(""), ok("bc"), ok("d")]);
    }

    #[tokio::test]
    async fn limit_counts_the_newline() {
        assert_eq!(lines(b"123456789\n", 10, Overflow::Fail).await, vec![ok("123456789")]);
        assert_eq!(lines(b"1234567890\n", 10, Overflow::Fail).await, vec![Err("line exceeds 10 bytes".to_owned())]);
    }

    #[tokio::test]
    async fn long_line_fails_before_its_end_arrives() {
        // A reader that would produce endless bytes without a newline must fail, not grow.
        let endless = tokio::io::repeat(b'x');
        let mut reader = BoundedLineReader::new(endless, 1 << 20, Overflow::Fail);
        let err = reader.next_line().await.unwrap_err();
        assert!(matches!(err, LineError::TooLong { limit } if limit == 1 << 20));
        assert!(reader.partial.len() < (1 << 20));
    }

    #[tokio::test]
    async fn lines_spanning_many_chunks() {
        let mut input = vec![b'y'; 3 * READ_CHUNK_BYTES + 17];
        input.push(b'\n');
        input.extend_from_slice(b"next\n");
        let got = lines(&input, 4 * READ_CHUNK_BYTES, Overflow::Fail).await;
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].as_ref().unwrap().bytes.len(), 3 * READ_CHUNK_BYTES + 17);
        assert_eq!(got[1], ok("next"));
    }

    #[tokio::test]
    async fn truncate_keeps_head_and_skips_rest() {
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'z', 3 * READ_CHUNK_BYTES));
        input.extend_from_slice(b"\nafter\nlong-line-here\n");
        let got = lines(&input, 8, Overflow::Truncate).await;
        assert_eq!(
            got,
            vec![
                ok("short"),
                Ok(Line { bytes: b"zzzzzzzz".to_vec(), truncated: true }),
                ok("after"),
                Ok(Line { bytes: b"long-lin".to_vec(), truncated: true }),
            ]
        );
    }
}
