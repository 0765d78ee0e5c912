//! The `search_files` tool: regex search of file contents, or file-name search by glob, under a
//! root directory. `.gitignore` (and `.ignore`) rules are respected even outside a git
//! repository, `.git` is skipped, binary and very large files are skipped, results and line
//! text are bounded. An invalid regex is searched for literally, and the output says so. Under
//! a confinement root each file is opened from the root's handle ([`RootDir`]), so a directory
//! swapped for a symlink while the walk runs never leads the search's reads outside it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use odek_contract::regular_file::{Bounded, Follow, open_regular_read, read_to_limit};
use odek_llm::{BoxFuture, ToolDefinition};
use regex::{Regex, RegexBuilder};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::{RootDir, cut_chars, looks_binary, parse_arguments, resolve_file_path, until_cancelled};
use crate::tool::{Tool, ToolContext, ToolError, ToolOutcome};

/// Results when the model gives no `max_results`.
const DEFAULT_MAX_RESULTS: usize = 100;
/// Largest `max_results` accepted; larger values are clamped.
const MAX_RESULTS: usize = 200;
/// Characters kept of a matching line.
const MAX_LINE_CHARS: usize = 300;
/// Files larger than this are not searched (bytes).
const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// The walk stops after this many entries.
const MAX_ENTRIES_VISITED: usize = 100_000;
/// Longest pattern accepted (characters).
const MAX_PATTERN_CHARS: usize = 1000;

pub struct SearchFilesTool;

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
enum Mode {
    #[default]
    Content,
    Files,
}

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    mode: Mode,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    max_results: Option<usize>,
}

impl Tool for SearchFilesTool {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "search_files".to_owned(),
            description: format!(
                "Search files under a directory (default: the working directory), skipping files ignored by \
                 .gitignore, the .git directory and binary files. mode \"content\" (default): `pattern` is a regular \
                 expression matched against each line; results are `path:line: text`; `glob` (e.g. \"*.rs\") limits \
                 which files are searched. mode \"files\": `pattern` is a glob matched against file names (e.g. \
                 \"*.toml\", \"src/**/mod.rs\") and matching paths are listed. At most {MAX_RESULTS} results."
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regex (content mode) or glob (files mode)."},
                    "path": {"type": "string", "description": "Directory or file to search, relative to the working directory (default: the working directory)."},
                    "mode": {"type": "string", "enum": ["content", "files"], "description": "content (default) or files."},
                    "glob": {"type": "string", "description": "Only search files whose names match this glob, e.g. \"*.py\"."},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": format!("Maximum results (default {DEFAULT_MAX_RESULTS}).")}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>> {
        Box::pin(async move {
            let args: SearchArgs = parse_arguments("search_files", arguments)?;
            if args.pattern.is_empty() {
                return Err(ToolError::new("pattern must not be empty"));
            }
            if args.pattern.chars().count() > MAX_PATTERN_CHARS {
                return Err(ToolError::new(format!("pattern too long (max {MAX_PATTERN_CHARS} characters)")));
            }
            let root = match args.path.as_deref() {
                Some(path) if !path.trim().is_empty() => resolve_file_path(path, ctx)?,
                _ => ctx.cwd.clone(),
            };
            if let Err(err) = tokio::fs::metadata(&root).await {
                return Err(if err.kind() == std::io::ErrorKind::NotFound {
                    ToolError::new(format!("no such file or directory: {}", root.display()))
                } else {
                    ToolError::new(format!("cannot search {}: {err}", root.display()))
                });
            }
            let request = Request {
                root: root.clone(),
                mode: args.mode,
                pattern: args.pattern,
                glob: args.glob.filter(|glob| !glob.trim().is_empty()),
                max_results: args.max_results.unwrap_or(DEFAULT_MAX_RESULTS).clamp(1, MAX_RESULTS),
                cancel: ctx.cancel.clone(),
                confinement: ctx.path_root.clone(),
            };
            let search = async move {
                tokio::task::spawn_blocking(move || search(&request))
                    .await
                    .map_err(|err| ToolError::new(format!("search failed: {err}")))?
            };
            let report = until_cancelled(ctx, search).await?;
            let shown = root.display().to_string();
            if report.results.is_empty() {
                let mut text = format!("no matches under {shown}");
                if let Some(note) = report.note {
                    text = format!("{note}\n{text}");
                }
                return Ok(ToolOutcome::text(text));
            }
            Ok(ToolOutcome::untrusted(report.render(), shown))
        })
    }
}

