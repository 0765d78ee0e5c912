//! The fixture's `instructions` and resources, for testing a client's handling of them: a small
//! markdown text, a text longer than odek's default `max_result_chars`, a binary blob, and a
//! text that is an `odek.tool-result/v1` envelope referencing an artifact file written when it
//! is read (so a fixture that is never asked for it leaves no file behind). `--no-resources`
//! leaves the resources out (and with them the capability); `--instructions TEXT` and
//! `--no-instructions` replace or drop the instructions. Start at [`register`].

use std::fmt::Write as _;
use std::sync::Arc;

use odek_extension::{ResourceBody, ResourceContents, ResourceDef, RpcError, Server};

use crate::Fixture;
use crate::contract_tools::{ArtifactResultArgs, build_artifact_result};
use crate::misbehaviour_tools::TINY_PNG_BASE64;

/// The `instructions` answered unless `--instructions` or `--no-instructions` says otherwise.
pub(crate) const DEFAULT_INSTRUCTIONS: &str = "odek-fixture is a test server for the odek-extension/v1 contract. \
Call echo with {\"text\": ...} for a round trip, large_result for long text, artifact_result for an \
odek.tool-result/v1 envelope with artifact refs, and slow with {\"ms\": ...} for progress. \
The resource fixture://readme lists the resources.";

pub(crate) const README_URI: &str = "fixture://readme";
pub(crate) const LARGE_URI: &str = "fixture://large";
pub(crate) const PIXEL_URI: &str = "fixture://pixel.png";
pub(crate) const ENVELOPE_URI: &str = "fixture://envelope";

/// Length of the large resource, in characters (all ASCII, so bytes too): over odek's default
/// `max_result_chars` (200000), so reading it shows the truncation notice.
pub(crate) const LARGE_RESOURCE_CHARS: usize = 300_000;

const README: &str = "# odek-fixture\n\
\n\
The contract fixture: every odek-extension/v1 reference tool, and tools that misbehave on purpose.\n\
\n\
Resources:\n\
\n\
- fixture://readme: this text.\n\
- fixture://large: 300000 characters of numbered lines.\n\
- fixture://pixel.png: a 1x1 PNG.\n\
- fixture://envelope: an odek.tool-result/v1 envelope with one artifact ref.\n";

/// The envelope resource's artifact: its ref id, file content and summary, and the envelope text.
const ENVELOPE_ARTIFACT_ID: &str = "resource-report";
const ENVELOPE_ARTIFACT_CONTENT: &str = "the report behind fixture://envelope\n";
const ENVELOPE_ARTIFACT_SUMMARY: &str = "The report the envelope resource refers to";
const ENVELOPE_TEXT: &str = "An envelope read as a resource; its report is attached as an artifact.";

/// Sets the instructions and adds the resources (unless `resources` is false).
pub(crate) fn register(
    mut server: Server,
    fixture: &Arc<Fixture>,
    instructions: Option<String>,
    resources: bool,
) -> Server {
    if let Some(text) = instructions {
        server = server.instructions(text);
    }
    if !resources {
        return server;
    }
    let fixture = Arc::clone(fixture);
    server
        .resource(
            ResourceDef::new(README_URI, "readme")
                .with_title("About this fixture")
                .with_description("What the fixture offers, in markdown")
                .with_mime_type("text/markdown")
                .with_size(README.len() as u64),
            ResourceBody::text(README),
        )
        .resource(
            ResourceDef::new(LARGE_URI, "large")
                .with_description("300000 characters of numbered lines, more than odek shows by default")
                .with_mime_type("text/plain")
                .with_size(LARGE_RESOURCE_CHARS as u64),
            ResourceBody::text(large_text()),
        )
        .resource(
            ResourceDef::new(PIXEL_URI, "pixel")
                .with_description("A 1x1 transparent PNG")
                .with_mime_type("image/png")
                .with_size(base64_decoded_len(TINY_PNG_BASE64)),
            ResourceBody::blob_base64(TINY_PNG_BASE64),
        )
        .dynamic_resource(
            ResourceDef::new(ENVELOPE_URI, "envelope")
                .with_description("An odek.tool-result/v1 envelope whose artifact file is written on each read")
                .with_mime_type("application/json"),
            move |_, uri| envelope_contents(Arc::clone(&fixture), uri),
        )
}

/// `large resource line 000001`, `…000002`, … one per line, cut to exactly
/// [`LARGE_RESOURCE_CHARS`] characters.
pub(crate) fn large_text() -> String {
    let mut text = String::with_capacity(LARGE_RESOURCE_CHARS + 32);
    let mut number = 1;
    while text.len() < LARGE_RESOURCE_CHARS {
        let _ = writeln!(text, "large resource line {number:06}");
        number += 1;
    }
    text.truncate(LARGE_RESOURCE_CHARS);
    text
}

/// Bytes that padded standard base64 decodes to.
fn base64_decoded_len(base64: &str) -> u64 {
    let padding = base64.bytes().rev().take_while(|&byte| byte == b'=').count();
    (base64.len() / 4 * 3 - padding) as u64
}

/// The envelope resource: writes a fresh artifact file (as artifact_result does) and answers
/// the envelope referencing it, as text.
async fn envelope_contents(fixture: Arc<Fixture>, uri: String) -> Result<Vec<ResourceContents>, RpcError> {
    let args = ArtifactResultArgs::one_file(
        ENVELOPE_ARTIFACT_ID,
        ENVELOPE_ARTIFACT_CONTENT,
        ENVELOPE_ARTIFACT_SUMMARY,
        ENVELOPE_TEXT,
    );
    let envelope = match tokio::task::spawn_blocking(move || build_artifact_result(&fixture, args)).await {
        Ok(Ok(envelope)) => envelope,
        Ok(Err(message)) => return Err(RpcError::internal(format!("envelope resource: {message}"))),
        Err(error) => return Err(RpcError::internal(format!("envelope resource: {error}"))),
    };
    Ok(vec![ResourceContents::new(uri, ResourceBody::text(envelope.to_json())).with_mime_type("application/json")])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_large_text_is_exact_and_numbered() {
        let text = large_text();
        assert_eq!(text.len(), LARGE_RESOURCE_CHARS);
        assert!(text.starts_with("large resource line 000001\nlarge resource line 000002\n"));
        assert_eq!(text, large_text(), "deterministic");
    }

    #[test]
    fn the_pixel_size_is_its_decoded_length() {
        assert_eq!(base64_decoded_len(TINY_PNG_BASE64), 70);
        assert_eq!(base64_decoded_len("AAAA"), 3);
        assert_eq!(base64_decoded_len("AA=="), 1);
    }

    #[test]
    fn help_quotes_the_default_instructions() {
        let help = crate::options::help().split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(help.contains(DEFAULT_INSTRUCTIONS), "{help}");
    }

    #[test]
    fn the_default_texts_pass_odeks_screening() {
        use odek_contract::prompt_injection::detects_prompt_injection;
        for text in [DEFAULT_INSTRUCTIONS, README, ENVELOPE_TEXT, ENVELOPE_ARTIFACT_SUMMARY] {
            assert!(!detects_prompt_injection(text), "{text}");
        }
        assert!(DEFAULT_INSTRUCTIONS.len() <= 2048, "odek keeps 2 KiB of instructions");
    }
}
