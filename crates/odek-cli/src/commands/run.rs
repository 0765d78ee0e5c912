//! `odek run` and `odek continue`: resolve the effective settings (config files, `ODEK_*`,
//! flags), build the provider, the tools and the system prompt, start the MCP servers, run the
//! loop, persist the session, print the final answer on stdout (spec `loop-and-sessions.md`,
//! `config.md` §4, §10–§11).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use odek_agent::budget::Budget;
use odek_agent::events::{EventEmitter, EventStream, Fanout, RunId, open_sink};
use odek_agent::observer::LoopObserver;
use odek_agent::plan::{PlanBoard, PlanCaps};
use odek_agent::prompt::{PromptInputs, compose_system_prompt, expand_at_references, read_ctx_file, user_message};
use odek_agent::run::context_window;
use odek_agent::run::{Agent, BatchApprover, Checkpoint, LoopSettings, Saved, ToolSet};
use odek_agent::session::{
    ExternalRef, Session, SessionError, SessionId, SessionStore, parse_external_ref_spec, safe_state,
};
use odek_agent::subagent::artifact_read::ArtifactReadTool;
use odek_agent::subagent::artifacts::shared_registry;
use odek_agent::subagent::delegate::DelegateTool;
use odek_agent::subagent::task::TaskReplay;
use odek_agent::tool::ToolContext;
use odek_contract::redaction::redact;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
use odek_danger::DangerPolicy;
use odek_llm::{Message, Provider, ReplayScript, Thinking, Usage};
use odek_mcp::{McpEvent, McpObserver, StderrObserver};

use super::agent_parts::{REPLAY_PROVIDER, budget_limits, build_provider, builtin_settings, delegate_settings};
use super::setup::{Setup, start_hub};
use crate::cli::{ContinueArgs, LoopArgs, RunArgs};
use crate::config::{CliOverrides, resolve_effective};
use crate::interrupt::cancel_on_stop_signals;
use crate::outcome::CommandError;
use crate::terminal::batch_gate::TerminalBatchGate;
use crate::terminal::status::{StatusDisplay, StatusMode};
use crate::terminal::{colour_allowed, print_warning, print_warnings};

pub async fn run(args: RunArgs) -> Result<(), CommandError> {
    let setup = Setup::load()?;
    let effective = Effective::resolve(&setup, &args.common, Some(&args))?;
    let task = task_text(&args.common.task).ok_or_else(|| CommandError::Fatal("a task is required".into()))?;
    let refs = parse_external_refs(&args.common.external_refs)?;
    let mut lock = None;
    let session = if args.session {
        let id = SessionId::mint()?;
        lock = Some(session_store(&setup)?.lock(&id)?);
        let mut session = Session::new(id);
        let core = &effective.config.core;
        session.model.clone_from(&core.model);
        session.provider.clone_from(&core.provider);
        session.base_url.clone_from(&core.base_url);
        session.add_external_refs(refs)?;
        Some(session)
    } else {
        if !refs.is_empty() {
            print_warning("--external-ref is only persisted with --session; ignoring");
        }
        None
    };
    let messages = vec![
        Message::system(effective.system_prompt(&setup, args.system.as_deref())),
        Message::user(Effective::user_message(&setup, &task, &args.common.ctx)?),
    ];
    let outcome = execute(setup, effective, messages, session).await;
    drop(lock);
    outcome
}

pub async fn continue_session(args: ContinueArgs) -> Result<(), CommandError> {
    let setup = Setup::load()?;
    let store = session_store(&setup)?;
    let id = match &args.id {
        Some(id) => SessionId::parse(id)?,
        None => store
            .latest()?
            .map(|session| session.id)
            .ok_or_else(|| CommandError::Verbatim("odek continue: no session to continue".into()))?,
    };
    // Locked before it is read: what this run appends to is the latest saved state, and no other
    // process appends to it meanwhile (a second `continue` refuses instead of losing a turn).
    let lock = store.lock(&id)?;
    let mut session = store.load(&id).inspect_err(|err| {
        if matches!(err, SessionError::NotFound { .. }) {
            // No session behind the id: its lock file would only be litter.
            let _ = std::fs::remove_file(lock.path());
        }
    })?;
    let Some(task) = task_text(&args.common.task) else {
        return Err(CommandError::Verbatim("odek continue: a task is required for continue".into()));
    };
    let mut effective = Effective::resolve(&setup, &args.common, None)?;
    let core = &mut effective.config.core;
    core.model.clone_from(&session.model);
    core.provider.clone_from(&session.provider);
    if !session.base_url.is_empty() {
        core.base_url.clone_from(&session.base_url);
    }
    session.add_external_refs(parse_external_refs(&args.common.external_refs)?)?;
    let mut messages = safe_state(&session.messages);
    messages.push(Message::user(Effective::user_message(&setup, &task, &args.common.ctx)?));
    let outcome = execute(setup, effective, messages, Some(session)).await;
    drop(lock);
    outcome
}

