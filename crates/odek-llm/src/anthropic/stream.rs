//! One streamed Messages answer put back together from its events: `message_start` (the input
//! side of the usage), content blocks started, extended and stopped by `index`, `message_delta`
//! (stop reason, usage) and `message_stop`, the end marker. The `type` field of each event's
//! data says which event it is (the SSE `event:` line is the framing's, `crate::sse`). `ping`,
//! unknown event types and blocks of an unknown type (started, extended or stopped) change
//! nothing odek keeps, so they never count as progress. Start at [`MessageStream::apply`].

use std::collections::BTreeMap;

use serde_json::Value;

use super::wire::{self, Block, UsageCounts};
use crate::http::StreamDecoder;
use crate::provider::{ChatResponse, StreamObserver};
use crate::wire::{MAX_TOOL_CALLS, WireError, bound_detail, provider_error_in};

/// At most this many content blocks in one streamed answer; more is an invalid response.
const MAX_CONTENT_BLOCKS: usize = 4 * MAX_TOOL_CALLS;

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct MessageStream {
    /// Content blocks by their stream `index`, which is also their order in the answer.
    blocks: BTreeMap<u64, StreamBlock>,
    tool_uses: usize,
    usage: UsageCounts,
    stop_reason: Option<String>,
    started: bool,
    /// `message_stop` came.
    stopped: bool,
    /// Counts the events that changed the answer; the idle timer only restarts when it moves.
    progress: u64,
}

/// One content block being streamed.
#[derive(Debug)]
struct StreamBlock {
    part: Part,
    /// `content_block_stop` came.
    stopped: bool,
}

#[derive(Debug)]
enum Part {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking(String),
    /// `json` is the `input_json_delta` fragments joined; `start_input` the `input` of
    /// `content_block_start`, used when no fragment came.
    ToolUse {
        id: String,
        name: String,
        json: String,
        start_input: Option<Value>,
    },
    /// A block type odek does not use: its deltas are ignored.
    Other,
}

