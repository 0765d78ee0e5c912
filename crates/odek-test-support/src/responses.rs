//! Scripted OpenAI Responses API answers for the loopback server of [`crate::openai`]: an
//! [`Answer`] (output items, usage, status) rendered as the response object of a plain reply
//! ([`Answer::json`]) or as the typed event stream of a streamed one ([`Answer::sse`]), plus
//! in-stream errors ([`error_stream`]) and HTTP error bodies ([`error_status`],
//! [`context_length_exceeded`]). Field and event names follow OpenAI's published Responses API
//! reference; every stream event carries its `sequence_number`. No second server: each builder
//! returns an [`crate::openai::Reply`] for [`crate::openai::ScriptedServer`].
//!
//! A stream renders as `response.created`, `response.in_progress`, then per output item
//! `response.output_item.added`, its deltas (text in pieces of [`TEXT_DELTA_CHARS`] characters
//! inside `content_part` events, arguments in fragments of [`ARGUMENT_FRAGMENT_CHARS`] then
//! `.done`, reasoning summary text inside `reasoning_summary_part` events) and
//! `response.output_item.done`, and last `response.completed` (or `.incomplete`, or
//! `response.failed`) with the whole response object. Cut or edit [`Answer::events`] for
//! broken streams.

use serde_json::{Value, json};

use crate::openai::Reply;

/// Characters per streamed text or summary delta.
pub const TEXT_DELTA_CHARS: usize = 4;
/// Characters per streamed function-call argument fragment.
pub const ARGUMENT_FRAGMENT_CHARS: usize = 5;
/// The `id` of every scripted response.
pub const RESPONSE_ID: &str = "resp_scripted";
/// OpenAI's text for a request over the context window (HTTP 400, `context_length_exceeded`).
pub const CONTEXT_WINDOW_MESSAGE: &str =
    "Your input exceeds the context window of this model. Please adjust your input and try again.";

/// One output item of a scripted answer.
#[derive(Debug, Clone)]
enum Output {
    Text(String),
    Refusal(String),
    FunctionCall { call_id: String, name: String, arguments: String },
    Reasoning { id: String, summary: Vec<String>, encrypted_content: String },
}

/// How the scripted response ends.
#[derive(Debug, Clone, Default)]
enum Status {
    #[default]
    Completed,
    Incomplete(String),
    Failed {
        code: String,
        message: String,
    },
}

/// A scripted answer: output items in order, usage, status.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    output: Vec<Output>,
    /// `(input_tokens, output_tokens, cached_tokens)`.
    usage: Option<(u64, u64, u64)>,
    status: Status,
}

impl Answer {
    /// An empty completed answer; add items with the `with_*` builders.
    pub fn new() -> Answer {
        Answer::default()
    }

    /// A completed answer of one message with this text.
    pub fn text(text: impl Into<String>) -> Answer {
        Answer::new().with_text(text)
    }

    /// A response that failed (`status: "failed"` with this `error`).
    pub fn failed(code: impl Into<String>, message: impl Into<String>) -> Answer {
        Answer { status: Status::Failed { code: code.into(), message: message.into() }, ..Answer::new() }
    }

    /// Adds a `message` item with one `output_text` part.
    pub fn with_text(mut self, text: impl Into<String>) -> Answer {
        self.output.push(Output::Text(text.into()));
        self
    }

    /// Adds a `message` item with one `refusal` part.
    pub fn with_refusal(mut self, refusal: impl Into<String>) -> Answer {
        self.output.push(Output::Refusal(refusal.into()));
        self
    }

