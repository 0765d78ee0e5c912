//! The OpenAI-compatible provider's streamed answer parser (`decode_stream_body`: SSE framing,
//! chunk accumulation, `[DONE]` and the end-of-stream rules). Invariants: the answer does not
//! depend on how the body is cut into network reads; the API key and the seeded secrets never
//! appear in an error; a parsed answer has at most 1024 tool calls.
//!
//! Input: `[cut, cut, cut, body…]`: three cut points (as fractions of the body) for the second
//! reading.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_fuzz::{check_provider_answer, seeded_provider};

fuzz_target!(|data: &[u8]| {
    let [a, b, c, body @ ..] = data else { return };
    let whole = seeded_provider().decode_stream_body(&[body]);
    let mut cuts: Vec<usize> = [a, b, c].iter().map(|cut| body.len() * usize::from(**cut) / 255).collect();
    cuts.sort_unstable();
    let pieces = [&body[..cuts[0]], &body[cuts[0]..cuts[1]], &body[cuts[1]..cuts[2]], &body[cuts[2]..]];
    let chopped = seeded_provider().decode_stream_body(&pieces);
    match (&whole, &chopped) {
        (Ok(one), Ok(many)) => assert_eq!(one, many, "the answer depends on the read boundaries"),
        (Err(one), Err(many)) => assert_eq!(one.to_string(), many.to_string()),
        _ => panic!("the outcome depends on the read boundaries: {whole:?} vs {chopped:?}"),
    }
    check_provider_answer(&whole, "a provider stream error");
});
