//! The session as its file holds it (spec `loop-and-sessions.md` §10.2), and the copy a save
//! writes: safe state only, secrets redacted. Unknown fields are ignored on load.

use chrono::SecondsFormat;
use odek_contract::redaction::redact;
use odek_llm::{Message, Role, Usage};
use serde::{Deserialize, Serialize};

use super::external_ref::{ExternalRef, is_same_external_ref, validate_external_ref};
use super::trim::safe_state_len;
use super::{ExternalRefError, SessionId};

/// One persisted conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: SessionId,
    /// RFC 3339 UTC.
    #[serde(default)]
    pub created_at: String,
    /// RFC 3339 UTC, set by every save.
    #[serde(default)]
    pub updated_at: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub provider: String,
    /// The provider base URL the run used, so `odek continue` talks to the same endpoint
    /// (additive to §10.2; omitted when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_url: String,
    /// Number of user messages over the whole session (trimmed ones included); set by saves.
    #[serde(default)]
    pub turns: u64,
    /// The first user message; set by the first save that sees one. Redacted in the file.
    #[serde(default)]
    pub task: String,
    #[serde(default)]
    pub sandbox: bool,
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Cumulative and informative.
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external_refs: Vec<ExternalRef>,
    /// \[beyond\] The approval mode a face set for the session (`ask`, `read-only`), so the
    /// session loaded again keeps it; omitted for the configured policy. Additive to §10.2.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
    /// User messages the file counted in `turns` but no longer holds (removed by storage trims).
    #[serde(skip)]
    pub(crate) trimmed_user_turns: u64,
    /// Whether this process already warned that the session hit the storage cap.
    #[serde(skip)]
    pub(crate) storage_warned: bool,
}

impl Session {
    /// A new, empty session created now.
    pub fn new(id: SessionId) -> Session {
        let now = now_rfc3339();
        Session {
            id,
            created_at: now.clone(),
            updated_at: now,
            model: String::new(),
            provider: String::new(),
            base_url: String::new(),
            turns: 0,
            task: String::new(),
            sandbox: false,
            messages: Vec::new(),
            input_tokens: 0,
            output_tokens: 0,
            external_refs: Vec::new(),
            mode: String::new(),
            trimmed_user_turns: 0,
            storage_warned: false,
        }
    }

    /// Adds provider-reported usage to the cumulative counts.
    pub fn add_usage(&mut self, usage: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(usage.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(usage.output_tokens);
    }

    /// Adds refs in order, stamping `created_at` (UTC, now) where it is empty and skipping refs
    /// equal to one already present (see [`is_same_external_ref`]). Refs are never removed. The
    /// first invalid ref stops the add with its error; the refs before it stay added.
    pub fn add_external_refs(&mut self, refs: impl IntoIterator<Item = ExternalRef>) -> Result<(), ExternalRefError> {
        for mut external_ref in refs {
            validate_external_ref(&external_ref)?;
            if self.external_refs.iter().any(|existing| is_same_external_ref(existing, &external_ref)) {
                continue;
            }
            if external_ref.created_at.is_empty() {
                external_ref.created_at = now_rfc3339();
            }
            self.external_refs.push(external_ref);
        }
        Ok(())
    }

    /// Refreshes what a save derives from the conversation: `updated_at`, `turns`, and `task`
    /// while it is still empty.
    pub(crate) fn refresh_for_save(&mut self) {
        self.updated_at = now_rfc3339();
        if self.created_at.is_empty() {
            self.created_at.clone_from(&self.updated_at);
        }
        self.turns = self.trimmed_user_turns.saturating_add(count_user_messages(&self.messages));
        if self.task.is_empty()
            && let Some(first) = self.messages.iter().find(|message| message.role == Role::User)
        {
            self.task.clone_from(&first.content);
        }
    }

    /// What a save writes: the latest safe state, with `content`, `reasoning_content`, tool-call
    /// arguments, `task` and external-ref URIs redacted. The live session is not touched.
    pub(crate) fn stored_copy(&self) -> Session {
        let safe = &self.messages[..safe_state_len(&self.messages)];
        Session {
            id: self.id.clone(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            model: self.model.clone(),
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            turns: self.turns,
            task: redact(&self.task).into_owned(),
            sandbox: self.sandbox,
            messages: safe.iter().map(redacted_message).collect(),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            external_refs: self
                .external_refs
                .iter()
                .map(|external_ref| ExternalRef { uri: redact(&external_ref.uri).into_owned(), ..external_ref.clone() })
                .collect(),
            mode: self.mode.clone(),
            trimmed_user_turns: self.trimmed_user_turns,
            storage_warned: self.storage_warned,
        }
    }

    /// Called on a freshly decoded file: remembers how many counted turns the file no longer
    /// holds, so later saves keep `turns` right.
    pub(crate) fn note_loaded(&mut self) {
        self.trimmed_user_turns = self.turns.saturating_sub(count_user_messages(&self.messages));
    }
}

/// Tool-call arguments and tool names are model output too: a secret the model copied into a
/// call (or used as a tool's name) must not land on disk any more than one it wrote in its
/// content.
fn redacted_message(message: &Message) -> Message {
    let mut stored = Message {
        content: redact(&message.content).into_owned(),
        reasoning_content: message.reasoning_content.as_deref().map(|reasoning| redact(reasoning).into_owned()),
        name: message.name.as_deref().map(|name| redact(name).into_owned()),
        reasoning_blocks: message.reasoning_blocks.iter().filter(|block| block.survives_redaction()).cloned().collect(),
        ..message.clone()
    };
    for call in &mut stored.tool_calls {
        call.function.name = redact(&call.function.name).into_owned();
        call.function.arguments = redact(&call.function.arguments).into_owned();
    }
    stored
}

fn count_user_messages(messages: &[Message]) -> u64 {
    u64::try_from(messages.iter().filter(|message| message.role == Role::User).count()).unwrap_or(u64::MAX)
}

/// The current time as RFC 3339 UTC (`Z`), with sub-second digits when non-zero.
fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session::new(SessionId::parse("20250101-test").unwrap())
    }

