//! The task file a parent hands to `odek subagent --task` (spec `subagents.md` §3–§4): reading
//! it within its cap and the rule for deleting it afterwards. Its share-mode budget block and
//! the clamping of a child's limits to it live beside the budget ([`crate::budget::ShareBudget`],
//! [`crate::budget::clamp_to_share`]). Start at [`read_task_file`].

use std::path::{Path, PathBuf};

use odek_contract::regular_file::{Bounded, Follow, open_regular_read, read_to_limit};
use odek_llm::ReplayScript;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::budget::ShareBudget;

/// Largest task file read (bytes).
const MAX_TASK_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// The protocol a parent asks for by writing `"protocol": 2` (NDJSON progress, framed result).
pub(crate) const STREAM_PROTOCOL: u32 = 2;

/// A task file. Every field but `goal` is optional; unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskFile {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub protocol: u32,
    pub goal: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub context: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub guidance: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trust_level: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub max_risk: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub profile: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<ShareBudget>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parent_trust: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub artifact_root: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub provider: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub model: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub base_url: String,
    /// **[beyond]** `false` when the parent runs with prompt caching off (`--no-prompt-caching`
    /// or `"prompt_caching": false`): the child sends no cache breakpoints either.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_caching: Option<bool>,
    /// **[beyond]** With `provider: "replay"`: the child's part of the parent's replay script.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<TaskReplay>,
    /// **[beyond]** The JSON Schema (2020-12) the child's final answer must match, inline (the
    /// run's `--output-schema`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
    /// **[beyond]** Shell command lines run on the child's final answer (the run's `--check`),
    /// after the operator's configured `checks`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// **[beyond]** A cap on the child's iterations, below the operator's (`subagent.max_iterations`
    /// and `--max-iter` still apply; the lowest wins). `0`: no cap of the task's own.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_iterations: u32,
    /// **[beyond]** A cap on the child's run in seconds, below the operator's
    /// (`subagent.timeout_seconds` and `--timeout` still apply; the lowest wins). `0`: none.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub timeout_seconds: u64,
    /// **[beyond]** Where the child appends its `odek.event/v1` stream (the run's
    /// `--events-jsonl`; a path, never `-`). Empty: no events.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub events_jsonl: String,
}

/// A replay script handed down to a child: its own answers and its children's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskReplay {
    /// Where the script came from, as replay errors show it: the file, then `› subagent "<goal>"`
    /// per delegation.
    pub source: String,
    pub script: ReplayScript,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn is_zero_u64(value: &u64) -> bool {
    *value == 0
}

impl TaskFile {
    /// §4: whether the child runs untrusted — unless the task says `trusted` and its parent is
    /// trusted. \[beyond\] An untrusted child runs confined by the sandbox as a whole (issue 20).
    pub fn is_untrusted(&self) -> bool {
        let parent_untrusted = !self.parent_trust.is_empty() && self.parent_trust != "trusted";
        self.trust_level != "trusted" || parent_untrusted
    }

    /// Whether the child speaks protocol 2 (with `--stream`): a task id and `protocol` ≥ 2.
    pub fn wants_protocol_2(&self) -> bool {
        !self.task_id.is_empty() && self.protocol >= STREAM_PROTOCOL
    }
}

/// Why a task file could not be used. Texts are the spec's (after `odek: `).
#[derive(Debug, Error)]
pub enum TaskFileError {
    #[error("task file too large ({0} bytes, max {MAX_TASK_FILE_BYTES})")]
    TooLarge(u64),
    #[error("stat task file: {0}")]
    Stat(std::io::Error),
    #[error("read task file: {0}")]
    Read(std::io::Error),
    #[error("parse task file: {0}")]
    Parse(serde_json::Error),
}

