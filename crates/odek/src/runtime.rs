//! The runtime: the effective settings of every layer ([`Runtime::new`] on a [`Setup`] and the
//! caller's typed [`Overrides`]), and the sessions it hands out ([`Session`]), whose turns run
//! the loop with the provider, the built-in and MCP tools, budgets, the event stream and the
//! session file — the same way in every face.
//!
//! A session starts its MCP servers and its provider on its first turn and keeps them until
//! [`Session::close`]. Each turn is one run in the event stream (`run_started` … `run_completed`
//! or `run_failed`) with budgets of its own.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use odek_agent::budget::{Budget, BudgetLimits, ModelPrices};
use odek_agent::events::{EventEmitter, EventStream, Fanout, RunId, open_sink};
use odek_agent::finish::checks::CheckReport;
use odek_agent::finish::output_file::OutputWritten;
use odek_agent::finish::{FinishGates, FinishSettings};
use odek_agent::liveness::{Liveness, Phase, spawn_heartbeat};
use odek_agent::observer::{LoopEvent, LoopObserver};
use odek_agent::plan::{PLAN_TOOL_NAME, PlanBoard, PlanCaps, render_plan};
use odek_agent::prompt::{
    PromptInputs, compose_system_prompt, expand_at_references, read_ctx_file, upsert_server_instructions, user_message,
};
use odek_agent::run::context_window;
use odek_agent::run::{Agent, Checkpoint, LoopSettings, RunError, Saved, ToolSet};
use odek_agent::session::{
    SaveReport, Session as SessionRecord, SessionError, SessionId, SessionLock, SessionStore, safe_state,
};
use odek_agent::subagent::artifact_read::ArtifactReadTool;
use odek_agent::subagent::artifacts::ArtifactRegistry;
use odek_agent::subagent::delegate::DelegateTool;
use odek_agent::subagent::task::TaskReplay;
use odek_agent::tool::{EditorFiles, Tool, ToolContext};
use odek_contract::outcome::Outcome;
use odek_danger::{DangerPolicy, PolicySettings};
use odek_llm::{Message, Provider, ReplayScript, Thinking, Usage};
use odek_mcp::{McpHub, McpObserver, ServerInfo};
use tokio_util::sync::CancellationToken;

use crate::agent_parts::{REPLAY_PROVIDER, budget_limits, build_provider, builtin_settings, delegate_settings};
use crate::config::{
    CliOverrides, Config, ConfigSources, FallbackTarget, PlanningConfig, fallback_chain, resolve_effective,
};
use crate::denials::{DenialRecorder, Denials, named_but_unavailable, strict_refusal, unavailable_warning};
use crate::error::RuntimeError;
use crate::finish::{FinishOverrides, finish_settings, write_answer};
use crate::run_sandbox::{RunSandbox, prepare_sandbox};
use crate::setup::{Setup, start_hub};
use crate::subscriber::{LoopView, McpRoute, McpView, Subscriber, TeeSink, Unattended};

/// What the caller sets above the config files and `ODEK_*` (for the binary: its flags).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// The config keys a flag can set (model, provider, limits, tools, planning, …).
    pub config: CliOverrides,
    /// `--thinking` (`enabled`, `disabled`, `low`, `medium`, `high`); the config's when `None`.
    pub thinking: Option<String>,
    /// `--stream`: stream even when the config does not.
    pub stream: bool,
    /// `--replay <file>`: answer from a replay script (selects the `replay` provider when no
    /// provider is configured).
    pub replay: Option<PathBuf>,
    /// `--record <file>`: record the provider's exchanges.
    pub record: Option<PathBuf>,
    /// `--events-jsonl <path|->`.
    pub events_jsonl: Option<String>,
    /// `--events-include-args`.
    pub events_include_args: bool,
    /// An invalid configured thinking level means the model default instead of an error (what
    /// `odek subagent` does: its parent already resolved the level).
    pub lenient_thinking: bool,
    /// \[beyond\] The final-answer gates and `--output-file`.
    pub finish: FinishOverrides,
}

/// The settings of the runtime after every layer.
#[derive(Clone)]
pub struct Settings {
    /// Files, `ODEK_*` and overrides merged.
    pub config: Config,
    /// The resolved API key (registered for redaction).
    pub api_key: Option<String>,
    /// `ODEK_NO_COLOR`.
    pub no_color: bool,
    /// The thinking level asked of the provider (`--thinking`, config `thinking`).
    pub thinking: Thinking,
    /// Whether model answers are streamed (`--stream`, config `stream`).
    pub stream: bool,
    /// `--replay`: answer from this `odek.replay/v1` script instead of a provider.
    pub replay: Option<PathBuf>,
    /// `--record`: write the provider's answers to this replay script.
    pub record: Option<PathBuf>,
    /// `--events-jsonl`: the path of the event stream (`-` = stdout).
    pub events_jsonl: Option<String>,
    /// `--events-include-args`: tool-call arguments (redacted) appear in the events.
    pub events_include_args: bool,
    /// The danger policy of the built-in tools (the `dangerous` section; a face may tighten it).
    pub policy: PolicySettings,
    /// Budget limits used instead of the config's `limits` (a sub-agent's, clamped to its
    /// parent's share).
    pub limits: Option<BudgetLimits>,
    /// Whether turns start the configured MCP servers (an untrusted sub-agent starts none).
    pub mcp_servers: bool,
    /// A replay script handed over in memory (a sub-agent's part of its parent's script), used
    /// instead of loading `replay`.
    pub replay_script: Option<Arc<TaskReplay>>,
    /// Turns run for an untrusted parent: `delegate_tasks` children are untrusted too.
    pub untrusted: bool,
    /// Whether a top-level turn offers `artifact_read` (a sub-agent never does).
    pub artifact_read: bool,
    /// The session `delegate_tasks` names as its children's parent when this runtime's own
    /// session is not persisted (a sub-agent passes its parent's).
    pub parent_session: Option<String>,
    /// \[beyond\] What every turn's final answer must satisfy (`--output-schema`, `--check`).
    pub finish: FinishSettings,
    /// \[beyond\] `--output-file`: where an accepted answer is written.
    pub output_file: Option<PathBuf>,
    /// \[beyond\] `fallback_models` resolved (each entry's endpoint and key), in order.
    pub fallbacks: Vec<FallbackTarget>,
}

