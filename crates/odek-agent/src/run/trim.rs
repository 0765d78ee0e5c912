//! Context budget and trimming (spec `loop-and-sessions.md` §7): token estimates, the context
//! windows we know, the protected head, the proactive trim before every model call and the
//! survival trim after a context-length error. The digest side call is in `compaction`.

use std::collections::BTreeSet;

use odek_llm::{Message, Role, ToolDefinition};

/// Tool messages larger than this are replaced first.
const TRIM_TOOL_OUTPUT_ABOVE_BYTES: usize = 2000;
/// The most recent tool messages are never replaced.
const KEEP_RECENT_TOOL_OUTPUTS: usize = 4;
/// Dropped tool names listed in the warning.
const MAX_LISTED_DROPPED_TOOLS: usize = 5;

/// First-line prefixes of the runtime's own system messages.
const TRIM_WARNING_PREFIX: &str = "[Context trimmed:";
const SURVIVAL_NOTICE_PREFIX: &str = "[Context trimmed to survive:";
pub(crate) const SURVIVAL_MODE_PREFIX: &str = "[Context survival mode:";
pub(crate) const DIGEST_PREFIX: &str = "[Compacted earlier context:";

/// Tokens of a string: (bytes + 3) / 4.
fn estimate_text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// A message: content and reasoning + 50; each tool call + 30 + its name and arguments.
fn estimate_message_tokens(message: &Message) -> u64 {
    let mut tokens = estimate_text_tokens(&message.content) + 50;
    if let Some(reasoning) = &message.reasoning_content {
        tokens += estimate_text_tokens(reasoning);
    }
    for call in &message.tool_calls {
        tokens += 30 + estimate_text_tokens(&call.function.name) + estimate_text_tokens(&call.function.arguments);
    }
    tokens
}

/// Each tool definition + 30 + its serialised schema, name and description.
pub(crate) fn estimate_tools_tokens(tools: &[ToolDefinition]) -> u64 {
    tools
        .iter()
        .map(|tool| {
            30 + estimate_text_tokens(&tool.parameters.to_string())
                + estimate_text_tokens(&tool.name)
                + estimate_text_tokens(&tool.description)
        })
        .sum()
}

pub fn estimate_messages_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(estimate_message_tokens).sum()
}

/// The context window of a model we know; `None` = no proactive trimming.
pub fn context_window(model: &str) -> Option<u64> {
    match model {
        "deepseek-v4-pro" => Some(1_000_000),
        "deepseek-v4-flash" => Some(131_072),
        other if other.starts_with("deepseek-") => Some(131_072),
        _ => None,
    }
}

/// The provider error texts that mean "the context is too long" (§1 step 4).
pub(crate) fn is_context_length_error(message: &str) -> bool {
    const MARKERS: [&str; 11] = [
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "token limit",
        "context window",
        "max_input_tokens",
        "input length",
        "too many tokens",
        "input is too long",
        "reduce the length",
        // [beyond] Anthropic's 400 `invalid_request_error`: "prompt is too long: N tokens > M maximum".
        "prompt is too long",
    ];
    MARKERS.iter().any(|marker| message.contains(marker))
}

/// The token budget of the run: 75 % of the window, 65 % once the provider reported more input
/// than 1.15 × our estimate.
#[derive(Debug, Clone)]
pub(crate) struct ContextBudget {
    window: Option<u64>,
    underestimates: bool,
    last_estimate: Option<u64>,
}

impl ContextBudget {
    pub(crate) fn new(window: Option<u64>) -> ContextBudget {
        ContextBudget { window, underestimates: false, last_estimate: None }
    }

    /// Tokens the request may hold; `None` = unlimited.
    pub(crate) fn budget(&self) -> Option<u64> {
        let percent = if self.underestimates { 65 } else { 75 };
        self.window.map(|window| window * percent / 100)
    }

    /// Remembers the estimate of the request about to be sent.
    pub(crate) fn record_estimate(&mut self, estimate: u64) {
        self.last_estimate = Some(estimate);
    }

    /// Compares the provider's input count with the last estimate.
    pub(crate) fn record_reported_input(&mut self, input_tokens: u64) {
        if let Some(estimate) = self.last_estimate
            && u128::from(input_tokens) * 100 > u128::from(estimate) * 115
        {
            self.underestimates = true;
        }
    }
}

fn first_line_starts_with(message: &Message, prefix: &str) -> bool {
    message.role == Role::System && message.content.starts_with(prefix)
}

