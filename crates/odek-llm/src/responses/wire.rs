//! The Responses API wire format: the request body we send (input items, tools, reasoning
//! effort, structured output) and the response object we read back (output items, status,
//! usage), plus the output items both the plain and the streamed path put the answer together
//! from. No HTTP here; start at [`request_body`] and [`parse_response`].

use serde_json::{Map, Value, json};

use crate::message::{Message, ReasoningBlock, Role, ToolCall, ToolDefinition, Usage};
use crate::provider::{ChatRequest, ChatResponse, Thinking};
use crate::wire::{MAX_TOOL_CALLS, WireError, arguments_text, bound_detail, count, provider_error_in};

/// The name the output schema is sent under (`text.format.name`).
const OUTPUT_SCHEMA_NAME: &str = "odek_output";

/// Summary texts of the reasoning items are joined with this into `reasoning_content`.
const SUMMARY_SEPARATOR: &str = "\n\n";

/// At most this many output items (of any type) are read from one answer; more is an invalid
/// response. It bounds what a hostile body can make odek hold, well above any real answer.
pub(crate) const MAX_OUTPUT_ITEMS: usize = 4 * MAX_TOOL_CALLS;

/// The JSON body of one `POST /responses`. Stateless: `store: false`, the reasoning comes back
/// encrypted (`include`), and the whole conversation is sent every time (never a
/// `previous_response_id`).
pub(crate) fn request_body(request: &ChatRequest<'_>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(request.model));
    body.insert("input".into(), Value::Array(input_items(request.messages)));
    body.insert("store".into(), Value::Bool(false));
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if !request.tools.is_empty() {
        body.insert("tools".into(), request.tools.iter().map(wire_tool).collect());
        body.insert("tool_choice".into(), Value::from("auto"));
        body.insert("parallel_tool_calls".into(), Value::Bool(true));
    }
    if request.stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    if let Some(effort) = reasoning_effort(request.thinking) {
        body.insert("reasoning".into(), json!({"effort": effort}));
    }
    if let Some(format) = output_format(request) {
        body.insert("text".into(), json!({"format": format}));
    }
    Value::Object(body)
}

/// Our thinking levels as `reasoning.effort`:
///
/// | `thinking`              | sent                          |
/// |-------------------------|-------------------------------|
/// | `Default`, `Disabled`   | no `reasoning` key            |
/// | `Enabled`               | `"reasoning": {"effort": "medium"}` |
/// | `Low`, `Medium`, `High` | `"low"`, `"medium"`, `"high"` |
///
/// `Disabled` sends nothing because the API has no "off" every model accepts; the model's
/// default applies.
pub(crate) fn reasoning_effort(thinking: Thinking) -> Option<&'static str> {
    match thinking {
        Thinking::Default | Thinking::Disabled => None,
        Thinking::Low => Some("low"),
        Thinking::Enabled | Thinking::Medium => Some("medium"),
        Thinking::High => Some("high"),
    }
}

/// `text.format` for a call with an output schema whose root is `"type": "object"` (the format
/// promises an object); a side call (summary, digest) is prose and asks for nothing.
/// `strict: false`: strict mode accepts only a subset of JSON Schema, and odek validates the
/// answer itself.
fn output_format(request: &ChatRequest<'_>) -> Option<Value> {
    let schema = request.output_schema.filter(|_| !request.side_call)?;
    (schema.get("type").and_then(Value::as_str) == Some("object"))
        .then(|| json!({"type": "json_schema", "name": OUTPUT_SCHEMA_NAME, "schema": schema, "strict": false}))
}

fn wire_tool(tool: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": false,
    })
}

/// The conversation as input items. System messages go as role `system` (which OpenAI reads as
/// `developer` on reasoning models, and which the compatible servers know too).
fn input_items(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::with_capacity(messages.len());
    for message in messages {
        match message.role {
            Role::System => items.push(text_message("system", &message.content)),
            Role::User => items.push(text_message("user", &message.content)),
            Role::Assistant => push_assistant_items(message, &mut items),
            Role::Tool => items.push(json!({
                "type": "function_call_output",
                "call_id": message.tool_call_id.as_deref().unwrap_or_default(),
                "output": message.content,
            })),
        }
    }
    items
}

