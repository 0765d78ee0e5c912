//! The SDK's own answers to client requests: `initialize`, `ping`, `tools/list` (paginated),
//! `tools/call` (an unknown tool is an `isError` result) and `-32601` for anything else; and the
//! [`Request`] and [`Reply`] an interceptor sees and gives. An interceptor delegates to these
//! answers with [`CallContext::builtin`].

use std::sync::Arc;

use odek_contract::quoting::quote;
use serde::Serialize;
use serde_json::{Value, json};

use crate::connection::Identity;
use crate::context::{CallContext, ToolSet};
use crate::jsonrpc::RpcError;
use crate::tools::{ToolDef, ToolResponse, ToolResult};

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
    /// Runs the SDK's own handling of `request` (initialize, ping, tools/list, tools/call,
    /// method-not-found). Interceptors call this to delegate after (or instead of) their own
    /// behaviour.
    pub async fn builtin(self: &Arc<Self>, request: Request) -> Reply {
        if request.method == "tools/call" {
            return call_tool(self, request.params).await.into();
        }
        builtin_without_tools(&self.connection.identity, &self.tools.snapshot(), &request.method, request.params)
    }
}

/// `tools/call`: looks the tool up in the current snapshot and runs its handler. An unknown
/// tool is a tool error (`isError`), not a protocol error, so the model can see it.
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
            return ToolResponse::error(format!("unknown tool {}", quote(&name)));
        }
    };
    handler(Arc::clone(context), arguments).await
}

/// Every built-in method except `tools/call`.
pub(crate) fn builtin_without_tools(
    identity: &Identity,
    tools: &ToolSet,
    method: &str,
    params: Option<Value>,
) -> Reply {
    match method {
        "initialize" => Reply::Result(initialize_result(identity)),
        "ping" => Reply::Result(json!({})),
        "tools/list" => list_tools(identity, tools, params.as_ref()),
        _ => Reply::Error(RpcError::method_not_found()),
    }
}

fn initialize_result(identity: &Identity) -> Value {
    let mut result = serde_json::Map::new();
    if let Some(version) = &identity.protocol_version {
        result.insert("protocolVersion".into(), Value::from(version.as_str()));
    }
    result.insert("capabilities".into(), json!({"tools": {"listChanged": true}}));
    result.insert("serverInfo".into(), json!({"name": identity.name, "version": identity.version}));
    Value::Object(result)
}

/// One page of `tools/list`. Cursors are opaque to clients; internally they carry the offset of
/// the page's first tool.
fn list_tools(identity: &Identity, tools: &ToolSet, params: Option<&Value>) -> Reply {
    let offset = match params.and_then(|params| params.get("cursor")) {
        None | Some(Value::Null) => 0,
        Some(cursor) => match cursor.as_str().and_then(decode_cursor) {
            Some(offset) => offset,
            None => return Reply::Error(RpcError::invalid_params("invalid cursor")),
        },
    };
    let entries = tools.entries();
    let start = offset.min(entries.len());
    let end = match identity.page_size {
        Some(size) => start.saturating_add(size).min(entries.len()),
        None => entries.len(),
    };

    #[derive(Serialize)]
    struct Page<'a> {
        tools: Vec<&'a ToolDef>,
        #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
    }
    let page = Page {
        tools: entries[start..end].iter().map(|entry| &entry.def).collect(),
        next_cursor: (end < entries.len()).then(|| encode_cursor(end)),
    };
    match serde_json::to_value(&page) {
        Ok(value) => Reply::Result(value),
        Err(error) => Reply::Error(RpcError::internal(format!("serialise tools: {error}"))),
    }
}

fn encode_cursor(offset: usize) -> String {
    format!("offset-{offset}")
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    cursor.strip_prefix("offset-")?.parse().ok()
}
