//! The native Anthropic Messages provider: `POST <base_url>/messages` with `x-api-key` and
//! `anthropic-version`, plain JSON or SSE streaming (named events, `message_stop` ends it),
//! thinking blocks kept and sent back byte for byte, prompt-cache breakpoints. Deadlines,
//! retries (429, 5xx and 529 `overloaded_error`) and errors are the shared endpoint's
//! (`crate::http`). Start at [`AnthropicProvider::new`]; the mapping of odek's conversation to
//! the API's turns is documented in `wire`.

mod stream;
mod wire;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::LlmError;
use crate::http::{Dialect, Endpoint, EndpointConfig};
use crate::provider::{BoxFuture, ChatRequest, ChatResponse, Provider, StreamObserver};
use crate::wire::WireError;
use stream::MessageStream;

/// The API's address up to its version path.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The `anthropic-version` header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// What the Messages API adds to an endpoint's configuration.
#[derive(Debug, Clone)]
pub struct AnthropicOptions {
    /// Mark prompt-cache breakpoints (`cache_control: {"type": "ephemeral"}`) on the system
    /// prompt, the tools and the latest turn, so the next call reads them from the cache.
    pub prompt_caching: bool,
    /// `max_tokens` of an answer (the API requires one); `None` is 8192. A thinking budget is
    /// added to it.
    pub max_tokens: Option<u32>,
}

impl Default for AnthropicOptions {
    /// Caching on, the default `max_tokens`.
    fn default() -> AnthropicOptions {
        AnthropicOptions { prompt_caching: true, max_tokens: None }
    }
}

/// An Anthropic Messages endpoint.
#[derive(Debug)]
pub struct AnthropicProvider {
    endpoint: Endpoint,
    dialect: Messages,
    options: AnthropicOptions,
}

/// The Messages wire format.
#[derive(Debug)]
struct Messages;

impl Dialect for Messages {
    type Stream = MessageStream;

    /// `x-api-key` (sensitive; none for an empty key) and `anthropic-version`.
    fn headers(&self, api_key: &str, headers: &mut HeaderMap) {
        if !api_key.is_empty()
            && let Ok(mut value) = HeaderValue::from_str(api_key)
        {
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        headers.insert(HeaderName::from_static("anthropic-version"), HeaderValue::from_static(ANTHROPIC_VERSION));
    }

    fn parse_body(&self, body: &[u8]) -> Result<ChatResponse, WireError> {
        wire::parse_message(body)
    }

    fn new_stream(&self) -> MessageStream {
        MessageStream::default()
    }
}

impl AnthropicProvider {
    /// Checks the base URL and builds the HTTP client (rustls).
    pub fn new(config: EndpointConfig, options: AnthropicOptions) -> Result<AnthropicProvider, LlmError> {
        let endpoint = Endpoint::new(config, "messages")?;
        Ok(AnthropicProvider { endpoint, dialect: Messages, options })
    }

    /// The endpoint URL as errors name it.
    pub fn endpoint(&self) -> &str {
        self.endpoint.display()
    }

    /// The answer parser without HTTP: what [`Provider::complete`] makes of a non-streamed
    /// body. For the fuzz targets in `fuzz/`; not part of the API.
    #[doc(hidden)]
    pub fn decode_completion_body(&self, body: &[u8]) -> Result<ChatResponse, LlmError> {
        self.endpoint.decode_completion(&self.dialect, body)
    }

    /// The stream parser without HTTP: what [`Provider::complete`] makes of an SSE body that
    /// arrives as `chunks`. For the fuzz targets in `fuzz/`; not part of the API.
    #[doc(hidden)]
    pub fn decode_stream_body(&self, chunks: &[&[u8]]) -> Result<ChatResponse, LlmError> {
        self.endpoint.decode_stream(&self.dialect, chunks)
    }
}

impl Provider for AnthropicProvider {
    fn id(&self) -> &str {
        "anthropic"
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = wire::request_body(&request, &self.options);
            self.endpoint.call(&self.dialect, &body, &request, observer).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> AnthropicProvider {
        AnthropicProvider::new(EndpointConfig::new("http://127.0.0.1:9/v1", "sk-ant-test"), AnthropicOptions::default())
            .unwrap()
    }

    #[test]
    fn the_key_goes_in_x_api_key_marked_sensitive_and_never_when_empty() {
        let mut headers = HeaderMap::new();
        Messages.headers("sk-ant-secret", &mut headers);
        let key = headers.get("x-api-key").unwrap();
        assert!(key.is_sensitive());
        assert_eq!(key, "sk-ant-secret");
        assert_eq!(headers.get("anthropic-version").unwrap(), ANTHROPIC_VERSION);
        assert!(headers.get("authorization").is_none());
        let mut local = HeaderMap::new();
        Messages.headers("", &mut local);
        assert!(local.get("x-api-key").is_none());
        assert_eq!(local.len(), 1);
    }

    #[test]
    fn posts_to_messages_and_defaults_cache() {
        assert_eq!(provider().endpoint(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(provider().id(), "anthropic");
        let options = AnthropicOptions::default();
        assert!(options.prompt_caching && options.max_tokens.is_none());
    }

    /// Bytes after `message_stop` are ignored whether they come in the same read or a later one.
    #[test]
    fn junk_after_message_stop_is_ignored_whatever_the_reads_red() {
        let head: &[u8] = b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"hi\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let junk: &[u8] = b"data: \xff\xfe\n\n";
        let whole = [head, junk].concat();
        let one_read = provider().decode_stream_body(&[&whole]).unwrap();
        let two_reads = provider().decode_stream_body(&[head, junk]).unwrap();
        assert_eq!(one_read, two_reads);
        assert_eq!(one_read.message.content, "hi");
    }
}
