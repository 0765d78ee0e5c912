//! `odek acp`: odek as an Agent Client Protocol agent over stdio, on the official SDK
//! (`agent-client-protocol`, protocol v1). A thin adapter over the runtime's session host
//! ([`odek::host`]): each ACP method is one host call, each host update one `session/update`.
//!
//! Requests that wait on a turn or on the client (`session/prompt`, `session/new`,
//! `session/load`) run on tasks of their own, so the connection keeps reading: a
//! `session/cancel` or a permission answer is never stuck behind the turn it is about. When
//! the client closes stdin every turn is cancelled, every session saved and every MCP server
//! stopped before `odek acp` exits.

mod face;
mod transport;

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, CancelNotification,
    CloseSessionRequest, CloseSessionResponse, ContentBlock, EmbeddedResourceResource, HttpHeader, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, SessionCapabilities,
    SessionCloseCapabilities, SessionMode, SessionModeState, SessionUpdate, SetSessionModeRequest,
    SetSessionModeResponse, StopReason as AcpStop, UnstructuredCommandInput,
};
use agent_client_protocol::{
    Agent, Error, JsonRpcRequest, JsonRpcResponse, Lines, on_receive_notification, on_receive_request,
};
use odek::host::{ClientServers, Host, HostError, HostSettings, Mode, Opened, StopReason, TurnEnd};
use serde::{Deserialize, Serialize};

pub use transport::{MAX_MESSAGE_BYTES, TOO_LARGE_METHOD};

use face::{AcpFace, session_update};

/// Why `odek acp` ended other than by its client closing the connection.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The connection failed (stdin or stdout).
    #[error("acp: {0}")]
    Connection(String),
}

/// An oversized message, as the transport hands it on.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "_odek/message_too_large", response = TooLargeAnswer)]
struct TooLarge {
    bytes: u64,
}

/// Never sent: an oversized message is always answered with an error.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcResponse)]
struct TooLargeAnswer {}

/// Serves ACP on stdin and stdout until the client closes stdin.
pub async fn serve(settings: HostSettings) -> Result<(), AcpError> {
    serve_on(
        settings,
        transport::line_sink(transport::stdout()),
        transport::bounded_lines(transport::stdin(), MAX_MESSAGE_BYTES),
    )
    .await
}