fn is_digest_or_plan(message: &Message) -> bool {
    first_line_starts_with(message, DIGEST_PREFIX) || crate::plan::is_plan_message(message)
}

/// §7.2: the leading system messages, the first user message, then the digest and plan
/// messages that follow. Returns the head's length.
pub(crate) fn protected_head_len(messages: &[Message]) -> usize {
    let mut index = messages.iter().take_while(|message| message.role == Role::System).count();
    if messages.get(index).is_some_and(|message| message.role == Role::User) {
        index += 1;
    }
    while messages.get(index).is_some_and(is_digest_or_plan) {
        index += 1;
    }
    index
}

fn last_user_index(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|message| message.role == Role::User)
}

/// One droppable unit after the head: `start..end`.
fn group_end(messages: &[Message], start: usize) -> usize {
    let mut end = start + 1;
    if messages[start].role == Role::Assistant && !messages[start].tool_calls.is_empty() {
        while messages.get(end).is_some_and(|message| message.role == Role::Tool) {
            end += 1;
        }
    }
    end
}

/// Messages a trim never drops: the latest user message and the runtime's own notices.
fn is_pinned(messages: &[Message], index: usize, last_user: Option<usize>) -> bool {
    Some(index) == last_user
        || is_digest_or_plan(&messages[index])
        || first_line_starts_with(&messages[index], TRIM_WARNING_PREFIX)
}

/// What one proactive pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TrimPass {
    pub(crate) truncated_results: usize,
    pub(crate) dropped_groups: usize,
    /// The dropped messages, in order (input for the digest).
    pub(crate) dropped: Vec<Message>,
}

impl TrimPass {
    pub(crate) fn is_empty(&self) -> bool {
        self.truncated_results == 0 && self.dropped_groups == 0
    }
}

/// The run's cumulative trimming state (for the warning message).
#[derive(Debug, Clone, Default)]
pub(crate) struct TrimTotals {
    truncated_results: usize,
    dropped_groups: usize,
    dropped_tools: BTreeSet<String>,
}

/// §7.3 steps 1–2 when the request is over `budget`. `tools_tokens` is the catalogue's estimate.
pub(crate) fn proactive_trim(messages: &mut Vec<Message>, tools_tokens: u64, budget: u64) -> TrimPass {
    let mut pass = TrimPass::default();
    let over = |messages: &[Message]| estimate_messages_tokens(messages) + tools_tokens > budget;
    if !over(messages) {
        return pass;
    }
    let tool_indices: Vec<usize> =
        messages.iter().enumerate().filter(|(_, message)| message.role == Role::Tool).map(|(index, _)| index).collect();
    let replaceable = tool_indices.len().saturating_sub(KEEP_RECENT_TOOL_OUTPUTS);
    for &index in &tool_indices[..replaceable] {
        let size = messages[index].content.len();
        if size > TRIM_TOOL_OUTPUT_ABOVE_BYTES {
            messages[index].content = format!("[tool output trimmed: {size} bytes dropped to fit context budget]");
            pass.truncated_results += 1;
        }
    }
    while over(messages) {
        let head = protected_head_len(messages);
        let last_user = last_user_index(messages);
        let Some(start) = (head..messages.len()).find(|&index| !is_pinned(messages, index, last_user)) else {
            break;
        };
        let end = group_end(messages, start);
        pass.dropped.extend(messages.drain(start..end));
        pass.dropped_groups += 1;
    }
    pass
}

impl TrimTotals {
    pub(crate) fn add(&mut self, pass: &TrimPass) {
        self.truncated_results += pass.truncated_results;
        self.dropped_groups += pass.dropped_groups;
        for message in &pass.dropped {
            for call in &message.tool_calls {
                self.dropped_tools.insert(call.function.name.clone());
            }
        }
    }

    /// §7.3 step 4: the cumulative warning text.
    pub(crate) fn warning(&self, has_digest: bool) -> String {
        let mut parts = Vec::new();
        if self.truncated_results > 0 {
            parts.push(format!("{} tool output(s) truncated", self.truncated_results));
        }
        if self.dropped_groups > 0 {
            parts.push(format!("{} prior message group(s) dropped", self.dropped_groups));
        }
        let mut text = format!(
            "{TRIM_WARNING_PREFIX} {} to stay within the token budget. Earlier tool calls and their results are no longer in this conversation.",
            parts.join(", ")
        );
        if !self.dropped_tools.is_empty() {
            let names: Vec<&str> =
                self.dropped_tools.iter().take(MAX_LISTED_DROPPED_TOOLS).map(String::as_str).collect();
            text.push_str(&format!(" Dropped calls included: {}.", names.join(", ")));
        }
        if has_digest {
            text.push_str(" A summary of the dropped turns is in the compacted-context message above.");
        }
        text.push_str(
            " If the task refers to earlier work you can no longer see, re-read the files or re-run the commands you need instead of guessing.]",
        );
        text
    }
}

