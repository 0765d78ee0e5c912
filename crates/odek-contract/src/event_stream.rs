//! Server-sent events — the WHATWG `text/event-stream` format — read incrementally from chunks
//! cut anywhere, within a bound. This module owns the framing only: lines and their three
//! endings (`\r\n`, `\n`, `\r`, even when a chunk ends between `\r` and `\n`), the byte-order
//! mark a stream may start with, comments, the `data`, `event` and `id` fields, and the blank
//! line that dispatches an event, and the `retry` field (the reconnection time a caller that
//! reconnects waits: MCP's Streamable HTTP transport, SEP-1699). What an event means is the
//! caller's business: the model providers' stream decoders (odek-llm) and MCP's Streamable HTTP
//! and HTTP+SSE transports (odek-mcp) both read their streams here. Start at
//! [`EventStreamParser::feed`].
//!
//! Two rules are the caller's, fixed when the parser is made:
//! - what the data is gathered in, which is the encoding rule: an `EventStreamParser<String>`
//!   requires every line to be UTF-8 (a line that is not fails the stream) and delivers `&str`;
//!   an `EventStreamParser<Vec<u8>>` takes any bytes and delivers `&[u8]`, its event types and
//!   ids decoded lossily as WHATWG decodes a whole stream;
//! - [`UnterminatedEvent`]: whether [`EventStreamParser::finish`] dispatches an event whose
//!   closing blank line never came (lenient) or drops it (WHATWG).
//!
//! The bound ([`EventStreamConfig::max_event_bytes`]) is an error, never growth: no line longer
//! than it is read, and what is kept between lines (the event's data and type, and the event
//! ids) never exceeds it either.

use crate::ContractError;

/// Default [`EventStreamConfig::max_event_bytes`]: 4 MiB (bytes).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// U+FEFF in UTF-8: a stream may start with it, and it is not part of the first line.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// The event type's buffer keeps its allocation from one event to the next up to this size
/// (bytes), so an ordinary stream allocates nothing per event and a huge type is not kept.
const KEPT_EVENT_TYPE_CAPACITY: usize = 256;

/// How a parser is bounded and what it does at the end of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventStreamConfig {
    /// The longest line (bytes, without its ending), and the most bytes kept between lines:
    /// the event's data (its lines joined by `\n`), its type, and the event ids. Default
    /// [`DEFAULT_MAX_EVENT_BYTES`].
    pub max_event_bytes: usize,
    /// What [`EventStreamParser::finish`] does with an event still open. Default
    /// [`UnterminatedEvent::Discard`].
    pub unterminated_event: UnterminatedEvent,
}

impl Default for EventStreamConfig {
    fn default() -> EventStreamConfig {
        EventStreamConfig { max_event_bytes: DEFAULT_MAX_EVENT_BYTES, unterminated_event: UnterminatedEvent::Discard }
    }
}

/// What becomes of an event whose closing blank line never came when the stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnterminatedEvent {
    /// Dropped, with an unterminated last line, as WHATWG says: a stream cut short never
    /// delivers half an event.
    Discard,
    /// The unterminated last line is read as a line and the event is dispatched: for servers
    /// that end their last event with the body instead of a blank line.
    Dispatch,
}

/// One dispatched event, borrowed from the parser until the callback returns.
#[derive(Debug)]
pub struct StreamEvent<'a, T: ?Sized> {
    /// The `event` field; `None` for the default type (none given, empty, or `message`).
    pub event_type: Option<&'a str>,
    /// The `data` lines joined by `\n` (an event without a `data` line is never dispatched).
    pub data: &'a T,
}

/// What an event's data is gathered in, and so the stream's encoding rule: `String` (every
/// line must be UTF-8; data delivered as `&str`) or `Vec<u8>` (any bytes; data delivered as
/// `&[u8]`).
pub trait EventData: sealed::Buffer {}

impl EventData for String {}
impl EventData for Vec<u8> {}

