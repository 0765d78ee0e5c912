//! MCP approvals (spec `config.md` §13): server approval for project-defined servers before
//! anything is spawned, and per-tool approval for every server's tools after discovery.
//!
//! Start at [`McpApprovals`]: [`McpApprovals::approve_project_servers`] runs §13.1 for all
//! project servers at once ([`McpApprovals::approve_startup_servers`] lets a \[beyond\]
//! `required: false` server be left out instead), and [`McpApprovals::tool_approver`] builds the
//! [`CliToolApprover`] the MCP client asks once per server, on one card listing that server's
//! pending tools (§13.2, \[beyond\] the card). A requirement is satisfied by
//! `ODEK_APPROVE_MCP=1` (exactly `1`), a persisted key (§13.3, see [`server_approval_key`] and
//! [`tool_approval_key`]), the `auto_approve` marker (§13.4, decided at load time as
//! [`McpServerConfig::auto_approve_effective`]), or a `y`/`yes` answer at a terminal. Accepted
//! answers are persisted; `ODEK_APPROVE_MCP` and `auto_approve` never are.
//!
//! \[beyond\] Issue 32: when the sandbox is in force, the card of a project server that would run
//! confined offers a third answer, `u`: approve it to run unconfined. That choice is persisted as
//! a key of its own ([`unconfined_server_approval_key`]), so a changed entry asks again; it is
//! honoured from the approvals file (with `ODEK_APPROVE_MCP=1` too), and otherwise only the
//! operator's global file can make a project server unconfined (`odek::config`), never the
//! project. The names approved that way are returned ([`ServerApprovals::unconfined`]).
//!
//! This module does not validate servers (names, limits): the caller does that first, as
//! `mcp-client.md` §1 orders it. Prompts and warnings go through a [`Console`].

mod console;
mod key;
mod store;
mod tool;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use odek_contract::quoting::quote;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
use thiserror::Error;

use crate::config::{ConfigSources, McpServerConfig, ServerOrigin};

pub use self::console::{Console, MAX_PROMPT_DESCRIPTION_BYTES, cut_for_prompt, is_unconfined, is_yes};
pub use self::key::{SchemaDigest, server_approval_key, tool_approval_key, unconfined_server_approval_key};
pub use self::store::{ApprovalStore, MAX_APPROVALS_BYTES};
pub use self::tool::{
    CliToolApprover, ToolDecision, decision_for_key, tool_approval_card, tool_approval_prompt, tool_decision_prompt,
};

use self::key::ServerLaunch;

/// File name of the persisted project-server approvals under `~/.odek`.
pub const SERVER_APPROVALS_FILE: &str = "mcp_approvals.json";
/// File name of the persisted per-tool approvals under `~/.odek`.
pub const TOOL_APPROVALS_FILE: &str = "mcp_tool_approvals.json";

/// The one error type of approvals; each text is the spec's exact wording.
#[derive(Debug, Error)]
pub enum ApprovalError {
    /// An interactive answer other than `y`/`yes` (or end of input).
    #[error("mcp approval: server {} was not approved", quote(name))]
    ServerNotApproved {
        /// The server's name.
        name: String,
    },
    /// No terminal to ask and no other approval. `target` is the command (stdio) or the url
    /// (HTTP); `args` the arguments joined by spaces, `None` for HTTP (\[beyond\] a url is shown
    /// alone, without the spec's `""` of a command without arguments).
    #[error(
        "project-level MCP server {} ({target}{}) requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all project MCP servers, or run interactively",
        quote(name),
        args.as_deref().map(|args| format!(" {}", quote(args))).unwrap_or_default()
    )]
    ServerApprovalRequired {
        /// The server's name.
        name: String,
        /// The command (stdio) or the url (HTTP).
        target: String,
        /// The arguments joined by spaces; `None` for HTTP.
        args: Option<String>,
    },
    /// The text the tool approver returns as `ToolApproval::Required`.
    #[error(
        "MCP tool {} from server {} requires explicit approval\nset ODEK_APPROVE_MCP=1 to approve all tools from all project MCP servers, or run interactively",
        quote(tool),
        quote(server)
    )]
    ToolApprovalRequired {
        /// The server's name.
        server: String,
        /// The tool's raw name on that server.
        tool: String,
    },
    /// The approvals file is not the JSON odek writes.
    #[error("mcp approval: load approvals: parse {path}: {source}")]
    LoadParse {
        /// The approvals file.
        path: String,
        /// serde's message.
        source: serde_json::Error,
    },
    /// The approvals file could not be read (too large, not a regular file, an I/O error).
    #[error("mcp approval: load approvals: read {path}: {detail}")]
    LoadRead {
        /// The approvals file.
        path: String,
        /// What went wrong.
        detail: String,
    },
    /// An approval answered "always" could not be written down.
    #[error("mcp approval: save approvals: {path}: {detail}")]
    Save {
        /// The approvals file.
        path: String,
        /// What went wrong.
        detail: String,
    },
}

