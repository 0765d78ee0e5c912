//! Model providers for odek: the OpenAI-compatible chat-completions client and the native
//! OpenAI Responses API and Anthropic Messages clients (all three with SSE streaming), the
//! replay provider that answers from a script file, and the recording wrapper that writes such
//! scripts — all behind the object-safe [`Provider`] trait the agent loop uses, with
//! [`FallbackProvider`] to chain them (`fallback_models`).
//!
//! The public surface is the list re-exported below, the modules being internal: the
//! [`Provider`] trait with its [`ChatRequest`], [`ChatResponse`], [`Thinking`] and
//! [`StreamObserver`]; the conversation types ([`Message`], [`Role`], [`ToolCall`],
//! [`FunctionCall`], [`ToolDefinition`], [`Usage`]); the errors ([`LlmError`], [`TransportKind`]);
//! and the providers: [`OpenAiProvider`], [`ResponsesProvider`] and [`AnthropicProvider`]
//! (configured by [`EndpointConfig`], the latter with [`AnthropicOptions`]), [`ReplayProvider`]
//! (answering from a [`ReplayScript`]), [`RecordingProvider`] and [`FallbackProvider`].

mod anthropic;
mod error;
mod fallback;
mod http;
mod message;
mod openai;
mod provider;
mod record;
mod replay;
mod responses;
mod wire;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicOptions, AnthropicProvider, DEFAULT_ANTHROPIC_BASE_URL};
pub use error::{LlmError, TransportKind};
pub use fallback::{FallbackEntry, FallbackProvider, falls_back};
pub use http::{DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_STREAM_IDLE_TIMEOUT, EndpointConfig};
pub use message::{FunctionCall, Message, ReasoningBlock, Role, ToolCall, ToolDefinition, Usage};
pub use openai::OpenAiProvider;
pub use provider::{
    BoxFuture, ChatRequest, ChatResponse, Fallback, NoStreamObserver, Provider, StreamObserver, Thinking,
};
pub use record::RecordingProvider;
pub use replay::{ReplayProvider, ReplayScript, ReplayToolCall, ReplayTurn};
pub use responses::ResponsesProvider;
