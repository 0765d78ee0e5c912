//! The session host: many sessions alive in one process, each on a runtime of its own working
//! directory (its project config, approvals, sandbox and budgets), for the long-lived faces.
//!
//! A face implements [`HostFace`] (it renders [`Update`]s and asks [`ApprovalRequest`]s) and
//! drives a [`Host`]: [`Host::create`] and [`Host::load`] open a session (saved after every
//! step as `--session` runs are, so `odek continue --id` resumes it and the other way round),
//! [`Host::prompt`] runs one turn to its [`TurnEnd`], [`Host::cancel`] stops it (tools, MCP
//! calls and sub-agents with it), [`Host::close`] ends a session. The number of open sessions
//! and of turns running at once are bounded ([`HostSettings`]); at the bound the session idle
//! the longest is closed to make room.

mod approval;
mod elicitation;
mod update;
mod watch;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use odek_agent::run::RunError;
use odek_agent::session::{SessionError, SessionId, SessionLock, safe_state};
use odek_contract::outcome::Outcome;
use odek_contract::redaction::redact;
use odek_danger::{Action, DangerClass, DangerPolicy, PolicySettings};
use odek_llm::{BoxFuture, Message, Usage};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use self::approval::{ApprovalAnswer, ApprovalRequest};
pub use self::elicitation::{ElicitationAnswer, ElicitationRequest};
pub use self::update::{FileDiff, PlanStep, ToolEnd, ToolKind, ToolStart, Update, UsageState, replay};

use self::approval::Asking;
use self::watch::Watch;
use crate::BudgetLimits;
use crate::config::{ConfigSources, DEFAULT_APPROVAL_TIMEOUT_SECONDS};
use crate::error::RuntimeError;
use crate::runtime::{Overrides, Restrictions, Runtime, Session};
use crate::setup::Setup;

/// Default bound on the sessions one host keeps open.
pub const DEFAULT_MAX_SESSIONS: usize = 256;
/// Default bound on the turns one host runs at once.
pub const DEFAULT_MAX_RUNNING_TURNS: usize = 32;
/// Largest prompt a face may hand a turn (bytes of text).
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;

/// A fresh run id (32 lowercase hex characters from the OS's CSPRNG) for [`Host::run_as`].
pub fn new_run_id() -> Result<String, HostError> {
    let id = odek_agent::events::RunId::generate().map_err(|error| HostError::Runtime(RuntimeError::from(error)))?;
    Ok(id.to_string())
}

/// The MCP servers a face's client offers a session: name → entry, in the config files' format
/// (`command`, `args`, `env`; or `url`, `headers`, `type`).
pub type ClientServers = serde_json::Map<String, serde_json::Value>;

/// What a face does for the host: shows updates and asks approvals.
pub trait HostFace: Send + Sync + 'static {
    /// One update of session `session`. Called in the order things happened in that session,
    /// from the runtime's tasks and threads: it must not block.
    fn update(&self, session: &str, update: Update);

    /// Asks the person; `None` when nobody can answer (the request is then denied). The host
    /// denies it as well when `approval_timeout_seconds` pass first or the turn is cancelled.
    fn ask(&self, request: ApprovalRequest) -> BoxFuture<'static, Option<ApprovalAnswer>>;

    /// \[beyond\] Asks the person an MCP server's elicitation (a form to fill in, a URL to open);
    /// `None` (the default) when nobody can answer: the config's `elicitation` policy answers
    /// then (`decline` unless set). The host tells the server `cancel` when
    /// `elicitation_timeout_seconds` pass first or the turn is cancelled. An accepted form is
    /// checked against the form before it is sent (a face should check each field as it is
    /// typed: [`odek_mcp::elicitation::FormField::parse_answer`]).
    fn elicit(&self, _request: ElicitationRequest) -> BoxFuture<'static, Option<ElicitationAnswer>> {
        Box::pin(std::future::ready(None))
    }

    /// \[beyond\] The editor the file tools of session `session` (working directory `cwd`)
    /// read and write through, when the face's client holds the files. `None` (the default):
    /// the disk.
    fn files(&self, _session: &str, _cwd: &Path) -> Option<Arc<dyn crate::EditorFiles>> {
        None
    }

    /// Whether the face wants every turn's `odek.event/v1` stream as [`Update::Event`]s.
    fn wants_events(&self) -> bool {
        false
    }
}

/// How a host is set up.
#[derive(Debug, Clone)]
pub struct HostSettings {
    /// The directory holding `.odek` (normally `$HOME`).
    pub home: PathBuf,
    /// The environment every session's config is resolved against.
    pub env: BTreeMap<String, String>,
    /// The face's flags, above every session's config files.
    pub overrides: Overrides,
    /// Sessions open at once.
    pub max_sessions: usize,
    /// Turns running at once; a further turn waits for one to end.
    pub max_running_turns: usize,
}

