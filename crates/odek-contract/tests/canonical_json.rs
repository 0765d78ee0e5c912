//! Canonical JSON (compact, keys sorted by byte order at every depth).

use odek_contract::canonical_json::to_canonical_string;
use serde_json::{Value, json};

#[test]
fn sorted_compact_and_stable() {
    let value: Value = serde_json::from_str(
        r#"{ "type": "object", "properties": { "b": {"type":"string"}, "a": {"type":"integer", "minimum": 0} }, "required": ["b","a"] }"#,
    )
    .unwrap();
    assert_eq!(
        to_canonical_string(&value),
        r#"{"properties":{"a":{"minimum":0,"type":"integer"},"b":{"type":"string"}},"required":["b","a"],"type":"object"}"#
    );
    let reparsed: Value = serde_json::from_str(&to_canonical_string(&value)).unwrap();
    assert_eq!(reparsed, value);
}

#[test]
fn byte_order_not_locale_order() {
    let value = json!({"b": 0, "B": 0, "ä": 0, "a": 0, "_": 0, "10": 0, "9": 0});
    assert_eq!(to_canonical_string(&value), r#"{"10":0,"9":0,"B":0,"_":0,"a":0,"b":0,"ä":0}"#);
}

#[test]
fn strings_are_escaped_like_serde_json() {
    let value = json!({"k\"\\\n": "\u{0}\u{1f}\u{7f}\u{2028}</>&"});
    assert_eq!(to_canonical_string(&value), serde_json::to_string(&value).unwrap());
}