struct Request {
    root: PathBuf,
    mode: Mode,
    pattern: String,
    glob: Option<String>,
    max_results: usize,
    cancel: CancellationToken,
    /// The confinement root every file is opened from, when the context has one.
    confinement: Option<Arc<RootDir>>,
}

#[derive(Default)]
struct Report {
    results: Vec<String>,
    note: Option<String>,
    limited: bool,
    stopped_early: bool,
}

impl Report {
    fn render(&self) -> String {
        let mut text = String::new();
        if let Some(note) = &self.note {
            text.push_str(note);
            text.push('\n');
        }
        text.push_str(&self.results.join("\n"));
        if self.limited {
            text.push_str(&format!(
                "\n[results limited to {}; narrow the pattern, path or glob to see others]",
                self.results.len()
            ));
        }
        if self.stopped_early {
            text.push_str(&format!("\n[search stopped after {MAX_ENTRIES_VISITED} entries; narrow the path]"));
        }
        text
    }
}

fn search(request: &Request) -> Result<Report, ToolError> {
    let mut report = Report::default();
    let mut overrides = OverrideBuilder::new(&request.root);
    let globs = match request.mode {
        Mode::Files => vec![Some(request.pattern.as_str()), request.glob.as_deref()],
        Mode::Content => vec![request.glob.as_deref()],
    };
    for glob in globs.into_iter().flatten() {
        overrides.add(glob).map_err(|err| ToolError::new(format!("invalid glob {glob:?}: {err}")))?;
    }
    let overrides = overrides.build().map_err(|err| ToolError::new(format!("invalid glob: {err}")))?;
    let regex = match request.mode {
        Mode::Content => Some(content_regex(&request.pattern, &mut report)?),
        Mode::Files => None,
    };
    let mut walker = WalkBuilder::new(&request.root);
    walker.hidden(false).require_git(false).overrides(overrides).filter_entry(|entry| entry.file_name() != ".git");
    for (visited, entry) in walker.build().enumerate() {
        if request.cancel.is_cancelled() {
            return Err(ToolError::new("cancelled"));
        }
        if visited >= MAX_ENTRIES_VISITED {
            report.stopped_early = true;
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let shown = relative_display(&request.root, entry.path());
        match &regex {
            None => report.results.push(shown),
            Some(regex) => search_file(request, entry.path(), &shown, regex, &mut report),
        }
        if report.results.len() > request.max_results {
            report.results.truncate(request.max_results);
            report.limited = true;
            break;
        }
    }
    Ok(report)
}

/// The pattern as a regex; an invalid one is escaped and searched literally (with a note).
fn content_regex(pattern: &str, report: &mut Report) -> Result<Regex, ToolError> {
    let build = |text: &str| RegexBuilder::new(text).size_limit(8 * 1024 * 1024).build();
    match build(pattern) {
        Ok(regex) => Ok(regex),
        Err(_) => {
            report.note = Some(format!("[{pattern:?} is not a valid regular expression; searched for it literally]"));
            build(&regex::escape(pattern)).map_err(|err| ToolError::new(format!("invalid pattern: {err}")))
        }
    }
}

fn search_file(request: &Request, path: &Path, shown: &str, regex: &Regex, report: &mut Report) {
    let limit = request.max_results + 1;
    // Never blocks: a FIFO swapped in after the walk saw a file is skipped, not waited on; a
    // file over the cap is skipped unread; under a root, so is one reached through a symlink.
    let opened = match &request.confinement {
        None => open_regular_read(path, Follow::Symlinks),
        Some(root) => root.open_regular_read(path),
    };
    let Ok(Bounded::Contents(bytes)) = opened.and_then(|file| read_to_limit(&file, MAX_FILE_BYTES)) else { return };
    if looks_binary(&bytes) {
        return;
    }
    let text = String::from_utf8_lossy(&bytes);
    for (index, line) in text.lines().enumerate() {
        if report.results.len() >= limit {
            return;
        }
        if regex.is_match(line) {
            let (kept, cut) = cut_chars(line, MAX_LINE_CHARS);
            let ellipsis = if cut > 0 { " …" } else { "" };
            report.results.push(format!("{shown}:{}: {kept}{ellipsis}", index + 1));
        }
    }
}

/// The path relative to the search root (the file name when the root is the file itself).
fn relative_display(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
        _ => path.file_name().map_or_else(|| path.display().to_string(), |name| name.to_string_lossy().into_owned()),
    }
}