fn task_text(words: &[String]) -> Option<String> {
    let task = words.join(" ");
    (!task.trim().is_empty()).then_some(task)
}

fn parse_external_refs(specs: &[String]) -> Result<Vec<ExternalRef>, CommandError> {
    specs.iter().map(|spec| parse_external_ref_spec(spec).map_err(CommandError::from)).collect()
}

fn session_store(setup: &Setup) -> Result<SessionStore, CommandError> {
    let odek_dir = setup.sources.odek_dir();
    Ok(SessionStore::new(odek_dir.join("sessions"))?.with_artifacts_dir(odek_dir.join("artifacts")))
}

/// The `--replay` script, shared with `delegate_tasks`.
type ReplayScriptShare = Option<Arc<TaskReplay>>;

/// The settings of this run after every layer.
#[derive(Clone)]
struct Effective {
    config: crate::config::Config,
    api_key: Option<String>,
    no_color: bool,
    thinking: Thinking,
    stream: bool,
    replay: Option<PathBuf>,
    record: Option<PathBuf>,
    quiet: bool,
    events_jsonl: Option<String>,
    events_include_args: bool,
    json: bool,
}

impl Effective {
    /// Files, `ODEK_*` and the flags `run` and `continue` share; `run_flags` adds `run`'s own.
    fn resolve(setup: &Setup, flags: &LoopArgs, run_flags: Option<&RunArgs>) -> Result<Effective, CommandError> {
        let max_iterations = match &flags.max_iter {
            Some(value) => Some(value.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                CommandError::Fatal(format!("--max-iter: invalid integer {}", odek_contract::quoting::quote(value)))
            })?),
            None => None,
        };
        let mut overrides = CliOverrides {
            max_iterations,
            max_runtime_seconds: positive_integer("--max-runtime", flags.max_runtime.as_deref())?,
            max_tool_calls: positive_integer("--max-tool-calls", flags.max_tool_calls.as_deref())?,
            max_input_tokens: positive_integer("--max-input-tokens", flags.max_input_tokens.as_deref())?,
            max_output_tokens: positive_integer("--max-output-tokens", flags.max_output_tokens.as_deref())?,
            max_cost_usd: positive_usd(flags.max_cost_usd.as_deref())?,
            planning: flags.no_planning.then_some(false),
            compaction: flags.no_compaction.then_some(false),
            tools: flags.tools.clone(),
            no_tools: flags.no_tools.clone(),
            ..CliOverrides::default()
        };
        if let Some(run) = run_flags {
            overrides.model.clone_from(&run.model);
            overrides.provider.clone_from(&run.provider);
            overrides.base_url.clone_from(&run.base_url);
            overrides.no_agents = run.no_agents;
            overrides.sandbox = run.sandbox;
            if run.planning {
                overrides.planning = Some(true);
            }
            if run.compaction {
                overrides.compaction = Some(true);
            }
        }
        let effective = resolve_effective(&setup.loaded, &overrides)?;
        // The loader's own warnings were printed by `Setup::load`.
        print_warnings(effective.warnings.get(setup.loaded.warnings.len()..).unwrap_or_default());
        let mut config = effective.config;
        if flags.replay.is_some() && config.core.provider.is_empty() {
            REPLAY_PROVIDER.clone_into(&mut config.core.provider);
        }
        let thinking_text = flags.thinking.clone().unwrap_or_else(|| config.core.thinking.clone());
        let thinking = Thinking::parse(&thinking_text).ok_or_else(|| {
            CommandError::Fatal(format!(
                "invalid thinking level {} (want enabled, disabled, low, medium or high)",
                odek_contract::quoting::quote(&thinking_text)
            ))
        })?;
        Ok(Effective {
            stream: config.core.stream || flags.stream,
            config,
            api_key: effective.api_key,
            no_color: effective.no_color,
            thinking,
            replay: flags.replay.clone(),
            record: flags.record.clone(),
            quiet: flags.quiet,
            events_jsonl: flags.events_jsonl.clone(),
            events_include_args: flags.events_include_args,
            json: flags.json,
        })
    }

    fn system_prompt(&self, setup: &Setup, system_flag: Option<&str>) -> String {
        let inputs = PromptInputs {
            system_flag: system_flag.map(str::to_owned),
            system_config: Some(self.config.core.system.clone()),
            odek_home: setup.sources.odek_dir(),
            cwd: setup.sources.cwd.clone(),
            no_agents: self.config.core.no_agents,
            interface: "cli".to_owned(),
            now: chrono::Utc::now(),
        };
        let (prompt, warnings) = compose_system_prompt(&inputs);
        print_warnings(&warnings);
        prompt
    }

    /// The user message: the task with `@file` references and `--ctx` files as context blocks.
    fn user_message(setup: &Setup, task: &str, ctx: &[PathBuf]) -> Result<String, CommandError> {
        let (mut attachments, warnings) = expand_at_references(task, &setup.sources.cwd);
        print_warnings(&warnings);
        for path in ctx {
            let path = if path.is_absolute() { path.clone() } else { setup.sources.cwd.join(path) };
            attachments.push(read_ctx_file(&path)?);
        }
        Ok(user_message(task, &attachments))
    }

    /// The provider, and the `--replay` script it answers from (sub-agents get their part of it).
    fn provider(&self) -> Result<(Arc<dyn Provider>, ReplayScriptShare), CommandError> {
        let replay = match &self.replay {
            None => None,
            Some(_) if self.config.core.provider != REPLAY_PROVIDER => {
                return Err(CommandError::Fatal("--replay needs --provider replay".into()));
            }
            Some(path) => {
                Some(Arc::new(TaskReplay { source: path.display().to_string(), script: ReplayScript::load(path)? }))
            }
        };
        let provider =
            build_provider(&self.config.core, self.api_key.as_deref(), replay.as_deref(), self.record.as_deref())?;
        Ok((provider, replay))
    }
}

