//! \[beyond\] `--output-schema`: the final answer must parse as JSON and match a JSON Schema
//! (draft 2020-12). The schema is loaded once, before the run ([`load_output_schema`]; a task
//! file's inline `output_schema` through [`compile_inline_schema`]), and compiled by the same
//! bounded, offline compiler that checks MCP tools' `outputSchema` (`odek_mcp::compile_schema`):
//! a `$ref` that is not local is refused, never fetched, and every check's work is bounded
//! before the validator runs.
//!
//! The gate ([`OutputSchemaGate`]) accepts a matching answer as its compact JSON; a failing one
//! goes back to the model with the validation errors (instance paths and messages, capped in
//! count and bytes), at most `--output-retries` times, after which the run fails with
//! [`RunError::InvalidOutput`]. The parse takes the answer as the model wrote it, surrounding
//! whitespace aside, or the inside of one Markdown code fence around the whole answer
//! (```` ```json ````), which models add even when told not to; nothing else is stripped.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use odek_contract::canonical_json::to_canonical_string;
use odek_contract::regular_file::{Bounded, Follow, read_capped};
use odek_mcp::{MAX_CHECK_DEPTH, MAX_CHECK_STEPS, OutputSchema, SchemaError, Unbounded, compile_schema};
use serde_json::Value;

use super::Review;
use crate::run::RunError;

/// Largest schema file read (bytes, 1 MiB); the compiled schema is capped again at 256 KiB of
/// canonical JSON, the cap of an MCP tool's schema (it goes into every request).
pub const MAX_OUTPUT_SCHEMA_FILE_BYTES: u64 = 1 << 20;
/// Largest answer parsed and checked (bytes, 8 MiB); a longer one fails without being parsed.
pub const MAX_CHECKED_ANSWER_BYTES: usize = 8 << 20;
/// Validation errors listed in one retry message.
const MAX_LISTED_ERRORS: usize = 10;
/// Bytes of one listed error's message (cut on a character boundary).
const MAX_ERROR_MESSAGE_BYTES: usize = 300;
/// Bytes of one listed error's instance path.
const MAX_ERROR_POINTER_BYTES: usize = 200;

/// Why `--output-schema` (or a task file's `output_schema`) cannot be used. `origin` names it:
/// `--output-schema <path>` or `task file output_schema`.
#[derive(Debug, thiserror::Error)]
pub enum OutputSchemaError {
    #[error("{origin}: {source}")]
    Read { origin: String, source: std::io::Error },
    #[error("{origin}: the schema is {size} bytes, more than the {MAX_OUTPUT_SCHEMA_FILE_BYTES}-byte limit")]
    TooLarge { origin: String, size: u64 },
    #[error("{origin}: not JSON: {detail}")]
    NotJson { origin: String, detail: String },
    #[error("{origin}: invalid JSON Schema at {pointer}: {message}")]
    InvalidAt { origin: String, pointer: String, message: String },
    #[error("{origin}: invalid JSON Schema: {message}")]
    Invalid { origin: String, message: String },
}

/// A compiled output schema and where it came from.
#[derive(Debug)]
pub struct OutputSchemaSpec {
    origin: String,
    schema: OutputSchema,
}

impl OutputSchemaSpec {
    /// `--output-schema <path>` or `task file output_schema`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The schema as written.
    pub fn schema(&self) -> &Value {
        self.schema.source()
    }

    /// `answer` parsed ([`parse_answer`]) and checked against the schema: the value, or every
    /// problem (validation errors capped at 11).
    pub fn check_answer(&self, answer: &str) -> Result<Value, AnswerProblems> {
        check_answer(&self.schema, answer)
    }

    /// What the model is told about the answer it must give, after the task.
    pub fn instructions(&self) -> String {
        format!(
            "[odek: output format] Your final answer must be one JSON value that matches the JSON Schema \
             below (draft 2020-12), with nothing before or after it: no prose, no code fence. odek checks \
             it; an answer that does not match is sent back to you with the errors.\n{}",
            to_canonical_string(self.schema())
        )
    }
}

/// Reads the schema file at `path` (a regular file only, at most
/// [`MAX_OUTPUT_SCHEMA_FILE_BYTES`]), parses and compiles it.
pub fn load_output_schema(path: &Path) -> Result<OutputSchemaSpec, OutputSchemaError> {
    let origin = format!("--output-schema {}", path.display());
    let bytes = match read_capped(path, Follow::Symlinks, MAX_OUTPUT_SCHEMA_FILE_BYTES) {
        Ok(Bounded::Contents(bytes)) => bytes,
        Ok(Bounded::TooLarge { size }) => return Err(OutputSchemaError::TooLarge { origin, size }),
        Err(source) => return Err(OutputSchemaError::Read { origin, source }),
    };
    let schema: Value = match serde_json::from_slice(&bytes) {
        Ok(schema) => schema,
        Err(err) => return Err(OutputSchemaError::NotJson { origin, detail: err.to_string() }),
    };
    compile_with_origin(&schema, origin)
}

