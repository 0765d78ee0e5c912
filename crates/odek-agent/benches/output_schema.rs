//! `--output-schema` validation benchmark (issue 17): the cost of checking a final answer of
//! 1 MiB against a schema of 200 properties — the parse, the work bound and the validator, what
//! `OutputSchemaSpec::check_answer` does once per final answer. Target: ≤ 5 ms.
//!
//! Run: `cargo bench -p odek-agent --bench output_schema`
//! Reports the median and the best of 31 runs for the whole check, and for a refused answer of
//! the same size (one property of the wrong type; the errors are collected too).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use odek_agent::finish::output_schema::compile_inline_schema;
use serde_json::{Map, Value, json};

const PROPERTIES: usize = 200;
const ANSWER_BYTES: usize = 1024 * 1024;
const RUNS: usize = 31;

/// 200 properties of five shapes, all required, no others allowed.
fn schema() -> Value {
    let mut properties = Map::new();
    for n in 0..PROPERTIES {
        let property = match n % 5 {
            0 => json!({"type": "string", "maxLength": 100_000}),
            1 => json!({"type": "number", "minimum": 0}),
            2 => json!({"type": "array", "items": {"type": "string"}, "maxItems": 1000}),
            3 => {
                json!({"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string"}}, "required": ["id"]})
            }
            _ => json!({"enum": ["low", "medium", "high"]}),
        };
        properties.insert(format!("field_{n:03}"), property);
    }
    let required: Vec<String> = (0..PROPERTIES).map(|n| format!("field_{n:03}")).collect();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// An answer of about 1 MiB that matches: the strings and arrays carry the bulk.
fn answer() -> Value {
    let per_string = ANSWER_BYTES / (PROPERTIES / 5) / 2;
    let mut fields = Map::new();
    for n in 0..PROPERTIES {
        let value = match n % 5 {
            0 => Value::from("x".repeat(per_string)),
            1 => json!(n as f64 * 1.5),
            2 => Value::from(vec!["item".repeat(per_string / 40); 10]),
            3 => json!({"id": n, "tag": "t"}),
            _ => json!("medium"),
        };
        fields.insert(format!("field_{n:03}"), value);
    }
    Value::Object(fields)
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    println!("{label:<52} median {:>7.3} ms   best {:>7.3} ms", ms(samples[samples.len() / 2]), ms(samples[0]));
}

fn time_runs(mut run: impl FnMut()) -> Vec<Duration> {
    run();
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect()
}

fn main() {
    let spec = compile_inline_schema(&schema()).unwrap();
    let value = answer();
    let text = serde_json::to_string_pretty(&value).unwrap();
    println!("answer: {} bytes, schema: {PROPERTIES} properties", text.len());
    assert!(text.len() >= ANSWER_BYTES, "{}", text.len());
    assert_eq!(spec.check_answer(&text).unwrap(), value);
    report("check_answer, 1 MiB matching answer", time_runs(|| assert!(spec.check_answer(&text).is_ok())));
    let mut refused = value;
    refused["field_001"] = json!("not a number");
    let refused = serde_json::to_string_pretty(&refused).unwrap();
    report("check_answer, 1 MiB refused answer", time_runs(|| assert!(spec.check_answer(&refused).is_err())));
}