/// A string field of an event, empty when absent.
fn text_of(value: &Value, field: &str) -> String {
    value.get(field).and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl MessageStream {
    /// Applies one event (parsed), telling `observer` about new text; `true` at `message_stop`.
    fn apply_event(&mut self, event: &Value, observer: &dyn StreamObserver) -> Result<bool, WireError> {
        if let Some(message) = provider_error_in(event) {
            return Err(WireError::Provider(message));
        }
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => self.message_start(event),
            Some("content_block_start") => self.block_start(event, observer)?,
            Some("content_block_delta") => self.block_delta(event, observer)?,
            Some("content_block_stop") => self.block_stop(event)?,
            Some("message_delta") => self.message_delta(event),
            Some("message_stop") => {
                self.stopped = true;
                return Ok(true);
            }
            // `ping`, and event types added after this was written.
            _ => {}
        }
        Ok(false)
    }

    fn message_start(&mut self, event: &Value) {
        let usage = event.get("message").and_then(|message| message.get("usage"));
        let changed = usage.is_some_and(|usage| self.usage.update(usage));
        if !self.started || changed {
            self.started = true;
            self.progress += 1;
        }
    }

    /// `message_delta`: the stop reason, and usage whose counts replace the earlier ones
    /// (`output_tokens` is cumulative).
    fn message_delta(&mut self, event: &Value) {
        let reason = event.get("delta").and_then(|delta| delta.get("stop_reason")).and_then(Value::as_str);
        let mut changed = false;
        if let Some(reason) = reason
            && self.stop_reason.as_deref() != Some(reason)
        {
            self.stop_reason = Some(reason.to_owned());
            changed = true;
        }
        if let Some(usage) = event.get("usage") {
            changed |= self.usage.update(usage);
        }
        if changed {
            self.progress += 1;
        }
    }

    fn block_start(&mut self, event: &Value, observer: &dyn StreamObserver) -> Result<(), WireError> {
        let index = event_index(event)?;
        if self.blocks.contains_key(&index) {
            return Err(WireError::Invalid(format!("content block {index} started twice")));
        }
        if self.blocks.len() == MAX_CONTENT_BLOCKS {
            return Err(WireError::Invalid(format!("more than {MAX_CONTENT_BLOCKS} content blocks in one answer")));
        }
        let block = event.get("content_block").unwrap_or(&Value::Null);
        let part = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = text_of(block, "text");
                if !text.is_empty() {
                    observer.on_delta(&text, false);
                }
                Part::Text(text)
            }
            Some("thinking") => {
                let thinking = text_of(block, "thinking");
                if !thinking.is_empty() {
                    observer.on_delta(&thinking, true);
                }
                Part::Thinking { thinking, signature: text_of(block, "signature") }
            }
            Some("redacted_thinking") => Part::RedactedThinking(text_of(block, "data")),
            Some("tool_use") => {
                if self.tool_uses == MAX_TOOL_CALLS {
                    return Err(WireError::Invalid(format!("more than {MAX_TOOL_CALLS} tool calls in one answer")));
                }
                self.tool_uses += 1;
                Part::ToolUse {
                    id: text_of(block, "id"),
                    name: text_of(block, "name"),
                    json: String::new(),
                    start_input: block.get("input").cloned(),
                }
            }
            _ => Part::Other,
        };
        // A block odek does not keep adds nothing to the answer (its index is still taken).
        if !matches!(part, Part::Other) {
            self.progress += 1;
        }
        self.blocks.insert(index, StreamBlock { part, stopped: false });
        Ok(())
    }

    /// `content_block_delta`: the piece is appended to the block `index` names, which must
    /// have started and not stopped, and be of the delta's kind.
    fn block_delta(&mut self, event: &Value, observer: &dyn StreamObserver) -> Result<(), WireError> {
        let index = event_index(event)?;
        let block = self.open_block(index, "content_block_delta")?;
        let delta = event.get("delta").unwrap_or(&Value::Null);
        let delta_type = delta.get("type").and_then(Value::as_str).unwrap_or_default();
        let (target, field, reasoning) = match (&mut block.part, delta_type) {
            (Part::Other, _) => return Ok(()),
            (Part::Text(text), "text_delta") => (text, "text", Some(false)),
            (Part::ToolUse { json, .. }, "input_json_delta") => (json, "partial_json", None),
            (Part::Thinking { thinking, .. }, "thinking_delta") => (thinking, "thinking", Some(true)),
            (Part::Thinking { signature, .. }, "signature_delta") => (signature, "signature", None),
            (_, "text_delta" | "input_json_delta" | "thinking_delta" | "signature_delta") => {
                let shown = bound_detail(delta_type);
                return Err(WireError::Invalid(format!(
                    "a {shown} for content block {index}, which is not of its kind"
                )));
            }
            // Delta types added after this was written (citations…).
            _ => return Ok(()),
        };
        let piece = delta.get(field).and_then(Value::as_str).unwrap_or_default();
        if piece.is_empty() {
            return Ok(());
        }
        target.push_str(piece);
        if let Some(reasoning) = reasoning {
            observer.on_delta(piece, reasoning);
        }
        self.progress += 1;
        Ok(())
    }

    /// `content_block_stop`: a tool call's input must be whole by now.
    fn block_stop(&mut self, event: &Value) -> Result<(), WireError> {
        let index = event_index(event)?;
        let block = self.open_block(index, "content_block_stop")?;
        if let Part::ToolUse { json, start_input, .. } = &block.part {
            tool_arguments(index, json, start_input.as_ref())?;
        }
        block.stopped = true;
        if !matches!(block.part, Part::Other) {
            self.progress += 1;
        }
        Ok(())
    }

    /// The started, not yet stopped block at `index`.
    fn open_block(&mut self, index: u64, event: &str) -> Result<&mut StreamBlock, WireError> {
        match self.blocks.get_mut(&index) {
            None => Err(WireError::Invalid(format!("{event} for content block {index}, which never started"))),
            Some(block) if block.stopped => {
                Err(WireError::Invalid(format!("{event} for content block {index}, which already stopped")))
            }
            Some(block) => Ok(block),
        }
    }
}

/// The `index` of a content-block event.
fn event_index(event: &Value) -> Result<u64, WireError> {
    event.get("index").and_then(Value::as_u64).ok_or_else(|| {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or_default();
        WireError::Invalid(format!("{} event without a valid index", bound_detail(kind)))
    })
}

/// A streamed call's arguments: the joined fragments, which must form a JSON object (none at
/// all is the start's `input`, or `{}`), serialised compactly like a plain answer's.
fn tool_arguments(index: u64, json: &str, start_input: Option<&Value>) -> Result<String, WireError> {
    if json.trim().is_empty() {
        return Ok(wire::input_text(start_input.filter(|input| input.is_object())));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(input @ Value::Object(_)) => Ok(wire::input_text(Some(&input))),
        Ok(_) => Err(WireError::Invalid(format!("tool_use block {index}: the input is not a JSON object"))),
        Err(err) => Err(WireError::Invalid(format!("tool_use block {index}: the input is not valid JSON: {err}"))),
    }
}

impl StreamDecoder for MessageStream {
    /// One event's data: JSON whose `type` names the event; empty data is skipped.
    fn apply(&mut self, data: &str, observer: &dyn StreamObserver) -> Result<bool, WireError> {
        match crate::wire::event_json(data)? {
            Some(event) => self.apply_event(&event, observer),
            None => Ok(false),
        }
    }