/// Compiles a schema given inline (a task file's `output_schema`).
pub fn compile_inline_schema(schema: &Value) -> Result<OutputSchemaSpec, OutputSchemaError> {
    compile_with_origin(schema, "task file output_schema".to_owned())
}

/// Compiles a schema a client gave inline; its errors name it as `origin`.
pub fn compile_schema_from(schema: &Value, origin: &str) -> Result<OutputSchemaSpec, OutputSchemaError> {
    compile_with_origin(schema, origin.to_owned())
}

fn compile_with_origin(schema: &Value, origin: String) -> Result<OutputSchemaSpec, OutputSchemaError> {
    match compile_schema(schema) {
        Ok(schema) => Ok(OutputSchemaSpec { origin, schema }),
        Err(SchemaError { pointer: Some(pointer), message }) => {
            Err(OutputSchemaError::InvalidAt { origin, pointer, message })
        }
        Err(SchemaError { pointer: None, message }) => Err(OutputSchemaError::Invalid { origin, message }),
    }
}

/// The schema gate of one run: the schema and the answers it has refused so far.
#[derive(Debug)]
pub(crate) struct OutputSchemaGate {
    spec: Arc<OutputSchemaSpec>,
    retries: u32,
    refused: u32,
}

impl OutputSchemaGate {
    pub(crate) fn new(spec: Arc<OutputSchemaSpec>, retries: u32) -> OutputSchemaGate {
        OutputSchemaGate { spec, retries, refused: 0 }
    }

    pub(crate) fn schema(&self) -> &Value {
        self.spec.schema()
    }

    /// Accepts a matching answer as its compact JSON; otherwise a retry while retries are left,
    /// then the run's failure.
    pub(crate) fn review(&mut self, answer: &str) -> Review {
        let problems = match check_answer(&self.spec.schema, answer) {
            Ok(value) => {
                // Compact with sorted keys, whatever order the model wrote them in.
                let compact = odek_contract::canonical_json::to_canonical_string(&value);
                return Review::Accept { answer: compact, output: Some(value) };
            }
            Err(problems) => problems,
        };
        self.refused += 1;
        let failure =
            RunError::InvalidOutput { attempts: self.refused, detail: problems.first_line(), origin: self.origin() };
        if self.refused > self.retries {
            return Review::Fail(failure);
        }
        Review::Revise { feedback: retry_message(&problems, self.refused, self.retries), failure }
    }

    fn origin(&self) -> String {
        self.spec.origin.clone()
    }
}

/// Why an answer was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerProblems {
    /// Not parsed: too long or not JSON.
    NotJson(String),
    /// Not checked: past the work bounds.
    Unchecked(String),
    /// The validation errors as (instance path, message), at most 11 (one more than a retry
    /// message lists, to tell "more").
    Mismatches(Vec<(String, String)>),
}

impl AnswerProblems {
    /// The first problem on one line, for the run's error.
    fn first_line(&self) -> String {
        match self {
            AnswerProblems::NotJson(detail) | AnswerProblems::Unchecked(detail) => detail.clone(),
            AnswerProblems::Mismatches(errors) => {
                errors.first().map(|(pointer, message)| located(pointer, message)).unwrap_or_default()
            }
        }
    }
}

/// `at /a/0: <message>`, `at the top level: <message>` for the whole value.
fn located(pointer: &str, message: &str) -> String {
    if pointer.is_empty() { format!("at the top level: {message}") } else { format!("at {pointer}: {message}") }
}

/// The answer parsed ([`parse_answer`]) and checked against `schema`.
fn check_answer(schema: &OutputSchema, answer: &str) -> Result<Value, AnswerProblems> {
    let value = parse_answer(answer).map_err(AnswerProblems::NotJson)?;
    let mismatches = schema.mismatches(&value, MAX_LISTED_ERRORS + 1).map_err(|unbounded| {
        AnswerProblems::Unchecked(match unbounded {
            Unbounded::TooCostly => format!("the answer would take more than {MAX_CHECK_STEPS} steps to check"),
            Unbounded::TooDeep => format!("the answer would nest more than {MAX_CHECK_DEPTH} checks deep"),
        })
    })?;
    if mismatches.is_empty() {
        return Ok(value);
    }
    Err(AnswerProblems::Mismatches(
        mismatches
            .into_iter()
            .map(|mismatch| {
                (cut(&mismatch.pointer, MAX_ERROR_POINTER_BYTES), cut(&mismatch.message, MAX_ERROR_MESSAGE_BYTES))
            })
            .collect(),
    ))
}

