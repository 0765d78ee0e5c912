//! The Anthropic Messages wire format: the request body we send (system blocks, alternating
//! turns of content blocks, tools, thinking, prompt-cache breakpoints) and the non-streamed
//! answer we read back, plus what the streamed path shares with it (content blocks made into
//! one assistant message, usage counting). No HTTP here; start at [`request_body`] and
//! [`parse_message`].
//!
//! Mapping choices the API leaves to us:
//! - Only the leading system messages become `system`; a system message later in the
//!   conversation (a mid-run notice) becomes a user text block at its place, since the API has
//!   one system prompt and a moved notice would lose its position.
//! - The API wants user and assistant turns to alternate: consecutive messages of the same
//!   side are merged into one turn, tool results first (the API wants them ahead of any text).
//! - Empty text blocks are refused by the API and are left out; a turn left without any block,
//!   and a conversation that would not start with a user turn, get [`PLACEHOLDER_TEXT`].
//! - Tool-call arguments are model output: a call whose arguments are not a JSON object is
//!   sent back as `{"_raw": "<the text>"}` (empty arguments as `{}`), and call ids outside the
//!   API's `[A-Za-z0-9_-]+` have the other characters replaced by `_` (the same on the call and
//!   on its result), so no answer can make the next request invalid.
//! - `output_schema` is not sent (the API has no response format); odek checks the answer.
//! - Thinking stays off while a tool-use loop that began without it goes on (an answer from
//!   another provider before a fallback, a session recorded elsewhere): the API keeps one
//!   thinking setting per assistant turn and refuses a loop whose assistant message does not
//!   start with a thinking block ([`loop_started_without_thinking`]).

use serde_json::{Map, Value, json};

use super::AnthropicOptions;
use crate::message::{Message, ReasoningBlock, Role, ToolCall, ToolDefinition, Usage};
use crate::provider::{ChatRequest, ChatResponse, Thinking};
use crate::wire::{MAX_TOOL_CALLS, WireError, arguments_text, bound_detail, count, provider_error_in};

/// `max_tokens` when the options set none (the API requires one): 8192 tokens.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The text of a turn that would otherwise have no block (the API refuses empty content).
pub(crate) const PLACEHOLDER_TEXT: &str = "(empty)";

/// The key under which tool-call arguments that are not a JSON object are sent back.
pub(crate) const RAW_ARGUMENTS_KEY: &str = "_raw";

/// The thinking budget (`budget_tokens`) of each level that turns thinking on. `Default` sends
/// no `thinking` field (the model's default) and `Disabled` sends `{"type": "disabled"}`;
/// every level listed here sends `{"type": "enabled", "budget_tokens": <budget>}`, and the
/// budget is added to `max_tokens`, which the API wants larger than the budget.
const THINKING_BUDGETS: [(Thinking, u32); 4] =
    [(Thinking::Low, 2048), (Thinking::Enabled, 8192), (Thinking::Medium, 8192), (Thinking::High, 16384)];

/// The thinking budget of `thinking`, `None` when it does not turn thinking on.
pub(crate) fn thinking_budget(thinking: Thinking) -> Option<u32> {
    THINKING_BUDGETS.iter().find(|(level, _)| *level == thinking).map(|(_, budget)| *budget)
}

/// The JSON body of one `POST /messages`.
pub(crate) fn request_body(request: &ChatRequest<'_>, options: &AnthropicOptions) -> Value {
    let (mut system, mut turns) = conversation(request.messages);
    let mut tools: Vec<Value> = request.tools.iter().map(wire_tool).collect();
    if options.prompt_caching {
        mark_cache_breakpoints(&mut system, &mut tools, &mut turns);
    }
    let budget = thinking_budget(request.thinking).filter(|_| !loop_started_without_thinking(&turns));
    let max_tokens = options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).saturating_add(budget.unwrap_or(0));
    let mut body = Map::new();
    body.insert("model".into(), Value::from(request.model));
    body.insert("max_tokens".into(), Value::from(max_tokens));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    body.insert("messages".into(), turns.into_iter().map(Turn::into_value).collect());
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!({"type": "auto"}));
    }
    match (request.thinking, budget) {
        (_, Some(budget)) => {
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        (Thinking::Disabled, None) => {
            body.insert("thinking".into(), json!({"type": "disabled"}));
        }
        _ => {}
    }
    if request.stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Value::Object(body)
}

