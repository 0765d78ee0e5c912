//! Modes about the tool catalogue itself rather than one tool's behaviour: listings past odek's
//! caps (many-tools, heavy-tools), tools carrying `annotations` hints (annotated-tools), a tool
//! whose schema is closed with `additionalProperties: false` (closed-schema) and one whose
//! arguments must satisfy `format` and `enum` (formatted-arguments). The SDK's `ToolDef` has no
//! `annotations`, so they are added to the listed pages here.

use std::sync::Arc;

use odek_extension::{Reply, Server, ToolDef, ToolResponse};
use serde_json::{Map, Value, json};

use crate::mode::Mode;
use crate::{Fixture, bind};

/// many-tools: pages, and tools per page (a million tools in all, each a bare name).
pub(crate) const MANY_TOOLS_PAGES: u64 = 100;
pub(crate) const MANY_TOOLS_PER_PAGE: u64 = 10_000;
/// heavy-tools: pages, tools per page and description bytes per tool — 800 tools, about
/// 6.4 MB: under odek's tool cap, over its 4 MiB listing cap.
const HEAVY_TOOLS_PAGES: u64 = 8;
const HEAVY_TOOLS_PER_PAGE: u64 = 100;
const HEAVY_DESCRIPTION_BYTES: usize = 8 * 1024;

/// The file destructive_delete creates in the artifact dir, so a test can tell it was called.
pub(crate) const DESTRUCTIVE_MARKER: &str = "destructive_delete-was-called";

/// A whole `tools/list` page for the listing modes, or `None` when none is on.
pub(crate) fn listing_page(fixture: &Fixture, cursor: Option<&str>) -> Option<Reply> {
    let page = |prefix: &str| match cursor.and_then(|cursor| cursor.strip_prefix(prefix)) {
        Some(number) => number.parse::<u64>().unwrap_or(1),
        None => 1,
    };
    if fixture.has(Mode::ManyTools) {
        let number = page("many-");
        let tools: Vec<Value> =
            (0..MANY_TOOLS_PER_PAGE).map(|index| json!({"name": format!("t{number}_{index}")})).collect();
        return Some(numbered_page(tools, number, MANY_TOOLS_PAGES, "many-"));
    }
    if fixture.has(Mode::HeavyTools) {
        let number = page("heavy-");
        let description = "d".repeat(HEAVY_DESCRIPTION_BYTES);
        let tools: Vec<Value> = (0..HEAVY_TOOLS_PER_PAGE)
            .map(|index| {
                json!({"name": format!("h{number}_{index}"), "description": description, "inputSchema": {"type": "object"}})
            })
            .collect();
        return Some(numbered_page(tools, number, HEAVY_TOOLS_PAGES, "heavy-"));
    }
    None
}

fn numbered_page(tools: Vec<Value>, number: u64, pages: u64, prefix: &str) -> Reply {
    let mut page = json!({"tools": tools});
    if number < pages {
        page["nextCursor"] = Value::from(format!("{prefix}{}", number + 1));
    }
    Reply::Result(page)
}

/// The `annotations` object listed for a tool of these modes.
fn annotations_of(name: &str) -> Option<Value> {
    Some(match name {
        "read_only_lookup" | "strict_lookup" | "formatted_lookup" => {
            json!({"readOnlyHint": true, "destructiveHint": false})
        }
        "destructive_delete" => json!({"readOnlyHint": false, "destructiveHint": true}),
        "open_world_write" => json!({"readOnlyHint": false, "destructiveHint": false}),
        _ => return None,
    })
}

/// Adds each tool's `annotations` to a `tools/list` page.
pub(crate) fn with_annotations(reply: Reply) -> Reply {
    match reply {
        Reply::Result(mut page) => {
            for tool in page.get_mut("tools").and_then(Value::as_array_mut).into_iter().flatten() {
                let annotations = tool.get("name").and_then(Value::as_str).and_then(annotations_of);
                if let (Some(annotations), Some(tool)) = (annotations, tool.as_object_mut()) {
                    tool.insert("annotations".to_owned(), annotations);
                }
            }
            Reply::Result(page)
        }
        other => other,
    }
}

