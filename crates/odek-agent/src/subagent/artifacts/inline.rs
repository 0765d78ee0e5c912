//! Inline previews (spec `subagents.md` §10, third rule): small text artifacts are shown to the
//! parent's model in the `delegate_tasks` result itself, within a per-call byte budget, each read
//! through read-time verification right before it is inlined. Start at [`inline_previews`].

use std::collections::BTreeMap;
use std::sync::Arc;

use super::registry::RegisteredArtifact;
use super::verify::read_verified;

/// Largest artifact inlined, in bytes (32 KiB).
const MAX_INLINE_PREVIEW_BYTES: u64 = 32_768;

/// Bytes inlined per `delegate_tasks` call, spent largest-first (128 KiB).
const MAX_INLINE_BYTES_PER_CALL: u64 = 131_072;

/// What happened to one artifact that qualified for a preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InlinePreview {
    /// Verified content (invalid UTF-8 replaced by U+FFFD).
    Content(String),
    /// Verification failed; the reason for
    /// `  [artifact] inline preview skipped "<id>": <reason>`. Metadata only.
    Skipped(String),
}

/// §10 inline previews for every artifact of one call: those with a `text/*` media type and at
/// most 32768 bytes, largest first (ties in the given order), while the 131072-byte budget
/// lasts. Each is read through `read_verified`; a failure leaves it metadata only with its
/// reason and spends nothing. Artifacts absent from the map are metadata only. Keyed by
/// registry id. Blocking.
pub fn inline_previews(artifacts: &[Arc<RegisteredArtifact>]) -> BTreeMap<String, InlinePreview> {
    let mut candidates: Vec<&Arc<RegisteredArtifact>> =
        artifacts.iter().filter(|artifact| qualifies_for_preview(artifact)).collect();
    candidates.sort_by_key(|artifact| std::cmp::Reverse(artifact.size_bytes));
    let mut previews = BTreeMap::new();
    let mut spent: u64 = 0;
    for artifact in candidates {
        if spent + artifact.size_bytes > MAX_INLINE_BYTES_PER_CALL {
            continue;
        }
        let limit = usize::try_from(artifact.size_bytes).unwrap_or(0);
        let preview = match read_verified(artifact, 0, limit) {
            Ok(window) => {
                spent += artifact.size_bytes;
                InlinePreview::Content(String::from_utf8_lossy(&window.bytes).into_owned())
            }
            Err(refusal) => InlinePreview::Skipped(refusal.to_string()),
        };
        previews.insert(artifact.id.clone(), preview);
    }
    previews
}

/// A `text/*` media type (ASCII case-insensitive) and at most [`MAX_INLINE_PREVIEW_BYTES`].
fn qualifies_for_preview(artifact: &RegisteredArtifact) -> bool {
    artifact.size_bytes <= MAX_INLINE_PREVIEW_BYTES
        && artifact.media_type.get(..5).is_some_and(|prefix| prefix.eq_ignore_ascii_case("text/"))
}
