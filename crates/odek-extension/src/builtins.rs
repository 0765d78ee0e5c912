//! The SDK's own answers to client requests: `initialize`, `ping`, `tools/list` and
//! `resources/list` (paginated alike), `tools/call` (an unknown tool is an `isError` result,
//! or `-32602` as [`Server::unknown_tool`](crate::Server::unknown_tool) chooses),
//! `resources/read` (an unknown uri is `-32002`), and `-32601` for anything else (the
//! `resources/*` methods included when the server offers no resources); and the [`Request`] and
//! [`Reply`] an interceptor sees and gives. An interceptor delegates to these answers with
//! [`CallContext::builtin`].

use std::sync::Arc;

use odek_contract::quoting::quote;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::connection::Identity;
use crate::context::{CallContext, ToolSet};
use crate::jsonrpc::RpcError;
use crate::resources::{Lookup, Resources};
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
            _ => answer_inline(
                &self.connection.identity,
                &self.tools.snapshot(),
                &self.resources,
                &request.method,
                request.params,
            ),
        }
    }
}

/// Whether the built-in answer to `method` may take a while (it runs a handler), so it needs
/// a task of its own rather than an answer in arrival order.
pub(crate) fn runs_in_task(method: &str, resources: &Resources) -> bool {
    method == "tools/call" || (method == "resources/read" && resources.offered())
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
    if !context.resources.offered() {
        return Reply::Error(RpcError::method_not_found());
    }
    let Some(Value::Object(mut params)) = params else {
        return Reply::Error(RpcError::invalid_params("resources/read params must be an object"));
    };
    let Some(Value::String(uri)) = params.remove("uri") else {
        return Reply::Error(RpcError::invalid_params("resources/read params.uri must be a string"));
    };
    let outcome = match context.resources.lookup(&uri) {
        Lookup::Found(contents) => Ok(vec![contents]),
        Lookup::Ask(reader) => reader(Arc::clone(context), uri).await,
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

/// Every built-in method that is answered at once: all but those that [`runs_in_task`].
pub(crate) fn answer_inline(
    identity: &Identity,
    tools: &ToolSet,
    resources: &Resources,
    method: &str,
    params: Option<Value>,
) -> Reply {
    let cursor = params.as_ref().and_then(|params| params.get("cursor"));
    match method {
        "initialize" => Reply::Result(initialize_result(identity, resources.offered())),
        "ping" => Reply::Result(json!({})),
        "tools/list" => list_page(identity, cursor, "tools", tools.entries(), |entry| &entry.def),
        "resources/list" if resources.offered() => {
            list_page(identity, cursor, "resources", resources.listed(), |resource| &resource.def)
        }
        _ => Reply::Error(RpcError::method_not_found()),
    }
}

/// The `initialize` result: `instructions` when configured, and the `resources` capability when
/// the server offers resources (their list never changes while it runs).
fn initialize_result(identity: &Identity, offers_resources: bool) -> Value {
    let mut result = Map::new();
    if let Some(version) = &identity.protocol_version {
        result.insert("protocolVersion".into(), Value::from(version.as_str()));
    }
    let mut capabilities = json!({"tools": {"listChanged": true}});
    if offers_resources {
        capabilities["resources"] = json!({"listChanged": false});
    }
    result.insert("capabilities".into(), capabilities);
    result.insert("serverInfo".into(), json!({"name": identity.name, "version": identity.version}));
    if let Some(instructions) = &identity.instructions {
        result.insert("instructions".into(), Value::from(instructions.as_str()));
    }
    Value::Object(result)
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