/// A \[beyond\] `required: false` project server that was not approved; it is left out of the run.
#[derive(Debug)]
pub struct SkippedServer {
    /// The server's name.
    pub name: String,
    /// Why it was not approved (reported as a warning).
    pub error: ApprovalError,
    /// The `error_class` of its `mcp_server_failed`: `approval_required` when nobody could be
    /// asked; `None` for an operator's "no", which is a decision rather than a failure (no event).
    pub failure_class: Option<&'static str>,
}

/// What §13.1 decided for a run's servers.
#[derive(Debug, Default)]
pub struct ServerApprovals {
    /// The \[beyond\] `required: false` servers that were not approved; they are left out.
    pub skipped: Vec<SkippedServer>,
    /// \[beyond\] The servers approved to run unconfined (answered `u`, now or before).
    pub unconfined: Vec<String>,
}

/// `ODEK_APPROVE_MCP` approves everything only when it is exactly `1` (no trimming, no `true`).
pub fn odek_approve_mcp_set(env: &BTreeMap<String, String>) -> bool {
    env.get("ODEK_APPROVE_MCP").is_some_and(|value| value == "1")
}

/// Approval policy for one invocation.
#[derive(Clone)]
pub struct McpApprovals {
    odek_dir: PathBuf,
    cwd: PathBuf,
    approve_all: bool,
    /// \[beyond\] The sandbox confines the servers that ask for it: a confined project server's
    /// card offers to run it unconfined.
    sandbox_in_force: bool,
    /// odek's environment: the registries a package runner's card names.
    env: BTreeMap<String, String>,
    console: Arc<dyn Console>,
}

impl std::fmt::Debug for McpApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpApprovals")
            .field("odek_dir", &self.odek_dir)
            .field("cwd", &self.cwd)
            .field("approve_all", &self.approve_all)
            .finish_non_exhaustive()
    }
}

impl McpApprovals {
    /// `env` is the effective environment (`LoadedConfig::env`, which includes `secrets.env`);
    /// `sources` gives `~/.odek` and the working directory hashed into every key.
    pub fn new(sources: &ConfigSources, env: &BTreeMap<String, String>, console: Arc<dyn Console>) -> Self {
        McpApprovals {
            odek_dir: sources.odek_dir(),
            cwd: sources.cwd.clone(),
            approve_all: odek_approve_mcp_set(env),
            sandbox_in_force: false,
            env: env.clone(),
            console,
        }
    }

    /// \[beyond\] These approvals with the sandbox in force (or not): a project server that
    /// would run confined may then be approved to run unconfined.
    pub fn with_sandbox_in_force(mut self, in_force: bool) -> Self {
        self.sandbox_in_force = in_force;
        self
    }

    /// Whether `ODEK_APPROVE_MCP=1` approves every server and tool of this invocation.
    pub fn approves_all(&self) -> bool {
        self.approve_all
    }

