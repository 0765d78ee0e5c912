//! The published OpenAPI document (`docs/schemas/odek-serve.openapi.json`) is byte for byte what
//! the API's types generate: a body of the API never changes without the document changing in
//! the same commit. Regenerate with `ODEK_UPDATE_SCHEMA=1 cargo test -p odek-serve --test openapi`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use odek_serve::{OPENAPI_PATH, openapi_document_text};
use serde_json::Value;

#[test]
fn the_published_openapi_document_is_the_one_the_types_generate() {
    let generated = openapi_document_text();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(OPENAPI_PATH);
    if std::env::var_os("ODEK_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == generated,
        "{OPENAPI_PATH} is not what the API's types generate: a body changed without the document. \
         Regenerate it with ODEK_UPDATE_SCHEMA=1 cargo test -p odek-serve --test openapi"
    );
}

#[test]
fn every_component_is_a_valid_2020_12_schema() {
    let document: Value = serde_json::from_str(&openapi_document_text()).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let schemas = document["components"]["schemas"].as_object().unwrap();
    for (name, schema) in schemas {
        // Each component, with the others beside it for its references.
        let mut standalone = schema.clone();
        standalone["components"] = document["components"].clone();
        assert!(jsonschema::draft202012::meta::is_valid(schema), "{name} is not a valid 2020-12 schema");
        jsonschema::draft202012::new(&standalone).unwrap_or_else(|error| panic!("{name}: {error}"));
    }
}