/// A `--max-*` integer flag: positive, or the spec's fatal error.
fn positive_integer(flag: &str, value: Option<&str>) -> Result<Option<u64>, CommandError> {
    let Some(value) = value else { return Ok(None) };
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(CommandError::Fatal(format!(
            "{flag} must be a positive integer, got {}",
            odek_contract::quoting::quote(value)
        ))),
    }
}

/// `--max-cost-usd`: a positive finite number, or the spec's fatal error.
fn positive_usd(value: Option<&str>) -> Result<Option<f64>, CommandError> {
    let Some(value) = value else { return Ok(None) };
    match value.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(Some(usd)),
        _ => Err(CommandError::Fatal(format!(
            "--max-cost-usd must be a positive number, got {}",
            odek_contract::quoting::quote(value)
        ))),
    }
}

/// The run's budget: the merged `limits` (flags included) and the model's prices (§3).
fn run_budget(config: &crate::config::Config, started: std::time::Instant) -> Budget {
    Budget::new(budget_limits(config), started)
}

/// The `plan` tool's caps from the run's resolved `planning` section (`plan.md` §9).
fn plan_caps(planning: &crate::config::PlanningConfig) -> PlanCaps {
    let steps = usize::try_from(planning.max_steps).unwrap_or(usize::MAX);
    PlanCaps::new(steps, usize::try_from(planning.max_render_chars).unwrap_or(usize::MAX))
}

/// Saves the session after each completed step.
struct SessionCheckpoint {
    store: SessionStore,
    session: Session,
    /// The run's usage already added to the session.
    charged: Usage,
}

