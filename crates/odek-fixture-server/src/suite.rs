//! `--conformance-suite`: what the official MCP conformance suite's server scenarios
//! (`@modelcontextprotocol/conformance`, run by `crates/odek-cli/tests/mcp_conformance_server.rs`)
//! call by name — real tools, resources, a resource template, prompts, completion, logging and
//! subscriptions, each built on the SDK as any extension author would build it. The names,
//! arguments and result shapes are the suite's; the contents are this fixture's own.
//! Start at [`register`].
//!
//! Not here: anything the fixture's other tools or modes do (this module only adds).

use std::sync::Arc;
use std::time::Duration;

use odek_extension::{
    CallContext, Completion, CompletionReference, CompletionRequest, Content, ElicitAction, ElicitationRequest,
    PromptArgument, PromptDef, PromptMessage, PromptResult, ReadOutcome, ResourceBody, ResourceContents, ResourceDef,
    ResourceTemplateDef, SamplingRequest, Server, ToolDef, ToolResponse,
};
use serde_json::{Value, json};

use crate::misbehaviour_tools::TINY_PNG_BASE64;

/// How long a tool waits for the client's answer to its sampling or elicitation request.
const CLIENT_ANSWER_WAIT: Duration = Duration::from_secs(10);

/// `max_tokens` of test_sampling's request.
const SAMPLING_MAX_TOKENS: u32 = 100;

/// A 60-byte mono 8 kHz 16-bit WAV of 8 silent samples, base64.
const TINY_WAV_BASE64: &str = "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

const STATIC_TEXT_URI: &str = "test://static-text";
const STATIC_BINARY_URI: &str = "test://static-binary";
const WATCHED_URI: &str = "test://watched-resource";
const TEMPLATE: &str = "test://template/{id}/data";
/// The uri of the resource test_embedded_resource and test_multiple_content_types embed.
const EMBEDDED_URI: &str = "test://embedded-resource";

/// The tool whose `inputSchema` uses JSON Schema 2020-12's keywords, which a server must pass
/// on untouched.
const JSON_SCHEMA_TOOL: &str = "json_schema_2020_12_tool";

/// Adds the suite's tools, resources, template, prompts and completion, and turns on logging
/// and resource subscriptions.
pub(crate) fn register(server: Server) -> Server {
    let server = register_tools(server.logging().resource_subscriptions());
    let server = register_resources(server);
    register_prompts(server).completion(complete)
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

fn string_arguments(names: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> =
        names.iter().map(|name| ((*name).to_owned(), json!({"type": "string"}))).collect();
    json!({"type": "object", "properties": properties, "required": names})
}

fn image() -> Content {
    Content::Image { data: TINY_PNG_BASE64.to_owned(), mime_type: "image/png".to_owned() }
}

fn embedded_text(uri: &str) -> Content {
    let body = ResourceBody::text(format!("The contents of {uri}, embedded whole."));
    Content::Resource(ResourceContents::new(uri, body).with_mime_type("text/plain"))
}

fn register_tools(server: Server) -> Server {
    server
        .tool(ToolDef::new("test_simple_text", "Returns one text item.", no_arguments()), |_, _| async {
            ToolResponse::text("This is a simple text response from the fixture.")
        })
        .tool(ToolDef::new("test_image_content", "Returns one PNG image item.", no_arguments()), |_, _| async {
            ToolResponse::items(vec![image()])
        })
        .tool(ToolDef::new("test_audio_content", "Returns one WAV audio item.", no_arguments()), |_, _| async {
            ToolResponse::items(vec![Content::Audio { data: TINY_WAV_BASE64.to_owned(), mime_type: "audio/wav".into() }])
        })
        .tool(ToolDef::new("test_embedded_resource", "Returns an embedded text resource.", no_arguments()), |_, _| async {
            ToolResponse::items(vec![embedded_text(EMBEDDED_URI)])
        })
        .tool(
            ToolDef::new("test_multiple_content_types", "Returns text, an image and a resource.", no_arguments()),
            |_, _| async {
                ToolResponse::items(vec![Content::Text("Three kinds of content:".into()), image(), embedded_text(EMBEDDED_URI)])
            },
        )
        .tool(ToolDef::new("test_error_handling", "Always fails, as a tool error.", no_arguments()), |_, _| async {
            ToolResponse::error("test_error_handling failed on purpose")
        })
        .tool(ToolDef::new("test_tool_with_logging", "Logs three messages while it runs.", no_arguments()), logging_tool)
        .tool(
            ToolDef::new("test_tool_with_progress", "Reports progress three times while it runs.", no_arguments()),
            progress_tool,
        )
        .tool(
            ToolDef::new("test_sampling", "Asks the client's model to answer a prompt.", string_arguments(&["prompt"])),
            sampling_tool,
        )
        .tool(
            ToolDef::new("test_elicitation", "Asks the user for a username and an email.", string_arguments(&["message"])),
            |context, arguments| async move {
                let message = arguments["message"].as_str().unwrap_or("Please provide your information").to_owned();
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "Your user name"},
                        "email": {"type": "string", "format": "email", "description": "Your email address"}
                    },
                    "required": ["username", "email"]
                });
                elicit(&context, message, schema).await
            },
        )
        .tool(
            ToolDef::new("test_elicitation_sep1034_defaults", "Asks for a form whose fields have defaults.", no_arguments()),
            |context, _| async move { elicit(&context, "Confirm or change the defaults".into(), defaults_form()).await },
        )
        .tool(
            ToolDef::new("test_elicitation_sep1330_enums", "Asks for a form of every enum shape.", no_arguments()),
            |context, _| async move { elicit(&context, "Choose from each list".into(), enums_form()).await },
        )
        .tool(
            ToolDef::new(JSON_SCHEMA_TOOL, "Takes arguments described in JSON Schema 2020-12.", json_schema_2020_12()),
            |_, arguments| async move { ToolResponse::text(format!("received {arguments}")) },
        )
}

