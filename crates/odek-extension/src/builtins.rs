//! The SDK's own answers to client requests: `initialize` (the negotiated revision, the
//! capabilities of what the server offers), `ping`, the lists (`tools/list`, `resources/list`,
//! `resources/templates/list`, `prompts/list`, paginated alike), `tools/call` (an unknown tool
//! is an `isError` result, or `-32602` as [`Server::unknown_tool`](crate::Server::unknown_tool)
//! chooses), `resources/read` (an unknown uri is `-32002`), `resources/subscribe` and
//! `unsubscribe`, `prompts/get`, `completion/complete`, `logging/setLevel`, and `-32601` for
//! anything else (a feature's methods included when the server does not offer it); and the
//! [`Request`] and [`Reply`] an interceptor sees and gives. An interceptor delegates to these
//! answers with [`CallContext::builtin`].

use std::sync::Arc;

use odek_contract::quoting::quote;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::completion::CompletionRequest;
use crate::connection::{Connection, Identity};
use crate::context::{CallContext, ToolSet};
use crate::jsonrpc::RpcError;
use crate::logging::LogLevel;
use crate::offerings::Offerings;
use crate::resources::Lookup;
use crate::server::UnknownTool;
use crate::tools::{ToolResponse, ToolResult};

/// A request as seen by an interceptor.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub params: Option<Value>,
}

/// An interceptor's answer to a request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A `result` member.
    Result(Value),
    /// A `tools/call` result.
    Tool(ToolResult),
    /// An `error` member.
    Error(RpcError),
    /// No reply is sent.
    NoReply,
}

impl From<ToolResponse> for Reply {
    fn from(response: ToolResponse) -> Self {
        match response {
            ToolResponse::Result(result) => Self::Tool(result),
            ToolResponse::RpcError(error) => Self::Error(error),
            ToolResponse::NoReply => Self::NoReply,
        }
    }
}

impl CallContext {
    /// Runs the SDK's own handling of `request` (initialize, ping, the lists, tools/call,
    /// resources/read, method-not-found). Interceptors call this to delegate after (or instead
    /// of) their own behaviour.
    pub async fn builtin(self: &Arc<Self>, request: Request) -> Reply {
        match request.method.as_str() {
            "tools/call" => call_tool(self, request.params).await.into(),
            "resources/read" => read_resource(self, request.params).await,
            "prompts/get" => get_prompt(self, request.params).await,
            "completion/complete" => complete(self, request.params).await,
            _ => answer_inline(
                &self.connection,
                &self.tools.snapshot(),
                &self.offerings,
                &request.method,
                request.params,
            ),
        }
    }
}

/// Whether the built-in answer to `method` may take a while (it runs a handler), so it needs
/// a task of its own rather than an answer in arrival order.
pub(crate) fn runs_in_task(method: &str, offerings: &Offerings) -> bool {
    match method {
        "tools/call" => true,
        "resources/read" => offerings.resources.offered(),
        "prompts/get" => offerings.prompts.offered(),
        "completion/complete" => offerings.completer.is_some(),
        _ => false,
    }
}

/// `tools/call`: looks the tool up in the current snapshot and runs its handler. An unknown
/// tool is a tool error (`isError`), so the model can see it, unless the server answers it as
/// the protocol error `-32602` ([`UnknownTool`]).
async fn call_tool(context: &Arc<CallContext>, params: Option<Value>) -> ToolResponse {
    let Some(Value::Object(mut params)) = params else {
        return ToolResponse::RpcError(RpcError::invalid_params("tools/call params must be an object"));
    };
    let Some(Value::String(name)) = params.remove("name") else {
        return ToolResponse::RpcError(RpcError::invalid_params("tools/call params.name must be a string"));
    };
    let arguments = params.remove("arguments").unwrap_or(Value::Null);
    let handler = match context.tools.snapshot().get(&name) {
        Some(entry) => Arc::clone(&entry.handler),
        None => {
            let message = format!("unknown tool {}", quote(&name));
            return match context.connection.identity.unknown_tool {
                UnknownTool::ToolError => ToolResponse::error(message),
                UnknownTool::InvalidParams => ToolResponse::RpcError(RpcError::invalid_params(message)),
            };
        }
    };
    handler(Arc::clone(context), arguments).await
}