/// The assembled runtime: config, settings, the face's subscriber and any tools the embedder
/// adds. Hands out [`Session`]s.
pub struct Runtime {
    setup: Setup,
    settings: Settings,
    subscriber: Arc<dyn Subscriber>,
    extra_tools: Vec<Arc<dyn Tool>>,
    /// What `delegate_tasks` runs as `<program> subagent`; this process's executable when unset.
    subagent_program: Option<PathBuf>,
    /// \[beyond\] The sandbox every command is confined in (`None`: off, or not enforceable).
    sandbox: Option<RunSandbox>,
}

impl Runtime {
    /// Loads the config files of `sources`, then applies `ODEK_*` and `overrides`; every
    /// warning goes to `subscriber`.
    pub fn load(
        sources: ConfigSources,
        overrides: &Overrides,
        subscriber: Arc<dyn Subscriber>,
    ) -> Result<Runtime, RuntimeError> {
        let setup = Setup::load(sources, &|warning| subscriber.warning(warning))?;
        Runtime::new(setup, overrides, subscriber)
    }

    /// The runtime of loaded config files: `ODEK_*` and `overrides` applied, the thinking
    /// level checked. The loader's warnings were reported by [`Setup::load`]; the rest go to
    /// `subscriber`.
    pub fn new(
        mut setup: Setup,
        overrides: &Overrides,
        subscriber: Arc<dyn Subscriber>,
    ) -> Result<Runtime, RuntimeError> {
        let effective = resolve_effective(&setup.loaded, &overrides.config)?;
        // The hub reads its default start-up deadline from the setup: the flag's, when given.
        setup.loaded.config.limits.mcp_startup_timeout_seconds = effective.config.limits.mcp_startup_timeout_seconds;
        for warning in effective.warnings.get(setup.loaded.warnings.len()..).unwrap_or_default() {
            subscriber.warning(warning);
        }
        let mut config = effective.config;
        if overrides.replay.is_some() && config.core.provider.is_empty() {
            REPLAY_PROVIDER.clone_into(&mut config.core.provider);
        }
        let thinking_text = overrides.thinking.clone().unwrap_or_else(|| config.core.thinking.clone());
        let thinking = match Thinking::parse(&thinking_text) {
            Some(thinking) => thinking,
            None if overrides.lenient_thinking => Thinking::default(),
            None => {
                return Err(RuntimeError::Setup(format!(
                    "invalid thinking level {} (want enabled, disabled, low, medium or high)",
                    odek_contract::quoting::quote(&thinking_text)
                )));
            }
        };
        let finish = finish_settings(&overrides.finish, &config)?;
        let fallbacks = fallback_chain(&config.fallback_models, &config.core, &config.providers, &setup.loaded.env);
        let settings = Settings {
            fallbacks,
            finish,
            output_file: overrides.finish.output_file.clone(),
            stream: config.core.stream || overrides.stream,
            policy: config.dangerous.policy_settings(),
            config,
            api_key: effective.api_key,
            no_color: effective.no_color,
            thinking,
            replay: overrides.replay.clone(),
            record: overrides.record.clone(),
            events_jsonl: overrides.events_jsonl.clone(),
            events_include_args: overrides.events_include_args,
            limits: None,
            mcp_servers: true,
            replay_script: None,
            untrusted: false,
            artifact_read: true,
            parent_session: None,
        };
        let sandbox =
            prepare_sandbox(&settings.config.sandbox, &setup.sources, &|warning| subscriber.warning(warning))?;
        let mut setup = setup;
        setup.adopt_sandbox(&settings.config.sandbox, sandbox.as_ref());
        setup.answer_elicitations_with(subscriber.elicitor());
        Ok(Runtime { setup, settings, subscriber, extra_tools: Vec::new(), subagent_program: None, sandbox })
    }

    /// Adds an in-process tool, offered beside the built-in ones in every turn.
    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Runtime {
        self.extra_tools.push(tool);
        self
    }

    /// The `odek` binary `delegate_tasks` starts its sub-agents with (`<program> subagent`).
    /// A program that embeds odek sets it to offer delegation that works; without it, children
    /// would run this process's own executable.
    pub fn with_subagent_program(mut self, program: PathBuf) -> Runtime {
        self.subagent_program = Some(program);
        self
    }

    /// What the runtime was loaded from: the config files, the environment, the paths.
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The settings every session's turns run with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The settings, for a face that decides more than the config does (a sub-agent's profile,
    /// trust and budgets). Changes apply to sessions handed out afterwards.
    pub fn settings_mut(&mut self) -> &mut Settings {
        &mut self.settings
    }