/// The incremental parser. Guarantees, whatever the stream sends and however it is cut into
/// chunks: the same events in the same order, and the same error at the same place; no line
/// longer than `max_event_bytes` and no more than `max_event_bytes` kept between lines, so the
/// parser holds at most twice that; after an error every call returns that error again.
#[derive(Debug)]
pub struct EventStreamParser<D: EventData> {
    config: EventStreamConfig,
    /// The line being read: what the previous chunks held of it.
    line: Vec<u8>,
    /// The event's `data` lines joined by `\n`; `has_data` once one came (even an empty one).
    data: D,
    has_data: bool,
    /// The event's `event` field, empty for the default type.
    event_type: String,
    /// An `id` field of the event being read: the last event id once the event is dispatched.
    pending_id: Option<String>,
    /// The id of the last dispatched event (WHATWG's "last event ID string"), empty for none.
    last_event_id: String,
    /// The last `retry` field made only of ASCII digits, in milliseconds (saturating).
    reconnection_time: Option<u64>,
    /// The previous chunk ended in `\r`: a `\n` that starts the next one ends no line.
    after_cr: bool,
    /// How many bytes of a byte-order mark the stream started with; `None` once past its start.
    byte_order_mark_seen: Option<usize>,
    failed: Option<ContractError>,
}

impl<D: EventData> EventStreamParser<D> {
    /// A parser at the start of a stream.
    pub fn new(config: EventStreamConfig) -> EventStreamParser<D> {
        EventStreamParser {
            config,
            line: Vec::new(),
            data: D::default(),
            has_data: false,
            event_type: String::new(),
            pending_id: None,
            last_event_id: String::new(),
            reconnection_time: None,
            after_cr: false,
            byte_order_mark_seen: Some(0),
            failed: None,
        }
    }