/// Whether the conversation goes on with tool results for an assistant message that does not
/// start with a thinking block: turning thinking on for this request would be refused.
fn loop_started_without_thinking(turns: &[Turn]) -> bool {
    let [.., assistant, results] = turns else { return false };
    let first = |turn: &Turn| turn.blocks.first().and_then(block_type).map(str::to_owned);
    results.role == "user"
        && first(results).as_deref() == Some("tool_result")
        && !matches!(first(assistant).as_deref(), Some("thinking" | "redacted_thinking"))
}

/// One user or assistant turn being built.
#[derive(Debug)]
pub(crate) struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

impl Turn {
    fn into_value(self) -> Value {
        json!({"role": self.role, "content": self.blocks})
    }
}

/// The `system` blocks and the alternating turns of a conversation (see the module doc).
fn conversation(messages: &[Message]) -> (Vec<Value>, Vec<Turn>) {
    let leading = messages.iter().take_while(|message| message.role == Role::System).count();
    let system = messages[..leading].iter().filter_map(|message| text_block(&message.content)).collect();
    let mut turns: Vec<Turn> = Vec::new();
    for message in &messages[leading..] {
        let (role, blocks) = message_blocks(message);
        match turns.last_mut() {
            Some(last) if last.role == role => last.blocks.extend(blocks),
            _ => turns.push(Turn { role, blocks }),
        }
    }
    for turn in &mut turns {
        // A stable sort: tool results first, everything else after, each in its order.
        turn.blocks.sort_by_key(|block| block_type(block) != Some("tool_result"));
        if turn.blocks.is_empty() {
            turn.blocks.push(placeholder());
        }
    }
    if turns.first().is_none_or(|turn| turn.role != "user") {
        turns.insert(0, Turn { role: "user", blocks: vec![placeholder()] });
    }
    (system, turns)
}

/// The side a message is on and its blocks, empty text left out.
fn message_blocks(message: &Message) -> (&'static str, Vec<Value>) {
    match message.role {
        Role::System | Role::User => ("user", text_block(&message.content).into_iter().collect()),
        Role::Assistant => ("assistant", assistant_blocks(message)),
        Role::Tool => ("user", vec![tool_result_block(message)]),
    }
}

/// An assistant message: its thinking blocks exactly as they came, its text, its calls.
/// OpenAI Responses reasoning items are another API's and are not sent.
fn assistant_blocks(message: &Message) -> Vec<Value> {
    let mut blocks: Vec<Value> = message
        .reasoning_blocks
        .iter()
        .filter_map(|block| match block {
            ReasoningBlock::Thinking { thinking, signature } => {
                Some(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
            }
            ReasoningBlock::RedactedThinking { data } => Some(json!({"type": "redacted_thinking", "data": data})),
            ReasoningBlock::Reasoning { .. } => None,
        })
        .collect();
    blocks.extend(text_block(&message.content));
    blocks.extend(message.tool_calls.iter().map(tool_use_block));
    blocks
}

fn tool_use_block(call: &ToolCall) -> Value {
    json!({
        "type": "tool_use",
        "id": wire_id(&call.id),
        "name": call.function.name,
        "input": tool_input(&call.function.arguments),
    })
}

/// A tool result; an empty result has no `content` (the field is optional, empty text is not).
fn tool_result_block(message: &Message) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), Value::from("tool_result"));
    block.insert("tool_use_id".into(), Value::from(wire_id(message.tool_call_id.as_deref().unwrap_or_default())));
    if !message.content.is_empty() {
        block.insert("content".into(), Value::from(message.content.as_str()));
    }
    Value::Object(block)
}

/// A text block, `None` for empty text.
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn placeholder() -> Value {
    json!({"type": "text", "text": PLACEHOLDER_TEXT})
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// The `input` object of a `tool_use` block: the arguments when they are a JSON object, `{}`
/// when they are empty, otherwise `{"_raw": <the text>}` (see the module doc).
pub(crate) fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({ RAW_ARGUMENTS_KEY: arguments }),
    }
}