/// Serves ACP on one connection of another transport (`odek serve`'s WebSocket): `output`
/// takes each message the agent sends, `input` yields each message the client sent, at most
/// [`MAX_MESSAGE_BYTES`] each, until it ends. A session host of its own, as `odek acp` has.
pub async fn serve_on<O, I>(settings: HostSettings, output: O, input: I) -> Result<(), AcpError>
where
    O: futures_util::Sink<String, Error = std::io::Error> + Send + 'static,
    I: futures_util::Stream<Item = std::io::Result<String>> + Send + 'static,
{
    let face = Arc::new(AcpFace::default());
    let host = Arc::new(Host::new(settings, Arc::clone(&face) as Arc<dyn odek::host::HostFace>));
    let transport = Lines::new(output, input);
    let connection = Agent
        .v1()
        .name("odek")
        .on_receive_request(
            {
                let face = Arc::clone(&face);
                async move |request: InitializeRequest, responder, cx| {
                    face.bind(&cx);
                    let fs = &request.client_capabilities.fs;
                    face.client_files(fs.read_text_file, fs.write_text_file);
                    responder.respond(initialize(&request))
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let (face, host) = (Arc::clone(&face), Arc::clone(&host));
                async move |request: NewSessionRequest, responder, cx| {
                    face.bind(&cx);
                    let (face, host) = (Arc::clone(&face), Arc::clone(&host));
                    tokio::spawn(async move {
                        let opened = host.create(request.cwd, client_servers(&request.mcp_servers)).await;
                        answer_opened(&face, responder, opened, |opened| {
                            NewSessionResponse::new(opened.id.clone()).modes(modes(opened.mode))
                        });
                    });
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let (face, host) = (Arc::clone(&face), Arc::clone(&host));
                async move |request: LoadSessionRequest, responder, cx| {
                    face.bind(&cx);
                    let (face, host) = (Arc::clone(&face), Arc::clone(&host));
                    tokio::spawn(async move {
                        let servers = client_servers(&request.mcp_servers);
                        let opened = host.load(&request.session_id.0, request.cwd, servers).await;
                        answer_opened(&face, responder, opened, |opened| {
                            LoadSessionResponse::new().modes(modes(opened.mode))
                        });
                    });
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let (face, host) = (Arc::clone(&face), Arc::clone(&host));
                async move |request: PromptRequest, responder, cx| {
                    face.bind(&cx);
                    let id = request.session_id.0.to_string();
                    let (text, context) = match prompt_text(&request.prompt) {
                        Ok(prompt) => prompt,
                        Err(error) => return responder.respond_with_error(error),
                    };
                    if let Some(reply) = slash_command(&host, &id, &text) {
                        let answer = reply.map_err(|error| host_error(&error)).map(|reply| {
                            if let Some(update) = session_update(odek::host::Update::Text(reply)) {
                                face.notify(&id, update);
                            }
                            PromptResponse::new(AcpStop::EndTurn)
                        });
                        return responder.respond_with_result(answer);
                    }
                    // Claimed before the turn's task starts: a session/cancel right behind the
                    // prompt finds the turn.
                    let turn = match host.begin_turn(&id) {
                        Ok(turn) => turn,
                        Err(error) => return responder.respond_with_error(host_error(&error)),
                    };
                    let host = Arc::clone(&host);
                    tokio::spawn(async move {
                        let answer = match host.run(turn, &text, &context).await {
                            Ok(end) => prompt_response(&end),
                            Err(error) => Err(host_error(&error)),
                        };
                        let _ = responder.respond_with_result(answer);
                    });
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let (face, host) = (Arc::clone(&face), Arc::clone(&host));
                async move |request: SetSessionModeRequest, responder, cx| {
                    face.bind(&cx);
                    let answer = match Mode::parse(&request.mode_id.0) {
                        None => Err(Error::invalid_params().data(serde_json::json!(format!(
                            "unknown mode {:?}; the modes are default, ask and read-only",
                            &*request.mode_id.0
                        )))),
                        Some(mode) => host
                            .set_mode(&request.session_id.0, mode)
                            .map(|()| SetSessionModeResponse::new())
                            .map_err(|error| host_error(&error)),
                    };
                    responder.respond_with_result(answer)
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            {
                let host = Arc::clone(&host);
                async move |request: CloseSessionRequest, responder, _cx| {
                    let host = Arc::clone(&host);
                    // Closing waits for the turn to wind down and the servers to stop: off the
                    // dispatch loop.
                    tokio::spawn(async move {
                        let closed = host.close(&request.session_id.0).await;
                        let _ = responder.respond_with_result(
                            closed.map(|()| CloseSessionResponse::new()).map_err(|error| host_error(&error)),
                        );
                    });
                    Ok(())
                }
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: TooLarge, responder, _cx| {
                responder.respond_with_error(Error::invalid_request().data(serde_json::json!(format!(
                    "message of {} bytes is larger than the {MAX_MESSAGE_BYTES} bytes odek acp reads",
                    request.bytes
                ))))
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            {
                let host = Arc::clone(&host);
                async move |notification: CancelNotification, _cx| {
                    if let Err(error) = host.cancel(&notification.session_id.0) {
                        eprintln!("odek acp: session/cancel: {error}");
                    }
                    Ok(())
                }
            },
            on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    host.close_all().await;
    match connection {
        Ok(()) => Ok(()),
        Err(error) if agent_client_protocol::is_incoming_transport_closed(&error) => Ok(()),
        Err(error) => Err(AcpError::Connection(error.to_string())),
    }
}

/// What odek can do, honestly: loading sessions, text and embedded text resources in prompts,
/// the client's MCP servers over stdio, Streamable HTTP and the legacy SSE transport.
fn initialize(request: &InitializeRequest) -> InitializeResponse {
    let version = request.protocol_version.min(ProtocolVersion::V1);
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
        .mcp_capabilities(McpCapabilities::new().http(true).sse(true))
        .session_capabilities(SessionCapabilities::new().close(SessionCloseCapabilities::new()));
    InitializeResponse::new(version)
        .agent_capabilities(capabilities)
        .agent_info(Implementation::new("odek", env!("CARGO_PKG_VERSION")).title("odek".to_owned()))
}

/// The answer to `session/new` or `session/load`: a loaded session's history first (the
/// protocol's order), then the response, then the slash commands; or the host's refusal.
fn answer_opened<T: JsonRpcResponse>(
    face: &AcpFace,
    responder: Responder<T>,
    opened: Result<Opened, HostError>,
    response: impl FnOnce(&Opened) -> T,
) {
    match opened {
        Ok(opened) => {
            for update in opened.history.iter().cloned().filter_map(session_update) {
                face.notify(&opened.id, update);
            }
            if responder.respond(response(&opened)).is_ok() {
                face.notify(&opened.id, commands());
            }
        }
        Err(error) => {
            let _ = responder.respond_with_error(host_error(&error));
        }
    }
}

/// The client's MCP servers in the config files' format: stdio as `command`, `args`, `env`;
/// Streamable HTTP and legacy SSE as `url`, `headers`, `type`. The host treats them as project
/// servers (the project file's restrictions, approval first, the sandbox).
fn client_servers(servers: &[McpServer]) -> ClientServers {
    servers
        .iter()
        .filter_map(|server| {
            let (name, entry) = match server {
                McpServer::Stdio(stdio) => (
                    &stdio.name,
                    serde_json::json!({
                        "command": stdio.command,
                        "args": stdio.args,
                        "env": stdio.env.iter().map(|var| (var.name.clone(), serde_json::json!(var.value))).collect::<serde_json::Map<_, _>>(),
                    }),
                ),
                McpServer::Http(http) => (&http.name, remote("http", &http.url, &http.headers)),
                McpServer::Sse(sse) => (&sse.name, remote("sse", &sse.url, &sse.headers)),
                _ => return None,
            };
            Some((name.clone(), entry))
        })
        .collect()
}

/// A client's remote MCP server entry: its transport `kind`, URL and headers.
fn remote(kind: &str, url: &str, headers: &[HttpHeader]) -> serde_json::Value {
    let headers: serde_json::Map<String, serde_json::Value> =
        headers.iter().map(|header| (header.name.clone(), serde_json::json!(header.value))).collect();
    serde_json::json!({"type": kind, "url": url, "headers": headers})
}

/// The session modes, `current` selected.
fn modes(current: Mode) -> SessionModeState {
    let available = Mode::ALL
        .iter()
        .map(|mode| SessionMode::new(mode.id(), mode.name()).description(mode.description().to_owned()))
        .collect();
    SessionModeState::new(current.id(), available)
}

/// The slash commands odek answers itself, without a model call.
fn commands() -> SessionUpdate {
    let hint = |text: &str| Some(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(text)));
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
        AvailableCommand::new("plan", "Show the current plan"),
        AvailableCommand::new("usage", "Show the tokens this session spent and its budgets"),
        AvailableCommand::new("model", "Show the model, or switch to another").input(hint("model id")),
    ]))
}

/// The answer of a slash command odek handles (`None`: not one of them, the prompt goes to
/// the model).
fn slash_command(host: &Host, id: &str, text: &str) -> Option<Result<String, HostError>> {
    let text = text.trim();
    let (command, argument) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let argument = argument.trim();
    Some(match command {
        "/plan" => host.plan(id).map(|plan| plan.unwrap_or_else(|| "No plan yet.".to_owned())),
        "/usage" => host.spent(id).map(|(spent, limits)| {
            let limit = |value: u64| if value == 0 { "no limit".to_owned() } else { value.to_string() };
            format!(
                "turns: {}\ninput tokens: {} (limit {})\noutput tokens: {} (limit {})\ntool calls: {} (limit {})",
                spent.turns,
                spent.usage.input_tokens,
                limit(limits.max_input_tokens),
                spent.usage.output_tokens,
                limit(limits.max_output_tokens),
                spent.tool_calls,
                limit(limits.max_tool_calls)
            )
        }),
        "/model" => host.model(id, (!argument.is_empty()).then_some(argument)).map(|model| format!("model: {model}")),
        _ => return None,
    })
}

/// The prompt's text (text blocks as they are, resource links by their URI) and its embedded
/// text resources, `(uri, text)`, which the host attaches as untrusted context like an `@file`.
/// Images, audio and binary resources are refused (the capabilities say so).
fn prompt_text(blocks: &[ContentBlock]) -> Result<(String, Vec<(String, String)>), Error> {
    let mut text = String::new();
    let mut context = Vec::new();
    let mut size = 0_usize;
    for block in blocks {
        match block {
            ContentBlock::Text(part) => text.push_str(&part.text),
            ContentBlock::ResourceLink(link) => text.push_str(&format!("\n[{}]({})\n", link.name, link.uri)),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    size += contents.uri.len() + contents.text.len();
                    context.push((contents.uri.clone(), contents.text.clone()));
                }
                _ => return Err(unsupported("a binary resource")),
            },
            ContentBlock::Image(_) => return Err(unsupported("an image")),
            ContentBlock::Audio(_) => return Err(unsupported("audio")),
            _ => return Err(unsupported("this kind of content")),
        }
        if text.len() + size > odek::host::MAX_PROMPT_BYTES {
            return Err(host_error(&HostError::PromptTooLarge(text.len() + size)));
        }
    }
    Ok((text, context))
}

fn unsupported(what: &str) -> Error {
    Error::invalid_params().data(serde_json::json!(format!("odek acp does not take {what} in a prompt")))
}

/// The turn's end: the stop reason, and odek's outcome class (and the budget that ran out) in
/// `_meta.odek`. A turn that failed otherwise (the model, a stall, a refusal under `--strict`, a
/// failed check) is a JSON-RPC error with the failure's text and the same `_meta.odek` as data.
fn prompt_response(end: &TurnEnd) -> Result<PromptResponse, Error> {
    let stop = match end.stop {
        StopReason::EndTurn => AcpStop::EndTurn,
        StopReason::MaxTokens => AcpStop::MaxTokens,
        StopReason::MaxTurnRequests => AcpStop::MaxTurnRequests,
        StopReason::Cancelled => AcpStop::Cancelled,
    };
    let mut odek = serde_json::Map::new();
    odek.insert("outcome".into(), serde_json::json!(end.outcome.as_str()));
    if let Some(budget) = &end.budget {
        odek.insert("budget".into(), serde_json::json!(budget));
    }
    if let Some(error) = &end.error {
        odek.insert("error".into(), serde_json::json!(error));
    }
    odek.insert(
        "usage".into(),
        serde_json::json!({ "input_tokens": end.usage.input_tokens, "output_tokens": end.usage.output_tokens }),
    );
    if let (StopReason::EndTurn, Some(error)) = (end.stop, &end.error) {
        return Err(Error::new(-32603, error.clone()).data(serde_json::json!({ "odek": odek })));
    }
    let mut meta = serde_json::Map::new();
    meta.insert("odek".into(), serde_json::Value::Object(odek));
    Ok(PromptResponse::new(stop).meta(meta))
}

/// A host refusal as a JSON-RPC error: the client's mistakes are invalid params or request,
/// the rest internal errors; the message is the host's text.
fn host_error(error: &HostError) -> Error {
    let code = match error {
        HostError::UnknownSession(_)
        | HostError::Cwd(..)
        | HostError::PromptTooLarge(_)
        | HostError::AlreadyOpen(_)
        | HostError::AboveOperator { .. }
        | HostError::NotPositive(_) => -32602,
        HostError::Busy(_) | HostError::TooManySessions(_) => -32600,
        HostError::Runtime(_) => -32603,
    };
    Error::new(code, error.to_string())
}
