//! Canonical JSON: compact, with object keys sorted by byte order at every depth. Used to
//! measure input schemas (the 262144-byte cap of `mcp-client.md` §4) and to hash values, so
//! the result must not depend on whether `serde_json` was built with `preserve_order`.
//!
//! Escaping follows `serde_json`'s compact output: `"` and `\` escaped, control characters as
//! `\b \f \n \r \t` or `\u00XX`, everything else (non-ASCII included) written as is.

use std::fmt::Write;

use serde_json::Value;

/// The canonical form of a JSON text, or `None` when the text is not valid JSON. A text that
/// already is canonical (the usual compact argument object) is returned as is, without building
/// a `Value`.
pub fn canonicalize_text(text: &str) -> Option<String> {
    let mut scanner = CanonicalScanner { bytes: text.as_bytes(), at: 0 };
    if scanner.value(0) && scanner.at == text.len() {
        return Some(text.to_owned());
    }
    serde_json::from_str::<Value>(text).ok().map(|value| to_canonical_string(&value))
}

/// Recognises a conservative subset of canonical JSON: no whitespace, object keys strictly
/// ascending, strings without escapes, integers of at most 18 digits without a sign on zero.
/// Anything else (valid or not) is left to the full path.
struct CanonicalScanner<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl<'t> CanonicalScanner<'t> {
    /// Deeper values take the full path.
    const MAX_DEPTH: usize = 32;

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.peek() == Some(byte);
        self.at += usize::from(matched);
        matched
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let matched = self.bytes[self.at..].starts_with(word);
        if matched {
            self.at += word.len();
        }
        matched
    }

    fn value(&mut self, depth: usize) -> bool {
        if depth > Self::MAX_DEPTH {
            return false;
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.integer(),
            _ => false,
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b'}') {
            return true;
        }
        let mut previous: Option<&'t [u8]> = None;
        loop {
            let Some(key) = self.string() else { return false };
            if previous.is_some_and(|previous| previous >= key) {
                return false;
            }
            previous = Some(key);
            if !self.eat(b':') || !self.value(depth + 1) {
                return false;
            }
            if self.eat(b'}') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b']') {
            return true;
        }
        loop {
            if !self.value(depth + 1) {
                return false;
            }
            if self.eat(b']') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// The bytes between the quotes of an escape-free string.
    fn string(&mut self) -> Option<&'t [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let bytes: &'t [u8] = self.bytes;
        let start = self.at;
        let length = bytes[start..].iter().position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)?;
        if bytes[start + length] != b'"' {
            return None;
        }
        self.at = start + length + 1;
        Some(&bytes[start..start + length])
    }

    fn integer(&mut self) -> bool {
        let start = self.at;
        let negative = self.eat(b'-');
        let digits = self.bytes[self.at..].iter().take_while(|byte| byte.is_ascii_digit()).count();
        let first = self.peek();
        self.at += digits;
        let canonical_digits = (1..=18).contains(&digits) && (digits == 1 || first != Some(b'0'));
        let negative_zero = negative && first == Some(b'0');
        let fraction_follows = matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        canonical_digits && !negative_zero && !fraction_follows && self.at > start
    }
}

/// `map` with its keys in ascending byte order at every depth, whether or not `serde_json` keeps
/// insertion order (`preserve_order`, which a dependency may turn on): what odek writes as sorted
/// keys (event `data`, schemas) is sorted here rather than by the map type. For values odek
/// builds itself: the recursion is as deep as the value.
pub fn sorted_keys(map: serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    let mut entries: Vec<(String, Value)> = map.into_iter().map(|(key, value)| (key, sorted_value(value))).collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}

/// [`sorted_keys`] of every object in `value`.
pub fn sorted_value(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(sorted_keys(map)),
        Value::Array(items) => Value::Array(items.into_iter().map(sorted_value).collect()),
        other => other,
    }
}

/// `value` as a document the repository keeps byte for byte (a published schema): pretty JSON
/// with every object's keys sorted, and a final newline.
pub fn published_text(value: Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted_value(value)).unwrap_or_default();
    text.push('\n');
    text
}

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
    fn sorted_keys_sorts_every_depth_whatever_the_map_keeps() {
        let mut inner = serde_json::Map::new();
        inner.insert("z".into(), json!(1));
        inner.insert("a".into(), json!([{"y": 1, "b": 2}]));
        let mut outer = serde_json::Map::new();
        outer.insert("m".into(), Value::Object(inner));
        outer.insert("b".into(), json!(true));
        let sorted = Value::Object(sorted_keys(outer));
        assert_eq!(serde_json::to_string(&sorted).unwrap(), r#"{"b":true,"m":{"a":[{"b":2,"y":1}],"z":1}}"#);
    }

    #[test]
    fn canonicalize_text_agrees_with_the_value_path() {
        for text in [
            r#"{"text":"hello"}"#,
            r#"{"a":1,"b":[true,false,null,{"c":-5}]}"#,
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{ "a" : 1 }"#,
            r#"{"a":"é\n"}"#,
            r#"{"n":1.0,"m":1e3,"z":-0,"big":123456789012345678901}"#,
            "[]",
            r#""x""#,
            "007",
            "-",
            r#"{"a":1"#,
            r#"{"a":1}x"#,
            "",
            "not json",
        ] {
            let expected = serde_json::from_str::<Value>(text).ok().map(|value| to_canonical_string(&value));
            assert_eq!(canonicalize_text(text), expected, "{text}");
        }
        let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
        assert_eq!(canonicalize_text(&deep), Some(deep.clone()));
    }

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
