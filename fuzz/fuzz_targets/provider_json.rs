//! The OpenAI-compatible provider's non-streamed answer parser (`decode_completion_body`, the
//! code path `Provider::complete` takes after the HTTP read). Invariants: no panic; the API key
//! and the seeded secrets never appear in an error; a parsed answer has at most 1024 tool
//! calls and is an assistant message.
//!
//! Input: the response body.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use odek_fuzz::{SEEDED_API_KEY, assert_no_seeded_secret, register_seeded_secrets};
use odek_llm::{OpenAiConfig, OpenAiProvider, Role};

pub fn provider() -> &'static OpenAiProvider {
    static PROVIDER: OnceLock<OpenAiProvider> = OnceLock::new();
    PROVIDER.get_or_init(|| {
        register_seeded_secrets();
        OpenAiProvider::new(OpenAiConfig::new("http://127.0.0.1:9/v1", SEEDED_API_KEY)).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    match provider().decode_completion_body(data) {
        Ok(response) => {
            assert_eq!(response.message.role, Role::Assistant);
            assert!(response.message.tool_calls.len() <= 1024);
        }
        Err(err) => assert_no_seeded_secret(&err.to_string(), "a provider error"),
    }
});
