//! Server-sent events read incrementally and within a bound (the WHATWG `text/event-stream`
//! format as MCP's Streamable HTTP transport uses it): `data:` lines joined by `\n` into one
//! message, `id:` kept for resumption, comments and unknown fields skipped. Pure; start at
//! [`SseParser::feed`].

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `data:` lines joined by `\n` (never empty: events without data are not dispatched).
    pub data: Vec<u8>,
    /// The `event:` type, `None` for the default (`message`).
    pub kind: Option<String>,
}

/// An event (or a line of one) longer than the bound: the stream must be dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge;

/// The incremental parser. Memory is bounded by `max_event_bytes` (the line being read plus the
/// data gathered for the current event), whatever the stream sends.
#[derive(Debug)]
pub(crate) struct SseParser {
    max_event_bytes: usize,
    line: Vec<u8>,
    data: Vec<u8>,
    kind: Option<String>,
    /// The stream's last event id (it persists across events, as the format says).
    last_event_id: Option<String>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one ends nothing new.
    after_cr: bool,
}

impl SseParser {
    pub(crate) fn new(max_event_bytes: usize) -> SseParser {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            data: Vec::new(),
            kind: None,
            last_event_id: None,
            after_cr: false,
        }
    }

    /// The id of the latest `id:` field seen, for `Last-Event-ID`.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Reads `chunk`, calling `dispatch` for every event it completes.
    pub(crate) fn feed(&mut self, chunk: &[u8], mut dispatch: impl FnMut(SseEvent)) -> Result<(), EventTooLarge> {
        let mut rest = chunk;
        if self.after_cr && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        self.after_cr = false;
        while let Some(at) = rest.iter().position(|&byte| byte == b'\n' || byte == b'\r') {
            self.push_line_bytes(&rest[..at])?;
            let ending = rest[at];
            rest = &rest[at + 1..];
            if ending == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.end_line(&line) {
                dispatch(event);
            }
            // The line's buffer is reused for the next one.
            self.line = line;
            self.line.clear();
        }
        self.push_line_bytes(rest)
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), EventTooLarge> {
        if self.line.len() + self.data.len() + bytes.len() > self.max_event_bytes {
            return Err(EventTooLarge);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// One complete line: a field, a comment, or the blank line that dispatches.
    fn end_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return None;
        }
        let (field, value) = match line.iter().position(|&byte| byte == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => self.kind = Some(String::from_utf8_lossy(value).into_owned()),
            // An id with a NUL is ignored, as the format says.
            b"id" if !value.contains(&0) => self.last_event_id = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let kind = self.kind.take();
        if self.data.is_empty() {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        Some(SseEvent { data, kind: kind.filter(|kind| kind != "message") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(parser: &mut SseParser, chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed(chunk, |event| out.push(event)).unwrap();
        }
        out
    }

    fn data(events: &[SseEvent]) -> Vec<String> {
        events.iter().map(|event| String::from_utf8_lossy(&event.data).into_owned()).collect()
    }

    #[test]
    fn data_lines_join_and_every_line_ending_counts() {
        let mut parser = SseParser::new(1024);
        let got = events(&mut parser, &[b"data: {\"a\":\ndata:1}\n\nid: 7\r\ndata: two\r\n\r", b"\ndata:three\r\r"]);
        assert_eq!(data(&got), ["{\"a\":\n1}", "two", "three"]);
        assert_eq!(parser.last_event_id(), Some("7"));
    }

    #[test]
    fn comments_unknown_fields_and_empty_events_dispatch_nothing() {
        let mut parser = SseParser::new(1024);
        let got = events(
            &mut parser,
            &[b": keep-alive\n\nretry: 10\nfoo: bar\n\nevent: ping\n\nevent: endpoint\ndata: /x\n\n"],
        );
        assert_eq!(got, [SseEvent { data: b"/x".to_vec(), kind: Some("endpoint".into()) }]);
        let got = events(&mut parser, &[b"event: message\ndata: m\n\n"]);
        assert_eq!(got[0].kind, None);
    }

    #[test]
    fn split_anywhere_gives_the_same_events() {
        let stream = b"id: a\ndata: one\n\ndata: t\xc3\xa9\r\ndata: x\r\n\r\n: c\n\ndata: last\r\r".to_vec();
        let mut whole = SseParser::new(1024);
        let want = events(&mut whole, &[&stream]);
        for cut in 0..stream.len() {
            let mut parser = SseParser::new(1024);
            assert_eq!(events(&mut parser, &[&stream[..cut], &stream[cut..]]), want, "cut at {cut}");
        }
        for size in 1..4 {
            let mut parser = SseParser::new(1024);
            let chunks: Vec<&[u8]> = stream.chunks(size).collect();
            assert_eq!(events(&mut parser, &chunks), want, "chunks of {size}");
        }
    }

    #[test]
    fn an_event_that_never_ends_is_refused_at_the_bound_red() {
        let mut parser = SseParser::new(64);
        assert!(parser.feed(b"data: ", |_| {}).is_ok());
        let refused = (0..100).try_for_each(|_| parser.feed(&[b'x'; 16], |_| {}));
        assert_eq!(refused, Err(EventTooLarge), "a data line without an end is refused");
        // Many short data lines of one event are bounded too.
        let mut parser = SseParser::new(64);
        let result = (0..100).try_for_each(|_| parser.feed(b"data: 0123456789\n", |_| {}));
        assert_eq!(result, Err(EventTooLarge));
        // An event just under the bound passes.
        let mut parser = SseParser::new(64);
        let got = events(&mut parser, &[b"data: 0123456789\ndata: 0123456789\n\n"]);
        assert_eq!(got.len(), 1);
    }
}