/// The answer as JSON: surrounding whitespace and one code fence around the whole of it aside,
/// exactly as written. At most [`MAX_CHECKED_ANSWER_BYTES`] are parsed; the parse error (with its
/// line and column) is the reason otherwise.
fn parse_answer(answer: &str) -> Result<Value, String> {
    if answer.len() > MAX_CHECKED_ANSWER_BYTES {
        return Err(format!(
            "the answer is {} bytes, more than the {MAX_CHECKED_ANSWER_BYTES} bytes odek checks",
            answer.len()
        ));
    }
    let text = strip_code_fence(answer.trim());
    if text.is_empty() {
        return Err("the answer is empty, not JSON".to_owned());
    }
    serde_json::from_str(text).map_err(|err| format!("the answer is not JSON: {err}"))
}

/// The inside of one fence around the whole text (```` ``` ```` or ```` ```json ````), or the
/// text as it is.
fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else { return text };
    let Some((info, body)) = rest.split_once('\n') else { return text };
    if !(info.trim().is_empty() || info.trim().eq_ignore_ascii_case("json")) {
        return text;
    }
    match body.trim_end().strip_suffix("```") {
        Some(inside) if !inside.contains("```") => inside.trim(),
        _ => text,
    }
}

/// At most `max` bytes of `text`, cut on a character boundary, `…` marking a cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{}…", &text[..text.floor_char_boundary(max)])
}

