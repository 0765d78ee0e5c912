//! Server-sent events decoded incrementally from arbitrary byte chunks, with a bounded buffer.
//! It owns only the framing (lines, `data:` fields, blank-line dispatch); what an event means is
//! the caller's business. Start at [`SseDecoder::push`].
//!
//! Lines end in `\n` or `\r\n`. `event:`, `id:`, `retry:` and comment lines are ignored. The
//! `data:` lines of one event are joined with `\n`, as the SSE format says.

/// Default cap on one line and on one event's data: 4 MiB (bytes).
pub(crate) const DEFAULT_MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// Why the stream cannot be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A line or an event's data grew past the cap without ending.
    TooLong { max_bytes: usize },
    /// A line is not UTF-8.
    NotUtf8,
}

impl std::fmt::Display for SseError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::TooLong { max_bytes } => write!(formatter, "stream event longer than {max_bytes} bytes"),
            SseError::NotUtf8 => formatter.write_str("stream line is not UTF-8"),
        }
    }
}

/// Decodes SSE framing. Guarantee: the buffered partial line and the pending event data never
/// exceed `max_event_bytes` each; past that [`SseDecoder::push`] fails instead of growing.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    partial_line: Vec<u8>,
    pending_data: Option<String>,
    max_event_bytes: usize,
}

impl SseDecoder {
    pub(crate) fn new(max_event_bytes: usize) -> SseDecoder {
        SseDecoder { partial_line: Vec::new(), pending_data: None, max_event_bytes }
    }

    /// Feeds the next bytes; appends the data of every event completed by them to `events`.
    pub(crate) fn push(&mut self, mut bytes: &[u8], events: &mut Vec<String>) -> Result<(), SseError> {
        while let Some(end) = bytes.iter().position(|&byte| byte == b'\n') {
            let (line_part, rest) = bytes.split_at(end);
            bytes = &rest[1..];
            if self.partial_line.len() + line_part.len() > self.max_event_bytes {
                return Err(SseError::TooLong { max_bytes: self.max_event_bytes });
            }
            self.partial_line.extend_from_slice(line_part);
            let line = std::mem::take(&mut self.partial_line);
            self.take_line(&line, events)?;
        }
        if self.partial_line.len() + bytes.len() > self.max_event_bytes {
            return Err(SseError::TooLong { max_bytes: self.max_event_bytes });
        }
        self.partial_line.extend_from_slice(bytes);
        Ok(())
    }

    /// The stream ended: a last line without its newline and an event without its closing
    /// blank line are still delivered.
    pub(crate) fn finish(&mut self, events: &mut Vec<String>) -> Result<(), SseError> {
        if !self.partial_line.is_empty() {
            let line = std::mem::take(&mut self.partial_line);
            self.take_line(&line, events)?;
        }
        events.extend(self.pending_data.take());
        Ok(())
    }

    fn take_line(&mut self, line: &[u8], events: &mut Vec<String>) -> Result<(), SseError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            events.extend(self.pending_data.take());
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
        let Some(value) = line.strip_prefix("data:") else {
            return Ok(());
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match &mut self.pending_data {
            Some(data) => {
                if data.len() + 1 + value.len() > self.max_event_bytes {
                    return Err(SseError::TooLong { max_bytes: self.max_event_bytes });
                }
                data.push('\n');
                data.push_str(value);
            }
            None => self.pending_data = Some(value.to_owned()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> Result<Vec<String>, SseError> {
        let mut decoder = SseDecoder::new(64);
        let mut events = Vec::new();
        for chunk in chunks {
            decoder.push(chunk, &mut events)?;
        }
        decoder.finish(&mut events)?;
        Ok(events)
    }

    #[test]
    fn events_split_across_chunks_are_joined() {
        let events = decode(&[b"data: {\"a\"", b":1}\r\n\r\n: comment\nevent: x\ndata: [DONE]\n\n"]).unwrap();
        assert_eq!(events, vec!["{\"a\":1}".to_owned(), "[DONE]".to_owned()]);
    }

    #[test]
    fn multi_line_data_and_unterminated_last_event() {
        let events = decode(&[b"data: one\ndata: two\n\ndata: tail"]).unwrap();
        assert_eq!(events, vec!["one\ntwo".to_owned(), "tail".to_owned()]);
    }

    #[test]
    fn endless_line_is_refused_not_buffered() {
        let long = vec![b'x'; 65];
        assert_eq!(decode(&[b"data: ", &long]), Err(SseError::TooLong { max_bytes: 64 }));
        let many: Vec<&[u8]> = vec![b"data: 0123456789\n"; 8];
        assert_eq!(decode(&many), Err(SseError::TooLong { max_bytes: 64 }));
    }
}
