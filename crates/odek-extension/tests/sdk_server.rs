//! The SDK's server behaviour, end to end over OS pipes with an in-process server: handshake,
//! pagination, tool calls, concurrency, cancellation, server-initiated requests, runtime tool
//! changes, EOF handling.

// Test helpers outside #[test] functions may panic freely too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use odek_extension::{CancelPolicy, Error, Reply, Request, Server, ToolDef, ToolResponse, arguments};
use serde_json::{Value, json};
use support::InProcess;
use tokio::sync::Notify;

fn object_schema() -> Value {
    json!({"type":"object"})
}

fn echo_server() -> Server {
    #[derive(serde::Deserialize)]
    struct EchoArgs {
        text: String,
    }
    Server::new("sdk-test", "9.9.9").tool(
        ToolDef::new("echo", "Echoes text", object_schema()),
        |_context, args| async move {
            match arguments::<EchoArgs>(args) {
                Ok(args) => ToolResponse::text(args.text),
                Err(response) => response,
            }
        },
    )
}

#[test]
fn initialize_ping_and_unknown_methods() {
    let mut server = InProcess::start(echo_server());
    let result = server.initialize();
    assert_eq!(
        result,
        json!({
            "protocolVersion":"2025-03-26",
            "capabilities":{"tools":{"listChanged":true}},
            "serverInfo":{"name":"sdk-test","version":"9.9.9"}
        })
    );
    assert_eq!(server.request("ping", None), json!({"jsonrpc":"2.0","id":2,"result":{}}));
    assert_eq!(
        server.request("resources/list", Some(json!({"unknown":true}))),
        json!({"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found"}})
    );
    // A string id is echoed verbatim.
    server.send_raw(r#"{"jsonrpc":"2.0","id":"abc","method":"ping","params":{"_meta":{}}}"#);
    assert_eq!(server.recv(), json!({"jsonrpc":"2.0","id":"abc","result":{}}));
}

#[test]
fn protocol_version_is_configurable_and_omittable() {
    let mut server = InProcess::start(echo_server().protocol_version("2025-06-18"));
    assert_eq!(server.initialize()["protocolVersion"], json!("2025-06-18"));
    let mut server = InProcess::start(echo_server().omit_protocol_version());
    assert!(server.initialize().get("protocolVersion").is_none());
}

#[test]
fn junk_input_gets_a_parse_error_and_unknown_notifications_are_ignored() {
    let mut server = InProcess::start(echo_server());
    server.send_raw("");
    server.send_raw("   ");
    server.send_raw("not json");
    assert_eq!(server.recv(), json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}));
    server.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{"x":1}}"#);
    server.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}"#);
    server.send_raw(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#);
    assert_eq!(server.request("ping", None), json!({"jsonrpc":"2.0","id":1,"result":{}}));
}

#[test]
fn tools_list_paginates_with_opaque_cursors() {
    let mut server = Server::new("paged", "1").page_size(2);
    for name in ["a", "b", "c", "d", "e"] {
        server = server.tool(ToolDef::new(name, "", object_schema()), |_, _| async { ToolResponse::text("") });
    }
    let mut server = InProcess::start(server);
    server.initialize();
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = cursor.as_ref().map(|cursor| json!({"cursor": cursor}));
        let response = server.request("tools/list", params);
        let result = &response["result"];
        for tool in result["tools"].as_array().unwrap() {
            names.push(tool["name"].as_str().unwrap().to_owned());
            assert_eq!(tool["inputSchema"], object_schema());
        }
        pages += 1;
        match result.get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().unwrap().to_owned()),
            None => break,
        }
    }
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    assert_eq!(pages, 3);
    let bad = server.request("tools/list", Some(json!({"cursor":"bogus"})));
    assert_eq!(bad["error"]["code"], json!(-32602));
}

