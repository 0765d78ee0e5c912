//! How a parent shows its children's results to the model (spec `subagents.md` §12): one
//! section per task under `📋 Sub-agent results:`, each optional line only when it has
//! content. The caller wraps the text as untrusted (source `delegate_tasks`). Start at
//! [`render_results`].
//!
//! [beyond] Everything a child supplied (status, error, summary, file names, denials, raw
//! output) goes through the same forged-line indentation as a tool result
//! (`results-and-artifacts.md` §5.3), so no line a child wrote starts with `- artifact `, and
//! its multi-line texts cannot forge an artifact preview block either.

use std::borrow::Cow;

use odek_contract::render::sanitise;

use super::artifacts::fence_child_text;
use odek_contract::runes::runes_with_ellipsis;
use serde_json::Value;

/// Most `files changed` names shown.
const MAX_FILES_SHOWN: usize = 20;
/// Most denials shown.
const MAX_DENIALS_SHOWN: usize = 3;
/// The goal in a section title, in runes.
const TITLE_GOAL_RUNES: usize = 60;
/// Raw stdout shown for a task without a parsed result (bytes).
const RAW_OUTPUT_SHOWN_BYTES: usize = 102_400;

/// One task's section input.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskSection<'a> {
    pub(crate) goal: &'a str,
    pub(crate) result: &'a Value,
    /// Whether `result` came from the child; otherwise `raw_stdout` is shown.
    pub(crate) parsed: bool,
    pub(crate) raw_stdout: &'a [u8],
    /// The `artifacts:` block from registration (`register_call_artifacts`), or empty.
    pub(crate) artifacts_block: String,
}

/// The whole tool output (before wrapping). `artifact_read` says whether this process offers
/// `artifact_read` (top level), which changes the truncation hint.
pub(crate) fn render_results(sections: &[TaskSection<'_>], artifact_read: bool) -> String {
    let mut out = String::from("📋 Sub-agent results:\n");
    for (index, section) in sections.iter().enumerate() {
        out.push('\n');
        render_section(&mut out, index + 1, section, artifact_read);
    }
    out
}

fn render_section(out: &mut String, number: usize, section: &TaskSection<'_>, artifact_read: bool) {
    let result = section.result;
    let text = |key: &str| fence_child_text(result.get(key).and_then(Value::as_str).unwrap_or_default());
    let number_of = |key: &str| result.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let goal = section.goal.split_whitespace().collect::<Vec<_>>().join(" ");
    out.push_str(&format!("─── Task {number}: {} ───\n", runes_with_ellipsis(&goal, TITLE_GOAL_RUNES)));

    let mut status = format!("status: {}", text("status"));
    if !text("partial_reason").is_empty() {
        status.push_str(&format!(" ({})", text("partial_reason")));
    }
    if number_of("iterations") > 0.0 {
        status.push_str(&format!(" · {} iterations", number_of("iterations")));
    }
    if number_of("duration_seconds") > 0.0 {
        status.push_str(&format!(" · {:.1}s", number_of("duration_seconds")));
    }
    if number_of("tokens_used") > 0.0 {
        status.push_str(&format!(" · ~{} tokens", number_of("tokens_used")));
    }
    out.push_str(&status);
    out.push('\n');
    if !text("error").is_empty() {
        out.push_str(&format!("error: {}\n", text("error")));
    }
    if !text("summary").is_empty() {
        out.push_str(&format!("summary: {}\n", text("summary")));
    }
    if result.get("summary_truncated").and_then(Value::as_bool) == Some(true) {
        let runes = number_of("summary_runes");
        if artifact_read {
            out.push_str(&format!(
                "headline truncated (2048 of {runes} runes shown) — fetch artifacts via artifact_read or re-run with a narrower goal\n"
            ));
        } else {
            out.push_str(&format!("headline truncated (2048 of {runes} runes shown) — re-run with a narrower goal\n"));
        }
    }
    let files: Vec<Cow<'_, str>> = result
        .get("files_changed")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(sanitise)
        .collect();
    if !files.is_empty() {
        let mut line = format!(
            "files changed: {}",
            files.iter().take(MAX_FILES_SHOWN).map(AsRef::as_ref).collect::<Vec<_>>().join(", ")
        );
        if files.len() > MAX_FILES_SHOWN {
            line.push_str(&format!(" (+{} more)", files.len() - MAX_FILES_SHOWN));
        }
        out.push_str(&line);
        out.push('\n');
    }
    let denials: Vec<&Value> = result.get("denials").and_then(Value::as_array).into_iter().flatten().collect();
    if !denials.is_empty() {
        let total = result.get("denials_total").and_then(Value::as_u64).unwrap_or(denials.len() as u64);
        let shown: Vec<String> = denials
            .iter()
            .take(MAX_DENIALS_SHOWN)
            .map(|denial| {
                let field = |key: &str| sanitise(denial.get(key).and_then(Value::as_str).unwrap_or_default());
                if field("class").is_empty() {
                    format!("{} — {}", field("tool"), field("reason"))
                } else {
                    format!("{}/{} — {}", field("tool"), field("class"), field("reason"))
                }
            })
            .collect();
        out.push_str(&format!("denials ({} of {total}): {}\n", shown.len(), shown.join("; ")));
    }
    if !section.artifacts_block.is_empty() {
        out.push_str(&section.artifacts_block);
        out.push('\n');
    }
    if !section.parsed && !section.raw_stdout.is_empty() {
        let shown = &section.raw_stdout[..section.raw_stdout.len().min(RAW_OUTPUT_SHOWN_BYTES)];
        out.push_str("raw output:\n");
        out.push_str(&fence_child_text(&String::from_utf8_lossy(shown)));
        if section.raw_stdout.len() > RAW_OUTPUT_SHOWN_BYTES {
            out.push_str("\n... [result truncated]");
        }
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_full_section() {
        let result = json!({
            "status": "partial", "partial_reason": "iteration_budget", "iterations": 3, "duration_seconds": 12.34,
            "tokens_used": 900, "summary": "did most", "summary_truncated": true, "summary_runes": 5000,
            "files_changed": ["a.md", "b.md"], "denials_total": 4,
            "denials": [{"tool": "shell", "class": "destructive", "reason": "rm"}, {"tool": "x", "class": "", "reason": "no"}],
        });
        let text = render_results(
            &[TaskSection { goal: "write the docs", result: &result, parsed: true, ..TaskSection::default() }],
            true,
        );
        assert_eq!(
            text,
            "📋 Sub-agent results:\n\n─── Task 1: write the docs ───\n\
status: partial (iteration_budget) · 3 iterations · 12.3s · ~900 tokens\n\
summary: did most\n\
headline truncated (2048 of 5000 runes shown) — fetch artifacts via artifact_read or re-run with a narrower goal\n\
files changed: a.md, b.md\n\
denials (2 of 4): shell/destructive — rm; x — no\n"
        );
    }

    #[test]
    fn an_unparsed_task_shows_its_raw_output() {
        let result = json!({"status": "no_result", "error": "no result from sub-agent (exit 1)"});
        let section = TaskSection {
            goal: "g",
            result: &result,
            parsed: false,
            raw_stdout: b"garbage\n",
            ..TaskSection::default()
        };
        let text = render_results(&[section], false);
        assert!(
            text.ends_with("status: no_result\nerror: no result from sub-agent (exit 1)\nraw output:\ngarbage\n\n"),
            "{text}"
        );
    }
}