/// Inserts or replaces the warning system message right before the latest user message.
pub(crate) fn upsert_trim_warning(messages: &mut Vec<Message>, warning: String) {
    if let Some(index) = messages.iter().position(|message| first_line_starts_with(message, TRIM_WARNING_PREFIX)) {
        messages.remove(index);
    }
    let at = last_user_index(messages).unwrap_or(messages.len());
    messages.insert(at, Message::system(warning));
}

/// §7.5: keeps the first system message, the survival notice, the digest, the plan, the first
/// user message if it differs from the last, the last two complete assistant→tool groups with
/// the system messages directly before them, and the last user message. Returns how many
/// messages were dropped.
pub(crate) fn survival_trim(messages: &mut Vec<Message>) -> usize {
    let before = messages.len();
    let mut keep = vec![false; before];
    let first_system = messages.iter().position(|message| message.role == Role::System);
    if let Some(index) = first_system {
        keep[index] = true;
    }
    for (index, message) in messages.iter().enumerate() {
        if is_digest_or_plan(message) {
            keep[index] = true;
        }
    }
    let first_user = messages.iter().position(|message| message.role == Role::User);
    let last_user = last_user_index(messages);
    if let Some(index) = last_user {
        keep[index] = true;
    }
    if let (Some(first), Some(last)) = (first_user, last_user)
        && messages[first].content != messages[last].content
    {
        keep[first] = true;
    }
    let mut groups_kept = 0;
    let mut index = messages.len();
    while index > 0 && groups_kept < 2 {
        index -= 1;
        let message = &messages[index];
        if message.role != Role::Assistant || message.tool_calls.is_empty() {
            continue;
        }
        let end = group_end(messages, index);
        if end - index - 1 < message.tool_calls.len() {
            continue; // incomplete group: never kept without its results
        }
        keep[index..end].iter_mut().for_each(|slot| *slot = true);
        let mut before_group = index;
        while before_group > 0 && messages[before_group - 1].role == Role::System {
            before_group -= 1;
            keep[before_group] = true;
        }
        groups_kept += 1;
    }
    let mut kept = Vec::with_capacity(before);
    for (message, keep) in messages.drain(..).zip(keep) {
        if keep && !first_line_starts_with(&message, SURVIVAL_NOTICE_PREFIX) {
            kept.push(message);
        }
    }
    let notice = Message::system(format!(
        "{SURVIVAL_NOTICE_PREFIX} the conversation overflowed the model's context window, so earlier turns were dropped. Only the task, the most recent steps and any summary or plan remain.]"
    ));
    let at = usize::from(first_system.is_some()).min(kept.len());
    kept.insert(at, notice);
    let dropped = before.saturating_sub(kept.len() - 1);
    *messages = kept;
    dropped
}

#[cfg(test)]
mod tests {
    use odek_llm::ToolCall;

    use super::*;

    fn assistant_calls(names: &[&str]) -> Message {
        let mut message = Message::assistant("");
        message.tool_calls =
            names.iter().enumerate().map(|(i, name)| ToolCall::new(format!("c{i}"), *name, "{}")).collect();
        message
    }

    fn conversation(groups: usize, output_bytes: usize) -> Vec<Message> {
        let mut messages = vec![Message::system("identity"), Message::user("the task")];
        for group in 0..groups {
            messages.push(assistant_calls(&["shell"]));
            messages.push(Message::tool("c0", "shell", format!("{group}{}", "x".repeat(output_bytes))));
        }
        messages
    }

    #[test]
    fn estimates_follow_the_formula() {
        assert_eq!(estimate_text_tokens(""), 0);
        assert_eq!(estimate_text_tokens("abcde"), 2);
        let mut message = Message::assistant("abcd");
        message.tool_calls = vec![ToolCall::new("1", "ab", "abcd")];
        assert_eq!(estimate_message_tokens(&message), 1 + 50 + 30 + 1 + 1);
    }

