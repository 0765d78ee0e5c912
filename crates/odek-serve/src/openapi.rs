//! The OpenAPI 3.1 document of `odek serve`'s API, served at `/api/openapi.json` and published
//! as `docs/schemas/odek-serve.openapi.json`: every route with the schemas of the bodies it
//! takes and answers, generated from the types the handlers speak ([`crate::api`]) and, for
//! the event stream, from the `odek.event/v1` schema itself. A test keeps the published copy
//! byte for byte what the types generate, so a body never changes silently.

use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::api::{
    Cancelling, Decided, Decision, ElicitationReplied, ElicitationReply, ErrorBody, Health, Limits, RunList,
    RunStarted, RunView, SessionList, StartRun, UsageTotals,
};

/// Where the document is published, relative to the repository root.
pub const OPENAPI_PATH: &str = "docs/schemas/odek-serve.openapi.json";

/// What one answer of an operation carries.
enum Body {
    /// JSON of the named component (a response type).
    Json(&'static str),
    /// Server-Sent Events, each message's data one `odek.event/v1` line.
    Events,
    /// A file's bytes.
    File,
    /// HTML (the page).
    Html,
    /// Nothing.
    Empty,
}

/// One operation: method, path, id, summary, the request body's schema, the answers.
struct Operation {
    method: &'static str,
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    request: Option<Value>,
    answers: Vec<(u16, &'static str, Body)>,
}

/// The document, as pretty JSON with sorted keys (what the repository keeps).
pub fn document_text() -> String {
    odek_contract::canonical_json::published_text(document())
}

/// The document.
pub fn document() -> Value {
    let mut answers = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
            settings.contract = Contract::Serialize;
        })
        .into_generator();
    let mut components = Map::new();
    let mut answer = |name: &'static str, schema: Value| {
        components.insert(name.to_owned(), schema);
    };
    answer("RunStarted", subschema::<RunStarted>(&mut answers));
    answer("RunList", subschema::<RunList>(&mut answers));
    answer("RunView", subschema::<RunView>(&mut answers));
    answer("Cancelling", subschema::<Cancelling>(&mut answers));
    answer("Decided", subschema::<Decided>(&mut answers));
    answer("ElicitationReplied", subschema::<ElicitationReplied>(&mut answers));
    answer("SessionList", subschema::<SessionList>(&mut answers));
    answer("Limits", subschema::<Limits>(&mut answers));
    answer("UsageTotals", subschema::<UsageTotals>(&mut answers));
    answer("Health", subschema::<Health>(&mut answers));
    answer("Error", subschema::<ErrorBody>(&mut answers));
    answer(
        "Session",
        json!({"type": "object", "description": "A saved session: odek's session file (spec loop-and-sessions §10) as stored, redacted as ever."}),
    );
    let mut event = odek::agent::events::event_schema();
    if let Some(fields) = event.as_object_mut() {
        fields.remove("$schema");
    }
    answer("Event", event);
    for (name, schema) in answers.take_definitions(true) {
        components.entry(name).or_insert(schema);
    }

    // Request bodies are inlined, described as they are read.
    let mut requests = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut paths = Map::new();
    for operation in operations(&mut requests) {
        let entry = paths.entry(operation.path.to_owned()).or_insert_with(|| json!({}));
        entry[operation.method] = render(&operation);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "odek serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "odek's agent runs over HTTP: start a run, stream its odek.event/v1 events (Server-Sent Events), answer its approvals, collect its answer and artifacts. Every request carries the token odek serve printed (or read from --token-file) as a bearer token.",
        },
        "servers": [{"url": "/"}],
        "security": [{"token": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
        },
    })
}

/// `T`'s schema as a reference into the components (its definition kept by the generator).
fn subschema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    let mut schema = generator.root_schema_for::<T>().to_value();
    if let Some(fields) = schema.as_object_mut() {
        fields.remove("$schema");
        fields.remove("components");
    }
    schema
}

/// `T`'s schema with every subschema inline.
fn inline<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    let mut schema = generator.root_schema_for::<T>().to_value();
    if let Some(fields) = schema.as_object_mut() {
        fields.remove("$schema");
    }
    schema
}

