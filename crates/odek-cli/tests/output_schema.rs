//! `--output-schema`, `--output-retries` and `--output-file` end to end (issue 17 item 4): the
//! real binary against the scripted model server. A refused answer goes back to the model and
//! costs an iteration like any other; an answer that never matches exits 5; a bad schema or a
//! refused output path stops the run before any model call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use std::os::unix::fs::PermissionsExt;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn json_lines(text: &str) -> Vec<Value> {
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn of_type<'a>(lines: &'a [Value], event_type: &str) -> Vec<&'a Value> {
    lines.iter().filter(|line| line["type"] == event_type).collect()
}

fn weather_schema(sandbox: &Sandbox) -> String {
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
        "required": ["city", "temperature"],
    });
    path_str(&sandbox.write("schema.json", &schema.to_string())).to_owned()
}

fn last_user_message(request: &odek_test_support::openai::RecordedRequest) -> String {
    let messages = messages(request);
    let user = messages.iter().rev().find(|message| message["role"] == "user").unwrap();
    user["content"].as_str().unwrap().to_owned()
}

#[test]
fn an_answer_that_fails_the_schema_twice_then_passes() {
    let server = ScriptedServer::start(vec![
        Reply::text("It is cold in Oslo.").with_usage(10, 1),
        Reply::text(r#"{"city": 7}"#).with_usage(20, 2),
        Reply::text("```json\n{\"city\": \"Oslo\",\n \"temperature\": -3}\n```").with_usage(30, 3),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let schema = weather_schema(&sandbox);
    let output = sandbox.odek(&["run", "--session", "--output-schema", &schema, "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = json_lines(&stdout(&output));
    let result = lines.last().unwrap();
    assert_eq!(result["outcome"], "success");
    assert_eq!(result["answer"], r#"{"city":"Oslo","temperature":-3}"#);
    assert_eq!(result["output"], json!({"city": "Oslo", "temperature": -3}));
    assert_eq!(result["iterations"], 3);
    assert_eq!((result["input_tokens"].as_u64(), result["output_tokens"].as_u64()), (Some(60), Some(6)));
    // Every retry is an iteration, its tokens counted.
    let tokens: Vec<(u64, u64)> = of_type(&lines, "iteration_completed")
        .iter()
        .map(|event| {
            (event["data"]["input_tokens"].as_u64().unwrap(), event["data"]["output_tokens"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(tokens, [(10, 1), (30, 3), (60, 6)]);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The schema is asked for (structured output) and told (the task).
    assert_eq!(requests[0].body["response_format"]["type"], "json_schema");
    assert_eq!(
        requests[0].body["response_format"]["json_schema"]["schema"]["required"],
        json!(["city", "temperature"])
    );
    let task = last_user_message(&requests[0]);
    assert!(task.starts_with("go\n\n[odek: output format]"), "{task}");
    let first_retry = last_user_message(&requests[1]);
    assert!(first_retry.starts_with("[odek: output check]"), "{first_retry}");
    assert!(first_retry.contains("retry 1 of 2"), "{first_retry}");
    assert!(first_retry.contains("- the answer is not JSON: expected value at line 1 column 1"), "{first_retry}");
    let second_retry = last_user_message(&requests[2]);
    assert!(second_retry.contains("- at /city: 7 is not of type \"string\""), "{second_retry}");
    assert!(second_retry.contains("- at the top level: \"temperature\" is a required property"), "{second_retry}");

    // The session holds the retry turns and the model's own last answer.
    let files = sandbox.session_files();
    let session: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let contents: Vec<(String, String)> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| {
            (message["role"].as_str().unwrap().to_owned(), message["content"].as_str().unwrap_or("").to_owned())
        })
        .collect();
    let tail: Vec<&str> = contents[contents.len() - 5..].iter().map(|(role, _)| role.as_str()).collect();
    assert_eq!(tail, ["assistant", "user", "assistant", "user", "assistant"]);
    assert!(contents.last().unwrap().1.starts_with("```json"));
}

#[test]
fn an_answer_that_never_matches_exits_5_with_invalid_output() {
    let server = ScriptedServer::start(vec![
        Reply::text("no").with_usage(10, 1),
        Reply::text("[]").with_usage(10, 1),
        Reply::text(r#"{"city": "Oslo"}"#).with_usage(10, 1),
        Reply::text("never asked for"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let schema = weather_schema(&sandbox);
    let output = sandbox.odek(&["run", "--output-schema", &schema, "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert_eq!(server.requests().len(), 3, "the first answer and two retries");
    let lines = json_lines(&stdout(&output));
    let failed = &lines[lines.len() - 2];
    assert_eq!(failed["type"], "run_failed");
    assert_eq!(failed["data"]["error_class"], "invalid_output");
    assert_eq!(failed["data"]["outcome"], "invalid_output");
    let tokens: Vec<u64> = of_type(&lines, "iteration_completed")
        .iter()
        .map(|event| event["data"]["input_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(tokens, [10, 20, 30]);
    let result = lines.last().unwrap();
    assert_eq!(result["outcome"], "invalid_output");
    assert_eq!(result["input_tokens"], 30);
    let expected = format!(
        "odek: final answer does not match --output-schema {schema} after 3 attempt(s): at the top level: \"temperature\" is a required property"
    );
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
}

#[test]
fn output_retries_zero_fails_on_the_first_refused_answer() {
    let server = ScriptedServer::start(vec![Reply::text("no"), Reply::text("never asked for")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let schema = weather_schema(&sandbox);
    let output = sandbox.odek(&["run", "--output-schema", &schema, "--output-retries", "0", "go"]);
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(stdout(&output), "");
}

#[test]
fn a_matching_answer_is_printed_as_compact_json() {
    let server = ScriptedServer::start(vec![Reply::text("\n{ \"city\" : \"Oslo\", \"temperature\": 1.5 }\n")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let schema = weather_schema(&sandbox);
    let output = sandbox.odek(&["run", "--output-schema", &schema, "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "{\"city\":\"Oslo\",\"temperature\":1.5}\n");
}

#[test]
fn an_invalid_schema_names_the_file_and_the_schema_path_before_any_model_call() {
    let server = ScriptedServer::start(vec![Reply::text("never asked for")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let schema = sandbox.write("bad.json", r#"{"properties": {"temperature": {"type": 12}}}"#);
    let output = sandbox.odek(&["run", "--output-schema", path_str(&schema), "go"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let expected =
        format!("odek: --output-schema {}: invalid JSON Schema at /properties/temperature/type: ", schema.display());
    assert!(stderr(&output).starts_with(&expected), "{}", stderr(&output));
    assert!(server.requests().is_empty(), "no model call");
    let not_json = sandbox.write("not.json", "{");
    let output = sandbox.odek(&["run", "--output-schema", path_str(&not_json), "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains(&format!("--output-schema {}: not JSON: ", not_json.display())));
    let missing = sandbox.project.join("missing.json");
    let output = sandbox.odek(&["run", "--output-schema", path_str(&missing), "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains(&format!("--output-schema {}: No such file", missing.display())));
    assert!(server.requests().is_empty());
}

#[test]
fn a_50_mb_schema_is_refused_without_reading_it_all() {
    let server = ScriptedServer::start(vec![Reply::text("never asked for")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let path = sandbox.project.join("huge.json");
    std::fs::File::create(&path).unwrap().set_len(50 * 1024 * 1024).unwrap();
    let output = sandbox.odek(&["run", "--output-schema", path_str(&path), "go"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("more than the 1048576-byte limit"), "{}", stderr(&output));
    assert!(server.requests().is_empty());
}

/// Before: nothing stopped a schema from naming a remote document (a retriever would have
/// fetched it, from the operator's machine, where the schema author chose).
#[test]
fn a_ref_to_a_url_is_refused_and_never_fetched_red() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = ScriptedServer::start(vec![Reply::text("never asked for")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let schema = json!({"properties": {"city": {"$ref": format!("http://127.0.0.1:{port}/city.json")}}});
    let path = sandbox.write("remote.json", &schema.to_string());
    let output = sandbox.odek(&["run", "--output-schema", path_str(&path), "go"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).starts_with(&format!("odek: --output-schema {}: invalid JSON Schema", path.display())),
        "{}",
        stderr(&output)
    );
    // odek has exited: a connection it made would be waiting in the backlog.
    match listener.accept() {
        Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the schema's URL was fetched: {other:?}"),
    }
    assert!(server.requests().is_empty());
}

#[test]
fn the_output_file_gets_the_answer_and_run_completed_its_digest() {
    let server = ScriptedServer::start(vec![Reply::text("the answer")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let path = sandbox.project.join("answer.txt");
    let output = sandbox.odek(&["run", "--output-file", path_str(&path), "--events-jsonl", "-", "--json", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(std::fs::read(&path).unwrap(), b"the answer");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let lines = json_lines(&stdout(&output));
    let completed = &lines[lines.len() - 2];
    assert_eq!(completed["type"], "run_completed");
    assert_eq!(completed["data"]["output_sha256"], hex(&Sha256::digest(b"the answer")));
    assert_eq!(completed["data"]["output_bytes"], 10);
}

#[test]
fn without_an_output_file_run_completed_has_no_digest() {
    let server = ScriptedServer::start(vec![Reply::text("the answer")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let output = sandbox.odek(&["run", "--events-jsonl", "-", "--json", "go"]);
    let lines = json_lines(&stdout(&output));
    let completed = &lines[lines.len() - 2];
    assert!(completed["data"].get("output_sha256").is_none(), "{completed}");
    assert!(lines.last().unwrap().get("output").is_none());
    assert!(server.requests()[0].body.get("response_format").is_none());
}

/// Before: the answer would have been written through the link, to wherever it pointed.
#[test]
fn an_output_file_at_a_symlink_is_refused_red() {
    let server = ScriptedServer::start(vec![Reply::text("the answer")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let target = sandbox.write("precious.txt", "keep me");
    let link = sandbox.project.join("answer.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let output = sandbox.odek(&["run", "--output-file", path_str(&link), "go"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        stderr(&output).trim_end(),
        format!("odek: --output-file {}: refusing to write to a symlink", link.display())
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(server.requests().is_empty(), "refused before the run");
}

#[test]
fn a_subagent_task_file_may_carry_an_output_schema() {
    let server = ScriptedServer::start(vec![Reply::text("nope"), Reply::text(r#"{"done": true}"#)]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    let task = json!({"goal": "report", "output_schema": {"type": "object", "required": ["done"]}});
    let path = sandbox.write("task.json", &task.to_string());
    let output = sandbox.odek(&["subagent", "--task", path_str(&path)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(result["summary"], r#"{"done":true}"#);
    assert_eq!(server.requests().len(), 2);
    let bad = json!({"goal": "report", "output_schema": {"type": 12}});
    let path = sandbox.write("bad-task.json", &bad.to_string());
    let output = sandbox.odek(&["subagent", "--task", path_str(&path)]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(stdout(&output).contains("task file output_schema: invalid JSON Schema"), "{}", stdout(&output));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