    #[test]
    fn refresh_counts_turns_and_takes_the_first_user_message_as_task() {
        let mut session = session();
        session.messages = vec![Message::system("s"), Message::user("first"), Message::user("second")];
        session.refresh_for_save();
        assert_eq!((session.turns, session.task.as_str()), (2, "first"));
        session.trimmed_user_turns = 3;
        session.refresh_for_save();
        assert_eq!(session.turns, 5);
    }

    #[test]
    fn tool_call_arguments_are_redacted_on_save_red() {
        let key = format!("ghp_{}", "b".repeat(36));
        let mut session = session();
        let arguments = format!(r#"{{"text":"{key}"}}"#);
        let call = odek_llm::ToolCall {
            id: "c1".into(),
            kind: "function".into(),
            function: odek_llm::FunctionCall { name: "echo".into(), arguments: arguments.clone() },
        };
        session.messages = vec![
            Message::user("go"),
            Message { tool_calls: vec![call], ..Message::assistant("") },
            Message::tool("c1", "echo", "ok"),
        ];
        let copy = session.stored_copy();
        assert_eq!(copy.messages[1].tool_calls[0].function.arguments, r#"{"text":"[REDACTED]"}"#);
        assert_eq!(session.messages[1].tool_calls[0].function.arguments, arguments, "the live session keeps them");
    }

    #[test]
    fn stored_copy_redacts_without_touching_the_live_session() {
        let key = format!("sk-{}", "a".repeat(40));
        let mut session = session();
        session.task = format!("use {key}");
        session.messages = vec![Message { reasoning_content: Some(key.clone()), ..Message::user(key.clone()) }];
        let copy = session.stored_copy();
        assert_eq!(copy.task, "use [REDACTED]");
        assert_eq!(copy.messages[0].content, "[REDACTED]");
        assert_eq!(copy.messages[0].reasoning_content.as_deref(), Some("[REDACTED]"));
        assert_eq!(session.messages[0].content, key);
    }

    #[test]
    fn unknown_fields_are_ignored_and_empty_refs_omitted() {
        let text = r#"{"id":"x","future":{"a":1},"messages":[{"role":"user","content":"hi","extra":true}]}"#;
        let session: Session = serde_json::from_str(text).unwrap();
        assert_eq!(session.messages[0].content, "hi");
        let encoded = serde_json::to_string(&session).unwrap();
        assert!(!encoded.contains("external_refs") && !encoded.contains("base_url"), "{encoded}");
    }
}