    /// Reads the next `chunk` of the stream, calling `on_event` for every event it completes, in
    /// order. Fails with [`ContractError::StreamEventTooLong`] at the bound and, for a
    /// `String` parser, [`ContractError::StreamLineNotUtf8`] at the first line that is not
    /// UTF-8; the events before the failing line have been delivered.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(StreamEvent<'_, D::Slice>),
    ) -> Result<(), ContractError> {
        if let Some(failed) = &self.failed {
            return Err(failed.clone());
        }
        let read = self.read(chunk, &mut on_event);
        self.remember_failure(read)
    }

    /// The stream ended: what [`EventStreamConfig::unterminated_event`] says happens to an
    /// event still open, happens (a [`ContractError`] only from reading an unterminated last
    /// line). A caller that discards may skip this call.
    pub fn finish(&mut self, mut on_event: impl FnMut(StreamEvent<'_, D::Slice>)) -> Result<(), ContractError> {
        if let Some(failed) = &self.failed {
            return Err(failed.clone());
        }
        let finished = self.end_of_stream(&mut on_event);
        self.remember_failure(finished)
    }

    /// The id of the last dispatched event, for `Last-Event-ID`; `None` when no event set one
    /// or the last `id` field was empty. An `id` of an event not yet dispatched does not count:
    /// a stream cut inside an event is resumed from the event before it.
    pub fn last_event_id(&self) -> Option<&str> {
        Some(self.last_event_id.as_str()).filter(|id| !id.is_empty())
    }

    /// The reconnection time the stream asked for: its last `retry` field whose value is only
    /// ASCII digits (WHATWG; any other value is ignored), in milliseconds. Unbounded: the caller
    /// caps it.
    pub fn retry(&self) -> Option<std::time::Duration> {
        self.reconnection_time.map(std::time::Duration::from_millis)
    }

    fn remember_failure(&mut self, outcome: Result<(), ContractError>) -> Result<(), ContractError> {
        if let Err(error) = &outcome {
            self.failed = Some(error.clone());
        }
        outcome
    }

    fn read(
        &mut self,
        chunk: &[u8],
        on_event: &mut impl FnMut(StreamEvent<'_, D::Slice>),
    ) -> Result<(), ContractError> {
        let mut rest = self.skip_byte_order_mark(chunk)?;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            rest = rest.strip_prefix(b"\n").unwrap_or(rest);
        }
        while let Some(at) = memchr::memchr2(b'\n', b'\r', rest) {
            let (line_end, after) = rest.split_at(at);
            self.end_line(line_end, on_event)?;
            rest = match after {
                [b'\r', b'\n', tail @ ..] => tail,
                [b'\r'] => {
                    self.after_cr = true;
                    &[]
                }
                [_, tail @ ..] => tail,
                [] => &[],
            };
        }
        self.extend_line(rest)
    }

    /// The part of `chunk` after a byte-order mark at the stream's start, which may arrive a
    /// byte at a time. Bytes that began like one but were not are the first line's.
    fn skip_byte_order_mark<'c>(&mut self, chunk: &'c [u8]) -> Result<&'c [u8], ContractError> {
        let Some(seen) = self.byte_order_mark_seen else {
            return Ok(chunk);
        };
        let expected = &BYTE_ORDER_MARK[seen..];
        let matched = expected.iter().zip(chunk).take_while(|(expected, got)| expected == got).count();
        if matched == expected.len() {
            self.byte_order_mark_seen = None;
            return Ok(&chunk[matched..]);
        }
        if matched == chunk.len() {
            self.byte_order_mark_seen = Some(seen + matched);
            return Ok(&[]);
        }
        self.byte_order_mark_seen = None;
        self.extend_line(&BYTE_ORDER_MARK[..seen])?;
        Ok(chunk)
    }

    fn end_of_stream(&mut self, on_event: &mut impl FnMut(StreamEvent<'_, D::Slice>)) -> Result<(), ContractError> {
        if let Some(seen) = self.byte_order_mark_seen.take() {
            self.extend_line(&BYTE_ORDER_MARK[..seen])?;
        }
        match self.config.unterminated_event {
            UnterminatedEvent::Dispatch => {
                if !self.line.is_empty() {
                    self.end_line(&[], on_event)?;
                }
                self.dispatch(on_event);
            }
            UnterminatedEvent::Discard => {
                self.line.clear();
                self.data.clear_data();
                self.has_data = false;
                self.event_type.clear();
                self.pending_id = None;
            }
        }
        Ok(())
    }

    /// Appends to the line being read.
    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), ContractError> {
        self.check_line_length(bytes.len())?;
        let max = self.config.max_event_bytes;
        self.line.reserve_exact(growth(self.line.len(), self.line.capacity(), bytes.len(), max));
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// `last_piece` ends the line being read: the line is taken, from the chunk itself when
    /// it began in this one.
    fn end_line(
        &mut self,
        last_piece: &[u8],
        on_event: &mut impl FnMut(StreamEvent<'_, D::Slice>),
    ) -> Result<(), ContractError> {
        if self.line.is_empty() {
            self.check_line_length(last_piece.len())?;
            return self.take_line(last_piece, on_event);
        }
        self.extend_line(last_piece)?;
        let line = std::mem::take(&mut self.line);
        let taken = self.take_line(&line, on_event);
        // The allocation serves the next line.
        self.line = line;
        self.line.clear();
        taken
    }

    fn check_line_length(&self, more: usize) -> Result<(), ContractError> {
        if self.line.len().saturating_add(more) > self.config.max_event_bytes {
            return Err(self.too_long());
        }
        Ok(())
    }

    /// One complete line, without its ending: the blank line that dispatches, a field, or a
    /// comment.
    fn take_line(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(StreamEvent<'_, D::Slice>),
    ) -> Result<(), ContractError> {
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => self.append_data(value),
            b"event" => self.set_event_type(value),
            b"id" => self.set_id(value),
            b"retry" => {
                D::decode(line)?;
                if !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                    let millis = value
                        .iter()
                        .fold(0_u64, |millis, digit| millis.saturating_mul(10).saturating_add(u64::from(digit - b'0')));
                    self.reconnection_time = Some(millis);
                }
                Ok(())
            }
            // A comment (the line starts with `:`, so the field name is empty) and every unknown
            // field: nothing is kept, but the encoding rule holds for every line.
            _ => D::decode(line).map(drop),
        }
    }

    fn append_data(&mut self, value: &[u8]) -> Result<(), ContractError> {
        let decoded = D::decode(value)?;
        let separator = usize::from(self.has_data);
        if self.kept_bytes() + separator + value.len() > self.config.max_event_bytes {
            return Err(self.too_long());
        }
        self.data.push_line(decoded, self.has_data, self.config.max_event_bytes);
        self.has_data = true;
        Ok(())
    }

    fn set_event_type(&mut self, value: &[u8]) -> Result<(), ContractError> {
        let event_type = D::text(value)?;
        if self.kept_bytes() - self.event_type.len() + event_type.len() > self.config.max_event_bytes {
            return Err(self.too_long());
        }
        self.event_type.clear();
        self.event_type.reserve_exact(event_type.len());
        self.event_type.push_str(&event_type);
        Ok(())
    }

    fn set_id(&mut self, value: &[u8]) -> Result<(), ContractError> {
        let id = D::text(value)?;
        // An id with a NUL is ignored, as WHATWG says.
        if id.contains('\0') {
            return Ok(());
        }
        let pending = self.pending_id.as_ref().map_or(0, String::len);
        if self.kept_bytes() - pending + id.len() > self.config.max_event_bytes {
            return Err(self.too_long());
        }
        self.pending_id = Some(id.into_owned());
        Ok(())
    }

    /// The blank line: the event's id becomes the last event id, and an event with data is
    /// delivered.
    fn dispatch(&mut self, on_event: &mut impl FnMut(StreamEvent<'_, D::Slice>)) {
        if let Some(id) = self.pending_id.take() {
            self.last_event_id = id;
        }
        if self.has_data {
            let event_type = Some(self.event_type.as_str()).filter(|kind| !kind.is_empty() && *kind != "message");
            on_event(StreamEvent { event_type, data: self.data.as_slice() });
            self.data.clear_data();
            self.has_data = false;
        }
        self.event_type.clear();
        self.event_type.shrink_to(KEPT_EVENT_TYPE_CAPACITY);
    }

    /// What is kept between lines, which the bound covers.
    fn kept_bytes(&self) -> usize {
        self.data.byte_len()
            + self.event_type.len()
            + self.pending_id.as_ref().map_or(0, String::len)
            + self.last_event_id.len()
    }

    fn too_long(&self) -> ContractError {
        ContractError::StreamEventTooLong { max_bytes: self.config.max_event_bytes }
    }
}

/// How much to reserve so that `extra` more bytes fit: the allocation doubles, as a `Vec`'s
/// does, but never past `bound` unless the content itself needs more.
fn growth(len: usize, capacity: usize, extra: usize, bound: usize) -> usize {
    let needed = len.saturating_add(extra);
    if needed <= capacity {
        return 0;
    }
    capacity.saturating_mul(2).min(bound).max(needed) - len
}

mod sealed {
    use std::borrow::Cow;

    use crate::ContractError;

    /// The two data buffers. Private, so no other encoding rule can be added from outside.
    pub trait Buffer: Default + std::fmt::Debug {
        /// What the data is delivered as.
        type Slice: ?Sized;
        /// `bytes` (a line or a field's value) under the encoding rule.
        fn decode(bytes: &[u8]) -> Result<&Self::Slice, ContractError>;
        /// A field's value as text under the encoding rule.
        fn text(bytes: &[u8]) -> Result<Cow<'_, str>, ContractError>;
        /// Appends one data line, after a `\n` when `separated`; the allocation grows to at
        /// most `bound` unless the content needs more.
        fn push_line(&mut self, line: &Self::Slice, separated: bool, bound: usize);
        fn as_slice(&self) -> &Self::Slice;
        fn byte_len(&self) -> usize;
        fn clear_data(&mut self);
    }

    impl Buffer for String {
        type Slice = str;

        fn decode(bytes: &[u8]) -> Result<&str, ContractError> {
            std::str::from_utf8(bytes).map_err(|_| ContractError::StreamLineNotUtf8)
        }

        fn text(bytes: &[u8]) -> Result<Cow<'_, str>, ContractError> {
            String::decode(bytes).map(Cow::Borrowed)
        }

        fn push_line(&mut self, line: &str, separated: bool, bound: usize) {
            let extra = usize::from(separated) + line.len();
            self.reserve_exact(super::growth(self.len(), self.capacity(), extra, bound));
            if separated {
                self.push('\n');
            }
            self.push_str(line);
        }

        fn as_slice(&self) -> &str {
            self
        }

        fn byte_len(&self) -> usize {
            self.len()
        }

        fn clear_data(&mut self) {
            self.clear();
        }
    }

    impl Buffer for Vec<u8> {
        type Slice = [u8];

        fn decode(bytes: &[u8]) -> Result<&[u8], ContractError> {
            Ok(bytes)
        }

        fn text(bytes: &[u8]) -> Result<Cow<'_, str>, ContractError> {
            Ok(String::from_utf8_lossy(bytes))
        }

        fn push_line(&mut self, line: &[u8], separated: bool, bound: usize) {
            let extra = usize::from(separated) + line.len();
            self.reserve_exact(super::growth(self.len(), self.capacity(), extra, bound));
            if separated {
                self.push(b'\n');
            }
            self.extend_from_slice(line);
        }

        fn as_slice(&self) -> &[u8] {
            self
        }

        fn byte_len(&self) -> usize {
            self.len()
        }

        fn clear_data(&mut self) {
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a stream made: every event's type and data, how it ended, the last event id.
    #[derive(Debug, PartialEq)]
    struct Parsed {
        events: Vec<(Option<String>, Vec<u8>)>,
        end: Result<(), ContractError>,
        last_event_id: Option<String>,
    }

    impl Parsed {
        fn data(&self) -> Vec<String> {
            self.events.iter().map(|(_, data)| String::from_utf8_lossy(data).into_owned()).collect()
        }
    }

    /// `chunks` fed one by one, then the end of the stream.
    fn parse<D: EventData>(config: EventStreamConfig, chunks: &[&[u8]]) -> Parsed
    where
        D::Slice: AsRef<[u8]>,
    {
        let mut parser = EventStreamParser::<D>::new(config);
        let mut events = Vec::new();
        let mut collect = |event: StreamEvent<'_, D::Slice>| {
            events.push((event.event_type.map(str::to_owned), event.data.as_ref().to_vec()));
        };
        let mut end = chunks.iter().try_for_each(|chunk| parser.feed(chunk, &mut collect));
        if end.is_ok() {
            end = parser.finish(&mut collect);
        }
        Parsed { events, end, last_event_id: parser.last_event_id().map(str::to_owned) }
    }

    /// The model providers' configuration: an unterminated last event is delivered.
    fn lenient(max_event_bytes: usize) -> EventStreamConfig {
        EventStreamConfig { max_event_bytes, unterminated_event: UnterminatedEvent::Dispatch }
    }

    /// MCP's: as WHATWG says.
    fn strict(max_event_bytes: usize) -> EventStreamConfig {
        EventStreamConfig { max_event_bytes, ..EventStreamConfig::default() }
    }

    fn too_long(max_bytes: usize) -> Result<(), ContractError> {
        Err(ContractError::StreamEventTooLong { max_bytes })
    }

    #[test]
    fn retry_keeps_the_last_all_digit_value_and_ignores_the_rest() {
        let mut parser = EventStreamParser::<Vec<u8>>::new(strict(64));
        assert_eq!(parser.retry(), None);
        parser.feed(b"id: e-1\nretry: 500\ndata: \n\n", |_| {}).unwrap();
        assert_eq!(parser.retry(), Some(std::time::Duration::from_millis(500)));
        assert_eq!(parser.last_event_id(), Some("e-1"));
        for ignored in [&b"retry: 5s\n"[..], b"retry: -1\n", b"retry:\n", b"retry: 1 000\n"] {
            parser.feed(ignored, |_| {}).unwrap();
            assert_eq!(parser.retry(), Some(std::time::Duration::from_millis(500)));
        }
        parser.feed(b"retry:99999999999999999999999\n", |_| {}).unwrap();
        assert_eq!(parser.retry(), Some(std::time::Duration::from_millis(u64::MAX)));
    }

    #[test]
    fn events_split_across_chunks_are_joined() {
        let parsed =
            parse::<String>(lenient(64), &[b"data: {\"a\"", b":1}\r\n\r\n: comment\nevent: x\ndata: [DONE]\n\n"]);
        assert_eq!(parsed.data(), ["{\"a\":1}", "[DONE]"]);
        assert_eq!(parsed.events[1].0.as_deref(), Some("x"));
        assert_eq!(parsed.end, Ok(()));
    }

    #[test]
    fn multi_line_data_and_the_unterminated_last_event_by_policy() {
        let stream: &[&[u8]] = &[b"data: one\ndata: two\n\ndata: tail"];
        assert_eq!(parse::<String>(lenient(64), stream).data(), ["one\ntwo", "tail"]);
        assert_eq!(parse::<String>(strict(64), stream).data(), ["one\ntwo"]);
        // An unterminated event ends at the stream's end, even after its last line ended.
        assert_eq!(parse::<Vec<u8>>(lenient(64), &[b"data: one\r"]).data(), ["one"]);
        assert!(parse::<Vec<u8>>(strict(64), &[b"id: 3\ndata: one\n"]).events.is_empty());
    }

    #[test]
    fn endless_line_is_refused_not_buffered() {
        let long = vec![b'x'; 65];
        assert_eq!(parse::<String>(lenient(64), &[b"data: ", &long]).end, too_long(64));
        let many: Vec<&[u8]> = vec![b"data: 0123456789\n"; 8];
        assert_eq!(parse::<String>(lenient(64), &many).end, too_long(64));
    }

    #[test]
    fn data_lines_join_and_every_line_ending_counts() {
        let parsed = parse::<Vec<u8>>(
            strict(1024),
            &[b"data: {\"a\":\ndata:1}\n\nid: 7\r\ndata: two\r\n\r", b"\ndata:three\r\r"],
        );
        assert_eq!(parsed.data(), ["{\"a\":\n1}", "two", "three"]);
        assert_eq!(parsed.last_event_id.as_deref(), Some("7"));
    }

    #[test]
    fn comments_unknown_fields_and_empty_events_dispatch_nothing() {
        let parsed = parse::<Vec<u8>>(
            strict(1024),
            &[b": keep-alive\n\nretry: 10\nfoo: bar\n\nevent: ping\n\nevent: endpoint\ndata: /x\n\n"],
        );
        assert_eq!(parsed.events, [(Some("endpoint".to_owned()), b"/x".to_vec())]);
        // `message`, an empty type and no type are all the default.
        let parsed = parse::<Vec<u8>>(strict(1024), &[b"event: message\ndata: m\n\nevent:\ndata: e\n\ndata: d\n\n"]);
        assert!(parsed.events.iter().all(|(kind, _)| kind.is_none()), "{parsed:?}");
        // A `data` field without a colon is an empty data line, and an empty line is an event.
        let parsed = parse::<String>(strict(1024), &[b"data\n\ndata:\ndata\n\n"]);
        assert_eq!(parsed.data(), ["", "\n"]);
    }

    /// Streams that exercise every rule at a chunk boundary: endings (a `\r\n` and a lone `\r`
    /// anywhere), the byte-order mark, multi-byte characters, bytes that are not UTF-8, ids
    /// (with a NUL, empty), lines and events past a small bound.
    const STREAMS: &[&[u8]] = &[
        b"id: a\ndata: one\n\ndata: t\xc3\xa9\r\ndata: x\r\n\r\n: c\n\ndata: last\r\r",
        b"\xEF\xBB\xBFdata: bom\r\n\r\nevent: kind\ndata:\xe2\x82\xac\n\nid: 9\n\n",
        b"\xEF\xBBdata: not a mark\n\ndata: x\n\n",
        b"data: a\r\rdata: b\n\r\n\rid: 1\x00\ndata: c\r\n\ndata: d\rid\r\r\r",
        b"event: x\r\nid: k\r\ndata: 1\r\ndata: 2\r\n\r\nretry: 5\r\n: \xff\r\ndata: \xfe\r\n\r\n",
        b"data: short\n\ndata: 0123456789012345678901234567890123456789\n\ndata: z\n\n",
        b"data: 01234567890123456789\ndata: 01234567890123456789\ndata: x\n\n",
        b"data: endless line without any ending that goes on and on",
    ];

    #[test]
    fn every_cut_gives_the_same_outcome() {
        let configs = [lenient(1024), strict(1024), lenient(40), strict(40)];
        for (stream, config) in STREAMS.iter().flat_map(|stream| configs.map(|config| (stream, config))) {
            same_outcome_for_every_cut::<String>(config, stream);
            same_outcome_for_every_cut::<Vec<u8>>(config, stream);
        }
    }

    fn same_outcome_for_every_cut<D: EventData>(config: EventStreamConfig, stream: &[u8])
    where
        D::Slice: AsRef<[u8]>,
    {
        let whole = parse::<D>(config, &[stream]);
        for first in 0..=stream.len() {
            for second in first..=stream.len() {
                let (head, tail) = stream.split_at(second);
                let (head, middle) = head.split_at(first);
                let cut = parse::<D>(config, &[head, middle, tail]);
                assert_eq!(cut, whole, "{config:?}, cut at {first} and {second} of {stream:?}");
            }
        }
        for size in 1..8 {
            let chunks: Vec<&[u8]> = stream.chunks(size).flat_map(|chunk| [chunk, b""]).collect();
            assert_eq!(parse::<D>(config, &chunks), whole, "{config:?}, chunks of {size} of {stream:?}");
        }
    }

    #[test]
    fn a_crlf_split_by_chunks_is_one_line_ending() {
        let parsed = parse::<String>(strict(64), &[b"data: a\r", b"", b"\ndata: b\n\n"]);
        assert_eq!(parsed.data(), ["a\nb"]);
    }

    #[test]
    fn a_byte_order_mark_counts_only_at_the_start() {
        let parsed = parse::<String>(strict(64), &[b"\xEF\xBB", b"\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n"]);
        assert_eq!(parsed.data(), ["a"]);
        // Bytes that begin like a mark but are not one are the first line's.
        assert_eq!(parse::<Vec<u8>>(strict(64), &[b"\xEF\xBB", b"data: x\n\n"]).events, []);
        assert_eq!(parse::<String>(lenient(64), &[b"\xEF", b"\xBB"]).end, Err(ContractError::StreamLineNotUtf8));
    }

    #[test]
    fn a_stream_cut_inside_an_event_resumes_before_it_red() {
        // The id of an event that was never dispatched must not be the one resumed from: the
        // server would skip the event it never delivered.
        let parsed = parse::<Vec<u8>>(strict(64), &[b"id: 1\ndata: a\n\nid: 2\ndata: b"]);
        assert_eq!((parsed.data(), parsed.last_event_id.as_deref()), (vec!["a".to_owned()], Some("1")));
        // The id persists across events, an id with a NUL is ignored, an empty one resets it.
        let parsed = parse::<Vec<u8>>(strict(64), &[b"id: 1\n\ndata: a\n\nid: 2\x00\ndata: b\n\n"]);
        assert_eq!(parsed.last_event_id.as_deref(), Some("1"));
        let parsed = parse::<Vec<u8>>(strict(64), &[b"id: 1\n\nid\ndata: a\n\n"]);
        assert_eq!(parsed.last_event_id, None);
    }

    #[test]
    fn a_text_stream_refuses_every_line_that_is_not_utf8() {
        for line in [&b": \xff\n"[..], b"event: \xff\n", b"id: \xff\n", b"d\xffta: x\n", b"data: \xff\n"] {
            let parsed = parse::<String>(lenient(64), &[b"data: before\n\n", line, b"data: after\n\n"]);
            assert_eq!(parsed.data(), ["before"], "{line:?}");
            assert_eq!(parsed.end, Err(ContractError::StreamLineNotUtf8), "{line:?}");
        }
        // The line that is not UTF-8 fails before a bound hit after it.
        let parsed = parse::<String>(lenient(64), &[b"data: \xff\n", &[b'x'; 100]]);
        assert_eq!(parsed.end, Err(ContractError::StreamLineNotUtf8));
        // A byte stream passes the data through and decodes the type lossily.
        let parsed = parse::<Vec<u8>>(lenient(64), &[b": \xff\nevent: \xff\ndata: \xfe\n\n"]);
        assert_eq!(parsed.events, [(Some("\u{fffd}".to_owned()), vec![0xfe])]);
    }

    #[test]
    fn errors_read_as_the_spec_says_and_stay() {
        assert_eq!(
            ContractError::StreamEventTooLong { max_bytes: 4194304 }.to_string(),
            "stream event longer than 4194304 bytes"
        );
        assert_eq!(ContractError::StreamLineNotUtf8.to_string(), "stream line is not UTF-8");
        let mut parser = EventStreamParser::<String>::new(lenient(8));
        assert_eq!(parser.feed(b"data: 0123456789", |_| {}), too_long(8));
        let mut delivered = 0;
        assert_eq!(parser.feed(b"\n\ndata: x\n\n", |_| delivered += 1), too_long(8));
        assert_eq!(parser.finish(|_| delivered += 1), too_long(8));
        assert_eq!(delivered, 0);
    }

    #[test]
    fn an_event_that_never_ends_is_refused_at_the_bound_red() {
        let mut parser = EventStreamParser::<Vec<u8>>::new(strict(64));
        assert!(parser.feed(b"data: ", |_| {}).is_ok());
        let refused = (0..100).try_for_each(|_| parser.feed(&[b'x'; 16], |_| {}));
        assert_eq!(refused, too_long(64), "a data line without an end is refused");
        // Many short data lines of one event are bounded too.
        let mut parser = EventStreamParser::<Vec<u8>>::new(strict(64));
        let refused = (0..100).try_for_each(|_| parser.feed(b"data: 0123456789\n", |_| {}));
        assert_eq!(refused, too_long(64));
        // An event just under the bound passes.
        assert_eq!(parse::<Vec<u8>>(strict(64), &[b"data: 0123456789\ndata: 0123456789\n\n"]).events.len(), 1);
    }

    #[test]
    fn an_endless_line_is_refused_at_the_bound_red() {
        for start in [&b"data: "[..], b": ", b"event: ", b"id: ", b"unknown"] {
            let mut parser = EventStreamParser::<String>::new(lenient(64));
            let mut fed = 0;
            let mut refused = parser.feed(start, |_| {});
            while refused.is_ok() && fed < 10_000 {
                refused = parser.feed(b"0123456789", |_| {});
                fed += 1;
                assert!(parser.line.len() <= 64 && parser.line.capacity() <= 64, "{start:?}: {fed} chunks");
            }
            assert_eq!(refused, too_long(64), "{start:?}");
            let (before, after) = (start.len() + 10 * (fed - 1), start.len() + 10 * fed);
            assert!(before <= 64 && after > 64, "{start:?}: refused at {after} bytes, not at the first chunk past 64");
        }
    }

    #[test]
    fn an_endless_event_is_refused_at_the_bound_red() {
        // Data lines each within the bound, never dispatched.
        let mut parser = EventStreamParser::<String>::new(strict(64));
        assert_eq!(parser.feed(&[&b"data: "[..], &[b'x'; 40], b"\n"].concat(), |_| {}), Ok(()));
        assert_eq!(parser.feed(&[&b"data: "[..], &[b'x'; 23], b"\n"].concat(), |_| {}), Ok(()));
        assert_eq!(parser.data.len(), 64);
        assert_eq!(parser.feed(b"data:\n", |_| {}), too_long(64));
        assert!(parser.data.capacity() <= 64);
        // The event type and the ids count with the data.
        let data_only = [&b"data: "[..], &[b'x'; 56], b"\n\n"].concat();
        assert_eq!(parse::<String>(strict(64), &[&data_only]).end, Ok(()));
        for fields in [&b"event: 0123456789\n"[..], b"id: 0123456789\n", b"id: 0123456789\n\n"] {
            let stream = [fields, b"data: ", &[b'x'; 56], b"\n\n"].concat();
            assert_eq!(parse::<String>(strict(64), &[&stream]).end, too_long(64), "{fields:?}");
        }
    }

    #[test]
    fn many_small_data_lines_are_refused_at_the_bound_red() {
        // Each empty data line adds one `\n` to the event's data.
        let mut parser = EventStreamParser::<Vec<u8>>::new(strict(64));
        for line in 1..=65 {
            assert_eq!(parser.feed(b"data:\n", |_| {}), Ok(()), "line {line}");
        }
        assert_eq!(parser.data.len(), 64);
        assert_eq!(parser.feed(b"data:\n", |_| {}), too_long(64));
    }

    #[test]
    fn comments_and_repeated_fields_keep_nothing() {
        let mut parser = EventStreamParser::<String>::new(strict(64));
        for _ in 0..10_000 {
            assert_eq!(parser.feed(b": ping\nevent: delta\nid: 42\nretry: 1\n", |_| {}), Ok(()));
        }
        assert!(parser.kept_bytes() <= 7);
        let mut events = Vec::new();
        assert_eq!(parser.feed(b"data: x\n\n", |event| events.push(event.event_type.map(str::to_owned))), Ok(()));
        assert_eq!((events, parser.last_event_id()), (vec![Some("delta".to_owned())], Some("42")));
    }

    #[test]
    fn growth_doubles_within_the_bound() {
        assert_eq!(growth(0, 0, 10, 64), 10);
        assert_eq!(growth(10, 10, 1, 64), 10);
        assert_eq!(growth(40, 40, 1, 64), 24);
        assert_eq!(growth(40, 64, 10, 64), 0);
        assert_eq!(growth(60, 64, 10, 64), 10);
    }
}