/// The user message that sends a refused answer back: what failed, and what to do.
fn retry_message(problems: &AnswerProblems, refused: u32, retries: u32) -> String {
    let left = retries - refused + 1;
    let mut text = format!(
        "[odek: output check] Your final answer was refused: it must be one JSON value that matches the \
         required JSON Schema (retry {refused} of {retries}; {left} answer(s) left).\n"
    );
    match problems {
        AnswerProblems::NotJson(detail) | AnswerProblems::Unchecked(detail) => {
            let _ = writeln!(text, "- {detail}");
        }
        AnswerProblems::Mismatches(errors) => {
            for (pointer, message) in errors.iter().take(MAX_LISTED_ERRORS) {
                let _ = writeln!(text, "- {}", located(pointer, message));
            }
            if errors.len() > MAX_LISTED_ERRORS {
                let _ = writeln!(text, "- (more errors not shown)");
            }
        }
    }
    text.push_str("Answer again with only the corrected JSON value.");
    text
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;

    fn spec(schema: Value) -> Arc<OutputSchemaSpec> {
        Arc::new(compile_inline_schema(&schema).unwrap())
    }

    fn weather() -> Arc<OutputSchemaSpec> {
        spec(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
            "required": ["city", "temperature"],
        }))
    }

    #[test]
    fn a_matching_answer_becomes_its_compact_json() {
        let mut gate = OutputSchemaGate::new(weather(), 2);
        match gate.review("  {\"city\": \"Oslo\",\n \"temperature\": -3.5}\n") {
            Review::Accept { answer, output } => {
                assert_eq!(answer, r#"{"city":"Oslo","temperature":-3.5}"#);
                assert_eq!(output, Some(json!({"city": "Oslo", "temperature": -3.5})));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_code_fence_around_the_whole_answer_is_tolerated() {
        assert_eq!(parse_answer("```json\n{\"a\": 1}\n```"), Ok(json!({"a": 1})));
        assert_eq!(parse_answer("```\n[1]\n```  "), Ok(json!([1])));
        // Anything else around the JSON is not stripped.
        assert!(parse_answer("Here it is:\n```json\n{\"a\": 1}\n```").is_err());
        assert!(parse_answer("```python\n{\"a\": 1}\n```").is_err());
        assert!(parse_answer("```json\n{\"a\": 1}\n```\n```json\n{}\n```").is_err());
        assert_eq!(parse_answer("   "), Err("the answer is empty, not JSON".to_owned()));
    }

    #[test]
    fn refused_answers_are_retried_then_fail_the_run() {
        let mut gate = OutputSchemaGate::new(weather(), 2);
        for refused in 1..=2 {
            match gate.review(r#"{"city": 7}"#) {
                Review::Revise { feedback, failure } => {
                    assert!(feedback.contains(&format!("retry {refused} of 2")), "{feedback}");
                    assert!(feedback.contains("- at /city: 7 is not of type \"string\""), "{feedback}");
                    assert!(
                        feedback.contains("- at the top level: \"temperature\" is a required property"),
                        "{feedback}"
                    );
                    assert!(matches!(failure, RunError::InvalidOutput { attempts, .. } if attempts == refused));
                }
                other => panic!("{other:?}"),
            }
        }
        match gate.review("not json") {
            Review::Fail(error) => {
                assert_eq!(error.class(), "invalid_output");
                assert_eq!(
                    error.to_string(),
                    "final answer does not match task file output_schema after 3 attempt(s): the answer is not JSON: expected ident at line 1 column 2"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_retries_fails_at_once() {
        let mut gate = OutputSchemaGate::new(weather(), 0);
        assert!(matches!(gate.review("[]"), Review::Fail(RunError::InvalidOutput { attempts: 1, .. })));
    }

    #[test]
    fn errors_are_capped_in_count_and_bytes() {
        let properties: serde_json::Map<String, Value> =
            (0..30).map(|n| (format!("p{n}"), json!({"type": "number"}))).collect();
        let schema = spec(json!({"type": "object", "properties": properties}));
        let answer: serde_json::Map<String, Value> =
            (0..30).map(|n| (format!("p{n}"), Value::from("x".repeat(10_000)))).collect();
        let mut gate = OutputSchemaGate::new(schema, 5);
        let Review::Revise { feedback, .. } = gate.review(&Value::Object(answer).to_string()) else {
            panic!("not refused")
        };
        assert_eq!(feedback.matches("\n- at /p").count(), MAX_LISTED_ERRORS, "{feedback}");
        assert!(feedback.contains("- (more errors not shown)"));
        assert!(feedback.len() < 5000, "{}", feedback.len());
    }

    /// A 100 MB answer that is not JSON: refused by its length, without a parse, fast; the
    /// message back is short.
    #[test]
    fn a_huge_answer_is_refused_without_parsing_it() {
        let huge = "x".repeat(100 * 1024 * 1024);
        let mut gate = OutputSchemaGate::new(weather(), 1);
        let started = Instant::now();
        let Review::Revise { feedback, .. } = gate.review(&huge) else { panic!("not refused") };
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
        assert!(feedback.contains("the answer is 104857600 bytes, more than the 8388608 bytes odek checks"));
        assert!(feedback.len() < 1000);
        // Just under the cap, not JSON: the parse stops at the first bad byte.
        let big = format!("{{\"city\": \"{}\" oops", "y".repeat(MAX_CHECKED_ANSWER_BYTES - 100));
        let Review::Fail(error) = gate.review(&big) else { panic!("not failed") };
        assert!(error.to_string().contains("the answer is not JSON: expected `,` or `}`"), "{error}");
    }

    #[test]
    fn a_value_too_costly_to_check_is_refused() {
        let schema = spec(json!({"items": {"anyOf": [{"type": "string"}, {"type": "number"}]}}));
        let mut gate = OutputSchemaGate::new(schema, 1);
        let Review::Revise { feedback, .. } = gate.review(&json!(vec![1; 400_000]).to_string()) else {
            panic!("not refused")
        };
        assert!(feedback.contains("- the answer would take more than 1000000 steps to check"), "{feedback}");
    }

    #[test]
    fn invalid_schemas_name_their_origin_and_path() {
        let error = compile_inline_schema(&json!({"properties": {"a": {"type": 12}}})).unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("task file output_schema: invalid JSON Schema at /properties/a/type: "), "{text}");
    }

    #[test]
    fn schema_files_are_capped_and_regular_only() {
        let temp = tempfile::tempdir().unwrap();
        let big = temp.path().join("big.json");
        std::fs::write(&big, vec![b' '; usize::try_from(MAX_OUTPUT_SCHEMA_FILE_BYTES).unwrap() + 10]).unwrap();
        let text = load_output_schema(&big).unwrap_err().to_string();
        assert!(text.ends_with("more than the 1048576-byte limit"), "{text}");
        let fifo = temp.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let started = Instant::now();
        let text = load_output_schema(&fifo).unwrap_err().to_string();
        assert!(text.ends_with("not a regular file"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let broken = temp.path().join("broken.json");
        std::fs::write(&broken, "{").unwrap();
        let text = load_output_schema(&broken).unwrap_err().to_string();
        assert!(text.starts_with(&format!("--output-schema {}: not JSON: ", broken.display())), "{text}");
    }

    #[test]
    fn remote_refs_are_refused() {
        for schema in [json!({"$ref": "https://example.test/s.json"}), json!({"$ref": "file:///etc/passwd"})] {
            let text = compile_inline_schema(&schema).unwrap_err().to_string();
            assert!(text.starts_with("task file output_schema: invalid JSON Schema"), "{text}");
        }
    }
}