async fn logging_tool(context: Arc<CallContext>, _: Value) -> ToolResponse {
    for (level, text) in [("info", "started"), ("info", "working"), ("notice", "finished")] {
        if let Err(error) = context.log(level, json!(format!("test_tool_with_logging {text}"))).await {
            return ToolResponse::error(error.to_string());
        }
    }
    ToolResponse::text("logged three messages")
}

async fn progress_tool(context: Arc<CallContext>, _: Value) -> ToolResponse {
    for step in [0.0, 50.0, 100.0] {
        if let Err(error) = context.progress(step, Some(100.0), Some("test_tool_with_progress")).await {
            return ToolResponse::error(error.to_string());
        }
    }
    ToolResponse::text("progress reported")
}

async fn sampling_tool(context: Arc<CallContext>, arguments: Value) -> ToolResponse {
    let prompt = arguments["prompt"].as_str().unwrap_or_default();
    match context.create_message(&SamplingRequest::user_text(prompt, SAMPLING_MAX_TOKENS), CLIENT_ANSWER_WAIT).await {
        Ok(answer) => {
            ToolResponse::text(format!("{} answered: {}", answer.model, answer.text().unwrap_or("(no text)")))
        }
        Err(error) => ToolResponse::error(format!("sampling failed: {error}")),
    }
}

/// Sends the form and reports what the user did with it.
async fn elicit(context: &CallContext, message: String, requested_schema: Value) -> ToolResponse {
    match context.elicit(&ElicitationRequest { message, requested_schema }, CLIENT_ANSWER_WAIT).await {
        Ok(answer) => match answer.action {
            ElicitAction::Accept => {
                ToolResponse::text(format!("accepted: {}", Value::Object(answer.content.unwrap_or_default())))
            }
            ElicitAction::Decline => ToolResponse::text("declined"),
            ElicitAction::Cancel => ToolResponse::text("cancelled"),
        },
        Err(error) => ToolResponse::error(format!("elicitation failed: {error}")),
    }
}

/// SEP-1034: a default for each primitive field.
fn defaults_form() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Name", "default": "John Doe"},
            "age": {"type": "integer", "description": "Age", "default": 30},
            "score": {"type": "number", "description": "Score", "default": 95.5},
            "status": {"type": "string", "description": "Status", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verified", "default": true}
        }
    })
}

/// SEP-1330: untitled and titled single choice, the legacy `enumNames`, untitled and titled
/// multiple choice.
fn enums_form() -> Value {
    let titled = json!([
        {"const": "value1", "title": "First value"},
        {"const": "value2", "title": "Second value"},
        {"const": "value3", "title": "Third value"}
    ]);
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option one", "Option two", "Option three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": titled}}
        }
    })
}

