//! The `[artifact]` note lines of a task section (spec `subagents.md` §12): a ref that was
//! dropped and an inline preview that was skipped. A leaf: validation, the registry and the
//! renderer all write these lines.

use odek_contract::quoting::quote;

/// `  [artifact] dropped "<id>": <error>`.
pub(crate) fn render_dropped_line(id: &str, error: &str) -> String {
    format!("  [artifact] dropped {}: {error}", quote(id))
}

/// `  [artifact] inline preview skipped "<id>": <reason>`.
pub(crate) fn render_inline_skipped_line(id: &str, reason: &str) -> String {
    format!("  [artifact] inline preview skipped {}: {reason}", quote(id))
}