/// The tools of annotated-tools, closed-schema and formatted-arguments.
pub(crate) fn register_tools(mut server: Server, fixture: &Arc<Fixture>) -> Server {
    let object = json!({"type": "object"});
    if fixture.has(Mode::AnnotatedTools) {
        server = server
            .tool(
                ToolDef::new("read_only_lookup", "Looks something up (annotated read-only).", object.clone()),
                |_, _| async { ToolResponse::text("looked up") },
            )
            .tool(
                ToolDef::new("destructive_delete", "Deletes something (annotated destructive).", object.clone()),
                bind(fixture, destructive_delete),
            )
            .tool(
                ToolDef::new(
                    "open_world_write",
                    "Writes something (annotated neither read-only nor destructive).",
                    object,
                ),
                |_, _| async { ToolResponse::text("written") },
            );
    }
    if fixture.has(Mode::ClosedSchema) {
        let schema = json!({
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "additionalProperties": false,
        });
        server = server.tool(
            ToolDef::new("strict_lookup", "Looks up q; its schema allows no other argument.", schema),
            |_, arguments| async move { strict_lookup(&arguments) },
        );
    }
    if fixture.has(Mode::FormattedArguments) {
        server = server.tool(
            ToolDef::new("formatted_lookup", "Needs arguments in the formats its schema names.", formatted_schema()),
            |_, arguments| async move { formatted_lookup(&arguments) },
        );
    }
    server
}

async fn destructive_delete(fixture: Arc<Fixture>, _: Arc<odek_extension::CallContext>, _: Value) -> ToolResponse {
    match std::fs::write(fixture.artifact_dir.join(DESTRUCTIVE_MARKER), "called\n") {
        Ok(()) => ToolResponse::text("deleted"),
        Err(error) => ToolResponse::error(format!("destructive_delete: {error}")),
    }
}

/// closed-schema: an argument other than `q` gets isError, as the schema says.
fn strict_lookup(arguments: &Value) -> ToolResponse {
    let empty = Map::new();
    let members = arguments.as_object().unwrap_or(&empty);
    match members.keys().find(|name| name.as_str() != "q") {
        Some(unknown) => ToolResponse::error(format!("unknown argument {}", Value::from(unknown.as_str()))),
        None => ToolResponse::text("found"),
    }
}

fn formatted_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "email": {"type": "string", "format": "email"},
            "id": {"type": "string", "format": "uuid"},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "level": {"const": 3},
        },
        "required": ["url", "when", "day", "email", "id", "mode", "level"],
    })
}

/// Whether a text fits one `format`.
type FormatCheck = fn(&str) -> bool;

/// formatted-arguments: isError naming the first argument not in its format.
fn formatted_lookup(arguments: &Value) -> ToolResponse {
    let text = |name: &str| arguments.get(name).and_then(Value::as_str).unwrap_or_default();
    let checks: [(&str, FormatCheck); 6] = [
        ("url", is_uri),
        ("when", is_date_time),
        ("day", is_date),
        ("email", is_email),
        ("id", is_uuid),
        ("mode", |mode| mode == "fast" || mode == "slow"),
    ];
    if let Some((name, _)) = checks.iter().find(|(name, valid)| !valid(text(name))) {
        return ToolResponse::error(format!("argument {name} is not valid: {}", Value::from(text(name))));
    }
    if arguments.get("level") != Some(&json!(3)) {
        return ToolResponse::error("argument level must be 3");
    }
    ToolResponse::text("all arguments valid")
}

fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else { return false };
    scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
}

fn digits(text: &str, count: usize) -> bool {
    text.len() == count && text.bytes().all(|byte| byte.is_ascii_digit())
}

fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    matches!(parts.as_slice(), [year, month, day] if digits(year, 4) && digits(month, 2) && digits(day, 2))
}

fn is_date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't']) else { return false };
    let time = time.strip_suffix(['Z', 'z']).unwrap_or(time);
    let parts: Vec<&str> = time.split(':').collect();
    is_date(date)
        && matches!(parts.as_slice(), [hour, minute, second] if digits(hour, 2) && digits(minute, 2) && digits(second, 2))
}

fn is_email(text: &str) -> bool {
    matches!(text.split_once('@'), Some((local, domain)) if !local.is_empty() && domain.contains('.') && !domain.starts_with('.'))
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|byte| byte.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_checks_accept_valid_text_only() {
        assert!(is_uri("https://example.com/x") && !is_uri("odek-check") && !is_uri("1x:y"));
        assert!(is_date_time("2025-01-01T00:00:00Z") && !is_date_time("odek-check"));
        assert!(is_date("2025-01-01") && !is_date("2025-1-1"));
        assert!(is_email("a@example.com") && !is_email("odek-check"));
        assert!(is_uuid("00000000-0000-4000-8000-000000000000") && !is_uuid("odek-check"));
    }

    #[test]
    fn the_closed_schema_tool_rejects_other_arguments() {
        assert_eq!(strict_lookup(&json!({"q": "x"})), ToolResponse::text("found"));
        assert_eq!(strict_lookup(&json!({"q": "x", "z": 1})), ToolResponse::error("unknown argument \"z\""));
    }
}
