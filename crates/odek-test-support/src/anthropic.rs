//! Scripted answers in the exact shapes of Anthropic's Messages API, served by
//! [`crate::openai::ScriptedServer`] (which answers any path, so `/v1/messages` too): a plain
//! message ([`message`]), the same message as a named-event stream ([`stream`]), and error
//! bodies ([`error`]). Build the content with [`text`], [`tool_use`], [`thinking`] and
//! [`redacted_thinking`]; the counts with [`Usage`].
//!
//! A stream is `message_start`, then per block `content_block_start`, its deltas (text in
//! pieces of 4 characters, tool input JSON in fragments of 5, thinking in pieces of 4 then one
//! `signature_delta`) and `content_block_stop`, a `ping` half way, `message_delta` (stop reason,
//! output tokens) and `message_stop`. [`stream_frames`] gives the frames to edit (drop the
//! stop, insert an unknown event) before [`Reply::sse_frames`] sends them.

use serde_json::{Value, json};

use crate::openai::Reply;

/// Characters per streamed text or thinking delta.
const TEXT_DELTA_CHARS: usize = 4;
/// Characters per streamed `input_json_delta` fragment.
const INPUT_FRAGMENT_CHARS: usize = 5;

/// Token counts as Anthropic reports them: `input_tokens` leaves out the cache reads and writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Counts without cache.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage { input_tokens, output_tokens, ..Usage::default() }
    }

    /// The same counts with these cache writes and reads.
    pub fn with_cache(self, cache_creation_input_tokens: u64, cache_read_input_tokens: u64) -> Usage {
        Usage { cache_creation_input_tokens, cache_read_input_tokens, ..self }
    }

    /// The `usage` object.
    pub fn to_json(self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        })
    }
}

/// One content block of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    ToolUse { id: String, name: String, input: Value },
    Thinking { thinking: String, signature: String },
    RedactedThinking { data: String },
}

/// A `text` block.
pub fn text(text: impl Into<String>) -> Block {
    Block::Text(text.into())
}

/// A `tool_use` block; `input` is the arguments object.
pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input }
}

/// A `thinking` block with the signature that vouches for it.
pub fn thinking(thinking: impl Into<String>, signature: impl Into<String>) -> Block {
    Block::Thinking { thinking: thinking.into(), signature: signature.into() }
}

/// A `redacted_thinking` block.
pub fn redacted_thinking(data: impl Into<String>) -> Block {
    Block::RedactedThinking { data: data.into() }
}

impl Block {
    /// The block as a plain answer carries it.
    pub fn to_json(&self) -> Value {
        match self {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::ToolUse { id, name, input } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
            Block::Thinking { thinking, signature } => {
                json!({"type": "thinking", "thinking": thinking, "signature": signature})
            }
            Block::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
        }
    }
}

/// `tool_use` when a block calls a tool, `end_turn` otherwise.
pub fn stop_reason_of(blocks: &[Block]) -> &'static str {
    if blocks.iter().any(|block| matches!(block, Block::ToolUse { .. })) { "tool_use" } else { "end_turn" }
}

/// The body of a plain answer: `{"type": "message", "content": […], "stop_reason", "usage", …}`.
pub fn message_body(blocks: &[Block], usage: Usage) -> Value {
    json!({
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": blocks.iter().map(Block::to_json).collect::<Vec<_>>(),
        "stop_reason": stop_reason_of(blocks),
        "stop_sequence": null,
        "usage": usage.to_json(),
    })
}

/// A plain (JSON) answer.
pub fn message(blocks: Vec<Block>, usage: Usage) -> Reply {
    Reply::status(200, message_body(&blocks, usage).to_string())
}

/// A streamed answer (see the module doc).
pub fn stream(blocks: Vec<Block>, usage: Usage) -> Reply {
    Reply::sse_frames(stream_frames(&blocks, usage))
}

/// One SSE frame: `event: <type>\ndata: <json>\n\n`, the type taken from `data`.
pub fn frame(data: &Value) -> String {
    let kind = data.get("type").and_then(Value::as_str).unwrap_or("message");
    format!("event: {kind}\ndata: {data}\n\n")
}

/// The frames of a streamed answer, in order (see the module doc).
pub fn stream_frames(blocks: &[Block], usage: Usage) -> Vec<String> {
    let start_usage = Usage { output_tokens: 1, ..usage };
    let mut events = vec![json!({
        "type": "message_start",
        "message": {
            "id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-scripted",
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage.to_json(),
        },
    })];
    for (index, block) in blocks.iter().enumerate() {
        events.extend(block_events(index, block));
    }
    events.insert(events.len().div_ceil(2), json!({"type": "ping"}));
    events.push(json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason_of(blocks), "stop_sequence": null},
        "usage": {"output_tokens": usage.output_tokens},
    }));
    events.push(json!({"type": "message_stop"}));
    events.iter().map(frame).collect()
}

