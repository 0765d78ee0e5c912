//! The `patch` tool: exact find-and-replace in a text file. The anchor (`old_string`) must
//! occur exactly once unless `replace_all` is set; a missing or ambiguous anchor is an error
//! that says what to do. The write goes through the same danger gate and atomic replacement as
//! `write_file`.

use odek_contract::regular_file::Bounded;
use odek_llm::{BoxFuture, ToolDefinition};
use serde::Deserialize;

use super::write_file::{MAX_CONTENT_BYTES, write_risk};
use super::{
    FilePlace, looks_binary, parse_arguments, policy_denial, read_whole_capped, resolve_file_place, until_cancelled,
    write_atomically,
};
use crate::tool::{FileEdit, Risk, Tool, ToolContext, ToolError, ToolOutcome, editor_for};
use odek_danger::classify_write;

pub struct PatchTool;

#[derive(Deserialize)]
struct PatchArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

impl Tool for PatchTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "patch".to_owned(),
            description: "Edit a text file by replacing an exact string. `old_string` must match the file \
                exactly (including whitespace and indentation) and occur exactly once — include a few \
                surrounding lines to make it unique — unless `replace_all` is true, which replaces every \
                occurrence. Read the file first to copy the exact text."
                .to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, absolute or relative to the working directory."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The replacement text."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        }
    }

    fn risk(&self, arguments: &str, ctx: &ToolContext) -> Option<Risk> {
        write_risk("patch", arguments, ctx)
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let args: PatchArgs = parse_arguments("patch", arguments)?;
            if args.old_string.is_empty() {
                return Err(ToolError::new("old_string must not be empty"));
            }
            if args.old_string == args.new_string {
                return Err(ToolError::new("old_string and new_string are identical; nothing to change"));
            }
            let place = resolve_file_place(&args.path, ctx)?;
            let shown = place.shown();
            let classification = classify_write(&place.path, &ctx.cwd, &ctx.odek_home);
            if let Some(denial) = policy_denial(&classification, &shown, ctx) {
                return Ok(denial);
            }
            until_cancelled(ctx, apply_patch(&place, &shown, &args, ctx)).await
        })
    }
}

async fn apply_patch(
    place: &FilePlace,
    shown: &str,
    args: &PatchArgs,
    ctx: &ToolContext,
) -> Result<ToolOutcome, ToolError> {
    let bytes = match editor_for(ctx, &place.path, false) {
        Some(editor) => editor
            .read_text(&place.path)
            .await
            .map_err(|err| ToolError::new(format!("cannot read {shown}: {err}")))?
            .into_bytes(),
        None => match read_whole_capped(place, MAX_CONTENT_BYTES as u64).await? {
            Bounded::Contents(bytes) => bytes,
            Bounded::TooLarge { size } => {
                return Err(ToolError::new(format!(
                    "{shown} is too large to patch ({size} bytes, max {MAX_CONTENT_BYTES})"
                )));
            }
        },
    };
    if bytes.len() > MAX_CONTENT_BYTES {
        return Err(ToolError::new(format!(
            "{shown} is too large to patch ({} bytes, max {MAX_CONTENT_BYTES})",
            bytes.len()
        )));
    }
    if looks_binary(&bytes) {
        return Err(ToolError::new(format!("{shown} is a binary file; patch only edits text")));
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(ToolError::new(format!("{shown} is not valid UTF-8 text (binary?); patch only edits text")));
    };
    let matches = text.matches(&args.old_string).count();
    match matches {
        0 => return Err(ToolError::new(format!("old_string not found in {shown}"))),
        1 => {}
        n if !args.replace_all => {
            return Err(ToolError::new(format!(
                "old_string matches {n} times in {shown}; add context or set replace_all"
            )));
        }
        _ => {}
    }
    // The size the result will have, known before it is built (a short `old_string` replaced
    // everywhere in a large file must not be allocated first and refused after).
    let replaced = if args.replace_all { matches } else { 1 };
    let projected =
        (text.len() - replaced * args.old_string.len()).saturating_add(replaced.saturating_mul(args.new_string.len()));
    if projected > MAX_CONTENT_BYTES {
        return Err(ToolError::new(format!(
            "patched file would be too large ({projected} bytes, max {MAX_CONTENT_BYTES})"
        )));
    }
    let first_line = text.find(&args.old_string).map_or(1, |index| text[..index].matches('\n').count() + 1);
    let patched = if args.replace_all {
        text.replace(&args.old_string, &args.new_string)
    } else {
        text.replacen(&args.old_string, &args.new_string, 1)
    };
    if patched.len() > MAX_CONTENT_BYTES {
        return Err(ToolError::new(format!(
            "patched file would be too large ({} bytes, max {MAX_CONTENT_BYTES})",
            patched.len()
        )));
    }
    let before = text.len();
    let after = patched.len();
    let edit = if ctx.record_edits { FileEdit::of(&place.path, Some(&text), &patched) } else { None };
    match editor_for(ctx, &place.path, true) {
        Some(editor) => {
            editor
                .write_text(&place.path, &patched)
                .await
                .map_err(|err| ToolError::new(format!("cannot write {shown}: {err}")))?;
        }
        None => {
            write_atomically(place, patched.into_bytes()).await?;
        }
    }
    let occurrences = if matches == 1 { "1 occurrence".to_owned() } else { format!("{matches} occurrences") };
    Ok(ToolOutcome::text(format!(
        "modified {shown}\nreplaced {occurrences} (first at line {first_line}); {before} → {after} bytes"
    ))
    .with_edit(edit))
}
