//! The built-in tools as `odek mcp` serves them: odek-agent's `read_file`, `write_file`,
//! `patch`, `search_files` and `shell`, each called exactly as a turn of `odek run` calls it —
//! with the runtime's tool context ([`Runtime::tool_context`]: the danger policy of the config,
//! nobody to approve, so what would need approval is denied with the exact denial text) — and
//! confined to the start directory ([`ToolContext::confined_to`]: a path outside it, by name,
//! `..` or symlink, is refused for reads and writes alike). `plan` and the sub-agent tools are
//! not served. Start at [`add_builtin_tools`].

use std::sync::Arc;

use odek::agent::tools::resolve_file_path;
use odek::{Runtime, Tool, ToolContext, ToolError, ToolOutcome};
use odek_contract::redaction::redact;
use odek_extension::{CallContext, Server, ToolAnnotations, ToolDef, ToolResponse};
use serde_json::Value;

/// The tools served, in `tools/list` order; anything else the runtime offers is not.
const SERVED: [&str; 5] = ["read_file", "write_file", "patch", "search_files", "shell"];

/// What a call whose `arguments` are not a JSON object gets (the contract's arguments are one).
pub(super) const NOT_AN_OBJECT: &str = "invalid arguments: arguments must be a JSON object";

/// Adds the served built-in tools the config allows (`tools.enabled` / `tools.disabled`), each
/// with the runtime's tool context confined to the working directory.
pub(super) fn add_builtin_tools(mut server: Server, runtime: &Runtime) -> std::io::Result<Server> {
    let context = runtime.tool_context();
    let root = context.cwd().to_path_buf();
    let context = Arc::new(context.confined_to(&root)?);
    let tools = runtime.builtin_tools();
    let config = &runtime.settings().config;
    for name in SERVED {
        let Some(tool) = tools.iter().find(|tool| tool.definition().name == name) else { continue };
        if !config.tools.allows(name) {
            continue;
        }
        let definition = tool.definition();
        let def = ToolDef::new(definition.name, definition.description, definition.parameters)
            .with_annotations(annotations(name));
        let tool = Arc::clone(tool);
        let context = Arc::clone(&context);
        let is_shell = name == "shell";
        server = server.tool(def, move |call, arguments| {
            let (tool, context) = (Arc::clone(&tool), Arc::clone(&context));
            async move { call_builtin(tool.as_ref(), is_shell, &context, &call, arguments).await }
        });
    }
    Ok(server)
}

/// `read_file` and `search_files` only read; the others may change or destroy files.
fn annotations(name: &str) -> ToolAnnotations {
    match name {
        "read_file" | "search_files" => ToolAnnotations::read_only(),
        _ => ToolAnnotations::destructive(),
    }
}

/// One call: the arguments checked, the tool run with a cancellation of its own (a
/// `notifications/cancelled` stops it the way a cancelled turn does, and no answer is sent),
/// the outcome as an MCP result with every known secret redacted.
async fn call_builtin(
    tool: &dyn Tool,
    is_shell: bool,
    base: &ToolContext,
    call: &CallContext,
    arguments: Value,
) -> ToolResponse {
    let arguments = match arguments {
        Value::Object(_) => arguments.to_string(),
        Value::Null => "{}".to_owned(),
        _ => return ToolResponse::error(NOT_AN_OBJECT),
    };
    let mut context = base.clone();
    context.cancel = base.cancel.child_token();
    if is_shell && let Some(refusal) = shell_workdir_refusal(&arguments, &context) {
        return refusal;
    }
    let running = tool.call(&arguments, &context);
    tokio::pin!(running);
    tokio::select! {
        outcome = &mut running => mcp_result(outcome),
        () = call.cancelled() => {
            context.cancel.cancel();
            // The tool cleans up (a shell's process group is killed) before the call ends.
            let _ = running.await;
            ToolResponse::NoReply
        }
    }
}

/// The shell's `workdir` is a path like any other: it must stay inside the root. (What the
/// command itself touches is the danger classifier's, as in `odek run`.)
fn shell_workdir_refusal(arguments: &str, context: &ToolContext) -> Option<ToolResponse> {
    let workdir = serde_json::from_str::<Value>(arguments).ok()?.get("workdir")?.as_str()?.to_owned();
    if workdir.trim().is_empty() {
        return None;
    }
    resolve_file_path(&workdir, context).err().map(|refusal| ToolResponse::error(redact(&refusal.message)))
}

/// A tool's outcome as an MCP result: its text; a denial or a failure as an `isError` result
/// (a denial's text is the exact denial line the model would read).
fn mcp_result(outcome: Result<ToolOutcome, ToolError>) -> ToolResponse {
    match outcome {
        Ok(outcome) if outcome.denial().is_some() => ToolResponse::error(redact(&outcome.output)),
        Ok(outcome) => ToolResponse::text(redact(&outcome.output)),
        Err(error) => ToolResponse::error(redact(&error.message)),
    }
}
