//! Typed tools and artifact roots over real pipes: the listed schema is the one derived from the
//! argument type, unknown argument members are ignored even by a closed type, undecodable
//! arguments get an isError result, and an artifact written under a root comes back as a ref
//! whose digest and size match the file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use odek_extension::{ArtifactRoot, Envelope, Server, ToolResponse};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use support::InProcess;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Repeat {
    /// The text to repeat.
    text: String,
    /// How often (default 1).
    #[serde(default)]
    times: Option<usize>,
}

fn server(root: ArtifactRoot) -> Server {
    Server::new("typed", "1")
        .typed_tool("repeat", "Repeats a text.", |_, args: Repeat| async move {
            ToolResponse::text(args.text.repeat(args.times.unwrap_or(1)))
        })
        .typed_tool("store", "Stores a text as an artifact.", move |_, args: Repeat| {
            let root = root.clone();
            async move {
                match root.write("stored", "stored.txt", args.text.as_bytes(), "text/plain") {
                    Ok(artifact) => Envelope::new("stored").with_artifact(artifact).into_response(),
                    Err(error) => ToolResponse::error(error.to_string()),
                }
            }
        })
}

fn call(server: &mut InProcess, tool: &str, arguments: Value) -> Value {
    server.request("tools/call", Some(json!({"name": tool, "arguments": arguments})))["result"].clone()
}

#[test]
fn typed_tools_list_the_derived_schema_and_tolerate_unknown_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = InProcess::start(server(ArtifactRoot::new(dir.path()).unwrap()));
    server.initialize();
    let listed = server.request("tools/list", None);
    let schema = &listed["result"]["tools"][0]["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["text"]));
    assert_eq!(schema["properties"]["text"]["description"], "The text to repeat.");
    assert_eq!(schema["additionalProperties"], false);

    let result = call(&mut server, "repeat", json!({"text": "ab", "times": 2, "added_in_v2": true}));
    assert_eq!(result, json!({"content":[{"type":"text","text":"abab"}],"isError":false}));
    let result = call(&mut server, "repeat", json!({"times": 2}));
    assert_eq!(result["isError"], true);
    assert!(result["content"][0]["text"].as_str().unwrap().starts_with("invalid arguments: missing field `text`"));
}

#[test]
fn artifacts_written_under_a_root_match_their_refs() {
    let dir = tempfile::tempdir().unwrap();
    let root = ArtifactRoot::new(dir.path()).unwrap();
    let mut server = InProcess::start(server(root.clone()));
    server.initialize();
    let result = call(&mut server, "store", json!({"text": "hello\n"}));
    let envelope: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["schema"], "odek.tool-result/v1");
    let artifact = &envelope["artifacts"][0];
    assert_eq!(artifact["schema"], "odek.artifact-ref/v1");
    assert_eq!(artifact["sha256"], "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
    assert_eq!(artifact["size_bytes"], 6);
    let path = std::path::PathBuf::from(artifact["uri"].as_str().unwrap().strip_prefix("file://").unwrap());
    assert_eq!(path.parent(), Some(root.path()));
    assert_eq!(std::fs::read(&path).unwrap(), b"hello\n");
}
