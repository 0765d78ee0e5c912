//! What a face renders of a hosted session: the typed [`Update`]s of a running turn (streamed
//! text, tool calls with their kind, locations, diffs and output, the plan, usage) and of a
//! session's history replayed ([`replay`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use odek_agent::plan::{PlanBoard, PlanState};
use odek_contract::redaction::{redact, redact_json};
use odek_llm::{Message, Role, Usage};

/// One thing a face shows of a session, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The person's message (only in a replayed history).
    UserText(String),
    /// Streamed answer text, or a whole answer of a replayed history.
    Text(String),
    /// Streamed reasoning text.
    Reasoning(String),
    /// A tool call the model asked for, before it runs.
    ToolStarted(ToolStart),
    /// A tool call ended.
    ToolFinished(ToolEnd),
    /// The plan after a change: every step in order.
    Plan(Vec<PlanStep>),
    /// The session's usage after a model call.
    Usage(UsageState),
    /// A warning for the person (without the `odek: warning: ` prefix).
    Warning(String),
    /// A line for the person that is not a warning.
    Notice(String),
    /// One `odek.event/v1` line of the running turn (without its newline), for a face whose
    /// [`super::HostFace::wants_events`] says so.
    Event(String),
}

/// A tool call as it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStart {
    /// The call's id, unique in the session.
    pub call_id: String,
    /// The tool's name as the model called it.
    pub tool: String,
    /// What kind of work it does.
    pub kind: ToolKind,
    /// One line saying what it does (`Run cargo test`, `Edit src/lib.rs`).
    pub title: String,
    /// The call's arguments as the model gave them (JSON; `Null` when they are not JSON).
    pub arguments: serde_json::Value,
    /// The files it reads or writes, absolute.
    pub locations: Vec<PathBuf>,
}

/// A tool call as it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEnd {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// False when the call failed or was refused.
    pub ok: bool,
    /// What the model sees of the result (the model view, never a server's raw bytes).
    pub text: String,
    /// The file's text before and after, for a call that changed one file.
    pub diff: Option<FileDiff>,
    /// How long it ran.
    pub duration: Duration,
    /// The verified artifact refs its result carries (an MCP tool's, `delegate_tasks`'
    /// children's). A face may list them and serve them by id; a path never leaves the host
    /// towards a model or into an address.
    pub artifacts: Vec<odek_contract::artifact_ref::ArtifactRef>,
}

/// A file's text before and after an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The file, absolute.
    pub path: PathBuf,
    /// `None` for a file the edit created.
    pub old: Option<String>,
    /// The text after the edit.
    pub new: String,
}

/// The kind of work a tool call does, as editors group them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes a file.
    Edit,
    /// Removes a file.
    Delete,
    /// Moves or renames.
    Move,
    /// Searches.
    Search,
    /// Runs a command.
    Execute,
    /// Thinks or plans.
    Think,
    /// Fetches from elsewhere.
    Fetch,
    /// Anything else (MCP tools, sub-agents).
    Other,
}

impl ToolKind {
    /// The kind of the built-in tool `tool`; [`ToolKind::Other`] for any other tool.
    pub fn of(tool: &str) -> ToolKind {
        match tool {
            "read_file" | "artifact_read" => ToolKind::Read,
            "write_file" | "patch" => ToolKind::Edit,
            "search_files" => ToolKind::Search,
            "shell" => ToolKind::Execute,
            "plan" => ToolKind::Think,
            "read_mcp_resource" | "list_mcp_resources" => ToolKind::Fetch,
            _ => ToolKind::Other,
        }
    }
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanStep {
    /// The step's title.
    pub title: String,
    /// `pending`, `in_progress`, `done` or `blocked`.
    pub status: &'static str,
}

/// A session's usage and what its budgets allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageState {
    /// Tokens of the running turn so far.
    pub turn: Usage,
}

/// The plan's steps now (empty before the first `create`).
pub(crate) fn plan_steps(board: &PlanBoard) -> Vec<PlanStep> {
    match board.state() {
        PlanState::Active { steps, .. } => {
            steps.into_iter().map(|step| PlanStep { title: step.title, status: step.status.as_str() }).collect()
        }
        PlanState::Complete { total, .. } => {
            (1..=total).map(|n| PlanStep { title: format!("step {n}"), status: "done" }).collect()
        }
        PlanState::Empty => Vec::new(),
    }
}