impl HostSettings {
    /// The process's home and environment, with the face's `overrides` and the default bounds.
    pub fn from_process(overrides: Overrides) -> Result<HostSettings, RuntimeError> {
        let sources = ConfigSources::from_process()?;
        Ok(HostSettings {
            home: sources.home,
            env: sources.env,
            overrides,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_running_turns: DEFAULT_MAX_RUNNING_TURNS,
        })
    }
}

/// Why the host refused.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// No open session has this id.
    #[error("session {0} is not open")]
    UnknownSession(String),
    /// A turn of this session is running.
    #[error("session {0} is already running a turn")]
    Busy(String),
    /// The bound on open sessions is reached and every open session is running a turn.
    #[error("too many open sessions (limit {0}), all of them running a turn; close one first")]
    TooManySessions(usize),
    /// The working directory is not an absolute path to a directory.
    #[error("working directory {0}: {1}")]
    Cwd(String, String),
    /// The prompt is larger than [`MAX_PROMPT_BYTES`].
    #[error("prompt is {0} bytes; the limit is {MAX_PROMPT_BYTES}")]
    PromptTooLarge(usize),
    /// The session is open in this host already.
    #[error("session {0} is already open")]
    AlreadyOpen(String),
    /// A client asked for a budget above the operator's.
    #[error("limits.{name} {asked} is above the operator's ({operator}); a client may only lower a budget")]
    AboveOperator {
        /// The budget.
        name: &'static str,
        /// What was asked.
        asked: String,
        /// The operator's (`0`: none).
        operator: String,
    },
    /// A client asked for a budget of zero or less (the config's "none").
    #[error("limits.{0} must be a positive number")]
    NotPositive(&'static str),
    /// Loading, starting or running failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl From<SessionError> for HostError {
    fn from(error: SessionError) -> HostError {
        HostError::Runtime(error.into())
    }
}

/// How the tool calls of a session are approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The configured danger policy (`dangerous`): what it asks about is asked.
    #[default]
    Policy,
    /// Every edit and every command that is not read-only is asked about first.
    Ask,
    /// Reading and searching only: anything that would change something is refused.
    ReadOnly,
}

impl Mode {
    /// Every mode, in the order a face lists them.
    pub const ALL: [Mode; 3] = [Mode::Policy, Mode::Ask, Mode::ReadOnly];

    /// The mode's id.
    pub fn id(self) -> &'static str {
        match self {
            Mode::Policy => "default",
            Mode::Ask => "ask",
            Mode::ReadOnly => "read-only",
        }
    }

    /// Its name for people.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Policy => "Default",
            Mode::Ask => "Ask first",
            Mode::ReadOnly => "Read-only",
        }
    }

    /// One line saying what it does.
    pub fn description(self) -> &'static str {
        match self {
            Mode::Policy => "odek's danger policy decides; risky operations are asked about",
            Mode::Ask => "every edit and every command that could change something is asked about first",
            Mode::ReadOnly => "reading and searching only; edits and commands that change anything are refused",
        }
    }

    /// The mode with this id.
    pub fn parse(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|mode| mode.id() == id)
    }

    /// How the session's file records it: its id, or nothing for the configured policy.
    fn recorded(self) -> &'static str {
        if self == Mode::Policy { "" } else { self.id() }
    }

    /// The mode a session's file records; a value this version does not know is the
    /// configured policy, with a warning.
    fn from_record(recorded: &str, warn: &dyn Fn(&str)) -> Mode {
        if recorded.is_empty() {
            return Mode::Policy;
        }
        Mode::parse(recorded).unwrap_or_else(|| {
            warn(&format!("the session records an unknown mode {recorded:?}; it runs under the configured policy"));
            Mode::Policy
        })
    }

    /// What this mode changes of a session's turns (`None`: nothing, the configured policy).
    fn restrictions(self, configured: &PolicySettings) -> Option<Restrictions> {
        let mut policy = configured.clone();
        match self {
            Mode::Policy => None,
            Mode::Ask => {
                // Stricter only: a class the configured policy denies (explicitly or by its
                // defaults) stays denied; every other class but `safe` is asked about.
                let effective = DangerPolicy::new(configured.clone());
                policy.allowlist.clear();
                for class in DangerClass::ALL.into_iter().filter(|class| *class != DangerClass::Safe) {
                    let action =
                        if effective.action_for(class) == Action::Deny { Action::Deny } else { Action::Prompt };
                    policy.classes.insert(class, action);
                }
                Some(Restrictions { policy: Some(policy), ask_unclassified: true, read_only: false })
            }
            Mode::ReadOnly => {
                policy.allowlist.clear();
                policy.max_risk = Some(DangerClass::Safe);
                Some(Restrictions { policy: Some(policy), ask_unclassified: false, read_only: true })
            }
        }
    }
}