    /// The context every turn gives the built-in tools before the face's part (cancellation,
    /// approvals, liveness) is added: the working directory, `~/.odek` and the danger policy of
    /// the settings, \[beyond\] the sandbox, nobody to approve anything. A face that calls the
    /// built-in tools itself (`odek mcp`) starts from this one, so whatever confines the turns'
    /// tools confines its too.
    pub fn tool_context(&self) -> ToolContext {
        let sources = &self.setup.sources;
        let mut context =
            ToolContext::new(sources.cwd.clone(), sources.odek_dir(), DangerPolicy::new(self.settings.policy.clone()));
        context.sandbox = self.sandbox().cloned();
        context
    }

    /// The built-in tools every turn offers (`shell`, `read_file`, `write_file`, `patch`,
    /// `search_files`) with the settings' limits, before the config's tool filter.
    pub fn builtin_tools(&self) -> Vec<Arc<dyn Tool>> {
        odek_agent::tools::builtin_tools(builtin_settings(&self.settings.config))
    }

    /// The session store (`~/.odek/sessions`).
    pub fn session_store(&self) -> Result<SessionStore, RuntimeError> {
        Ok(self.setup.session_store()?)
    }

    /// A new persisted session for this runtime's model, provider and endpoint, locked for
    /// this process. It is saved after each completed step of its turns.
    pub fn new_session_record(&self) -> Result<(SessionRecord, SessionLock), RuntimeError> {
        self.session_record(SessionId::mint()?)
    }

    /// [`Runtime::new_session_record`] under an id the caller minted (a host names the session
    /// before its runtime exists).
    pub fn session_record(&self, id: SessionId) -> Result<(SessionRecord, SessionLock), RuntimeError> {
        let lock = self.session_store()?.lock(&id)?;
        let mut record = SessionRecord::new(id);
        let core = &self.settings.config.core;
        record.model.clone_from(&core.model);
        record.provider.clone_from(&core.provider);
        record.base_url.clone_from(&core.base_url);
        record.sandbox = self.sandboxed();
        Ok((record, lock))
    }

    /// Continues `record` with the model, provider and endpoint it was started with (a base
    /// URL the session did not record keeps this runtime's), and \[beyond\] its sandbox posture:
    /// a sandboxed session is continued sandboxed (`odek: session was sandboxed — enabling
    /// sandbox for this continuation` when the config had it off), an unsandboxed one
    /// unsandboxed unless the sandbox is required.
    pub fn adopt_session(&mut self, record: &SessionRecord) -> Result<(), RuntimeError> {
        let core = &mut self.settings.config.core;
        core.model.clone_from(&record.model);
        core.provider.clone_from(&record.provider);
        if !record.base_url.is_empty() {
            core.base_url.clone_from(&record.base_url);
        }
        let sandbox = &mut self.settings.config.sandbox;
        if record.sandbox == sandbox.enabled || (!record.sandbox && sandbox.required) {
            return Ok(());
        }
        sandbox.enabled = record.sandbox;
        if record.sandbox {
            self.subscriber.notice("odek: session was sandboxed — enabling sandbox for this continuation");
        } else {
            self.subscriber.notice("odek: session was not sandboxed — continuing without the sandbox");
        }
        self.sandbox = None;
        self.sandbox = prepare_sandbox(&self.settings.config.sandbox, &self.setup.sources, &|warning| {
            self.subscriber.warning(warning);
        })?;
        self.setup.adopt_sandbox(&self.settings.config.sandbox, self.sandbox.as_ref());
        Ok(())
    }

    /// \[beyond\] Whether the processes this runtime starts are confined by the kernel sandbox
    /// (what `run_started.sandbox` and the session file say).
    pub fn sandboxed(&self) -> bool {
        self.sandbox.is_some()
    }

    /// \[beyond\] The sandbox commands are confined in, when it is in force.
    pub fn sandbox(&self) -> Option<&Arc<odek_sandbox::Sandbox>> {
        self.sandbox.as_ref().map(|run| &run.sandbox)
    }

    /// The system prompt (`--system` text in `system_flag`), its warnings reported.
    pub fn system_prompt(&self, system_flag: Option<&str>) -> String {
        let sources = &self.setup.sources;
        let inputs = PromptInputs {
            system_flag: system_flag.map(str::to_owned),
            system_config: Some(self.settings.config.core.system.clone()),
            odek_home: sources.odek_dir(),
            cwd: sources.cwd.clone(),
            no_agents: self.settings.config.core.no_agents,
            interface: "cli".to_owned(),
            now: chrono::Utc::now(),
        };
        let (prompt, warnings) = compose_system_prompt(&inputs);
        self.warn_all(&warnings);
        prompt
    }

    /// The user message of a turn: `task` with its `@file` references and the `ctx` files
    /// (relative to the working directory) as context blocks.
    pub fn user_message(&self, task: &str, ctx: &[PathBuf]) -> Result<String, RuntimeError> {
        let cwd = &self.setup.sources.cwd;
        let (mut attachments, warnings) = expand_at_references(task, cwd);
        self.warn_all(&warnings);
        for path in ctx {
            let path = if path.is_absolute() { path.clone() } else { cwd.join(path) };
            attachments.push(read_ctx_file(&path)?);
        }
        Ok(user_message(task, &attachments))
    }

