//! The `artifact_read` tool (spec `subagents.md` §11): a window of a registered sub-agent
//! artifact, found by registry id only (paths never enter the model's context), returned only
//! after read-time verification. Start at [`ArtifactReadTool`] and [`read_artifact`].
//!
//! Errors are the tool's output (`{"error":"<message>"}`, the message inserted verbatim), not
//! failed calls; the success output is wrapped as untrusted with source `artifact_read`.
//! Registration only in top-level processes is the caller's concern.

use std::sync::Arc;

use odek_contract::artifact_ref::short_digest;
use odek_llm::{BoxFuture, ToolDefinition};
use serde::Deserialize;
use thiserror::Error;

use super::artifacts::{ArtifactRegistry, ReadRefusal, RegisteredArtifact, VerificationFailure, read_verified};
use crate::tool::{Tool, ToolContext, ToolError, ToolOutcome};

/// The tool's name, and the untrusted wrapper's source of its output.
const ARTIFACT_READ_TOOL_NAME: &str = "artifact_read";

/// Bytes per call when `limit` is absent or ≤ 0 (64 KiB).
const DEFAULT_LIMIT: usize = 65_536;

/// Largest `limit`; larger values are clamped (256 KiB).
const MAX_LIMIT: usize = 262_144;

/// Ids listed in the unknown-id error.
const MAX_LISTED_IDS: usize = 16;

/// What the tool answers instead of content; each text is the spec's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
enum ArtifactReadError {
    #[error("parse failed: {0}")]
    Parse(String),
    #[error("id is required")]
    MissingId,
    #[error("unknown artifact id \"{id}\" \u{2014} registered artifacts: {listed}")]
    UnknownId { id: String, listed: String },
    #[error("artifact \"{id}\" is {total} bytes; offset {offset} is past the end")]
    PastEnd { id: String, total: u64, offset: u64 },
    #[error("artifact \"{id}\" is no longer available (removed by cleanup)")]
    Removed { id: String },
    #[error("artifact \"{id}\" failed read-time verification: {reason}")]
    Verification { id: String, reason: VerificationFailure },
}

impl ArtifactReadError {
    /// `{"error":"<message>"}` with the message inserted verbatim.
    fn to_output(&self) -> String {
        format!("{{\"error\":\"{self}\"}}")
    }
}

/// `artifact_read`, reading from `registry`.
pub struct ArtifactReadTool {
    registry: Arc<ArtifactRegistry>,
}

impl ArtifactReadTool {
    pub fn new(registry: Arc<ArtifactRegistry>) -> ArtifactReadTool {
        ArtifactReadTool { registry }
    }
}

#[derive(Deserialize)]
struct ArtifactReadArgs {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    offset: Option<i64>,
    #[serde(default)]
    limit: Option<i64>,
}

impl Tool for ArtifactReadTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: ARTIFACT_READ_TOOL_NAME.to_owned(),
            description: format!(
                "Read a file a sub-agent delivered, by the artifact id shown in the delegate_tasks result. Returns \
                 up to `limit` bytes (default {DEFAULT_LIMIT}, max {MAX_LIMIT}) starting at byte `offset` (default \
                 0); the header says which bytes you got and whether to call again with a larger offset. The file \
                 is verified against the digest recorded when the sub-agent finished; a changed file is refused."
            ),
            parameters: serde_json::json!({
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "offset": {"type": "integer"},
                    "limit": {"type": "integer"}
                }
            }),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let registry = Arc::clone(&self.registry);
            let arguments = arguments.to_owned();
            let read = tokio::task::spawn_blocking(move || read_artifact(&registry, &arguments));
            tokio::select! {
                biased;
                () = ctx.cancel.cancelled() => Err(ToolError::new("cancelled")),
                joined = read => joined.map_err(|err| ToolError::new(format!("artifact_read: {err}"))),
            }
        })
    }
}

/// One `artifact_read` call on raw JSON `arguments` (empty = `{}`): the spec's success output
/// (untrusted, source `artifact_read`) or error output (plain). Blocking: it hashes the file.
pub fn read_artifact(registry: &ArtifactRegistry, arguments: &str) -> ToolOutcome {
    match read_window(registry, arguments) {
        Ok(output) => ToolOutcome::untrusted(output, ARTIFACT_READ_TOOL_NAME),
        Err(err) => ToolOutcome::text(err.to_output()),
    }
}

fn read_window(registry: &ArtifactRegistry, arguments: &str) -> Result<String, ArtifactReadError> {
    let text = if arguments.trim().is_empty() { "{}" } else { arguments };
    let args: ArtifactReadArgs = serde_json::from_str(text).map_err(|err| ArtifactReadError::Parse(err.to_string()))?;
    let id = args.id.filter(|id| !id.is_empty()).ok_or(ArtifactReadError::MissingId)?;
    let Some(artifact) = registry.get(&id) else {
        return Err(ArtifactReadError::UnknownId { listed: list_registered_ids(&registry.ids()), id });
    };
    let (offset, limit) = read_window_bounds(args.offset, args.limit);
    let window = read_verified(&artifact, offset, limit).map_err(|refusal| match refusal {
        ReadRefusal::Removed => ArtifactReadError::Removed { id: id.clone() },
        ReadRefusal::PastEnd { offset, total } => ArtifactReadError::PastEnd { id: id.clone(), total, offset },
        ReadRefusal::Failed(reason) => ArtifactReadError::Verification { id: id.clone(), reason },
    })?;
    let end = window.offset + window.bytes.len() as u64;
    let mut output = render_read_header(&artifact, window.offset, end, window.total);
    output.push_str("\n\n");
    output.push_str(&String::from_utf8_lossy(&window.bytes));
    Ok(output)
}

