//! What an event may say about a call's arguments and result without showing them: the digest
//! and size of the raw argument string (spec `events.md` §5), the structured `args_summary`
//! (§6) and the artifact count of a result (§7).
//!
//! Path tools are summarised with the class [`classify_write`] gives the path, for every path
//! tool including the read-only ones: the spec names a single "path class", and the write
//! classifier is the one place that knows which paths are sensitive (`~/.odek`, start-up files,
//! system directories). A read of `~/.bashrc` is therefore reported as `persistence`: the class
//! says what the path is, not what the call does.

use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use odek_danger::{DangerClass, argv0, classify_command_in, classify_write};

/// Longest string value in `args_summary`, in bytes (cut on a character boundary).
pub const MAX_SUMMARY_STRING_BYTES: usize = 512;
/// Most items of a list in `args_summary`.
pub const MAX_SUMMARY_ITEMS: usize = 16;

const PATH_TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "batch_read",
    "file_info",
    "glob",
    "diff",
    "multi_grep",
    "json_query",
    "tree",
    "count_lines",
    "checksum",
    "sort",
    "head_tail",
    "base64",
    "tr",
    "word_count",
    "transcribe",
];

const URL_TOOLS: &[&str] = &["browser", "http_batch", "http_request", "web_search"];

/// `args_sha256`: lowercase hex SHA-256 of the raw argument string as the provider sent it.
pub fn args_sha256(raw_arguments: &str) -> String {
    hex::encode(Sha256::digest(raw_arguments.as_bytes()))
}

/// `args_bytes`: the byte length of the raw argument string.
pub fn args_bytes(raw_arguments: &str) -> usize {
    raw_arguments.len()
}

/// `artifact_count`: the lines of `output` that begin with `- artifact `.
pub fn artifact_count(output: &str) -> usize {
    usize::from(output.starts_with("- artifact ")) + output.matches("\n- artifact ").count()
}

/// `args_summary` for a call of `tool` with `raw_arguments`, or `None` when nothing can be
/// extracted (unknown tools, MCP tools, unparseable arguments, missing fields). `cwd` and
/// `odek_home` anchor the danger classes as the approval gate sees them.
pub fn args_summary(tool: &str, raw_arguments: &str, cwd: &Path, odek_home: &Path) -> Option<Value> {
    type Summarize = fn(&Value, &Path, &Path) -> Option<Map<String, Value>>;
    let summarize: Summarize = match tool {
        "shell" | "terminal" => summarize_shell,
        "parallel_shell" => summarize_parallel_shell,
        "batch_patch" => summarize_batch_patch,
        "delegate_tasks" => |arguments, _, _| summarize_delegate_tasks(arguments),
        _ if PATH_TOOLS.contains(&tool) => summarize_path,
        _ if URL_TOOLS.contains(&tool) => |arguments, _, _| summarize_url(arguments),
        // Other tools have no summary: their arguments are not even parsed.
        _ => return None,
    };
    let arguments: Value = serde_json::from_str(raw_arguments).ok()?;
    summarize(&arguments, cwd, odek_home).map(Value::Object)
}

fn summarize_shell(arguments: &Value, cwd: &Path, odek_home: &Path) -> Option<Map<String, Value>> {
    let command = arguments.get("command")?.as_str()?;
    let class = classify_command_in(command, cwd, odek_home).class;
    Some(summary_of(Value::from(cut_summary_string(&argv0(command))), class, "argv0"))
}

fn summarize_parallel_shell(arguments: &Value, cwd: &Path, odek_home: &Path) -> Option<Map<String, Value>> {
    let commands: Vec<&str> =
        arguments.get("commands")?.as_array()?.iter().filter_map(|entry| entry.get("command")?.as_str()).collect();
    // Every command counts for the class, also those beyond the listed 16.
    let class = highest_class(commands.iter().map(|command| classify_command_in(command, cwd, odek_home).class))?;
    let programs =
        commands.iter().take(MAX_SUMMARY_ITEMS).map(|command| Value::from(cut_summary_string(&argv0(command))));
    Some(summary_of(Value::Array(programs.collect()), class, "argv0"))
}

fn summarize_path(arguments: &Value, cwd: &Path, odek_home: &Path) -> Option<Map<String, Value>> {
    let path = arguments.get("path")?.as_str()?;
    let class = classify_write(Path::new(path), cwd, odek_home).class;
    Some(summary_of(Value::from(cut_summary_string(path)), class, "path"))
}

