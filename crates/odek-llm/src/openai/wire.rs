//! The chat-completions wire format: the request body we send and the non-streamed answer we
//! read back, plus the rules both the streamed and the non-streamed path share (usage counting,
//! tool-call arguments, provider error messages). No HTTP here; start at [`request_body`] and
//! [`parse_completion`].

use serde_json::{Map, Value, json};

use crate::message::{Message, Role, ToolCall, ToolDefinition, Usage};
use crate::provider::{ChatRequest, ChatResponse, Thinking};
use crate::wire::{MAX_TOOL_CALLS, WireError, arguments_text, count, provider_error_in};

/// How an OpenAI-compatible endpoint is asked for structured output (\[beyond\]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StructuredOutput {
    /// `response_format: {"type": "json_schema", "json_schema": {name, schema, strict: false}}`:
    /// OpenAI and the compatible servers that follow it (vLLM, llama.cpp, Ollama, gateways).
    JsonSchema,
    /// `response_format: {"type": "json_object"}`: DeepSeek, whose API knows JSON mode but not
    /// schemas (and refuses `json_schema`).
    JsonObject,
}

impl StructuredOutput {
    /// What the endpoint at `host` is sent.
    pub(crate) fn for_host(host: Option<&str>) -> StructuredOutput {
        match host {
            Some(host) if host == "api.deepseek.com" || host.ends_with(".deepseek.com") => StructuredOutput::JsonObject,
            _ => StructuredOutput::JsonSchema,
        }
    }
}

/// The name the schema is sent under (`json_schema.name`: letters, digits, `_` and `-`).
const OUTPUT_SCHEMA_NAME: &str = "odek_output";

/// `response_format` for a call with an output schema; a side call (a summary, a digest) is
/// prose and asks for nothing. `strict: false`: strict mode accepts only a subset of JSON
/// Schema, and odek validates the answer itself. Both formats promise a JSON object, so a
/// schema whose root is not `"type": "object"` asks for nothing either.
fn apply_structured_output(body: &mut Map<String, Value>, request: &ChatRequest<'_>, mode: StructuredOutput) {
    let Some(schema) = request.output_schema.filter(|_| !request.side_call) else {
        return;
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return;
    }
    let format = match mode {
        StructuredOutput::JsonSchema => json!({
            "type": "json_schema",
            "json_schema": {"name": OUTPUT_SCHEMA_NAME, "schema": schema, "strict": false},
        }),
        StructuredOutput::JsonObject => json!({"type": "json_object"}),
    };
    body.insert("response_format".into(), format);
}

/// The JSON body of one `POST /chat/completions`.
pub(crate) fn request_body(request: &ChatRequest<'_>, structured: StructuredOutput) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(request.model));
    body.insert("messages".into(), request.messages.iter().map(wire_message).collect());
    if !request.tools.is_empty() {
        body.insert("tools".into(), request.tools.iter().map(wire_tool).collect());
        body.insert("tool_choice".into(), Value::from("auto"));
    }
    if request.stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    apply_thinking(&mut body, request.thinking);
    apply_structured_output(&mut body, request, structured);
    Value::Object(body)
}

/// Our thinking levels on the wire: `Default` sends nothing; `Enabled`/`Disabled` send
/// `"thinking": {"type": "enabled"|"disabled"}`; `Low`/`Medium`/`High` send
/// `"reasoning_effort": "low"|"medium"|"high"`.
pub(crate) fn apply_thinking(body: &mut Map<String, Value>, thinking: Thinking) {
    match thinking {
        Thinking::Default => {}
        Thinking::Enabled => {
            body.insert("thinking".into(), json!({"type": "enabled"}));
        }
        Thinking::Disabled => {
            body.insert("thinking".into(), json!({"type": "disabled"}));
        }
        Thinking::Low => {
            body.insert("reasoning_effort".into(), Value::from("low"));
        }
        Thinking::Medium => {
            body.insert("reasoning_effort".into(), Value::from("medium"));
        }
        Thinking::High => {
            body.insert("reasoning_effort".into(), Value::from("high"));
        }
    }
}

/// One message as the provider wants it. An assistant message that only calls tools sends
/// `content: null`; `reasoning_content` is sent only when the message has one.
fn wire_message(message: &Message) -> Value {
    let mut wire = Map::new();
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    wire.insert("role".into(), Value::from(role));
    let content = if message.role == Role::Assistant && message.content.is_empty() && !message.tool_calls.is_empty() {
        Value::Null
    } else {
        Value::from(message.content.as_str())
    };
    wire.insert("content".into(), content);
    if let Some(reasoning) = &message.reasoning_content {
        wire.insert("reasoning_content".into(), Value::from(reasoning.as_str()));
    }
    if !message.tool_calls.is_empty() {
        let calls = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                })
            })
            .collect();
        wire.insert("tool_calls".into(), calls);
    }
    if let Some(call_id) = &message.tool_call_id {
        wire.insert("tool_call_id".into(), Value::from(call_id.as_str()));
    }
    if let Some(name) = &message.name {
        wire.insert("name".into(), Value::from(name.as_str()));
    }
    Value::Object(wire)
}

