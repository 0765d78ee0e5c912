//! `odek ext check`'s call checks (`odek_conformance`) against a real child process, the minimal
//! stdio server of odek-mcp's `tests/scripted/one_tool_server.py`: a side-effecting tool is called
//! once, never repeated; the verdict decodes results with the client's own checked decoder (the
//! declared `outputSchema` included) and takes an error's text from the client's error view.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use odek_conformance::{CallPolicy, CheckOptions, CheckResult, Report, Status, Target, run_conformance};
use serde_json::{Value, json};

/// The interpreter's own path: a version-manager shim may need variables the check does not pass.
fn python() -> String {
    let output = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Checks the one-tool server described by `spec` (its `probe` tool called with `{}`).
async fn check(dir: &Path, spec: &Value) -> Report {
    let spec_path = dir.join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../odek-mcp/tests/scripted/one_tool_server.py");
    let options = CheckOptions {
        server: "srv".into(),
        target: Target::Stdio {
            command: python(),
            args: vec![script.display().to_string(), spec_path.display().to_string()],
            env: BTreeMap::new(),
        },
        timeout: Duration::from_secs(10),
        max_response_bytes: 1 << 20,
        max_result_chars: 200_000,
        artifact_roots: Vec::new(),
        examples: vec![("probe".into(), json!({}))],
        skip_calls: Vec::new(),
        exclude_tools: Vec::new(),
        calls: CallPolicy::All,
        concurrency: 4,
        client_version: "0".into(),
        protocol: odek_mcp::revision::Revision::default(),
    };
    run_conformance(&options, &|_| {}).await
}

fn find<'r>(report: &'r Report, name: &str) -> &'r CheckResult {
    report.checks.iter().find(|result| result.check == name).unwrap_or_else(|| panic!("no {name}: {report:#?}"))
}

fn call_log(dir: &Path) -> (PathBuf, impl Fn() -> Vec<String>) {
    let path = dir.join("calls.log");
    let read = {
        let path = path.clone();
        move || std::fs::read_to_string(&path).unwrap_or_default().lines().map(str::to_owned).collect()
    };
    (path, read)
}

/// Before: the load burst fired the first successful call `--concurrency` more times, and
/// every successful call was repeated with an unknown argument — a `--call` example for a
/// destructive tool ran six times here.
#[tokio::test]
async fn a_tool_not_annotated_read_only_is_called_once_red() {
    let dir = tempfile::tempdir().unwrap();
    let (log, calls) = call_log(dir.path());
    let result = r#"{"content":[{"type":"text","text":"deleted"}]}"#;
    let report =
        check(dir.path(), &json!({"result": result, "callLog": log, "annotations": {"readOnlyHint": false}})).await;
    assert_eq!(calls(), ["{}"], "{report:#?}");
    let unknown = find(&report, "unknown_arguments_tolerated");
    assert_eq!(unknown.status, Status::Skip);
    assert!(unknown.reason.starts_with("not annotated readOnlyHint: true, so the call is not repeated"), "{unknown:?}");
    assert!(find(&report, "concurrent_calls_answered").reason.starts_with("4 concurrent ping answered"));
    let planned = &report.plan[0];
    assert!(planned.call && planned.reason.contains("called once: not annotated readOnlyHint: true"), "{planned:?}");
}

/// A read-only tool is still repeated: with the unknown argument, and in the burst.
#[tokio::test]
async fn a_read_only_tool_is_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let (log, calls) = call_log(dir.path());
    let result = r#"{"content":[{"type":"text","text":"looked up"}]}"#;
    let report =
        check(dir.path(), &json!({"result": result, "callLog": log, "annotations": {"readOnlyHint": true}})).await;
    let calls = calls();
    assert_eq!(calls.len(), 1 + 1 + 4, "{calls:?}");
    assert_eq!(calls[1], r#"{"odek_check_unknown_argument": true}"#);
    assert_eq!(find(&report, "unknown_arguments_tolerated").status, Status::Pass);
    assert!(find(&report, "concurrent_calls_answered").reason.starts_with("4 concurrent tools/call probe answered"));
}