    /// `~/.odek/mcp_approvals.json`.
    pub fn server_approvals_path(&self) -> PathBuf {
        self.odek_dir.join(SERVER_APPROVALS_FILE)
    }

    /// `~/.odek/mcp_tool_approvals.json`.
    pub fn tool_approvals_path(&self) -> PathBuf {
        self.odek_dir.join(TOOL_APPROVALS_FILE)
    }

    /// §13.1 for every enabled project-defined server, in the given order (ascending name, as
    /// loaded), before anything is spawned. The first refusal is fatal. The approvals file is
    /// only read when some server still needs approval (\[beyond\] or, with `ODEK_APPROVE_MCP=1`,
    /// may have been approved to run unconfined). Returns the servers approved to run unconfined.
    pub fn approve_project_servers(&self, servers: &[McpServerConfig]) -> Result<Vec<String>, ApprovalError> {
        self.approve_servers(servers, false).map(|approvals| approvals.unconfined)
    }

    /// §13.1 as a run applies it: like [`McpApprovals::approve_project_servers`], except that a
    /// \[beyond\] `required: false` server that is not approved (declined at the prompt, or no
    /// terminal to ask) is returned, to be left out, instead of failing the run. The approvals
    /// file being unreadable stays fatal.
    pub fn approve_startup_servers(&self, servers: &[McpServerConfig]) -> Result<ServerApprovals, ApprovalError> {
        self.approve_servers(servers, true)
    }

    fn approve_servers(
        &self,
        servers: &[McpServerConfig],
        skip_optional: bool,
    ) -> Result<ServerApprovals, ApprovalError> {
        let mut approvals = ServerApprovals::default();
        let pending: Vec<&McpServerConfig> = servers
            .iter()
            .filter(|server| {
                server.origin == ServerOrigin::Project && server.entry.is_enabled() && !server.auto_approve_effective
            })
            .collect();
        if self.approve_all {
            approvals.unconfined = self.persisted_unconfined(&pending);
            return Ok(approvals);
        }
        if pending.is_empty() {
            return Ok(approvals);
        }
        let mut store = ApprovalStore::load(self.server_approvals_path())?;
        for server in pending {
            let key = server_approval_key(&self.cwd, &server.name, &server.entry);
            let offer = self.offers_unconfined(server);
            if offer && store.contains(&self.unconfined_key(server)) {
                approvals.unconfined.push(server.name.clone());
                continue;
            }
            if store.contains(&key) {
                continue;
            }
            let (refusal, failure_class) = if !self.console.is_interactive() {
                (server_approval_required(server), Some("approval_required"))
            } else {
                let answer = self.console.prompt(&self.server_card(server, offer)).unwrap_or_default();
                let unconfined = offer && is_unconfined(&answer);
                if is_yes(&answer) || unconfined {
                    if unconfined {
                        approvals.unconfined.push(server.name.clone());
                    }
                    if let Err(err) = store.insert_and_save(if unconfined { self.unconfined_key(server) } else { key })
                    {
                        self.console.warn(&err.to_string());
                    }
                    continue;
                }
                (ApprovalError::ServerNotApproved { name: server.name.clone() }, None)
            };
            if skip_optional && !server.entry.is_required() {
                approvals.skipped.push(SkippedServer { name: server.name.clone(), error: refusal, failure_class });
            } else {
                return Err(refusal);
            }
        }
        Ok(approvals)
    }

    /// \[beyond\] Whether `server`'s card offers to run it unconfined: a stdio server the sandbox,
    /// in force, would confine.
    fn offers_unconfined(&self, server: &McpServerConfig) -> bool {
        self.sandbox_in_force
            && server.entry.sandbox == Some(true)
            && matches!(ServerLaunch::of(&server.entry), ServerLaunch::Stdio { .. })
    }

    /// \[beyond\] The key an approval to run `server` unconfined is kept under; built only for a
    /// server whose card offers it.
    fn unconfined_key(&self, server: &McpServerConfig) -> String {
        unconfined_server_approval_key(&self.cwd, &server.name, &server.entry)
    }

