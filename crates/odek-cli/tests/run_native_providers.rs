//! \[beyond\] The native wire APIs through the binary (issue 18): multi-iteration tool runs on
//! OpenAI Responses and Anthropic Messages, streamed and not, with reasoning carried across
//! turns, cache tokens in budgets, retries, survival mode and record → replay.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::anthropic::{self, Usage as AnthropicUsage};
use odek_test_support::openai::{Reply, ScriptedServer};
use odek_test_support::responses;
use run_support::*;
use serde_json::{Value, json};

/// The `call_id`s of the tool-call events of `kind`, in order.
fn call_ids(events: &[Value], kind: &str) -> Vec<String> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .map(|event| event["data"]["call_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_responses_run_calls_tools_in_parallel_and_carries_its_reasoning_streamed_and_not() {
    for stream in [false, true] {
        let first = responses::Answer::new()
            .with_reasoning("rs_1", &["plan the reads"], "gAAAA-encrypted-reasoning-1")
            .with_function_call("call_a", "read_file", r#"{"path":"a.txt"}"#)
            .with_function_call("call_b", "read_file", r#"{"path":"b.txt"}"#)
            .with_usage(120, 30, 100);
        let second = responses::Answer::text("both files read").with_usage(200, 10, 150);
        let replies = if stream { vec![first.sse(), second.sse()] } else { vec![first.json(), second.json()] };
        let server = ScriptedServer::start(replies);
        let sandbox = Sandbox::new();
        sandbox.configure(&server.base_url(), false);
        sandbox.write("a.txt", "alpha\n");
        sandbox.write("b.txt", "beta\n");
        let mut args = vec!["run", "--provider", "openai-responses", "--thinking", "high", "--events-jsonl", "e.jsonl"];
        if stream {
            args.push("--stream");
        }
        args.extend(["read", "both"]);
        let output = sandbox.odek(&args);
        assert_eq!(output.status.code(), Some(0), "stream {stream}: {}", stderr(&output));
        assert_eq!(stdout(&output), "both files read\n");

        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        for request in &requests {
            assert_eq!(request.path, "/v1/responses");
            assert_eq!(request.header("authorization"), Some(format!("Bearer {API_KEY}").as_str()));
            assert_eq!(request.body["store"], false);
            assert_eq!(request.body["reasoning"]["effort"], "high");
            assert_eq!(request.body["include"], json!(["reasoning.encrypted_content"]));
        }
        let input = requests[1].body["input"].as_array().unwrap();
        let of_type = |kind: &str| input.iter().filter(|item| item["type"] == kind).collect::<Vec<_>>();
        let reasoning = of_type("reasoning");
        assert_eq!(reasoning.len(), 1);
        assert_eq!(
            (&reasoning[0]["id"], &reasoning[0]["encrypted_content"]),
            (&json!("rs_1"), &json!("gAAAA-encrypted-reasoning-1"))
        );
        let calls: Vec<&Value> = of_type("function_call").into_iter().map(|item| &item["call_id"]).collect();
        assert_eq!(calls, [&json!("call_a"), &json!("call_b")]);
        let outputs = of_type("function_call_output");
        assert_eq!(
            outputs.iter().map(|item| &item["call_id"]).collect::<Vec<_>>(),
            [&json!("call_a"), &json!("call_b")]
        );
        assert!(outputs[0]["output"].as_str().unwrap().contains("alpha"), "{outputs:?}");

        let events = events(&sandbox.project.join("e.jsonl"));
        assert_eq!(call_ids(&events, "tool_call_started"), ["call_a", "call_b"]);
        assert_eq!(call_ids(&events, "tool_call_completed"), ["call_a", "call_b"]);
        let completed = events.iter().find(|event| event["type"] == "run_completed").unwrap();
        assert_eq!(completed["data"]["input_tokens"], 320, "cached tokens are part of the input count");
    }
}

#[test]
fn a_responses_context_length_error_enters_survival_mode() {
    let server = ScriptedServer::start(vec![
        responses::Answer::new().with_function_call("call_1", "read_file", r#"{"path":"big.txt"}"#).json(),
        responses::context_length_exceeded(),
        responses::Answer::text("answered after the trim").json(),
    ]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("big.txt", &"lorem ipsum ".repeat(2000));
    let output = sandbox.odek(&["run", "--provider", "openai-responses", "--events-jsonl", "e.jsonl", "read", "it"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "answered after the trim\n");
    let events = events(&sandbox.project.join("e.jsonl"));
    let trimmed = events.iter().find(|event| event["type"] == "context_trimmed").unwrap();
    assert_eq!(trimmed["data"]["mode"], "survival", "{trimmed}");
}

const ANTHROPIC_KEY: &str = "sk-ant-test-0123456789abcdef";

/// An Anthropic answer that thinks, then reads `a.txt` and `b.txt` in parallel.
fn thinking_reads(stream: bool, usage: AnthropicUsage) -> Reply {
    let blocks = vec![
        anthropic::thinking("I should read both files.", "sig-EqQBCgIYAhIM+/=="),
        anthropic::redacted_thinking("redacted-opaque-data=="),
        anthropic::text("Reading."),
        anthropic::tool_use("toolu_01A", "read_file", json!({"path": "a.txt"})),
        anthropic::tool_use("toolu_01B", "read_file", json!({"path": "b.txt"})),
    ];
    if stream { anthropic::stream(blocks, usage) } else { anthropic::message(blocks, usage) }
}

fn anthropic_text(stream: bool, text: &str, usage: AnthropicUsage) -> Reply {
    let blocks = vec![anthropic::text(text)];
    if stream { anthropic::stream(blocks, usage) } else { anthropic::message(blocks, usage) }
}

fn anthropic_sandbox(server: &ScriptedServer) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    sandbox.write("b.txt", "beta\n");
    sandbox
}

fn run_anthropic(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    let mut all = vec!["run", "--provider", "anthropic"];
    all.extend(args);
    let output = sandbox.command(&all).env("ANTHROPIC_API_KEY", ANTHROPIC_KEY).output().unwrap();
    sandbox.check_events(&all, &output);
    output
}

#[test]
fn an_anthropic_run_keeps_signed_thinking_caches_its_prefix_and_pairs_parallel_calls_streamed_and_not() {
    for stream in [false, true] {
        let server = ScriptedServer::start(vec![
            thinking_reads(stream, AnthropicUsage::new(50, 20).with_cache(1000, 0)),
            anthropic_text(stream, "both read", AnthropicUsage::new(60, 5).with_cache(0, 1000)),
        ]);
        let sandbox = anthropic_sandbox(&server);
        let mut args = vec!["--thinking", "medium", "--events-jsonl", "e.jsonl"];
        if stream {
            args.push("--stream");
        }
        args.extend(["read", "both"]);
        let output = run_anthropic(&sandbox, &args);
        assert_eq!(output.status.code(), Some(0), "stream {stream}: {}", stderr(&output));
        assert_eq!(stdout(&output), "both read\n");

        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        for request in &requests {
            assert_eq!(request.path, "/v1/messages");
            assert_eq!(request.header("x-api-key"), Some(ANTHROPIC_KEY));
            assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(request.header("authorization"), None, "no Bearer header, and never the ODEK_API_KEY");
            assert_eq!(request.body["thinking"], json!({"type": "enabled", "budget_tokens": 8192}));
            // Cache breakpoints: the system prompt, the tool list, the latest turn.
            let system = request.body["system"].as_array().unwrap();
            assert_eq!(system.last().unwrap()["cache_control"], json!({"type": "ephemeral"}));
            let tools = request.body["tools"].as_array().unwrap();
            assert_eq!(tools.last().unwrap()["cache_control"], json!({"type": "ephemeral"}));
            let last_turn = request.body["messages"].as_array().unwrap().last().unwrap();
            assert_eq!(
                last_turn["content"].as_array().unwrap().last().unwrap()["cache_control"],
                json!({"type": "ephemeral"})
            );
        }
        // The signed thinking goes back byte for byte, the redacted block opaque, before the text
        // and the calls; both results answer in one user turn.
        let messages = requests[1].body["messages"].as_array().unwrap();
        let assistant = &messages[messages.len() - 2];
        assert_eq!(assistant["role"], "assistant");
        let blocks = assistant["content"].as_array().unwrap();
        assert_eq!(
            blocks[0],
            json!({"type": "thinking", "thinking": "I should read both files.", "signature": "sig-EqQBCgIYAhIM+/=="})
        );
        assert_eq!(blocks[1], json!({"type": "redacted_thinking", "data": "redacted-opaque-data=="}));
        assert_eq!(blocks[2]["type"], "text");
        let uses: Vec<&Value> =
            blocks.iter().filter(|block| block["type"] == "tool_use").map(|block| &block["id"]).collect();
        assert_eq!(uses, [&json!("toolu_01A"), &json!("toolu_01B")]);
        let results = messages.last().unwrap()["content"].as_array().unwrap();
        let answered: Vec<&Value> = results.iter().map(|block| &block["tool_use_id"]).collect();
        assert_eq!(answered, [&json!("toolu_01A"), &json!("toolu_01B")]);

        let events = events(&sandbox.project.join("e.jsonl"));
        assert_eq!(call_ids(&events, "tool_call_started"), ["toolu_01A", "toolu_01B"]);
        assert_eq!(call_ids(&events, "tool_call_completed"), ["toolu_01A", "toolu_01B"]);
        let completed = events.iter().find(|event| event["type"] == "run_completed").unwrap();
        assert_eq!(completed["data"]["input_tokens"], 50 + 1000 + 60 + 1000, "cache reads and writes are input");
        assert_eq!(completed["data"]["output_tokens"], 25);
    }
}

/// `--no-prompt-caching` holds for the whole run: the parent's requests and a delegated
/// child's carry no breakpoint; with caching on, both do.
#[test]
fn no_prompt_caching_sends_no_breakpoint_from_the_run_or_its_children() {
    for caching in [false, true] {
        let delegate = anthropic::tool_use("toolu_d1", "delegate_tasks", json!({"tasks": [{"goal": "say hi"}]}));
        let server = ScriptedServer::start(vec![
            anthropic::message(vec![delegate], AnthropicUsage::new(5, 1)),
            anthropic_text(false, "hi from the child", AnthropicUsage::new(5, 1)),
            anthropic_text(false, "done", AnthropicUsage::new(5, 1)),
        ]);
        let sandbox = anthropic_sandbox(&server);
        let args: &[&str] = if caching { &["go"] } else { &["--no-prompt-caching", "go"] };
        let output = run_anthropic(&sandbox, args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stdout(&output), "done\n");
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        assert!(requests[1].raw_body.contains("say hi"), "the child's request: {}", requests[1].raw_body);
        for request in &requests {
            assert_eq!(request.raw_body.contains("cache_control"), caching, "{}", request.raw_body);
        }
    }
}

#[test]
fn cache_tokens_are_priced_and_the_cost_budget_stops_at_the_right_response() {
    // Per million: input $1, output $1, cache writes $2, cache reads $0.10. The first answer
    // costs $0.201 (mostly its cache write), the second $0.011 (its cache read): $0.212 in all,
    // over the $0.21 cap. At the input price for every token both would stay under it.
    let server = ScriptedServer::start(vec![
        thinking_reads(false, AnthropicUsage::new(1000, 0).with_cache(100_000, 0)),
        thinking_reads(false, AnthropicUsage::new(1000, 0).with_cache(0, 100_000)),
        anthropic_text(false, "never", AnthropicUsage::new(1, 1)),
    ]);
    let sandbox = anthropic_sandbox(&server);
    sandbox.global_config(&json!({
        "base_url": server.base_url(),
        "model": "claude-test",
        "limits": {"max_cost_usd": 0.21, "model_prices": {"claude-test": {
            "input_cost_per_million_usd": 1.0, "output_cost_per_million_usd": 1.0,
            "cache_write_cost_per_million_usd": 2.0, "cache_read_cost_per_million_usd": 0.1}}},
    }));
    let output = run_anthropic(&sandbox, &["go"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("execution budget exceeded: cost_usd observed $0.212000 (limit $0.210000)"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.requests().len(), 2, "it stopped at the second response");

    // The input-token budget counts cache tokens as the vendor bills them.
    let server = ScriptedServer::start(vec![
        thinking_reads(false, AnthropicUsage::new(10, 0).with_cache(0, 5000)),
        anthropic_text(false, "never", AnthropicUsage::new(1, 1)),
    ]);
    let sandbox = anthropic_sandbox(&server);
    let output = run_anthropic(&sandbox, &["--max-input-tokens", "5000", "go"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(stderr(&output).contains("input_tokens observed 5010 (limit 5000)"), "{}", stderr(&output));
}

#[test]
fn an_overloaded_anthropic_is_retried_then_answers() {
    let server = ScriptedServer::start(vec![
        anthropic::error(529, "overloaded_error", "Overloaded"),
        anthropic_text(true, "made it", AnthropicUsage::new(5, 1)),
    ]);
    let sandbox = anthropic_sandbox(&server);
    let output = run_anthropic(&sandbox, &["--stream", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "made it\n");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn an_anthropic_prompt_too_long_enters_survival_mode() {
    let server = ScriptedServer::start(vec![
        thinking_reads(false, AnthropicUsage::new(5, 1)),
        anthropic::error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
        anthropic_text(false, "answered after the trim", AnthropicUsage::new(5, 1)),
    ]);
    let sandbox = anthropic_sandbox(&server);
    let output = run_anthropic(&sandbox, &["--events-jsonl", "e.jsonl", "read", "both"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "answered after the trim\n");
    let events = events(&sandbox.project.join("e.jsonl"));
    let trimmed = events.iter().find(|event| event["type"] == "context_trimmed").unwrap();
    assert_eq!(trimmed["data"]["mode"], "survival", "{trimmed}");
}

#[test]
fn an_overloaded_anthropic_falls_back_to_a_responses_model() {
    let primary = ScriptedServer::start(vec![anthropic::error(529, "overloaded_error", "Overloaded"); 4]);
    let backup = ScriptedServer::start(vec![responses::Answer::text("from the backup").sse()]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "model": "claude-test",
        "providers": {"backup": {"kind": "openai-responses", "base_url": backup.base_url()}},
        "fallback_models": ["backup/gpt-test"],
        "base_url": primary.base_url(),
    }));
    let output = run_anthropic(&sandbox, &["--stream", "--events-jsonl", "e.jsonl", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "from the backup\n");
    assert_eq!(primary.requests().len(), 4, "the first attempt and three retries");
    assert_eq!(backup.requests()[0].body["model"], "gpt-test");
    let events = events(&sandbox.project.join("e.jsonl"));
    let fallback = events.iter().find(|event| event["type"] == "provider_fallback").unwrap();
    assert_eq!(fallback["data"]["error_class"], "provider_unavailable");
    assert_eq!(fallback["data"]["from_provider"], "anthropic");
    assert!(stderr(&output).contains("anthropic/claude-test failed before answering"), "{}", stderr(&output));
}

#[test]
fn a_recorded_anthropic_run_replays_to_the_same_transcript() {
    let server = ScriptedServer::start(vec![
        thinking_reads(true, AnthropicUsage::new(50, 20).with_cache(1000, 0)),
        anthropic_text(true, "both read", AnthropicUsage::new(60, 5).with_cache(0, 1000)),
    ]);
    let sandbox = anthropic_sandbox(&server);
    let output = run_anthropic(
        &sandbox,
        &["--stream", "--thinking", "low", "--session", "--record", "rec.json", "read", "both"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = sandbox.odek(&["run", "--provider", "replay", "--replay", "rec.json", "--session", "read", "both"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "both read\n");
    let sessions = sandbox.session_files();
    assert_eq!(sessions.len(), 2);
    let transcript = |path: &std::path::Path| -> Value {
        let session: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        session["messages"].clone()
    };
    // What the model said is the same message for message; the tool results differ only in the
    // untrusted wrappers' per-run nonces.
    let shape = |messages: &Value| -> Vec<Value> {
        messages
            .as_array()
            .unwrap()
            .iter()
            .map(|message| match message["role"].as_str() {
                Some("assistant") => message.clone(),
                _ => json!({"role": message["role"], "tool_call_id": message["tool_call_id"]}),
            })
            .collect()
    };
    let (live, replayed) = (transcript(&sessions[0]), transcript(&sessions[1]));
    assert_eq!(shape(&live), shape(&replayed));
    assert_eq!(shape(&live).len(), 6);
    let assistant = live.as_array().unwrap().iter().find(|message| message["role"] == "assistant").unwrap();
    assert_eq!(assistant["reasoning_blocks"][0]["signature"], "sig-EqQBCgIYAhIM+/==", "{assistant}");
    let recording = std::fs::read_to_string(sandbox.project.join("rec.json")).unwrap();
    assert!(!recording.contains(ANTHROPIC_KEY) && !recording.contains(API_KEY));
}

/// The ids of `kind` blocks (`id` of `tool_use`, `tool_use_id` of `tool_result`) in a request's
/// messages, in order.
fn anthropic_ids(request: &Value, kind: &str, field: &str) -> Vec<String> {
    let messages = request["messages"].as_array().unwrap();
    messages
        .iter()
        .filter_map(|message| message["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == kind)
        .map(|block| block[field].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts `ids` has no repeats.
fn assert_distinct(ids: &[String], what: &str) {
    let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "{what}: {ids:?}");
}

/// A provider that repeats a tool-call id: before, both calls were answered under it — two
/// `tool_result` blocks for one `tool_use_id`, which the real API refuses — and their events
/// shared a `call_id`. Now the second call gets an id of its own, in history, in the request
/// sent back and in the events; the model reads each call's outcome under its own id.
#[test]
fn a_repeated_anthropic_tool_use_id_gets_one_result_per_call_red() {
    for stream in [false, true] {
        let blocks = vec![
            anthropic::tool_use("toolu_dup", "read_file", json!({"path": "a.txt"})),
            anthropic::tool_use("toolu_dup", "read_file", json!({"path": "b.txt"})),
        ];
        let usage = AnthropicUsage::new(5, 1);
        let reads = if stream { anthropic::stream(blocks, usage) } else { anthropic::message(blocks, usage) };
        let server = ScriptedServer::start(vec![reads, anthropic_text(stream, "both read", usage)]);
        let sandbox = anthropic_sandbox(&server);
        let mut args = vec!["--events-jsonl", "e.jsonl"];
        if stream {
            args.push("--stream");
        }
        args.extend(["read", "both"]);
        let output = run_anthropic(&sandbox, &args);
        assert_eq!(output.status.code(), Some(0), "stream {stream}: {}", stderr(&output));

        let sent = &server.requests()[1].body;
        let uses = anthropic_ids(sent, "tool_use", "id");
        let results = anthropic_ids(sent, "tool_result", "tool_use_id");
        assert_distinct(&uses, "tool_use ids");
        assert_eq!(results, uses, "one result per call, in order");
        assert_eq!(uses[0], "toolu_dup");
        let contents: Vec<&str> = sent["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|block| block["content"].as_str().unwrap())
            .collect();
        assert!(contents[0].contains("alpha") && contents[1].contains("beta"), "{contents:?}");

        let events = events(&sandbox.project.join("e.jsonl"));
        let started = call_ids(&events, "tool_call_started");
        assert_distinct(&started, "started call_ids");
        assert_eq!(call_ids(&events, "tool_call_completed"), started);
        assert_eq!(started, uses);
    }
}

/// As [`a_repeated_anthropic_tool_use_id_gets_one_result_per_call_red`], for a Responses
/// `call_id` repeated in one answer and again in the next.
#[test]
fn a_repeated_responses_call_id_gets_one_output_per_call_red() {
    let first = responses::Answer::new()
        .with_function_call("call_dup", "read_file", r#"{"path":"a.txt"}"#)
        .with_function_call("call_dup", "read_file", r#"{"path":"b.txt"}"#);
    let second = responses::Answer::new().with_function_call("call_dup", "read_file", r#"{"path":"a.txt"}"#);
    let server = ScriptedServer::start(vec![first.sse(), second.sse(), responses::Answer::text("done").sse()]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write("a.txt", "alpha\n");
    sandbox.write("b.txt", "beta\n");
    let args = ["run", "--provider", "openai-responses", "--stream", "--events-jsonl", "e.jsonl", "read", "both"];
    let output = sandbox.odek(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let input = server.requests()[2].body["input"].as_array().unwrap().clone();
    let ids = |kind: &str| -> Vec<String> {
        input
            .iter()
            .filter(|item| item["type"] == kind)
            .map(|item| item["call_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let calls = ids("function_call");
    assert_eq!(calls.len(), 3);
    assert_distinct(&calls, "call_ids");
    assert_eq!(ids("function_call_output"), calls, "one output per call, in order");
    let events = events(&sandbox.project.join("e.jsonl"));
    assert_eq!(call_ids(&events, "tool_call_started"), calls);
    assert_eq!(call_ids(&events, "tool_call_completed"), calls);
}
