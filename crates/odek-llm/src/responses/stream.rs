//! One streamed Responses API answer put back together from its typed events: output items
//! by `output_index`, the text, argument and reasoning-summary deltas applied to them, each
//! item's final form from `response.output_item.done`, and the end marker
//! (`response.completed` / `response.incomplete`) whose response object carries the usage and,
//! when it has output, the authoritative items. It owns the meaning of an event, not the SSE
//! framing (`crate::sse`) nor the HTTP body (`super`). Start at [`ResponseStream::apply`].
//!
//! Event handling, by `type` (inside the data; the SSE `event:` line is not read):
//!
//! - `response.output_item.added` / `.done`: the item at `output_index` (`.done` replaces
//!   whatever the deltas made).
//! - `response.output_text.delta`, `response.refusal.delta`: appended to the message item.
//! - `response.function_call_arguments.delta`: appended; `.done`: the whole arguments.
//! - `response.reasoning_summary_text.delta`: appended to summary part `summary_index` (the
//!   next index starts a part).
//! - `response.completed`, `response.incomplete`: the end; `response.failed` and `error`: the
//!   provider's error.
//! - anything else (`response.created`, `response.in_progress`, content-part and `.done` text
//!   events, other tools' events): ignored.
//!
//! A delta for an `output_index` never added, or for an item of another kind, is an invalid
//! response. A delta for an item of a type odek does not read is ignored with it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::wire::{self, Item, MAX_OUTPUT_ITEMS};
use crate::http::StreamDecoder;
use crate::message::Usage;
use crate::provider::{ChatResponse, StreamObserver};
use crate::wire::{WireError, bound_detail, provider_error_in};

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct ResponseStream {
    /// Output items by their `output_index`.
    items: BTreeMap<u64, Item>,
    /// What the end marker said, once it came.
    end: Option<End>,
    /// Counts the events that changed the answer.
    progress: u64,
}

/// The end marker's response object, as far as the answer needs it.
#[derive(Debug)]
struct End {
    usage: Usage,
    finish_reason: Option<String>,
    /// Its `output`, when non-empty: the authority over the streamed items.
    output: Option<Vec<Item>>,
}

/// Which part of an item a delta extends.
#[derive(Debug, Clone, Copy)]
enum Delta {
    Text,
    Arguments,
    Summary,
}

impl ResponseStream {
    /// Applies one event (its JSON data), telling `observer` about new text; `true` at the end
    /// marker.
    fn apply_event(&mut self, event: &Value, observer: &dyn StreamObserver) -> Result<bool, WireError> {
        let Some(kind) = event.get("type").and_then(Value::as_str) else {
            return Err(match provider_error_in(event) {
                Some(message) => WireError::Provider(message),
                None => WireError::Invalid("stream event has no type".to_owned()),
            });
        };
        match kind {
            "response.output_item.added" | "response.output_item.done" => self.put_item(event)?,
            "response.output_text.delta" | "response.refusal.delta" => {
                self.extend(event, Delta::Text, observer)?;
            }
            "response.function_call_arguments.delta" => self.extend(event, Delta::Arguments, observer)?,
            "response.function_call_arguments.done" => self.replace_arguments(event)?,
            "response.reasoning_summary_text.delta" => self.extend(event, Delta::Summary, observer)?,
            "response.completed" | "response.incomplete" => {
                self.end = Some(end_of(event, kind)?);
                self.progress += 1;
                return Ok(true);
            }
            "response.failed" => return Err(wire::failure(event.get("response").unwrap_or(&Value::Null))),
            "error" => return Err(WireError::Provider(error_event_message(event))),
            _ => {}
        }
        Ok(false)
    }

    /// `response.output_item.added` or `.done`: the item at `output_index` is this one.
    fn put_item(&mut self, event: &Value) -> Result<(), WireError> {
        let index = output_index(event)?;
        let item = event
            .get("item")
            .filter(|item| item.is_object())
            .ok_or_else(|| WireError::Invalid(format!("output item event {index} has no item")))?;
        let item = Item::from_value(item)?;
        if !self.items.contains_key(&index) && self.items.len() >= MAX_OUTPUT_ITEMS {
            return Err(wire::too_many_items());
        }
        let changed = item != Item::Other && self.items.get(&index) != Some(&item);
        self.items.insert(index, item);
        if changed {
            self.progress += 1;
        }
        Ok(())
    }

