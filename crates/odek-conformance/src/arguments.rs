//! Arguments for a tool the author gave no example for, derived from its input schema: every
//! required property gets the simplest value its schema allows (`const`, first `enum` value,
//! `default`, first `examples` entry, a sample of its string `format` — uri, date-time, date,
//! time, email, uuid, hostname, ipv4, ipv6, duration — or a value of its `type` within
//! `minimum`/`minLength`/`minItems`); optional properties are left out. Local `$ref`s
//! (`#/$defs/…`, `#/definitions/…`) are followed. It does not try to satisfy `pattern` or
//! cross-property constraints: a tool needing those wants a `--call` example.
//!
//! Start at [`arguments_from_schema`].

use serde_json::{Map, Value, json};

/// Deepest nesting of schemas followed (guards recursive `$ref`s).
const MAX_DEPTH: usize = 16;

/// The string used for a required string property without a better hint.
pub const PLACEHOLDER_TEXT: &str = "odek-check";

/// The arguments object for `schema`, or why a required argument cannot be filled.
pub fn arguments_from_schema(schema: &Value) -> Result<Value, String> {
    if !schema.is_object() {
        return Err("the input schema is not a JSON object".to_owned());
    }
    value_for(schema, schema, 0).map(|value| if value.is_object() { value } else { json!({}) })
}

fn value_for(schema: &Value, root: &Value, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("the schema nests deeper than 16 levels".to_owned());
    }
    let Some(object) = schema.as_object() else {
        // `true` (anything goes) or `false` (nothing does).
        return if schema == &Value::Bool(false) { Err("its schema is false".to_owned()) } else { Ok(Value::Null) };
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let target = resolve_ref(root, reference).ok_or_else(|| format!("cannot resolve $ref {reference:?}"))?;
        return value_for(target, root, depth + 1);
    }
    if let Some(constant) = object.get("const") {
        return Ok(constant.clone());
    }
    if let Some(first) = object.get("enum").and_then(Value::as_array).and_then(|values| values.first()) {
        return Ok(first.clone());
    }
    if let Some(default) = object.get("default") {
        return Ok(default.clone());
    }
    if let Some(example) = object.get("examples").and_then(Value::as_array).and_then(|values| values.first()) {
        return Ok(example.clone());
    }
    for combinator in ["anyOf", "oneOf", "allOf"] {
        if let Some(alternatives) = object.get(combinator).and_then(Value::as_array) {
            let mut last_error = format!("no alternative of {combinator} can be filled");
            for alternative in alternatives {
                match value_for(alternative, root, depth + 1) {
                    Ok(value) => return Ok(value),
                    Err(error) => last_error = error,
                }
            }
            return Err(last_error);
        }
    }
    let kind = match object.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => {
            kinds.iter().filter_map(Value::as_str).find(|kind| *kind != "null").unwrap_or("null")
        }
        _ if object.contains_key("properties") || object.contains_key("required") => "object",
        _ => return Ok(json!(format_sample(object).unwrap_or(PLACEHOLDER_TEXT))),
    };
    match kind {
        "object" => object_value(object, root, depth),
        "string" if format_sample(object).is_some() => Ok(json!(format_sample(object))),
        "string" => {
            let min = object.get("minLength").and_then(Value::as_u64).unwrap_or(0);
            let mut text = PLACEHOLDER_TEXT.to_owned();
            while (text.len() as u64) < min {
                text.push('x');
            }
            if let Some(max) = object.get("maxLength").and_then(Value::as_u64) {
                text.truncate(usize::try_from(max).unwrap_or(usize::MAX));
            }
            Ok(Value::String(text))
        }
        "integer" => Ok(json!(number_in_range(object).round() as i64)),
        "number" => Ok(json!(number_in_range(object))),
        "boolean" => Ok(json!(false)),
        "null" => Ok(Value::Null),
        "array" => {
            let min = object.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            if min == 0 {
                return Ok(json!([]));
            }
            let item_schema = object.get("items").unwrap_or(&Value::Bool(true));
            let item = value_for(item_schema, root, depth + 1)?;
            Ok(Value::Array(vec![item; usize::try_from(min.min(16)).unwrap_or(16)]))
        }
        other => Err(format!("unknown type {other:?}")),
    }
}

fn object_value(object: &Map<String, Value>, root: &Value, depth: usize) -> Result<Value, String> {
    let properties = object.get("properties").and_then(Value::as_object);
    let mut value = Map::new();
    for name in object.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        let property = properties.and_then(|properties| properties.get(name)).unwrap_or(&Value::Bool(true));
        let filled =
            value_for(property, root, depth + 1).map_err(|error| format!("required argument {name:?}: {error}"))?;
        value.insert(name.to_owned(), filled);
    }
    Ok(Value::Object(value))
}

