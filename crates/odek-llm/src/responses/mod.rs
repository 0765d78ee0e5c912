//! The OpenAI Responses API provider: `POST <base_url>/responses` with a Bearer key, a plain
//! response object or a stream of typed SSE events ending in `response.completed`. Always
//! stateless: `store: false`, reasoning returned encrypted and sent back verbatim, the whole
//! conversation in every request, never a `previous_response_id`. Deadlines, retries and
//! errors are the shared endpoint's (`crate::http`). Start at [`ResponsesProvider::new`].
//!
//! The finish reason is the response's `status` (`completed`), or for an `incomplete` one its
//! `incomplete_details.reason` (`max_output_tokens`, `content_filter`); a `failed` one is the
//! provider's error. Thinking levels map to `reasoning.effort` as `wire::reasoning_effort`
//! tabulates.

mod stream;
mod wire;

use reqwest::header::HeaderMap;

use crate::error::LlmError;
use crate::http::{Dialect, Endpoint, EndpointConfig};
use crate::openai::bearer;
use crate::provider::{BoxFuture, ChatRequest, ChatResponse, Provider, StreamObserver};
use crate::wire::WireError;
use stream::ResponseStream;

/// An OpenAI Responses API endpoint.
#[derive(Debug)]
pub struct ResponsesProvider {
    endpoint: Endpoint,
    dialect: Responses,
}

/// The Responses API wire format.
#[derive(Debug)]
struct Responses;

impl Dialect for Responses {
    type Stream = ResponseStream;

    fn headers(&self, api_key: &str, headers: &mut HeaderMap) {
        bearer(api_key, headers);
    }

    fn parse_body(&self, body: &[u8]) -> Result<ChatResponse, WireError> {
        wire::parse_response(body)
    }

    fn new_stream(&self) -> ResponseStream {
        ResponseStream::default()
    }
}

impl ResponsesProvider {
    /// Checks the base URL and builds the HTTP client (rustls).
    pub fn new(config: EndpointConfig) -> Result<ResponsesProvider, LlmError> {
        Ok(ResponsesProvider { endpoint: Endpoint::new(config, "responses")?, dialect: Responses })
    }

    /// The endpoint URL as errors name it.
    pub fn endpoint(&self) -> &str {
        self.endpoint.display()
    }

    /// The response-object parser without HTTP: what [`Provider::complete`] makes of a
    /// non-streamed body. For the fuzz targets in `fuzz/`; not part of the API.
    #[doc(hidden)]
    pub fn decode_completion_body(&self, body: &[u8]) -> Result<ChatResponse, LlmError> {
        self.endpoint.decode_completion(&self.dialect, body)
    }

    /// The event-stream parser without HTTP: what [`Provider::complete`] makes of an SSE body
    /// that arrives as `chunks`. For the fuzz targets in `fuzz/`; not part of the API.
    #[doc(hidden)]
    pub fn decode_stream_body(&self, chunks: &[&[u8]]) -> Result<ChatResponse, LlmError> {
        self.endpoint.decode_stream(&self.dialect, chunks)
    }
}

impl Provider for ResponsesProvider {
    fn id(&self) -> &str {
        "openai-responses"
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = wire::request_body(&request);
            self.endpoint.call(&self.dialect, &body, &request, observer).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> ResponsesProvider {
        ResponsesProvider::new(EndpointConfig::new("http://127.0.0.1:9/v1", "sk-test")).unwrap()
    }

    const STREAM: &[u8] = b"event: response.output_item.added\n\
        data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\",\"content\":[]}}\n\n\
        data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"h\xc3\xa9llo\"}\n\n\
        data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"output\":[]}}\n\n";

    #[test]
    fn the_answer_does_not_depend_on_how_the_body_is_cut_red() {
        let whole = provider().decode_stream_body(&[STREAM]).unwrap();
        assert_eq!(whole.message.content, "héllo");
        for cut in 1..STREAM.len() {
            let (head, tail) = STREAM.split_at(cut);
            assert_eq!(provider().decode_stream_body(&[head, tail]).unwrap(), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = STREAM.chunks(1).collect();
        assert_eq!(provider().decode_stream_body(&bytes).unwrap(), whole);
    }

    #[test]
    fn junk_after_the_end_marker_is_ignored_red() {
        let junk: &[u8] = b"data: \xff not utf-8\n\ndata: {oops\n\n";
        let joined = [STREAM, junk].concat();
        assert_eq!(
            provider().decode_stream_body(&[&joined]).unwrap(),
            provider().decode_stream_body(&[STREAM, junk]).unwrap()
        );
    }

    #[test]
    fn the_endpoint_is_responses() {
        assert_eq!(provider().endpoint(), "http://127.0.0.1:9/v1/responses");
        assert_eq!(provider().id(), "openai-responses");
    }
}