/// What a face's client may choose for a session it opens, over the face's flags.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// The model (`None`: the configured one for a new session, the one it started with for a
    /// loaded one).
    pub model: Option<String>,
    /// Planning on or off.
    pub planning: Option<bool>,
    /// Budgets, each at most the operator's (the project-config rule: a client only lowers).
    pub limits: LowerLimits,
    /// The JSON Schema (2020-12) every final answer must match (`--output-schema`, inline).
    pub output_schema: Option<serde_json::Value>,
    /// Check commands every final answer must pass, after the config's (`--check`); they run
    /// as shell commands under the session's danger policy.
    pub checks: Vec<String>,
}

impl SessionOptions {
    /// The final-answer gates the options add to `runtime`'s.
    fn gate_answers(&self, runtime: &mut Runtime) -> Result<(), HostError> {
        let finish = &mut runtime.settings_mut().finish;
        if let Some(schema) = &self.output_schema {
            let compiled = odek_agent::finish::output_schema::compile_schema_from(schema, "output_schema")
                .map_err(RuntimeError::from)?;
            finish.output_schema = Some(Arc::new(compiled));
        }
        if !self.checks.is_empty() {
            finish.checks = crate::config::merge_checks(finish.checks.iter().chain(&self.checks));
        }
        Ok(())
    }
}

/// Budgets a client asks for; `None` keeps the operator's. A value above the operator's is
/// refused, never silently capped (the client learns which); a budget the operator left
/// open (`0`, none) takes any positive value.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LowerLimits {
    /// Iterations of a turn.
    pub max_iterations: Option<u32>,
    /// Seconds of a turn.
    pub max_runtime_seconds: Option<u64>,
    /// Tool calls of the session.
    pub max_tool_calls: Option<u64>,
    /// Input tokens of the session.
    pub max_input_tokens: Option<u64>,
    /// Output tokens of the session.
    pub max_output_tokens: Option<u64>,
    /// Estimated cost of the session, USD.
    pub max_cost_usd: Option<f64>,
}

impl LowerLimits {
    /// The budgets `config` sets (`None`: no limit).
    fn in_force(config: &crate::config::Config) -> LowerLimits {
        let positive = |value: u64| (value > 0).then_some(value);
        LowerLimits {
            max_iterations: Some(config.core.max_iterations),
            max_runtime_seconds: positive(config.limits.max_runtime_seconds),
            max_tool_calls: positive(config.limits.max_tool_calls),
            max_input_tokens: positive(config.limits.max_input_tokens),
            max_output_tokens: positive(config.limits.max_output_tokens),
            max_cost_usd: (config.limits.max_cost_usd > 0.0).then_some(config.limits.max_cost_usd),
        }
    }

    /// Applies the asked budgets to `runtime`, refusing one above the operator's. A budget
    /// of `0` is "none" in the config, so any positive value lowers it; asking `0` (or less)
    /// is refused, as it would lift the operator's.
    fn lower(&self, runtime: &mut Runtime) -> Result<(), HostError> {
        let config = &mut runtime.settings_mut().config;
        let iterations = u64::from(config.core.max_iterations);
        if let Some(asked) = self.max_iterations {
            config.core.max_iterations = u32::try_from(lowered("max_iterations", u64::from(asked), iterations)?)
                .unwrap_or(config.core.max_iterations);
        }
        let limits = &mut config.limits;
        for (name, asked, operator) in [
            ("max_runtime_seconds", self.max_runtime_seconds, &mut limits.max_runtime_seconds),
            ("max_tool_calls", self.max_tool_calls, &mut limits.max_tool_calls),
            ("max_input_tokens", self.max_input_tokens, &mut limits.max_input_tokens),
            ("max_output_tokens", self.max_output_tokens, &mut limits.max_output_tokens),
        ] {
            if let Some(asked) = asked {
                *operator = lowered(name, asked, *operator)?;
            }
        }
        if let Some(asked) = self.max_cost_usd {
            let operator = limits.max_cost_usd;
            if !(asked.is_finite() && asked > 0.0) {
                return Err(HostError::NotPositive("max_cost_usd"));
            }
            if operator > 0.0 && asked > operator {
                return Err(HostError::AboveOperator {
                    name: "max_cost_usd",
                    asked: asked.to_string(),
                    operator: operator.to_string(),
                });
            }
            limits.max_cost_usd = asked;
        }
        Ok(())
    }
}

/// `asked` when it lowers `operator` (`0`: no limit), else the refusal naming `name`.
fn lowered(name: &'static str, asked: u64, operator: u64) -> Result<u64, HostError> {
    if asked == 0 {
        return Err(HostError::NotPositive(name));
    }
    if operator > 0 && asked > operator {
        return Err(HostError::AboveOperator { name, asked: asked.to_string(), operator: operator.to_string() });
    }
    Ok(asked)
}

/// A subscriber that shows nothing (a runtime built only to read its settings).
struct Silent;