    /// How many events changed the answer: the start, a block started, extended or stopped, a
    /// new stop reason or usage. Pings, unknown events, blocks of an unknown type and empty
    /// deltas leave it where it was.
    fn progress(&self) -> u64 {
        self.progress
    }

    /// Only `message_stop` makes the answer whole.
    fn finished(&self) -> bool {
        self.stopped
    }

    /// The assembled answer, blocks in their index order.
    fn into_response(self) -> Result<ChatResponse, WireError> {
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for (index, block) in self.blocks {
            blocks.push(match block.part {
                Part::Text(text) => Block::Text(text),
                Part::Thinking { thinking, signature } => Block::Thinking { thinking, signature },
                Part::RedactedThinking(data) => Block::RedactedThinking { data },
                Part::ToolUse { id, name, json, start_input } => {
                    if name.is_empty() {
                        return Err(WireError::Invalid(format!("tool_use block {index} has no name")));
                    }
                    let arguments = tool_arguments(index, &json, start_input.as_ref())?;
                    Block::ToolUse { id, name, arguments }
                }
                Part::Other => continue,
            });
        }
        wire::assemble(blocks, self.usage.usage(), self.stop_reason)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::{ReasoningBlock, ToolCall, Usage};
    use crate::provider::NoStreamObserver;

    fn feed(events: &[Value]) -> Result<MessageStream, WireError> {
        let mut stream = MessageStream::default();
        for event in events {
            stream.apply(&event.to_string(), &NoStreamObserver)?;
        }
        Ok(stream)
    }

    fn start(index: u64, block: Value) -> Value {
        json!({"type": "content_block_start", "index": index, "content_block": block})
    }

    fn delta(index: u64, delta: Value) -> Value {
        json!({"type": "content_block_delta", "index": index, "delta": delta})
    }

    fn stop(index: u64) -> Value {
        json!({"type": "content_block_stop", "index": index})
    }

    fn invalid(result: Result<MessageStream, WireError>) -> String {
        match result {
            Err(WireError::Invalid(detail)) => detail,
            other => panic!("not invalid: {other:?}"),
        }
    }

    #[test]
    fn blocks_are_joined_by_index_and_usage_is_replaced_by_message_delta() {
        let stream = feed(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "cache_read_input_tokens": 7, "output_tokens": 1}}}),
            start(0, json!({"type": "thinking", "thinking": ""})),
            delta(0, json!({"type": "thinking_delta", "thinking": "th"})),
            delta(0, json!({"type": "thinking_delta", "thinking": "ink"})),
            delta(0, json!({"type": "signature_delta", "signature": "SIG=="})),
            stop(0),
            start(1, json!({"type": "text", "text": ""})),
            json!({"type": "ping"}),
            delta(1, json!({"type": "text_delta", "text": "hel"})),
            delta(1, json!({"type": "text_delta", "text": "lo"})),
            stop(1),
            start(2, json!({"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}})),
            delta(2, json!({"type": "input_json_delta", "partial_json": "{\"command\": "})),
            delta(2, json!({"type": "input_json_delta", "partial_json": "\"ls\"}"})),
            stop(2),
            start(3, json!({"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}})),
            stop(3),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30, "input_tokens": 6}}),
        ])
        .unwrap();
        assert!(!stream.finished());
        let response = stream.into_response().unwrap();
        assert_eq!(response.message.content, "hello");
        assert_eq!(response.message.reasoning_content.as_deref(), Some("think"));
        assert_eq!(
            response.message.reasoning_blocks,
            vec![ReasoningBlock::Thinking { thinking: "think".into(), signature: "SIG==".into() }]
        );
        assert_eq!(
            response.message.tool_calls,
            vec![ToolCall::new("toolu_1", "shell", r#"{"command":"ls"}"#), ToolCall::new("toolu_2", "read", "{}")]
        );
        assert_eq!(
            response.usage,
            Usage { input_tokens: 13, output_tokens: 30, cache_read_tokens: 7, cache_write_tokens: 0 }
        );
        assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn message_stop_ends_the_stream_and_only_it_finishes_it() {
        let mut stream = MessageStream::default();
        assert!(
            !stream.apply(r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#, &NoStreamObserver).unwrap()
        );
        assert!(!stream.finished());
        assert!(stream.apply(r#"{"type":"message_stop"}"#, &NoStreamObserver).unwrap());
        assert!(stream.finished());
    }

    /// A ping or an unknown event changed nothing and must not restart the idle timer.
    #[test]
    fn pings_and_unknown_events_are_not_progress_red() {
        let mut stream = feed(&[json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})]).unwrap();
        let before = stream.progress();
        for event in [
            r#"{"type":"ping"}"#,
            r#"{"type":"future_event","x":1}"#,
            "",
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#,
            r#"{"type":"message_delta","delta":{},"usage":{}}"#,
        ] {
            assert!(!stream.apply(event, &NoStreamObserver).unwrap());
        }
        assert_eq!(stream.progress(), before);
        stream.apply(&start(0, json!({"type": "text"})).to_string(), &NoStreamObserver).unwrap();
        stream.apply(&delta(0, json!({"type": "text_delta", "text": ""})).to_string(), &NoStreamObserver).unwrap();
        assert_eq!(stream.progress(), before + 1);
    }

    /// L1: a stream of blocks odek does not keep (started, extended, stopped) added nothing to
    /// the answer; counted as progress, they restarted the idle timer for ever.
    #[test]
    fn blocks_of_an_unknown_type_are_not_progress_red() {
        let mut stream = feed(&[json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})]).unwrap();
        let before = stream.progress();
        for index in 0..50 {
            for event in [
                start(index, json!({"type": "server_tool_use", "id": "s", "name": "web_search"})),
                delta(index, json!({"type": "input_json_delta", "partial_json": "{}"})),
                stop(index),
            ] {
                assert!(!stream.apply(&event.to_string(), &NoStreamObserver).unwrap());
            }
        }
        assert_eq!(stream.progress(), before);
        stream.apply(&start(50, json!({"type": "text"})).to_string(), &NoStreamObserver).unwrap();
        assert_eq!(stream.progress(), before + 1);
    }

    #[test]
    fn deltas_must_name_an_open_block_of_their_kind_red() {
        let never = invalid(feed(&[delta(4, json!({"type": "text_delta", "text": "x"}))]));
        assert_eq!(never, "content_block_delta for content block 4, which never started");
        let twice = invalid(feed(&[start(0, json!({"type": "text"})), start(0, json!({"type": "text"}))]));
        assert_eq!(twice, "content block 0 started twice");
        let after_stop = invalid(feed(&[
            start(0, json!({"type": "text"})),
            stop(0),
            delta(0, json!({"type": "text_delta", "text": "x"})),
        ]));
        assert!(after_stop.contains("already stopped"), "{after_stop}");
        let kind = invalid(feed(&[
            start(0, json!({"type": "text"})),
            delta(0, json!({"type": "input_json_delta", "partial_json": "{"})),
        ]));
        assert!(kind.contains("not of its kind"), "{kind}");
        let no_index = invalid(feed(&[json!({"type": "content_block_stop", "index": -1})]));
        assert!(no_index.contains("without a valid index"), "{no_index}");
        // Blocks of unknown types take any delta silently.
        feed(&[
            start(0, json!({"type": "server_tool_use"})),
            delta(0, json!({"type": "input_json_delta", "partial_json": "{"})),
            stop(0),
        ])
        .unwrap()
        .into_response()
        .unwrap();
    }

    #[test]
    fn tool_input_fragments_must_form_an_object_red() {
        let tool = start(1, json!({"type": "tool_use", "id": "t", "name": "shell", "input": {}}));
        let broken = invalid(feed(&[
            tool.clone(),
            delta(1, json!({"type": "input_json_delta", "partial_json": "{\"a\": tru"})),
            stop(1),
        ]));
        assert!(broken.starts_with("tool_use block 1: the input is not valid JSON"), "{broken}");
        let array = invalid(feed(&[
            tool.clone(),
            delta(1, json!({"type": "input_json_delta", "partial_json": "[1]"})),
            stop(1),
        ]));
        assert_eq!(array, "tool_use block 1: the input is not a JSON object");
        // Never stopped: checked when the answer is assembled.
        let unstopped = feed(&[tool, delta(1, json!({"type": "input_json_delta", "partial_json": "{"}))]).unwrap();
        assert!(matches!(unstopped.into_response(), Err(WireError::Invalid(detail)) if detail.contains("block 1")));
    }

    #[test]
    fn the_error_event_is_the_providers_message() {
        let mut stream = MessageStream::default();
        let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(
            matches!(stream.apply(error, &NoStreamObserver), Err(WireError::Provider(message)) if message == "Overloaded")
        );
        assert!(matches!(stream.apply("{nope", &NoStreamObserver), Err(WireError::Invalid(_))));
    }

    #[test]
    fn too_many_tool_calls_are_refused() {
        let events: Vec<Value> = (0..=MAX_TOOL_CALLS as u64)
            .map(|index| start(index, json!({"type": "tool_use", "id": "t", "name": "n"})))
            .collect();
        assert!(invalid(feed(&events)).contains("tool calls"));
    }
}
