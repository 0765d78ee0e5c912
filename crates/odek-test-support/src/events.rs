//! Checks event lines against the published `odek.event/v1` schema
//! (`docs/schemas/odek.event.v1.schema.json`), made strict for tests: every field odek writes
//! must be in the schema (the published one allows more, for consumers), and every type must be
//! one the schema knows. The end-to-end helpers run every event a test sees through here.

use std::sync::OnceLock;

use serde_json::Value;

/// The published schema, as the repository holds it.
pub const PUBLISHED_SCHEMA: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/schemas/odek.event.v1.schema.json"));

/// The published schema made strict: no property it does not name, no type it does not list.
pub fn strict_schema(published: &str) -> Result<Value, String> {
    let mut schema: Value = serde_json::from_str(published).map_err(|err| format!("schema is not JSON: {err}"))?;
    close_object(&mut schema);
    let known = schema["properties"]["type"]["examples"].clone();
    schema["properties"]["type"]["enum"] = known;
    if let Some(rules) = schema["allOf"].as_array_mut() {
        for rule in rules {
            close_all(&mut rule["then"]["properties"]["data"]);
        }
    }
    Ok(schema)
}

fn close_object(schema: &mut Value) {
    if let Some(fields) = schema.as_object_mut()
        && fields.contains_key("properties")
        && !fields.contains_key("additionalProperties")
    {
        fields.insert("additionalProperties".into(), Value::Bool(false));
    }
}

/// Closes `schema` and every object schema under its `properties`.
fn close_all(schema: &mut Value) {
    close_object(schema);
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for property in properties.values_mut() {
            close_all(property);
        }
    }
}

/// A validator for `schema`.
pub fn validator(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options().should_validate_formats(true).build(schema).map_err(|err| err.to_string())
}

fn strict_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema = strict_schema(PUBLISHED_SCHEMA).unwrap_or_else(|err| panic!("{err}"));
        validator(&schema).unwrap_or_else(|err| panic!("event schema does not compile: {err}"))
    })
}

/// Why `event` does not match the strict schema; `None` when it does.
pub fn event_errors(event: &Value) -> Option<String> {
    let errors: Vec<String> =
        strict_validator().iter_errors(event).map(|error| format!("{} at {}", error, error.instance_path())).collect();
    (!errors.is_empty()).then(|| errors.join("; "))
}

/// Whether `value` is an `odek.event/v1` line (the result object and other JSON lines are not).
pub fn is_event(value: &Value) -> bool {
    value.get("schema").and_then(Value::as_str) == Some("odek.event/v1")
}

/// Panics, naming the event, when `event` does not match the strict schema.
pub fn assert_valid_event(event: &Value) {
    if let Some(errors) = event_errors(event) {
        panic!("event does not match {}: {errors}\nevent: {event}", "docs/schemas/odek.event.v1.schema.json");
    }
}

/// Every `odek.event/v1` line of `text` checked against the strict schema; other lines are
/// left alone.
pub fn assert_valid_events(text: &str) {
    for line in text.lines() {
        if let Ok(value) = serde_json::from_str::<Value>(line)
            && is_event(&value)
        {
            assert_valid_event(&value);
        }
    }
}
