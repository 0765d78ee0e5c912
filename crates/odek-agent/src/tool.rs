//! The tool seam: what a built-in or MCP tool gives the loop (its definition, its risk for the
//! approval gate, its call) and what the loop gives a tool (the run's context).

use std::path::PathBuf;
use std::sync::Arc;

use odek_llm::{BoxFuture, ToolDefinition};
use tokio_util::sync::CancellationToken;

use odek_danger::{DangerClass, DangerPolicy};

/// What a successful call returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The output text (the loop redacts, compresses and frames it).
    pub output: String,
    /// Source of the untrusted wrapper (spec `loop-and-sessions.md` §3), e.g. `$ ls` or an
    /// absolute path; `None` when the output is runtime text that is not wrapped.
    pub untrusted_source: Option<String>,
    /// `Some(observed_chars)` when `max_result_chars` cut the result (MCP tools).
    pub(crate) truncated_observed_chars: Option<u64>,
    /// The operations refused: the policy's refusal of the call (the output is then the denial
    /// text), or each refusal the sandbox saw while it ran (bounded by the tool). The loop
    /// reports each as a fact (`operation_denied`).
    pub(crate) denials: Vec<Denial>,
    /// \[beyond\] The file the call changed, its text before and after, for a face to show
    /// as a diff (never part of what the model reads).
    pub(crate) edit: Option<FileEdit>,
    /// \[beyond\] The verified artifact refs the result carries (an MCP tool's, the children's
    /// of `delegate_tasks`), for a face to list and serve by id; the model reads only their
    /// metadata lines, never a path.
    pub(crate) artifacts: Vec<odek_contract::artifact_ref::ArtifactRef>,
}

/// \[beyond\] One file's text before and after an edit (`write_file`, `patch`): what a face
/// shows as a diff. Kept only for text files of at most [`FileEdit::MAX_BYTES`] on each side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    /// The file, absolute.
    pub path: std::path::PathBuf,
    /// `None` for a file the edit created.
    pub old: Option<String>,
    /// The text after the edit.
    pub new: String,
}

impl FileEdit {
    /// Largest text (bytes) an edit keeps on either side for its diff.
    pub const MAX_BYTES: usize = 256 * 1024;

    /// The edit of `path` from `old` to `new`, when both fit [`FileEdit::MAX_BYTES`].
    pub(crate) fn of(path: &std::path::Path, old: Option<&str>, new: &str) -> Option<FileEdit> {
        let fits = |text: &str| text.len() <= FileEdit::MAX_BYTES;
        (old.is_none_or(fits) && fits(new)).then(|| FileEdit {
            path: path.to_path_buf(),
            old: old.map(str::to_owned),
            new: new.to_owned(),
        })
    }
}

/// An operation the run refused: by the danger policy, the non-interactive policy, a risk cap
/// (an untrusted child's lockdown) or an approval answered no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The operation's danger class.
    pub class: DangerClass,
    /// Why it was refused (the classifier's reason, then the policy's).
    pub reason: String,
    /// \[beyond\] How many refused operations it stands for: one, or — for the sandbox's summary of
    /// the refusals not reported one by one (`sandbox: 40 more refused operation(s)`) — that
    /// many. A run's denial count adds these up.
    pub count: usize,
}

impl Denial {
    /// One refused operation.
    pub fn new(class: DangerClass, reason: impl Into<String>) -> Denial {
        Denial { class, reason: reason.into(), count: 1 }
    }
}

impl ToolOutcome {
    /// Runtime text, not wrapped.
    pub fn text(output: impl Into<String>) -> ToolOutcome {
        ToolOutcome { output: output.into(), ..ToolOutcome::default() }
    }

    /// Externally sourced text, wrapped with `source`.
    pub fn untrusted(output: impl Into<String>, source: impl Into<String>) -> ToolOutcome {
        ToolOutcome { output: output.into(), untrusted_source: Some(source.into()), ..ToolOutcome::default() }
    }

    /// `Some(observed_chars)` when `max_result_chars` cut the output.
    pub fn observed_chars(&self) -> Option<u64> {
        self.truncated_observed_chars
    }

    /// \[beyond\] This outcome with the file edit it made ([`FileEdit`]).
    pub(crate) fn with_edit(mut self, edit: Option<FileEdit>) -> ToolOutcome {
        self.edit = edit;
        self
    }