#[test]
fn tool_calls_tolerate_unknown_arguments_and_report_unknown_tools_as_errors() {
    let mut server = InProcess::start(echo_server());
    server.initialize();
    assert_eq!(
        server.call("echo", json!({"text":"hi","extra":[1,2]})),
        json!({"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}})
    );
    assert_eq!(
        server.call("nope", json!({}))["result"],
        json!({"content":[{"type":"text","text":"unknown tool \"nope\""}],"isError":true})
    );
    let missing = server.call("echo", Value::Null);
    assert_eq!(missing["result"]["isError"], json!(true));
    assert!(
        missing["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("invalid arguments: missing field `text`")
    );
    let no_name = server.request("tools/call", Some(json!({"arguments":{}})));
    assert_eq!(no_name["error"]["code"], json!(-32602));
}

#[test]
fn a_server_may_answer_an_unknown_tool_with_invalid_params() {
    let mut server = InProcess::start(echo_server().unknown_tool(odek_extension::UnknownTool::InvalidParams));
    server.initialize();
    assert_eq!(
        server.call("nope", json!({})),
        json!({"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool \"nope\""}})
    );
    assert_eq!(server.call("echo", json!({"text":"hi"}))["result"]["isError"], json!(false));
}

#[test]
fn a_removed_tool_is_neither_listed_nor_callable() {
    let server = echo_server()
        .tool(ToolDef::new("other", "Another tool", object_schema()), |_, _| async { ToolResponse::text("other") })
        .without_tool("echo")
        .without_tool("never-added");
    let mut server = InProcess::start(server);
    server.initialize();
    assert_eq!(server.request("tools/list", None)["result"]["tools"][0]["name"], json!("other"));
    assert_eq!(server.request("tools/list", None)["result"]["tools"].as_array().unwrap().len(), 1);
    assert_eq!(
        server.call("echo", json!({"text":"hi"}))["result"],
        json!({"content":[{"type":"text","text":"unknown tool \"echo\""}],"isError":true})
    );
}

/// What the "block" tool reports about itself.
#[derive(Debug, PartialEq)]
enum Gate {
    Started,
    Dropped,
}

/// A "block" tool that waits until a "release" tool is called (or it is cancelled).
fn gate_server(policy: CancelPolicy) -> (Server, mpsc::Receiver<Gate>) {
    let (events, events_receiver) = mpsc::channel();
    let gate = Arc::new(Notify::new());
    let release_gate = Arc::clone(&gate);
    struct SignalOnDrop(mpsc::Sender<Gate>);
    impl Drop for SignalOnDrop {
        fn drop(&mut self) {
            let _ = self.0.send(Gate::Dropped);
        }
    }
    let server = Server::new("gate", "1")
        .cancel_policy(policy)
        .tool(ToolDef::new("block", "", object_schema()), move |context, _| {
            let gate = Arc::clone(&gate);
            let events = events.clone();
            async move {
                let _ = events.send(Gate::Started);
                let _signal = SignalOnDrop(events);
                tokio::select! {
                    () = gate.notified() => ToolResponse::text("released"),
                    () = context.cancelled() => ToolResponse::text(format!(
                        "saw cancellation: {}",
                        context.cancel_reason().unwrap_or("?")
                    )),
                }
            }
        })
        .tool(ToolDef::new("release", "", object_schema()), move |_, _| {
            let gate = Arc::clone(&release_gate);
            async move {
                gate.notify_one();
                ToolResponse::text("ok")
            }
        });
    (server, events_receiver)
}

#[test]
fn a_blocked_call_does_not_hold_up_later_calls() {
    let (server, _events) = gate_server(CancelPolicy::AbortHandler);
    let mut server = InProcess::start(server);
    server.initialize();
    let blocked = server.send_request("tools/call", Some(json!({"name":"block"})));
    let ping = server.send_request("ping", None);
    assert_eq!(server.recv()["id"], json!(ping));
    let release = server.send_request("tools/call", Some(json!({"name":"release"})));
    let mut answered = [server.recv(), server.recv()];
    answered.sort_by_key(|message| message["id"].as_i64());
    assert_eq!(answered[0]["id"], json!(blocked));
    assert_eq!(answered[0]["result"]["content"][0]["text"], json!("released"));
    assert_eq!(answered[1]["id"], json!(release));
}

#[test]
fn cancellation_drops_the_handler_and_sends_no_reply_by_default() {
    let (server, events) = gate_server(CancelPolicy::AbortHandler);
    let mut server = InProcess::start(server);
    server.initialize();
    let blocked = server.send_request("tools/call", Some(json!({"name":"block"})));
    assert_eq!(events.recv_timeout(support::READ_DEADLINE).unwrap(), Gate::Started);
    server.send(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":blocked,"reason":"timeout"}}),
    );
    assert_eq!(events.recv_timeout(support::READ_DEADLINE).unwrap(), Gate::Dropped);
    let ping = server.send_request("ping", None);
    assert_eq!(server.recv(), json!({"jsonrpc":"2.0","id":ping,"result":{}}));
}

#[test]
fn cancellation_is_visible_to_handlers_under_the_signal_policy() {
    let (server, _events) = gate_server(CancelPolicy::Signal);
    let mut server = InProcess::start(server);
    server.initialize();
    let blocked = server.send_request("tools/call", Some(json!({"name":"block"})));
    server.send(
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":blocked,"reason":"timeout"}}),
    );
    let (response, _) = server.wait_response(blocked);
    assert_eq!(response["result"]["content"][0]["text"], json!("saw cancellation: timeout"));
}

fn requesting_server() -> Server {
    Server::new("asks", "1").tool(ToolDef::new("ask", "", object_schema()), |context, _| async move {
        match context.request("ping", None, Duration::from_secs(20)).await {
            Ok(result) => ToolResponse::text(format!("client said {result}")),
            Err(error) => ToolResponse::error(error.to_string()),
        }
    })
}

#[test]
fn server_requests_are_routed_by_id_and_errors_surface() {
    let mut server = InProcess::start(requesting_server());
    server.initialize();
    let call = server.send_request("tools/call", Some(json!({"name":"ask"})));
    let ping = server.recv();
    assert_eq!(ping["method"], json!("ping"));
    // Replies with the wrong id type never match.
    let id = ping["id"].clone();
    server.send_raw(&format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"wrong":1}}}}"#));
    server.send_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id}.0,"result":{{"wrong":2}}}}"#));
    server.send(&json!({"jsonrpc":"2.0","id":id,"result":{"ok":true}}));
    let (response, _) = server.wait_response(call);
    assert_eq!(response["result"]["content"][0]["text"], json!("client said {\"ok\":true}"));

    let call = server.send_request("tools/call", Some(json!({"name":"ask"})));
    let ping = server.recv();
    server.send(&json!({"jsonrpc":"2.0","id":ping["id"],"error":{"code":-32601,"message":"method not found"}}));
    let (response, _) = server.wait_response(call);
    assert_eq!(
        response["result"],
        json!({"content":[{"type":"text","text":"MCP error -32601: method not found"}],"isError":true})
    );
}

