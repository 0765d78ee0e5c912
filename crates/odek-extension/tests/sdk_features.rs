//! The SDK's features beyond tools and resources, end to end over pipes with an in-process
//! server: protocol revision negotiation, prompts, resource templates and subscriptions,
//! completion, logging levels, and the typed sampling and elicitation requests.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use odek_extension::{
    Completion, CompletionReference, Content, ElicitAction, ElicitationRequest, Error, PromptArgument, PromptDef,
    PromptMessage, PromptResult, ReadOutcome, ResourceBody, ResourceContents, ResourceDef, ResourceTemplateDef,
    RpcError, SamplingRequest, Server, ToolDef, ToolResponse,
};
use serde_json::{Value, json};
use support::InProcess;

const CLIENT_WAIT: Duration = Duration::from_secs(5);

fn featured_server() -> Server {
    Server::new("features", "1.0.0")
        .logging()
        .resource_subscriptions()
        .resource(ResourceDef::new("a://watched", "watched"), ResourceBody::text("w"))
        .resource_template(
            ResourceTemplateDef::new("a://items/{id}/data", "item").with_mime_type("text/plain"),
            |_, uri, variables| async move {
                let text = format!("item {}", variables["id"]);
                ReadOutcome::Ok(vec![ResourceContents::new(uri, ResourceBody::text(text))])
            },
        )
        .prompt(
            PromptDef::new("greet", "Greets someone").with_argument(PromptArgument::required("who", "Whom to greet")),
            |_, arguments| async move {
                let text = format!("Say hello to {}", arguments["who"]);
                Ok(PromptResult::messages(vec![PromptMessage::user(Content::Text(text))]))
            },
        )
        .completion(|_, request| async move {
            match request.reference {
                CompletionReference::Prompt { name } if name == "greet" => {
                    let names = ["ann", "anton", "bob"].into_iter().filter(|name| name.starts_with(&request.value));
                    Ok(Completion::values(names.map(str::to_owned).collect()))
                }
                _ => Err(RpcError::invalid_params("nothing to complete")),
            }
        })
        .tool(ToolDef::new("chatty", "Logs at every level", json!({"type":"object"})), |context, _| async move {
            for level in ["debug", "info", "warning", "error"] {
                context.log(level, json!(format!("a {level} message"))).await.unwrap();
            }
            let touched = context.notify_resource_updated("a://watched").await.unwrap();
            ToolResponse::text(format!("touched {touched}"))
        })
}

fn initialize_with(server: &mut InProcess, params: Value) -> Value {
    let response = server.request("initialize", Some(params));
    server.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    response["result"].clone()
}

#[test]
fn the_revision_is_negotiated_and_the_contracts_stays_the_default() {
    for (asked, answered) in [
        (json!("2025-03-26"), "2025-03-26"),
        (json!("2025-06-18"), "2025-06-18"),
        (json!("2025-11-25"), "2025-11-25"),
        (json!("2099-12-31"), "2025-11-25"),
        (json!(20250326), "2025-03-26"),
    ] {
        let mut server = InProcess::start(featured_server());
        let result = initialize_with(&mut server, json!({"protocolVersion": asked, "capabilities": {}}));
        assert_eq!(result["protocolVersion"], json!(answered), "asked {asked}");
    }
    let mut server = InProcess::start(featured_server());
    assert_eq!(server.request("initialize", None)["result"]["protocolVersion"], json!("2025-03-26"));
}

#[test]
fn initialize_announces_exactly_what_is_offered() {
    let mut server = InProcess::start(featured_server());
    assert_eq!(
        server.initialize()["capabilities"],
        json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": false},
            "prompts": {"listChanged": false},
            "completions": {},
            "logging": {}
        })
    );
    let mut plain = InProcess::start(Server::new("plain", "1"));
    assert_eq!(plain.initialize()["capabilities"], json!({"tools": {"listChanged": true}}));
    for method in ["prompts/list", "prompts/get", "completion/complete", "logging/setLevel", "resources/subscribe"] {
        assert_eq!(plain.request(method, Some(json!({})))["error"]["code"], json!(-32601), "{method}");
    }
}

#[test]
fn prompts_are_listed_and_made_from_checked_arguments() {
    let mut server = InProcess::start(featured_server());
    server.initialize();
    assert_eq!(
        server.request("prompts/list", None)["result"],
        json!({"prompts": [{"name": "greet", "description": "Greets someone",
            "arguments": [{"name": "who", "description": "Whom to greet", "required": true}]}]})
    );
    let made = server.request("prompts/get", Some(json!({"name": "greet", "arguments": {"who": "ann"}})));
    assert_eq!(
        made["result"],
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Say hello to ann"}}]})
    );
    let missing = server.request("prompts/get", Some(json!({"name": "greet"})));
    assert_eq!(missing["error"], json!({"code": -32602, "message": "prompt \"greet\" needs the argument \"who\""}));
    let unknown = server.request("prompts/get", Some(json!({"name": "nope"})));
    assert_eq!(unknown["error"], json!({"code": -32602, "message": "unknown prompt \"nope\""}));
}