/// A valid value of the schema's string `format`, for the formats servers commonly validate.
/// Hosts are `example.com` (reserved for examples, RFC 2606).
fn format_sample(object: &Map<String, Value>) -> Option<&'static str> {
    Some(match object.get("format").and_then(Value::as_str)? {
        "uri" | "uri-reference" | "iri" | "iri-reference" | "url" => "https://example.com/odek-check",
        "date-time" => "2025-01-01T00:00:00Z",
        "date" => "2025-01-01",
        "time" => "00:00:00Z",
        "email" | "idn-email" => "odek-check@example.com",
        "uuid" => "00000000-0000-4000-8000-000000000000",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "127.0.0.1",
        "ipv6" => "::1",
        "duration" => "PT1S",
        _ => return None,
    })
}

/// 1, moved into `[minimum, maximum]` (exclusive bounds nudged by one).
fn number_in_range(object: &Map<String, Value>) -> f64 {
    let mut value = 1.0;
    if let Some(minimum) = object.get("minimum").and_then(Value::as_f64) {
        value = f64::max(value, minimum);
    }
    if let Some(minimum) = object.get("exclusiveMinimum").and_then(Value::as_f64) {
        value = f64::max(value, minimum + 1.0);
    }
    if let Some(maximum) = object.get("maximum").and_then(Value::as_f64) {
        value = f64::min(value, maximum);
    }
    if let Some(maximum) = object.get("exclusiveMaximum").and_then(Value::as_f64) {
        value = f64::min(value, maximum - 1.0);
    }
    value
}

/// A local JSON pointer reference (`#/…`) into the root schema.
fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_properties_are_filled_and_optional_ones_left_out() {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "count": {"type": "integer", "minimum": 3},
                "mode": {"enum": ["fast", "slow"]},
                "ratio": {"type": "number", "maximum": 0.5},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "nested": {"$ref": "#/$defs/Nested"},
                "optional": {"type": "string"}
            },
            "required": ["text", "count", "mode", "ratio", "tags", "nested"],
            "$defs": {"Nested": {"type": "object", "properties": {"flag": {"type": ["boolean", "null"]}}, "required": ["flag"]}}
        });
        assert_eq!(
            arguments_from_schema(&schema).unwrap(),
            json!({"text": "odek-check", "count": 3, "mode": "fast", "ratio": 0.5, "tags": ["odek-check"], "nested": {"flag": false}})
        );
    }

    #[test]
    fn unfillable_requirements_are_named() {
        let schema = json!({"type":"object","properties":{"x":false},"required":["x"]});
        assert_eq!(arguments_from_schema(&schema).unwrap_err(), "required argument \"x\": its schema is false");
        let schema = json!({"type":"object","properties":{"x":{"$ref":"#/nowhere"}},"required":["x"]});
        assert!(arguments_from_schema(&schema).unwrap_err().contains("cannot resolve $ref"));
        let looping = json!({"type":"object","properties":{"x":{"$ref":"#"}},"required":["x"]});
        assert!(arguments_from_schema(&looping).unwrap_err().contains("deeper than 16"));
        assert!(arguments_from_schema(&json!("not an object")).is_err());
    }

    #[test]
    fn string_formats_enums_and_consts_are_honoured() {
        let schema = json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "format": "uri"},
                "when": {"type": "string", "format": "date-time"},
                "day": {"type": ["string", "null"], "format": "date"},
                "email": {"format": "email"},
                "id": {"type": "string", "format": "uuid", "minLength": 1},
                "host": {"type": "string", "format": "hostname"},
                "odd": {"type": "string", "format": "x-custom"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "codes": {"type": "array", "minItems": 1, "items": {"type": "integer", "enum": [7, 8]}},
                "level": {"const": 3}
            },
            "required": ["url", "when", "day", "email", "id", "host", "odd", "mode", "codes", "level"]
        });
        assert_eq!(
            arguments_from_schema(&schema).unwrap(),
            json!({
                "url": "https://example.com/odek-check",
                "when": "2025-01-01T00:00:00Z",
                "day": "2025-01-01",
                "email": "odek-check@example.com",
                "id": "00000000-0000-4000-8000-000000000000",
                "host": "example.com",
                "odd": "odek-check",
                "mode": "fast",
                "codes": [7],
                "level": 3
            })
        );
    }

    #[test]
    fn empty_schemas_give_empty_objects() {
        assert_eq!(arguments_from_schema(&json!({"type":"object"})).unwrap(), json!({}));
        assert_eq!(arguments_from_schema(&json!({})).unwrap(), json!({}));
    }
}