/// §11 bounds: `offset` default 0 (negative ⇒ 0); `limit` default 65536 (≤ 0 ⇒ 65536,
/// > 262144 ⇒ 262144).
fn read_window_bounds(offset: Option<i64>, limit: Option<i64>) -> (u64, usize) {
    let offset = offset.map_or(0, |offset| u64::try_from(offset).unwrap_or(0));
    let limit = match limit {
        Some(limit) if limit > 0 => usize::try_from(limit).unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
        _ => DEFAULT_LIMIT,
    };
    (offset, limit)
}

/// `no artifacts registered this session`, or up to 16 ids joined by `, ` plus ` (+<n> more)`.
fn list_registered_ids(ids: &[String]) -> String {
    if ids.is_empty() {
        return "no artifacts registered this session".to_owned();
    }
    let mut listed = ids.iter().take(MAX_LISTED_IDS).map(String::as_str).collect::<Vec<_>>().join(", ");
    if ids.len() > MAX_LISTED_IDS {
        listed.push_str(&format!(" (+{} more)", ids.len() - MAX_LISTED_IDS));
    }
    listed
}

/// `artifact <id> (<media_type>, <size> bytes, sha256:<12 hex>) — task <k> — bytes <a>..<b> of
/// <total>`, plus ` — TRUNCATED, call again with offset to continue` when `b < total`.
fn render_read_header(artifact: &RegisteredArtifact, start: u64, end: u64, total: u64) -> String {
    let mut header = format!(
        "artifact {} ({}, {} bytes, sha256:{}) \u{2014} task {} \u{2014} bytes {start}..{end} of {total}",
        artifact.id,
        artifact.media_type,
        artifact.size_bytes,
        short_digest(&artifact.sha256),
        artifact.task_number
    );
    if end < total {
        header.push_str(" \u{2014} TRUNCATED, call again with offset to continue");
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bounds() {
        assert_eq!(read_window_bounds(None, None), (0, 65_536));
        assert_eq!(read_window_bounds(Some(-5), Some(0)), (0, 65_536));
        assert_eq!(read_window_bounds(Some(7), Some(-1)), (7, 65_536));
        assert_eq!(read_window_bounds(Some(7), Some(10)), (7, 10));
        assert_eq!(read_window_bounds(Some(0), Some(262_144)), (0, 262_144));
        assert_eq!(read_window_bounds(Some(0), Some(262_145)), (0, 262_144));
        assert_eq!(read_window_bounds(Some(i64::MAX), Some(i64::MAX)), (i64::MAX as u64, 262_144));
    }

    #[test]
    fn id_lists() {
        assert_eq!(list_registered_ids(&[]), "no artifacts registered this session");
        let ids: Vec<String> = (1..=18).map(|i| format!("a{i}")).collect();
        assert_eq!(list_registered_ids(&ids[..2]), "a1, a2");
        assert_eq!(
            list_registered_ids(&ids),
            "a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16 (+2 more)"
        );
    }

    #[test]
    fn error_outputs_insert_the_message_verbatim() {
        assert_eq!(ArtifactReadError::MissingId.to_output(), "{\"error\":\"id is required\"}");
        assert_eq!(
            ArtifactReadError::UnknownId { id: "x\"y".into(), listed: "a, b".into() }.to_output(),
            "{\"error\":\"unknown artifact id \"x\"y\" — registered artifacts: a, b\"}"
        );
        assert_eq!(
            ArtifactReadError::PastEnd { id: "r".into(), total: 10, offset: 11 }.to_output(),
            "{\"error\":\"artifact \"r\" is 10 bytes; offset 11 is past the end\"}"
        );
        assert_eq!(
            ArtifactReadError::Removed { id: "r".into() }.to_output(),
            "{\"error\":\"artifact \"r\" is no longer available (removed by cleanup)\"}"
        );
        assert_eq!(
            ArtifactReadError::Verification { id: "r".into(), reason: VerificationFailure::NoDigest }.to_output(),
            "{\"error\":\"artifact \"r\" failed read-time verification: ref carries no sha256; contents cannot be verified at read time\"}"
        );
    }

    #[test]
    fn parse_errors() {
        let registry = ArtifactRegistry::new();
        assert_eq!(read_artifact(&registry, "").output, "{\"error\":\"id is required\"}");
        assert_eq!(read_artifact(&registry, "{\"id\":\"\"}").output, "{\"error\":\"id is required\"}");
        let parse = read_artifact(&registry, "{\"id\":5}").output;
        assert_eq!(
            parse,
            "{\"error\":\"parse failed: invalid type: integer `5`, expected a string at line 1 column 7\"}"
        );
        assert_eq!(
            read_artifact(&registry, "{\"id\":\"nope\"}").output,
            "{\"error\":\"unknown artifact id \"nope\" — registered artifacts: no artifacts registered this session\"}"
        );
    }
}