    /// A text, arguments or summary delta appended to the item at `output_index`.
    fn extend(&mut self, event: &Value, delta: Delta, observer: &dyn StreamObserver) -> Result<(), WireError> {
        let index = output_index(event)?;
        let piece = event.get("delta").and_then(Value::as_str).unwrap_or_default();
        let item = self.item_mut(index)?;
        match (delta, item) {
            (_, Item::Other) => return Ok(()),
            (Delta::Text, Item::Message { text }) => {
                text.push_str(piece);
                if !piece.is_empty() {
                    observer.on_delta(piece, false);
                }
            }
            (Delta::Arguments, Item::FunctionCall { arguments, .. }) => arguments.push_str(piece),
            (Delta::Summary, Item::Reasoning { summary, .. }) => {
                append_summary(summary, event.get("summary_index").and_then(Value::as_u64), piece)?;
                if !piece.is_empty() {
                    observer.on_delta(piece, true);
                }
            }
            (delta, _) => {
                return Err(WireError::Invalid(format!("a {delta:?} delta for output item {index} of another kind")));
            }
        }
        if !piece.is_empty() {
            self.progress += 1;
        }
        Ok(())
    }

    /// `response.function_call_arguments.done`: the whole arguments replace the joined deltas.
    fn replace_arguments(&mut self, event: &Value) -> Result<(), WireError> {
        let index = output_index(event)?;
        let Some(whole) = event.get("arguments").and_then(Value::as_str) else {
            return Ok(());
        };
        match self.item_mut(index)? {
            Item::FunctionCall { arguments, .. } => {
                if arguments != whole {
                    whole.clone_into(arguments);
                    self.progress += 1;
                }
                Ok(())
            }
            Item::Other => Ok(()),
            _ => Err(WireError::Invalid(format!("function call arguments for output item {index} of another kind"))),
        }
    }

    fn item_mut(&mut self, index: u64) -> Result<&mut Item, WireError> {
        self.items
            .get_mut(&index)
            .ok_or_else(|| WireError::Invalid(format!("a delta for output item {index}, never added")))
    }
}

/// Appends `piece` to summary part `index`: the next index starts a part, a missing index
/// continues the last part, an index past the next one is invalid.
fn append_summary(summary: &mut Vec<String>, index: Option<u64>, piece: &str) -> Result<(), WireError> {
    let len = summary.len() as u64;
    let index = index.unwrap_or(len.saturating_sub(1));
    match summary.get_mut(usize::try_from(index).unwrap_or(usize::MAX)) {
        Some(part) => part.push_str(piece),
        None if index == len => summary.push(piece.to_owned()),
        None => return Err(WireError::Invalid(format!("reasoning summary part {index} skips part {len}"))),
    }
    Ok(())
}

/// The `output_index` of an item event.
fn output_index(event: &Value) -> Result<u64, WireError> {
    event
        .get("output_index")
        .and_then(Value::as_u64)
        .ok_or_else(|| WireError::Invalid("stream event has no output_index".to_owned()))
}

/// The end marker's response object: its usage, finish reason (the event's own status when
/// the object has none) and output.
fn end_of(event: &Value, kind: &str) -> Result<End, WireError> {
    let response = event.get("response").unwrap_or(&Value::Null);
    let implied = if kind == "response.completed" { "completed" } else { "incomplete" };
    let finish_reason = wire::finish_reason(response)?.unwrap_or_else(|| implied.to_owned());
    let output = match wire::output_items(response) {
        Some(items) => Some(items?).filter(|items| !items.is_empty()),
        None => None,
    };
    Ok(End { usage: wire::response_usage(response), finish_reason: Some(finish_reason), output })
}

/// An `error` event's text: its `message`, else a nested error's, else its `code`.
fn error_event_message(event: &Value) -> String {
    event
        .get("message")
        .and_then(Value::as_str)
        .map(bound_detail)
        .or_else(|| provider_error_in(event))
        .or_else(|| event.get("code").and_then(Value::as_str).map(|code| bound_detail(&format!("error {code}"))))
        .unwrap_or_else(|| "error event without a message".to_owned())
}

impl StreamDecoder for ResponseStream {
    /// One event's data: empty data (and a `[DONE]` some gateways add) is skipped, anything
    /// else must be a JSON event.
    fn apply(&mut self, data: &str, observer: &dyn StreamObserver) -> Result<bool, WireError> {
        if data.trim() == "[DONE]" {
            return Ok(false);
        }
        match crate::wire::event_json(data)? {
            Some(event) => self.apply_event(&event, observer),
            None => Ok(false),
        }
    }

    /// How many events changed the answer: an item added or replaced by a different one, a
    /// non-empty delta, new whole arguments, the end marker. Lifecycle events, ignored types
    /// and repeats leave it where it was.
    fn progress(&self) -> u64 {
        self.progress
    }

    /// Only the end marker makes the answer whole.
    fn finished(&self) -> bool {
        self.end.is_some()
    }

