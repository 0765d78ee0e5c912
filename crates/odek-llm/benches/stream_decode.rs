//! Stream decoding benchmark (issue 18): what the providers' SSE decoders cost per byte and per
//! event, on streams of about 1,000 events in the exact shapes the scripted servers of
//! `odek-test-support` send (Anthropic Messages: thinking, text and tool input deltas with a
//! ping; OpenAI Responses: reasoning summary, text and argument deltas), with the same answer as
//! a chat-completions stream beside them. Targets: ≥ 100 MB/s of SSE on one core, ≤ 5 µs per
//! event.
//!
//! Run: `cargo bench -p odek-llm --bench stream_decode`
//! Reports the median and the best of 31 runs of `decode_stream_body` (the framing, the event
//! JSON and the accumulation the live path does after each read), for the body read whole and
//! in 16 KiB reads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use odek_llm::{AnthropicOptions, AnthropicProvider, EndpointConfig, OpenAiProvider, ResponsesProvider};
use odek_test_support::{anthropic, responses};
use serde_json::json;

const RUNS: usize = 31;
const READ_BYTES: usize = 16 * 1024;

/// Prose of `chars` characters (the builders cut it into deltas).
fn prose(chars: usize) -> String {
    "the quick brown fox jumps over the lazy dog; ".chars().cycle().take(chars).collect()
}

/// Arguments of about `chars` characters, valid JSON.
fn arguments(chars: usize) -> serde_json::Value {
    json!({"command": prose(chars.saturating_sub(14))})
}

fn anthropic_stream() -> Vec<u8> {
    let blocks = vec![
        anthropic::thinking(prose(4 * 250), "EqQBCgIYAhIMsignature=="),
        anthropic::text(prose(4 * 500)),
        anthropic::tool_use("toolu_01", "shell", arguments(5 * 240)),
    ];
    anthropic::stream_frames(&blocks, anthropic::Usage::new(1200, 900).with_cache(100, 20_000)).concat().into_bytes()
}

fn responses_stream() -> Vec<u8> {
    let answer = responses::Answer::new()
        .with_reasoning("rs_1", &[&prose(4 * 240)], "gAAAAencrypted")
        .with_text(prose(4 * 500))
        .with_function_call("call_1", "shell", arguments(5 * 240).to_string())
        .with_usage(1200, 900, 800);
    answer.frames().concat().into_bytes()
}

/// The same answer as chat-completions chunks of the same delta sizes.
fn chat_stream() -> Vec<u8> {
    let mut chunks = Vec::new();
    let chunk = |delta: serde_json::Value| format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta}]}));
    for piece in prose(4 * 250).as_bytes().chunks(4) {
        chunks.push(chunk(json!({"reasoning_content": String::from_utf8_lossy(piece)})));
    }
    for piece in prose(4 * 500).as_bytes().chunks(4) {
        chunks.push(chunk(json!({"content": String::from_utf8_lossy(piece)})));
    }
    chunks
        .push(chunk(json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "shell", "arguments": ""}}]})));
    for piece in arguments(5 * 240).to_string().as_bytes().chunks(5) {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": String::from_utf8_lossy(piece)}}]}),
        ));
    }
    chunks
        .push(format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})));
    chunks.push("data: [DONE]\n\n".to_owned());
    chunks.concat().into_bytes()
}

fn time_runs(mut run: impl FnMut()) -> Vec<Duration> {
    run();
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples
}

fn report(label: &str, body: &[u8], samples: &[Duration]) {
    let events = body.windows(2).filter(|pair| pair == b"\n\n").count();
    let (median, best) = (samples[samples.len() / 2], samples[0]);
    let mb_per_s = |time: Duration| body.len() as f64 / time.as_secs_f64() / 1e6;
    let us_per_event = |time: Duration| time.as_secs_f64() * 1e6 / events as f64;
    println!(
        "{label:<34} {events:>5} events {:>7} B   median {:>6.1} MB/s {:>5.2} µs/event   best {:>6.1} MB/s {:>5.2} µs/event",
        body.len(),
        mb_per_s(median),
        us_per_event(median),
        mb_per_s(best),
        us_per_event(best)
    );
}

fn main() {
    let config = || EndpointConfig::new("http://127.0.0.1:9/v1", "sk-bench-0123456789");
    let anthropic = AnthropicProvider::new(config(), AnthropicOptions::default()).unwrap();
    let responses = ResponsesProvider::new(config()).unwrap();
    let chat = OpenAiProvider::new(config()).unwrap();
    type Decode<'a> = Box<dyn Fn(&[&[u8]]) -> usize + 'a>;
    let cases: Vec<(&str, Vec<u8>, Decode)> = vec![
        (
            "anthropic messages",
            anthropic_stream(),
            Box::new(|chunks| anthropic.decode_stream_body(chunks).unwrap().message.content.len()),
        ),
        (
            "openai responses",
            responses_stream(),
            Box::new(|chunks| responses.decode_stream_body(chunks).unwrap().message.content.len()),
        ),
        (
            "chat completions (same answer)",
            chat_stream(),
            Box::new(|chunks| chat.decode_stream_body(chunks).unwrap().message.content.len()),
        ),
    ];
    for (label, body, decode) in &cases {
        assert_eq!(decode(&[body]), 2000, "{label} decodes the whole answer");
        let whole = time_runs(|| assert_eq!(decode(&[body]), 2000));
        report(&format!("{label}, one read"), body, &whole);
        let reads: Vec<&[u8]> = body.chunks(READ_BYTES).collect();
        let chopped = time_runs(|| assert_eq!(decode(&reads), 2000));
        report(&format!("{label}, 16 KiB reads"), body, &chopped);
    }
}
