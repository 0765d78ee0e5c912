//! The replay provider: answers chat calls from a script file instead of a model, so runs are
//! reproducible offline (tests, demos, bug reports). It owns the script format
//! (`odek.replay/v1`) and the rule that picks the answer; [`crate::record`] writes scripts.
//! Start at [`ReplayProvider::load`].
//!
//! ```json
//! {"schema": "odek.replay/v1", "model": "optional note", "turns": [
//!    {"content": "text", "reasoning_content": "optional", "reasoning_blocks": [],
//!     "tool_calls": [{"id": "call_1", "name": "shell", "arguments": {"command": "ls"}}],
//!     "usage": {"input_tokens": 10, "output_tokens": 5}, "finish_reason": "optional"}
//! ], "side_calls": [{"content": "a summary", "usage": {"input_tokens": 3, "output_tokens": 2}}]}
//! ```
//!
//! - A main call (`side_call == false`) is answered by `turns[n]`, where `n` is the number of
//!   assistant messages already in the request: the answer depends on the conversation, not on
//!   how many calls this process made, so `odek continue` picks up where the script left off.
//!   Turns are numbered from 0, as their position in the array.
//! - Side calls (summaries, compaction digests) are answered from `side_calls` in order.
//! - `arguments` may be a JSON string (used verbatim) or any other JSON value (serialised
//!   compactly); absent or `null` is the empty string. A missing `id` becomes
//!   `call_<turn>_<index>`. A turn that calls a tool the request does not offer is an error.
//! - `reasoning_blocks` (optional) are the signed or encrypted reasoning of an Anthropic or
//!   Responses run ([`ReasoningBlock`]), put back into the transcript as recorded.
//! - `usage` (its fields, the cache counts among them) and `finish_reason` are optional; the finish reason defaults to
//!   `tool_calls` or `stop`. Unknown fields are rejected, so a typo is an error, not a silence.
//! - Streaming is not simulated: a streaming observer gets the reasoning and the content as one
//!   delta each.
//! - `subagents` holds the scripts of delegated children, each under the exact `goal` the parent's
//!   `delegate_tasks` call gives it (the first entry with that goal answers); an entry has the
//!   same `turns`, `side_calls` and `subagents` as a whole script. [`ReplayScript::subagent`]
//!   picks one.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use odek_contract::regular_file::{Bounded, Follow, read_capped};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::LlmError;
use crate::message::{Message, ReasoningBlock, Role, ToolCall, ToolDefinition, Usage};
use crate::provider::{BoxFuture, ChatRequest, ChatResponse, Provider, StreamObserver};

/// The `schema` value of every script.
const REPLAY_SCHEMA: &str = "odek.replay/v1";

/// Largest script file read: 64 MiB (bytes).
const MAX_SCRIPT_BYTES: u64 = 64 * 1024 * 1024;

/// A whole replay script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayScript {
    schema: String,
    /// A free note (the recording provider writes the model it recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default)]
    pub turns: Vec<ReplayTurn>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub side_calls: Vec<ReplayTurn>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    subagents: Vec<ReplaySubagent>,
}

impl Default for ReplayScript {
    fn default() -> ReplayScript {
        ReplayScript {
            schema: REPLAY_SCHEMA.to_owned(),
            model: None,
            turns: Vec::new(),
            side_calls: Vec::new(),
            subagents: Vec::new(),
        }
    }
}

/// The script of a delegated child: answers the child whose task has exactly this `goal`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplaySubagent {
    goal: String,
    #[serde(default)]
    turns: Vec<ReplayTurn>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    side_calls: Vec<ReplayTurn>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    subagents: Vec<ReplaySubagent>,
}

/// One scripted assistant answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayTurn {
    #[serde(default)]
    pub(crate) content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_content: Option<String>,
    /// \[beyond\] Signed or encrypted reasoning recorded from an Anthropic or Responses run,
    /// played back into the transcript unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) reasoning_blocks: Vec<ReasoningBlock>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ReplayToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) finish_reason: Option<String>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayToolCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    pub(crate) name: String,
    /// A string is used verbatim; any other value is serialised compactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Value>,
}

impl ReplayToolCall {
    /// The arguments string the tool receives.
    pub fn arguments_text(&self) -> String {
        crate::wire::arguments_text(self.arguments.as_ref())
    }
}

impl ReplayScript {
    /// Reads (at most `MAX_SCRIPT_BYTES`) and checks the script at `path`.
    pub fn load(path: &Path) -> Result<ReplayScript, LlmError> {
        let fail = |detail: String| LlmError::Replay { path: path.display().to_string(), detail };
        let bytes = match read_capped(path, Follow::Symlinks, MAX_SCRIPT_BYTES) {
            Ok(Bounded::Contents(bytes)) => bytes,
            Ok(Bounded::TooLarge { .. }) => {
                return Err(fail(format!("script is larger than {MAX_SCRIPT_BYTES} bytes")));
            }
            Err(err) => return Err(fail(format!("cannot read: {err}"))),
        };
        let text = String::from_utf8(bytes).map_err(|_| fail("script is not UTF-8".to_owned()))?;
        ReplayScript::parse(&text).map_err(fail)
    }

