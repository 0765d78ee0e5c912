//! [beyond] A hostile `outputSchema` can neither hang a call nor exhaust memory: the hub counts
//! an upper bound of the validator's work before it checks `structuredContent`, and fails the
//! call with a clear error past the cap (docs/MODEL-VIEW.md). Against a real child process: a
//! minimal stdio server (`tests/scripted/one_tool_server.py`) listing one tool with the schema
//! under test and answering with the result line under test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use odek_mcp::ServerEntry;
use serde_json::{Value, json};
use support::{call, spec, start};

const TOO_COSTLY: &str = "mcpclient srv: tool probe: structuredContent not checked: the tool's outputSchema would take more than 1000000 steps to check this value";

/// The one-tool server declaring `output_schema` and answering `result` (a JSON text, sent as is).
fn one_tool_server(dir: &std::path::Path, output_schema: &Value, result: &str) -> ServerEntry {
    let spec_path = dir.join("spec.json");
    std::fs::write(&spec_path, json!({"outputSchema": output_schema, "result": result}).to_string()).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripted/one_tool_server.py");
    ServerEntry {
        command: Some("python3".to_owned()),
        args: vec![script.display().to_string(), spec_path.display().to_string()],
        ..ServerEntry::default()
    }
}

/// `a_i = {"anyOf": [{"$ref": "#/$defs/a_{i+1}"}, {"$ref": "#/$defs/a_{i+1}"}]}`, the last
/// `{"type": "string"}`: 1.3 KB for n = 20.
fn doubling_ref_chain(n: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        let next = json!({"$ref": format!("#/$defs/a{}", i + 1)});
        defs.insert(format!("a{i}"), json!({"anyOf": [next.clone(), next]}));
    }
    defs.insert(format!("a{n}"), json!({"type": "string"}));
    json!({"$defs": defs, "$ref": "#/$defs/a0"})
}

async fn fails_fast(output_schema: &Value, result: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (hub, recorder) = start(vec![spec("srv", &one_tool_server(dir.path(), output_schema, result))]).await;
    assert!(recorder.warnings().is_empty(), "the schema compiles: {:?}", recorder.warnings());
    let started = Instant::now();
    assert_eq!(call(&hub, "srv__probe", "{}").await.unwrap_err(), TOO_COSTLY);
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    hub.shutdown().await;
}

/// Before: n = 20 took 5 s and 1.5 GB on the blocking pool, n = 24 was OOM-killed.
#[tokio::test]
async fn a_ref_chain_through_any_of_fails_the_call_fast_red() {
    fails_fast(&doubling_ref_chain(24), r#"{"content":[],"structuredContent":1}"#).await;
}

/// Before: the escaped key slipped past the byte search for `structuredContent`, so the check
/// ran on an async worker and stalled the runtime. The decision is made on the decoded result.
#[tokio::test]
async fn an_escaped_structured_content_key_is_bounded_too_red() {
    fails_fast(&doubling_ref_chain(30), r#"{"content":[],"structured\u0043ontent":1}"#).await;
}

/// The same blow-up through a keyword that descends, over a deeply nested value.
#[tokio::test]
async fn a_descending_double_over_a_deep_value_fails_the_call_fast_red() {
    let schema = json!({"anyOf": [{"items": {"$ref": "#"}}, {"items": {"$ref": "#"}}]});
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    fails_fast(&schema, &format!(r#"{{"content":[],"structuredContent":{deep}}}"#)).await;
}

/// A schema whose work cannot be bounded (here a ref that is not local) is ignored at
/// registration with the usual warning; the tool stays, unchecked.
#[tokio::test]
async fn a_schema_that_cannot_be_bounded_is_ignored_with_the_warning() {
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({"$defs": {"x": {"$id": "urn:x", "type": "string"}}, "$ref": "urn:x"});
    let entry = one_tool_server(dir.path(), &schema, r#"{"content":[],"structuredContent":1}"#);
    let (hub, recorder) = start(vec![spec("srv", &entry)]).await;
    assert_eq!(
        recorder.warnings(),
        [
            "mcp server \"srv\" tool \"probe\": outputSchema ignored (an embedded resource (a nested $id) cannot be bounded); structuredContent is not checked against it"
        ]
    );
    assert_eq!(call(&hub, "srv__probe", "{}").await.unwrap(), "- structured content 1");
    hub.shutdown().await;
}

/// An ordinary schema still checks, whichever way the key is written.
#[tokio::test]
async fn an_ordinary_schema_still_checks_an_escaped_key() {
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]});
    let entry = one_tool_server(dir.path(), &schema, r#"{"content":[],"structured\u0043ontent":{"t":"hot"}}"#);
    let (hub, _) = start(vec![spec("srv", &entry)]).await;
    assert_eq!(
        call(&hub, "srv__probe", "{}").await.unwrap_err(),
        r#"mcpclient srv: tool probe: structuredContent does not match the tool's outputSchema at "/t": "hot" is not of type "number""#
    );
    hub.shutdown().await;
}
