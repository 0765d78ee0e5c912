//! \[beyond\] The two built-in tools over the MCP servers' resources, offered while some live
//! server's handshake offered them: `list_mcp_resources` (a page of one server, or the first page
//! of each) and `read_mcp_resource` (one uri). Their results are the hub's (capped, model view)
//! inside the untrusted wrapper, source `mcp:<server>:resources/list` or `…/resources/read` —
//! a `/` is in no tool name, so no tool's source can be taken. Start at [`resource_tools`].

use std::sync::Arc;

use odek_llm::{BoxFuture, ToolDefinition};
use odek_mcp::{CallOptions, McpHub};
use serde::Deserialize;
use serde_json::json;

use crate::tool::{Tool, ToolContext, ToolError, ToolOutcome};

/// The listing tool's name.
pub const LIST_MCP_RESOURCES: &str = "list_mcp_resources";
/// The reading tool's name.
pub const READ_MCP_RESOURCE: &str = "read_mcp_resource";

/// Both tools when some live server offers resources (their `server` argument names those
/// servers); none otherwise.
pub(crate) fn resource_tools(hub: &Arc<McpHub>) -> Vec<Arc<dyn Tool>> {
    let servers = hub.resource_servers();
    if servers.is_empty() {
        return Vec::new();
    }
    vec![
        Arc::new(ListResources { hub: Arc::clone(hub), servers: servers.clone() }),
        Arc::new(ReadResource { hub: Arc::clone(hub), servers }),
    ]
}

struct ListResources {
    hub: Arc<McpHub>,
    servers: Vec<String>,
}

struct ReadResource {
    hub: Arc<McpHub>,
    servers: Vec<String>,
}

#[derive(Deserialize)]
struct ListArguments {
    #[serde(default)]
    server: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct ReadArguments {
    #[serde(default)]
    server: Option<String>,
    uri: String,
}

fn server_property(servers: &[String]) -> serde_json::Value {
    json!({"type": "string", "enum": servers, "description": "The MCP server (its configured name)."})
}

impl Tool for ListResources {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: LIST_MCP_RESOURCES.to_owned(),
            description: "List the resources (documents, files, records) that connected MCP servers offer, one line \
                          each with the uri to pass to read_mcp_resource. Without `server`: the first page of every \
                          server with resources. With `server` (and the `cursor` a previous page gave): that page."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": server_property(&self.servers),
                    "cursor": {"type": "string", "description": "The cursor a previous page named, for the next page."}
                },
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(list(&self.hub, &self.servers, arguments, call_options(ctx)))
    }
}

impl Tool for ReadResource {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: READ_MCP_RESOURCE.to_owned(),
            description: "Read one resource of an MCP server by its uri (from list_mcp_resources, or a resource link \
                          in a tool result). Text contents come back as text; binary contents as a line naming their \
                          type and size."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "server": server_property(&self.servers),
                    "uri": {"type": "string", "description": "The resource's uri, exactly as listed."}
                },
                "required": if self.servers.len() == 1 { json!(["uri"]) } else { json!(["server", "uri"]) },
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(read(&self.hub, &self.servers, arguments, call_options(ctx)))
    }
}

/// A call of one of the two tools by name, exactly as the loop makes it (for `odek ext call`):
/// `None` when `name` is neither, or when no live server offers resources (the tools are not
/// offered then).
pub async fn call_resource_tool(
    hub: &Arc<McpHub>,
    name: &str,
    arguments: &str,
    options: CallOptions,
) -> Option<Result<ToolOutcome, ToolError>> {
    let servers = hub.resource_servers();
    if servers.is_empty() {
        return None;
    }
    match name {
        LIST_MCP_RESOURCES => Some(list(hub, &servers, arguments, options).await),
        READ_MCP_RESOURCE => Some(read(hub, &servers, arguments, options).await),
        _ => None,
    }
}

/// `list_mcp_resources`: one page of the named server, or the first page of each of `servers`
/// (one server's failure is shown in its place, not hiding the others).
async fn list(
    hub: &McpHub,
    servers: &[String],
    arguments: &str,
    options: CallOptions,
) -> Result<ToolOutcome, ToolError> {
    let arguments: ListArguments = crate::tools::parse_arguments(LIST_MCP_RESOURCES, arguments)?;
    if arguments.cursor.is_some() && arguments.server.is_none() {
        return Err(ToolError::new("list_mcp_resources: a cursor needs the server it came from"));
    }
    let servers = match &arguments.server {
        Some(server) => vec![server.clone()],
        None => servers.to_vec(),
    };
    let mut pages = Vec::with_capacity(servers.len());
    let mut observed: Option<u64> = None;
    for server in &servers {
        let page = hub.list_resources(server, arguments.cursor.as_deref(), LIST_MCP_RESOURCES, &options).await;
        match (page, servers.len()) {
            (Ok(output), _) => {
                if let Some(chars) = output.observed_chars {
                    observed = Some(observed.unwrap_or(0).saturating_add(chars as u64));
                }
                pages.push(output.text);
            }
            (Err(error), 1) => return Err(ToolError::new(error.to_string())),
            (Err(error), _) => pages.push(format!("error: {error}")),
        }
    }
    let source = match &arguments.server {
        Some(server) => format!("mcp:{server}:resources/list"),
        None => "mcp:resources/list".to_owned(),
    };
    let mut outcome = ToolOutcome::untrusted(pages.join("\n\n"), source);
    outcome.truncated_observed_chars = observed;
    Ok(outcome)
}

/// `read_mcp_resource`: one uri of the named server (the only one, when one server offers
/// resources).
async fn read(
    hub: &McpHub,
    servers: &[String],
    arguments: &str,
    options: CallOptions,
) -> Result<ToolOutcome, ToolError> {
    let arguments: ReadArguments = crate::tools::parse_arguments(READ_MCP_RESOURCE, arguments)?;
    let server = match (arguments.server, servers) {
        (Some(server), _) => server,
        (None, [only]) => only.clone(),
        (None, _) => return Err(ToolError::new("read_mcp_resource: name the server (several offer resources)")),
    };
    let output = hub
        .read_resource(&server, &arguments.uri, &options)
        .await
        .map_err(|error| ToolError::new(error.to_string()))?;
    let mut outcome = ToolOutcome::untrusted(output.text, format!("mcp:{server}:resources/read"));
    outcome.truncated_observed_chars = output.observed_chars.map(|chars| chars as u64);
    Ok(outcome)
}

fn call_options(ctx: &ToolContext) -> CallOptions {
    CallOptions { deadline: None, cancel: Some(ctx.cancel.clone()) }
}
