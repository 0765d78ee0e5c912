//! The providers' non-streamed answer parsers (`decode_completion_body` of the chat-completions,
//! Anthropic Messages and OpenAI Responses providers: the code path `Provider::complete` takes
//! after the HTTP read), each fed every input. Invariants: no panic; the API key and the seeded
//! secrets never appear in an error; a parsed answer has at most 1024 tool calls and is an
//! assistant message.
//!
//! Input: the response body.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_fuzz::{check_provider_answer, seeded_providers};

fuzz_target!(|data: &[u8]| {
    for answer in seeded_providers().decode_bodies(data) {
        check_provider_answer(&answer, "a provider error");
    }
});
