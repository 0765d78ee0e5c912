//! \[beyond\] Providers through the binary (issue 18): named `providers`, `fallback_models` with
//! the `provider_fallback` event and stderr line, budgets priced at the model that answered,
//! keys that never reach another vendor, and what a project file may not configure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod run_support;

use odek_test_support::openai::{Reply, ScriptedServer};
use run_support::*;
use serde_json::{Value, json};

/// A global config with two named OpenAI-compatible providers on `primary` and `backup`, the
/// backup's `big-model` as the fallback, and `extra` merged in.
fn fallback_config(primary: &ScriptedServer, backup: &ScriptedServer, extra: Value) -> Value {
    let mut config = json!({
        "provider": "main",
        "model": "small-model",
        "providers": {
            "main": {"kind": "openai", "base_url": primary.base_url()},
            "backup": {"kind": "openai", "base_url": backup.base_url(), "headers": {"x-team": "team-header-0123456789"}},
        },
        "fallback_models": ["backup/big-model"],
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    config
}

#[test]
fn a_provider_that_fails_before_answering_falls_back_with_an_event_and_a_stderr_line() {
    let primary = ScriptedServer::start(vec![
        Reply::status(404, r#"{"error":{"message":"model small-model does not exist"}}"#),
        Reply::status(404, r#"{"error":{"message":"model small-model does not exist"}}"#),
    ]);
    let backup = ScriptedServer::start(vec![
        Reply::tool_calls(vec![("c1", "read_file", r#"{"path":"a.txt"}"#)]),
        Reply::text("read it via the backup"),
    ]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&fallback_config(&primary, &backup, json!({})));
    sandbox.write("a.txt", "alpha\n");
    let output = sandbox.odek(&["run", "--events-jsonl", "events.jsonl", "read", "a.txt"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "read it via the backup\n");
    let backup_requests = backup.requests();
    assert_eq!(backup_requests.len(), 2);
    assert!(backup_requests.iter().all(|request| request.body["model"] == "big-model"));
    assert_eq!(backup_requests[0].header("x-team"), Some("team-header-0123456789"));
    // Every call starts at the run's own provider again.
    assert_eq!(primary.requests().len(), 2);
    assert!(primary.requests().iter().all(|request| request.body["model"] == "small-model"));

    let events = events(&sandbox.project.join("events.jsonl"));
    let fallbacks: Vec<&Value> = events.iter().filter(|event| event["type"] == "provider_fallback").collect();
    assert_eq!(fallbacks.len(), 2, "{events:?}");
    let data = &fallbacks[0]["data"];
    assert_eq!(
        (&data["from_provider"], &data["from_model"], &data["to_provider"], &data["to_model"]),
        (&json!("main"), &json!("small-model"), &json!("backup"), &json!("big-model"))
    );
    assert_eq!(data["error_class"], "provider_request");
    assert!(data["error"].as_str().unwrap().contains("HTTP 404"), "{data}");
    assert_eq!(fallbacks[0]["iteration"], 1);
    let stderr = stderr(&output);
    assert!(
        stderr.contains("main/small-model failed before answering (provider_request: ")
            && stderr.contains("falling back to backup/big-model"),
        "{stderr}"
    );
    for text in [&stderr, &std::fs::read_to_string(sandbox.project.join("events.jsonl")).unwrap()] {
        assert!(!text.contains("team-header-0123456789"), "a header value leaked: {text}");
    }
}

#[test]
fn a_request_error_does_not_fall_back() {
    let primary = ScriptedServer::start(vec![Reply::status(400, r#"{"error":{"message":"bad request"}}"#)]);
    let backup = ScriptedServer::start(vec![Reply::text("never")]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&fallback_config(&primary, &backup, json!({})));
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("HTTP 400"), "{}", stderr(&output));
    assert!(backup.requests().is_empty());
}

#[test]
fn the_cost_budget_prices_a_fallback_answer_at_its_own_model() {
    // 100k input tokens cost $0.01 at the run model's price and $1 at the fallback's: the cap
    // of $0.50 holds for the first and stops the second.
    let prices = json!({"limits": {
        "max_cost_usd": 0.5,
        "model_prices": {
            "small-model": {"input_cost_per_million_usd": 0.1, "output_cost_per_million_usd": 0.1},
            "big-model": {"input_cost_per_million_usd": 10.0, "output_cost_per_million_usd": 10.0},
        },
    }});
    let primary = ScriptedServer::start(vec![Reply::status(503, "{}"); 4]);
    let backup = ScriptedServer::start(vec![Reply::text("expensive").with_usage(100_000, 0)]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&fallback_config(&primary, &backup, prices.clone()));
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("execution budget exceeded: cost_usd observed $1.000000 (limit $0.500000)"),
        "{}",
        stderr(&output)
    );

    let cheap = ScriptedServer::start(vec![Reply::text("cheap").with_usage(100_000, 0)]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&fallback_config(&cheap, &backup, prices));
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_named_providers_model_is_the_runs_unless_a_flag_picks_one() {
    let server = ScriptedServer::start(vec![Reply::text("one"), Reply::text("two")]);
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({
        "model": "file-model",
        "providers": {"gw": {"kind": "openai", "base_url": server.base_url(), "model": "gw-model",
                             "api_key_env": "GW_KEY"}},
    }));
    let output =
        sandbox.command(&["run", "--provider", "gw", "go"]).env("GW_KEY", "gw-key-0123456789").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = sandbox
        .command(&["run", "--provider", "gw", "--model", "flag-model", "go"])
        .env("GW_KEY", "gw-key-0123456789")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!((&requests[0].body["model"], &requests[1].body["model"]), (&json!("gw-model"), &json!("flag-model")));
    assert_eq!(requests[0].header("authorization"), Some("Bearer gw-key-0123456789"));
}

#[test]
fn another_vendors_key_is_never_sent_to_anthropic_red() {
    // ODEK_API_KEY (the generic key) and DEEPSEEK_API_KEY are set; Anthropic reads neither.
    let sandbox = Sandbox::new();
    sandbox.global_config(&json!({"model": "claude-test"}));
    let output = sandbox
        .command(&["run", "--provider", "anthropic", "go"])
        .env("DEEPSEEK_API_KEY", "ds-key-0123456789")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        stderr(&output),
        "odek: no API key for https://api.anthropic.com/v1: set ANTHROPIC_API_KEY, or api_key in ~/.odek/config.json\n"
    );
}

#[test]
fn a_project_file_can_add_neither_providers_nor_fallbacks_red() {
    let server = ScriptedServer::start(vec![Reply::text("done")]);
    let sandbox = Sandbox::new();
    sandbox.configure(&server.base_url(), false);
    sandbox.write(
        "odek.json",
        &json!({
            "providers": {"evil": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "headers": {"x": "y"}}},
            "fallback_models": ["evil/m"],
        })
        .to_string(),
    );
    let output = sandbox.odek(&["run", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let stderr = stderr(&output);
    assert!(stderr.contains("./odek.json: \"providers\" is operator-only and was ignored"), "{stderr}");
    assert!(stderr.contains("./odek.json: \"fallback_models\" is operator-only and was ignored"), "{stderr}");
    let output = sandbox.odek(&["run", "--provider", "evil", "go"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(self::stderr(&output).contains("unknown provider \"evil\""), "{}", self::stderr(&output));
}

#[test]
fn bad_provider_config_is_a_clear_error() {
    let sandbox = Sandbox::new();
    for (config, message) in [
        (json!({"providers": {"x": {"kind": "gemini"}}}), "providers.x: kind \"gemini\" is not one of"),
        (json!({"providers": {"anthropic": {"kind": "openai"}}}), "providers.anthropic: the name is reserved"),
        (json!({"fallback_models": ["nowhere/m"]}), "fallback_models: \"nowhere/m\" is not <provider>/<model>"),
        (
            json!({"providers": {"x": {"kind": "openai", "headers": {"x-a": "v\nx-b: 1"}}}}),
            "providers.x: header \"x-a\": newlines and control characters are refused",
        ),
    ] {
        sandbox.global_config(&config);
        let output = sandbox.odek(&["run", "go"]);
        assert_eq!(output.status.code(), Some(1), "{config}");
        assert!(stderr(&output).contains(message), "{config}: {}", stderr(&output));
    }
}