impl crate::Subscriber for Silent {
    fn warning(&self, _text: &str) {}
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    /// odek's outcome class (`success`, `budget_exceeded`, `cancelled`, …).
    pub outcome: Outcome,
    /// Why it stopped, in the words editors use.
    pub stop: StopReason,
    /// The final answer (empty unless the turn succeeded).
    pub answer: String,
    /// The turn's usage.
    pub usage: Usage,
    /// The failure's text when the turn did not succeed.
    pub error: Option<String>,
    /// For a budget stop: the limit that ran out (`max_tokens`, `max_iterations`, …).
    pub budget: Option<String>,
}

/// Why a turn stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered (or the turn failed in a way a face reports as an ended turn).
    EndTurn,
    /// A token budget ran out.
    MaxTokens,
    /// Another budget (iterations, tool calls, cost, runtime) ran out.
    MaxTurnRequests,
    /// The turn was cancelled.
    Cancelled,
}

/// One open session.
struct Hosted {
    /// `None` once the session is closed (taken out to stop its servers).
    session: tokio::sync::Mutex<Option<Session<'static>>>,
    watch: Arc<Watch>,
    asking: Arc<Asking>,
    /// The running turn's cancellation, while one runs.
    running: Mutex<Option<CancellationToken>>,
    configured_policy: PolicySettings,
    /// The session's mode, applied when the next turn starts (never waiting on a turn) and
    /// recorded in its file.
    mode: Mutex<Mode>,
    /// When the session was opened or last given a turn: the longest idle one makes room at
    /// the bound.
    last_used: Mutex<std::time::Instant>,
    /// Held while the session is open: no other process appends to it meanwhile.
    _lock: SessionLock,
}

/// A turn of a session claimed by [`Host::begin_turn`]; dropping it frees the session.
pub struct TurnClaim {
    hosted: Arc<Hosted>,
    cancel: CancellationToken,
}

impl Drop for TurnClaim {
    fn drop(&mut self) {
        *self.hosted.running.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// What [`Host::create`] and [`Host::load`] return.
#[derive(Debug, Clone)]
pub struct Opened {
    /// The session's id (its file in the session store).
    pub id: String,
    /// A loaded session's history as updates (empty for a new one).
    pub history: Vec<Update>,
    /// The working directory, canonical.
    pub cwd: PathBuf,
    /// The session's mode: the one its file records for a loaded session.
    pub mode: Mode,
    /// The budgets its turns run under: the operator's, lowered by the client's options.
    pub limits: LowerLimits,
    /// Its model's prices, for a face's estimate of what the tokens cost (no prices: none).
    pub prices: BudgetLimits,
}

/// The sessions of one process.
pub struct Host {
    settings: HostSettings,
    face: Arc<dyn HostFace>,
    sessions: Mutex<HashMap<String, Arc<Hosted>>>,
    /// Ids being opened, counted against the bound before they are in `sessions`.
    opening: Mutex<HashSet<String>>,
    turns: Arc<Semaphore>,
}

impl Host {
    /// A host whose sessions report to `face`.
    pub fn new(settings: HostSettings, face: Arc<dyn HostFace>) -> Host {
        let turns = Arc::new(Semaphore::new(settings.max_running_turns.max(1)));
        Host { settings, face, sessions: Mutex::new(HashMap::new()), opening: Mutex::new(HashSet::new()), turns }
    }

    /// The ids of the open sessions.
    pub fn open_sessions(&self) -> Vec<String> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).keys().cloned().collect()
    }

    /// A new session in `cwd`, saved as it opens and after every step. `servers` are the MCP servers the
    /// face's client offered (name → entry in the config files' format): project servers, with
    /// the project's rules and approvals.
    pub async fn create(&self, cwd: PathBuf, servers: ClientServers) -> Result<Opened, HostError> {
        self.create_with(cwd, servers, &SessionOptions::default()).await
    }

    /// [`Host::create`] with the client's `options` (a model, planning, lower budgets).
    pub async fn create_with(
        &self,
        cwd: PathBuf,
        servers: ClientServers,
        options: &SessionOptions,
    ) -> Result<Opened, HostError> {
        let id = SessionId::mint()?;
        self.open(id, cwd, servers, false, options).await
    }

    /// The saved session `id`, continued in `cwd` with the model and sandbox it was started with
    /// (and `servers` as [`Host::create`] takes them).
    pub async fn load(&self, id: &str, cwd: PathBuf, servers: ClientServers) -> Result<Opened, HostError> {
        self.load_with(id, cwd, servers, &SessionOptions::default()).await
    }