    /// The script of the first `subagents` entry whose goal is exactly `goal`.
    pub fn subagent(&self, goal: &str) -> Option<ReplayScript> {
        self.subagents.iter().find(|entry| entry.goal == goal).map(|entry| ReplayScript {
            turns: entry.turns.clone(),
            side_calls: entry.side_calls.clone(),
            subagents: entry.subagents.clone(),
            ..ReplayScript::default()
        })
    }

    /// Parses and checks a script; `Err` is the detail after `replay <path>: `.
    pub fn parse(text: &str) -> Result<ReplayScript, String> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let script: ReplayScript = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
            let at = err.path().to_string();
            if at == "." {
                format!("invalid script: {}", err.inner())
            } else {
                format!("invalid script at {at}: {}", err.inner())
            }
        })?;
        deserializer.end().map_err(|err| format!("invalid script: {err}"))?;
        script.validate()?;
        Ok(script)
    }

    /// The checks serde cannot make: the schema, and a name on every scripted tool call (at every
    /// depth). `Err` is the detail after `replay <path>: `.
    pub fn validate(&self) -> Result<(), String> {
        if self.schema != REPLAY_SCHEMA {
            return Err(format!("unsupported schema \"{}\" (expected \"{REPLAY_SCHEMA}\")", self.schema));
        }
        check_tool_names("", &self.turns, &self.side_calls, &self.subagents)
    }
}

/// Every scripted tool call has a name, in the script and in every sub-agent's script
/// (`subagents[i] ` prefixes the error of an entry).
fn check_tool_names(
    at: &str,
    turns: &[ReplayTurn],
    side_calls: &[ReplayTurn],
    subagents: &[ReplaySubagent],
) -> Result<(), String> {
    for (turns, what) in [(turns, "turn"), (side_calls, "side call")] {
        for (turn_index, turn) in turns.iter().enumerate() {
            if let Some(call_index) = turn.tool_calls.iter().position(|call| call.name.is_empty()) {
                return Err(format!("{at}{what} {turn_index} tool call {call_index} has an empty name"));
            }
        }
    }
    for (index, entry) in subagents.iter().enumerate() {
        check_tool_names(&format!("{at}subagents[{index}] "), &entry.turns, &entry.side_calls, &entry.subagents)?;
    }
    Ok(())
}

/// Answers chat calls from a [`ReplayScript`].
#[derive(Debug)]
pub struct ReplayProvider {
    /// The script's path as errors show it.
    path: String,
    script: ReplayScript,
    side_calls_answered: AtomicUsize,
}

impl ReplayProvider {
    /// Reads (at most `MAX_SCRIPT_BYTES`) and checks the script at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<ReplayProvider, LlmError> {
        let path = path.as_ref();
        Ok(ReplayProvider::from_script(path.display().to_string(), ReplayScript::load(path)?))
    }

    /// A provider over an in-memory script; `path` is only used in errors.
    pub fn from_script(path: impl Into<String>, script: ReplayScript) -> ReplayProvider {
        ReplayProvider { path: path.into(), script, side_calls_answered: AtomicUsize::new(0) }
    }

    pub fn script(&self) -> &ReplayScript {
        &self.script
    }

    fn fail(&self, detail: String) -> LlmError {
        LlmError::Replay { path: self.path.clone(), detail }
    }

    /// The answer to a main call: `turns[n]`, `n` = assistant messages so far.
    fn select_main_turn(&self, request: &ChatRequest<'_>) -> Result<ChatResponse, LlmError> {
        let turn_index = request.messages.iter().filter(|message| message.role == Role::Assistant).count();
        let turn = self.script.turns.get(turn_index).ok_or_else(|| {
            self.fail(format!(
                "script exhausted: the conversation has {turn_index} assistant messages but the script has {} turns",
                self.script.turns.len()
            ))
        })?;
        if let Some(unknown) = turn.tool_calls.iter().find(|call| !offers_tool(request.tools, &call.name)) {
            return Err(self.fail(format!("turn {turn_index} calls unknown tool \"{}\"", unknown.name)));
        }
        Ok(response_for(turn, turn_index))
    }

    /// The answer to a side call: the next unused `side_calls` entry.
    fn select_side_answer(&self) -> Result<ChatResponse, LlmError> {
        let side_index = self.side_calls_answered.fetch_add(1, Ordering::SeqCst);
        let turn = self.script.side_calls.get(side_index).ok_or_else(|| {
            self.fail(format!(
                "no side-call answer left: side call {side_index} but the script has {} side_calls",
                self.script.side_calls.len()
            ))
        })?;
        if !turn.tool_calls.is_empty() {
            return Err(self.fail(format!("side call {side_index} has tool calls; side calls are tool-less")));
        }
        Ok(response_for(turn, side_index))
    }
}

