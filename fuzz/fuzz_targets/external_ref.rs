//! The `--external-ref` spec parser and the session's external-ref rules (spec
//! `loop-and-sessions.md` §10.4). Invariants: an accepted ref passes validation and survives
//! the session file's serde round trip; a rejected spec's message never shows a seeded secret
//! (the spec may carry a credential-bearing URI).
//!
//! Input: the spec text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_agent::session::{
    ExternalRef, MAX_CREATED_BY_BYTES, MAX_KIND_BYTES, MAX_URI_BYTES, is_same_external_ref, parse_external_ref_spec,
    validate_external_ref,
};
use odek_fuzz::{assert_no_seeded_secret, register_seeded_secrets};

fuzz_target!(|data: &[u8]| {
    let Ok(spec) = std::str::from_utf8(data) else { return };
    register_seeded_secrets();
    match parse_external_ref_spec(spec) {
        Ok(external_ref) => {
            validate_external_ref(&external_ref).unwrap();
            assert!((1..=MAX_KIND_BYTES).contains(&external_ref.kind.len()));
            assert!((1..=MAX_URI_BYTES).contains(&external_ref.uri.len()));
            assert!((1..=MAX_CREATED_BY_BYTES).contains(&external_ref.created_by.len()));
            assert!(!external_ref.uri.chars().any(char::is_control));
            assert!(external_ref.created_at.is_empty());
            assert!(spec.contains(&external_ref.kind) && spec.contains(&external_ref.uri));
            let json = serde_json::to_string(&external_ref).unwrap();
            let back: ExternalRef = serde_json::from_str(&json).unwrap();
            assert_eq!(back, external_ref);
            assert!(is_same_external_ref(&external_ref, &back));
        }
        Err(err) => assert_no_seeded_secret(&err.to_string(), "an --external-ref error"),
    }
});