    /// The assembled answer: the end marker's output when it had some, the streamed items
    /// otherwise.
    fn into_response(self) -> Result<ChatResponse, WireError> {
        let end =
            self.end.ok_or_else(|| WireError::Invalid("the stream ended before response.completed".to_owned()))?;
        let message = match &end.output {
            Some(items) => wire::message_from(items)?,
            None => wire::message_from(self.items.values())?,
        };
        Ok(ChatResponse { message, usage: end.usage, finish_reason: end.finish_reason, model: None })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::message::{ReasoningBlock, ToolCall};
    use crate::provider::NoStreamObserver;

    #[derive(Default)]
    struct Seen(Mutex<Vec<(String, bool)>>);

    impl StreamObserver for Seen {
        fn on_delta(&self, text: &str, reasoning: bool) {
            self.0.lock().unwrap().push((text.to_owned(), reasoning));
        }
    }

    fn run(events: &[Value], observer: &dyn StreamObserver) -> Result<ResponseStream, WireError> {
        let mut stream = ResponseStream::default();
        for event in events {
            if stream.apply(&event.to_string(), observer)? {
                break;
            }
        }
        Ok(stream)
    }

    fn completed() -> Value {
        json!({"type": "response.completed", "response": {"status": "completed", "output": [],
            "usage": {"input_tokens": 9, "output_tokens": 2}}})
    }

    #[test]
    fn deltas_build_items_and_done_events_take_precedence() {
        let events = [
            json!({"type": "response.created", "response": {"status": "in_progress", "output": []}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "thin"}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "king"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "thinking"}], "encrypted_content": "enc"}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Hi"}),
            json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call",
                "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"a\""}),
            json!({"type": "response.function_call_arguments.done", "output_index": 2, "arguments": "{\"a\":1}"}),
            completed(),
        ];
        let seen = Seen::default();
        let response = run(&events, &seen).unwrap().into_response().unwrap();
        assert_eq!(response.message.content, "Hi");
        assert_eq!(response.message.tool_calls, vec![ToolCall::new("call_1", "shell", "{\"a\":1}")]);
        assert_eq!(response.message.reasoning_content.as_deref(), Some("thinking"));
        assert_eq!(
            response.message.reasoning_blocks,
            vec![ReasoningBlock::Reasoning {
                id: "rs_1".into(),
                summary: vec!["thinking".into()],
                encrypted_content: Some("enc".into())
            }]
        );
        assert_eq!(response.usage, Usage::new(9, 2));
        assert_eq!(response.finish_reason.as_deref(), Some("completed"));
        let seen = seen.0.lock().unwrap().clone();
        assert_eq!(seen, vec![("thin".into(), true), ("king".into(), true), ("Hi".into(), false)]);
    }

    #[test]
    fn the_end_markers_output_is_the_authority() {
        let events = [
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "draft"}),
            json!({"type": "response.incomplete", "response": {"status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "output": [{"type": "message", "content": [{"type": "output_text", "text": "final"}]}]}}),
        ];
        let response = run(&events, &NoStreamObserver).unwrap().into_response().unwrap();
        assert_eq!(response.message.content, "final");
        assert_eq!(response.finish_reason.as_deref(), Some("max_output_tokens"));
    }

    #[test]
    fn a_delta_for_an_item_never_added_is_invalid_red() {
        let events = [json!({"type": "response.output_text.delta", "output_index": 3, "delta": "x"})];
        assert!(
            matches!(run(&events, &NoStreamObserver), Err(WireError::Invalid(detail)) if detail.contains("never added"))
        );
        let wrong_kind = [
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{"}),
        ];
        assert!(matches!(run(&wrong_kind, &NoStreamObserver), Err(WireError::Invalid(_))));
    }

    #[test]
    fn unknown_events_and_items_change_nothing() {
        let events = [
            json!({"type": "response.in_progress"}),
            json!({"type": "response.something_new", "output_index": 99}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "web_search_call", "id": "ws"}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "ignored with its item"}),
        ];
        let stream = run(&events, &NoStreamObserver).unwrap();
        assert_eq!(stream.progress(), 0);
        assert!(!stream.finished());
    }

    #[test]
    fn summary_indices_may_not_skip_red() {
        let mut summary = Vec::new();
        append_summary(&mut summary, Some(0), "a").unwrap();
        append_summary(&mut summary, None, "b").unwrap();
        append_summary(&mut summary, Some(1), "c").unwrap();
        assert_eq!(summary, vec!["ab".to_owned(), "c".to_owned()]);
        assert!(append_summary(&mut summary, Some(u64::MAX), "x").is_err());
        assert_eq!(summary.len(), 2);
    }

    #[test]
    fn failures_are_the_providers_errors() {
        let failed = json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "server_error", "message": "the model crashed"}}});
        assert!(matches!(run(&[failed], &NoStreamObserver), Err(WireError::Provider(m)) if m == "the model crashed"));
        let error = json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": null});
        assert!(matches!(run(&[error], &NoStreamObserver), Err(WireError::Provider(m)) if m == "slow down"));
        let bare = json!({"error": {"message": "no type"}});
        assert!(matches!(run(&[bare], &NoStreamObserver), Err(WireError::Provider(m)) if m == "no type"));
        assert!(matches!(run(&[json!({"a": 1})], &NoStreamObserver), Err(WireError::Invalid(_))));
    }
}