/// Every route of the API, the page's aside.
fn operations(requests: &mut SchemaGenerator) -> Vec<Operation> {
    use Body::{Empty, Events, File, Html, Json};
    let refused = |status: u16, why: &'static str| (status, why, Json("Error"));
    vec![
        Operation {
            method: "get",
            path: "/healthz",
            id: "health",
            summary: "Whether odek serve is serving, and how many runs run",
            request: None,
            answers: vec![(200, "Serving", Json("Health"))],
        },
        Operation {
            method: "post",
            path: "/api/runs",
            id: "startRun",
            summary: "Start a run: one turn of a new or saved session",
            request: Some(inline::<StartRun>(requests)),
            answers: vec![
                (202, "Accepted; its events stream at /api/runs/{run_id}/events", Json("RunStarted")),
                refused(400, "A bad body: malformed JSON, no task, a budget above the operator's, a bad schema"),
                refused(404, "No such session"),
                refused(409, "The session is running a turn"),
                refused(413, "The body is larger than 2 MiB"),
                refused(429, "As many runs run as may (see Retry-After)"),
            ],
        },
        Operation {
            method: "get",
            path: "/api/runs",
            id: "listRuns",
            summary: "Every run remembered, newest first",
            request: None,
            answers: vec![(200, "The runs", Json("RunList"))],
        },
        Operation {
            method: "get",
            path: "/api/runs/{run_id}",
            id: "showRun",
            summary: "A run: status, outcome, answer, usage, plan, approvals waiting, artifacts",
            request: None,
            answers: vec![(200, "The run", Json("RunView")), refused(404, "No such run")],
        },
        Operation {
            method: "post",
            path: "/api/runs/{run_id}/cancel",
            id: "cancelRun",
            summary: "Cancel a running run",
            request: None,
            answers: vec![
                (202, "Cancelling", Json("Cancelling")),
                refused(404, "No such run"),
                refused(409, "The run is over"),
            ],
        },
        Operation {
            method: "get",
            path: "/api/runs/{run_id}/events",
            id: "runEvents",
            summary: "The run's odek.event/v1 stream as Server-Sent Events (the SSE id is the sequence number; resume with Last-Event-ID); it ends with the run's last event",
            request: None,
            answers: vec![
                (200, "The stream; an SSE event named `lost` says how many events the bounded buffer dropped", Events),
                refused(404, "No such run"),
                refused(429, "Too many event streams are open"),
            ],
        },
        Operation {
            method: "post",
            path: "/api/runs/{run_id}/approvals/{approval_id}",
            id: "answerApproval",
            summary: "Answer an approval_requested event of the run",
            request: Some(inline::<Decision>(requests)),
            answers: vec![
                (200, "Answered", Json("Decided")),
                refused(400, "A bad body"),
                refused(404, "No such run or approval"),
                refused(409, "The approval is not waiting (answered, expired, or its run is over)"),
            ],
        },
        Operation {
            method: "post",
            path: "/api/runs/{run_id}/elicitations/{elicitation_id}",
            id: "answerElicitation",
            summary: "Answer an elicitation_requested event of the run (an MCP server asking for input): accept with the form's content, decline or cancel",
            request: Some(inline::<ElicitationReply>(requests)),
            answers: vec![
                (200, "Answered", Json("ElicitationReplied")),
                refused(400, "A bad body"),
                refused(404, "No such run or elicitation"),
                refused(409, "The elicitation is not waiting (answered, expired, or its run is over)"),
                refused(413, "The body is larger than 2 MiB"),
                refused(
                    422,
                    "The content does not fit the form (the reason says which field and why); the elicitation stays open",
                ),
            ],
        },
        Operation {
            method: "get",
            path: "/api/runs/{run_id}/artifacts/{artifact_id}",
            id: "runArtifact",
            summary: "An artifact of the run, by id, checked again before it is served (a download)",
            request: None,
            answers: vec![
                (200, "The file, as an attachment", File),
                refused(404, "No such run or artifact"),
                refused(409, "The file changed since it was verified, or declared no digest"),
                refused(429, "Too many downloads at once"),
            ],
        },
        Operation {
            method: "get",
            path: "/api/sessions",
            id: "listSessions",
            summary: "Every saved session",
            request: None,
            answers: vec![(200, "The sessions", Json("SessionList"))],
        },
        Operation {
            method: "get",
            path: "/api/sessions/{session_id}",
            id: "showSession",
            summary: "A saved session",
            request: None,
            answers: vec![(200, "The session", Json("Session")), refused(404, "No such session")],
        },
        Operation {
            method: "delete",
            path: "/api/sessions/{session_id}",
            id: "deleteSession",
            summary: "Delete a saved session",
            request: None,
            answers: vec![
                (204, "Deleted", Empty),
                refused(404, "No such session"),
                refused(409, "The session is running a turn"),
            ],
        },
        Operation {
            method: "get",
            path: "/api/limits",
            id: "limits",
            summary: "The operator's budgets, and how many runs may run at once",
            request: None,
            answers: vec![(200, "The limits", Json("Limits"))],
        },
        Operation {
            method: "get",
            path: "/api/usage",
            id: "usage",
            summary: "Tokens and estimated cost of every run remembered",
            request: None,
            answers: vec![(200, "The totals", Json("UsageTotals"))],
        },
        Operation {
            method: "get",
            path: "/api/openapi.json",
            id: "openapi",
            summary: "This document",
            request: None,
            answers: vec![(200, "The OpenAPI 3.1 document", Empty)],
        },
        Operation {
            method: "get",
            path: "/acp",
            id: "acp",
            summary: "The Agent Client Protocol over a WebSocket: each text message one JSON-RPC message, as `odek acp` speaks on stdio",
            request: None,
            answers: vec![
                (101, "Switching to the WebSocket", Empty),
                refused(400, "Not a WebSocket handshake"),
                refused(429, "As many ACP connections are open as may be"),
            ],
        },
        Operation {
            method: "get",
            path: "/",
            id: "page",
            summary: "The page; opened with ?token=<token> it sets an HttpOnly cookie and redirects to itself",
            request: None,
            answers: vec![(200, "The page", Html), (303, "The token became a cookie", Empty)],
        },
    ]
}