    /// [`Host::load`] with the client's `options` (a model, planning, lower budgets).
    pub async fn load_with(
        &self,
        id: &str,
        cwd: PathBuf,
        servers: ClientServers,
        options: &SessionOptions,
    ) -> Result<Opened, HostError> {
        let id = SessionId::parse(id)?;
        if self.sessions.lock().unwrap_or_else(PoisonError::into_inner).contains_key(id.as_str()) {
            return Err(HostError::AlreadyOpen(id.as_str().to_owned()));
        }
        self.open(id, cwd, servers, true, options).await
    }

    async fn open(
        &self,
        id: SessionId,
        cwd: PathBuf,
        servers: ClientServers,
        existing: bool,
        options: &SessionOptions,
    ) -> Result<Opened, HostError> {
        let cwd = checked_cwd(cwd)?;
        let key = id.as_str().to_owned();
        let evicted = {
            let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let mut opening = self.opening.lock().unwrap_or_else(PoisonError::into_inner);
            // At the bound, the session idle the longest makes room (saved as ever; it can be
            // loaded again); with every session running a turn, the new one is refused.
            let evicted = if sessions.len() + opening.len() >= self.settings.max_sessions {
                let idle = sessions
                    .iter()
                    .filter(|(_, hosted)| hosted.running.lock().unwrap_or_else(PoisonError::into_inner).is_none())
                    .min_by_key(|(_, hosted)| *hosted.last_used.lock().unwrap_or_else(PoisonError::into_inner))
                    .map(|(id, _)| id.clone());
                let Some(idle) = idle else { return Err(HostError::TooManySessions(self.settings.max_sessions)) };
                sessions.remove(&idle)
            } else {
                None
            };
            if !opening.insert(key.clone()) {
                return Err(HostError::AlreadyOpen(key));
            }
            evicted
        };
        if let Some(evicted) = evicted {
            shut(evicted).await;
        }
        let opened = self.assemble(id, cwd, &servers, existing, options).await;
        self.opening.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
        let (hosted, opened) = opened?;
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).insert(key, Arc::new(hosted));
        Ok(opened)
    }

    /// The runtime of `cwd` and the session on it, and what the face learns of it.
    async fn assemble(
        &self,
        id: SessionId,
        cwd: PathBuf,
        servers: &ClientServers,
        existing: bool,
        options: &SessionOptions,
    ) -> Result<(Hosted, Opened), HostError> {
        let sources =
            ConfigSources { home: self.settings.home.clone(), cwd: cwd.clone(), env: self.settings.env.clone() };
        let asking = Arc::new(Asking {
            face: Arc::clone(&self.face),
            session: id.as_str().to_owned(),
            timeout_seconds: AtomicU64::new(u64::from(DEFAULT_APPROVAL_TIMEOUT_SECONDS)),
            always: Mutex::new(HashSet::new()),
            batch: Mutex::new(Vec::new()),
            cancel: Mutex::new(CancellationToken::new()),
            elicitation: Mutex::new(odek_mcp::elicitation::ElicitationPolicy::default()),
        });
        let watch = Arc::new(Watch::new(Arc::clone(&asking), cwd.clone(), tokio::runtime::Handle::current()));
        let subscriber: Arc<dyn crate::Subscriber> = watch.clone();
        let warn = |text: &str| subscriber.warning(text);
        let setup = if servers.is_empty() {
            Setup::load(sources, &warn)
        } else {
            Setup::load_with_client_servers(sources, servers, &warn)
        };
        let setup = setup.map_err(RuntimeError::from)?;
        let mut overrides = self.settings.overrides.clone();
        if options.model.is_some() {
            overrides.config.model.clone_from(&options.model);
        }
        if options.planning.is_some() {
            overrides.config.planning = options.planning;
        }
        let mut runtime = Runtime::new(setup, &overrides, Arc::clone(&subscriber))?;
        options.limits.lower(&mut runtime)?;
        options.gate_answers(&mut runtime)?;
        let (record, lock, history, replayed) = if existing {
            let store = runtime.session_store()?;
            let lock = store.lock(&id)?;
            let record = store.load(&id)?;
            runtime.adopt_session(&record)?;
            let (history, replayed) = (safe_state(&record.messages), replay(&record.messages, &cwd));
            (record, lock, history, replayed)
        } else {
            let (record, lock) = runtime.session_record(id)?;
            (record, lock, vec![Message::system(runtime.system_prompt(None))], Vec::new())
        };
        let timeout = u64::from(runtime.settings().config.core.approval_timeout_seconds);
        asking.timeout_seconds.store(timeout, Ordering::Relaxed);
        *asking.elicitation.lock().unwrap_or_else(PoisonError::into_inner) =
            runtime.settings().config.elicitation.policy;
        let configured_policy = runtime.settings().policy.clone();
        let mode = Mode::from_record(&record.mode, &warn);
        let mut session = Arc::new(runtime).into_session(history, Some(record))?;
        if let Some(model) = options.model.as_deref().filter(|_| existing) {
            // Named by the client: over the model the loaded session started with.
            session.set_model(model);
        }
        if !existing {
            // Saved at once: a session opened and not yet prompted can be loaded again.
            session.save()?;
        }
        session.set_editor(self.face.files(&asking.session, &cwd));
        if let Some(board) = session.plan_board() {
            let _ = watch.plan.set(board);
        }
        let opened = Opened {
            id: asking.session.clone(),
            history: replayed,
            cwd,
            mode,
            limits: LowerLimits::in_force(&session.runtime().settings().config),
            // The next turn's: its model's prices, as the turn's budget will have them.
            prices: session.limits(),
        };
        let hosted = Hosted {
            session: tokio::sync::Mutex::new(Some(session)),
            watch,
            asking,
            running: Mutex::new(None),
            configured_policy,
            mode: Mutex::new(mode),
            last_used: Mutex::new(std::time::Instant::now()),
            _lock: lock,
        };
        Ok((hosted, opened))
    }

    fn hosted(&self, id: &str) -> Result<Arc<Hosted>, HostError> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| HostError::UnknownSession(id.to_owned()))
    }

    /// Runs one turn of session `id` on `text` (with its `@file` references), to its end.
    /// Refused while another turn of the session runs; waits while the host's bound on
    /// running turns is reached.
    pub async fn prompt(&self, id: &str, text: &str) -> Result<TurnEnd, HostError> {
        let turn = self.begin_turn(id)?;
        self.run(turn, text, &[]).await
    }

    /// Claims session `id` for a turn, now: from here a [`Host::cancel`] stops it, and another
    /// turn of the session is refused. A face that runs the turn on a task of its own claims it
    /// before spawning, so a cancel that follows the prompt is never lost. Dropping the claim
    /// frees the session.
    pub fn begin_turn(&self, id: &str) -> Result<TurnClaim, HostError> {
        let hosted = self.hosted(id)?;
        let cancel = CancellationToken::new();
        {
            let mut running = hosted.running.lock().unwrap_or_else(PoisonError::into_inner);
            if running.is_some() {
                return Err(HostError::Busy(id.to_owned()));
            }
            *running = Some(cancel.clone());
        }
        *hosted.asking.cancel.lock().unwrap_or_else(PoisonError::into_inner) = cancel.clone();
        *hosted.last_used.lock().unwrap_or_else(PoisonError::into_inner) = std::time::Instant::now();
        Ok(TurnClaim { hosted, cancel })
    }

    /// Runs the claimed turn on `text` (with its `@file` references) and `context` — documents
    /// the face's client attached, `(name, text)`, each put in the message as an untrusted
    /// attachment like an `@file` — to its end; waits while the host's bound on running turns
    /// is reached.
    pub async fn run(&self, turn: TurnClaim, text: &str, context: &[(String, String)]) -> Result<TurnEnd, HostError> {
        self.run_as(turn, text, context, None).await
    }

    /// [`Host::run`], the turn's events carrying `run_id` (32 lowercase hex characters, as
    /// [`new_run_id`] mints): a face that names the run before it starts.
    pub async fn run_as(
        &self,
        turn: TurnClaim,
        text: &str,
        context: &[(String, String)],
        run_id: Option<&str>,
    ) -> Result<TurnEnd, HostError> {
        let size = text.len() + context.iter().map(|(name, body)| name.len() + body.len()).sum::<usize>();
        if size > MAX_PROMPT_BYTES {
            return Err(HostError::PromptTooLarge(size));
        }
        self.run_turn(&turn.hosted, text, context, &turn.cancel, run_id).await
    }

    async fn run_turn(
        &self,
        hosted: &Hosted,
        text: &str,
        context: &[(String, String)],
        cancel: &CancellationToken,
        run_id: Option<&str>,
    ) -> Result<TurnEnd, HostError> {
        let permit = tokio::select! {
            permit = Arc::clone(&self.turns).acquire_owned() => permit.ok(),
            () = cancel.cancelled() => return Ok(ended(Outcome::Cancelled, StopReason::Cancelled, Usage::default())),
        };
        let mut guard = hosted.session.lock().await;
        let Some(session) = guard.as_mut() else {
            return Err(HostError::UnknownSession(hosted.asking.session.clone()));
        };
        let mut message = session.runtime().user_message(text, &[])?;
        for (name, body) in context {
            message.push_str("\n\n");
            message.push_str(&odek_agent::prompt::context_block(name, body));
        }
        let mode = *hosted.mode.lock().unwrap_or_else(PoisonError::into_inner);
        session.set_restrictions(mode.restrictions(&hosted.configured_policy));
        hosted.watch.streamed.store(false, Ordering::Relaxed);
        let spent_before = session.spent().usage;
        let control =
            crate::TurnControl { cancel: cancel.clone(), run_id: run_id.map(str::to_owned), ..Default::default() };
        let outcome = session.turn_with(message, &control).await;
        hosted.watch.flush();
        drop(permit);
        // A mode set while the turn ran is recorded now.
        let mode = *hosted.mode.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(error) = session.record_mode(mode.recorded()) {
            crate::Subscriber::warning(hosted.watch.as_ref(), &format!("the session's mode was not saved: {error}"));
        }
        Ok(match outcome {
            Ok(turn) => {
                let answer = redact(&turn.answer).into_owned();
                // An answer that was not streamed is shown whole.
                if !hosted.watch.streamed.load(Ordering::Relaxed) && !answer.is_empty() {
                    self.face.update(&hosted.asking.session, Update::Text(answer.clone()));
                }
                TurnEnd { answer, ..ended(Outcome::Success, StopReason::EndTurn, turn.usage) }
            }
            Err(error) => {
                let spent = session.spent().usage;
                let usage = Usage::new(
                    spent.input_tokens.saturating_sub(spent_before.input_tokens),
                    spent.output_tokens.saturating_sub(spent_before.output_tokens),
                );
                turn_failed(&error, usage, cancel.is_cancelled())
            }
        })
    }

    /// Cancels the running turn of session `id`, if one runs: its tools, MCP calls and
    /// sub-agents stop, and the turn ends [`StopReason::Cancelled`] with the session saved.
    pub fn cancel(&self, id: &str) -> Result<(), HostError> {
        let hosted = self.hosted(id)?;
        if let Some(cancel) = hosted.running.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            cancel.cancel();
        }
        Ok(())
    }

    /// The session's plan as the model sees it (`None`: planning off, or no plan yet).
    pub fn plan(&self, id: &str) -> Result<Option<String>, HostError> {
        let hosted = self.hosted(id)?;
        let guard = hosted.session.try_lock().map_err(|_| HostError::Busy(id.to_owned()))?;
        let session = guard.as_ref().ok_or_else(|| HostError::UnknownSession(id.to_owned()))?;
        Ok(session.plan())
    }

    /// What the session's turns spent, and the budget limits of its next turn.
    pub fn spent(&self, id: &str) -> Result<(crate::Spent, crate::BudgetLimits), HostError> {
        let hosted = self.hosted(id)?;
        let guard = hosted.session.try_lock().map_err(|_| HostError::Busy(id.to_owned()))?;
        let session = guard.as_ref().ok_or_else(|| HostError::UnknownSession(id.to_owned()))?;
        Ok((session.spent(), session.limits()))
    }

    /// The model of the session's next turns: `model` when given (and recorded in its file).
    pub fn model(&self, id: &str, model: Option<&str>) -> Result<String, HostError> {
        let hosted = self.hosted(id)?;
        let mut guard = hosted.session.try_lock().map_err(|_| HostError::Busy(id.to_owned()))?;
        let session = guard.as_mut().ok_or_else(|| HostError::UnknownSession(id.to_owned()))?;
        if let Some(model) = model {
            session.set_model(model);
        }
        Ok(session.model().to_owned())
    }

    /// Sets how session `id`'s tool calls are approved, from its next turn on (a running turn
    /// keeps the mode it started with).
    pub fn set_mode(&self, id: &str, mode: Mode) -> Result<(), HostError> {
        let hosted = self.hosted(id)?;
        *hosted.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
        // Recorded now when the session is idle; a running turn records it when it ends.
        if let Ok(mut guard) = hosted.session.try_lock()
            && let Some(session) = guard.as_mut()
        {
            session.record_mode(mode.recorded())?;
        }
        Ok(())
    }

    /// The session store of the host's home (`~/.odek/sessions`), deleting into its artifacts.
    pub fn store(&self) -> Result<odek_agent::session::SessionStore, HostError> {
        Ok(crate::setup::session_store_in(&self.settings.home.join(".odek"))?)
    }

    /// The operator's budgets for a session in `cwd` (its config files, the environment, the
    /// face's flags), as a client may lower them: `None` where there is none.
    pub fn limits_of(&self, cwd: PathBuf) -> Result<LowerLimits, HostError> {
        let cwd = checked_cwd(cwd)?;
        let sources = ConfigSources { home: self.settings.home.clone(), cwd, env: self.settings.env.clone() };
        let setup = Setup::load(sources, &|_: &str| {}).map_err(RuntimeError::from)?;
        let runtime = Runtime::new(setup, &self.settings.overrides, Arc::new(Silent))?;
        Ok(LowerLimits::in_force(&runtime.settings().config))
    }

    /// Whether session `id` is open and running a turn.
    pub fn is_running(&self, id: &str) -> bool {
        self.hosted(id).is_ok_and(|hosted| hosted.running.lock().unwrap_or_else(PoisonError::into_inner).is_some())
    }

    /// Forgets what session `id` was told "allow always" for: a face whose approvals hold for
    /// one turn calls it as the turn starts.
    pub fn forget_always(&self, id: &str) -> Result<(), HostError> {
        self.hosted(id)?.asking.always.lock().unwrap_or_else(PoisonError::into_inner).clear();
        Ok(())
    }

    /// Closes session `id`: cancels its turn, stops its MCP servers within the shutdown drain.
    pub async fn close(&self, id: &str) -> Result<(), HostError> {
        self.cancel(id)?;
        let Some(hosted) = self.sessions.lock().unwrap_or_else(PoisonError::into_inner).remove(id) else {
            return Err(HostError::UnknownSession(id.to_owned()));
        };
        shut(hosted).await;
        Ok(())
    }

    /// Closes every session (a face whose client went away): turns are cancelled, sessions
    /// saved, servers stopped.
    pub async fn close_all(&self) {
        let all: Vec<Arc<Hosted>> =
            self.sessions.lock().unwrap_or_else(PoisonError::into_inner).drain().map(|(_, hosted)| hosted).collect();
        for hosted in &all {
            if let Some(cancel) = hosted.running.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
                cancel.cancel();
            }
        }
        let mut shutting = tokio::task::JoinSet::new();
        for hosted in all {
            shutting.spawn(shut(hosted));
        }
        while shutting.join_next().await.is_some() {}
    }
}