fn wire_tool(tool: &ToolDefinition) -> Value {
    json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    })
}

/// Reads a non-streamed chat completion.
pub(crate) fn parse_completion(body: &[u8]) -> Result<ChatResponse, WireError> {
    let value: Value = crate::wire::body_json(body)?;
    if let Some(message) = provider_error_in(&value) {
        return Err(WireError::Provider(message));
    }
    let choice = first_choice(&value).ok_or_else(|| WireError::Invalid("no choices in the answer".to_owned()))?;
    let message = choice
        .get("message")
        .filter(|message| message.is_object())
        .ok_or_else(|| WireError::Invalid("choices[0].message is missing".to_owned()))?;
    let content = content_text(message.get("content")).map_err(WireError::Invalid)?;
    let reasoning = reasoning_text(message).filter(|text| !text.is_empty());
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => parse_tool_calls(calls).map_err(WireError::Invalid)?,
        Some(_) => return Err(WireError::Invalid("choices[0].message.tool_calls is not an array".to_owned())),
    };
    Ok(ChatResponse {
        message: Message { reasoning_content: reasoning, tool_calls, ..Message::assistant(content) },
        usage: value.get("usage").map(usage_from).unwrap_or_default(),
        finish_reason: choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned),
        model: None,
    })
}

/// The choice with `index` 0, or the first one.
pub(crate) fn first_choice(value: &Value) -> Option<&Value> {
    let choices = value.get("choices")?.as_array()?;
    choices.iter().find(|choice| choice.get("index").and_then(Value::as_u64) == Some(0)).or_else(|| choices.first())
}

/// `content` as text: a string, `null` (empty), or an array of `{type:"text", text}` parts.
fn content_text(content: Option<&Value>) -> Result<String, String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            Ok(parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect::<Vec<_>>().concat())
        }
        Some(_) => Err("choices[0].message.content is neither a string nor null".to_owned()),
    }
}

/// `reasoning_content` (DeepSeek and most compatible servers) or `reasoning` (some gateways).
pub(crate) fn reasoning_text(message: &Value) -> Option<String> {
    message
        .get("reasoning_content")
        .and_then(Value::as_str)
        .or_else(|| message.get("reasoning").and_then(Value::as_str))
        .map(str::to_owned)
}

fn parse_tool_calls(calls: &[Value]) -> Result<Vec<ToolCall>, String> {
    if calls.len() > MAX_TOOL_CALLS {
        return Err(format!("more than {MAX_TOOL_CALLS} tool calls in one answer"));
    }
    calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let function = call.get("function").ok_or_else(|| format!("tool_calls[{index}].function is missing"))?;
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .filter(|name| !name.is_empty())
                .ok_or_else(|| format!("tool_calls[{index}].function.name is missing"))?;
            let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
            Ok(ToolCall::new(id, name, arguments_text(function.get("arguments"))))
        })
        .collect()
}

/// The usage object of an answer (`prompt_tokens`/`completion_tokens`, or the
/// `input_tokens`/`output_tokens` some gateways use), with the cache part where it is
/// reported: read from `prompt_tokens_details.cached_tokens` (OpenAI),
/// `prompt_cache_hit_tokens` (DeepSeek) or `cache_read_input_tokens`, written from
/// `cache_creation_input_tokens` — never more than the input count.
pub(crate) fn usage_from(usage: &Value) -> Usage {
    let output_tokens = count(usage, "completion_tokens").or_else(|| count(usage, "output_tokens")).unwrap_or(0);
    let input_tokens = count_input_tokens(usage);
    let cache_read = usage
        .get("prompt_tokens_details")
        .and_then(|details| count(details, "cached_tokens"))
        .or_else(|| count(usage, "prompt_cache_hit_tokens"))
        .or_else(|| count(usage, "cache_read_input_tokens"))
        .unwrap_or(0)
        .min(input_tokens);
    let cache_write = count(usage, "cache_creation_input_tokens").unwrap_or(0).min(input_tokens - cache_read);
    Usage { input_tokens, output_tokens, cache_read_tokens: cache_read, cache_write_tokens: cache_write }
}