/// One operation as OpenAPI.
fn render(operation: &Operation) -> Value {
    let mut rendered = json!({"operationId": operation.id, "summary": operation.summary});
    let parameters: Vec<Value> = operation
        .path
        .split('/')
        .filter_map(|part| part.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .chain((operation.id == "runEvents").then(|| {
            json!({"name": "Last-Event-ID", "in": "header", "required": false,
                   "description": "Resume after this event's sequence number", "schema": {"type": "string"}})
        }))
        .chain(
            (operation.id == "page")
                .then(|| json!({"name": "token", "in": "query", "required": false, "schema": {"type": "string"}})),
        )
        .collect();
    if !parameters.is_empty() {
        rendered["parameters"] = Value::Array(parameters);
    }
    if let Some(schema) = &operation.request {
        rendered["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": schema}}});
    }
    let mut responses = Map::new();
    for (status, description, body) in &operation.answers {
        let content = match body {
            Body::Json(name) => {
                Some(json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}))
            }
            Body::Events => Some(json!({"text/event-stream": {
                "schema": {"type": "string", "description": "SSE messages; each `data` is one line matching #/components/schemas/Event"},
                "x-odek-event-schema": {"$ref": "#/components/schemas/Event"},
            }})),
            Body::File => Some(
                json!({"application/octet-stream": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}),
            ),
            Body::Html => Some(json!({"text/html": {"schema": {"type": "string"}}})),
            Body::Empty => None,
        };
        let mut answer = json!({"description": description});
        if let Some(content) = content {
            answer["content"] = content;
        }
        responses.insert(status.to_string(), answer);
    }
    rendered["responses"] = Value::Object(responses);
    rendered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_answer_names_a_component_and_every_request_is_an_object() {
        let document = document();
        let schemas = document["components"]["schemas"].as_object().unwrap();
        let text = document.to_string();
        for (index, _) in text.match_indices("#/components/schemas/") {
            let rest = &text[index + "#/components/schemas/".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            assert!(schemas.contains_key(&name), "a reference to {name}, which is not a component");
        }
        let start = &document["paths"]["/api/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(start["type"], "object");
        assert_eq!(start["required"], json!(["task"]));
        assert!(start["properties"]["limits"]["properties"]["max_cost_usd"].is_object(), "{start}");
    }
}
