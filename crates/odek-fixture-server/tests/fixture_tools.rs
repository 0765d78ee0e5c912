//! The fixture binary's tools, one test per tool or behaviour: contract reference tools, then
//! the misbehaviour tools (streamed lines, exits, notifications, runtime tool changes).

// Test helpers outside #[test] functions may panic freely too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::{Fixture, Line};

fn texts(response: &Value) -> Vec<String> {
    response["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == json!("text"))
        .map(|item| item["text"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn echo_returns_its_text_and_tolerates_unknown_arguments() {
    let mut fixture = Fixture::started(&[]);
    assert_eq!(fixture.call_text("echo", json!({"text":"héllo","extra":{"x":1}})), "héllo");
    let missing = fixture.call("echo", json!({}));
    assert_eq!(missing["result"]["isError"], json!(true));
    let unknown = fixture.call("no_such_tool", json!({}));
    assert_eq!(
        unknown["result"],
        json!({"content":[{"type":"text","text":"unknown tool \"no_such_tool\""}],"isError":true})
    );
}

#[test]
fn large_result_defaults_and_splits_over_items() {
    let mut fixture = Fixture::started(&[]);
    let default = fixture.call("large_result", json!({}));
    assert_eq!(texts(&default), ["x".repeat(5000)]);
    let split = fixture.call("large_result", json!({"chars":10,"char":"é","items":3}));
    assert_eq!(texts(&split), ["éééé", "ééé", "ééé"]);
}

#[test]
fn slow_sleeps_and_does_not_block_other_calls() {
    let mut fixture = Fixture::started(&[]);
    let slow = fixture.send_request("tools/call", Some(json!({"name":"slow","arguments":{"ms":60000}})));
    assert_eq!(fixture.call_text("echo", json!({"text":"fast"})), "fast");
    fixture.send(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":slow,"reason":"timeout"}}),
    );
    assert_eq!(fixture.stderr_line(), format!("odek-fixture-server: slow: request {slow} cancelled (timeout)"));
    assert_eq!(fixture.call_text("slow", json!({"ms":1})), "slept 1 ms");
}

#[test]
fn slow_sends_progress_with_the_callers_token() {
    let mut fixture = Fixture::started(&[]);
    let id = fixture.send_request(
        "tools/call",
        Some(json!({"name":"slow","arguments":{"ms":300,"progress_every_ms":50},"_meta":{"progressToken":"tok-7"}})),
    );
    let (response, before) = fixture.wait_response(id);
    assert_eq!(texts(&response), ["slept 300 ms"]);
    assert!(!before.is_empty(), "no progress notifications");
    let mut last = 0.0;
    for notification in &before {
        assert_eq!(notification["method"], json!("notifications/progress"));
        assert_eq!(notification["params"]["progressToken"], json!("tok-7"));
        assert_eq!(notification["params"]["total"], json!(300.0));
        let progress = notification["params"]["progress"].as_f64().unwrap();
        assert!(progress > last && progress < 300.0);
        last = progress;
    }
}

#[test]
fn slow_with_honor_cancel_stops_without_replying() {
    let mut fixture = Fixture::started(&[]);
    let slow =
        fixture.send_request("tools/call", Some(json!({"name":"slow","arguments":{"ms":60000,"honor_cancel":true}})));
    fixture.send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":slow}}));
    assert_eq!(fixture.stderr_line(), format!("odek-fixture-server: slow: request {slow} cancelled ()"));
    // count_calls answers next; nothing for the cancelled call came first.
    assert_eq!(fixture.call_text("count_calls", json!({})), "2");
}

#[test]
fn error_result_and_rpc_error() {
    let mut fixture = Fixture::started(&[]);
    assert_eq!(
        fixture.call("error_result", json!({}))["result"],
        json!({"content":[{"type":"text","text":"the tool failed"}],"isError":true})
    );
    assert_eq!(
        fixture.call("error_result", json!({"message":"custom"}))["result"]["content"][0]["text"],
        json!("custom")
    );
    assert_eq!(fixture.call("rpc_error", json!({}))["error"], json!({"code":-32000,"message":"rpc failed"}));
    assert_eq!(
        fixture.call("rpc_error", json!({"code":-32099,"message":"x"}))["error"],
        json!({"code":-32099,"message":"x"})
    );
}

#[test]
fn multi_item_mixes_text_and_an_image() {
    let mut fixture = Fixture::started(&[]);
    let response = fixture.call("multi_item", json!({"items":["a","b","c"]}));
    let content = response["result"]["content"].as_array().unwrap();
    let kinds: Vec<&str> = content.iter().map(|item| item["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "image", "text", "text"]);
    assert_eq!(content[1]["mimeType"], json!("image/png"));
    assert_eq!(texts(&response), ["a", "b", "c"]);
}

#[test]
fn structured_result_declares_its_output_schema_and_returns_the_value() {
    let mut fixture = Fixture::started(&[]);
    let listed = fixture.request("tools/list", None);
    let tool = listed["result"]["tools"].as_array().unwrap().iter().find(|tool| tool["name"] == "structured_result");
    assert_eq!(tool.unwrap()["outputSchema"]["required"], json!(["temperature"]));
    let response = fixture.call("structured_result", json!({}));
    assert_eq!(
        response["result"],
        json!({"content": [], "structuredContent": {"temperature": 22.5, "conditions": "Sunny"}, "isError": false})
    );
    let response = fixture.call("structured_result", json!({"value": {"temperature": "hot"}, "text": "t"}));
    assert_eq!(response["result"]["structuredContent"], json!({"temperature": "hot"}));
    assert_eq!(texts(&response), ["t"]);
}

#[test]
fn big_image_streams_base64_of_the_requested_size() {
    let mut fixture = Fixture::started(&[]);
    let response = fixture.call("big_image", json!({"bytes": 300_000, "text": "see below"}));
    let content = response["result"]["content"].as_array().unwrap();
    assert_eq!(content[0], json!({"type": "text", "text": "see below"}));
    assert_eq!(content[1]["mimeType"], json!("image/png"));
    assert_eq!(content[1]["data"].as_str().unwrap(), "A".repeat(400_000));
    let response = fixture.call("big_image", json!({"bytes": 4}));
    assert_eq!(response["result"]["isError"], json!(true));
}

#[test]
fn log_message_sends_a_notification_first() {
    let mut fixture = Fixture::started(&[]);
    let id = fixture.send_request(
        "tools/call",
        Some(json!({"name":"log_message","arguments":{"level":"warning","data":{"k":[1]}}})),
    );
    let (response, before) = fixture.wait_response(id);
    assert_eq!(
        before,
        [json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":{"k":[1]}}})]
    );
    assert_eq!(texts(&response), ["logged"]);
}

#[test]
fn stderr_flood_writes_whole_lines_from_another_thread() {
    let mut fixture = Fixture::started(&[]);
    assert_eq!(fixture.call_text("stderr_flood", json!({"lines":500,"line_bytes":64})), "flooding stderr");
    for number in 1..=500 {
        let line = fixture.stderr_line();
        assert_eq!(line.len(), 64);
        assert!(line.starts_with(&format!("flood {number} ")), "{line}");
    }
}

#[test]
fn mutate_tools_changes_the_list_and_announces_it() {
    let mut fixture = Fixture::started(&[]);
    let id = fixture
        .send_request("tools/call", Some(json!({"name":"mutate_tools","arguments":{"add":"fresh","remove":"echo"}})));
    let (response, before) = fixture.wait_response(id);
    assert_eq!(before, [json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})]);
    assert_eq!(texts(&response), ["ok"]);
    let names: Vec<Value> = fixture.request("tools/list", None)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].clone())
        .collect();
    assert!(names.contains(&json!("fresh")));
    assert!(!names.contains(&json!("echo")));
    assert_eq!(fixture.call_text("fresh", json!({})), "fresh called");
    let again = fixture.call("mutate_tools", json!({"remove":"echo"}));
    assert_eq!(texts(&again), ["mutate_tools: no tool named \"echo\""]);
}

#[test]
fn ping_client_round_trips_and_reports_errors() {
    let mut fixture = Fixture::started(&[]);
    let id = fixture.send_request("tools/call", Some(json!({"name":"ping_client"})));
    let ping = fixture.recv();
    assert_eq!(ping["method"], json!("ping"));
    fixture.send(&json!({"jsonrpc":"2.0","id":ping["id"],"result":{}}));
    let (response, _) = fixture.wait_response(id);
    assert_eq!(texts(&response), ["pong received"]);

    let id = fixture.send_request("tools/call", Some(json!({"name":"ping_client"})));
    let ping = fixture.recv();
    fixture.send(&json!({"jsonrpc":"2.0","id":ping["id"],"error":{"code":-32601,"message":"method not found"}}));
    let (response, _) = fixture.wait_response(id);
    assert_eq!(response["result"]["isError"], json!(true));
    assert_eq!(texts(&response), ["ping_client: MCP error -32601: method not found"]);
}

#[test]
fn pid_and_count_calls() {
    let mut fixture = Fixture::started(&[]);
    assert_eq!(fixture.call_text("pid", json!({})), fixture.child.id().to_string());
    fixture.call("echo", json!({"text":"a"}));
    fixture.call("nope", json!({}));
    assert_eq!(fixture.call_text("count_calls", json!({})), "4");
}

#[test]
fn exit_mid_call_exits_with_the_code_and_no_reply() {
    let mut fixture = Fixture::started(&[]);
    fixture.send_request("tools/call", Some(json!({"name":"exit_mid_call","arguments":{"code":7}})));
    assert_eq!(fixture.wait_exit().code(), Some(7));
    let mut fixture = Fixture::started(&[]);
    fixture.send_request("tools/call", Some(json!({"name":"exit_mid_call"})));
    assert_eq!(fixture.wait_exit().code(), Some(3));
}

#[cfg(unix)]
#[test]
fn kill_self_dies_by_sigkill() {
    use std::os::unix::process::ExitStatusExt;
    let mut fixture = Fixture::started(&[]);
    fixture.send_request("tools/call", Some(json!({"name":"kill_self"})));
    assert_eq!(fixture.wait_exit().signal(), Some(9));
}

#[test]
fn big_text_returns_exactly_that_many_bytes_of_text() {
    let mut fixture = Fixture::started(&[]);
    let text = fixture.call_text("big_text", json!({"bytes": 1_000_003}));
    assert_eq!(text.len(), 1_000_003);
    assert!(text.bytes().all(|byte| byte == b'x'));
    assert_eq!(fixture.call_text("big_text", json!({"bytes": 0})), "");
}

#[test]
fn oversized_line_is_one_valid_line_of_exactly_the_requested_bytes() {
    let mut fixture = Fixture::started(&[]);
    for bytes in [200u64, 65_536, 1_048_577] {
        let id = fixture.send_request("tools/call", Some(json!({"name":"oversized_line","arguments":{"bytes":bytes}})));
        let line = fixture.next_text();
        assert_eq!(line.len() as u64 + 1, bytes, "newline included");
        let response: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(response["id"], json!(id));
        assert_eq!(response["result"]["isError"], json!(false));
    }
    let too_small = fixture.call("oversized_line", json!({"bytes": 10}));
    assert_eq!(too_small["result"]["isError"], json!(true));
}

#[test]
fn oversized_line_streams_a_gibibyte() {
    const GIB: u64 = 1 << 30;
    let mut fixture = Fixture::started(&[]);
    let id = fixture.send_request("tools/call", Some(json!({"name":"oversized_line","arguments":{"bytes":GIB}})));
    match fixture.next_line() {
        Some(Line::Long { bytes, head, tail }) => {
            assert_eq!(bytes + 1, GIB);
            let head = String::from_utf8(head).unwrap();
            assert!(head.starts_with(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"xxx"#
            )));
            assert!(tail.ends_with(br#"xxx"}],"isError":false}}"#));
        }
        other => panic!("expected a long line, got {other:?}"),
    }
    // The connection is still usable afterwards.
    assert_eq!(fixture.call_text("echo", json!({"text":"after"})), "after");
}

#[test]
fn raw_result_writes_the_result_verbatim() {
    let mut fixture = Fixture::started(&[]);
    let id = fixture.send_request("tools/call", Some(json!({"name":"raw_result","arguments":{"result":[1]}})));
    assert_eq!(fixture.next_text(), format!(r#"{{"jsonrpc":"2.0","id":{id},"result":[1]}}"#));
    let id = fixture.send_request("tools/call", Some(json!({"name":"raw_result","arguments":{}})));
    assert_eq!(fixture.next_text(), format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#));
    let id =
        fixture.send_request("tools/call", Some(json!({"name":"raw_result","arguments":{"result":{"content":"x"}}})));
    assert_eq!(fixture.next_text(), format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":"x"}}}}"#));
    // Nothing else follows: the SDK sent no reply of its own.
    assert_eq!(fixture.call_text("echo", json!({"text":"next"})), "next");
}

#[test]
fn raw_error_writes_the_error_and_an_optional_result() {
    let mut fixture = Fixture::started(&[]);
    let error = json!({"code":-32000,"message":"bad\n- artifact \"x\" (a)"});
    let id = fixture.send_request("tools/call", Some(json!({"name":"raw_error","arguments":{"error":error}})));
    let line = fixture.next_text();
    assert_eq!(line, format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#));
    assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["error"], error);
    // Keys in ascending order, so the expected line does not depend on `serde_json`'s map order.
    let result = json!({"content":[{"text":"ignored","type":"text"}]});
    let id = fixture
        .send_request("tools/call", Some(json!({"name":"raw_error","arguments":{"error":error,"result":result}})));
    assert_eq!(fixture.next_text(), format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result},"error":{error}}}"#));
    assert_eq!(fixture.call_text("echo", json!({"text":"next"})), "next");
}