/// Before: `result_decodes` used the decoder without a schema, so this passed, though a run
/// fails every such call.
#[tokio::test]
async fn structured_content_that_fails_the_tool_s_own_schema_fails_the_check_red() {
    let dir = tempfile::tempdir().unwrap();
    let schema = json!({"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]});
    let result = r#"{"content":[{"type":"text","text":"hot"}],"structuredContent":{"t":"hot"}}"#;
    let report = check(dir.path(), &json!({"result": result, "outputSchema": schema})).await;
    let decodes = find(&report, "result_decodes");
    assert_eq!(decodes.status, Status::Fail);
    assert_eq!(
        decodes.reason,
        r#"mcpclient srv: tool probe: structuredContent does not match the tool's outputSchema at "/t": "hot" is not of type "number"; odek fails the call: return structuredContent that matches the declared outputSchema"#
    );
    assert_eq!(find(&report, "result_within_caps").status, Status::Skip);
    let good = r#"{"content":[],"structuredContent":{"t":1}}"#;
    let report = check(dir.path(), &json!({"result": good, "outputSchema": schema})).await;
    assert_eq!(find(&report, "result_decodes").reason, "decodes; structuredContent matches the declared outputSchema");
}

/// Before: `tool_schemas_accepted` only looked at skipped tools, so the registration warning
/// never surfaced.
#[tokio::test]
async fn an_output_schema_odek_ignores_is_a_warning_red() {
    let dir = tempfile::tempdir().unwrap();
    let result = r#"{"content":[{"type":"text","text":"ok"}]}"#;
    let report = check(dir.path(), &json!({"result": result, "outputSchema": {"type": 12}})).await;
    let accepted = find(&report, "tool_schemas_accepted");
    assert_eq!(accepted.status, Status::Warn);
    assert!(accepted.reason.starts_with("odek ignores the outputSchema of 1 tool(s)"), "{accepted:?}");
    let evidence = accepted.evidence.as_deref().unwrap();
    assert!(evidence.starts_with("mcp server \"srv\" tool \"probe\": outputSchema ignored ("), "{evidence}");
}

/// Before: `ext check` took `/content/0/text`, so an error whose first item is an image read
/// `(isError: )`. It is the client's error view now, the one the model gets.
#[tokio::test]
async fn an_image_first_error_shows_its_text_red() {
    let dir = tempfile::tempdir().unwrap();
    let result = r#"{"isError":true,"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"rendering failed"}]}"#;
    let report = check(dir.path(), &json!({"result": result})).await;
    let answers = find(&report, "call_answers");
    assert!(answers.reason.ends_with("(isError: rendering failed\n- image (image/png, 3 bytes))"), "{answers:?}");
}

/// [beyond] Issue 32: `embedded_resources_shown` grades what the model reads of embedded
/// resources — a text resource is content (pass), a blob a metadata line only (warn), a text
/// resource without a uri or type is not named (warn); no embedded resource passes.
#[tokio::test]
async fn embedded_resources_are_graded_by_what_the_model_reads() {
    let dir = tempfile::tempdir().unwrap();
    let graded = |report: &Report| {
        let result = find(report, "embedded_resources_shown");
        (result.status, result.reason.clone(), result.evidence.clone())
    };
    let file = r#"{"type":"resource","resource":{"uri":"repo://o/r/contents/a.rs","mimeType":"text/plain","text":"fn main() {}"}}"#;
    let text_only = format!(r#"{{"content":[{{"type":"text","text":"downloaded"}},{file}]}}"#);
    let report = check(dir.path(), &json!({"result": text_only})).await;
    assert_eq!(
        graded(&report),
        (
            Status::Pass,
            "1 embedded text resource(s) reach the model as text, each under a line naming its uri and type".into(),
            None
        )
    );

    let blob = r#"{"type":"resource","resource":{"uri":"repo://o/r/logo.png","mimeType":"image/png","blob":"AAAA"}}"#;
    let with_blob = format!(r#"{{"content":[{file},{blob}]}}"#);
    let report = check(dir.path(), &json!({"result": with_blob})).await;
    assert_eq!(
        graded(&report),
        (
            Status::Warn,
            "an embedded resource with a blob reaches the model as a metadata line only (1 of 2 shown as text): embed what the model must read as \"text\", or return bulky bytes as an artifact ref".into(),
            Some(r#"{"blob":"<4 chars>","mimeType":"image/png","uri":"repo://o/r/logo.png"}"#.into())
        )
    );

    let unnamed = r#"{"content":[{"type":"resource","resource":{"text":"x"}}]}"#;
    let report = check(dir.path(), &json!({"result": unnamed})).await;
    let (status, reason, _) = graded(&report);
    assert_eq!(status, Status::Warn);
    assert!(reason.starts_with("an embedded text resource without a uri or mimeType is shown"), "{reason}");

    let plain = r#"{"content":[{"type":"text","text":"ok"}]}"#;
    let report = check(dir.path(), &json!({"result": plain})).await;
    assert_eq!(graded(&report), (Status::Pass, "no embedded resource".into(), None));
}

/// [beyond] Issue 32: fastmcp 2.x declares no `additionalProperties: false` but its pydantic
/// validator rejects an unknown argument, naming it — the model reads which argument to leave
/// out, so this is a warning as a closed schema (fastmcp 3.x, 4.x) is; before it was a failure.
/// An error that does not name the argument still fails.
#[tokio::test]
async fn a_read_only_tool_rejecting_an_unknown_argument_by_name_is_a_warning_red() {
    let dir = tempfile::tempdir().unwrap();
    let fastmcp_2 = json!({"content": [{"type": "text", "text": "1 validation error for call[probe]\nodek_check_unknown_argument\n  Unexpected keyword argument [type=unexpected_keyword_argument, input_value=True, input_type=bool]"}], "isError": true});
    let spec = |rejection: &Value| {
        json!({
            "result": r#"{"content":[{"type":"text","text":"3"}]}"#,
            "resultWithUnknownArgument": rejection.to_string(),
            "annotations": {"readOnlyHint": true},
        })
    };
    let report = check(dir.path(), &spec(&fastmcp_2)).await;
    let unknown = find(&report, "unknown_arguments_tolerated");
    assert_eq!(unknown.status, Status::Warn, "{unknown:?}");
    assert_eq!(
        unknown.reason,
        "an extra unknown argument turned the result into isError; a warning, not a failure: the error names the unknown argument (a strict validator, as fastmcp 2.x's), so the model learns what to leave out — still, declare additionalProperties: false so the model is told beforehand, or ignore arguments you do not know"
    );
    let anonymous = json!({"content": [{"type": "text", "text": "invalid arguments"}], "isError": true});
    let report = check(dir.path(), &spec(&anonymous)).await;
    assert_eq!(find(&report, "unknown_arguments_tolerated").status, Status::Fail);
}
