//! Modes that interleave extra traffic with responses: junk-stdout ordering, and the
//! server-initiated requests of ping-before-call and unknown-request-before-call.

// Test helpers outside #[test] functions may panic freely too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::Fixture;

/// The exact junk block the fixture writes before the response to request `id`.
fn expected_junk(id: i64) -> Vec<String> {
    let result = r#"{"content":[{"type":"text","text":"JUNK: this response must be ignored"}],"isError":false,"tools":[],"protocolVersion":"junk"}"#;
    let mut lines: Vec<String> = ["this line is not JSON", "[1,2]", "42", ""].map(str::to_owned).to_vec();
    for junk_id in [format!("\"{id}\""), "null".into(), format!("{id}.0"), format!("{id}e0"), "999999".into()] {
        lines.push(format!(r#"{{"jsonrpc":"2.0","id":{junk_id},"result":{result}}}"#));
    }
    lines
}

#[test]
fn junk_stdout_precedes_every_response_in_a_fixed_order() {
    let mut fixture = Fixture::spawn(&["--mode", "junk-stdout"]);
    let initialize = fixture.send_request("initialize", Some(json!({})));
    for expected in expected_junk(initialize) {
        assert_eq!(fixture.next_text(), expected);
    }
    let response: Value = serde_json::from_str(&fixture.next_text()).unwrap();
    assert_eq!(response["id"], json!(initialize));
    assert_eq!(response["result"]["protocolVersion"], json!("2025-03-26"));

    let call = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"real"}})));
    for expected in expected_junk(call) {
        assert_eq!(fixture.next_text(), expected);
    }
    let response: Value = serde_json::from_str(&fixture.next_text()).unwrap();
    assert_eq!(response["id"], json!(call));
    assert_eq!(response["result"]["content"][0]["text"], json!("real"));
}

/// Reads the pings sent before a call and answers each with `reply(id)`.
fn answer_pings(fixture: &mut Fixture, expected_ids: &[Value], reply: impl Fn(&Value) -> Value) {
    let mut seen = Vec::new();
    for _ in expected_ids {
        let ping = fixture.recv();
        assert_eq!(ping["method"], json!("ping"));
        seen.push(ping["id"].clone());
    }
    assert_eq!(seen, expected_ids);
    // Answer in reverse order: the fixture matches replies by id, not by position.
    for id in seen.iter().rev() {
        fixture.send(&reply(id));
    }
}

#[test]
fn ping_before_call_waits_for_the_clients_replies() {
    let mut fixture = Fixture::started(&["--mode", "ping-before-call"]);
    let first = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"one"}})));
    answer_pings(&mut fixture, &[json!(0), json!("srv-ping")], |id| json!({"jsonrpc":"2.0","id":id,"result":{}}));
    let (response, _) = fixture.wait_response(first);
    assert_eq!(response["result"]["content"][0]["text"], json!("one"));

    let second = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"two"}})));
    answer_pings(&mut fixture, &[json!(0)], |id| json!({"jsonrpc":"2.0","id":id,"result":{}}));
    let (response, _) = fixture.wait_response(second);
    assert_eq!(response["result"]["content"][0]["text"], json!("two"));

    let third = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"three"}})));
    answer_pings(
        &mut fixture,
        &[json!(0)],
        |id| json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"method not found"}}),
    );
    let (response, _) = fixture.wait_response(third);
    assert_eq!(
        response["result"],
        json!({"content":[{"type":"text","text":"client answered ping with an error: MCP error -32601: method not found"}],"isError":true})
    );
}

#[test]
fn ping_before_call_gives_up_after_five_seconds_without_a_reply() {
    let mut fixture = Fixture::started(&["--mode", "ping-before-call"]);
    let call = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"x"}})));
    // Wrong-typed ids must not count as answers.
    let ping = fixture.recv();
    assert_eq!(ping["id"], json!(0));
    fixture.send_raw(r#"{"jsonrpc":"2.0","id":"0","result":{}}"#);
    fixture.send_raw(r#"{"jsonrpc":"2.0","id":0.0,"result":{}}"#);
    fixture.send_raw(r#"{"jsonrpc":"2.0","id":null,"result":{}}"#);
    let (response, before) = fixture.wait_response(call);
    assert_eq!(before.len(), 1, "only the string-id ping: {before:?}");
    assert_eq!(
        response["result"],
        json!({"content":[{"type":"text","text":"client did not answer ping"}],"isError":true})
    );
}

#[test]
fn unknown_request_before_call_requires_method_not_found() {
    let mut fixture = Fixture::started(&["--mode", "unknown-request-before-call"]);
    let call = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"ok"}})));
    let request = fixture.recv();
    assert_eq!(request["method"], json!("sampling/createMessage"));
    assert!(request["id"].is_i64());
    fixture.send(&json!({"jsonrpc":"2.0","id":request["id"],"error":{"code":-32601,"message":"method not found"}}));
    let (response, _) = fixture.wait_response(call);
    assert_eq!(response["result"]["content"][0]["text"], json!("ok"));

    let call = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"ok"}})));
    let request = fixture.recv();
    fixture.send(&json!({"jsonrpc":"2.0","id":request["id"],"result":{}}));
    let (response, _) = fixture.wait_response(call);
    assert_eq!(response["result"]["isError"], json!(true));
    assert_eq!(
        response["result"]["content"][0]["text"],
        json!("client answered sampling/createMessage with a result ({}); expected error -32601")
    );
}

#[test]
fn ping_with_call_id_reuses_the_calls_id_and_waits_for_the_reply() {
    let mut fixture = Fixture::started(&["--mode", "ping-with-call-id"]);
    let call = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"real"}})));
    let ping = fixture.recv();
    assert_eq!(ping, json!({"jsonrpc":"2.0","id":call,"method":"ping"}));
    fixture.send(&json!({"jsonrpc":"2.0","id":call,"result":{}}));
    let (response, before) = fixture.wait_response(call);
    assert!(before.is_empty(), "{before:?}");
    assert_eq!(response["result"]["content"][0]["text"], json!("real"));

    // An error reply to the ping becomes the call's isError result.
    let call = fixture.send_request("tools/call", Some(json!({"name":"echo","arguments":{"text":"x"}})));
    assert_eq!(fixture.recv()["id"], json!(call));
    fixture.send(&json!({"jsonrpc":"2.0","id":call,"error":{"code":-32601,"message":"method not found"}}));
    let (response, _) = fixture.wait_response(call);
    assert_eq!(
        response["result"],
        json!({"content":[{"type":"text","text":"client answered ping with an error: MCP error -32601: method not found"}],"isError":true})
    );
}
