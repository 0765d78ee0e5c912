//! The `read_file` tool: a page of a text file as numbered lines (`<n>\t<line>`), long lines
//! cut, the page bounded in lines and bytes, and a footer that says how to read on. Errors say
//! `no such file`, `is a directory` or `binary` (the loop's recovery hints match those words).

use std::io::{BufRead, BufReader, Read, Seek};

use odek_llm::{BoxFuture, ToolDefinition};
use serde::Deserialize;

use super::{
    FilePlace, cut_chars, looks_binary, on_blocking_thread, parse_arguments, resolve_file_place, until_cancelled,
};
use crate::tool::{Tool, ToolContext, ToolError, ToolOutcome, editor_for};

/// Lines per page when the model gives no `limit`.
const DEFAULT_LIMIT: usize = 2000;
/// Largest `limit` accepted; larger values are clamped.
const MAX_LIMIT: usize = 5000;
/// Characters kept of one line.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes of numbered lines in one page; the page ends early past this.
const MAX_PAGE_BYTES: usize = 256 * 1024;
/// Bytes read past the page to count the file's remaining lines.
const MAX_COUNT_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes of one raw line held in memory (the rest is skipped).
const MAX_RAW_LINE_BYTES: u64 = 1024 * 1024;

pub struct ReadFileTool;

#[derive(Deserialize)]
struct ReadFileArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for ReadFileTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "read_file".to_owned(),
            description: format!(
                "Read a text file. Returns numbered lines (`<line number>\\t<text>`), {DEFAULT_LIMIT} lines per \
                 call by default; use `offset` (1-based line number) and `limit` to page through long files — the \
                 footer says which offset to use next. Lines longer than {MAX_LINE_CHARS} characters are cut. \
                 Binary files and directories cannot be read (use search_files to list a directory)."
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, absolute or relative to the working directory."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to return, 1-based (default 1)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("Number of lines to return (default {DEFAULT_LIMIT}, max {MAX_LIMIT}).")}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let args: ReadFileArgs = parse_arguments("read_file", arguments)?;
            let place = resolve_file_place(&args.path, ctx)?;
            let offset = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
            if let Some(editor) = editor_for(ctx, &place.path, false) {
                let shown = place.shown();
                let text = until_cancelled(ctx, async {
                    editor
                        .read_text(&place.path)
                        .await
                        .map_err(|err| ToolError::new(format!("cannot read {shown}: {err}")))
                })
                .await?;
                if looks_binary(&text.as_bytes()[..text.len().min(super::BINARY_SNIFF_BYTES)]) {
                    return Err(ToolError::new(format!("{shown} is a binary file; read_file only reads text")));
                }
                return page(text.as_bytes(), &shown, offset, limit).map_err(|err| read_error(&shown, &err));
            }
            let path = place.path.clone();
            until_cancelled(ctx, on_blocking_thread(&path, move || read_page(&place, offset, limit))).await
        })
    }
}

/// The page, read on a blocking thread (bounded: at most the page, then [`MAX_COUNT_BYTES`]
/// counted past it).
fn read_page(place: &FilePlace, offset: usize, limit: usize) -> Result<ToolOutcome, ToolError> {
    let mut file = place.open_file()?;
    let shown = place.shown();
    let io_error = |err: std::io::Error| ToolError::new(format!("cannot read {shown}: {err}"));
    let mut sniff = vec![0_u8; super::BINARY_SNIFF_BYTES];
    let sniffed = read_up_to(&mut file, &mut sniff).map_err(io_error)?;
    if looks_binary(&sniff[..sniffed]) {
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        return Err(ToolError::new(format!("{shown} is a binary file ({size} bytes); read_file only reads text")));
    }
    file.seek(std::io::SeekFrom::Start(0)).map_err(io_error)?;
    page(BufReader::new(file), &shown, offset, limit).map_err(|err| read_error(&shown, &err))
}

fn read_error(shown: &str, err: &std::io::Error) -> ToolError {
    ToolError::new(format!("cannot read {shown}: {err}"))
}

/// The page of `lines` from line `offset`, at most `limit` lines and [`MAX_PAGE_BYTES`], with its
/// footer; the lines after it are counted up to [`MAX_COUNT_BYTES`].
fn page(mut lines: impl BufRead, shown: &str, offset: usize, limit: usize) -> std::io::Result<ToolOutcome> {
    let mut page = String::new();
    let mut line_number = 0_usize;
    let mut last_shown = 0_usize;
    let mut page_full = false;
    let mut bytes_after_page = 0_u64;
    let mut count_cut_short = false;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        let read = (&mut lines).take(MAX_RAW_LINE_BYTES).read_until(b'\n', &mut raw)?;
        if read == 0 {
            break;
        }
        if raw.last() != Some(&b'\n') && read as u64 == MAX_RAW_LINE_BYTES {
            skip_rest_of_line(&mut lines)?;
        }
        line_number += 1;
        if page_full {
            bytes_after_page += read as u64;
            if bytes_after_page > MAX_COUNT_BYTES {
                count_cut_short = true;
                break;
            }
            continue;
        }
        if line_number < offset {
            continue;
        }
        let text = String::from_utf8_lossy(&raw);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (kept, cut) = cut_chars(text, MAX_LINE_CHARS);
        let rendered = if cut > 0 {
            format!("{line_number:>6}\t{kept} … [line cut: {cut} more characters]\n")
        } else {
            format!("{line_number:>6}\t{kept}\n")
        };
        if !page.is_empty() && page.len() + rendered.len() > MAX_PAGE_BYTES {
            page_full = true;
            continue;
        }
        page.push_str(&rendered);
        last_shown = line_number;
        if line_number - offset + 1 >= limit {
            page_full = true;
        }
    }
    let total_known = !count_cut_short;
    if line_number == 0 {
        return Ok(ToolOutcome::text(format!("{shown} is empty")));
    }
    if last_shown == 0 {
        return Ok(ToolOutcome::text(format!("offset {offset} is past the end of {shown} ({line_number} lines)")));
    }
    let mut output = page;
    if last_shown < line_number || !total_known {
        let total = if total_known { line_number.to_string() } else { format!("more than {line_number}") };
        output.push_str(&format!(
            "\n[showing lines {offset}-{last_shown} of {total}; call read_file with offset={} to read more]",
            last_shown + 1
        ));
    } else if offset > 1 {
        output.push_str(&format!("\n[showing lines {offset}-{last_shown} of {line_number}; end of file]"));
    } else {
        output.truncate(output.trim_end_matches('\n').len());
    }
    Ok(ToolOutcome::untrusted(output, shown))
}

fn read_up_to(file: &mut std::fs::File, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        let n = match file.read(&mut buffer[filled..]) {
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            read => read?,
        };
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

fn skip_rest_of_line(reader: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(index) => {
                reader.consume(index + 1);
                return Ok(());
            }
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    }
}