fn offers_tool(tools: &[ToolDefinition], name: &str) -> bool {
    tools.iter().any(|tool| tool.name == name)
}

fn response_for(turn: &ReplayTurn, turn_index: usize) -> ChatResponse {
    let tool_calls: Vec<ToolCall> = turn
        .tool_calls
        .iter()
        .enumerate()
        .map(|(call_index, call)| {
            let id = call
                .id
                .clone()
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{turn_index}_{call_index}"));
            ToolCall::new(id, call.name.clone(), call.arguments_text())
        })
        .collect();
    let finish_reason = turn
        .finish_reason
        .clone()
        .unwrap_or_else(|| if tool_calls.is_empty() { "stop" } else { "tool_calls" }.to_owned());
    ChatResponse {
        message: Message {
            reasoning_content: turn.reasoning_content.clone(),
            reasoning_blocks: turn.reasoning_blocks.clone(),
            tool_calls,
            ..Message::assistant(turn.content.clone())
        },
        usage: turn.usage.unwrap_or_default(),
        finish_reason: Some(finish_reason),
        model: None,
    }
}

impl Provider for ReplayProvider {
    fn id(&self) -> &str {
        "replay"
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
        observer: &'a dyn StreamObserver,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let response =
                if request.side_call { self.select_side_answer()? } else { self.select_main_turn(&request)? };
            if request.stream {
                if let Some(reasoning) = response.message.reasoning_content.as_deref().filter(|text| !text.is_empty()) {
                    observer.on_delta(reasoning, true);
                }
                if !response.message.content.is_empty() {
                    observer.on_delta(&response.message.content, false);
                }
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reports_the_json_path_and_the_schema() {
        let err =
            ReplayScript::parse(r#"{"schema":"odek.replay/v1","turns":[{"tool_calls":[{"id":"x"}]}]}"#).unwrap_err();
        assert!(err.starts_with("invalid script at turns[0].tool_calls[0]: missing field `name`"), "{err}");
        let err = ReplayScript::parse(r#"{"schema":"odek.replay/v9","turns":[]}"#).unwrap_err();
        assert_eq!(err, "unsupported schema \"odek.replay/v9\" (expected \"odek.replay/v1\")");
        let err = ReplayScript::parse(r#"{"schema":"odek.replay/v1","turns":[{"contents":"typo"}]}"#).unwrap_err();
        assert!(err.contains("unknown field `contents`"), "{err}");
    }

    #[test]
    fn subagent_scripts_are_picked_by_exact_goal_and_checked_like_the_script() {
        let script = ReplayScript::parse(
            r#"{"schema":"odek.replay/v1","turns":[],"subagents":[
                {"goal":"a","turns":[{"content":"first a"}]},
                {"goal":"a","turns":[{"content":"second a"}]},
                {"goal":"b","side_calls":[{"content":"s"}],"subagents":[{"goal":"c","turns":[{"content":"c"}]}]}]}"#,
        )
        .unwrap();
        assert_eq!(script.subagent("a").unwrap().turns[0].content, "first a");
        let b = script.subagent("b").unwrap();
        assert_eq!((b.schema.as_str(), b.turns.len(), b.side_calls.len()), (REPLAY_SCHEMA, 0, 1));
        assert_eq!(b.subagent("c").unwrap().turns[0].content, "c");
        assert_eq!(script.subagent("A"), None);
        assert_eq!(script.subagent("c"), None);

        let err = ReplayScript::parse(
            r#"{"schema":"odek.replay/v1","subagents":[{"goal":"x"},{"goal":"y","subagents":[{"goal":"z","side_calls":[{"tool_calls":[{"name":""}]}]}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(err, "subagents[1] subagents[0] side call 0 tool call 0 has an empty name");
        let err = ReplayScript::parse(r#"{"schema":"odek.replay/v1","subagents":[{"turns":[]}]}"#).unwrap_err();
        assert!(err.starts_with("invalid script at subagents[0]: missing field `goal`"), "{err}");
    }

    #[test]
    fn arguments_are_verbatim_strings_or_compact_json() {
        let call = |arguments: Option<Value>| ReplayToolCall { id: None, name: "t".into(), arguments };
        assert_eq!(call(Some(Value::from("{ \"a\": 1 }"))).arguments_text(), "{ \"a\": 1 }");
        assert_eq!(call(Some(serde_json::json!({"a": [1, 2]}))).arguments_text(), r#"{"a":[1,2]}"#);
        assert_eq!(call(None).arguments_text(), "");
    }
}
