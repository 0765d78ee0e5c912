//! [beyond] A tool's declared `outputSchema`, compiled once when the tool is registered and
//! used to check every `structuredContent` it returns (docs/MODEL-VIEW.md). Start at
//! [`compile_output_schema`].
//!
//! The schema is server input, so compiling and checking are bounded: nothing is ever fetched
//! (a `$ref` to a URL or a file does not compile; the `jsonschema` crate is built without its
//! retrievers and told to stay offline), `pattern` uses the linear-time `regex` engine with
//! size limits (a look-around or back-reference does not compile), `format` is not asserted,
//! a schema larger than the input-schema cap of `mcp-client.md` §4 is not compiled, and before
//! each check an upper bound of the validator's work on that value is counted
//! ([`work_bound`]): past [`MAX_CHECK_STEPS`] steps or [`MAX_CHECK_DEPTH`] nested applications
//! the value is not checked and the call fails. A schema whose work cannot be bounded does not
//! compile.
//!
//! \[beyond\] The same compiled schema checks a run's final answer against `--output-schema`
//! (`odek_agent::finish`): [`compile_schema`] says where in the schema a compile error is, and
//! [`OutputSchema::mismatches`] lists more than the first failure.

mod work_bound;

use odek_contract::canonical_json::to_canonical_string;
use odek_contract::model_view::{OutputCheck, OutputCheckFailure, SchemaMismatch};
use serde_json::Value;
use work_bound::WorkGraph;
pub use work_bound::{MAX_CHECK_DEPTH, MAX_CHECK_STEPS, Unbounded};

use crate::caps::MAX_SCHEMA_BYTES;

/// Size limit of one compiled `pattern`, and of its lazy DFA cache, in bytes (1 MiB).
pub(crate) const MAX_PATTERN_BYTES: usize = 1 << 20;

/// A compiled `outputSchema`; compares (and prints) as its source.
pub struct OutputSchema {
    source: Value,
    validator: jsonschema::Validator,
    work: WorkGraph,
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

/// Why a schema does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON pointer of the offending location in the schema, when the validator names one.
    pub pointer: Option<String>,
    /// Why it does not compile.
    pub message: String,
}

/// Compiles a declared `outputSchema`. `Err` is the reason it is treated as undeclared, for the
/// registration warning.
pub fn compile_output_schema(schema: &Value) -> Result<OutputSchema, String> {
    compile_schema(schema).map_err(|error| error.message)
}

/// [`compile_output_schema`], saying where in the schema the error is when it can.
pub fn compile_schema(schema: &Value) -> Result<OutputSchema, SchemaError> {
    let unlocated = |message: String| SchemaError { pointer: None, message };
    let schema_bytes = to_canonical_string(schema).len();
    if schema_bytes > MAX_SCHEMA_BYTES {
        return Err(unlocated(format!("schema too large ({schema_bytes} bytes, max {MAX_SCHEMA_BYTES})")));
    }
    let validator = jsonschema::options()
        .offline()
        .should_validate_formats(false)
        .with_pattern_options(
            jsonschema::PatternOptions::regex().size_limit(MAX_PATTERN_BYTES).dfa_size_limit(MAX_PATTERN_BYTES),
        )
        .build(schema)
        .map_err(|error| {
            // Checked against the meta-schema, the schema is the instance: its path is ours.
            let pointer = error.instance_path().to_string();
            SchemaError { pointer: Some(pointer).filter(|pointer| !pointer.is_empty()), message: error.to_string() }
        })?;
    let work = WorkGraph::compile(schema).map_err(unlocated)?;
    Ok(OutputSchema { source: schema.clone(), validator, work })
}

impl OutputSchema {
    /// The schema as written.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Every way `value` fails the schema, at most `limit` of them (empty: it matches). `Err`
    /// when checking it would pass the work bounds, before the validator runs.
    pub fn mismatches(&self, value: &Value, limit: usize) -> Result<Vec<SchemaMismatch>, Unbounded> {
        self.work.bound(value)?;
        Ok(self
            .validator
            .iter_errors(value)
            .take(limit)
            .map(|error| SchemaMismatch { pointer: error.instance_path().to_string(), message: error.to_string() })
            .collect())
    }
}