    /// A session over `history` (a fresh one: the system prompt; a resumed one: its safe
    /// state), saved into `record` after each completed step when there is one.
    pub fn session(&self, history: Vec<Message>, record: Option<SessionRecord>) -> Result<Session<'_>, RuntimeError> {
        Session::over(Held::Borrowed(self), history, record)
    }

    /// [`Runtime::session`] owning its runtime: a session a host keeps across turns and hands
    /// between tasks, with no borrow to outlive.
    pub fn into_session(
        self: Arc<Self>,
        history: Vec<Message>,
        record: Option<SessionRecord>,
    ) -> Result<Session<'static>, RuntimeError> {
        Session::over(Held::Owned(self), history, record)
    }

    /// Reports a warning to the subscriber.
    pub(crate) fn warn(&self, text: &str) {
        self.subscriber.warning(text);
    }

    fn warn_all(&self, warnings: &[String]) {
        for warning in warnings {
            self.subscriber.warning(warning);
        }
    }

    /// The provider, and the `--replay` script it answers from (sub-agents get their part of it).
    fn provider(settings: &Settings) -> Result<(Arc<dyn Provider>, ReplayShare), RuntimeError> {
        let replay = match &settings.replay {
            _ if settings.replay_script.is_some() => settings.replay_script.clone(),
            None => None,
            Some(_) if settings.config.core.provider != REPLAY_PROVIDER => {
                return Err(RuntimeError::Setup("--replay needs --provider replay".into()));
            }
            Some(path) => {
                Some(Arc::new(TaskReplay { source: path.display().to_string(), script: ReplayScript::load(path)? }))
            }
        };
        let provider = build_provider(
            &settings.config,
            settings.api_key.as_deref(),
            &settings.fallbacks,
            replay.as_deref(),
            settings.record.as_deref(),
        )?;
        Ok((provider, replay))
    }
}

/// The `--replay` script, shared with `delegate_tasks`.
type ReplayShare = Option<Arc<TaskReplay>>;

/// How a turn is stopped and timed.
#[derive(Debug, Clone, Default)]
pub struct TurnControl {
    /// Cancels the turn: running tools and MCP calls stop, the turn fails with
    /// `context canceled`.
    pub cancel: CancellationToken,
    /// Asks the loop to conclude: the model gives its final answer instead of another batch.
    pub finalize: CancellationToken,
    /// When the turn's runtime budget starts counting; the turn's start when `None`.
    pub started: Option<Instant>,
    /// \[beyond\] The run id the turn's events carry (32 lowercase hex characters), when the
    /// face named the run before it started; a fresh one when `None`.
    pub run_id: Option<String>,
}

/// \[beyond\] What a face's session mode changes of a session's turns.
#[derive(Debug, Clone, Default)]
pub struct Restrictions {
    /// The danger policy instead of the settings' one.
    pub policy: Option<PolicySettings>,
    /// Every call of a tool no rule classifies (MCP tools, `delegate_tasks`) is asked about,
    /// but the tools that only read.
    pub ask_unclassified: bool,
    /// Only the tools that read are offered, and `shell` (whose commands the policy limits):
    /// no MCP tool, no sub-agent, no `write_file` or `patch`.
    pub read_only: bool,
}

/// What a finished turn returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOutcome {
    /// The final answer, not yet redacted for printing (under `--output-schema`, the compact
    /// JSON of `output`).
    pub answer: String,
    /// Model calls the turn made (its loop's iterations).
    pub iterations: u32,
    /// The turn's usage (model calls, side calls, sub-agents' charge-back).
    pub usage: Usage,
    /// \[beyond\] The answer's value, when it matched `--output-schema`.
    pub output: Option<serde_json::Value>,
    /// \[beyond\] The last cycle of the `--check`s (empty without checks).
    pub checks: Vec<CheckReport>,
    /// \[beyond\] What `--output-file` received.
    pub output_file: Option<OutputWritten>,
}

/// What a session's turns have spent so far: counted against the token, cost and tool-call
/// limits of every later turn (runtime and iterations are per turn).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Turns run, whatever their outcome.
    pub turns: u32,
    /// Tokens of every turn so far (input and output).
    pub usage: Usage,
    /// Tool calls of every turn so far.
    pub tool_calls: u64,
}

/// The tools a session offers: the built-in ones and, once the servers are up, each MCP
/// server with its status.
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// Names of the built-in and in-process tools the operator's `tools` settings allow.
    pub builtins: Vec<String>,
    /// `None` before the first turn started the servers.
    pub servers: Option<Vec<ServerInfo>>,
}

/// A conversation: its messages, its session file (when persisted), its plan and spend, and
/// the MCP servers and provider its turns use.
pub struct Session<'r> {
    runtime: Held<'r>,
    messages: Vec<Message>,
    persisted: Option<Arc<Mutex<Persisted>>>,
    started: Option<Started>,
    /// The model of the next turn (`set_model`).
    model: String,
    /// The `plan` tool's board, kept across turns; `None` with planning off.
    plan: Option<Arc<PlanBoard>>,
    spent: Spent,
    /// The operations the latest turn refused.
    denials: Denials,
    /// What a face's session mode changes of the next turns (`None`: nothing).
    restrictions: Option<Restrictions>,
    /// \[beyond\] The editor the file tools read and write through (an ACP client's `fs`).
    editor: Option<Arc<dyn EditorFiles>>,
    /// The session's artifact registry: its children's artifacts, which only its own
    /// `artifact_read` finds.
    artifacts: Arc<ArtifactRegistry>,
}

/// The runtime a session runs on: borrowed for a face that keeps the runtime itself, owned for
/// a session that lives on its own (a host's).
#[derive(Clone)]
enum Held<'r> {
    Borrowed(&'r Runtime),
    Owned(Arc<Runtime>),
}

impl std::ops::Deref for Held<'_> {
    type Target = Runtime;

    fn deref(&self) -> &Runtime {
        match self {
            Held::Borrowed(runtime) => runtime,
            Held::Owned(runtime) => runtime,
        }
    }
}

/// What a session starts on its first turn and keeps.
struct Started {
    /// `None` when the settings start no MCP servers.
    hub: Option<Arc<McpHub>>,
    route: Arc<McpRoute>,
    provider: Arc<dyn Provider>,
    replay: ReplayShare,
}