    /// Adds a `function_call` item (its item `id` is `fc_<position>`, distinct from `call_id`).
    pub fn with_function_call(
        mut self,
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Answer {
        self.output.push(Output::FunctionCall {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }

    /// Adds a `reasoning` item with these summary texts and encrypted content.
    pub fn with_reasoning(
        mut self,
        id: impl Into<String>,
        summary: &[&str],
        encrypted_content: impl Into<String>,
    ) -> Answer {
        let summary = summary.iter().map(|text| (*text).to_owned()).collect();
        self.output.push(Output::Reasoning { id: id.into(), summary, encrypted_content: encrypted_content.into() });
        self
    }

    /// Reports this usage (`input_tokens` including `cached_tokens`, `output_tokens`).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64, cached_tokens: u64) -> Answer {
        self.usage = Some((input_tokens, output_tokens, cached_tokens));
        self
    }

    /// Ends as `status: "incomplete"` with this `incomplete_details.reason`.
    pub fn incomplete(mut self, reason: impl Into<String>) -> Answer {
        self.status = Status::Incomplete(reason.into());
        self
    }

    /// The plain reply: HTTP 200 with the response object.
    pub fn json(&self) -> Reply {
        Reply::status(200, self.response().to_string())
    }

    /// The streamed reply: [`Answer::frames`] as SSE.
    pub fn sse(&self) -> Reply {
        Reply::sse_frames(self.frames())
    }

    /// The stream events as SSE frames (`event: <type>\ndata: <json>\n\n`).
    pub fn frames(&self) -> Vec<String> {
        frames(&self.events())
    }

    /// The whole response object, as a plain reply and the end marker carry it.
    pub fn response(&self) -> Value {
        let output: Vec<Value> = self.output.iter().enumerate().map(|(index, item)| whole_item(item, index)).collect();
        let (status, error, incomplete) = match &self.status {
            Status::Completed => ("completed", Value::Null, Value::Null),
            Status::Incomplete(reason) => ("incomplete", Value::Null, json!({"reason": reason})),
            Status::Failed { code, message } => ("failed", json!({"code": code, "message": message}), Value::Null),
        };
        let mut response = response_skeleton(status);
        response["error"] = error;
        response["incomplete_details"] = incomplete;
        response["output"] = Value::Array(output);
        response["usage"] = self.usage.map_or(Value::Null, |(input, output, cached)| usage_json(input, output, cached));
        response
    }

    /// The stream events in order, numbered.
    pub fn events(&self) -> Vec<Value> {
        let mut events = vec![
            json!({"type": "response.created", "response": response_skeleton("in_progress")}),
            json!({"type": "response.in_progress", "response": response_skeleton("in_progress")}),
        ];
        if let Status::Failed { .. } = self.status {
            events.push(json!({"type": "response.failed", "response": self.response()}));
            return numbered(events);
        }
        for (index, item) in self.output.iter().enumerate() {
            item_events(item, index, &mut events);
        }
        let end =
            if matches!(self.status, Status::Incomplete(_)) { "response.incomplete" } else { "response.completed" };
        events.push(json!({"type": end, "response": self.response()}));
        numbered(events)
    }
}

/// An in-stream `error` event after `response.created`.
pub fn error_stream(code: &str, message: &str) -> Reply {
    let events = vec![
        json!({"type": "response.created", "response": response_skeleton("in_progress")}),
        json!({"type": "error", "code": code, "message": message, "param": null}),
    ];
    Reply::sse_frames(frames(&numbered(events)))
}

/// An HTTP error with the API's error body.
pub fn error_status(status: u16, kind: &str, code: &str, message: &str) -> Reply {
    Reply::status(status, error_body(kind, code, message))
}

/// The API's error body: `{"error": {"message", "type", "param", "code"}}`.
pub fn error_body(kind: &str, code: &str, message: &str) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

/// HTTP 400 `context_length_exceeded` with [`CONTEXT_WINDOW_MESSAGE`].
pub fn context_length_exceeded() -> Reply {
    error_status(400, "invalid_request_error", "context_length_exceeded", CONTEXT_WINDOW_MESSAGE)
}

/// Each event as one named SSE frame.
pub fn frames(events: &[Value]) -> Vec<String> {
    events.iter().map(frame).collect()
}

/// `event: <type>\ndata: <json>\n\n`.
pub fn frame(event: &Value) -> String {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("message");
    format!("event: {kind}\ndata: {event}\n\n")
}

/// The events with `sequence_number` 0, 1, 2… in order.
fn numbered(mut events: Vec<Value>) -> Vec<Value> {
    for (number, event) in events.iter_mut().enumerate() {
        event["sequence_number"] = Value::from(number);
    }
    events
}

fn response_skeleton(status: &str) -> Value {
    json!({
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": "scripted",
        "output": [],
        "parallel_tool_calls": true,
        "store": false,
        "usage": null,
    })
}

fn usage_json(input: u64, output: u64, cached: u64) -> Value {
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    })
}

fn item_id(item: &Output, index: usize) -> String {
    match item {
        Output::Text(_) | Output::Refusal(_) => format!("msg_{index}"),
        Output::FunctionCall { .. } => format!("fc_{index}"),
        Output::Reasoning { id, .. } => id.clone(),
    }
}

/// A message's content part, with `text` (empty while streaming).
fn content_part(item: &Output, text: &str) -> Value {
    match item {
        Output::Refusal(_) => json!({"type": "refusal", "refusal": text}),
        _ => json!({"type": "output_text", "text": text, "annotations": []}),
    }
}

/// The item as `output` and `response.output_item.done` carry it.
fn whole_item(item: &Output, index: usize) -> Value {
    let id = item_id(item, index);
    match item {
        Output::Text(text) | Output::Refusal(text) => json!({
            "type": "message", "id": id, "status": "completed", "role": "assistant",
            "content": [content_part(item, text)],
        }),
        Output::FunctionCall { call_id, name, arguments } => json!({
            "type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": arguments,
            "status": "completed",
        }),
        Output::Reasoning { summary, encrypted_content, .. } => json!({
            "type": "reasoning", "id": id,
            "summary": summary.iter().map(|text| json!({"type": "summary_text", "text": text})).collect::<Vec<_>>(),
            "encrypted_content": encrypted_content,
        }),
    }
}