fn summarize_batch_patch(arguments: &Value, cwd: &Path, odek_home: &Path) -> Option<Map<String, Value>> {
    let paths: Vec<&str> =
        arguments.get("patches")?.as_array()?.iter().filter_map(|entry| entry.get("path")?.as_str()).collect();
    let class = highest_class(paths.iter().map(|path| classify_write(Path::new(path), cwd, odek_home).class))?;
    let listed = paths.iter().take(MAX_SUMMARY_ITEMS).map(|path| Value::from(cut_summary_string(path)));
    Some(summary_of(Value::Array(listed.collect()), class, "path"))
}

fn summarize_url(arguments: &Value) -> Option<Map<String, Value>> {
    let url = arguments
        .get("url")
        .and_then(Value::as_str)
        .or_else(|| arguments.get("requests")?.get(0)?.get("url")?.as_str());
    let mut summary = Map::new();
    if let Some(host) = url.and_then(url_host) {
        summary.insert("host".to_owned(), Value::from(cut_summary_string(&host)));
    } else if let Some(action) = arguments.get("action").and_then(Value::as_str) {
        summary.insert("action".to_owned(), Value::from(cut_summary_string(action)));
    } else {
        return None;
    }
    Some(summary)
}

fn summarize_delegate_tasks(arguments: &Value) -> Option<Map<String, Value>> {
    let tasks = arguments.get("tasks")?.as_array()?;
    let mut summary = Map::new();
    summary.insert("task_count".to_owned(), Value::from(tasks.len()));
    Some(summary)
}

fn summary_of(subject: Value, class: DangerClass, subject_key: &str) -> Map<String, Value> {
    let mut summary = Map::new();
    summary.insert(subject_key.to_owned(), subject);
    summary.insert("class".to_owned(), Value::from(class.as_str()));
    summary
}

/// The highest class by the §11 rank (`None` for no classes).
fn highest_class(classes: impl Iterator<Item = DangerClass>) -> Option<DangerClass> {
    classes.max_by_key(|class| class.severity())
}

/// A summary string cut to [`MAX_SUMMARY_STRING_BYTES`] on a character boundary.
fn cut_summary_string(text: &str) -> &str {
    if text.len() <= MAX_SUMMARY_STRING_BYTES {
        return text;
    }
    let mut end = MAX_SUMMARY_STRING_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The host of `url` alone: no scheme, userinfo, port, path, query or fragment; lowercased;
/// IPv6 literals without brackets. `None` when there is no host.
fn url_host(url: &str) -> Option<String> {
    let url = url.trim();
    let after_scheme = match url.split_once("://") {
        Some((scheme, rest)) if is_url_scheme(scheme) => rest,
        _ if has_scheme_without_authority(url) => return None,
        _ => url.strip_prefix("//").unwrap_or(url),
    };
    let authority_end = after_scheme.find(['/', '?', '#', '\\']).unwrap_or(after_scheme.len());
    let authority = &after_scheme[..authority_end];
    let host_and_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if let Some(bracketed) = host_and_port.strip_prefix('[') {
        bracketed.split_once(']').map_or(bracketed, |(address, _)| address)
    } else {
        host_and_port.split_once(':').map_or(host_and_port, |(host, _)| host)
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    Some(host.to_ascii_lowercase())
}

/// `about:blank`, `mailto:a@b`: a scheme and no `//` authority, so no host. `host:8080/x`
/// (a port, all digits) is not one.
fn has_scheme_without_authority(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once(':') else {
        return false;
    };
    let port = rest.split(['/', '?', '#']).next().unwrap_or("");
    is_url_scheme(scheme) && !(port.is_empty() || port.bytes().all(|b| b.is_ascii_digit()))
}

/// RFC 3986 scheme: a letter, then letters, digits, `+`, `-`, `.`.
fn is_url_scheme(scheme: &str) -> bool {
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_char_boundary() {
        let text = format!("{}é", "a".repeat(511));
        assert_eq!(cut_summary_string(&text).len(), 511);
        let exact = "b".repeat(512);
        assert_eq!(cut_summary_string(&exact), exact);
    }

    #[test]
    fn host_of_odd_urls() {
        assert_eq!(url_host("https://user:pw@Example.COM:8443/a?b=c#d").as_deref(), Some("example.com"));
        assert_eq!(url_host("http://[::1]:8080/x").as_deref(), Some("::1"));
        assert_eq!(url_host("example.org/path").as_deref(), Some("example.org"));
        assert_eq!(url_host("https:///path"), None);
        assert_eq!(url_host(""), None);
        assert_eq!(url_host("about:blank"), None);
        assert_eq!(url_host("mailto:someone@example.com"), None);
        assert_eq!(url_host("example.com:8080/x").as_deref(), Some("example.com"));
    }

    #[test]
    fn artifact_lines_counted_at_line_start_only() {
        assert_eq!(artifact_count("- artifact a\nx - artifact b\n- artifact c"), 2);
        assert_eq!(artifact_count(""), 0);
    }
}
