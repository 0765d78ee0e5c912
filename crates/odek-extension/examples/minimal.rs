//! A complete odek-extension/v1 server with an artifact, in under 40 lines: one typed tool that
//! stores a note as a file under the artifact root and returns an `odek.tool-result/v1` envelope
//! referencing it. Run: `cargo run -p odek-extension --example minimal -- /tmp/notes`.
use odek_extension::{ArtifactRoot, Envelope, Server, ToolResponse};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Note {
    /// The text to keep.
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), odek_extension::Error> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/tmp/notes".into());
    let root = ArtifactRoot::new(dir)?;
    Server::new("notes", "0.1.0")
        .typed_tool("keep_note", "Keeps a note as a file and returns a reference to it.", move |_, note: Note| {
            let root = root.clone();
            async move {
                match root.write("note", "note.txt", note.text.as_bytes(), "text/plain") {
                    Ok(file) => Envelope::new("Kept the note.").with_artifact(file).into_response(),
                    Err(error) => ToolResponse::error(error.to_string()),
                }
            }
        })
        .run_stdio()
        .await
}