/// The item as `response.output_item.added` carries it: no text, arguments or summary yet.
fn started_item(item: &Output, index: usize) -> Value {
    let mut started = whole_item(item, index);
    match item {
        Output::Text(_) | Output::Refusal(_) => {
            started["status"] = Value::from("in_progress");
            started["content"] = json!([]);
        }
        Output::FunctionCall { .. } => {
            started["status"] = Value::from("in_progress");
            started["arguments"] = Value::from("");
        }
        Output::Reasoning { .. } => {
            started["summary"] = json!([]);
            started["encrypted_content"] = Value::Null;
        }
    }
    started
}

/// The events that stream one item at `index`.
fn item_events(item: &Output, index: usize, events: &mut Vec<Value>) {
    let item_id = item_id(item, index);
    let at = |kind: &str| json!({"type": kind, "item_id": item_id, "output_index": index});
    events
        .push(json!({"type": "response.output_item.added", "output_index": index, "item": started_item(item, index)}));
    match item {
        Output::Text(text) | Output::Refusal(text) => {
            let (delta_kind, done_kind, field) = match item {
                Output::Refusal(_) => ("response.refusal.delta", "response.refusal.done", "refusal"),
                _ => ("response.output_text.delta", "response.output_text.done", "text"),
            };
            let in_part = |kind: &str, key: &str, value: Value| {
                let mut event = at(kind);
                event["content_index"] = Value::from(0);
                event[key] = value;
                event
            };
            events.push(in_part("response.content_part.added", "part", content_part(item, "")));
            for piece in pieces(text, TEXT_DELTA_CHARS) {
                events.push(in_part(delta_kind, "delta", Value::from(piece)));
            }
            events.push(in_part(done_kind, field, Value::from(text.as_str())));
            events.push(in_part("response.content_part.done", "part", content_part(item, text)));
        }
        Output::FunctionCall { arguments, .. } => {
            for piece in pieces(arguments, ARGUMENT_FRAGMENT_CHARS) {
                let mut event = at("response.function_call_arguments.delta");
                event["delta"] = Value::from(piece);
                events.push(event);
            }
            let mut done = at("response.function_call_arguments.done");
            done["arguments"] = Value::from(arguments.as_str());
            events.push(done);
        }
        Output::Reasoning { summary, .. } => {
            for (summary_index, text) in summary.iter().enumerate() {
                let part = |kind: &str, text: &str| {
                    let mut event = at(kind);
                    event["summary_index"] = Value::from(summary_index);
                    event["part"] = json!({"type": "summary_text", "text": text});
                    event
                };
                events.push(part("response.reasoning_summary_part.added", ""));
                for piece in pieces(text, TEXT_DELTA_CHARS) {
                    let mut event = at("response.reasoning_summary_text.delta");
                    event["summary_index"] = Value::from(summary_index);
                    event["delta"] = Value::from(piece);
                    events.push(event);
                }
                let mut done = at("response.reasoning_summary_text.done");
                done["summary_index"] = Value::from(summary_index);
                done["text"] = Value::from(text.as_str());
                events.push(done);
                events.push(part("response.reasoning_summary_part.done", text));
            }
        }
    }
    events.push(json!({"type": "response.output_item.done", "output_index": index, "item": whole_item(item, index)}));
}

/// `text` in pieces of at most `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|piece| piece.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().map(|event| event["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn a_stream_numbers_its_events_and_ends_with_the_whole_response() {
        let answer = Answer::new()
            .with_reasoning("rs_1", &["plan it"], "enc")
            .with_text("hello world")
            .with_function_call("call_1", "shell", r#"{"command":"ls -la"}"#)
            .with_usage(10, 5, 3);
        let events = answer.events();
        for (number, event) in events.iter().enumerate() {
            assert_eq!(event["sequence_number"], number);
        }
        let kinds = types(&events);
        assert_eq!(kinds[..3], ["response.created", "response.in_progress", "response.output_item.added"]);
        assert_eq!(kinds.last(), Some(&"response.completed"));
        assert!(kinds.iter().filter(|kind| **kind == "response.output_text.delta").count() > 1, "{kinds:?}");
        assert!(kinds.iter().filter(|kind| **kind == "response.function_call_arguments.delta").count() > 1);
        assert!(kinds.contains(&"response.reasoning_summary_text.delta"));
        let end = &events[events.len() - 1]["response"];
        assert_eq!(end, &answer.response());
        assert_eq!(end["usage"]["input_tokens_details"]["cached_tokens"], 3);
        assert_eq!(end["output"][2]["call_id"], "call_1");
        assert_eq!(end["output"][2]["id"], "fc_2");
        assert!(answer.frames()[0].starts_with("event: response.created\ndata: {"));
    }

    #[test]
    fn failed_and_incomplete_answers_end_as_such() {
        let failed = Answer::failed("server_error", "boom").events();
        assert_eq!(types(&failed), ["response.created", "response.in_progress", "response.failed"]);
        assert_eq!(failed[2]["response"]["error"]["message"], "boom");
        let incomplete = Answer::text("cut").incomplete("max_output_tokens");
        assert_eq!(incomplete.response()["incomplete_details"]["reason"], "max_output_tokens");
        assert_eq!(types(&incomplete.events()).last(), Some(&"response.incomplete"));
    }
}