#[test]
fn a_pending_server_request_fails_when_stdin_closes() {
    let mut server = InProcess::start(requesting_server());
    server.initialize();
    let call = server.send_request("tools/call", Some(json!({"name":"ask"})));
    assert_eq!(server.recv()["method"], json!("ping"));
    server.close_input();
    let (response, _) = server.wait_response(call);
    assert_eq!(response["result"]["content"][0]["text"], json!("connection closed"));
    server.finished().unwrap();
}

/// A call that runs until something stops it ends within the grace once the client leaves:
/// the disconnect hook runs first, and the call answers as it stops.
#[test]
fn the_disconnect_hook_stops_long_calls_before_the_grace() {
    let stop = Arc::new(Notify::new());
    let server = Server::new("long", "1")
        .tool(ToolDef::new("forever", "", object_schema()), {
            let stop = Arc::clone(&stop);
            move |_context, _| {
                let stop = Arc::clone(&stop);
                async move {
                    stop.notified().await;
                    ToolResponse::text("stopped by the hook")
                }
            }
        })
        .eof_grace(Duration::from_secs(30))
        .on_disconnect({
            let stop = Arc::clone(&stop);
            move || stop.notify_one()
        });
    let mut server = InProcess::start(server);
    server.initialize();
    let call = server.send_request("tools/call", Some(json!({"name":"forever"})));
    // The call is running once a ping sent after it is answered (calls run in tasks).
    server.request("ping", None);
    let started = std::time::Instant::now();
    server.close_input();
    let (response, _) = server.wait_response(call);
    assert_eq!(response["result"]["content"][0]["text"], json!("stopped by the hook"));
    server.finished().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "waited out the grace: {:?}", started.elapsed());
}

#[test]
fn progress_goes_out_only_with_a_token() {
    let server =
        Server::new("progress", "1").tool(ToolDef::new("work", "", object_schema()), |context, _| async move {
            let sent = context.progress(1.0, Some(2.0), Some("half")).await;
            ToolResponse::text(format!("{sent:?}"))
        });
    let mut server = InProcess::start(server);
    server.initialize();
    let id =
        server.send_request("tools/call", Some(json!({"name":"work","arguments":{},"_meta":{"progressToken":"tok"}})));
    let (response, before) = server.wait_response(id);
    assert_eq!(
        before,
        [
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1.0,"total":2.0,"message":"half"}})
        ]
    );
    assert_eq!(response["result"]["content"][0]["text"], json!("Ok(true)"));
    assert_eq!(server.call_text("work", json!({})), "Ok(false)");
}

#[test]
fn tools_added_at_runtime_are_announced_and_listed() {
    let server = Server::new("mutable", "1").tool(ToolDef::new("grow", "", object_schema()), |context, _| async move {
        let outcome = context
            .update_tools(|tools| {
                tools.remove("grow");
                tools.add(ToolDef::new("grown", "new", json!({"type":"object"})), |_, _| async {
                    ToolResponse::text("I am new")
                })
            })
            .await;
        match outcome {
            Ok(Ok(())) => ToolResponse::text("grew"),
            Ok(Err(error)) | Err(error) => ToolResponse::error(error.to_string()),
        }
    });
    let mut server = InProcess::start(server);
    server.initialize();
    let id = server.send_request("tools/call", Some(json!({"name":"grow"})));
    let (response, before) = server.wait_response(id);
    assert_eq!(before, [json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})]);
    assert_eq!(response["result"]["content"][0]["text"], json!("grew"));
    let listed = server.request("tools/list", None);
    assert_eq!(
        listed["result"]["tools"],
        json!([{"name":"grown","description":"new","inputSchema":{"type":"object"}}])
    );
    assert_eq!(server.call_text("grown", json!({})), "I am new");
}

