//! The providers' streamed answer parsers (`decode_stream_body` of the chat-completions,
//! Anthropic Messages and OpenAI Responses providers: SSE framing, event accumulation, the end
//! markers and the end-of-stream rules), each fed every input. Invariants: the answer does not
//! depend on how the body is cut into network reads; the API key and the seeded secrets never
//! appear in an error; a parsed answer has at most 1024 tool calls.
//!
//! Input: `[cut, cut, cut, body…]`: three cut points (as fractions of the body) for the second
//! reading.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_fuzz::{check_provider_answer, seeded_providers};

fuzz_target!(|data: &[u8]| {
    let [a, b, c, body @ ..] = data else { return };
    let mut cuts: Vec<usize> = [a, b, c].iter().map(|cut| body.len() * usize::from(**cut) / 255).collect();
    cuts.sort_unstable();
    let pieces = [&body[..cuts[0]], &body[cuts[0]..cuts[1]], &body[cuts[1]..cuts[2]], &body[cuts[2]..]];
    let providers = seeded_providers();
    let wholes = providers.decode_streams(&[body]);
    let chopped = providers.decode_streams(&pieces);
    for (whole, chopped) in wholes.iter().zip(&chopped) {
        match (whole, chopped) {
            (Ok(one), Ok(many)) => assert_eq!(one, many, "the answer depends on the read boundaries"),
            (Err(one), Err(many)) => assert_eq!(one.to_string(), many.to_string()),
            _ => panic!("the outcome depends on the read boundaries: {whole:?} vs {chopped:?}"),
        }
        check_provider_answer(whole, "a provider stream error");
    }
});