/// `content_block_start`, the deltas and `content_block_stop` of one block.
fn block_events(index: usize, block: &Block) -> Vec<Value> {
    let delta = |delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
    let (start, deltas): (Value, Vec<Value>) = match block {
        Block::Text(text) => (
            json!({"type": "text", "text": ""}),
            pieces(text, TEXT_DELTA_CHARS)
                .into_iter()
                .map(|text| delta(json!({"type": "text_delta", "text": text})))
                .collect(),
        ),
        Block::ToolUse { id, name, input } => (
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            pieces(&input.to_string(), INPUT_FRAGMENT_CHARS)
                .into_iter()
                .map(|piece| delta(json!({"type": "input_json_delta", "partial_json": piece})))
                .collect(),
        ),
        Block::Thinking { thinking, signature } => {
            let mut deltas: Vec<Value> = pieces(thinking, TEXT_DELTA_CHARS)
                .into_iter()
                .map(|piece| delta(json!({"type": "thinking_delta", "thinking": piece})))
                .collect();
            deltas.push(delta(json!({"type": "signature_delta", "signature": signature})));
            (json!({"type": "thinking", "thinking": ""}), deltas)
        }
        Block::RedactedThinking { data } => (json!({"type": "redacted_thinking", "data": data}), Vec::new()),
    };
    let mut events = vec![json!({"type": "content_block_start", "index": index, "content_block": start})];
    events.extend(deltas);
    events.push(json!({"type": "content_block_stop", "index": index}));
    events
}

/// An error body: `{"type": "error", "error": {"type": <error_type>, "message": <message>}}`.
pub fn error_body(error_type: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}

/// An HTTP error answer, e.g. `error(529, "overloaded_error", "Overloaded")` or
/// `error(400, "invalid_request_error", "prompt is too long: …")`.
pub fn error(status: u16, error_type: &str, message: &str) -> Reply {
    Reply::status(status, error_body(error_type, message).to_string())
}

/// `text` in pieces of at most `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|piece| piece.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_of(frames: &[String]) -> Vec<Value> {
        frames
            .iter()
            .map(|frame| {
                let (event, data) = frame.trim_end().split_once('\n').unwrap();
                let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                assert_eq!(event.strip_prefix("event: "), data["type"].as_str());
                data
            })
            .collect()
    }

    #[test]
    fn streams_split_text_input_and_thinking_and_end_with_message_stop() {
        let blocks = [
            thinking("a long thought", "sig=="),
            text("hello there"),
            tool_use("toolu_1", "shell", json!({"command": "ls -la"})),
        ];
        let events = data_of(&stream_frames(&blocks, Usage::new(3, 9)));
        let types: Vec<&str> = events.iter().map(|event| event["type"].as_str().unwrap()).collect();
        assert_eq!(types.first(), Some(&"message_start"));
        assert_eq!(&types[types.len() - 2..], ["message_delta", "message_stop"]);
        assert_eq!(types.iter().filter(|kind| **kind == "ping").count(), 1);
        let deltas = |kind: &str| events.iter().filter(|event| event["delta"]["type"] == kind).count();
        assert!(deltas("text_delta") > 1 && deltas("thinking_delta") > 1 && deltas("input_json_delta") > 1);
        assert_eq!(deltas("signature_delta"), 1);
        let input: String = events.iter().filter_map(|event| event["delta"]["partial_json"].as_str()).collect();
        assert_eq!(serde_json::from_str::<Value>(&input).unwrap(), json!({"command": "ls -la"}));
        assert_eq!(events[types.len() - 2]["delta"]["stop_reason"], "tool_use");
    }

    #[test]
    fn plain_bodies_and_errors_have_the_api_shapes() {
        let body = message_body(&[text("hi")], Usage::new(1, 2).with_cache(3, 4));
        assert_eq!(body["type"], "message");
        assert_eq!(body["stop_reason"], "end_turn");
        assert_eq!(body["content"], json!([{"type": "text", "text": "hi"}]));
        assert_eq!(body["usage"]["cache_read_input_tokens"], 4);
        assert_eq!(
            error_body("overloaded_error", "Overloaded"),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        );
    }
}