#[test]
fn templates_serve_their_uris_and_subscriptions_need_a_served_uri() {
    let mut server = InProcess::start(featured_server());
    server.initialize();
    assert_eq!(
        server.request("resources/templates/list", None)["result"],
        json!({"resourceTemplates": [{"uriTemplate": "a://items/{id}/data", "name": "item", "mimeType": "text/plain"}]})
    );
    let read = server.request("resources/read", Some(json!({"uri": "a://items/42/data"})));
    assert_eq!(read["result"], json!({"contents": [{"uri": "a://items/42/data", "text": "item 42"}]}));
    let unmatched = server.request("resources/read", Some(json!({"uri": "a://items/4/2/data"})));
    assert_eq!(unmatched["error"]["code"], json!(-32002));

    assert_eq!(server.request("resources/subscribe", Some(json!({"uri": "a://watched"})))["result"], json!({}));
    assert_eq!(server.request("resources/subscribe", Some(json!({"uri": "a://items/1/data"})))["result"], json!({}));
    assert_eq!(
        server.request("resources/subscribe", Some(json!({"uri": "a://nowhere"})))["error"]["code"],
        json!(-32002)
    );
    let id = server.send_request("tools/call", Some(json!({"name": "chatty"})));
    let (answer, before) = server.wait_response(id);
    assert_eq!(answer["result"]["content"][0]["text"], json!("touched true"));
    assert!(before.contains(
        &json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "a://watched"}})
    ));
    assert_eq!(server.request("resources/unsubscribe", Some(json!({"uri": "a://watched"})))["result"], json!({}));
    let id = server.send_request("tools/call", Some(json!({"name": "chatty"})));
    let (answer, before) = server.wait_response(id);
    assert_eq!(answer["result"]["content"][0]["text"], json!("touched false"));
    assert!(before.iter().all(|message| message["method"] == "notifications/message"), "{before:?}");
}

#[test]
fn completion_answers_from_the_completer() {
    let mut server = InProcess::start(featured_server());
    server.initialize();
    let complete = |server: &mut InProcess, value: &str| {
        server.request(
            "completion/complete",
            Some(json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": value}})),
        )
    };
    assert_eq!(complete(&mut server, "an")["result"], json!({"completion": {"values": ["ann", "anton"]}}));
    let bad = server.request("completion/complete", Some(json!({"ref": {"type": "ref/tool"}})));
    assert_eq!(bad["error"]["code"], json!(-32602));
}

#[test]
fn the_log_level_filters_what_a_handler_logs() {
    let mut server = InProcess::start(featured_server());
    server.initialize();
    let logged = |server: &mut InProcess| -> Vec<Value> {
        let id = server.send_request("tools/call", Some(json!({"name": "chatty"})));
        let (_, before) = server.wait_response(id);
        before
            .into_iter()
            .filter(|message| message["method"] == "notifications/message")
            .map(|m| m["params"]["level"].clone())
            .collect()
    };
    assert_eq!(logged(&mut server), [json!("debug"), json!("info"), json!("warning"), json!("error")]);
    assert_eq!(server.request("logging/setLevel", Some(json!({"level": "warning"})))["result"], json!({}));
    assert_eq!(logged(&mut server), [json!("warning"), json!("error")]);
    let refused = server.request("logging/setLevel", Some(json!({"level": "loud"})));
    assert_eq!(refused["error"]["code"], json!(-32602));
}

#[test]
fn typed_requests_go_only_to_clients_that_declared_them() {
    let asking = || {
        Server::new("asking", "1")
            .tool(ToolDef::new("sample", "", json!({"type": "object"})), |context, _| async move {
                match context.create_message(&SamplingRequest::user_text("hi", 10), CLIENT_WAIT).await {
                    Ok(answer) => ToolResponse::text(format!("{} said {}", answer.model, answer.text().unwrap_or("?"))),
                    Err(error) => ToolResponse::error(error.to_string()),
                }
            })
            .tool(ToolDef::new("ask", "", json!({"type": "object"})), |context, _| async move {
                let form = ElicitationRequest { message: "name?".into(), requested_schema: json!({"type": "object"}) };
                match context.elicit(&form, CLIENT_WAIT).await {
                    Ok(answer) if answer.action == ElicitAction::Accept => {
                        ToolResponse::text(format!("{:?}", answer.content))
                    }
                    Ok(answer) => ToolResponse::text(format!("{:?}", answer.action)),
                    Err(error @ (Error::ClientCapabilityMissing { .. } | Error::InvalidReply { .. })) => {
                        ToolResponse::error(error.to_string())
                    }
                    Err(error) => ToolResponse::error(format!("other: {error}")),
                }
            })
    };
    let mut bare = InProcess::start(asking());
    bare.initialize();
    assert_eq!(
        bare.call("sample", json!({}))["result"]["content"][0]["text"],
        json!("the client did not declare the sampling capability")
    );

    let mut able = InProcess::start(asking());
    initialize_with(
        &mut able,
        json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}, "elicitation": {}}}),
    );
    let id = able.send_request("tools/call", Some(json!({"name": "sample"})));
    let request = able.recv();
    assert_eq!(request["method"], json!("sampling/createMessage"));
    assert_eq!(request["params"]["maxTokens"], json!(10));
    able.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}}));
    assert_eq!(able.wait_response(id).0["result"]["content"][0]["text"], json!("m said hello"));

    let id = able.send_request("tools/call", Some(json!({"name": "ask"})));
    let request = able.recv();
    assert_eq!(request["params"], json!({"message": "name?", "requestedSchema": {"type": "object"}}));
    able.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "sure"}}));
    let text = able.wait_response(id).0["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("the client's reply to elicitation/create is malformed: "), "{text}");
}