/// Waits for the session's turn to wind down, then stops its servers.
async fn shut(hosted: Arc<Hosted>) {
    let session = hosted.session.lock().await.take();
    if let Some(session) = session {
        session.close().await;
    }
}

fn ended(outcome: Outcome, stop: StopReason, usage: Usage) -> TurnEnd {
    TurnEnd { outcome, stop, answer: String::new(), usage, error: None, budget: None }
}

/// A failed turn as its end: a budget stop names its limit, a cancel is a cancel — whatever
/// error the cancel surfaced as (a server's approval it cut short, say).
fn turn_failed(error: &RuntimeError, usage: Usage, cancelled: bool) -> TurnEnd {
    if cancelled {
        return ended(Outcome::Cancelled, StopReason::Cancelled, usage);
    }
    let outcome = error.outcome();
    let (stop, budget) = match error {
        RuntimeError::Run(RunError::Budget(exceeded)) => {
            let name = exceeded.limit_name.as_str();
            let stop = if name.contains("token") { StopReason::MaxTokens } else { StopReason::MaxTurnRequests };
            (stop, Some(name.to_owned()))
        }
        RuntimeError::Run(RunError::MaxIterations(_)) => (StopReason::MaxTurnRequests, None),
        _ if outcome == Outcome::Cancelled => (StopReason::Cancelled, None),
        _ => (StopReason::EndTurn, None),
    };
    TurnEnd { error: Some(redact(&error.to_string()).into_owned()), budget, ..ended(outcome, stop, usage) }
}

