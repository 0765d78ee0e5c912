//! Model providers for odek: the OpenAI-compatible chat-completions client (with SSE streaming)
//! and the replay provider, behind the object-safe [`Provider`] trait the agent loop uses.
//!
//! Start at [`Provider`] and [`ChatRequest`]; the conversation types are in [`message`].

pub mod error;
pub mod message;
pub mod provider;

pub use error::LlmError;
pub use message::{FunctionCall, Message, Role, ToolCall, ToolDefinition, Usage};
pub use provider::{BoxFuture, ChatRequest, ChatResponse, NoStreamObserver, Provider, StreamObserver, Thinking};
