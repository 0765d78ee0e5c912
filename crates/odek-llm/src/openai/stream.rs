//! One streamed chat completion put back together: content and reasoning deltas, tool-call
//! fragments merged by `index`, the finish reason and the usage of the final chunk. It owns the
//! meaning of a chunk, not the SSE framing (`crate::sse`) nor the HTTP body (`super`).
//! Start at [`StreamAccumulator::apply`].

use std::collections::BTreeMap;

use serde_json::Value;

use super::wire;
use crate::http::StreamDecoder;
use crate::message::{Message, ToolCall, Usage};
use crate::provider::{ChatResponse, StreamObserver};
use crate::wire::{MAX_TOOL_CALLS, WireError, provider_error_in};

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct StreamAccumulator {
    content: String,
    reasoning: String,
    /// Tool calls by their stream `index`, so fragments land on the right call.
    tool_calls: BTreeMap<u64, PartialToolCall>,
    /// The index the last fragment went to (for servers that omit `index`).
    last_index: Option<u64>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    /// Counts the chunks that added to the answer; the idle timer only restarts when it moves.
    progress: u64,
}

#[derive(Debug, Default)]
struct PartialToolCall {
    id: String,
    name: String,
    arguments: String,
}

impl StreamAccumulator {
    /// Applies one chunk (the JSON of one `data:` event), telling `observer` about new text.
    pub(crate) fn apply_chunk(&mut self, chunk: &Value, observer: &dyn StreamObserver) -> Result<(), WireError> {
        if let Some(message) = provider_error_in(chunk) {
            return Err(WireError::Provider(message));
        }
        // Progress is a change to the answer: a chunk repeating the same usage, finish reason
        // or tool-call id every few seconds must not hold the call open forever.
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            let usage = wire::usage_from(usage);
            if self.usage != Some(usage) {
                self.usage = Some(usage);
                self.progress += 1;
            }
        }
        let Some(choice) = wire::first_choice(chunk) else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str)
            && self.finish_reason.as_deref() != Some(reason)
        {
            self.finish_reason = Some(reason.to_owned());
            self.progress += 1;
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = wire::reasoning_text(delta).filter(|text| !text.is_empty()) {
            observer.on_delta(&text, true);
            self.reasoning.push_str(&text);
            self.progress += 1;
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|text| !text.is_empty()) {
            observer.on_delta(text, false);
            self.content.push_str(text);
            self.progress += 1;
        }
        if let Some(fragments) = delta.get("tool_calls").and_then(Value::as_array) {
            for fragment in fragments {
                self.merge_tool_call_fragment(fragment)?;
            }
        }
        Ok(())
    }

    /// Merges one `tool_calls` delta: `id` and `name` arrive once (a repeated name is not
    /// doubled), `arguments` arrives in pieces that are appended in order. A fragment without
    /// `index` continues the previous call unless it brings a new `id`.
    fn merge_tool_call_fragment(&mut self, fragment: &Value) -> Result<(), WireError> {
        let id = fragment.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let index = match fragment.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            None => match (self.last_index, id) {
                (Some(last), Some(id)) if self.tool_calls.get(&last).is_some_and(|call| call.id != id) => last + 1,
                (Some(last), _) => last,
                (None, _) => 0,
            },
        };
        if !self.tool_calls.contains_key(&index) && self.tool_calls.len() >= MAX_TOOL_CALLS {
            return Err(WireError::Invalid(format!("more than {MAX_TOOL_CALLS} tool calls in one answer")));
        }
        self.last_index = Some(index);
        let call = self.tool_calls.entry(index).or_default();
        let mut changed = false;
        if let Some(id) = id
            && call.id != id
        {
            id.clone_into(&mut call.id);
            changed = true;
        }
        let function = fragment.get("function");
        let name = function.and_then(|function| function.get("name")).and_then(Value::as_str);
        let arguments = function.and_then(|function| function.get("arguments"));
        if let Some(name) = name.filter(|name| !name.is_empty()) {
            if call.name.is_empty() {
                name.clone_into(&mut call.name);
                changed = true;
            } else if call.name != name {
                call.name.push_str(name);
                changed = true;
            }
        }
        match arguments {
            Some(Value::String(piece)) if !piece.is_empty() => {
                call.arguments.push_str(piece);
                changed = true;
            }
            Some(Value::String(_) | Value::Null) | None => {}
            Some(whole) => {
                let whole = whole.to_string();
                changed |= call.arguments != whole;
                call.arguments = whole;
            }
        }
        if changed {
            self.progress += 1;
        }
        Ok(())
    }
}

impl StreamDecoder for StreamAccumulator {
    /// One `data:` event: `[DONE]` ends the stream, an empty one is skipped, anything else
    /// must be a JSON chunk.
    fn apply(&mut self, data: &str, observer: &dyn StreamObserver) -> Result<bool, WireError> {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        if let Some(chunk) = crate::wire::event_json(data)? {
            self.apply_chunk(&chunk, observer)?;
        }
        Ok(false)
    }

    /// How many chunks added something to the answer so far: text, reasoning, a tool-call
    /// piece, the finish reason or usage. Keep-alive comments never reach the accumulator and
    /// empty chunks (`{"choices":[{"delta":{}}]}`) leave it where it was.
    fn progress(&self) -> u64 {
        self.progress
    }

    /// Whether the stream reached a finish reason (the answer is whole even without `[DONE]`).
    fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The assembled answer.
    fn into_response(self) -> Result<ChatResponse, WireError> {
        let mut tool_calls = Vec::with_capacity(self.tool_calls.len());
        for (index, call) in self.tool_calls {
            if call.name.is_empty() {
                return Err(WireError::Invalid(format!("streamed tool call {index} has no function name")));
            }
            tool_calls.push(ToolCall::new(call.id, call.name, call.arguments));
        }
        Ok(ChatResponse {
            message: Message {
                reasoning_content: Some(self.reasoning).filter(|text| !text.is_empty()),
                tool_calls,
                ..Message::assistant(self.content)
            },
            usage: self.usage.unwrap_or_default(),
            finish_reason: self.finish_reason,
            model: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::provider::NoStreamObserver;

    #[test]
    fn fragments_are_merged_by_index() {
        let mut acc = StreamAccumulator::default();
        let chunks = [
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"read","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"shell","arguments":"{\"co"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"mmand\":1}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}),
        ];
        for chunk in &chunks {
            acc.apply_chunk(chunk, &NoStreamObserver).unwrap();
        }
        let response = acc.into_response().unwrap();
        assert_eq!(
            response.message.tool_calls,
            vec![ToolCall::new("a", "shell", "{\"command\":1}"), ToolCall::new("b", "read", "{}")]
        );
        assert_eq!(response.usage, Usage::new(3, 4));
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn fragments_without_index_follow_ids() {
        let mut acc = StreamAccumulator::default();
        for chunk in [
            json!({"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"a","arguments":"{"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"id":"y","function":{"name":"b","arguments":{"k":1}}}]}}]}),
        ] {
            acc.apply_chunk(&chunk, &NoStreamObserver).unwrap();
        }
        let calls = acc.into_response().unwrap().message.tool_calls;
        assert_eq!(calls, vec![ToolCall::new("x", "a", "{}"), ToolCall::new("y", "b", "{\"k\":1}")]);
    }
}
