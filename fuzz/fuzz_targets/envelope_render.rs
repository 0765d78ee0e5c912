//! Envelope detection, artifact validation and rendering for one result's text items (spec
//! `results-and-artifacts.md` §1–§6), then the redaction the loop applies before the model sees
//! the output.
//!
//! Input: `[cap selector, item, 0xFF, item, …]`; `$ROOT`, `$OUT`, `$BASE` name the artifact
//! tree.

#![no_main]

use libfuzzer_sys::fuzz_target;
use odek_contract::ContractError;
use odek_contract::redaction::redact;
use odek_contract::render::{ARTIFACT_LINE_PREFIX, count_artifact_lines};
use odek_contract::tool_result::{ResultContext, cap_error_text, decode_tool_result};
use odek_contract::runes::rune_count;
use odek_contract::truncation::result_floor;
use odek_contract::untrusted::wrap_untrusted;
use odek_fuzz::{
    PART_SEPARATOR, artifact_tree, assert_no_seeded_secret, check_tool_output, expand_placeholders,
    register_seeded_secrets,
};

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = data.split_first() else { return };
    register_seeded_secrets();
    let tree = artifact_tree();
    let items: Vec<String> = rest
        .split(|byte| *byte == PART_SEPARATOR)
        .map(|item| expand_placeholders(&String::from_utf8_lossy(item)))
        .collect();
    let items: Vec<&str> = items.iter().map(String::as_str).collect();
    // Sometimes the floor, sometimes room for everything.
    let cap = result_floor("srv") + usize::from(*selector) * usize::from(*selector);
    let context = ResultContext { server: "srv", tool: "echo", max_result_chars: cap, roots: &tree.roots };
    let input = items.join("\n");

    match decode_tool_result(&items, &context) {
        Ok(output) => {
            check_tool_output(&output, cap, &input);
            assert!(count_artifact_lines(&output.text) <= output.artifacts.len());
            // What the loop hands the model: redacted, then wrapped.
            let redacted = redact(&output.text);
            assert_no_seeded_secret(&redacted, "a redacted tool output");
            assert_eq!(redact(&redacted), redacted, "redaction is not idempotent");
            let wrapped = wrap_untrusted("mcp:srv/echo", &redacted);
            assert!(
                wrapped.split('\n').filter(|line| line.starts_with(ARTIFACT_LINE_PREFIX)).count()
                    <= output.artifacts.len()
            );
        }
        Err(err) => {
            // The caller reports it through the error channel: capped, and redacted on its way
            // to events.
            let shown = cap_error_text(&err.to_string(), &context);
            assert!(rune_count(&shown.text) <= cap);
            assert_no_seeded_secret(&redact(&shown.text), "a redacted result error");
            assert!(
                !err.to_string().contains(odek_fuzz::OUTSIDE_CONTENT) || input.contains(odek_fuzz::OUTSIDE_CONTENT)
            );
            if let ContractError::ArtifactRefRejected(_) = err {
                assert!(err.to_string().starts_with("artifact ref rejected: "));
            }
        }
    }
});
