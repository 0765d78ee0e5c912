//! The `write_file` tool: classifies the target path (`classify_write`), asks the danger policy,
//! creates missing parent directories and replaces the file atomically. A symlink is followed
//! (the file it points at is replaced); the classification already judged where it lands.

use odek_llm::{BoxFuture, ToolDefinition};
use serde::Deserialize;

use super::place::FilePlace;
use super::{
    parse_arguments, policy_denial, read_whole_capped, resolve_file_place, resolve_path, until_cancelled,
    write_atomically,
};
use crate::tool::{FileEdit, Risk, Tool, ToolContext, ToolError, ToolOutcome, editor_for};
use odek_danger::classify_write;

/// Largest content accepted (bytes).
pub(crate) const MAX_CONTENT_BYTES: usize = 16 * 1024 * 1024;

pub struct WriteFileTool;

#[derive(Deserialize)]
struct WriteFileArgs {
    path: String,
    content: String,
}

impl Tool for WriteFileTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "write_file".to_owned(),
            description: "Create or overwrite a file with the given content (the whole file). Missing parent \
                directories are created. To change part of an existing file, use patch instead. Writes outside \
                the working directory may need approval or be denied by configuration."
                .to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, absolute or relative to the working directory."},
                    "content": {"type": "string", "description": "The complete new content of the file."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn risk(&self, arguments: &str, ctx: &ToolContext) -> Option<Risk> {
        write_risk("write_file", arguments, ctx)
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let args: WriteFileArgs = parse_arguments("write_file", arguments)?;
            if args.content.len() > MAX_CONTENT_BYTES {
                return Err(ToolError::new(format!(
                    "content too large ({} bytes, max {MAX_CONTENT_BYTES})",
                    args.content.len()
                )));
            }
            let place = resolve_file_place(&args.path, ctx)?;
            let shown = place.shown();
            let classification = classify_write(&place.path, &ctx.cwd, &ctx.odek_home);
            if let Some(denial) = policy_denial(&classification, &shown, ctx) {
                return Ok(denial);
            }
            let bytes = args.content.len();
            let edit = if ctx.record_edits { text_before(ctx, &place, &args.content).await } else { None };
            let existed = match editor_for(ctx, &place.path, true) {
                Some(editor) => {
                    let existed = place.path.exists();
                    let write = editor.write_text(&place.path, &args.content);
                    let written =
                        async { write.await.map_err(|err| ToolError::new(format!("cannot write {shown}: {err}"))) };
                    until_cancelled(ctx, written).await?;
                    existed
                }
                None => until_cancelled(ctx, write_atomically(&place, args.content.into_bytes())).await?,
            };
            // The path alone on the first line: a sub-agent's `files_changed` reads it from there.
            let verb = if existed { "updated" } else { "created" };
            Ok(ToolOutcome::text(format!("{verb} {shown}\n{bytes} bytes written")).with_edit(edit))
        })
    }
}

/// The risk of a file-writing call: `classify_write` of its `path` argument.
pub(super) fn write_risk(tool: &str, arguments: &str, ctx: &ToolContext) -> Option<Risk> {
    #[derive(Deserialize)]
    struct PathOnly {
        path: String,
    }
    match parse_arguments::<PathOnly>(tool, arguments) {
        Ok(args) => {
            let path = resolve_path(&args.path, ctx);
            let class = classify_write(&path, &ctx.cwd, &ctx.odek_home).class;
            Some(Risk { class, resource: path.display().to_string() })
        }
        Err(_) => {
            Some(Risk { class: odek_danger::DangerClass::Unknown, resource: format!("(unreadable {tool} arguments)") })
        }
    }
}

/// \[beyond\] The edit writing `content` makes: the file's text now — as the editor has it, when
/// it reads the file — (`None` when there is no file yet), or no edit at all when the file is
/// not text that fits [`FileEdit::MAX_BYTES`].
async fn text_before(ctx: &ToolContext, place: &FilePlace, content: &str) -> Option<FileEdit> {
    if let Some(editor) = editor_for(ctx, &place.path, false)
        && place.path.exists()
    {
        let old = editor.read_text(&place.path).await.ok()?;
        return FileEdit::of(&place.path, Some(&old), content);
    }
    let limit = FileEdit::MAX_BYTES as u64;
    match read_whole_capped(place, limit).await {
        Ok(odek_contract::regular_file::Bounded::Contents(bytes)) => {
            let old = String::from_utf8(bytes).ok()?;
            FileEdit::of(&place.path, Some(&old), content)
        }
        Ok(odek_contract::regular_file::Bounded::TooLarge { .. }) => None,
        Err(_) if !place.path.exists() => FileEdit::of(&place.path, None, content),
        Err(_) => None,
    }
}
