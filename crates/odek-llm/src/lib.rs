//! Model providers for odek: the OpenAI-compatible chat-completions client (with SSE streaming),
//! the Anthropic adapter and the replay provider, plus usage accounting and prices.
//!
//! Nothing lives here yet; the providers arrive with the agent loop (issue 3).
