//! \[beyond\] The provider's liveness deadlines (issue 17 item 1) against a real loopback server:
//! the first-byte bound of a plain and a streamed attempt, the stream-idle bound, the
//! `silent_for` they set (what the loop reports as a stall), and the progress reported per chunk.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use odek_llm::{
    ChatRequest, ChatResponse, EndpointConfig, LlmError, Message, NoStreamObserver, OpenAiProvider, Provider,
    StreamObserver, Thinking,
};
use odek_test_support::openai::{Reply, ScriptedServer};

/// A loopback server that reads each request head and answers with `answer`, then holds the
/// connection open without another byte until the client goes away.
fn raw_server(answer: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|read| read > 0) && line != "\r\n" {
                    line.clear();
                }
                let _ = stream.write_all(answer.as_bytes());
                let mut sink = [0; 1024];
                while std::io::Read::read(&mut reader, &mut sink).is_ok_and(|read| read > 0) {}
            });
        }
    });
    base_url
}

fn provider(base_url: &str, first_byte: Duration, idle: Duration) -> OpenAiProvider {
    OpenAiProvider::new(EndpointConfig {
        max_retries: 3,
        retry_base_delay: Duration::from_millis(1),
        retry_max_delay: Duration::from_millis(4),
        first_byte_timeout: first_byte,
        stream_idle_timeout: idle,
        request_timeout: Duration::from_secs(120),
        ..EndpointConfig::new(base_url, "sk-test-liveness-0123456789")
    })
    .unwrap()
}

async fn call(
    provider: &OpenAiProvider,
    stream: bool,
    observer: &dyn StreamObserver,
) -> Result<ChatResponse, LlmError> {
    let messages = [Message::user("go")];
    let request = ChatRequest {
        model: "m",
        messages: &messages,
        tools: &[],
        thinking: Thinking::Default,
        stream,
        side_call: false,
        timeout: None,
        output_schema: None,
    };
    // Bounds the test, not odek: the old code waited for the 120 s request timeout.
    tokio::time::timeout(Duration::from_secs(20), provider.complete(request, observer))
        .await
        .expect("the call was not bounded by its liveness deadline")
}

/// A plain answer's head was bounded only by the request timeout (300 s by default).
#[tokio::test]
async fn a_plain_call_without_a_response_head_hits_the_first_byte_bound_red() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let provider = provider(&server.base_url(), Duration::from_millis(300), Duration::from_secs(90));
    let err = call(&provider, false, &NoStreamObserver).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}/chat/completions: no response head within 300 ms (no data from the provider)", server.base_url())
    );
    assert_eq!(err.class(), "network_timeout");
    assert_eq!(err.silence(), Some(Duration::from_millis(300)));
    assert_eq!(server.requests().len(), 1, "a liveness deadline is not retried");
}

/// A head that promises a body which never comes.
#[tokio::test]
async fn a_plain_answer_whose_body_never_starts_hits_the_first_byte_bound() {
    let base_url = raw_server("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n");
    let provider = provider(&base_url, Duration::from_millis(300), Duration::from_secs(90));
    let err = call(&provider, false, &NoStreamObserver).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{base_url}/chat/completions: no answer byte within 300 ms (no data from the provider)")
    );
    assert_eq!(err.silence(), Some(Duration::from_millis(300)));
}

/// A streamed head is bounded by the shorter of the two liveness bounds.
#[tokio::test]
async fn a_streamed_head_takes_the_shorter_bound() {
    let server = ScriptedServer::start(vec![Reply::never_answers()]);
    let provider = provider(&server.base_url(), Duration::from_millis(300), Duration::from_secs(90));
    let err = call(&provider, true, &NoStreamObserver).await.unwrap_err();
    assert!(err.to_string().ends_with(": no response head within 300 ms (no data from the provider)"), "{err}");
    assert_eq!(err.silence(), Some(Duration::from_millis(300)));
}

#[derive(Default)]
struct CountProgress(AtomicUsize);

impl StreamObserver for CountProgress {
    fn on_progress(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A stream that stops half way: the idle bound ends it as silent, and every chunk that added
/// to the answer before that was reported as progress.
#[tokio::test]
async fn a_stream_stalled_mid_answer_is_silent_and_its_chunks_were_progress() {
    let server = ScriptedServer::start(vec![Reply::stalls_mid_stream("one two three four five six seven eight")]);
    let provider = provider(&server.base_url(), Duration::from_secs(90), Duration::from_millis(300));
    let progress = CountProgress::default();
    let err = call(&provider, true, &progress).await.unwrap_err();
    assert!(err.to_string().ends_with(": stream idle for more than 300 ms (no data from the provider)"), "{err}");
    assert_eq!(err.silence(), Some(Duration::from_millis(300)));
    assert!(progress.0.load(Ordering::Relaxed) > 0, "no progress reported for the chunks that came");
}

/// Failures that are not silence keep `silent_for` unset: they are errors, not stalls.
#[tokio::test]
async fn other_failures_are_not_silence() {
    let server = ScriptedServer::start(vec![Reply::status(400, "{}")]);
    let provider = provider(&server.base_url(), Duration::from_secs(90), Duration::from_secs(90));
    let err = call(&provider, false, &NoStreamObserver).await.unwrap_err();
    assert_eq!(err.silence(), None, "{err}");
}
