//! The conversation as both the provider wire and the session file carry it: messages, tool calls,
//! tool definitions and usage. One shape serves both (spec `loop-and-sessions.md` §10.2).

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// \[beyond\] The provider's signed or encrypted reasoning of an assistant message, in the
    /// order it came, sent back unchanged to the API that made it (Anthropic thinking blocks,
    /// OpenAI Responses reasoning items); other APIs never see it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning_blocks: Vec<ReasoningBlock>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            reasoning_content: None,
            reasoning_blocks: Vec::new(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    pub fn system(content: impl Into<String>) -> Message {
        Message::plain(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Message {
        Message::plain(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Message {
        Message::plain(Role::Assistant, content)
    }

    /// A tool result answering `call_id`, named after the tool.
    pub fn tool(call_id: impl Into<String>, name: impl Into<String>, content: impl Into<String>) -> Message {
        Message { tool_call_id: Some(call_id.into()), name: Some(name.into()), ..Message::plain(Role::Tool, content) }
    }
}

/// Reasoning a provider asks to get back verbatim on the next turn. The opaque fields
/// (`signature`, `data`, `encrypted_content`) are the vendor's own tokens, kept byte for byte.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningBlock {
    /// An Anthropic `thinking` block: the thinking text and the signature that vouches for it.
    Thinking { thinking: String, signature: String },
    /// An Anthropic `redacted_thinking` block: encrypted, never shown.
    RedactedThinking { data: String },
    /// An OpenAI Responses `reasoning` item: its id, the summary texts and the encrypted
    /// content (`include: ["reasoning.encrypted_content"]`, since odek never stores state on
    /// the server).
    Reasoning {
        id: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
}

impl ReasoningBlock {
    /// Whether the block may be written to disk (sessions, recordings) as it is: its readable
    /// text (thinking, summaries) holds nothing the secret redactor would change. A block that
    /// fails is left out of what is written, never altered — its signature vouches for the
    /// exact text, and an API refuses a changed one. Leaving it out is safe: a later turn
    /// starts with a new user message, and the APIs need reasoning back only within a turn.
    /// The opaque fields are the vendor's ciphertext and are not inspected.
    pub fn survives_redaction(&self) -> bool {
        let unchanged = |text: &str| matches!(odek_contract::redaction::redact(text), std::borrow::Cow::Borrowed(_));
        match self {
            ReasoningBlock::Thinking { thinking, .. } => unchanged(thinking),
            ReasoningBlock::RedactedThinking { .. } => true,
            ReasoningBlock::Reasoning { summary, .. } => summary.iter().all(|text| unchanged(text)),
        }
    }
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call ID (may be empty: the loop then uses `it<i>-call<n>`).
    #[serde(default)]
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".to_owned()
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: function_type(),
            function: FunctionCall { name: name.into(), arguments: arguments.into() },
        }
    }
}

/// The function part of a tool call. `arguments` is the raw string exactly as the provider sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: serde_json::Value,
}

/// Provider-reported token counts of one call. `input_tokens` includes cache-read and
/// cache-creation tokens (spec `budgets.md` §2); \[beyond\] `cache_read_tokens` and
/// `cache_write_tokens` say how many of them were read from or written to the provider's
/// prompt cache, where it reports that, so each can be priced on its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The part of `input_tokens` read from the prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Usage {
    /// Counts without a cache breakdown.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage { input_tokens, output_tokens, ..Usage::default() }
    }

    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
    }

    /// The input tokens neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens.saturating_sub(self.cache_read_tokens).saturating_sub(self.cache_write_tokens)
    }
}
