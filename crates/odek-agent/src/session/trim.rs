//! Which messages a session file may hold (spec `loop-and-sessions.md` §10.1, §10.3): the
//! latest safe state (no assistant tool-call message without all its results) and the storage
//! cap's oldest-group trimming. Both work on the copy being saved, never on the live
//! conversation. Start at [`safe_state`] and [`trim_to_storage_limit`].

use std::ops::Range;

use odek_llm::{Message, Role};

/// The start of the system message that records storage trimming.
const STORAGE_LIMIT_NOTICE_PREFIX: &str = "[Session storage limit: ";

/// The conversation up to its latest safe state: it ends before the first assistant tool-call
/// message that lacks a result for any of its calls, so a resumed run never sees a dangling call.
pub fn safe_state(messages: &[Message]) -> Vec<Message> {
    messages[..safe_state_len(messages)].to_vec()
}

/// How many leading messages [`safe_state`] keeps.
pub(crate) fn safe_state_len(messages: &[Message]) -> usize {
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Assistant || message.tool_calls.is_empty() {
            continue;
        }
        // A call's results follow it, before the next turn (user or assistant) starts; system
        // messages (plan, context notes) may sit between them.
        let answered: Vec<&str> = messages[index + 1..]
            .iter()
            .take_while(|next| matches!(next.role, Role::Tool | Role::System))
            .filter_map(|next| next.tool_call_id.as_deref())
            .collect();
        if !message.tool_calls.iter().all(|call| answered.contains(&call.id.as_str())) {
            return index;
        }
    }
    messages.len()
}

/// The outcome of [`trim_to_storage_limit`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StorageTrim {
    pub(crate) messages: Vec<Message>,
    /// Groups removed by this call (0: the messages fit as they were).
    pub(crate) removed_groups: usize,
}

/// The oldest-group rule of the storage cap. `fixed_bytes` is the serialised size of everything
/// but the messages array's elements (the rest of the session, `[]` included); the messages must
/// bring the total to at most `max_bytes`.
///
/// When they don't, message groups are removed oldest first (an assistant tool-call message
/// together with the tool results that follow it; any other message alone), keeping the first
/// system message, and the notice `[Session storage limit: <n> oldest message group(s) were
/// removed …` is placed right after it. A notice left by an earlier trim is replaced and its
/// count carried over. `None` when even removing every group does not fit.
pub(crate) fn trim_to_storage_limit(
    messages: Vec<Message>,
    fixed_bytes: usize,
    max_bytes: usize,
) -> Option<StorageTrim> {
    let sizes: Vec<usize> = messages.iter().map(serialized_len).collect();
    if array_bytes(fixed_bytes, &sizes) <= max_bytes {
        return Some(StorageTrim { messages, removed_groups: 0 });
    }
    let head = messages.iter().position(|message| message.role == Role::System && !is_storage_limit_notice(message));
    let notice_slot = head.map_or(0, |head| head + 1);
    let earlier_notice = Some(notice_slot).filter(|&slot| messages.get(slot).is_some_and(is_storage_limit_notice));
    let earlier_removed = earlier_notice.and_then(|index| removed_count(&messages[index])).unwrap_or(0);
    let groups = message_groups(&messages, head, earlier_notice);
    let mut kept_bytes: usize = sizes.iter().sum();
    let mut kept_count = messages.len();
    if let Some(index) = earlier_notice {
        kept_bytes -= sizes[index];
        kept_count -= 1;
    }
    for (removed, group) in groups.iter().enumerate() {
        kept_bytes -= group.clone().map(|index| sizes[index]).sum::<usize>();
        kept_count -= group.len();
        let notice = storage_limit_notice(earlier_removed + removed + 1, max_bytes);
        let notice_bytes = serialized_len(&notice);
        let total = fixed_bytes + kept_bytes + notice_bytes + kept_count;
        if total <= max_bytes {
            let cut = group.end;
            let mut trimmed = Vec::with_capacity(kept_count + 1);
            for (index, message) in messages.into_iter().enumerate() {
                if Some(index) == earlier_notice || (index < cut && Some(index) != head) {
                    continue;
                }
                trimmed.push(message);
                if Some(index) == head {
                    trimmed.push(notice.clone());
                }
            }
            if head.is_none() {
                trimmed.insert(0, notice);
            }
            return Some(StorageTrim { messages: trimmed, removed_groups: removed + 1 });
        }
    }
    None
}

/// Size of the elements plus separators of a JSON array, added to `fixed_bytes`.
fn array_bytes(fixed_bytes: usize, sizes: &[usize]) -> usize {
    fixed_bytes + sizes.iter().sum::<usize>() + sizes.len().saturating_sub(1)
}