    #[test]
    fn context_windows_use_the_longest_prefix() {
        assert_eq!(context_window("deepseek-v4-pro"), Some(1_000_000));
        assert_eq!(context_window("deepseek-v4-flash"), Some(131_072));
        assert_eq!(context_window("deepseek-chat"), Some(131_072));
        assert_eq!(context_window("gpt-x"), None);
    }

    #[test]
    fn budget_drops_to_65_percent_after_an_underestimate() {
        let mut budget = ContextBudget::new(Some(1000));
        assert_eq!(budget.budget(), Some(750));
        budget.record_estimate(100);
        budget.record_reported_input(115);
        assert_eq!(budget.budget(), Some(750));
        budget.record_reported_input(116);
        assert_eq!(budget.budget(), Some(650));
    }

    #[test]
    fn under_budget_nothing_changes() {
        let mut messages = conversation(3, 5000);
        let pass = proactive_trim(&mut messages, 0, u64::MAX);
        assert!(pass.is_empty());
        assert_eq!(messages.len(), 8);
    }

    #[test]
    fn large_old_outputs_are_replaced_except_the_four_most_recent() {
        let mut messages = conversation(6, 3000);
        let estimate = estimate_messages_tokens(&messages);
        let pass = proactive_trim(&mut messages, 0, estimate - 1);
        assert_eq!(pass.truncated_results, 2);
        assert_eq!(pass.dropped_groups, 0);
        assert_eq!(messages[3].content, "[tool output trimmed: 3001 bytes dropped to fit context budget]");
        assert!(messages[11].content.len() > 3000);
    }

    #[test]
    fn groups_are_dropped_whole_oldest_first_and_the_head_stays() {
        let mut messages = conversation(6, 100);
        let pass = proactive_trim(&mut messages, 0, 300);
        assert!(pass.dropped_groups >= 1);
        assert_eq!(messages[0].content, "identity");
        assert_eq!(messages[1].content, "the task");
        // No orphan tool message right after the head.
        assert_eq!(messages[2].role, Role::Assistant);
        assert!(messages.iter().filter(|m| m.role == Role::Tool).count() * 2 == messages.len() - 2);
    }

    #[test]
    fn the_warning_counts_run_totals_and_sorts_names() {
        let mut totals = TrimTotals::default();
        let pass = TrimPass {
            truncated_results: 2,
            dropped_groups: 1,
            dropped: vec![assistant_calls(&["write_file", "shell", "a", "b", "c", "d"])],
        };
        totals.add(&pass);
        let warning = totals.warning(false);
        assert!(
            warning.starts_with(
                "[Context trimmed: 2 tool output(s) truncated, 1 prior message group(s) dropped to stay within the token budget."
            ),
            "{warning}"
        );
        assert!(warning.contains("a, b, c, d, shell."), "{warning}");
        let mut messages = conversation(1, 10);
        upsert_trim_warning(&mut messages, totals.warning(true));
        upsert_trim_warning(&mut messages, totals.warning(true));
        assert_eq!(messages.iter().filter(|m| m.content.starts_with(TRIM_WARNING_PREFIX)).count(), 1);
        assert!(messages[1].content.starts_with(TRIM_WARNING_PREFIX));
        assert_eq!(messages[2].content, "the task");
    }

    #[test]
    fn survival_keeps_the_last_two_groups_and_the_task() {
        let mut messages = conversation(5, 10);
        messages.insert(6, Message::system("hint before group 3"));
        let dropped = survival_trim(&mut messages);
        let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents[0], "identity");
        assert!(contents[1].starts_with(SURVIVAL_NOTICE_PREFIX));
        assert_eq!(contents[2], "the task");
        assert_eq!(messages.len(), 3 + 4);
        assert_eq!(dropped, 6 + 1);
    }

    #[test]
    fn survival_never_keeps_an_incomplete_group() {
        let mut messages = conversation(3, 10);
        messages.push(assistant_calls(&["shell", "shell"]));
        messages.push(Message::tool("c0", "shell", "only one result"));
        survival_trim(&mut messages);
        let tool_calls: usize = messages.iter().map(|m| m.tool_calls.len()).sum();
        let tools = messages.iter().filter(|m| m.role == Role::Tool).count();
        assert_eq!(tool_calls, tools);
    }

    #[test]
    fn context_length_errors_are_recognised() {
        assert!(is_context_length_error("HTTP 400: This model's maximum context length is 8192 tokens"));
        assert!(!is_context_length_error("HTTP 500: internal"));
        assert!(is_context_length_error("HTTP 400: prompt is too long: 210000 tokens > 200000 maximum"));
    }
}
