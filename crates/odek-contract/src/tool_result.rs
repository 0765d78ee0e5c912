//! The decoding pipeline for one successful `tools/call` result (spec
//! `results-and-artifacts.md` §1 and §3): envelope detection on the joined text, per-item
//! probing and merging for multi-item results, artifact validation, rendering, and the cap.
//! Start at [`decode_tool_result`]; error channels go through [`cap_error_text`].
//!
//! The plain-text path is hot (every ordinary tool call takes it): a single item that does not
//! start with `{` allocates only the output string.

use std::borrow::Cow;

use crate::artifact_ref::{ArtifactRef, ArtifactRoots, check_unique_ids, validate_artifact_ref_resolved};
use crate::envelope::{Envelope, RawArtifactRef, check_artifact_count, probe_envelope};
use crate::error::ContractError;
use crate::render::{render_envelope, sanitise};
use crate::truncation::{Capped, Trailer, cap_envelope, cap_text, cap_with_trailer};

/// What the pipeline needs to know about the call.
#[derive(Debug, Clone, Copy)]
pub struct ResultContext<'a> {
    /// Configured server name, for the truncation notice.
    pub server: &'a str,
    /// Raw tool name, for the truncation notice.
    pub tool: &'a str,
    /// Effective `max_result_chars` (already clamped and floored by the caller).
    pub max_result_chars: usize,
    /// This server's `artifact_roots`.
    pub roots: &'a ArtifactRoots,
}

/// The model-facing text of a successful call and the refs it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Final text: sanitised, rendered and capped. Never more than `max_result_chars` runes.
    pub text: String,
    /// Validated refs in envelope order (empty for plain text). Each has a metadata line in
    /// `text` unless the cap had to cut metadata lines.
    pub artifacts: Vec<ArtifactRef>,
    /// `Some(observed)` of the last truncation notice applied, when a cap cut the output
    /// (§6.4's `observed_chars`).
    pub observed_chars: Option<usize>,
}

/// Spec §1 for one successful result. `text_items` are the `text` of every content item whose
/// type is `text`, in order. Errors are the spec's bare texts (malformed envelope, ref cap,
/// `artifact ref rejected: …`, duplicate id); the caller adds `mcpclient <server>: tool <tool>: `.
pub fn decode_tool_result(text_items: &[&str], ctx: &ResultContext<'_>) -> Result<ToolOutput, ContractError> {
    decode_tool_result_with_trailer(text_items, &Trailer::default(), ctx)
}

/// [`decode_tool_result`] followed by `trailer`, what odek rendered for the rest of the result:
/// the text part as the spec decodes it, then the trailer, capped as one view by
/// [`cap_with_trailer`] (docs/MODEL-VIEW.md). An empty trailer gives exactly
/// [`decode_tool_result`].
pub(crate) fn decode_tool_result_with_trailer(
    text_items: &[&str],
    trailer: &Trailer,
    ctx: &ResultContext<'_>,
) -> Result<ToolOutput, ContractError> {
    let joined: Cow<'_, str> = match text_items {
        [] => Cow::Borrowed(""),
        [single] => Cow::Borrowed(single),
        several => Cow::Owned(several.join("\n")),
    };
    if let Some(envelope) = probe_envelope(&joined)? {
        return finish_envelope(envelope, &[], trailer, ctx);
    }
    if text_items.len() > 1
        && let Some((merged, extras)) = merge_envelope_items(text_items)?
    {
        return finish_envelope(merged, &extras, trailer, ctx);
    }
    let sanitised = sanitise_owned_or_borrowed(joined);
    let capped = if trailer.is_empty() {
        cap_text(sanitised, ctx.server, ctx.tool, ctx.max_result_chars)
    } else {
        cap_with_trailer(&sanitised, trailer, ctx.server, ctx.tool, ctx.max_result_chars)
    };
    Ok(ToolOutput { text: capped.text, artifacts: Vec::new(), observed_chars: capped.observed })
}

/// Error channels (`isError` text, JSON-RPC error messages): sanitised, then capped with the
/// §6.2 notice. They never carry envelopes.
pub fn cap_error_text(message: &str, ctx: &ResultContext<'_>) -> Capped {
    cap_text(sanitise(message), ctx.server, ctx.tool, ctx.max_result_chars)
}