/// Spec `budgets.md` §1: input tokens are the reported prompt tokens plus cache-read and
/// cache-creation tokens where the provider reports those separately, never counted twice.
///
/// - `prompt_tokens_details.cached_tokens` (OpenAI) is a part of `prompt_tokens`: never added.
/// - `prompt_cache_hit_tokens` (DeepSeek) is a part of `prompt_tokens` (which is hit + miss);
///   it is added only when the numbers prove it was not included: hit + miss exceeds the prompt
///   count, or (without a miss count) the hit count alone does.
/// - `cache_read_input_tokens` and `cache_creation_input_tokens` (Anthropic's names) are outside
///   the prompt count in Anthropic's accounting and are added, unless the answer also carries
///   `prompt_tokens_details.cached_tokens`, the sign of a gateway that folded them into
///   `prompt_tokens` already.
pub(crate) fn count_input_tokens(usage: &Value) -> u64 {
    let prompt = count(usage, "prompt_tokens").or_else(|| count(usage, "input_tokens")).unwrap_or(0);
    let mut total = prompt;
    if let Some(hit) = count(usage, "prompt_cache_hit_tokens") {
        match count(usage, "prompt_cache_miss_tokens") {
            Some(miss) => total = total.max(hit.saturating_add(miss)),
            None if hit > prompt => total = total.saturating_add(hit),
            None => {}
        }
    }
    let inclusive = usage.get("prompt_tokens_details").and_then(|details| details.get("cached_tokens")).is_some();
    if !inclusive {
        let cache_read = count(usage, "cache_read_input_tokens").unwrap_or(0);
        let cache_creation = count(usage, "cache_creation_input_tokens").unwrap_or(0);
        total = total.saturating_add(cache_read).saturating_add(cache_creation);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_cached_tokens_are_part_of_prompt_tokens() {
        let usage =
            json!({"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 80}});
        assert_eq!(usage_from(&usage), Usage { cache_read_tokens: 80, ..Usage::new(100, 7) });
    }

    #[test]
    fn deepseek_hit_tokens_are_not_counted_twice() {
        let usage = json!({"prompt_tokens": 100, "prompt_cache_hit_tokens": 60, "prompt_cache_miss_tokens": 40});
        assert_eq!(count_input_tokens(&usage), 100);
        let separate = json!({"prompt_tokens": 40, "prompt_cache_hit_tokens": 60, "prompt_cache_miss_tokens": 40});
        assert_eq!(count_input_tokens(&separate), 100);
        let hit_only = json!({"prompt_tokens": 100, "prompt_cache_hit_tokens": 60});
        assert_eq!(count_input_tokens(&hit_only), 100);
    }

    #[test]
    fn anthropic_style_cache_tokens_are_added() {
        let usage = json!({"prompt_tokens": 10, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 30});
        assert_eq!(count_input_tokens(&usage), 240);
        let folded = json!({"prompt_tokens": 240, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 30,
            "prompt_tokens_details": {"cached_tokens": 200}});
        assert_eq!(count_input_tokens(&folded), 240);
        let native = json!({"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 5});
        assert_eq!(usage_from(&native), Usage { cache_read_tokens: 5, ..Usage::new(15, 3) });
        let both = json!({"prompt_tokens": 10, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 30});
        assert_eq!(
            usage_from(&both),
            Usage { input_tokens: 240, output_tokens: 0, cache_read_tokens: 200, cache_write_tokens: 30 }
        );
    }

    #[test]
    fn thinking_levels_map_to_documented_fields() {
        let mut body = Map::new();
        apply_thinking(&mut body, Thinking::Default);
        assert!(body.is_empty());
        apply_thinking(&mut body, Thinking::Disabled);
        assert_eq!(body["thinking"], json!({"type": "disabled"}));
        let mut body = Map::new();
        apply_thinking(&mut body, Thinking::High);
        assert_eq!(body["reasoning_effort"], json!("high"));
    }

    #[test]
    fn an_output_schema_asks_for_structured_output_on_main_calls_only() {
        let schema = json!({"type": "object"});
        let messages = [Message::user("hi")];
        let request = |side_call| ChatRequest {
            model: "m",
            messages: &messages,
            tools: &[],
            thinking: Thinking::Default,
            stream: false,
            side_call,
            timeout: None,
            output_schema: Some(&schema),
        };
        let body = request_body(&request(false), StructuredOutput::JsonSchema);
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "odek_output", "schema": {"type": "object"}, "strict": false}})
        );
        let body = request_body(&request(false), StructuredOutput::JsonObject);
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        assert!(request_body(&request(true), StructuredOutput::JsonSchema).get("response_format").is_none());
        let array = json!({"type": "array"});
        let not_an_object = ChatRequest { output_schema: Some(&array), ..request(false) };
        assert!(request_body(&not_an_object, StructuredOutput::JsonSchema).get("response_format").is_none());
        let plain = ChatRequest { output_schema: None, ..request(false) };
        assert!(request_body(&plain, StructuredOutput::JsonSchema).get("response_format").is_none());
        assert_eq!(StructuredOutput::for_host(Some("api.deepseek.com")), StructuredOutput::JsonObject);
        assert_eq!(StructuredOutput::for_host(Some("api.openai.com")), StructuredOutput::JsonSchema);
        assert_eq!(StructuredOutput::for_host(Some("127.0.0.1")), StructuredOutput::JsonSchema);
        assert_eq!(StructuredOutput::for_host(None), StructuredOutput::JsonSchema);
    }
}