impl Checkpoint for SessionCheckpoint {
    fn save(&mut self, messages: &[Message], totals: Usage) -> Result<Saved, String> {
        self.session.messages = messages.to_vec();
        self.session.add_usage(Usage {
            input_tokens: totals.input_tokens.saturating_sub(self.charged.input_tokens),
            output_tokens: totals.output_tokens.saturating_sub(self.charged.output_tokens),
        });
        self.charged = totals;
        let report = self.store.save(&mut self.session).map_err(|err| err.to_string())?;
        Ok(Saved { message_count: report.message_count, warning: report.warning })
    }
}

/// MCP lifecycle messages on the terminal; `--quiet` keeps only the warnings.
struct QuietMcpObserver;

impl McpObserver for QuietMcpObserver {
    fn event(&self, _event: McpEvent) {}

    fn warning(&self, server: &str, text: &str) {
        StderrObserver.warning(server, text);
    }

    fn server_line(&self, _server: &str, _line: &str) {}
}

async fn execute(
    setup: Setup,
    effective: Effective,
    mut messages: Vec<Message>,
    session: Option<Session>,
) -> Result<(), CommandError> {
    let started = std::time::Instant::now();
    let terminal_mcp: Arc<dyn McpObserver> =
        if effective.quiet { Arc::new(QuietMcpObserver) } else { Arc::new(StderrObserver) };
    let events = open_events(&setup, &effective, Arc::clone(&terminal_mcp))?;
    if let Some(events) = &events {
        if let Some(session) = &session {
            events.set_session_id(session.id.as_str());
        }
        let core = &effective.config.core;
        events.run_started(&core.model, false, core.max_iterations);
    }
    let outcome = run_agent(&setup, &effective, &mut messages, session, events.clone(), terminal_mcp, started).await;
    let duration = started.elapsed();
    if let Some(events) = &events {
        match &outcome {
            Ok(outcome) => events.run_completed(duration, outcome.usage),
            Err(failure) => events.run_failed(duration, failure.class),
        }
        // Drained before the answer, so `--events-jsonl - --json` ends with the result line.
        events.close();
    }
    let outcome = outcome.map_err(|failure| failure.error)?;
    let answer = redact(&outcome.answer);
    let mut stdout = std::io::stdout().lock();
    if effective.json {
        let result = serde_json::json!({
            "answer": answer,
            "iterations": outcome.iterations,
            "input_tokens": outcome.usage.input_tokens,
            "output_tokens": outcome.usage.output_tokens,
        });
        writeln!(stdout, "{result}")?;
    } else if std::io::IsTerminal::is_terminal(&stdout) {
        // Piped, the answer is the output exactly; on a terminal it is the model's text shown to
        // the operator, which a prompt injection may have filled with escape sequences.
        writeln!(stdout, "{}", sanitise_for_terminal(&answer, Layout::Block))?;
    } else {
        writeln!(stdout, "{answer}")?;
    }
    stdout.flush()?;
    Ok(())
}

/// Why a run failed: the command error and `run_failed.error_class`.
struct RunFailure {
    error: CommandError,
    class: &'static str,
}

impl RunFailure {
    fn setup(error: CommandError) -> RunFailure {
        RunFailure { error, class: "error" }
    }
}

/// `--events-jsonl`: the sink is opened before the run; any open error is fatal.
fn open_events(
    setup: &Setup,
    effective: &Effective,
    terminal_mcp: Arc<dyn McpObserver>,
) -> Result<Option<Arc<EventStream>>, CommandError> {
    let Some(target) = &effective.events_jsonl else {
        return Ok(None);
    };
    if target == "-" && !effective.json {
        return Err(CommandError::Fatal(
            "events-jsonl: - writes the events to stdout, which carries the answer: add --json".into(),
        ));
    }
    let sink = open_sink(target).map_err(|err| CommandError::Fatal(format!("events-jsonl: {err}")))?;
    let emitter = EventEmitter::start(sink, RunId::generate()?, effective.events_include_args)?;
    Ok(Some(Arc::new(EventStream::new(emitter, &setup.sources.cwd, &setup.sources.odek_dir(), terminal_mcp))))
}