/// A persisted session and where it is saved.
struct Persisted {
    store: SessionStore,
    record: SessionRecord,
    /// A step of the running turn saved the file without the index ([`Persisted::catch_up`]).
    index_behind: bool,
}

impl Persisted {
    fn new(store: SessionStore, record: SessionRecord) -> Persisted {
        Persisted { store, record, index_behind: false }
    }

    /// Saves a step of a turn: the first save of the turn updates the index as well (a new
    /// session is listed at once), later ones the file alone, each costing two fsyncs rather
    /// than four and no directory listing; the turn's end catches the index up.
    fn save_step(&mut self) -> Result<SaveReport, SessionError> {
        if self.index_behind {
            return self.store.save_file(&mut self.record);
        }
        let report = self.store.save_file(&mut self.record)?;
        self.store.index(&self.record);
        self.index_behind = true;
        Ok(report)
    }

    /// Saves the file and the index entry, outside a turn.
    fn save_now(&mut self) -> Result<(), SessionError> {
        self.store.save_file(&mut self.record)?;
        self.store.index(&self.record);
        self.index_behind = false;
        Ok(())
    }

    /// Brings the index up to the last saved step, once a turn is over.
    fn catch_up(&mut self) {
        if std::mem::take(&mut self.index_behind) {
            self.store.index(&self.record);
        }
    }
}

impl<'r> Session<'r> {
    fn over(
        runtime: Held<'r>,
        history: Vec<Message>,
        record: Option<SessionRecord>,
    ) -> Result<Session<'r>, RuntimeError> {
        let model = runtime.settings.config.core.model.clone();
        let mut session = Session {
            runtime,
            messages: Vec::new(),
            persisted: None,
            started: None,
            model,
            plan: None,
            spent: Spent::default(),
            denials: Denials::default(),
            restrictions: None,
            editor: None,
            artifacts: Arc::default(),
        };
        session.reset(history, record)?;
        Ok(session)
    }

    /// The runtime the session's turns run on.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

