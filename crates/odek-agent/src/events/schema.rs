//! \[beyond\] The JSON Schema (2020-12) of an `odek.event/v1` line, generated from the envelope
//! rules of spec `events.md` §1–§2 and the `data` structs of [`super::data`]: the document
//! published as `docs/schemas/odek.event.v1.schema.json`. It is additive by construction — no
//! object forbids properties it does not name, so consumers that follow the spec (ignore unknown
//! types and fields) keep validating as the stream grows.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::data::data_schemas;

/// Where the schema is published, relative to the repository root.
pub const EVENT_SCHEMA_PATH: &str = "docs/schemas/odek.event.v1.schema.json";

/// The schema of one event line, as pretty JSON the repository keeps byte for byte (keys sorted,
/// whatever order `serde_json` keeps).
pub fn event_schema_text() -> String {
    odek_contract::canonical_json::published_text(event_schema())
}

/// The schema of one event line: the envelope, then for each known `type` the schema of its
/// `data` (and `data` required when that type has required fields).
pub fn event_schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let types = data_schemas(&mut generator);
    let names: Vec<&str> = types.iter().map(|(name, _)| *name).collect();
    let rules: Vec<Value> = types
        .into_iter()
        .map(|(name, schema)| {
            let mut data = schema.to_value();
            if let Some(fields) = data.as_object_mut() {
                fields.remove("$schema");
            }
            unescape_descriptions(&mut data);
            let required = data.get("required").and_then(Value::as_array).is_some_and(|fields| !fields.is_empty());
            let mut then = json!({"properties": {"data": data}});
            if required {
                then["required"] = json!(["data"]);
            }
            json!({"if": {"properties": {"type": {"const": name}}, "required": ["type"]}, "then": then})
        })
        .collect();
    let mut schema = Map::new();
    schema.insert("$schema".into(), json!("https://json-schema.org/draft/2020-12/schema"));
    schema.insert("title".into(), json!("odek.event/v1"));
    schema.insert(
        "description".into(),
        json!(
            "One line of odek's event stream (--events-jsonl). Generated from odek's Rust types; consumers must ignore unknown types and fields."
        ),
    );
    schema.insert("type".into(), json!("object"));
    schema.insert("required".into(), json!(["schema", "type", "run_id", "timestamp"]));
    schema.insert(
        "properties".into(),
        json!({
            "schema": {"const": "odek.event/v1"},
            "type": {
                "description": "The event type; the examples are the types this version emits, any other is a newer one to ignore.",
                "type": "string",
                "examples": names,
            },
            "run_id": {"description": "16 random bytes as 32 lowercase hex characters.", "type": "string", "pattern": "^[0-9a-f]{32}$"},
            "session_id": {"description": "The session, once known.", "type": "string"},
            "iteration": {"description": "The 1-based iteration, when the event has one.", "type": "integer", "minimum": 1},
            "tool": {"description": "The tool, on tool-related events.", "type": "string"},
            "timestamp": {"description": "When the event was emitted: RFC 3339 in UTC with a Z suffix.", "type": "string", "format": "date-time", "pattern": "Z$"},
            "data": {"description": "The type's fields; omitted when empty.", "type": "object"},
        }),
    );
    schema.insert("allOf".into(), Value::Array(rules));
    Value::Object(schema)
}

/// Doc comments escape square brackets for rustdoc; a description reads without the backslashes.
fn unescape_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(fields) => {
            for (key, value) in fields.iter_mut() {
                match value {
                    Value::String(text) if key == "description" => *text = text.replace("\\[", "[").replace("\\]", "]"),
                    _ => unescape_descriptions(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(unescape_descriptions),
        _ => {}
    }
}