async fn run_agent(
    setup: &Setup,
    effective: &Effective,
    messages: &mut Vec<Message>,
    session: Option<Session>,
    events: Option<Arc<EventStream>>,
    terminal_mcp: Arc<dyn McpObserver>,
    started: std::time::Instant,
) -> Result<odek_agent::run::RunOutcome, RunFailure> {
    // Listening from here on: a stop signal during MCP startup is acted on once startup ends
    // (each handshake is bounded by its server's timeout); a second signal exits at once.
    let cancel = cancel_on_stop_signals();
    // Building the HTTP client (TLS roots) is CPU work: do it while the MCP servers start.
    let provider_plan = effective.clone();
    let provider = tokio::task::spawn_blocking(move || provider_plan.provider());
    let mode = if effective.quiet {
        StatusMode::Quiet
    } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        StatusMode::Live { colour: colour_allowed(&setup.loaded.env) && !effective.no_color }
    } else {
        StatusMode::Plain
    };
    let mcp_observer: Arc<dyn McpObserver> = match &events {
        Some(events) => Arc::clone(events) as Arc<dyn McpObserver>,
        None => terminal_mcp,
    };
    let hub = start_hub(setup, mcp_observer).await;
    let (provider, replay) = provider
        .await
        .map_err(|err| CommandError::Fatal(format!("provider setup: {err}")))
        .and_then(|provider| provider)
        .map_err(RunFailure::setup)?;
    let hub = Arc::new(hub.map_err(RunFailure::setup)?);
    let display = Arc::new(StatusDisplay::new(mode));
    let config = &effective.config;
    let tools_config = config.tools.clone();
    let allowed = Arc::new(move |name: &str| tools_config.allows(name));
    let interactive = std::io::IsTerminal::is_terminal(&std::io::stdin());
    let mut tool_context = ToolContext::new(
        setup.sources.cwd.clone(),
        setup.sources.odek_dir(),
        DangerPolicy::new(config.dangerous.policy_settings()),
    );
    tool_context.cancel = cancel.clone();
    tool_context.interactive = interactive;
    let gate: Option<Arc<dyn BatchApprover>> = if interactive {
        TerminalBatchGate::new(Arc::clone(&display)).map(|gate| Arc::new(gate) as Arc<dyn BatchApprover>)
    } else {
        None
    };
    let budget = run_budget(config, started);
    let mut builtins = odek_agent::tools::builtin_tools(builtin_settings(config));
    let session_id = session.as_ref().map(|session| session.id.as_str().to_owned());
    let delegate =
        delegate_settings(setup, config, effective.api_key.as_deref(), session_id.as_deref(), false, &budget, replay);
    if delegate.artifact_read {
        builtins.push(Arc::new(ArtifactReadTool::new(shared_registry())));
    }
    builtins.push(Arc::new(DelegateTool::new(delegate, events.clone())));
    let checkpoint: Option<Box<dyn Checkpoint>> = match session {
        Some(session) => Some(Box::new(SessionCheckpoint {
            store: session_store(setup).map_err(RunFailure::setup)?,
            session,
            charged: Usage::default(),
        })),
        None => None,
    };
    let mut tools = ToolSet::new(builtins, Some(Arc::clone(&hub)), allowed);
    if config.planning.enabled {
        tools = tools.with_plan(Arc::new(PlanBoard::new(plan_caps(&config.planning))));
    }
    let core = &config.core;
    let mut agent = Agent {
        provider,
        tools,
        settings: LoopSettings {
            context_window: context_window(&core.model),
            model: core.model.clone(),
            thinking: effective.thinking,
            stream: effective.stream,
            max_iterations: core.max_iterations,
            max_tool_parallel: usize::try_from(core.max_tool_parallel).unwrap_or(usize::MAX),
            compaction: core.compaction,
        },
        tool_context,
        observer: match &events {
            Some(events) => {
                Arc::new(Fanout::new(vec![Arc::clone(&display) as Arc<dyn LoopObserver>, Arc::clone(events) as _]))
            }
            None => Arc::clone(&display) as Arc<dyn LoopObserver>,
        },
        gate,
        checkpoint,
        budget,
    };
    let outcome = agent.run(messages, &cancel).await;
    display.finish();
    hub.shutdown().await;
    outcome.map_err(|err| {
        let class = err.class();
        let error = match err {
            odek_agent::run::RunError::Budget(exceeded) => CommandError::Budget(exceeded.to_string()),
            other => CommandError::Fatal(other.to_string()),
        };
        RunFailure { error, class }
    })
}