    /// \[beyond\] Under `ODEK_APPROVE_MCP=1`, the servers of `pending` an operator approved to run
    /// unconfined before; an unreadable approvals file only warns (they run confined).
    fn persisted_unconfined(&self, pending: &[&McpServerConfig]) -> Vec<String> {
        let offered: Vec<&&McpServerConfig> = pending.iter().filter(|server| self.offers_unconfined(server)).collect();
        if offered.is_empty() {
            return Vec::new();
        }
        let store = match ApprovalStore::load(self.server_approvals_path()) {
            Ok(store) => store,
            Err(err) => {
                self.console.warn(&format!("{err}; project servers run confined"));
                return Vec::new();
            }
        };
        offered
            .into_iter()
            .filter(|server| store.contains(&self.unconfined_key(server)))
            .map(|server| server.name.clone())
            .collect()
    }

    /// The §13.1 prompt, and \[beyond\] when the sandbox is in force what it means for this
    /// server: when `offer`, confined (for a package runner, with its registries) and the `u`
    /// answer; for a server the operator's file runs unconfined, that it will.
    fn server_card(&self, server: &McpServerConfig, offer: bool) -> String {
        let parent_env: Vec<String> = self.env.keys().cloned().collect();
        let prompt = server_approval_prompt(server, &parent_env);
        let unconfined_by_operator = self.sandbox_in_force && server.entry.sandbox == Some(false);
        if !offer && !unconfined_by_operator {
            return prompt;
        }
        let mut card = prompt.strip_suffix(APPROVE_PROMPT).unwrap_or(&prompt).to_owned();
        if unconfined_by_operator {
            card.push_str("  sandbox: none (your ~/.odek/config.json runs it unconfined)\n");
            card.push_str(APPROVE_PROMPT);
            return card;
        }
        let ServerLaunch::Stdio { command, args } = ServerLaunch::of(&server.entry) else { return prompt };
        match odek_mcp::package_runner::PackageRunner::of(command, args) {
            Some(runner) => card.push_str(&format!(
                "  sandbox: confined to the workspace; as a package runner ({}) also its own cache and {}\n",
                runner.name(),
                runner.registries(&server.entry.env, &self.env).join(", ")
            )),
            None => card.push_str("  sandbox: confined to the workspace\n"),
        }
        card.push_str("  u: approve it to run unconfined instead, with all your files and the network\n");
        card.push_str(UNCONFINED_CHOICE_PROMPT);
        card
    }

    /// The per-tool approver for these servers (global and project). Reads
    /// `mcp_tool_approvals.json` now, so a corrupt file fails startup, unless
    /// `ODEK_APPROVE_MCP=1` makes it irrelevant.
    pub fn tool_approver(&self, servers: &[McpServerConfig]) -> Result<CliToolApprover, ApprovalError> {
        let store = if self.approve_all {
            ApprovalStore::empty(self.tool_approvals_path())
        } else {
            ApprovalStore::load(self.tool_approvals_path())?
        };
        Ok(CliToolApprover::new(self.cwd.clone(), self.approve_all, servers, store, Arc::clone(&self.console)))
    }
}

fn server_approval_required(server: &McpServerConfig) -> ApprovalError {
    let (target, args) = match ServerLaunch::of(&server.entry) {
        ServerLaunch::Stdio { command, args } => (command, Some(args.join(" "))),
        ServerLaunch::Http { url, .. } => (url, None),
    };
    ApprovalError::ServerApprovalRequired {
        name: server.name.clone(),
        target: shown_value(target),
        args: args.map(|args| odek_contract::redaction::redact(&args).into_owned()),
    }
}

/// A project-supplied value as a server prompt or error shows it: known secrets redacted (a
/// value `${VAR}` filled may be one), then terminal-safe on one line.
fn shown_value(text: &str) -> String {
    sanitise_for_terminal(&odek_contract::redaction::redact(text), Layout::Line).into_owned()
}

