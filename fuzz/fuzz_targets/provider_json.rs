//! The OpenAI-compatible provider's non-streamed answer parser (`decode_completion_body`, the
//! code path `Provider::complete` takes after the HTTP read). Invariants: no panic; the API key
//! and the seeded secrets never appear in an error; a parsed answer has at most 1024 tool
//! calls and is an assistant message.
//!
//! Input: the response body.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_fuzz::{check_provider_answer, seeded_provider};

fuzz_target!(|data: &[u8]| {
    check_provider_answer(&seeded_provider().decode_completion_body(data), "a provider error");
});
