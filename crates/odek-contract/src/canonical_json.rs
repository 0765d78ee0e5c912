//! Canonical JSON: compact, with object keys sorted by byte order at every depth. Used to
//! measure input schemas (the 262144-byte cap of `mcp-client.md` §4) and to hash values, so
//! the result must not depend on whether `serde_json` was built with `preserve_order`.
//!
//! Escaping follows `serde_json`'s compact output: `"` and `\` escaped, control characters as
//! `\b \f \n \r \t` or `\u00XX`, everything else (non-ASCII included) written as is.

use std::fmt::Write;

use serde_json::Value;

/// `value` as canonical JSON. Iterative, so arbitrarily deep values cannot overflow the stack.
pub fn to_canonical_string(value: &Value) -> String {
    enum Step<'v> {
        Value(&'v Value),
        Key(&'v str),
        Literal(&'static str),
    }

    let mut out = String::new();
    let mut pending = vec![Step::Value(value)];
    while let Some(step) = pending.pop() {
        match step {
            Step::Literal(text) => out.push_str(text),
            Step::Key(key) => {
                push_json_string(&mut out, key);
                out.push(':');
            }
            Step::Value(Value::Null) => out.push_str("null"),
            Step::Value(Value::Bool(flag)) => out.push_str(if *flag { "true" } else { "false" }),
            Step::Value(Value::Number(number)) => {
                let _ = write!(out, "{number}");
            }
            Step::Value(Value::String(text)) => push_json_string(&mut out, text),
            Step::Value(Value::Array(items)) => {
                out.push('[');
                pending.push(Step::Literal("]"));
                for (index, item) in items.iter().enumerate().rev() {
                    pending.push(Step::Value(item));
                    if index > 0 {
                        pending.push(Step::Literal(","));
                    }
                }
            }
            Step::Value(Value::Object(map)) => {
                out.push('{');
                pending.push(Step::Literal("}"));
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                for (index, (key, child)) in entries.into_iter().enumerate().rev() {
                    pending.push(Step::Value(child));
                    pending.push(Step::Key(key));
                    if index > 0 {
                        pending.push(Step::Literal(","));
                    }
                }
            }
        }
    }
    out
}

fn push_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_sorted_at_every_depth() {
        let value = json!({"b": 1, "a": {"z": [true, null, {"y": 1, "x": "s"}], "é": 2, "Z": 3}, "": []});
        assert_eq!(to_canonical_string(&value), r#"{"":[],"a":{"Z":3,"z":[true,null,{"x":"s","y":1}],"é":2},"b":1}"#);
    }

    #[test]
    fn agrees_with_serde_json_on_scalars_and_escapes() {
        for value in [
            json!("quote\" backslash\\ nl\n tab\t bell\u{7} del\u{7f} é ✓ </script>"),
            json!(1.5),
            json!(-0),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e300),
            json!([]),
            json!({}),
        ] {
            assert_eq!(to_canonical_string(&value), serde_json::to_string(&value).unwrap());
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut value = json!(0);
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        let text = to_canonical_string(&value);
        assert_eq!(text.len(), 200_001);
        // serde_json's recursive Drop would overflow on this depth; unwind it by hand.
        let mut current = value;
        while let Value::Array(mut items) = current {
            current = items.pop().unwrap_or(Value::Null);
        }
    }
}