/// `cwd` made canonical; it must be an absolute path to a directory.
fn checked_cwd(cwd: PathBuf) -> Result<PathBuf, HostError> {
    let shown = cwd.display().to_string();
    if !cwd.is_absolute() {
        return Err(HostError::Cwd(shown, "not an absolute path".into()));
    }
    let canonical = cwd.canonicalize().map_err(|error| HostError::Cwd(shown.clone(), error.to_string()))?;
    if !canonical.is_dir() {
        return Err(HostError::Cwd(shown, "not a directory".into()));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_mode_reads_back_and_an_unknown_one_warns() {
        let warned = Mutex::new(Vec::new());
        let warn = |text: &str| warned.lock().unwrap().push(text.to_owned());
        for mode in Mode::ALL {
            assert_eq!(Mode::from_record(mode.recorded(), &warn), mode);
        }
        assert!(warned.lock().unwrap().is_empty());
        assert_eq!(Mode::from_record("yolo", &warn), Mode::Policy);
        assert_eq!(
            warned.lock().unwrap().as_slice(),
            ["the session records an unknown mode \"yolo\"; it runs under the configured policy"]
        );
    }

    #[test]
    fn ask_first_only_tightens_the_policy_red() {
        let configured = PolicySettings::default();
        let restrictions = Mode::Ask.restrictions(&configured).unwrap();
        let ask = DangerPolicy::new(restrictions.policy.unwrap());
        let base = DangerPolicy::new(configured);
        for class in DangerClass::ALL {
            let (before, after) = (base.action_for(class), ask.action_for(class));
            if before == Action::Deny {
                assert_eq!(after, Action::Deny, "{class} was denied and became {after:?}");
            } else if class != DangerClass::Safe {
                assert_eq!(after, Action::Prompt, "{class}");
            }
        }
        assert!(restrictions.ask_unclassified);
        let read_only = Mode::ReadOnly.restrictions(&PolicySettings::default()).unwrap();
        assert!(read_only.read_only && read_only.policy.unwrap().max_risk == Some(DangerClass::Safe));
        assert!(Mode::Policy.restrictions(&PolicySettings::default()).is_none());
    }
}
