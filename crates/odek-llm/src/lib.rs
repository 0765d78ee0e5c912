//! Model providers for odek: the OpenAI-compatible chat-completions client (with SSE streaming),
//! the replay provider that answers from a script file, and the recording wrapper that writes
//! such scripts — all behind the object-safe [`Provider`] trait the agent loop uses.
//!
//! Start at [`Provider`] and [`ChatRequest`]; the conversation types are in [`message`]; the
//! providers are [`OpenAiProvider`], [`ReplayProvider`] and [`RecordingProvider`].

pub mod error;
pub mod message;
pub mod openai;
pub mod provider;
pub mod record;
pub mod replay;
mod sse;

pub use error::{LlmError, TransportKind};
pub use message::{FunctionCall, Message, Role, ToolCall, ToolDefinition, Usage};
pub use openai::{OpenAiConfig, OpenAiProvider};
pub use provider::{BoxFuture, ChatRequest, ChatResponse, NoStreamObserver, Provider, StreamObserver, Thinking};
pub use record::RecordingProvider;
pub use replay::{ReplayProvider, ReplayScript};