    /// \[beyond\] This outcome with the verified artifact refs its result carries.
    pub(crate) fn with_artifacts(mut self, artifacts: Vec<odek_contract::artifact_ref::ArtifactRef>) -> ToolOutcome {
        self.artifacts = artifacts;
        self
    }

    /// The first refusal, when the policy refused the operation (the output is then the denial
    /// text) or the sandbox refused something while it ran.
    pub fn denial(&self) -> Option<&Denial> {
        self.denials.first()
    }

    /// A refused operation: the denial text the model reads, and the denial itself.
    pub fn denied(class: DangerClass, reason: impl Into<String>) -> ToolOutcome {
        let reason = reason.into();
        ToolOutcome {
            output: odek_danger::denial_output(&reason, class),
            denials: vec![Denial::new(class, reason)],
            ..ToolOutcome::default()
        }
    }
}

/// A failed call; the loop renders it as `error: <message>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// What the model reads after `error: `.
    pub message: String,
    /// \[beyond\] The operations the sandbox refused while the call ran (each reported as
    /// `operation_denied`, like a policy denial).
    pub(crate) denials: Vec<Denial>,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError { message: message.into(), denials: Vec::new() }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The risk of one call, for the approval gate and `args_summary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Risk {
    pub class: DangerClass,
    /// The full command or resource shown on the approval card.
    pub resource: String,
}

/// What the run gives every tool call.
#[derive(Clone)]
pub struct ToolContext {
    /// The working directory relative paths resolve against.
    pub(crate) cwd: PathBuf,
    /// `~/.odek` (writes under it are `system_write`).
    pub odek_home: PathBuf,
    /// The run's cancellation.
    pub cancel: CancellationToken,
    /// The danger policy (classes, allow/deny lists, `non_interactive`, `max_risk`).
    pub policy: Arc<DangerPolicy>,
    /// A terminal is attached (the batch gate prompted for `prompt`-class calls).
    pub interactive: bool,
    /// The batch gate approved this call (its `prompt` action is satisfied).
    pub approved: bool,
    /// Set by the loop once any result of this run was wrapped as untrusted; shared by every
    /// clone. `delegate_tasks` reads it to force its children to untrusted (`subagents.md` §2).
    pub(crate) untrusted_ingested: Arc<std::sync::atomic::AtomicBool>,
    /// The run's liveness tracker (off unless heartbeats are on); shared by every clone.
    pub liveness: crate::liveness::Liveness,
    /// \[beyond\] The kernel sandbox every command of the run is confined in (`None`: the
    /// sandbox is off, or this kernel cannot enforce it).
    pub sandbox: Option<Arc<odek_sandbox::Sandbox>>,
    /// \[beyond\] The confinement root of the file tools (canonical; `odek mcp` sets its start
    /// directory): every path they read or write must stay inside it
    /// ([`confine_to_root`](crate::tools::confine_to_root)), and is opened from its handle
    /// ([`RootDir`](crate::tools::RootDir)). `None` (the default): no root.
    pub(crate) path_root: Option<Arc<crate::tools::RootDir>>,
    /// \[beyond\] A face shows edits: `write_file` and `patch` keep the file's text before and
    /// after ([`FileEdit`]). Off by default (nothing extra is read).
    pub record_edits: bool,
    /// \[beyond\] Every call of a tool without a danger class ([`Tool::risk`] `None`: MCP tools,
    /// `delegate_tasks`) is asked about at the batch gate like a `prompt`-class call, except the
    /// tools that only read ([`READ_ONLY_TOOLS`]). Off by default.
    pub ask_unclassified: bool,
    /// \[beyond\] An editor that holds the files (an ACP client's `fs` methods): the file tools
    /// read and write the files inside its root through it, after every check of the path and
    /// the policy. `None` (the default): the disk.
    pub editor: Option<Arc<dyn EditorFiles>>,
}

/// \[beyond\] The built-in tools that only read: never asked about, and the tools a read-only
/// session keeps (with `shell`, whose commands the policy then limits to `safe`).
pub const READ_ONLY_TOOLS: &[&str] = &[
    "read_file",
    "search_files",
    "plan",
    "artifact_read",
    crate::mcp_resources::LIST_MCP_RESOURCES,
    crate::mcp_resources::READ_MCP_RESOURCE,
];

/// \[beyond\] Files as an editor holds them, unsaved changes included: what `read_file`,
/// `write_file` and `patch` go through for a path inside [`EditorFiles::root`].
pub trait EditorFiles: Send + Sync {
    /// The directory whose files go through the editor (canonical); others stay on the disk.
    fn root(&self) -> &std::path::Path;
    /// Whether the editor reads files for the tools.
    fn reads(&self) -> bool;
    /// Whether the editor writes files for the tools.
    fn writes(&self) -> bool;
    /// The text of `path` as the editor has it.
    fn read_text<'a>(&'a self, path: &'a std::path::Path) -> BoxFuture<'a, Result<String, String>>;
    /// Writes `text` to `path` through the editor.
    fn write_text<'a>(&'a self, path: &'a std::path::Path, text: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// How a file tool reaches `path`: through the editor when it holds that file and does that
/// kind of access, else `None` (the disk, whose checks refuse what is not a regular file). Only
/// a path whose directory resolves inside the editor's root, with no symlink in the way and
/// naming a regular file or nothing yet, goes to the editor.
pub(crate) fn editor_for<'c>(
    ctx: &'c ToolContext,
    path: &std::path::Path,
    write: bool,
) -> Option<&'c Arc<dyn EditorFiles>> {
    let editor = ctx.editor.as_ref()?;
    if !(if write { editor.writes() } else { editor.reads() }) || !path.starts_with(editor.root()) {
        return None;
    }
    let parent = path.parent()?;
    let resolved = parent.canonicalize().ok()?;
    if resolved != parent || !resolved.starts_with(editor.root()) {
        return None;
    }
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if !metadata.file_type().is_file() => None,
        Ok(_) => Some(editor),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Some(editor),
        Err(_) => None,
    }
}

impl ToolContext {
    /// A context for a run without a terminal: a fresh cancellation, nothing approved.
    pub fn new(cwd: PathBuf, odek_home: PathBuf, policy: DangerPolicy) -> ToolContext {
        ToolContext {
            cwd,
            odek_home,
            cancel: CancellationToken::new(),
            policy: Arc::new(policy),
            interactive: false,
            approved: false,
            untrusted_ingested: Arc::default(),
            liveness: crate::liveness::Liveness::off(),
            sandbox: None,
            path_root: None,
            record_edits: false,
            ask_unclassified: false,
            editor: None,
        }
    }

    /// Confines the file tools to `root`, which also becomes the working directory: every path
    /// a file tool reads or writes — relative, absolute, through `..` or a symlink — must stay
    /// inside it, or the call is refused ([`confine_to_root`](crate::tools::confine_to_root)),
    /// and is opened from the root's directory handle without following a symlink, so a path
    /// changed after its check cannot lead out. `root` is made canonical and opened here; a
    /// root that does not exist is an error.
    pub fn confined_to(mut self, root: &std::path::Path) -> std::io::Result<ToolContext> {
        let root = crate::tools::RootDir::open(root)?;
        self.cwd = root.path().to_path_buf();
        self.path_root = Some(Arc::new(root));
        Ok(self)
    }

    /// The working directory relative paths resolve against.
    pub fn cwd(&self) -> &std::path::Path {
        &self.cwd
    }

    /// The confinement root of the file tools, when there is one (see [`ToolContext::confined_to`]).
    pub fn path_root(&self) -> Option<&std::path::Path> {
        self.path_root.as_deref().map(crate::tools::RootDir::path)
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cwd", &self.cwd)
            .field("interactive", &self.interactive)
            .field("approved", &self.approved)
            .field("sandboxed", &self.sandbox.is_some())
            .field("path_root", &self.path_root)
            .finish_non_exhaustive()
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// Name, description and JSON schema as the model sees them.
    fn definition(&self) -> ToolDefinition;

    /// The call's danger class and resource, when the tool is classified (shell, file writes).
    /// `None` = not risky (never shown on an approval card).
    fn risk(&self, _arguments: &str, _ctx: &ToolContext) -> Option<Risk> {
        None
    }

    /// Runs the call. `arguments` is the raw JSON string from the model (may be empty).
    fn call<'a>(&'a self, arguments: &'a str, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutcome, ToolError>>;
}