/// `resources/read`: a static resource's contents, else the reader's answer, else `-32002`.
async fn read_resource(context: &Arc<CallContext>, params: Option<Value>) -> Reply {
    if !context.offerings.resources.offered() {
        return Reply::Error(RpcError::method_not_found());
    }
    let Some(Value::Object(mut params)) = params else {
        return Reply::Error(RpcError::invalid_params("resources/read params must be an object"));
    };
    let Some(Value::String(uri)) = params.remove("uri") else {
        return Reply::Error(RpcError::invalid_params("resources/read params.uri must be a string"));
    };
    let outcome = match context.offerings.resources.lookup(&uri) {
        Lookup::Found(contents) => Ok(vec![contents]),
        Lookup::Ask(reader) => reader(Arc::clone(context), uri).await,
        Lookup::Template(reader, variables) => reader(Arc::clone(context), uri, variables).await,
        Lookup::NotFound => Err(RpcError::resource_not_found(&uri)),
    };

    #[derive(Serialize)]
    struct ReadResult<T> {
        contents: T,
    }
    match outcome.map(|contents| serde_json::to_value(ReadResult { contents })) {
        Ok(Ok(result)) => Reply::Result(result),
        Ok(Err(error)) => Reply::Error(RpcError::internal(format!("serialise resource contents: {error}"))),
        Err(error) => Reply::Error(error),
    }
}

/// `prompts/get`: the prompt's arguments checked against its definition, then its handler.
async fn get_prompt(context: &Arc<CallContext>, params: Option<Value>) -> Reply {
    if !context.offerings.prompts.offered() {
        return Reply::Error(RpcError::method_not_found());
    }
    let Some(Value::Object(mut params)) = params else {
        return Reply::Error(RpcError::invalid_params("prompts/get params must be an object"));
    };
    let Some(Value::String(name)) = params.remove("name") else {
        return Reply::Error(RpcError::invalid_params("prompts/get params.name must be a string"));
    };
    let prompt = match context.offerings.prompts.get(&name) {
        Ok(prompt) => prompt,
        Err(error) => return Reply::Error(error),
    };
    let arguments = match prompt.arguments_for(params.remove("arguments")) {
        Ok(arguments) => arguments,
        Err(error) => return Reply::Error(error),
    };
    match (prompt.handler)(Arc::clone(context), arguments).await.map(serde_json::to_value) {
        Ok(Ok(result)) => Reply::Result(result),
        Ok(Err(error)) => Reply::Error(RpcError::internal(format!("serialise the prompt: {error}"))),
        Err(error) => Reply::Error(error),
    }
}

/// `completion/complete`: the request checked, then the server's completer.
async fn complete(context: &Arc<CallContext>, params: Option<Value>) -> Reply {
    let Some(completer) = &context.offerings.completer else {
        return Reply::Error(RpcError::method_not_found());
    };
    let request = match CompletionRequest::from_params(params) {
        Ok(request) => request,
        Err(error) => return Reply::Error(error),
    };
    match completer(Arc::clone(context), request).await {
        Ok(completion) => Reply::Result(completion.into_result()),
        Err(error) => Reply::Error(error),
    }
}

/// Every built-in method that is answered at once: all but those that [`runs_in_task`].
pub(crate) fn answer_inline(
    connection: &Connection,
    tools: &ToolSet,
    offerings: &Offerings,
    method: &str,
    params: Option<Value>,
) -> Reply {
    let identity = &connection.identity;
    let cursor = params.as_ref().and_then(|params| params.get("cursor"));
    let resources = &offerings.resources;
    match method {
        "initialize" => Reply::Result(initialize(connection, offerings, params.as_ref())),
        "ping" => Reply::Result(json!({})),
        "tools/list" => list_page(identity, cursor, "tools", tools.entries(), |entry| &entry.def),
        "resources/list" if resources.offered() => {
            list_page(identity, cursor, "resources", resources.listed(), |resource| &resource.def)
        }
        "resources/templates/list" if resources.offered() => {
            list_page(identity, cursor, "resourceTemplates", resources.templates(), |template| &template.def)
        }
        "resources/subscribe" | "resources/unsubscribe" if resources.offered() && offerings.subscriptions => {
            subscription(connection, offerings, method == "resources/subscribe", params)
        }
        "prompts/list" if offerings.prompts.offered() => {
            list_page(identity, cursor, "prompts", offerings.prompts.entries(), |prompt| &prompt.def)
        }
        "logging/setLevel" if offerings.logging => set_log_level(connection, params),
        _ => Reply::Error(RpcError::method_not_found()),
    }
}