/// The last line of the §13.1 prompt.
const APPROVE_PROMPT: &str = "Approve? [y/N] ";

/// \[beyond\] The last line of a card that offers to run the server unconfined.
pub const UNCONFINED_CHOICE_PROMPT: &str = "Approve? [y/N/u] ";

/// The §13.1 prompt, ending `Approve? [y/N] `. It shows exactly what the server key hashes
/// (besides the directory and name): the launch fields of the transport in use, the env
/// overrides sorted by name, the limit fields that are set (non-zero), and the artifact roots.
/// \[beyond\] Then what of the operator's the server would receive, by name: for a process,
/// every variable of its environment (`parent_env`, odek's variable names, gives the ones the
/// allowlist forwards), and the variables of odek's its entry read through `${...}`; a remote
/// server's header values are shown as the redactor leaves them. Every project-supplied value
/// goes through `shown_value`: redacted, and sanitised so it can neither repaint the prompt nor
/// forge a line of it.
pub fn server_approval_prompt(server: &McpServerConfig, parent_env: &[String]) -> String {
    let entry = &server.entry;
    let mut text = format!("\nProject-level MCP server {} wants to run:\n", quote(&server.name));
    match ServerLaunch::of(entry) {
        ServerLaunch::Stdio { command, args } => {
            text.push_str(&format!("  command: {}\n", shown_value(command)));
            if !args.is_empty() {
                text.push_str(&format!("  args:    {}\n", shown_value(&args.join(" "))));
            }
            if let Some(cwd) = entry.cwd.as_deref().filter(|cwd| !cwd.is_empty()) {
                text.push_str(&format!("  cwd:     {}\n", shown_value(cwd)));
            }
        }
        ServerLaunch::Http { url, token_env } => {
            text.push_str(&format!("  url: {}\n", shown_value(url)));
            if !token_env.is_empty() {
                text.push_str(&format!("  token_env: {}\n", shown_value(token_env)));
            }
            if !entry.headers.is_empty() {
                text.push_str("  headers:\n");
                for (name, value) in &entry.headers {
                    text.push_str(&format!("    {}\n", shown_value(&format!("{name}: {}", value.expose()))));
                }
            }
            if entry.allow_insecure_http {
                text.push_str("  allow_insecure_http: true\n");
            }
            if entry.kind.as_deref() == Some("sse") {
                text.push_str("  type: sse (the deprecated HTTP+SSE transport)\n");
            }
        }
    }
    if !entry.env.is_empty() {
        text.push_str("  env:\n");
        for (name, value) in &entry.env {
            text.push_str(&format!("    {}\n", shown_value(&format!("{name}={value}"))));
        }
    }
    for (label, value) in [
        ("timeout_seconds", entry.timeout_seconds),
        ("max_response_bytes", entry.max_response_bytes),
        ("max_result_chars", entry.max_result_chars),
    ] {
        if value != 0 {
            text.push_str(&format!("  {label}: {value}\n"));
        }
    }
    if !entry.artifact_roots.is_empty() {
        let roots = shown_value(&entry.artifact_roots.join(", "));
        text.push_str(&format!("  artifact_roots: {roots}\n"));
    }
    if let ServerLaunch::Stdio { .. } = ServerLaunch::of(entry) {
        let parent = parent_env.iter().map(|name| (name.clone(), String::new()));
        let (environment, _) = odek_mcp::env_allowlist::server_env(&server.name, &entry.env, &entry.secret_env, parent);
        let names: Vec<&str> = environment.keys().map(String::as_str).collect();
        let names = if names.is_empty() { "(none)".to_owned() } else { names.join(", ") };
        text.push_str(&format!("  environment: {}\n", shown_value(&names)));
    }
    if !server.variables.is_empty() {
        text.push_str(&format!("  reads odek's variables: {}\n", shown_value(&server.variables.join(", "))));
    }
    text.push_str(APPROVE_PROMPT);
    text
}