impl OutputCheck for OutputSchema {
    /// The validator runs only once the bound of its work on `structured` is within the caps.
    fn check(&self, structured: &Value) -> Result<(), OutputCheckFailure> {
        self.work.bound(structured).map_err(|unbounded| OutputCheckFailure::Unchecked(unchecked_reason(&unbounded)))?;
        self.validator.validate(structured).map_err(|error| {
            OutputCheckFailure::Mismatch(SchemaMismatch {
                pointer: error.instance_path().to_string(),
                message: error.to_string(),
            })
        })
    }
}

/// Why a value was not checked, after `structuredContent not checked: `.
fn unchecked_reason(unbounded: &Unbounded) -> String {
    match unbounded {
        Unbounded::TooCostly => {
            format!("the tool's outputSchema would take more than {MAX_CHECK_STEPS} steps to check this value")
        }
        Unbounded::TooDeep => {
            format!("the tool's outputSchema would nest more than {MAX_CHECK_DEPTH} checks deep for this value")
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn mismatch(schema: &OutputSchema, value: &Value) -> SchemaMismatch {
        match schema.check(value) {
            Err(OutputCheckFailure::Mismatch(mismatch)) => mismatch,
            other => panic!("not a mismatch: {other:?}"),
        }
    }

    fn unchecked(schema: &OutputSchema, value: &Value) -> String {
        match schema.check(value) {
            Err(OutputCheckFailure::Unchecked(reason)) => reason,
            other => panic!("checked: {other:?}"),
        }
    }

    #[test]
    fn the_first_failure_names_its_pointer() {
        let schema = compile_output_schema(&json!({
            "type": "object",
            "properties": {"temperature": {"type": "number"}, "tags": {"items": {"type": "string"}}},
            "required": ["temperature"],
        }))
        .unwrap();
        assert_eq!(schema.check(&json!({"temperature": 1.5, "tags": ["a"]})), Ok(()));
        let failure = mismatch(&schema, &json!({"temperature": 1, "tags": ["a", 7]}));
        assert_eq!(failure.pointer, "/tags/1");
        assert_eq!(failure.message, "7 is not of type \"string\"");
        let failure = mismatch(&schema, &json!({}));
        assert_eq!(failure.pointer, "");
        assert_eq!(failure.message, "\"temperature\" is a required property");
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

    /// `a_i = {"<applicator>": [{"$ref": "#/$defs/a_{i+1}"}, {"$ref": "#/$defs/a_{i+1}"}]}`, the
    /// last `{"type": "string"}`: 2^n paths to the last one, in a schema of a few KB.
    fn doubling_chain(n: usize, applicator: &str) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..n {
            let next = json!({"$ref": format!("#/$defs/a{}", i + 1)});
            defs.insert(format!("a{i}"), json!({applicator: [next.clone(), next]}));
        }
        defs.insert(format!("a{n}"), json!({"type": "string"}));
        json!({"$defs": defs, "$ref": "#/$defs/a0"})
    }

    /// The check stops at the step cap (a count, not a clock: how fast that is on a given
    /// machine belongs to the benchmarks).
    fn fails_fast_with_the_step_cap(schema: &OutputSchema, value: &Value) {
        assert_eq!(
            unchecked(schema, value),
            "the tool's outputSchema would take more than 1000000 steps to check this value"
        );
    }

    /// Before: n = 20 took 5 s and 1.5 GB, n = 24 was OOM-killed.
    #[test]
    fn ref_chains_through_any_of_and_one_of_are_refused_fast_red() {
        for applicator in ["anyOf", "oneOf", "allOf"] {
            for n in [24, 40] {
                let schema = compile_output_schema(&doubling_chain(n, applicator)).unwrap();
                fails_fast_with_the_step_cap(&schema, &json!(1));
            }
            // A short chain is checked as usual.
            let schema = compile_output_schema(&doubling_chain(6, applicator)).unwrap();
            assert!(matches!(schema.check(&json!(1)), Err(OutputCheckFailure::Mismatch(_))), "{applicator}");
        }
        let schema = compile_output_schema(&doubling_chain(6, "anyOf")).unwrap();
        assert_eq!(schema.check(&json!("s")), Ok(()));
    }

    /// The same blow-up through keywords that descend: every level doubles the applications to
    /// the level below.
    #[test]
    fn descending_doubles_over_a_deep_value_are_refused_fast_red() {
        let schema =
            compile_output_schema(&json!({"anyOf": [{"items": {"$ref": "#"}}, {"items": {"$ref": "#"}}]})).unwrap();
        let mut deep = json!(1);
        for _ in 0..100 {
            deep = json!([deep]);
        }
        fails_fast_with_the_step_cap(&schema, &deep);
        let mut shallow = json!(1);
        for _ in 0..5 {
            shallow = json!([shallow]);
        }
        assert_eq!(schema.check(&shallow), Ok(()));
    }

    #[test]
    fn wide_values_are_counted_too() {
        let schema =
            compile_output_schema(&json!({"items": {"anyOf": [{"type": "string"}, {"type": "number"}]}})).unwrap();
        assert_eq!(schema.check(&json!(vec![1; 1000])), Ok(()));
        fails_fast_with_the_step_cap(&schema, &json!(vec![1; 400_000]));
        let unique = compile_output_schema(&json!({"uniqueItems": true})).unwrap();
        assert_eq!(unique.check(&json!([[1, 2], [3, 4]])), Ok(()));
        fails_fast_with_the_step_cap(&unique, &json!(vec![[1, 2, 3]; 30_000]));
        let enumerated = compile_output_schema(&json!({"items": {"enum": (0..1000).collect::<Vec<_>>()}})).unwrap();
        fails_fast_with_the_step_cap(&enumerated, &json!(vec![999; 2000]));
        let pattern = compile_output_schema(&json!({"items": {"pattern": "^a"}})).unwrap();
        fails_fast_with_the_step_cap(&pattern, &json!(vec!["a".repeat(1 << 20); 70]));
    }

    /// A value whose check nests past MAX_CHECK_DEPTH is refused (the validator would overflow
    /// the stack); just under it, the validator runs on a thread with the default 2 MiB stack.
    #[test]
    fn nesting_is_bounded_and_what_passes_fits_a_small_stack_red() {
        // 200 refs between each level of the value: each level costs 201 nested applications.
        let mut defs = serde_json::Map::new();
        for i in 0..200 {
            defs.insert(format!("r{i}"), json!({"$ref": format!("#/$defs/r{}", i + 1)}));
        }
        defs.insert("r200".to_owned(), json!({"items": {"$ref": "#/$defs/r0"}}));
        let schema = compile_output_schema(&json!({"$defs": defs, "$ref": "#/$defs/r0"})).unwrap();
        let nested = |levels: usize| {
            let mut value = json!(1);
            for _ in 0..levels {
                value = json!([value]);
            }
            value
        };
        match schema.check(&nested(3)) {
            Err(OutputCheckFailure::Unchecked(reason)) => {
                assert_eq!(reason, "the tool's outputSchema would nest more than 512 checks deep for this value");
            }
            other => panic!("{other:?}"),
        }
        let on_a_small_stack = |schema: OutputSchema, value: Value| {
            std::thread::Builder::new().stack_size(2 << 20).spawn(move || schema.check(&value)).unwrap().join().unwrap()
        };
        assert_eq!(on_a_small_stack(schema, nested(1)), Ok(()));
        // Recursive shapes at just under the depth cap (2, 2, 3 and 4 applications a level).
        let wrap_in_a = |levels: usize| {
            let mut value = json!(1);
            for _ in 0..levels {
                value = json!({"a": value});
            }
            value
        };
        for (schema, value) in [
            (json!({"items": {"$ref": "#"}}), nested(254)),
            (json!({"properties": {"a": {"$ref": "#"}}, "additionalProperties": {"$ref": "#"}}), wrap_in_a(254)),
            (json!({"anyOf": [{"items": {"$ref": "#"}}, {"type": "null"}]}), nested(168)),
            (json!({"allOf": [{"properties": {"a": {"allOf": [{"$ref": "#"}]}}}]}), wrap_in_a(126)),
        ] {
            let schema = compile_output_schema(&schema).unwrap();
            assert_eq!(on_a_small_stack(schema, value), Ok(()));
        }
        // An in-place chain longer than the depth cap never compiles.
        let mut defs = serde_json::Map::new();
        for i in 0..600 {
            defs.insert(format!("r{i}"), json!({"$ref": format!("#/$defs/r{}", i + 1)}));
        }
        defs.insert("r600".to_owned(), json!({}));
        assert_eq!(
            compile_output_schema(&json!({"$defs": defs, "$ref": "#/$defs/r0"})).unwrap_err(),
            "in-place applicators nest more than 512 deep"
        );
    }

    /// A schema applied to the same value through refs alone would recurse forever: refused at
    /// registration. Through a keyword that descends it ends with the value.
    #[test]
    fn self_references_are_refused_or_end_with_the_value() {
        for looping in [
            json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            json!({"anyOf": [{"$ref": "#"}]}),
            json!({"$defs": {"a": {"not": {"$ref": "#/$defs/b"}}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
        ] {
            assert_eq!(
                compile_output_schema(&looping).unwrap_err(),
                "a $ref cycle applies a schema to the same value forever",
                "{looping}"
            );
        }
        let schema = compile_output_schema(&json!({"items": {"$ref": "#"}})).unwrap();
        let mut deep = json!(1);
        for _ in 0..100 {
            deep = json!([deep]);
        }
        assert_eq!(schema.check(&deep), Ok(()));
        let strings = compile_output_schema(&json!({"items": {"$ref": "#"}, "type": "array"})).unwrap();
        assert_eq!(mismatch(&strings, &json!([[1]])).pointer, "/0/0");
    }

    /// Only local refs are followed; what cannot be bounded is not compiled, with the reason.
    #[test]
    fn refs_that_cannot_be_bounded_are_refused() {
        for (schema, reason) in [
            (json!({"$dynamicRef": "#x", "$defs": {"x": {"$dynamicAnchor": "x"}}}), "$dynamicRef cannot be bounded"),
            (json!({"unevaluatedProperties": false}), "unevaluatedProperties cannot be bounded"),
            (json!({"items": {"unevaluatedItems": false}}), "unevaluatedItems cannot be bounded"),
            (
                json!({"$defs": {"x": {"$id": "urn:x", "type": "string"}}, "$ref": "urn:x"}),
                "an embedded resource (a nested $id) cannot be bounded",
            ),
        ] {
            assert_eq!(compile_output_schema(&schema).unwrap_err(), reason, "{schema}");
        }
        // Pointers (escaped and percent-encoded), anchors and the root's own id resolve.
        let schema = compile_output_schema(&json!({
            "$id": "https://example.test/weather.json",
            "$defs": {"a/b": {"type": "number"}, "c d": {"$anchor": "cd", "type": "string"}},
            "properties": {
                "x": {"$ref": "#/$defs/a~1b"},
                "y": {"$ref": "#/$defs/c%20d"},
                "z": {"$ref": "#cd"},
                "w": {"$ref": "https://example.test/weather.json#/$defs/a~1b"},
            },
        }))
        .unwrap();
        assert_eq!(schema.check(&json!({"x": 1, "y": "a", "z": "b", "w": 2})), Ok(()));
        assert_eq!(mismatch(&schema, &json!({"z": 3})).pointer, "/z");
    }

    /// What the official SDKs declare (Pydantic models with `$defs`, optional fields as `anyOf`
    /// with null) is bounded well within the caps.
    #[test]
    fn ordinary_sdk_schemas_are_checked() {
        let schema = compile_output_schema(&json!({
            "$defs": {
                "Reading": {"properties": {"value": {"type": "number"}, "unit": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["value"], "type": "object"},
            },
            "properties": {"city": {"type": "string"}, "readings": {"items": {"$ref": "#/$defs/Reading"}, "type": "array"}},
            "required": ["city", "readings"],
            "type": "object",
        }))
        .unwrap();
        let readings: Vec<Value> = (0..5000).map(|n| json!({"value": n, "unit": null})).collect();
        assert_eq!(schema.check(&json!({"city": "Paris", "readings": readings})), Ok(()));
    }
}