fn text_message(role: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": text})
}

/// An assistant turn: its reasoning items first (as received), then its text, then one
/// `function_call` per tool call. Only Responses reasoning items are sent: Anthropic's
/// thinking blocks and plain `reasoning_content` have no place in this API. A reasoning item
/// without `encrypted_content` is not sent either: with `store: false` the server could not
/// resolve it by its id and would refuse the request.
fn push_assistant_items(message: &Message, items: &mut Vec<Value>) {
    for block in &message.reasoning_blocks {
        if let ReasoningBlock::Reasoning { id, summary, encrypted_content: Some(encrypted) } = block {
            let summary: Vec<Value> =
                summary.iter().map(|text| json!({"type": "summary_text", "text": text})).collect();
            let mut item = Map::new();
            item.insert("type".into(), Value::from("reasoning"));
            if !id.is_empty() {
                item.insert("id".into(), Value::from(id.as_str()));
            }
            item.insert("summary".into(), Value::Array(summary));
            item.insert("encrypted_content".into(), Value::from(encrypted.as_str()));
            items.push(Value::Object(item));
        }
    }
    if !message.content.is_empty() {
        items.push(json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": message.content}],
        }));
    }
    for call in &message.tool_calls {
        items.push(json!({
            "type": "function_call",
            "call_id": call.id,
            "name": call.function.name,
            "arguments": call.function.arguments,
        }));
    }
}

/// One output item, as far as odek reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// A `message`: its `output_text` and `refusal` parts joined in order.
    Message { text: String },
    /// A `function_call`; `call_id` pairs it with its `function_call_output`.
    FunctionCall { call_id: String, name: String, arguments: String },
    /// A `reasoning` item, kept verbatim to be sent back.
    Reasoning { id: String, summary: Vec<String>, encrypted_content: Option<String> },
    /// Any other item type (web search calls and the like): ignored.
    Other,
}

impl Item {
    /// Reads one output item. A `function_call` without a name is invalid; missing ids read as
    /// empty (the loop names an id-less call).
    pub(crate) fn from_value(item: &Value) -> Result<Item, WireError> {
        let text_field = |field: &str| item.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
        match item.get("type").and_then(Value::as_str) {
            Some("message") => Ok(Item::Message { text: message_text(item.get("content")) }),
            Some("function_call") => {
                let name = text_field("name");
                if name.is_empty() {
                    return Err(WireError::Invalid("a function_call item has no name".to_owned()));
                }
                Ok(Item::FunctionCall {
                    call_id: text_field("call_id"),
                    name,
                    arguments: arguments_text(item.get("arguments")),
                })
            }
            Some("reasoning") => Ok(Item::Reasoning {
                id: text_field("id"),
                summary: summary_texts(item.get("summary")),
                encrypted_content: item.get("encrypted_content").and_then(Value::as_str).map(str::to_owned),
            }),
            Some(_) => Ok(Item::Other),
            None => Err(WireError::Invalid("an output item has no type".to_owned())),
        }
    }
}

/// A message's text: `output_text` parts' `text` and `refusal` parts' `refusal`, joined in
/// order without a separator (a refusal is the model's answer, shown as such); other parts are
/// ignored. A plain string (some compatible servers) is taken as it is.
fn message_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part.get("type").and_then(Value::as_str) {
                Some("output_text") => part.get("text").and_then(Value::as_str),
                Some("refusal") => part.get("refusal").and_then(Value::as_str),
                _ => None,
            })
            .collect(),
        _ => String::new(),
    }
}

