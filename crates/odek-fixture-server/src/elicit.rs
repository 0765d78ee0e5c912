//! The `elicit` tool of `--mode elicitation`: a server asking the client's person for input
//! (`elicitation/create`) in the middle of a call, and answering with what the client replied.

use std::sync::Arc;
use std::time::Duration;

use odek_extension::{CallContext, ToolDef, ToolResponse, arguments};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::Fixture;

/// The tool's definition.
pub(crate) fn definition() -> ToolDef {
    ToolDef::new(
        "elicit",
        "Asks the client's user for input (elicitation/create) and returns the reply.",
        json!({"type": "object", "properties": {
            "message": {"type": "string"},
            "schema": {"type": "object"},
            "fields": {"type": "integer", "minimum": 0},
            "url": {"type": "string"},
            "elicitation_id": {"type": "string"},
            "wait_ms": {"type": "integer", "minimum": 1}
        }}),
    )
}

#[derive(Deserialize)]
#[serde(default)]
struct ElicitArgs {
    message: String,
    schema: Option<Value>,
    fields: Option<usize>,
    url: Option<String>,
    elicitation_id: String,
    wait_ms: u64,
}

impl Default for ElicitArgs {
    fn default() -> Self {
        ElicitArgs {
            message: "Please fill in the form".into(),
            schema: None,
            fields: None,
            url: None,
            elicitation_id: "elicitation-1".into(),
            wait_ms: 600_000,
        }
    }
}

/// The default form: a required age, a colour to pick and a name (default "Ada"). The
/// properties are written in name order, so they go out in that order whether or not
/// serde_json keeps insertion order (a feature some builds turn on).
fn default_schema() -> Value {
    json!({"type": "object", "properties": {
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150, "default": 36},
        "colour": {"type": "string", "title": "Colour", "enum": ["red", "green", "blue"], "default": "green"},
        "name": {"type": "string", "title": "Name", "default": "Ada"}
    }, "required": ["age"]})
}

/// `fields` string properties `f0`, `f1`, …: a schema as large as a test wants.
fn wide_schema(fields: usize) -> Value {
    let properties: Map<String, Value> = (0..fields).map(|i| (format!("f{i}"), json!({"type": "string"}))).collect();
    json!({"type": "object", "properties": properties})
}

pub(crate) async fn elicit(_: Arc<Fixture>, context: Arc<CallContext>, args: Value) -> ToolResponse {
    let args = match arguments::<ElicitArgs>(args) {
        Ok(args) => args,
        Err(response) => return response,
    };
    let params = match &args.url {
        Some(url) => json!({"mode": "url", "message": args.message, "url": url, "elicitationId": args.elicitation_id}),
        None => {
            let schema = match (args.schema, args.fields) {
                (Some(schema), _) => schema,
                (None, Some(fields)) => wide_schema(fields),
                (None, None) => default_schema(),
            };
            json!({"message": args.message, "requestedSchema": schema})
        }
    };
    match context.request("elicitation/create", Some(params), Duration::from_millis(args.wait_ms)).await {
        Ok(result) => ToolResponse::text(format!("elicitation result: {}", canonical(&result))),
        Err(error) => ToolResponse::error(format!("elicit: {error}")),
    }
}

/// Compact JSON with sorted keys, so a test can compare the text.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let members: Vec<String> =
                keys.iter().map(|key| format!("{}:{}", Value::from(key.as_str()), canonical(&map[*key]))).collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}
