//! `--conformance-suite`: what the official conformance suite calls by name is there over stdio
//! too (the suite itself runs it over HTTP in `odek-cli/tests/mcp_conformance_server.rs`), and
//! without the flag the fixture announces and lists exactly what it did before.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::json;
use support::Fixture;

#[test]
fn the_suite_adds_its_names_and_capabilities_only_when_asked() {
    let mut plain = Fixture::spawn(&["--conformant"]);
    let capabilities = plain.initialize()["capabilities"].clone();
    assert_eq!(capabilities, json!({"tools": {"listChanged": true}, "resources": {"listChanged": false}}));

    let mut suite = Fixture::spawn(&["--conformant", "--conformance-suite"]);
    let initialize = suite.request(
        "initialize",
        Some(json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}}, "clientInfo": {"name": "t", "version": "0"}})),
    );
    let result = &initialize["result"];
    assert_eq!(result["protocolVersion"], json!("2025-11-25"));
    assert_eq!(result["capabilities"]["resources"], json!({"subscribe": true, "listChanged": false}));
    for capability in ["prompts", "completions", "logging"] {
        assert!(result["capabilities"].get(capability).is_some(), "{capability}: {result}");
    }
    let tools = suite.request("tools/list", None)["result"]["tools"].clone();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"test_simple_text") && names.contains(&"json_schema_2020_12_tool")
    );

    let audio = suite.call("test_audio_content", json!({}));
    assert_eq!(audio["result"]["content"][0]["mimeType"], json!("audio/wav"));
    let read = suite.request("resources/read", Some(json!({"uri": "test://template/123/data"})));
    assert!(read["result"]["contents"][0]["text"].as_str().unwrap().contains("123"), "{read}");
    let prompt = suite.request(
        "prompts/get",
        Some(json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "one", "arg2": "two"}})),
    );
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], json!("Prompt with arguments: arg1=one, arg2=two"));

    let id = suite.send_request("tools/call", Some(json!({"name": "test_sampling", "arguments": {"prompt": "hi"}})));
    let request = suite.recv();
    assert_eq!(request["method"], json!("sampling/createMessage"));
    suite.send(&json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}}));
    assert_eq!(suite.wait_response(id).0["result"]["content"][0]["text"], json!("m answered: hello"));
    let elicit = suite.call("test_elicitation", json!({"message": "who?"}));
    assert_eq!(elicit["result"]["isError"], json!(true), "the client declared no elicitation: {elicit}");
}
