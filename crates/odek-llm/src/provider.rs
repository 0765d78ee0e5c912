//! The provider seam: one chat call in, one assistant message and its usage out. The loop in
//! `odek-agent` talks to every model through [`Provider`]; it never sees HTTP.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::error::LlmError;
use crate::message::{Message, ToolDefinition, Usage};

/// Thinking level (config `thinking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Thinking {
    /// Model default: nothing is sent.
    #[default]
    Default,
    Enabled,
    Disabled,
    Low,
    Medium,
    High,
}

impl Thinking {
    /// Parses the config value; `None` for anything but the five names and "".
    pub fn parse(value: &str) -> Option<Thinking> {
        match value {
            "" => Some(Thinking::Default),
            "enabled" => Some(Thinking::Enabled),
            "disabled" => Some(Thinking::Disabled),
            "low" => Some(Thinking::Low),
            "medium" => Some(Thinking::Medium),
            "high" => Some(Thinking::High),
            _ => None,
        }
    }
}

/// One chat call.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [Message],
    /// Empty for tool-less side calls (summaries, compaction).
    pub tools: &'a [ToolDefinition],
    pub thinking: Thinking,
    /// Stream the answer (SSE) when the provider supports it.
    pub stream: bool,
    /// A tool-less side call (partial summary, compaction digest), not a loop iteration.
    pub side_call: bool,
    /// Overall deadline of this call (side calls use a short one); `None` = the provider default.
    pub timeout: Option<Duration>,
    /// \[beyond\] The JSON Schema the final answer must match (`--output-schema`): a provider
    /// that supports structured output asks the model for it; one that does not ignores it. The
    /// answer is checked locally either way.
    pub output_schema: Option<&'a serde_json::Value>,
}

/// What one chat call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The assistant message (role `assistant`; `content`, `reasoning_content`, `tool_calls`).
    pub message: Message,
    pub usage: Usage,
    /// The provider's `finish_reason`, when it gave one.
    pub finish_reason: Option<String>,
}

/// Receives streamed text as it arrives (for the terminal status line); never on the result path.
pub trait StreamObserver: Send + Sync {
    /// A piece of answer text or reasoning arrived.
    fn on_delta(&self, _text: &str, _reasoning: bool) {}

    /// Bytes arrived that added to the answer (text, reasoning or tool-call arguments): what
    /// restarts the stream-idle deadline, reported for liveness. Called once per such chunk,
    /// so an implementation must be cheap.
    fn on_progress(&self) {}
}

/// Ignores every delta.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoStreamObserver;

impl StreamObserver for NoStreamObserver {}

/// A boxed future, so [`Provider`] stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A model endpoint.
pub trait Provider: Send + Sync {
    /// Short id for sessions and errors (`openai`, `replay`).
    fn id(&self) -> &str;

    /// Makes one chat call.
    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>>;
}
