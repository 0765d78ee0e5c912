//! Prompt-injection detection for MCP tool descriptions and input schemas (spec
//! `mcp-client.md` §4). The rules are case-insensitive and word-bounded; a match withholds a
//! description or skips a tool. Start at [`detects_prompt_injection`].
//!
//! What happens on a match (warnings, the withheld-description text) is the MCP client's
//! business; this module only answers yes or no.

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

use crate::redaction::go_to_rust_pattern;

/// The rules, one alternative each:
/// 1. `ignore|disregard|forget`, then within a few (≤ 3) words `previous|prior|above|earlier|your`,
///    then within a few words `instructions|prompts|rules` (singular accepted);
/// 2. `you are now`;
/// 3. `new instructions:`;
/// 4. a tag opener or closer for `system`, `untrusted_content…` or `untrusted_input…`;
/// 5. `reveal|print|output|send|exfiltrate`, then within 40 characters
///    `api key|secret|password|credential|token|system prompt` (plurals accepted).
pub const PROMPT_INJECTION_RULES: &[&str] = &[
    r"\b(?:ignore|disregard|forget)\b(?:\W+\w+){0,3}?\W+(?:previous|prior|above|earlier|your)\b(?:\W+\w+){0,3}?\W+(?:instructions?|prompts?|rules?)\b",
    r"\byou\s+are\s+now\b",
    r"\bnew\s+instructions\s*:",
    r"<\s*/?\s*(?:system\b[^<>]*>|untrusted_content|untrusted_input)",
    r"\b(?:reveal|print|output|send|exfiltrate)\b.{0,40}?\b(?:api[\s_-]?keys?|secrets?|passwords?|credentials?|tokens?|system\s+prompts?)\b",
];

/// All rules as one case-insensitive alternation, compiled once. `None` only if compilation
/// failed, in which case everything is treated as an injection (fail closed); a unit test
/// asserts it compiles.
static DETECTOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    // Go's RE2 semantics, like the secret patterns: `\b`, `\w`, `\s` are ASCII classes. Besides
    // matching the reference, this keeps the compiled program small (the Unicode classes made
    // it take milliseconds to build).
    let alternation = PROMPT_INJECTION_RULES
        .iter()
        .map(|rule| format!("(?:{})", go_to_rust_pattern(rule)))
        .collect::<Vec<_>>()
        .join("|");
    RegexBuilder::new(&alternation).case_insensitive(true).dot_matches_new_line(true).build().ok()
});

/// Compiles the detector now instead of at the first check (a few milliseconds), so a caller
/// can do it off the critical path.
pub fn compile_detector() {
    LazyLock::force(&DETECTOR);
}

/// Whether `text` matches any prompt-injection rule.
pub fn detects_prompt_injection(text: &str) -> bool {
    DETECTOR.as_ref().is_none_or(|detector| detector.is_match(text))
}

/// Whether any object key or string value anywhere in `schema` matches. Walks with an explicit
/// stack, so arbitrarily deep values cannot overflow the call stack.
pub fn schema_has_prompt_injection(schema: &serde_json::Value) -> bool {
    use serde_json::Value;
    let mut pending = vec![schema];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) if detects_prompt_injection(text) => return true,
            Value::Array(items) => pending.extend(items.iter()),
            Value::Object(map) => {
                for (key, child) in map {
                    if detects_prompt_injection(key) {
                        return true;
                    }
                    pending.push(child);
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detector_compiles() {
        assert!(DETECTOR.is_some());
    }

    #[test]
    fn word_gap_is_bounded() {
        assert!(detects_prompt_injection("ignore one two three previous rules"));
        assert!(!detects_prompt_injection("ignore one two three four previous rules"));
        assert!(!detects_prompt_injection("ignores previous rules"));
    }

    #[test]
    fn reveal_window_is_forty_characters() {
        let gap = "x".repeat(38);
        assert!(detects_prompt_injection(&format!("send {gap} token")));
        let gap = "x".repeat(40);
        assert!(!detects_prompt_injection(&format!("send {gap} token")));
    }
}