impl Session<'_> {
    /// The conversation so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Starts over on `history` (saved into `record` when there is one), keeping the MCP
    /// servers, the provider and what was spent: what a REPL's `/new` does.
    pub fn reset(&mut self, history: Vec<Message>, record: Option<SessionRecord>) -> Result<(), RuntimeError> {
        let runtime = self.runtime.clone();
        let planning = &runtime.settings.config.planning;
        self.persisted = match record {
            Some(record) => Some(Arc::new(Mutex::new(Persisted::new(runtime.session_store()?, record)))),
            None => None,
        };
        self.plan = planning.enabled.then(|| Arc::new(PlanBoard::new(plan_caps(planning))));
        self.messages = history;
        Ok(())
    }

    /// The model the next turn uses.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Uses `model` from the next turn on (and records it in the session file).
    pub fn set_model(&mut self, model: &str) {
        model.clone_into(&mut self.model);
        if let Some(persisted) = &self.persisted {
            model.clone_into(&mut lock(persisted).record.model);
        }
    }

    /// Runs the next turns under `restrictions` (`None`: as the settings say): what a face's
    /// session modes (ask first, read-only) change.
    pub fn set_restrictions(&mut self, restrictions: Option<Restrictions>) {
        self.restrictions = restrictions;
    }

    /// \[beyond\] Has the file tools read and write the files `editor` holds through it (`None`:
    /// the disk), from the next turn on.
    pub fn set_editor(&mut self, editor: Option<Arc<dyn EditorFiles>>) {
        self.editor = editor;
    }

    /// The `plan` tool's board, shared: a face reads the steps while a turn runs. `None` with
    /// planning off.
    pub fn plan_board(&self) -> Option<Arc<PlanBoard>> {
        self.plan.clone()
    }

    /// What the turns so far have spent.
    pub fn spent(&self) -> Spent {
        self.spent
    }

    /// \[beyond\] The operations the latest turn refused (whether it succeeded or not).
    pub fn denials(&self) -> &Denials {
        &self.denials
    }

    /// The budget limits of the next turn (`0` = no limit): the settings' own limits when a face
    /// set them, else the config's with the prices of the next turn's model.
    pub fn limits(&self) -> BudgetLimits {
        self.turn_limits(&|_| {})
    }

    /// [`Session::limits`], telling `warn` when a cost cap has no prices.
    fn turn_limits(&self, warn: &dyn Fn(&str)) -> BudgetLimits {
        let settings = &self.runtime.settings;
        if let Some(limits) = settings.limits {
            return limits;
        }
        let mut config = settings.config.clone();
        config.core.model.clone_from(&self.model);
        budget_limits(&config, warn)
    }

    /// The current plan, rendered as the model sees it; `None` with planning off or before the
    /// first `create`.
    pub fn plan(&self) -> Option<String> {
        let board = self.plan.as_ref()?;
        render_plan(&board.state(), board.caps().max_render_chars)
    }

    /// The tools of the next turn.
    pub fn catalogue(&self) -> Catalogue {
        let runtime = self.runtime.clone();
        let config = &runtime.settings.config;
        let mut builtins: Vec<String> = odek_agent::tools::builtin_tools(builtin_settings(config))
            .iter()
            .chain(runtime.extra_tools.iter())
            .map(|tool| tool.definition().name)
            .collect();
        if self.plan.is_some() {
            builtins.push(PLAN_TOOL_NAME.to_owned());
        }
        builtins.retain(|name| config.tools.allows(name));
        let servers =
            self.started.as_ref().map(|started| started.hub.as_ref().map(|hub| hub.servers()).unwrap_or_default());
        Catalogue { builtins, servers }
    }

    /// \[beyond\] Records `mode` (a face's approval mode; empty for the configured policy) in
    /// the session's file and saves it now, so the session loaded again keeps it.
    pub fn record_mode(&mut self, mode: &str) -> Result<(), RuntimeError> {
        let Some(persisted) = &self.persisted else { return Ok(()) };
        if lock(persisted).record.mode == mode {
            return Ok(());
        }
        mode.clone_into(&mut lock(persisted).record.mode);
        self.save()
    }

    /// Saves the conversation as it stands, with its index entry, between turns (a session a
    /// face opened is listed, and can be loaded, before its first turn).
    pub fn save(&mut self) -> Result<(), RuntimeError> {
        if let Some(persisted) = &self.persisted {
            let mut persisted = lock(persisted);
            persisted.record.messages.clone_from(&self.messages);
            persisted.save_now()?;
        }
        Ok(())
    }

    /// The id of the session file, when the session is persisted.
    pub fn id(&self) -> Option<String> {
        self.persisted.as_ref().map(|persisted| lock(persisted).record.id.as_str().to_owned())
    }

    /// Runs one turn on `user_message`: starts the MCP servers and the provider on the first
    /// turn, then the loop under this turn's budgets until an answer, a budget stop, an error
    /// or `cancel`. After a failed turn the conversation keeps only its safe state (no call
    /// without its result), so the next turn starts clean.
    pub async fn turn(
        &mut self,
        user_message: String,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, RuntimeError> {
        let control = TurnControl { cancel: cancel.clone(), ..TurnControl::default() };
        self.turn_with(user_message, &control).await
    }

    /// [`Session::turn`] under `control`: also concluding early when its `finalize` fires, and
    /// timing the runtime budget from its `started`.
    pub async fn turn_with(
        &mut self,
        user_message: String,
        control: &TurnControl,
    ) -> Result<TurnOutcome, RuntimeError> {
        let started = control.started.unwrap_or_else(Instant::now);
        let runtime = self.runtime.clone();
        self.denials = Denials::default();
        let events = self.open_events(control.run_id.as_deref())?;
        if let Some(events) = &events {
            if let Some(id) = self.id() {
                events.set_session_id(&id);
            }
            events.run_started(&self.model, runtime.sandboxed(), runtime.settings.config.core.max_iterations);
        }
        let first_phase = if self.started.is_some() { Phase::Model } else { Phase::McpStartup };
        let heartbeat_every = Duration::from_secs(runtime.settings.config.events.heartbeat_seconds);
        let liveness = match &events {
            Some(_) if !heartbeat_every.is_zero() => Liveness::new(first_phase),
            _ => Liveness::off(),
        };
        let heartbeat = events.as_ref().and_then(|events| {
            events.track_liveness(&liveness);
            spawn_heartbeat(&liveness, events, heartbeat_every)
        });
        // A turn that failed left its transcript as it stood (a sub-agent reports from it); the
        // next turn starts from its safe state, with no call lacking its result.
        self.messages = safe_state(&self.messages);
        let user_message = match &runtime.settings.finish.output_schema {
            Some(schema) => format!("{user_message}\n\n{}", schema.instructions()),
            None => user_message,
        };
        self.messages.push(Message::user(user_message));
        let mut outcome = self.run_loop(events.clone(), liveness, &control.cancel, &control.finalize, started).await;
        if let (Ok(turn), Some(path)) = (&mut outcome, &runtime.settings.output_file) {
            match write_answer(path, &turn.answer).await {
                Ok(written) => turn.output_file = Some(written),
                Err(error) => outcome = Err(error),
            }
        }
        // No heartbeat after the run's last event.
        drop(heartbeat);
        if let Some(events) = &events {
            let duration = started.elapsed();
            match &outcome {
                Ok(outcome) => {
                    events.run_completed(duration, outcome.usage, Outcome::Success, outcome.output_file.as_ref());
                }
                Err(error) => events.run_failed(
                    duration,
                    error.error_class(),
                    error.outcome(),
                    error.stalled_phase().map(Phase::as_str),
                ),
            }
            // Drained before the turn returns, so a face prints its answer after the last event.
            events.close();
        }
        if let Some(started) = &self.started {
            started.route.route_to(None);
        }
        outcome
    }

    /// Builds the provider, then starts the MCP servers, now instead of at the first turn (which
    /// does both at once): a face can tell a setup failure from a failed turn, and a provider
    /// that cannot be built starts no server.
    pub async fn ready(&mut self) -> Result<(), RuntimeError> {
        if self.started.is_some() {
            return Ok(());
        }
        let runtime = self.runtime.clone();
        let (provider, replay) = Self::build_provider(&runtime).await?;
        let route = Arc::new(McpRoute::new(Arc::clone(&runtime.subscriber)));
        let hub = self.start_hub(&route).await.transpose()?.map(Arc::new);
        self.started = Some(Started { hub, route, provider, replay });
        Ok(())
    }

    /// Stops the session's MCP servers within the shutdown drain (`limits.shutdown_drain_seconds`):
    /// a server still running when it expires has its process group killed.
    pub async fn close(self) {
        if let Some(hub) = self.started.and_then(|started| started.hub) {
            hub.shutdown_within(self.runtime.settings.config.limits.shutdown_drain()).await;
        }
    }

    /// The turn's event stream: to the `events_jsonl` target and/or the subscriber, its events
    /// carrying `run_id` when it is a valid one, else a fresh id.
    fn open_events(&self, run_id: Option<&str>) -> Result<Option<Arc<EventStream>>, RuntimeError> {
        let runtime = self.runtime.clone();
        let settings = &runtime.settings;
        let subscriber = &runtime.subscriber;
        if settings.events_jsonl.is_none() && !subscriber.wants_events() {
            return Ok(None);
        }
        let file = match &settings.events_jsonl {
            Some(target) => Some(open_sink(target)?),
            None => None,
        };
        let sink = Box::new(TeeSink { subscriber: Arc::clone(subscriber), file });
        let run_id = match run_id.and_then(RunId::parse) {
            Some(run_id) => run_id,
            None => RunId::generate()?,
        };
        let emitter = EventEmitter::start(sink, run_id, settings.events_include_args)?;
        let sources = &runtime.setup.sources;
        let forward: Arc<dyn McpObserver> = Arc::new(McpView(Arc::clone(subscriber)));
        Ok(Some(Arc::new(EventStream::new(emitter, &sources.cwd, &sources.odek_dir(), forward))))
    }

    /// The MCP servers and the provider, started once per session. The provider's HTTP client
    /// (TLS roots) is CPU work: it is built while the servers start.
    async fn start(&mut self, events: Option<&Arc<EventStream>>) -> Result<&Started, RuntimeError> {
        if let Some(started) = &self.started {
            started.route.route_to(events.cloned());
        } else {
            let runtime = self.runtime.clone();
            let route = Arc::new(McpRoute::new(Arc::clone(&runtime.subscriber)));
            route.route_to(events.cloned());
            let provider = Self::build_provider(&runtime);
            let hub = self.start_hub(&route).await;
            let (provider, replay) = match provider.await {
                Ok(provider) => provider,
                Err(error) => {
                    // Servers that started are stopped, not left to the drop.
                    if let Some(Ok(hub)) = hub {
                        hub.shutdown().await;
                    }
                    return Err(error);
                }
            };
            let hub = hub.transpose()?.map(Arc::new);
            self.started = Some(Started { hub, route, provider, replay });
        }
        self.started.as_ref().ok_or_else(|| RuntimeError::Setup("session did not start".into()))
    }

    /// The provider, built on a blocking thread (the HTTP client's TLS roots are CPU work).
    fn build_provider(
        runtime: &Runtime,
    ) -> impl std::future::Future<Output = Result<(Arc<dyn Provider>, ReplayShare), RuntimeError>> + use<> {
        let settings = runtime.settings.clone();
        let building = tokio::task::spawn_blocking(move || Runtime::provider(&settings));
        async move { building.await.map_err(|err| RuntimeError::Setup(format!("provider setup: {err}")))? }
    }

    /// The configured MCP servers started (`None` when the settings start none).
    async fn start_hub(&self, route: &Arc<McpRoute>) -> Option<Result<McpHub, RuntimeError>> {
        let runtime = self.runtime.clone();
        if !runtime.settings.mcp_servers {
            return None;
        }
        let subscriber = &runtime.subscriber;
        let console = subscriber.console().unwrap_or_else(|| Arc::new(Unattended(Arc::clone(subscriber))));
        Some(start_hub(&runtime.setup, Arc::clone(route) as Arc<dyn McpObserver>, console).await)
    }

    async fn run_loop(
        &mut self,
        events: Option<Arc<EventStream>>,
        liveness: Liveness,
        cancel: &CancellationToken,
        finalize: &CancellationToken,
        started: Instant,
    ) -> Result<TurnOutcome, RuntimeError> {
        let runtime = self.runtime.clone();
        let session_id = self.id().or_else(|| runtime.settings.parent_session.clone());
        let persisted = self.persisted.clone();
        let Started { hub, provider, replay, .. } = self.start(events.as_ref()).await?;
        let (hub, provider, replay) = (hub.clone(), Arc::clone(provider), replay.clone());
        // [beyond] What the servers' latest handshakes said, as the prompt's last section (a
        // restart or a continued session may have changed it).
        if let Some(hub) = &hub {
            upsert_server_instructions(&mut self.messages, &hub.instructions());
        }
        let subscriber = &runtime.subscriber;
        let settings = &runtime.settings;
        let config = &settings.config;
        subscriber.loop_started();
        // Interactive means someone answers the approval cards.
        let gate = subscriber.batch_approver();
        let mut tool_context = runtime.tool_context();
        let restrictions = self.restrictions.clone().unwrap_or_default();
        if let Some(policy) = &restrictions.policy {
            tool_context.policy = Arc::new(DangerPolicy::new(policy.clone()));
        }
        tool_context.ask_unclassified = restrictions.ask_unclassified;
        tool_context.cancel = cancel.clone();
        tool_context.record_edits = subscriber.wants_edits();
        tool_context.editor.clone_from(&self.editor);
        tool_context.interactive = gate.is_some();
        tool_context.liveness = liveness;
        let limits = self.turn_limits(&|warning| subscriber.warning(warning));
        let budget = Budget::new(limits, started)
            .after(self.spent.usage, self.spent.tool_calls)
            .with_model_prices(fallback_prices(&settings.fallbacks, config));
        let mut builtins = runtime.builtin_tools();
        builtins.extend(runtime.extra_tools.iter().cloned());
        let mut delegate = delegate_settings(
            &runtime.setup,
            config,
            settings.api_key.as_deref(),
            session_id.as_deref(),
            settings.untrusted,
            &budget,
            replay,
        );
        if let Some(program) = &runtime.subagent_program {
            delegate.program.clone_from(program);
        }
        delegate.sandbox = runtime.sandbox().map(|sandbox| sandbox.policy().clone());
        delegate.registry = Arc::clone(&self.artifacts);
        if delegate.artifact_read && settings.artifact_read {
            builtins.push(Arc::new(ArtifactReadTool::new(Arc::clone(&self.artifacts))));
        }
        builtins.push(Arc::new(DelegateTool::new(delegate, events.clone())));
        let tools_config = config.tools.clone();
        let read_only = restrictions.read_only;
        let allowed = Arc::new(move |name: &str| {
            tools_config.allows(name)
                && (!read_only || name == "shell" || odek_agent::tool::READ_ONLY_TOOLS.contains(&name))
        });
        let missing_servers = if settings.mcp_servers {
            missing_servers(&runtime.setup, &hub.as_ref().map(|hub| hub.servers()).unwrap_or_default())
        } else {
            Vec::new()
        };
        let mut tools = ToolSet::new(builtins, hub, allowed);
        if let Some(board) = &self.plan {
            tools = tools.with_plan(Arc::clone(board));
        }
        let unavailable = named_but_unavailable(&config.tools, tools.definitions());
        if config.limits.strict {
            if let Some(refusal) = strict_refusal(&missing_servers, &unavailable) {
                subscriber.loop_finished();
                return Err(RuntimeError::Strict(refusal));
            }
        } else if self.spent.turns == 0
            && let Some(warning) = unavailable_warning(&unavailable)
        {
            subscriber.warning(&warning);
        }
        let recorder = Arc::new(DenialRecorder::default());
        let view: Arc<dyn LoopObserver> = Arc::new(Fanout::new(vec![
            Arc::new(LoopView(Arc::clone(subscriber))),
            Arc::clone(&recorder) as Arc<dyn LoopObserver>,
        ]));
        let core = &config.core;
        let mut agent = Agent {
            provider,
            tools,
            settings: LoopSettings {
                context_window: context_window(&self.model),
                model: self.model.clone(),
                thinking: settings.thinking,
                stream: settings.stream,
                max_iterations: core.max_iterations,
                max_tool_parallel: usize::try_from(core.max_tool_parallel).unwrap_or(usize::MAX),
                compaction: core.compaction,
                strict: config.limits.strict,
            },
            tool_context,
            observer: match &events {
                Some(events) => Arc::new(Fanout::new(vec![view, Arc::clone(events) as _])),
                None => view,
            },
            gate,
            checkpoint: persisted.map(|persisted| {
                Box::new(SessionCheckpoint { persisted, charged: Usage::default() }) as Box<dyn Checkpoint>
            }),
            budget,
            finish: FinishGates::new(&settings.finish),
        };
        // A session that spent its tokens or cost in earlier turns stops before another model call.
        if let Err(exceeded) = agent.budget.check_usage(Usage::default()) {
            agent.observer.on_event(&LoopEvent::BudgetExceeded { iteration: 0, exceeded: &exceeded });
            subscriber.loop_finished();
            return Err(RunError::Budget(exceeded).into());
        }
        let outcome = agent.run_until(&mut self.messages, cancel, finalize).await;
        if let Some(persisted) = &self.persisted {
            lock(persisted).catch_up();
        }
        let (usage, tool_calls) = agent.budget.spent();
        self.spent = Spent { turns: self.spent.turns + 1, usage, tool_calls };
        self.denials = recorder.take();
        subscriber.loop_finished();
        let outcome = outcome?;
        Ok(TurnOutcome {
            answer: outcome.answer,
            iterations: outcome.iterations,
            usage: outcome.usage,
            output: outcome.output,
            checks: outcome.checks,
            output_file: None,
        })
    }
}