/// The start of a call: its kind, title and locations from its arguments.
pub(crate) fn tool_start(call_id: &str, tool: &str, arguments: &str, cwd: &Path) -> ToolStart {
    let arguments: serde_json::Value = serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
    let text = |key: &str| arguments.get(key).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
    let kind = ToolKind::of(tool);
    let path = text("path");
    let locations = match kind {
        ToolKind::Read | ToolKind::Edit if !path.is_empty() => vec![absolute(cwd, &path)],
        _ => Vec::new(),
    };
    let title = match tool {
        "shell" => format!("Run {}", one_line(&text("command"))),
        "read_file" => format!("Read {path}"),
        "write_file" => format!("Write {path}"),
        "patch" => format!("Edit {path}"),
        "search_files" => format!("Search {}", one_line(&text("pattern"))),
        "plan" => "Update the plan".to_owned(),
        "delegate_tasks" => "Delegate to sub-agents".to_owned(),
        _ => tool.to_owned(),
    };
    // The command or path a title quotes may hold a secret, like the arguments themselves.
    ToolStart {
        call_id: call_id.to_owned(),
        tool: tool.to_owned(),
        kind,
        title: redact(&title).into_owned(),
        arguments: redact_json(&arguments),
        locations,
    }
}

/// `path` against the session's working directory.
fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() { path.to_path_buf() } else { cwd.join(path) }
}

/// The first line of `text`, at most 120 characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(120) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

/// A session's history as the updates a face shows when it reopens it: the person's messages,
/// the answers, and each tool call with its result.
pub fn replay(messages: &[Message], cwd: &Path) -> Vec<Update> {
    let mut updates = Vec::new();
    let mut started: Vec<ToolStart> = Vec::new();
    for message in messages {
        match message.role {
            Role::System => {}
            Role::User => updates.push(Update::UserText(redact(&message.content).into_owned())),
            Role::Assistant => {
                if !message.content.is_empty() {
                    updates.push(Update::Text(redact(&message.content).into_owned()));
                }
                for call in &message.tool_calls {
                    let start = tool_start(&call.id, &call.function.name, &call.function.arguments, cwd);
                    started.push(start.clone());
                    updates.push(Update::ToolStarted(start));
                }
            }
            Role::Tool => {
                let call_id = message.tool_call_id.clone().unwrap_or_default();
                let tool = started
                    .iter()
                    .find(|start| start.call_id == call_id)
                    .map(|start| start.tool.clone())
                    .unwrap_or_default();
                updates.push(Update::ToolFinished(ToolEnd {
                    ok: !message.content.starts_with("error: "),
                    call_id,
                    tool,
                    text: redact(&message.content).into_owned(),
                    diff: None,
                    duration: Duration::ZERO,
                    artifacts: Vec::new(),
                }));
            }
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_the_builtin_tools() {
        assert_eq!(ToolKind::of("shell"), ToolKind::Execute);
        assert_eq!(ToolKind::of("patch"), ToolKind::Edit);
        assert_eq!(ToolKind::of("search_files"), ToolKind::Search);
        assert_eq!(ToolKind::of("docs__lookup"), ToolKind::Other);
    }

    #[test]
    fn a_start_names_its_file_and_command() {
        let cwd = Path::new("/work/project");
        let edit = tool_start("c1", "patch", r#"{"path":"src/lib.rs","old_string":"a","new_string":"b"}"#, cwd);
        assert_eq!(edit.title, "Edit src/lib.rs");
        assert_eq!(edit.locations, vec![PathBuf::from("/work/project/src/lib.rs")]);
        let run = tool_start("c2", "shell", r#"{"command":"cargo test\necho done"}"#, cwd);
        assert_eq!((run.kind, run.title.as_str()), (ToolKind::Execute, "Run cargo test"));
        let junk = tool_start("c3", "read_file", "not json", cwd);
        assert_eq!((junk.arguments, junk.locations.len()), (serde_json::Value::Null, 0));
    }

    #[test]
    fn a_history_replays_as_updates() {
        let mut assistant = Message::assistant("");
        assistant.tool_calls = vec![odek_llm::ToolCall::new("c1", "shell", r#"{"command":"ls"}"#)];
        let messages = vec![
            Message::system("sys"),
            Message::user("list"),
            assistant,
            Message::tool("c1", "shell", "a\nb"),
            Message::assistant("two files"),
        ];
        let updates = replay(&messages, Path::new("/p"));
        assert_eq!(updates.len(), 4);
        assert_eq!(updates[0], Update::UserText("list".into()));
        assert!(matches!(&updates[1], Update::ToolStarted(start) if start.title == "Run ls"));
        assert!(matches!(&updates[2], Update::ToolFinished(end) if end.ok && end.tool == "shell"));
        assert_eq!(updates[3], Update::Text("two files".into()));
    }
}