#[test]
fn a_panicking_handler_still_gets_an_internal_error_reply() {
    let server = Server::new("panics", "1").tool(ToolDef::new("boom", "", object_schema()), |_, _| async move {
        let items: Vec<u8> = Vec::new();
        // Index out of bounds, without tripping the unwrap/expect lints.
        ToolResponse::text(items[3].to_string())
    });
    let mut server = InProcess::start(server);
    server.initialize();
    assert_eq!(
        server.call("boom", json!({}))["error"],
        json!({"code":-32603,"message":"request handler stopped without a reply"})
    );
    assert_eq!(server.request("ping", None)["result"], json!({}));
}

#[test]
fn stdin_eof_lets_running_calls_finish_then_returns() {
    let (server, _events) = gate_server(CancelPolicy::AbortHandler);
    let server = server.tool(ToolDef::new("ask_then_block", "", object_schema()), |context, _| async move {
        // Finishes only once stdin has closed (the pending ping then fails).
        let outcome = context.request("ping", None, Duration::from_secs(60)).await;
        ToolResponse::text(format!("after eof: {}", outcome.err().map(|e| e.to_string()).unwrap_or_default()))
    });
    let mut server = InProcess::start(server);
    server.initialize();
    let id = server.send_request("tools/call", Some(json!({"name":"ask_then_block"})));
    assert_eq!(server.recv()["method"], json!("ping"));
    server.close_input();
    let (response, _) = server.wait_response(id);
    assert_eq!(response["result"]["content"][0]["text"], json!("after eof: connection closed"));
    server.finished().unwrap();
    assert!(server.next_line().is_none(), "stdout is closed after run returns");
}

#[test]
fn invalid_or_duplicate_tool_names_fail_at_startup_unless_validation_is_off() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let run = |server: Server| {
        let (input, _keep_open) = std::io::pipe().unwrap();
        runtime.block_on(server.run(input, std::io::sink()))
    };
    let invalid = Server::new("x", "1")
        .tool(ToolDef::new("read file", "", object_schema()), |_, _| async { ToolResponse::NoReply });
    assert_eq!(run(invalid).unwrap_err().to_string(), "tool name \"read file\" contains invalid character ' '");
    let duplicate =
        echo_server().tool(ToolDef::new("echo", "", object_schema()), |_, _| async { ToolResponse::NoReply });
    assert!(matches!(run(duplicate), Err(Error::DuplicateTool { .. })));

    let mut relaxed = InProcess::start(
        Server::new("x", "1")
            .validate_tool_names(false)
            .tool(ToolDef::new("a__b", "", object_schema()), |_, _| async { ToolResponse::NoReply }),
    );
    relaxed.initialize();
    assert_eq!(relaxed.request("tools/list", None)["result"]["tools"][0]["name"], json!("a__b"));
}

#[test]
fn interceptors_see_every_request_and_can_delegate() {
    let server = echo_server().intercept(|context, request: Request| async move {
        if request.method == "ping" {
            return Reply::Result(json!({"intercepted": context.request_id().clone()}));
        }
        context.builtin(request).await
    });
    let mut server = InProcess::start(server);
    server.initialize();
    assert_eq!(server.request("ping", None)["result"], json!({"intercepted":2}));
    assert_eq!(server.call_text("echo", json!({"text":"x"})), "x");
}

#[test]
fn raw_streams_write_exact_bytes_without_interleaving() {
    let server = Server::new("raw", "1").tool(ToolDef::new("raw", "", object_schema()), |context, _| async move {
        let id = context.request_id().to_string();
        let Ok(stream) = context.raw_stream().await else {
            return ToolResponse::NoReply;
        };
        let prefix = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#);
        let _ = stream.write(prefix.into_bytes()).await;
        for _ in 0..10 {
            let _ = stream.write(&b"abc"[..]).await;
        }
        let _ = stream.write(&b"\"}],\"isError\":false}}\n"[..]).await;
        ToolResponse::NoReply
    });
    let mut server = InProcess::start(server);
    server.initialize();
    assert_eq!(server.call_text("raw", json!({})), "abc".repeat(10));
}
