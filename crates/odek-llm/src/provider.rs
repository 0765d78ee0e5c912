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
    /// The provider's `finish_reason` (Anthropic's `stop_reason`, the Responses API's
    /// status), when it gave one.
    pub finish_reason: Option<String>,
    /// \[beyond\] The model that answered when it is not the one asked for (a
    /// `fallback_models` entry took the call): budgets price the usage at its prices.
    pub model: Option<String>,
}

/// \[beyond\] A call moving to the next `fallback_models` entry: the entry that failed
/// before its first byte (after its retries), why, and the one tried next.
#[derive(Debug, Clone, Copy)]
pub struct Fallback<'a> {
    /// The provider names (`anthropic`, a `providers` key) and models.
    pub from_provider: &'a str,
    pub from_model: &'a str,
    pub to_provider: &'a str,
    pub to_model: &'a str,
    /// The failure, as [`LlmError::class`] names it and as its message says it (redacted).
    pub error: &'a LlmError,
}

impl std::fmt::Display for Fallback<'_> {
    /// The operator's one line: `<from>/<model> failed before answering (<class>: <error>);
    /// falling back to <to>/<model>`.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{}/{} failed before answering ({}: {}); falling back to {}/{}",
            self.from_provider,
            self.from_model,
            self.error.class(),
            self.error,
            self.to_provider,
            self.to_model
        )
    }
}

/// Receives streamed text as it arrives (for the terminal status line); never on the result path.
pub trait StreamObserver: Send + Sync {
    /// A piece of answer text or reasoning arrived.
    fn on_delta(&self, _text: &str, _reasoning: bool) {}

    /// Bytes arrived that added to the answer (text, reasoning or tool-call arguments): what
    /// restarts the stream-idle deadline, reported for liveness. Called once per such chunk,
    /// so an implementation must be cheap.
    fn on_progress(&self) {}

    /// \[beyond\] The call moved to a fallback model; the answer comes from `fallback.to_*`.
    fn on_fallback(&self, _fallback: &Fallback<'_>) {}
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