/// An input schema with 2020-12's `$schema`, `$defs` (with an `$anchor`), a `$ref`,
/// composition (`allOf`/`anyOf`), conditionals (`if`/`then`/`else`) and
/// `additionalProperties: false`.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

fn register_resources(server: Server) -> Server {
    server
        .resource(
            ResourceDef::new(STATIC_TEXT_URI, "static-text")
                .with_description("A fixed text")
                .with_mime_type("text/plain"),
            ResourceBody::text("This is the fixture's static text resource."),
        )
        .resource(
            ResourceDef::new(STATIC_BINARY_URI, "static-binary")
                .with_description("A 1x1 PNG")
                .with_mime_type("image/png"),
            ResourceBody::blob_base64(TINY_PNG_BASE64),
        )
        .resource(
            ResourceDef::new(WATCHED_URI, "watched-resource")
                .with_description("A resource clients may subscribe to")
                .with_mime_type("text/plain"),
            ResourceBody::text("Watch this space."),
        )
        .resource_template(
            ResourceTemplateDef::new(TEMPLATE, "template-data")
                .with_description("The data of one item, by id")
                .with_mime_type("application/json"),
            |_, uri, variables| async move {
                let id = variables.get("id").cloned().unwrap_or_default();
                let text = json!({"id": id, "data": format!("the data of item {id}")}).to_string();
                ReadOutcome::Ok(vec![
                    ResourceContents::new(uri, ResourceBody::text(text)).with_mime_type("application/json"),
                ])
            },
        )
}

fn register_prompts(server: Server) -> Server {
    server
        .prompt(PromptDef::new("test_simple_prompt", "A prompt without arguments"), |_, _| async {
            Ok(PromptResult::messages(vec![PromptMessage::user(Content::Text("This is a simple prompt.".into()))]))
        })
        .prompt(
            PromptDef::new("test_prompt_with_arguments", "A prompt made from two arguments")
                .with_argument(PromptArgument::required("arg1", "The first argument"))
                .with_argument(PromptArgument::required("arg2", "The second argument")),
            |_, arguments| async move {
                let text = format!("Prompt with arguments: arg1={}, arg2={}", arguments["arg1"], arguments["arg2"]);
                Ok(PromptResult::messages(vec![PromptMessage::user(Content::Text(text))]))
            },
        )
        .prompt(
            PromptDef::new("test_prompt_with_embedded_resource", "A prompt that embeds a resource")
                .with_argument(PromptArgument::required("resourceUri", "The uri of the resource to embed")),
            |_, arguments| async move {
                Ok(PromptResult::messages(vec![
                    PromptMessage::user(embedded_text(&arguments["resourceUri"])),
                    PromptMessage::user(Content::Text("Please summarise the resource above.".into())),
                ]))
            },
        )
        .prompt(PromptDef::new("test_prompt_with_image", "A prompt with an image"), |_, _| async {
            Ok(PromptResult::messages(vec![
                PromptMessage::user(image()),
                PromptMessage::user(Content::Text("Describe this image.".into())),
            ]))
        })
}

/// Completes test_prompt_with_arguments' arguments and the template's `id` from short fixed
/// lists, by prefix; anything else has no suggestions.
async fn complete(_: Arc<CallContext>, request: CompletionRequest) -> Result<Completion, odek_extension::RpcError> {
    let candidates: &[&str] = match &request.reference {
        CompletionReference::Prompt { name } if name == "test_prompt_with_arguments" => {
            &["test", "testValue1", "testValue2", "value"]
        }
        CompletionReference::ResourceTemplate { uri } if uri == TEMPLATE && request.argument == "id" => {
            &["1", "2", "123"]
        }
        _ => &[],
    };
    let values =
        candidates.iter().filter(|candidate| candidate.starts_with(&request.value)).map(|value| (*value).to_owned());
    Ok(Completion::values(values.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_2020_12_schema_keeps_every_keyword_the_suite_looks_for() {
        let schema = json_schema_2020_12();
        for keyword in ["$schema", "$defs", "allOf", "if", "then", "else", "additionalProperties"] {
            assert!(schema.get(keyword).is_some(), "{keyword}");
        }
        assert_eq!(schema["$defs"]["address"]["$anchor"], json!("addressDef"));
    }
}
