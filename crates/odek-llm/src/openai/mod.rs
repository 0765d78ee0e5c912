//! The OpenAI-compatible chat-completions provider: `POST <base_url>/chat/completions` with a
//! Bearer key, plain JSON or SSE streaming (`data: [DONE]` ends it). Deadlines, retries and
//! errors are the shared endpoint's (`crate::http`). Start at [`OpenAiProvider::new`].
//!
//! Thinking levels on the wire (our choice; the spec leaves it open): `Default` sends nothing,
//! `Enabled`/`Disabled` send `"thinking": {"type": "enabled"|"disabled"}`, `Low`/`Medium`/`High`
//! send `"reasoning_effort": "low"|"medium"|"high"`.

mod stream;
mod wire;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};

use crate::error::LlmError;
use crate::http::{Dialect, Endpoint, EndpointConfig};
use crate::provider::{BoxFuture, ChatRequest, ChatResponse, Provider, StreamObserver};
use crate::wire::WireError;
use stream::StreamAccumulator;

/// An OpenAI-compatible chat-completions endpoint.
#[derive(Debug)]
pub struct OpenAiProvider {
    endpoint: Endpoint,
    dialect: ChatCompletions,
}

/// The chat-completions wire format.
#[derive(Debug)]
struct ChatCompletions {
    structured: wire::StructuredOutput,
}

impl Dialect for ChatCompletions {
    type Stream = StreamAccumulator;

    fn headers(&self, api_key: &str, headers: &mut HeaderMap) {
        bearer(api_key, headers);
    }

    fn parse_body(&self, body: &[u8]) -> Result<ChatResponse, WireError> {
        wire::parse_completion(body)
    }

    fn new_stream(&self) -> StreamAccumulator {
        StreamAccumulator::default()
    }
}

/// `Authorization: Bearer <key>`, marked sensitive; nothing for an empty key (local servers).
pub(crate) fn bearer(api_key: &str, headers: &mut HeaderMap) {
    if !api_key.is_empty()
        && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {api_key}"))
    {
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
}

impl OpenAiProvider {
    /// Checks the base URL and builds the HTTP client (rustls).
    pub fn new(config: EndpointConfig) -> Result<OpenAiProvider, LlmError> {
        let endpoint = Endpoint::new(config, "chat/completions")?;
        let structured = wire::StructuredOutput::for_host(endpoint.host());
        Ok(OpenAiProvider { endpoint, dialect: ChatCompletions { structured } })
    }

    /// The endpoint URL as errors name it.
    pub fn endpoint(&self) -> &str {
        self.endpoint.display()
    }

    /// The completion parser without HTTP: what [`Provider::complete`] makes of a non-streamed
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

impl Provider for OpenAiProvider {
    fn id(&self) -> &str {
        "openai"
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = wire::request_body(&request, self.dialect.structured);
            self.endpoint.call(&self.dialect, &body, &request, observer).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> OpenAiProvider {
        OpenAiProvider::new(EndpointConfig::new("http://127.0.0.1:9/v1", "sk-test")).unwrap()
    }

    /// Found by the `provider_sse` fuzz target: bytes after `[DONE]` failed the answer when they
    /// arrived in the same read as `[DONE]`, and were ignored when they came in a later one.
    #[test]
    fn junk_after_done_in_the_same_read_is_ignored_red() {
        let head: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n";
        let junk: &[u8] = b"\xff\xfe not utf-8\n";
        let whole = [head, junk].concat();
        let one_read = provider().decode_stream_body(&[&whole]).unwrap();
        let two_reads = provider().decode_stream_body(&[head, junk]).unwrap();
        assert_eq!(one_read, two_reads);
        assert_eq!(one_read.message.content, "hi");
    }

    /// The same fuzz finding: with a bad chunk and then a bad line, the error reported depended
    /// on where the reads were cut; the earlier defect is reported either way.
    #[test]
    fn first_defect_is_reported_whatever_the_reads_red() {
        let head: &[u8] = b"data: {\"choices\":oops}\n\n";
        let tail: &[u8] = b"data: \xff\n\n";
        let whole = [head, tail].concat();
        let one_read = provider().decode_stream_body(&[&whole]).unwrap_err().to_string();
        let two_reads = provider().decode_stream_body(&[head, tail]).unwrap_err().to_string();
        assert_eq!(one_read, two_reads);
        assert!(one_read.contains("stream event is not JSON"), "{one_read}");
    }

    /// The framing is `odek_contract::event_stream`'s: every SSE line ending (a lone `\r`
    /// included) and a leading byte-order mark decode alike, and its two errors read as before.
    #[test]
    fn every_line_ending_decodes_alike_and_framing_errors_read_as_before() {
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n: ping\n\ndata: [DONE]\n\n";
        let answer = provider().decode_stream_body(&[stream.as_bytes()]).unwrap();
        for variant in [stream.replace('\n', "\r\n"), stream.replace('\n', "\r"), format!("\u{feff}{stream}")] {
            assert_eq!(provider().decode_stream_body(&[variant.as_bytes()]).unwrap(), answer, "{variant:?}");
        }
        let endless = [&b"data: "[..], &vec![b'x'; 4 * 1024 * 1024]].concat();
        let error = provider().decode_stream_body(&[&endless]).unwrap_err().to_string();
        assert!(error.ends_with("stream event longer than 4194304 bytes"), "{error}");
        let error = provider().decode_stream_body(&[b": \xff\n\n"]).unwrap_err().to_string();
        assert!(error.ends_with("stream line is not UTF-8"), "{error}");
    }
}