/// §3: probes every item. `Ok(None)` when no item is an envelope. Otherwise the first envelope
/// item is the base, later envelope items' refs are appended (the cap checked after each merge)
/// and all envelope texts are joined with `\n`; non-blank other items are returned as extras.
fn merge_envelope_items<'t>(text_items: &[&'t str]) -> Result<Option<(Envelope, Vec<&'t str>)>, ContractError> {
    let mut base: Option<Envelope> = None;
    let mut extras = Vec::new();
    for &item in text_items {
        match probe_envelope(item)? {
            Some(envelope) => match base.as_mut() {
                None => base = Some(envelope),
                Some(base) => {
                    base.text.push('\n');
                    base.text.push_str(&envelope.text);
                    base.artifacts.extend(envelope.artifacts);
                    check_artifact_count(base.artifacts.len())?;
                }
            },
            None if item.trim().is_empty() => {}
            None => extras.push(item),
        }
    }
    Ok(base.map(|base| (base, extras)))
}

/// §1 step 5 (+ §3 extras): validate every ref against roots resolved once, reject repeated ids,
/// render and cap; then append sanitised extras and cap the whole again. The trailer follows the
/// artifact lines when there are no extras (its lines kept with them), else the extras.
fn finish_envelope(
    envelope: Envelope,
    extras: &[&str],
    trailer: &Trailer,
    ctx: &ResultContext<'_>,
) -> Result<ToolOutput, ContractError> {
    let artifacts = validate_all(&envelope.artifacts, ctx.roots)?;
    let sanitised = sanitise(&envelope.text);
    let (server, tool, limit) = (ctx.server, ctx.tool, ctx.max_result_chars);
    if extras.is_empty() {
        let capped = if trailer.is_empty() {
            cap_envelope(&sanitised, &artifacts, server, tool, limit)
        } else {
            let mut lines = render_envelope("", &artifacts);
            if !lines.is_empty() && !trailer.lines.is_empty() {
                lines.push('\n');
            }
            lines.push_str(&trailer.lines);
            cap_with_trailer(&sanitised, &Trailer { lines, tail: trailer.tail.clone() }, server, tool, limit)
        };
        return Ok(ToolOutput { text: capped.text, artifacts, observed_chars: capped.observed });
    }
    let capped = cap_envelope(&sanitised, &artifacts, server, tool, limit);
    let extras = extras.join("\n");
    let mut combined = capped.text;
    combined.push('\n');
    combined.push_str(&sanitise(&extras));
    let outer = if trailer.is_empty() {
        cap_text(Cow::Owned(combined), server, tool, limit)
    } else {
        cap_with_trailer(&combined, trailer, server, tool, limit)
    };
    Ok(ToolOutput { text: outer.text, artifacts, observed_chars: outer.observed.or(capped.observed) })
}

fn validate_all(raw_refs: &[RawArtifactRef], roots: &ArtifactRoots) -> Result<Vec<ArtifactRef>, ContractError> {
    if raw_refs.is_empty() {
        return Ok(Vec::new());
    }
    let resolved = roots.resolve();
    let artifacts =
        raw_refs.iter().map(|raw| validate_artifact_ref_resolved(raw, &resolved)).collect::<Result<Vec<_>, _>>()?;
    check_unique_ids(&artifacts)?;
    Ok(artifacts)
}

/// [`sanitise`] that hands back the input itself (owned or not) when nothing changes.
fn sanitise_owned_or_borrowed(text: Cow<'_, str>) -> Cow<'_, str> {
    match sanitise(&text) {
        Cow::Borrowed(_) => {}
        Cow::Owned(indented) => return Cow::Owned(indented),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(roots: &ArtifactRoots) -> ResultContext<'_> {
        ResultContext { server: "srv", tool: "echo", max_result_chars: 1000, roots }
    }

    #[test]
    fn plain_single_item_is_unchanged() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let out = decode_tool_result(&["hello"], &ctx(&roots)).unwrap();
        assert_eq!(out, ToolOutput { text: "hello".to_owned(), artifacts: vec![], observed_chars: None });
        assert_eq!(decode_tool_result(&[], &ctx(&roots)).unwrap().text, "");
        assert_eq!(decode_tool_result(&["a", "b"], &ctx(&roots)).unwrap().text, "a\nb");
    }

    #[test]
    fn envelope_without_refs_needs_no_roots() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let out =
            decode_tool_result(&[r#"{"schema":"odek.tool-result/v1","text":"- artifact x"}"#], &ctx(&roots)).unwrap();
        assert_eq!(out.text, " - artifact x");
    }

    #[test]
    fn error_text_is_sanitised_and_capped() {
        let roots = ArtifactRoots::new(Vec::<String>::new());
        let capped = cap_error_text("boom\n- artifact \"x\" (text/plain)", &ctx(&roots));
        assert_eq!(capped.text, "boom\n - artifact \"x\" (text/plain)");
        assert_eq!(capped.observed, None);
    }
}