/// A call id as the API accepts it (`[A-Za-z0-9_-]+`): valid ids unchanged, other characters
/// replaced by `_`, an empty id as `call`.
pub(crate) fn wire_id(id: &str) -> String {
    if id.is_empty() {
        return "call".to_owned();
    }
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// A tool definition; a `parameters` value that is not a JSON object is sent as the empty
/// object schema (the API wants one), an empty description not at all.
fn wire_tool(tool: &ToolDefinition) -> Value {
    let schema = if tool.parameters.is_object() { tool.parameters.clone() } else { json!({"type": "object"}) };
    let mut wire = Map::new();
    wire.insert("name".into(), Value::from(tool.name.as_str()));
    if !tool.description.is_empty() {
        wire.insert("description".into(), Value::from(tool.description.as_str()));
    }
    wire.insert("input_schema".into(), schema);
    Value::Object(wire)
}

/// Prompt caching: a `cache_control: {"type": "ephemeral"}` breakpoint on the last system
/// block, the last tool and the last block of the latest turn that may carry one (thinking
/// blocks may not) — three of the API's four.
fn mark_cache_breakpoints(system: &mut [Value], tools: &mut [Value], turns: &mut [Turn]) {
    let latest = turns.last_mut().and_then(|turn| {
        turn.blocks.iter_mut().rev().find(|block| !matches!(block_type(block), Some("thinking" | "redacted_thinking")))
    });
    for block in [system.last_mut(), tools.last_mut(), latest].into_iter().flatten() {
        if let Some(fields) = block.as_object_mut() {
            fields.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
    }
}

/// One content block of an answer, as odek keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    Text(String),
    Thinking { thinking: String, signature: String },
    RedactedThinking { data: String },
    ToolUse { id: String, name: String, arguments: String },
}

/// Reads a non-streamed answer (`{"type": "message", "content": […], …}`).
pub(crate) fn parse_message(body: &[u8]) -> Result<ChatResponse, WireError> {
    let value: Value = crate::wire::body_json(body)?;
    if let Some(message) = provider_error_in(&value) {
        return Err(WireError::Provider(message));
    }
    match value.get("type").and_then(Value::as_str) {
        None | Some("message") => {}
        Some(other) => {
            return Err(WireError::Invalid(format!("the answer is a {:?}, not a message", bound_detail(other))));
        }
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| WireError::Invalid("the answer has no content array".to_owned()))?;
    let mut blocks = Vec::with_capacity(content.len());
    for (index, block) in content.iter().enumerate() {
        blocks.extend(answer_block(block, index)?);
    }
    let mut usage = UsageCounts::default();
    if let Some(reported) = value.get("usage") {
        usage.update(reported);
    }
    let stop_reason = value.get("stop_reason").and_then(Value::as_str).map(str::to_owned);
    assemble(blocks, usage.usage(), stop_reason)
}

/// One block of a plain answer; `None` for a type odek does not use.
fn answer_block(block: &Value, index: usize) -> Result<Option<Block>, WireError> {
    let text = |field: &str| block.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
    Ok(match block_type(block) {
        Some("text") => Some(Block::Text(text("text"))),
        Some("thinking") => Some(Block::Thinking { thinking: text("thinking"), signature: text("signature") }),
        Some("redacted_thinking") => Some(Block::RedactedThinking { data: text("data") }),
        Some("tool_use") => {
            let name = text("name");
            if name.is_empty() {
                return Err(WireError::Invalid(format!("content[{index}]: tool_use block without a name")));
            }
            Some(Block::ToolUse { id: text("id"), name, arguments: input_text(block.get("input")) })
        }
        _ => None,
    })
}

/// A `tool_use` input as the arguments string the tool receives: serialised compactly, `{}`
/// when absent.
pub(crate) fn input_text(input: Option<&Value>) -> String {
    match input {
        None | Some(Value::Null) => "{}".to_owned(),
        some => arguments_text(some),
    }
}

/// The assistant message made of an answer's blocks, in their order: text concatenated,
/// thinking kept exactly (its text also joined into `reasoning_content`), calls in order.
pub(crate) fn assemble(
    blocks: Vec<Block>,
    usage: Usage,
    stop_reason: Option<String>,
) -> Result<ChatResponse, WireError> {
    let mut content = String::new();
    let mut reasoning: Vec<String> = Vec::new();
    let mut reasoning_blocks = Vec::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block {
            Block::Text(text) => content.push_str(&text),
            Block::Thinking { thinking, signature } => {
                if !thinking.is_empty() {
                    reasoning.push(thinking.clone());
                }
                reasoning_blocks.push(ReasoningBlock::Thinking { thinking, signature });
            }
            Block::RedactedThinking { data } => reasoning_blocks.push(ReasoningBlock::RedactedThinking { data }),
            Block::ToolUse { id, name, arguments } => {
                if tool_calls.len() == MAX_TOOL_CALLS {
                    return Err(WireError::Invalid(format!("more than {MAX_TOOL_CALLS} tool calls in one answer")));
                }
                tool_calls.push(ToolCall::new(id, name, arguments));
            }
        }
    }
    Ok(ChatResponse {
        message: Message {
            reasoning_content: Some(reasoning.join("\n")).filter(|text| !text.is_empty()),
            reasoning_blocks,
            tool_calls,
            ..Message::assistant(content)
        },
        usage,
        finish_reason: stop_reason,
        model: None,
    })
}

