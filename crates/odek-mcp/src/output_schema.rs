//! [beyond] A tool's declared `outputSchema`, compiled once when the tool is registered and
//! used to check every `structuredContent` it returns (docs/MODEL-VIEW.md). Start at
//! [`compile_output_schema`].
//!
//! The schema is server input, so compiling and checking are bounded: nothing is ever fetched
//! (a `$ref` to a URL or a file does not compile; the `jsonschema` crate is built without its
//! retrievers and told to stay offline), `pattern` uses the linear-time `regex` engine with
//! size limits (a look-around or back-reference does not compile), `format` is not asserted,
//! and a schema larger than the input-schema cap of `mcp-client.md` §4 is not compiled.

use odek_contract::canonical_json::to_canonical_string;
use odek_contract::model_view::{OutputCheck, SchemaMismatch};
use serde_json::Value;

use crate::discovery::MAX_SCHEMA_BYTES;

/// Size limit of one compiled `pattern`, and of its lazy DFA cache, in bytes (1 MiB).
pub const MAX_PATTERN_BYTES: usize = 1 << 20;

/// A compiled `outputSchema`; compares (and prints) as its source.
pub struct OutputSchema {
    source: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OutputSchema").field(&self.source).finish()
    }
}

impl PartialEq for OutputSchema {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

/// Compiles a declared `outputSchema`. `Err` is the reason it is treated as undeclared, for the
/// registration warning.
pub fn compile_output_schema(schema: &Value) -> Result<OutputSchema, String> {
    let schema_bytes = to_canonical_string(schema).len();
    if schema_bytes > MAX_SCHEMA_BYTES {
        return Err(format!("schema too large ({schema_bytes} bytes, max {MAX_SCHEMA_BYTES})"));
    }
    let validator = jsonschema::options()
        .offline()
        .should_validate_formats(false)
        .with_pattern_options(
            jsonschema::PatternOptions::regex().size_limit(MAX_PATTERN_BYTES).dfa_size_limit(MAX_PATTERN_BYTES),
        )
        .build(schema)
        .map_err(|error| error.to_string())?;
    Ok(OutputSchema { source: schema.clone(), validator })
}

impl OutputCheck for OutputSchema {
    fn check(&self, structured: &Value) -> Result<(), SchemaMismatch> {
        self.validator
            .validate(structured)
            .map_err(|error| SchemaMismatch { pointer: error.instance_path().to_string(), message: error.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_first_failure_names_its_pointer() {
        let schema = compile_output_schema(&json!({
            "type": "object",
            "properties": {"temperature": {"type": "number"}, "tags": {"items": {"type": "string"}}},
            "required": ["temperature"],
        }))
        .unwrap();
        assert_eq!(schema.check(&json!({"temperature": 1.5, "tags": ["a"]})), Ok(()));
        let mismatch = schema.check(&json!({"temperature": 1, "tags": ["a", 7]})).unwrap_err();
        assert_eq!(mismatch.pointer, "/tags/1");
        assert_eq!(mismatch.message, "7 is not of type \"string\"");
        let mismatch = schema.check(&json!({})).unwrap_err();
        assert_eq!(mismatch.pointer, "");
        assert_eq!(mismatch.message, "\"temperature\" is a required property");
    }

    #[test]
    fn what_does_not_compile_is_reported() {
        assert!(compile_output_schema(&json!({"type": 12})).is_err());
        assert!(compile_output_schema(&json!({"$ref": "file:///etc/passwd"})).is_err());
        // Back-references need a backtracking engine: not compiled rather than run unbounded.
        assert!(compile_output_schema(&json!({"pattern": "(a+)+\\1$"})).is_err());
        let big = json!({"description": "x".repeat(MAX_SCHEMA_BYTES)});
        assert_eq!(
            compile_output_schema(&big).unwrap_err(),
            format!("schema too large ({} bytes, max {MAX_SCHEMA_BYTES})", MAX_SCHEMA_BYTES + 18)
        );
    }

    #[test]
    fn self_references_terminate() {
        let schema = compile_output_schema(&json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}));
        if let Ok(schema) = schema {
            let _ = schema.check(&json!({"x": [1, 2, 3]}));
        }
        let schema = compile_output_schema(&json!({"items": {"$ref": "#"}})).unwrap();
        let mut deep = json!(1);
        for _ in 0..100 {
            deep = json!([deep]);
        }
        assert_eq!(schema.check(&deep), Ok(()));
    }
}
