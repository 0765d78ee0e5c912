//! The server-sent events parser (`odek_contract::event_stream`) against a model of its
//! contract that reads the whole stream at once, for both encodings, both end-of-stream
//! policies, any bound, and the stream cut into four reads at fuzzed points and into reads of
//! one byte with empty reads between them.
//!
//! Input: `[flags, bound, cut, cut, cut, stream…]`. Flags: bit 0 a byte parser (else text),
//! bit 1 the unterminated last event dispatched (else dropped), bit 2 the bound × 64.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_contract::ContractError;
use odek_contract::event_stream::{EventData, EventStreamConfig, EventStreamParser, StreamEvent, UnterminatedEvent};

/// Every event's type and data, how the stream ended, and the last event id.
#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<(Option<String>, Vec<u8>)>,
    end: Result<(), ContractError>,
    last_event_id: Option<String>,
}

fn parse<D: EventData>(config: EventStreamConfig, chunks: &[&[u8]]) -> Outcome
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
    Outcome { events, end, last_event_id: parser.last_event_id().map(str::to_owned) }
}

/// The documented rules, applied to a whole stream's lines.
struct Model {
    text: bool,
    max: usize,
    data: Option<Vec<u8>>,
    event_type: String,
    pending_id: Option<String>,
    last_id: String,
    events: Vec<(Option<String>, Vec<u8>)>,
}

impl Model {
    fn decode(&self, bytes: &[u8]) -> Result<String, ContractError> {
        if self.text {
            std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| ContractError::StreamLineNotUtf8)
        } else {
            Ok(String::from_utf8_lossy(bytes).into_owned())
        }
    }

    /// The bytes kept between lines, with `adding` more.
    fn fits(&self, adding: usize) -> Result<(), ContractError> {
        let kept = self.data.as_ref().map_or(0, Vec::len)
            + self.event_type.len()
            + self.pending_id.as_ref().map_or(0, String::len)
            + self.last_id.len();
        if kept + adding > self.max {
            return Err(ContractError::StreamEventTooLong { max_bytes: self.max });
        }
        Ok(())
    }

    fn dispatch(&mut self) {
        if let Some(id) = self.pending_id.take() {
            self.last_id = id;
        }
        if let Some(data) = self.data.take() {
            let kind = Some(self.event_type.clone()).filter(|kind| !kind.is_empty() && kind != "message");
            self.events.push((kind, data));
        }
        self.event_type.clear();
    }

    fn line(&mut self, line: &[u8]) -> Result<(), ContractError> {
        if line.len() > self.max {
            return Err(ContractError::StreamEventTooLong { max_bytes: self.max });
        }
        if line.is_empty() {
            self.dispatch();
            return Ok(());
        }
        let (field, value) = match line.iter().position(|byte| *byte == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.decode(value)?;
                let separator = usize::from(self.data.is_some());
                self.fits(separator + value.len())?;
                let data = self.data.get_or_insert_with(Vec::new);
                if separator == 1 {
                    data.push(b'\n');
                }
                data.extend_from_slice(value);
            }
            b"event" => {
                let value = self.decode(value)?;
                self.event_type.clear();
                self.fits(value.len())?;
                self.event_type = value;
            }
            b"id" => {
                let value = self.decode(value)?;
                if !value.contains('\0') {
                    self.pending_id = None;
                    self.fits(value.len())?;
                    self.pending_id = Some(value);
                }
            }
            _ => {
                self.decode(line)?;
            }
        }
        Ok(())
    }
}

/// What the parser must make of `stream`, by the documented rules, reading it whole: the
/// lines (a leading byte-order mark dropped; `\r\n`, `\n` and `\r` end one), then the
/// unterminated last line, bounded while it is read and then read or dropped by the policy.
fn model(stream: &[u8], text: bool, config: EventStreamConfig) -> Outcome {
    let mut model = Model {
        text,
        max: config.max_event_bytes,
        data: None,
        event_type: String::new(),
        pending_id: None,
        last_id: String::new(),
        events: Vec::new(),
    };
    let mut rest = stream.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(stream);
    let mut end = Ok(());
    while let Some(at) = rest.iter().position(|byte| *byte == b'\n' || *byte == b'\r') {
        let line = &rest[..at];
        rest = &rest[at + if rest[at..].starts_with(b"\r\n") { 2 } else { 1 }..];
        end = model.line(line);
        if end.is_err() {
            break;
        }
    }
    if end.is_ok() && rest.len() > model.max {
        end = Err(ContractError::StreamEventTooLong { max_bytes: model.max });
    }
    if end.is_ok() && config.unterminated_event == UnterminatedEvent::Dispatch {
        if !rest.is_empty() {
            end = model.line(rest);
        }
        if end.is_ok() {
            model.dispatch();
        }
    }
    Outcome { events: model.events, end, last_event_id: Some(model.last_id).filter(|id| !id.is_empty()) }
}

fn check<D: EventData>(config: EventStreamConfig, text: bool, cuts: [usize; 3], stream: &[u8])
where
    D::Slice: AsRef<[u8]>,
{
    let whole = parse::<D>(config, &[stream]);
    let pieces = [&stream[..cuts[0]], &stream[cuts[0]..cuts[1]], &stream[cuts[1]..cuts[2]], &stream[cuts[2]..]];
    assert_eq!(parse::<D>(config, &pieces), whole, "the outcome depends on the read boundaries");
    let bytes: Vec<&[u8]> = stream.chunks(1).flat_map(|byte| [byte, &[][..]]).collect();
    assert_eq!(parse::<D>(config, &bytes), whole, "the outcome differs when read a byte at a time");
    for (kind, data) in &whole.events {
        assert!(data.len() <= config.max_event_bytes, "an event's data is past the bound");
        assert!(!data.contains(&b'\r'), "a line ending inside an event's data");
        assert!(kind.as_deref().is_none_or(|kind| !kind.contains(['\r', '\n'])));
    }
    assert!(whole.last_event_id.as_deref().is_none_or(|id| !id.contains(['\0', '\r', '\n'])));
    assert_eq!(whole, model(stream, text, config));
}

fuzz_target!(|data: &[u8]| {
    let [flags, bound, a, b, c, stream @ ..] = data else { return };
    let max_event_bytes = usize::from(*bound) * if flags & 4 != 0 { 64 } else { 1 };
    let unterminated_event = if flags & 2 != 0 { UnterminatedEvent::Dispatch } else { UnterminatedEvent::Discard };
    let config = EventStreamConfig { max_event_bytes, unterminated_event };
    let mut cuts: [usize; 3] = [a, b, c].map(|cut| stream.len() * usize::from(*cut) / 255);
    cuts.sort_unstable();
    if flags & 1 != 0 {
        check::<Vec<u8>>(config, false, cuts, stream);
    } else {
        check::<String>(config, true, cuts, stream);
    }
});