/// The enabled MCP servers the hub does not have live: not approved, failed to start (an
/// optional server is kept `disabled`), or disabled after its restarts ran out.
fn missing_servers(setup: &Setup, in_hub: &[ServerInfo]) -> Vec<String> {
    setup
        .enabled_servers()
        .into_iter()
        .filter(|server| !in_hub.iter().any(|info| info.name == server.name && !info.disabled))
        .map(|server| server.name)
        .collect()
}

fn lock(persisted: &Mutex<Persisted>) -> std::sync::MutexGuard<'_, Persisted> {
    persisted.lock().unwrap_or_else(PoisonError::into_inner)
}

/// \[beyond\] The prices of the models a fallback may answer with, by model id.
fn fallback_prices(fallbacks: &[FallbackTarget], config: &Config) -> BTreeMap<String, ModelPrices> {
    fallbacks.iter().map(|fallback| (fallback.model.clone(), config.limits.prices_of(&fallback.model))).collect()
}

/// The `plan` tool's caps from the resolved `planning` section (`plan.md` §9).
fn plan_caps(planning: &PlanningConfig) -> PlanCaps {
    let steps = usize::try_from(planning.max_steps).unwrap_or(usize::MAX);
    PlanCaps::new(steps, usize::try_from(planning.max_render_chars).unwrap_or(usize::MAX))
}

/// Saves the session after each completed step of a turn.
struct SessionCheckpoint {
    persisted: Arc<Mutex<Persisted>>,
    /// The turn's usage already added to the session.
    charged: Usage,
}

impl Checkpoint for SessionCheckpoint {
    fn save(&mut self, messages: &[Message], totals: Usage) -> Result<Saved, String> {
        let mut persisted = lock(&self.persisted);
        let record = &mut persisted.record;
        record.messages = messages.to_vec();
        record.add_usage(Usage::new(
            totals.input_tokens.saturating_sub(self.charged.input_tokens),
            totals.output_tokens.saturating_sub(self.charged.output_tokens),
        ));
        self.charged = totals;
        let report = persisted.save_step().map_err(|err| err.to_string())?;
        Ok(Saved { message_count: report.message_count, warning: report.warning })
    }
}
