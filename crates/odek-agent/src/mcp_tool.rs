//! MCP tools in the loop's catalogue: each exposed tool of the hub as a [`Tool`] whose output is
//! the contract's text inside the untrusted wrapper (source `mcp:<server>:<tool>`).

use std::sync::Arc;

use odek_llm::{BoxFuture, ToolDefinition};
use odek_mcp::{CallOptions, McpError, McpHub, ToolDescriptor, ToolOutput};

use crate::tool::{Tool, ToolContext, ToolError, ToolOutcome};

/// One exposed MCP tool.
pub(crate) struct McpTool {
    hub: Arc<McpHub>,
    descriptor: ToolDescriptor,
}

impl McpTool {
    fn new(hub: Arc<McpHub>, descriptor: ToolDescriptor) -> McpTool {
        McpTool { hub, descriptor }
    }

    /// Every tool the hub exposes now.
    pub(crate) fn all(hub: &Arc<McpHub>) -> Vec<Arc<dyn Tool>> {
        hub.tools()
            .into_iter()
            .map(|descriptor| Arc::new(McpTool::new(Arc::clone(hub), descriptor)) as Arc<dyn Tool>)
            .collect()
    }
}

impl Tool for McpTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.descriptor.exposed.as_str().to_owned(),
            description: self.descriptor.description.clone(),
            parameters: self.descriptor.input_schema.clone(),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let options = CallOptions { deadline: None, cancel: Some(ctx.cancel.clone()) };
            mcp_outcome(&self.descriptor, self.hub.call(self.descriptor.exposed.as_str(), arguments, &options).await)
        })
    }
}

/// What one call of an MCP tool gives the loop: the contract's text with the untrusted source
/// `mcp:<server>:<tool>` and the cap's observed count, or the error's text. `odek ext call
/// --model-view` goes through here too.
pub fn mcp_outcome(
    descriptor: &ToolDescriptor,
    result: Result<ToolOutput, McpError>,
) -> Result<ToolOutcome, ToolError> {
    match result {
        Ok(output) => Ok(ToolOutcome {
            output: output.text,
            untrusted_source: Some(format!("mcp:{}:{}", descriptor.server, descriptor.raw_name)),
            truncated_observed_chars: output.observed_chars.map(|chars| chars as u64),
            denials: Vec::new(),
            edit: None,
            artifacts: output.artifacts,
        }),
        Err(err) => Err(ToolError::new(err.to_string())),
    }
}
