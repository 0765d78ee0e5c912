//! The recording provider: wraps any provider and writes every successful answer to a replay
//! script (`odek.replay/v1`, see [`crate::replay`]) that [`crate::ReplayProvider`] can play
//! back. It owns where an answer lands in the script and the atomic, private file write.
//! Start at [`RecordingProvider::new`].
//!
//! - A main answer is stored at `turns[n]`, `n` = the assistant messages in its request — the
//!   index replay will look it up by. A conversation resumed from a session (n > recorded turns)
//!   gets empty placeholder turns for the answers it did not record. If the history shrank
//!   (compaction, survival trim) the answer is appended and a warning logged: replay then
//!   cannot reproduce that run exactly.
//! - Side-call answers are appended to `side_calls`.
//! - Content, reasoning, tool names and tool-call arguments pass through secret redaction
//!   before writing.
//!   Arguments that are JSON and need no redaction are kept exact (as a value when that
//!   serialises back to the same text, else as the original string).
//! - After every answer the whole script is rewritten: a temp file in the same directory, mode
//!   0600, fsync, rename. A failed write fails the call (a recording with holes is worse than
//!   none). Writes are serialised by one mutex; scripts are small and calls sequential.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use odek_contract::redaction::{redact, redact_json};
use odek_contract::regular_file::refuse_non_regular_target;
use serde_json::Value;

use crate::error::LlmError;
use crate::message::Role;
use crate::provider::{BoxFuture, ChatRequest, ChatResponse, Provider, StreamObserver};
use crate::replay::{ReplayScript, ReplayToolCall, ReplayTurn};

/// Records the answers of `inner` to a replay script file.
pub struct RecordingProvider {
    inner: Box<dyn Provider>,
    path: PathBuf,
    script: Mutex<ReplayScript>,
}

impl std::fmt::Debug for RecordingProvider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("RecordingProvider").field("inner", &self.inner.id()).field("path", &self.path).finish()
    }
}

impl RecordingProvider {
    /// Wraps `inner`, writing an empty script to `path` right away so a bad path fails before
    /// the run starts.
    pub fn new(inner: Box<dyn Provider>, path: impl Into<PathBuf>) -> Result<RecordingProvider, LlmError> {
        let provider = RecordingProvider { inner, path: path.into(), script: Mutex::new(ReplayScript::default()) };
        let script = provider.script.lock().unwrap_or_else(PoisonError::into_inner);
        provider.write(&script)?;
        drop(script);
        Ok(provider)
    }

    fn record(&self, request: &ChatRequest<'_>, response: &ChatResponse) -> Result<(), LlmError> {
        let turn = recorded_turn(response);
        let mut script = self.script.lock().unwrap_or_else(PoisonError::into_inner);
        if script.model.is_none() && !request.model.is_empty() {
            script.model = Some(request.model.to_owned());
        }
        if request.side_call {
            script.side_calls.push(turn);
        } else {
            let turn_index = request.messages.iter().filter(|message| message.role == Role::Assistant).count();
            place_main_turn(&mut script.turns, turn_index, turn);
        }
        self.write(&script)
    }

    fn write(&self, script: &ReplayScript) -> Result<(), LlmError> {
        let fail = |detail: String| LlmError::Record { path: self.path.display().to_string(), detail };
        let mut bytes = serde_json::to_vec_pretty(script).map_err(|err| fail(format!("cannot encode: {err}")))?;
        bytes.push(b'\n');
        write_file_atomically(&self.path, &bytes).map_err(|err| fail(format!("cannot write: {err}")))
    }
}

/// Puts a main answer at `turns[turn_index]` (see the module doc for the two odd cases).
fn place_main_turn(turns: &mut Vec<ReplayTurn>, turn_index: usize, turn: ReplayTurn) {
    if turn_index < turns.len() {
        tracing::warn!(
            "record: the conversation shrank to {turn_index} assistant messages after {} recorded turns; \
             appending — replay will not reproduce this run exactly",
            turns.len()
        );
    } else {
        turns.resize_with(turn_index, ReplayTurn::default);
    }
    turns.push(turn);
}

/// An answer as a script turn, redacted.
fn recorded_turn(response: &ChatResponse) -> ReplayTurn {
    let message = &response.message;
    ReplayTurn {
        content: redact(&message.content).into_owned(),
        reasoning_content: message.reasoning_content.as_deref().map(|text| redact(text).into_owned()),
        reasoning_blocks: message.reasoning_blocks.iter().filter(|block| block.survives_redaction()).cloned().collect(),
        tool_calls: message
            .tool_calls
            .iter()
            .map(|call| ReplayToolCall {
                id: Some(call.id.clone()).filter(|id| !id.is_empty()),
                name: redact(&call.function.name).into_owned(),
                arguments: Some(recorded_arguments(&call.function.arguments)),
            })
            .collect(),
        usage: Some(response.usage),
        finish_reason: response.finish_reason.clone(),
    }
}

/// Arguments as stored: exact when nothing needs redaction, redacted (still valid JSON when
/// they were JSON) otherwise.
fn recorded_arguments(arguments: &str) -> Value {
    let Ok(parsed) = serde_json::from_str::<Value>(arguments) else {
        return Value::String(redact(arguments).into_owned());
    };
    let redacted = redact_json(&parsed);
    if redacted != parsed {
        redacted
    } else if parsed.is_string() || serde_json::to_string(&parsed).ok().as_deref() != Some(arguments) {
        // A bare JSON string would read back as "used verbatim"; other values must keep the
        // provider's exact spelling.
        Value::String(arguments.to_owned())
    } else {
        parsed
    }
}

/// Replaces `path` with `bytes`: temp file beside it (mode 0600), fsync, rename, fsync of the
/// directory. Readers see the old or the new file, never a partial one. A device or FIFO at
/// `path` is refused, never renamed over.
fn write_file_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    refuse_non_regular_target(path)?;
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let file_name =
        path.file_name().ok_or_else(|| std::io::Error::other("the path names no file"))?.to_string_lossy().into_owned();
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or_else(|| Path::new("."));
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{file_name}.tmp-{}-{sequence}", std::process::id()));
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temp)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all()).and_then(|()| fs::rename(&temp, path));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written?;
    if let Ok(dir) = fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

impl Provider for RecordingProvider {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let response = self.inner.complete(request, observer).await?;
            self.record(&request, &response)?;
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_stay_exact_unless_redacted() {
        assert_eq!(recorded_arguments(r#"{"command":"ls"}"#), serde_json::json!({"command": "ls"}));
        assert_eq!(recorded_arguments(r#"{ "command": "ls" }"#), Value::from(r#"{ "command": "ls" }"#));
        assert_eq!(recorded_arguments(r#""x""#), Value::from(r#""x""#));
        let secret = format!(r#"{{"token":"ghp_{}"}}"#, "a".repeat(36));
        assert_eq!(recorded_arguments(&secret), serde_json::json!({"token": "[REDACTED]"}));
        assert_eq!(recorded_arguments("not json"), Value::from("not json"));
    }

    #[test]
    fn resumed_conversations_get_placeholders() {
        let mut turns = Vec::new();
        place_main_turn(&mut turns, 2, ReplayTurn { content: "third".into(), ..ReplayTurn::default() });
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[2].content, "third");
        place_main_turn(&mut turns, 1, ReplayTurn::default());
        assert_eq!(turns.len(), 4);
    }
}