/// The removable groups in order, as index ranges, skipping the head and an earlier notice.
/// Groups are contiguous because the head and the notice are system messages, which never sit
/// inside an assistant-with-results run.
fn message_groups(messages: &[Message], head: Option<usize>, earlier_notice: Option<usize>) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut index = 0;
    while index < messages.len() {
        if Some(index) == head || Some(index) == earlier_notice {
            index += 1;
            continue;
        }
        let mut end = index + 1;
        if messages[index].role == Role::Assistant && !messages[index].tool_calls.is_empty() {
            while messages.get(end).is_some_and(|next| next.role == Role::Tool) {
                end += 1;
            }
        }
        groups.push(index..end);
        index = end;
    }
    groups
}

fn storage_limit_notice(removed_groups: usize, max_bytes: usize) -> Message {
    Message::system(format!(
        "{STORAGE_LIMIT_NOTICE_PREFIX}{removed_groups} oldest message group(s) were removed so the session file \
         stays under {max_bytes} bytes; earlier turns of this conversation are no longer available.]"
    ))
}

fn is_storage_limit_notice(message: &Message) -> bool {
    message.role == Role::System && message.content.starts_with(STORAGE_LIMIT_NOTICE_PREFIX)
}

/// The `<n>` of an earlier notice.
fn removed_count(notice: &Message) -> Option<usize> {
    let rest = notice.content.strip_prefix(STORAGE_LIMIT_NOTICE_PREFIX)?;
    let digits = rest.find(|c: char| !c.is_ascii_digit()).map_or(rest, |end| &rest[..end]);
    digits.parse().ok()
}

/// The compact JSON size of one message; 0 if it cannot be encoded (it then fails the real
/// encoding, which reports the error).
fn serialized_len(message: &Message) -> usize {
    serde_json::to_vec(message).map_or(0, |bytes| bytes.len())
}

#[cfg(test)]
mod tests {
    use odek_llm::ToolCall;

    use super::*;

    fn call(ids: &[&str]) -> Message {
        Message {
            tool_calls: ids.iter().map(|id| ToolCall::new(*id, "shell", "{}")).collect(),
            ..Message::assistant("")
        }
    }

    #[test]
    fn safe_state_drops_a_call_missing_a_result() {
        let complete = vec![Message::system("s"), Message::user("u"), call(&["a"]), Message::tool("a", "shell", "ok")];
        assert_eq!(safe_state(&complete), complete);
        let mut dangling = complete.clone();
        dangling.push(call(&["b", "c"]));
        dangling.push(Message::tool("b", "shell", "ok"));
        assert_eq!(safe_state(&dangling), complete);
        let mut unanswered = complete.clone();
        unanswered.push(call(&["d"]));
        assert_eq!(safe_state(&unanswered), complete);
    }

    #[test]
    fn safe_state_accepts_a_system_message_between_call_and_results() {
        let messages = vec![
            Message::user("u"),
            call(&["a", "b"]),
            Message::tool("a", "shell", "ok"),
            Message::system("[Current plan: …"),
            Message::tool("b", "shell", "ok"),
            Message::assistant("done"),
        ];
        assert_eq!(safe_state(&messages), messages);
    }

    #[test]
    fn groups_keep_calls_with_their_results() {
        let messages = vec![
            Message::system("s"),
            Message::user("u"),
            call(&["a"]),
            Message::tool("a", "t", "r"),
            Message::user("v"),
        ];
        assert_eq!(message_groups(&messages, Some(0), None), vec![1..2, 2..4, 4..5]);
    }

    #[test]
    fn notice_count_parses() {
        assert_eq!(removed_count(&storage_limit_notice(12, 100)), Some(12));
    }

    #[test]
    fn without_a_system_prompt_the_notice_leads_and_is_replaced() {
        let mut messages: Vec<Message> = (0..20).map(|n| Message::user(format!("{n}{}", "x".repeat(50)))).collect();
        let first = trim_to_storage_limit(messages.clone(), 20, 600).unwrap();
        assert!(first.removed_groups > 0);
        assert!(is_storage_limit_notice(&first.messages[0]));
        messages = first.messages;
        messages.extend((0..5).map(|n| Message::user(format!("more {n}{}", "y".repeat(50)))));
        let second = trim_to_storage_limit(messages, 20, 600).unwrap();
        assert_eq!(second.messages.iter().filter(|m| is_storage_limit_notice(m)).count(), 1);
        assert!(is_storage_limit_notice(&second.messages[0]));
        assert_eq!(removed_count(&second.messages[0]), Some(first.removed_groups + second.removed_groups));
    }

    #[test]
    fn fitting_messages_are_untouched() {
        let messages = vec![Message::user("hi")];
        let trim = trim_to_storage_limit(messages.clone(), 2, 1000).unwrap();
        assert_eq!(trim, StorageTrim { messages, removed_groups: 0 });
    }
}