/// Anthropic's usage counts as reported, each read with [`count`] (a hostile number never
/// panics and never hides spend). A later report replaces the counts it carries.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UsageCounts {
    input: Option<u64>,
    output: Option<u64>,
    cache_creation: Option<u64>,
    cache_read: Option<u64>,
}

impl UsageCounts {
    /// Takes the counts `usage` carries, keeping the others; `true` when one changed.
    pub(crate) fn update(&mut self, usage: &Value) -> bool {
        let before = *self;
        for (field, slot) in [
            ("input_tokens", &mut self.input),
            ("output_tokens", &mut self.output),
            ("cache_creation_input_tokens", &mut self.cache_creation),
            ("cache_read_input_tokens", &mut self.cache_read),
        ] {
            if let Some(value) = count(usage, field) {
                *slot = Some(value);
            }
        }
        *self != before
    }

    /// odek's usage: Anthropic's `input_tokens` leaves the cache out, odek's includes it.
    pub(crate) fn usage(&self) -> Usage {
        let cache_read = self.cache_read.unwrap_or(0);
        let cache_write = self.cache_creation.unwrap_or(0);
        Usage {
            input_tokens: self.input.unwrap_or(0).saturating_add(cache_read).saturating_add(cache_write),
            output_tokens: self.output.unwrap_or(0),
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(prompt_caching: bool) -> AnthropicOptions {
        AnthropicOptions { prompt_caching, max_tokens: None }
    }

    fn request<'a>(messages: &'a [Message], tools: &'a [ToolDefinition]) -> ChatRequest<'a> {
        ChatRequest {
            model: "claude-test",
            messages,
            tools,
            thinking: Thinking::Default,
            stream: false,
            side_call: false,
            timeout: None,
            output_schema: None,
        }
    }

    fn body(messages: &[Message]) -> Value {
        request_body(&request(messages, &[]), &options(false))
    }

    fn tool() -> ToolDefinition {
        ToolDefinition { name: "shell".into(), description: "run".into(), parameters: json!({"type": "object"}) }
    }

    fn assistant_calling(calls: Vec<ToolCall>) -> Message {
        Message { tool_calls: calls, ..Message::assistant("") }
    }

    #[test]
    fn leading_system_messages_are_the_system_prompt_and_later_ones_user_text() {
        let messages = [
            Message::system("rules"),
            Message::system(""),
            Message::system("more rules"),
            Message::user("hi"),
            Message::system("budget almost spent"),
        ];
        let body = body(&messages);
        assert_eq!(body["system"], json!([{"type": "text", "text": "rules"}, {"type": "text", "text": "more rules"}]));
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "hi"}, {"type": "text", "text": "budget almost spent"}]}])
        );
        assert!(self::body(&[Message::user("x")]).get("system").is_none());
    }

    #[test]
    fn tool_results_of_one_turn_are_one_user_turn_ahead_of_text() {
        let messages = [
            Message::user("go"),
            assistant_calling(vec![ToolCall::new("a", "shell", "{}"), ToolCall::new("b", "read", "{\"p\":1}")]),
            Message::tool("a", "shell", "out a"),
            Message::tool("b", "read", ""),
            Message::user("and then?"),
        ];
        let turns = body(&messages)["messages"].clone();
        assert_eq!(turns.as_array().unwrap().len(), 3);
        assert_eq!(
            turns[1],
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "shell", "input": {}},
                {"type": "tool_use", "id": "b", "name": "read", "input": {"p": 1}}]})
        );
        assert_eq!(
            turns[2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "out a"},
                {"type": "tool_result", "tool_use_id": "b"},
                {"type": "text", "text": "and then?"}]})
        );
        // A user message before the results still puts the results first.
        let reordered = [
            Message::user("go"),
            assistant_calling(vec![ToolCall::new("a", "shell", "{}")]),
            Message::user("note"),
            Message::tool("a", "shell", "out"),
        ];
        let turn = body(&reordered)["messages"][2]["content"].clone();
        assert_eq!(turn[0]["type"], "tool_result");
        assert_eq!(turn[1], json!({"type": "text", "text": "note"}));
    }

    #[test]
    fn same_side_turns_merge_and_empty_turns_get_a_placeholder() {
        let messages = [Message::assistant("first"), Message::assistant("second"), Message::user("")];
        assert_eq!(
            body(&messages)["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": PLACEHOLDER_TEXT}]},
                {"role": "assistant", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]},
                {"role": "user", "content": [{"type": "text", "text": PLACEHOLDER_TEXT}]},
            ])
        );
        assert_eq!(
            body(&[Message::system("only rules")])["messages"],
            json!([{"role": "user", "content": [{"type": "text", "text": PLACEHOLDER_TEXT}]}])
        );
    }

    #[test]
    fn thinking_blocks_go_back_first_and_exactly_and_responses_items_never() {
        let assistant = Message {
            reasoning_content: Some("not sent".into()),
            reasoning_blocks: vec![
                ReasoningBlock::Thinking { thinking: "step \u{2028} \"one\"".into(), signature: "sig+/=".into() },
                ReasoningBlock::Reasoning { id: "rs_1".into(), summary: vec!["x".into()], encrypted_content: None },
                ReasoningBlock::RedactedThinking { data: "opaque==".into() },
            ],
            ..assistant_calling(vec![ToolCall::new("t1", "shell", "{\"c\":1}")])
        };
        let messages = [Message::user("go"), Message { content: "let me look".into(), ..assistant }];
        assert_eq!(
            body(&messages)["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "step \u{2028} \"one\"", "signature": "sig+/="},
                {"type": "redacted_thinking", "data": "opaque=="},
                {"type": "text", "text": "let me look"},
                {"type": "tool_use", "id": "t1", "name": "shell", "input": {"c": 1}},
            ])
        );
    }

    /// A tool-use loop keeps the thinking setting it began with: one whose assistant message
    /// came without thinking (another provider's, before a fallback) goes on without it, and
    /// thinking returns with the next user turn.
    #[test]
    fn thinking_stays_off_for_a_tool_loop_that_began_without_it() {
        let thinking = |messages: &[Message]| {
            let request = ChatRequest { thinking: Thinking::High, ..request(messages, &[]) };
            let body = request_body(&request, &options(false));
            (body["thinking"].clone(), body["max_tokens"].clone())
        };
        let enabled = (json!({"type": "enabled", "budget_tokens": 16384}), json!(DEFAULT_MAX_TOKENS + 16384));
        let call = assistant_calling(vec![ToolCall::new("t1", "shell", "{}")]);
        let result = Message::tool("t1", "shell", "ok");
        let unsigned = [Message::user("go"), call.clone(), result.clone()];
        assert_eq!(thinking(&unsigned), (Value::Null, json!(DEFAULT_MAX_TOKENS)));

        let signed = Message {
            reasoning_blocks: vec![ReasoningBlock::Thinking { thinking: "t".into(), signature: "s".into() }],
            ..call.clone()
        };
        assert_eq!(thinking(&[Message::user("go"), signed, result.clone()]), enabled);
        let redacted =
            Message { reasoning_blocks: vec![ReasoningBlock::RedactedThinking { data: "d".into() }], ..call };
        assert_eq!(thinking(&[Message::user("go"), redacted, result]), enabled);

        let mut next_turn = unsigned.to_vec();
        next_turn.extend([Message::assistant("done"), Message::user("again")]);
        assert_eq!(thinking(&next_turn), enabled);
        assert_eq!(thinking(&[Message::user("go")]), enabled);
    }

    /// Arguments and ids are model output: whatever they are, the next request stays valid.
    #[test]
    fn model_made_arguments_and_ids_never_make_the_request_invalid_red() {
        assert_eq!(tool_input(""), json!({}));
        assert_eq!(tool_input("  "), json!({}));
        assert_eq!(tool_input("{\"a\":[1,2]}"), json!({"a": [1, 2]}));
        assert_eq!(tool_input("[1,2]"), json!({"_raw": "[1,2]"}));
        assert_eq!(tool_input("\"text\""), json!({"_raw": "\"text\""}));
        assert_eq!(tool_input("{\"unclosed\": "), json!({"_raw": "{\"unclosed\": "}));
        assert_eq!(wire_id("toolu_01A-b"), "toolu_01A-b");
        assert_eq!(wire_id("call:0.1 x"), "call_0_1_x");
        assert_eq!(wire_id(""), "call");
        let messages = [
            Message::user("go"),
            assistant_calling(vec![ToolCall::new("fc:1", "shell", "not json")]),
            Message::tool("fc:1", "shell", "ok"),
        ];
        let turns = body(&messages)["messages"].clone();
        assert_eq!(turns[1]["content"][0]["id"], "fc_1");
        assert_eq!(turns[1]["content"][0]["input"], json!({"_raw": "not json"}));
        assert_eq!(turns[2]["content"][0]["tool_use_id"], "fc_1");
    }

    #[test]
    fn cache_breakpoints_on_system_last_tool_and_latest_block_only_when_on() {
        let messages = [
            Message::system("a"),
            Message::system("b"),
            Message::user("q1"),
            Message::assistant("r1"),
            Message::user("q2"),
        ];
        let tools = [tool(), ToolDefinition { name: "read".into(), ..tool() }];
        let on = request_body(&request(&messages, &tools), &options(true));
        let ephemeral = json!({"type": "ephemeral"});
        assert!(on["system"][0].get("cache_control").is_none());
        assert_eq!(on["system"][1]["cache_control"], ephemeral);
        assert!(on["tools"][0].get("cache_control").is_none());
        assert_eq!(on["tools"][1]["cache_control"], ephemeral);
        assert_eq!(on["messages"][2]["content"][0]["cache_control"], ephemeral);
        assert_eq!(on.to_string().matches("cache_control").count(), 3);
        let off = request_body(&request(&messages, &tools), &options(false));
        assert!(!off.to_string().contains("cache_control"), "{off}");
        // A latest turn that ends in thinking marks its last other block.
        let thinking_last = [
            Message::user("q"),
            Message {
                reasoning_blocks: vec![ReasoningBlock::RedactedThinking { data: "d".into() }],
                ..Message::assistant("")
            },
        ];
        let body = request_body(&request(&thinking_last, &[]), &options(true));
        assert!(!body["messages"][1]["content"][0].to_string().contains("cache_control"), "{body}");
    }

    #[test]
    fn thinking_levels_and_max_tokens() {
        let messages = [Message::user("q")];
        let with = |thinking, max_tokens| {
            let request = ChatRequest { thinking, ..request(&messages, &[]) };
            request_body(&request, &AnthropicOptions { prompt_caching: true, max_tokens })
        };
        let plain = with(Thinking::Default, None);
        assert!(plain.get("thinking").is_none());
        assert_eq!(plain["max_tokens"], 8192);
        assert_eq!(with(Thinking::Disabled, Some(100))["thinking"], json!({"type": "disabled"}));
        assert_eq!(with(Thinking::Disabled, Some(100))["max_tokens"], 100);
        for (level, budget) in
            [(Thinking::Low, 2048), (Thinking::Enabled, 8192), (Thinking::Medium, 8192), (Thinking::High, 16384)]
        {
            let body = with(level, Some(1000));
            assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": budget}), "{level:?}");
            assert_eq!(body["max_tokens"], 1000 + budget, "{level:?}");
        }
        assert_eq!(with(Thinking::High, Some(u32::MAX))["max_tokens"], u32::MAX);
    }

    #[test]
    fn no_temperature_no_response_format_and_stream_only_when_asked() {
        let messages = [Message::user("q")];
        let schema = json!({"type": "object"});
        let request = ChatRequest { output_schema: Some(&schema), stream: true, ..request(&messages, &[]) };
        let body = request_body(&request, &options(true));
        assert_eq!(body["stream"], true);
        for absent in ["temperature", "response_format", "output_schema", "tools", "tool_choice"] {
            assert!(body.get(absent).is_none(), "{absent}: {body}");
        }
    }

    #[test]
    fn tools_carry_name_description_and_an_object_schema() {
        let tools =
            [tool(), ToolDefinition { name: "bare".into(), description: String::new(), parameters: Value::Null }];
        let messages = [Message::user("q")];
        let body = request_body(&request(&messages, &tools), &options(false));
        assert_eq!(
            body["tools"],
            json!([{"name": "shell", "description": "run", "input_schema": {"type": "object"}},
                   {"name": "bare", "input_schema": {"type": "object"}}])
        );
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    }

    #[test]
    fn a_plain_answer_becomes_one_assistant_message() {
        let body = json!({
            "type": "message", "stop_reason": "tool_use",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s1"},
                {"type": "redacted_thinking", "data": "r1"},
                {"type": "text", "text": "a"},
                {"type": "server_tool_use", "id": "x"},
                {"type": "text", "text": "b"},
                {"type": "tool_use", "id": "t", "name": "shell", "input": {"b": 1, "a": "x y"}},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 20,
                      "cache_read_input_tokens": 300},
        });
        let response = parse_message(body.to_string().as_bytes()).unwrap();
        assert_eq!(response.message.content, "ab");
        assert_eq!(response.message.reasoning_content.as_deref(), Some("hmm"));
        assert_eq!(
            response.message.reasoning_blocks,
            vec![
                ReasoningBlock::Thinking { thinking: "hmm".into(), signature: "s1".into() },
                ReasoningBlock::RedactedThinking { data: "r1".into() }
            ]
        );
        assert_eq!(response.message.tool_calls, vec![ToolCall::new("t", "shell", r#"{"a":"x y","b":1}"#)]);
        assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            response.usage,
            Usage { input_tokens: 330, output_tokens: 5, cache_read_tokens: 300, cache_write_tokens: 20 }
        );
    }

    #[test]
    fn error_bodies_and_non_messages_are_refused() {
        let error = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(matches!(parse_message(error), Err(WireError::Provider(message)) if message == "Overloaded"));
        assert!(matches!(parse_message(br#"{"type":"completion"}"#), Err(WireError::Invalid(_))));
        assert!(matches!(parse_message(br#"{"type":"message"}"#), Err(WireError::Invalid(_))));
        let nameless = br#"{"type":"message","content":[{"type":"tool_use","id":"t","input":{}}]}"#;
        assert!(matches!(parse_message(nameless), Err(WireError::Invalid(detail)) if detail.contains("content[0]")));
    }

    #[test]
    fn too_many_tool_calls_are_refused() {
        let blocks = (0..=MAX_TOOL_CALLS)
            .map(|index| Block::ToolUse { id: index.to_string(), name: "n".into(), arguments: "{}".into() })
            .collect();
        assert!(matches!(assemble(blocks, Usage::default(), None), Err(WireError::Invalid(_))));
    }

    #[test]
    fn hostile_usage_counts_never_panic_nor_hide_spend_red() {
        let mut counts = UsageCounts::default();
        counts.update(
            &json!({"input_tokens": -4, "output_tokens": "9", "cache_read_input_tokens": 9_007_199_254_740_993_u64,
            "cache_creation_input_tokens": u64::MAX}),
        );
        let usage = counts.usage();
        assert_eq!(usage.input_tokens, u64::MAX);
        assert_eq!(usage.output_tokens, 0);
        assert_eq!(usage.cache_read_tokens, 9_007_199_254_740_993);
        assert_eq!(usage.cache_write_tokens, u64::MAX);
        assert!(!counts.update(&json!({})));
        assert!(counts.update(&json!({"output_tokens": 3})));
        assert_eq!(counts.usage().output_tokens, 3);
    }
}