/// Reads and parses `path`, never more than `MAX_TASK_FILE_BYTES` (a file that grows after
/// the size check is still cut off at the cap and refused). The open never blocks and anything
/// but a regular file (a FIFO, a device) is refused as `stat task file: not a regular file`.
pub fn read_task_file(path: &Path) -> Result<TaskFile, TaskFileError> {
    let file = open_regular_read(path, Follow::Symlinks).map_err(TaskFileError::Stat)?;
    let bytes = match read_to_limit(&file, MAX_TASK_FILE_BYTES).map_err(TaskFileError::Read)? {
        Bounded::Contents(bytes) => bytes,
        Bounded::TooLarge { size } => return Err(TaskFileError::TooLarge(size)),
    };
    serde_json::from_slice(&bytes).map_err(TaskFileError::Parse)
}

/// §4: after reading, the child deletes the task file only when it is one a parent wrote — a
/// file directly inside the system temp directory named `odek-task-*.json`. A user's own path
/// is never deleted.
pub fn is_parent_task_file(path: &Path, temp_dir: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
        return false;
    };
    if !(name.starts_with("odek-task-") && name.ends_with(".json")) {
        return false;
    }
    let absolute = |p: &Path| -> Option<PathBuf> {
        let parent = p.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::canonicalize(parent).ok()
    };
    match (absolute(path), std::fs::canonicalize(temp_dir).ok()) {
        (Some(parent), Some(temp)) => parent == temp,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replay script's float arguments reach the child as the script wrote them (serde_json
    /// parses with `float_roundtrip`; without it this value came back one ULP off).
    #[test]
    fn replay_arguments_survive_the_hand_off_exactly() {
        let text = r#"{"goal":"g","replay":{"source":"s","script":{"schema":"odek.replay/v1","turns":[{"tool_calls":[{"name":"n","arguments":1.0715660391465826e-75}]}]}}}"#;
        let task: TaskFile = serde_json::from_str(text).unwrap();
        let back: TaskFile = serde_json::from_str(&serde_json::to_string(&task).unwrap()).unwrap();
        assert_eq!(back, task);
        let arguments = back.replay.unwrap().script.turns[0].tool_calls[0].arguments_text();
        assert_eq!(arguments, "1.0715660391465826e-75");
    }

    #[test]
    fn unknown_fields_are_ignored_and_goal_is_enough() {
        let task: TaskFile = serde_json::from_str(r#"{"goal":"g","surprise":1}"#).unwrap();
        assert_eq!(task.goal, "g");
        assert!(!task.wants_protocol_2());
        let streamed: TaskFile = serde_json::from_str(r#"{"goal":"g","task_id":"task-1","protocol":2}"#).unwrap();
        assert!(streamed.wants_protocol_2());
    }

    #[test]
    fn output_schema_and_checks_are_read() {
        let task: TaskFile =
            serde_json::from_str(r#"{"goal":"g","output_schema":{"type":"object"},"checks":["make test"]}"#).unwrap();
        assert_eq!(task.output_schema, Some(serde_json::json!({"type": "object"})));
        assert_eq!(task.checks, ["make test"]);
        let plain = serde_json::to_string(&TaskFile { goal: "g".into(), ..TaskFile::default() }).unwrap();
        assert_eq!(plain, r#"{"goal":"g"}"#);
    }

    #[test]
    fn only_parent_task_files_are_deleted() {
        let temp = tempfile::tempdir().unwrap();
        let ours = temp.path().join("odek-task-abc.json");
        std::fs::write(&ours, "{}").unwrap();
        assert!(is_parent_task_file(&ours, temp.path()));
        let mine = temp.path().join("my-task.json");
        std::fs::write(&mine, "{}").unwrap();
        assert!(!is_parent_task_file(&mine, temp.path()));
        let elsewhere = tempfile::tempdir().unwrap();
        let other = elsewhere.path().join("odek-task-abc.json");
        std::fs::write(&other, "{}").unwrap();
        assert!(!is_parent_task_file(&other, temp.path()));
    }

    #[test]
    fn oversized_task_file_is_refused_with_its_size() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("big.json");
        std::fs::write(&path, vec![b' '; usize::try_from(MAX_TASK_FILE_BYTES).unwrap() + 1]).unwrap();
        assert_eq!(
            read_task_file(&path).unwrap_err().to_string(),
            "task file too large (10485761 bytes, max 10485760)"
        );
    }
}