/// The `text` of each `summary_text` part.
fn summary_texts(summary: Option<&Value>) -> Vec<String> {
    summary
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("summary_text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The assistant message the output items make, in output order: message texts joined into
/// `content` (without a separator), function calls as tool calls (at most
/// [`MAX_TOOL_CALLS`]), reasoning items as [`ReasoningBlock::Reasoning`] with their summary
/// texts joined into `reasoning_content`.
pub(crate) fn message_from<'a>(items: impl IntoIterator<Item = &'a Item>) -> Result<Message, WireError> {
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut reasoning_blocks = Vec::new();
    let mut summaries: Vec<&str> = Vec::new();
    for item in items {
        match item {
            Item::Message { text } => content.push_str(text),
            Item::FunctionCall { call_id, name, arguments } => {
                if tool_calls.len() == MAX_TOOL_CALLS {
                    return Err(too_many_tool_calls());
                }
                tool_calls.push(ToolCall::new(call_id.as_str(), name.as_str(), arguments.as_str()));
            }
            Item::Reasoning { id, summary, encrypted_content } => {
                summaries.extend(summary.iter().map(String::as_str).filter(|text| !text.is_empty()));
                reasoning_blocks.push(ReasoningBlock::Reasoning {
                    id: id.clone(),
                    summary: summary.clone(),
                    encrypted_content: encrypted_content.clone(),
                });
            }
            Item::Other => {}
        }
    }
    Ok(Message {
        reasoning_content: Some(summaries.join(SUMMARY_SEPARATOR)).filter(|text| !text.is_empty()),
        reasoning_blocks,
        tool_calls,
        ..Message::assistant(content)
    })
}

pub(crate) fn too_many_items() -> WireError {
    WireError::Invalid(format!("more than {MAX_OUTPUT_ITEMS} output items in one answer"))
}

fn too_many_tool_calls() -> WireError {
    WireError::Invalid(format!("more than {MAX_TOOL_CALLS} tool calls in one answer"))
}

/// The output items of a response object; `None` when it has no `output` array.
pub(crate) fn output_items(response: &Value) -> Option<Result<Vec<Item>, WireError>> {
    let output = response.get("output")?.as_array()?;
    if output.len() > MAX_OUTPUT_ITEMS {
        return Some(Err(too_many_items()));
    }
    Some(output.iter().map(Item::from_value).collect())
}

/// The finish reason of a response object, from its `status`: `completed` as it is, an
/// `incomplete` one as its `incomplete_details.reason` (`max_output_tokens`,
/// `content_filter`; `incomplete` when it gives none), no status as none. A `failed` status
/// is the provider's error (`error.message`); any other status (`in_progress`, `queued`,
/// `cancelled`) is not an answer.
pub(crate) fn finish_reason(response: &Value) -> Result<Option<String>, WireError> {
    match response.get("status").and_then(Value::as_str) {
        None => Ok(None),
        Some("completed") => Ok(Some("completed".to_owned())),
        Some("incomplete") => Ok(Some(
            response
                .get("incomplete_details")
                .and_then(|details| details.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or("incomplete")
                .to_owned(),
        )),
        Some("failed") => Err(failure(response)),
        Some(other) => Err(WireError::Invalid(format!("the response is {}, not an answer", bound_detail(other)))),
    }
}

/// A failed response's error: `error.message`, else a generic text.
pub(crate) fn failure(response: &Value) -> WireError {
    WireError::Provider(provider_error_in(response).unwrap_or_else(|| "the response failed".to_owned()))
}

/// The usage object: `input_tokens` (the cached part included), `output_tokens`, and
/// `input_tokens_details.cached_tokens` as the cache-read part (never more than the input).
pub(crate) fn usage_from(usage: &Value) -> Usage {
    let input_tokens = count(usage, "input_tokens").unwrap_or(0);
    let cached = usage.get("input_tokens_details").and_then(|details| count(details, "cached_tokens")).unwrap_or(0);
    Usage {
        input_tokens,
        output_tokens: count(usage, "output_tokens").unwrap_or(0),
        cache_read_tokens: cached.min(input_tokens),
        cache_write_tokens: 0,
    }
}

/// The usage of a response object; zero when it has none.
pub(crate) fn response_usage(response: &Value) -> Usage {
    response.get("usage").filter(|usage| usage.is_object()).map(usage_from).unwrap_or_default()
}

/// Reads a non-streamed answer: the response object. A non-null top-level `error` (a failed
/// response, or an error object instead of a response) is the provider's error.
pub(crate) fn parse_response(body: &[u8]) -> Result<ChatResponse, WireError> {
    let value: Value = crate::wire::body_json(body)?;
    if let Some(message) = provider_error_in(&value) {
        return Err(WireError::Provider(message));
    }
    let finish_reason = finish_reason(&value)?;
    let items = output_items(&value).ok_or_else(|| WireError::Invalid("no output in the answer".to_owned()))??;
    Ok(ChatResponse { message: message_from(&items)?, usage: response_usage(&value), finish_reason, model: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(messages: &'a [Message], thinking: Thinking) -> ChatRequest<'a> {
        ChatRequest {
            model: "m",
            messages,
            tools: &[],
            thinking,
            stream: false,
            side_call: false,
            timeout: None,
            output_schema: None,
        }
    }

    #[test]
    fn thinking_maps_to_reasoning_effort_as_documented() {
        let cases = [
            (Thinking::Default, None),
            (Thinking::Disabled, None),
            (Thinking::Enabled, Some("medium")),
            (Thinking::Low, Some("low")),
            (Thinking::Medium, Some("medium")),
            (Thinking::High, Some("high")),
        ];
        let messages = [Message::user("hi")];
        for (thinking, effort) in cases {
            let body = request_body(&request(&messages, thinking));
            match effort {
                Some(effort) => assert_eq!(body["reasoning"], json!({"effort": effort}), "{thinking:?}"),
                None => assert!(body.get("reasoning").is_none(), "{thinking:?}: {body}"),
            }
        }
    }

    #[test]
    fn every_request_is_stateless() {
        let messages = [Message::user("hi")];
        let body = request_body(&request(&messages, Thinking::Default));
        assert_eq!(body["store"], json!(false));
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert!(body.get("previous_response_id").is_none());
        for absent in ["tools", "tool_choice", "parallel_tool_calls", "stream", "text"] {
            assert!(body.get(absent).is_none(), "{absent}: {body}");
        }
    }

    #[test]
    fn an_output_schema_becomes_text_format_on_main_calls_only() {
        let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
        let messages = [Message::user("hi")];
        let main = ChatRequest { output_schema: Some(&schema), ..request(&messages, Thinking::Default) };
        assert_eq!(
            request_body(&main)["text"],
            json!({"format": {"type": "json_schema", "name": "odek_output", "schema": schema, "strict": false}})
        );
        let side = ChatRequest { side_call: true, ..main };
        assert!(request_body(&side).get("text").is_none());
        let array = json!({"type": "array"});
        let not_object = ChatRequest { output_schema: Some(&array), ..main };
        assert!(request_body(&not_object).get("text").is_none());
    }

    #[test]
    fn assistant_turns_send_reasoning_then_text_then_calls() {
        let assistant = Message {
            reasoning_content: Some("plain reasoning is never sent".into()),
            reasoning_blocks: vec![
                ReasoningBlock::Thinking { thinking: "anthropic".into(), signature: "sig".into() },
                ReasoningBlock::RedactedThinking { data: "opaque".into() },
                ReasoningBlock::Reasoning {
                    id: "rs_1".into(),
                    summary: vec!["first".into()],
                    encrypted_content: Some("enc==".into()),
                },
                ReasoningBlock::Reasoning { id: "rs_2".into(), summary: vec![], encrypted_content: None },
            ],
            tool_calls: vec![ToolCall::new("call_a", "shell", "{\"command\":\"ls\"}")],
            ..Message::assistant("looking")
        };
        let items = input_items(&[
            Message::system("sys"),
            Message::user("go"),
            assistant,
            Message::tool("call_a", "shell", "out"),
        ]);
        assert_eq!(
            Value::Array(items),
            json!([
                {"type": "message", "role": "system", "content": "sys"},
                {"type": "message", "role": "user", "content": "go"},
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "first"}],
                    "encrypted_content": "enc=="},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "looking"}]},
                {"type": "function_call", "call_id": "call_a", "name": "shell", "arguments": "{\"command\":\"ls\"}"},
                {"type": "function_call_output", "call_id": "call_a", "output": "out"},
            ])
        );
    }

    #[test]
    fn an_assistant_turn_without_text_sends_no_message_item() {
        let assistant = Message { tool_calls: vec![ToolCall::new("c", "read", "{}")], ..Message::assistant("") };
        let items = input_items(&[assistant]);
        assert_eq!(items, vec![json!({"type": "function_call", "call_id": "c", "name": "read", "arguments": "{}"})]);
    }

    #[test]
    fn output_items_make_the_message() {
        let body = json!({
            "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_9", "summary": [{"type": "summary_text", "text": "one"},
                    {"type": "summary_text", "text": "two"}], "encrypted_content": "gAAA"},
                {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": "Hello", "annotations": []},
                    {"type": "refusal", "refusal": " but no."}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": "{}"},
            ],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 3},
        });
        let response = parse_response(body.to_string().as_bytes()).unwrap();
        assert_eq!(response.message.content, "Hello but no.");
        assert_eq!(response.message.tool_calls, vec![ToolCall::new("call_1", "shell", "{}")]);
        assert_eq!(response.message.reasoning_content.as_deref(), Some("one\n\ntwo"));
        assert_eq!(
            response.message.reasoning_blocks,
            vec![ReasoningBlock::Reasoning {
                id: "rs_9".into(),
                summary: vec!["one".into(), "two".into()],
                encrypted_content: Some("gAAA".into()),
            }]
        );
        assert_eq!(response.usage, Usage { cache_read_tokens: 4, ..Usage::new(10, 3) });
        assert_eq!(response.finish_reason.as_deref(), Some("completed"));
    }

    #[test]
    fn status_decides_the_finish_reason_or_the_error() {
        let incomplete =
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []});
        assert_eq!(finish_reason(&incomplete).unwrap().as_deref(), Some("max_output_tokens"));
        assert_eq!(finish_reason(&json!({"status": "incomplete"})).unwrap().as_deref(), Some("incomplete"));
        assert_eq!(finish_reason(&json!({})).unwrap(), None);
        let failed = json!({"status": "failed", "error": {"code": "server_error", "message": "it broke"}});
        assert!(matches!(finish_reason(&failed), Err(WireError::Provider(message)) if message == "it broke"));
        assert!(matches!(finish_reason(&json!({"status": "failed"})), Err(WireError::Provider(_))));
        assert!(matches!(finish_reason(&json!({"status": "in_progress"})), Err(WireError::Invalid(_))));
        let failed_body = parse_response(failed.to_string().as_bytes()).unwrap_err();
        assert!(matches!(failed_body, WireError::Provider(message) if message == "it broke"));
    }

    #[test]
    fn bad_output_is_invalid() {
        for body in [
            json!({"status": "completed"}),
            json!({"output": [{"type": "function_call", "call_id": "c"}]}),
            json!({"output": [{"no": "type"}]}),
        ] {
            assert!(matches!(parse_response(body.to_string().as_bytes()), Err(WireError::Invalid(_))), "{body}");
        }
        let calls: Vec<Value> = (0..=MAX_TOOL_CALLS)
            .map(|n| json!({"type": "function_call", "call_id": n.to_string(), "name": "f"}))
            .collect();
        let many = json!({"output": calls});
        assert!(matches!(parse_response(many.to_string().as_bytes()), Err(WireError::Invalid(_))));
    }

    #[test]
    fn cached_tokens_never_exceed_the_input() {
        let usage = json!({"input_tokens": 5, "input_tokens_details": {"cached_tokens": 50}, "output_tokens": -1});
        assert_eq!(usage_from(&usage), Usage { cache_read_tokens: 5, ..Usage::new(5, 0) });
    }
}
