//! The smallest useful odek-extension/v1 server: one `echo` tool. Also the SDK's fast path
//! (no interceptor), which makes it a fair benchmark server.
//!
//! Try it: `printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}' | cargo run -q -p odek-extension --example echo_server`

use odek_extension::{Server, ToolDef, ToolResponse, arguments};
use serde_json::json;

#[derive(serde::Deserialize)]
struct EchoArgs {
    text: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), odek_extension::Error> {
    Server::new("echo-server", env!("CARGO_PKG_VERSION"))
        .tool(
            ToolDef::new(
                "echo",
                "Returns its text argument unchanged.",
                json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}),
            ),
            |_context, args| async move {
                match arguments::<EchoArgs>(args) {
                    Ok(args) => ToolResponse::text(args.text),
                    Err(response) => response,
                }
            },
        )
        .run_stdio()
        .await
}