/// `initialize`: remembers the client's capabilities, and answers the negotiated revision,
/// what the server offers, its identity, and `instructions` when configured.
fn initialize(connection: &Connection, offerings: &Offerings, params: Option<&Value>) -> Value {
    let identity = &connection.identity;
    let capabilities = params.and_then(|params| params.get("capabilities")).cloned().unwrap_or_else(|| json!({}));
    connection.set_client_capabilities(capabilities);
    let requested = params.and_then(|params| params.get("protocolVersion")).and_then(Value::as_str);
    let mut result = Map::new();
    if let Some(version) = identity.protocol_version.answer(requested) {
        result.insert("protocolVersion".into(), Value::from(version));
    }
    result.insert("capabilities".into(), offerings.capabilities());
    result.insert("serverInfo".into(), json!({"name": identity.name, "version": identity.version}));
    if let Some(instructions) = &identity.instructions {
        result.insert("instructions".into(), Value::from(instructions.as_str()));
    }
    Value::Object(result)
}

/// `logging/setLevel`: messages below the level are not sent on this connection from now on.
fn set_log_level(connection: &Connection, params: Option<Value>) -> Reply {
    let level = params.as_ref().and_then(|params| params.get("level")).and_then(Value::as_str);
    match level.and_then(LogLevel::parse) {
        Some(level) => {
            connection.log_threshold.set(level);
            Reply::Result(json!({}))
        }
        None => Reply::Error(RpcError::invalid_params(format!(
            "logging/setLevel params.level must be one of {}",
            LogLevel::ALL.map(LogLevel::as_str).join(", ")
        ))),
    }
}

/// `resources/subscribe` (of a uri the server serves: `-32002` otherwise) and
/// `resources/unsubscribe` (of any uri).
fn subscription(connection: &Connection, offerings: &Offerings, subscribe: bool, params: Option<Value>) -> Reply {
    let method = if subscribe { "resources/subscribe" } else { "resources/unsubscribe" };
    let Some(Value::String(uri)) = params.and_then(|mut params| params.get_mut("uri").map(Value::take)) else {
        return Reply::Error(RpcError::invalid_params(format!("{method} params.uri must be a string")));
    };
    if !subscribe {
        connection.unsubscribe(&uri);
        return Reply::Result(json!({}));
    }
    if matches!(offerings.resources.lookup(&uri), Lookup::NotFound) {
        return Reply::Error(RpcError::resource_not_found(&uri));
    }
    match connection.subscribe(&uri) {
        Ok(()) => Reply::Result(json!({})),
        Err(reason) => Reply::Error(RpcError::invalid_params(reason)),
    }
}

/// One page of a list method: `{<member>: [...], "nextCursor"?}` with at most the server's page
/// size of `entries`, each shown as `def` shows it. Cursors are opaque to clients; internally
/// they carry the offset of the page's first entry, so a cursor past the end gives an empty
/// last page, and anything else (a cursor that is not a string, or not one of ours, however
/// long) is `-32602 "invalid cursor"`.
fn list_page<'a, E, D: Serialize + 'a>(
    identity: &Identity,
    cursor: Option<&Value>,
    member: &str,
    entries: &'a [E],
    def: impl Fn(&'a E) -> &'a D,
) -> Reply {
    let offset = match cursor {
        None | Some(Value::Null) => 0,
        Some(cursor) => match cursor.as_str().and_then(decode_cursor) {
            Some(offset) => offset,
            None => return Reply::Error(RpcError::invalid_params("invalid cursor")),
        },
    };
    let start = offset.min(entries.len());
    let end = match identity.page_size {
        Some(size) => start.saturating_add(size).min(entries.len()),
        None => entries.len(),
    };
    let shown: Vec<&D> = entries[start..end].iter().map(def).collect();
    let mut page = Map::new();
    match serde_json::to_value(shown) {
        Ok(listed) => page.insert(member.to_owned(), listed),
        Err(error) => return Reply::Error(RpcError::internal(format!("serialise {member}: {error}"))),
    };
    if end < entries.len() {
        page.insert("nextCursor".into(), Value::from(encode_cursor(end)));
    }
    Reply::Result(Value::Object(page))
}

fn encode_cursor(offset: usize) -> String {
    format!("offset-{offset}")
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    cursor.strip_prefix("offset-")?.parse().ok()
}
