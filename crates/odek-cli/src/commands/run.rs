//! `odek run` and `odek continue`: resolve the effective settings (config files, `ODEK_*`,
//! flags), build the provider, the tools and the system prompt, start the MCP servers, run the
//! loop, persist the session, print the final answer on stdout (spec `loop-and-sessions.md`,
//! `config.md` §4, §10–§11).

use std::io::{Read, Write};
use std::sync::Arc;

use odek::agent::run::RunError;
use odek::agent::session::{
    ExternalRef, Session as SessionRecord, SessionError, SessionId, SessionLock, SessionStore, parse_external_ref_spec,
    safe_state,
};
use odek::config::{CliOverrides, ConfigSources};
use odek::llm::Message;
use odek::setup::Setup;
use odek::{Denials, FinishOverrides, Overrides, Runtime, RuntimeError, TurnOutcome};
use odek_contract::outcome::Outcome;
use odek_contract::redaction::{redact, redact_json};
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};

use crate::cli::{ContinueArgs, LoopArgs, RunArgs, deadline_seconds, heartbeat_seconds};
use crate::interrupt::cancel_on_stop_signals;
use crate::outcome::CommandError;
use crate::terminal::face::TerminalFace;
use crate::terminal::{colour_allowed, print_warning};

pub async fn run(args: RunArgs) -> Result<(), CommandError> {
    let face = Arc::new(TerminalFace::new(args.common.quiet));
    let setup = load_setup()?;
    let runtime = Runtime::new(setup, &overrides(&args.common, Some(&args))?, face.clone())?;
    let task = task_text(&args.common.task).await?.ok_or_else(|| CommandError::Fatal("a task is required".into()))?;
    let refs = parse_external_refs(&args.common.external_refs)?;
    let (record, lock) = if args.session {
        let (mut record, lock) = runtime.new_session_record()?;
        record.add_external_refs(refs)?;
        (Some(record), Some(lock))
    } else {
        if !refs.is_empty() {
            print_warning("--external-ref is only persisted with --session; ignoring");
        }
        (None, None)
    };
    let history = vec![Message::system(runtime.system_prompt(args.system.as_deref()))];
    let user = runtime.user_message(&task, &args.common.ctx)?;
    let outcome = execute(&runtime, &face, &args.common, history, record, user).await;
    drop(lock);
    outcome
}

pub async fn continue_session(args: ContinueArgs) -> Result<(), CommandError> {
    let face = Arc::new(TerminalFace::new(args.common.quiet));
    let setup = load_setup()?;
    let store = setup.session_store()?;
    let id = match &args.id {
        Some(id) => SessionId::parse(id)?,
        None => store
            .latest()?
            .map(|session| session.id)
            .ok_or_else(|| CommandError::Verbatim("odek continue: no session to continue".into()))?,
    };
    let (mut record, lock) = lock_and_load(&store, &id)?;
    let Some(task) = task_text(&args.common.task).await? else {
        return Err(CommandError::Verbatim("odek continue: a task is required for continue".into()));
    };
    let mut runtime = Runtime::new(setup, &overrides(&args.common, None)?, face.clone())?;
    runtime.adopt_session(&record)?;
    record.add_external_refs(parse_external_refs(&args.common.external_refs)?)?;
    let history = safe_state(&record.messages);
    let user = runtime.user_message(&task, &args.common.ctx)?;
    let outcome = execute(&runtime, &face, &args.common, history, Some(record), user).await;
    drop(lock);
    outcome
}

/// The saved session `id`, locked for this process. Locked before it is read: what this run
/// appends to is the latest saved state, and no other process appends to it meanwhile (a second
/// `continue` refuses instead of losing a turn).
pub(crate) fn lock_and_load(
    store: &SessionStore,
    id: &SessionId,
) -> Result<(SessionRecord, SessionLock), CommandError> {
    let lock = store.lock(id)?;
    let record = store.load(id).inspect_err(|err| {
        if matches!(err, SessionError::NotFound { .. }) {
            // No session behind the id: its lock file would only be litter.
            let _ = std::fs::remove_file(lock.path());
        }
    })?;
    Ok((record, lock))
}

/// The config files of this process, their warnings printed.
pub(crate) fn load_setup() -> Result<Setup, CommandError> {
    Ok(Setup::load(ConfigSources::from_process()?, &print_warning)?)
}

/// The longest task read from stdin (`odek run -`): 10 MiB.
const MAX_STDIN_TASK_BYTES: u64 = 10 * 1024 * 1024;

/// The task: the words joined by spaces, or, when the only word is `-`, stdin to its end
/// (\[beyond\]; stdin is read for nothing else, so a run left with an open, unused stdin never
/// waits on it). `None` when there is no task.
async fn task_text(words: &[String]) -> Result<Option<String>, CommandError> {
    let task = match words {
        [dash] if dash == "-" => tokio::task::spawn_blocking(|| read_task(std::io::stdin().lock()))
            .await
            .map_err(|err| CommandError::Fatal(format!("task from stdin: {err}")))??,
        _ => words.join(" "),
    };
    Ok((!task.trim().is_empty()).then_some(task))
}

/// A task from `reader`: at most [`MAX_STDIN_TASK_BYTES`], UTF-8.
fn read_task(reader: impl std::io::Read) -> Result<String, CommandError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_STDIN_TASK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| CommandError::Fatal(format!("task from stdin: {err}")))?;
    if bytes.len() as u64 > MAX_STDIN_TASK_BYTES {
        return Err(CommandError::Fatal(format!(
            "task from stdin: more than {MAX_STDIN_TASK_BYTES} bytes (the limit); nothing was sent"
        )));
    }
    String::from_utf8(bytes).map_err(|err| {
        CommandError::Fatal(format!(
            "task from stdin: not valid UTF-8 (at byte {}); nothing was sent",
            err.utf8_error().valid_up_to()
        ))
    })
}

fn parse_external_refs(specs: &[String]) -> Result<Vec<ExternalRef>, CommandError> {
    specs.iter().map(|spec| parse_external_ref_spec(spec).map_err(CommandError::from)).collect()
}

/// The flags `run` and `continue` share as the runtime's overrides; `run_flags` adds `run`'s own.
pub(crate) fn overrides(flags: &LoopArgs, run_flags: Option<&RunArgs>) -> Result<Overrides, CommandError> {
    let max_iterations = match &flags.max_iter {
        Some(value) => Some(value.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
            CommandError::Fatal(format!("--max-iter: invalid integer {}", odek_contract::quoting::quote(value)))
        })?),
        None => None,
    };
    let mut config = CliOverrides {
        max_iterations,
        max_runtime_seconds: positive_integer("--max-runtime", flags.max_runtime.as_deref())?,
        max_tool_calls: positive_integer("--max-tool-calls", flags.max_tool_calls.as_deref())?,
        max_input_tokens: positive_integer("--max-input-tokens", flags.max_input_tokens.as_deref())?,
        max_output_tokens: positive_integer("--max-output-tokens", flags.max_output_tokens.as_deref())?,
        max_cost_usd: positive_usd(flags.max_cost_usd.as_deref())?,
        planning: flags.no_planning.then_some(false),
        compaction: flags.no_compaction.then_some(false),
        prompt_caching: flags.no_prompt_caching.then_some(false),
        tools: flags.tools.clone(),
        no_tools: flags.no_tools.clone(),
        strict: flags.strict,
        first_byte_timeout_seconds: deadline_seconds("--first-byte-timeout", flags.first_byte_timeout.as_deref())?,
        stream_idle_timeout_seconds: deadline_seconds("--stream-idle-timeout", flags.stream_idle_timeout.as_deref())?,
        mcp_startup_timeout_seconds: deadline_seconds("--mcp-startup-timeout", flags.mcp_startup_timeout.as_deref())?,
        shutdown_drain_seconds: deadline_seconds("--shutdown-drain", flags.shutdown_drain.as_deref())?,
        heartbeat_seconds: heartbeat_seconds(flags.heartbeat.as_deref())?,
        ..CliOverrides::default()
    };
    if let Some(run) = run_flags {
        config.model.clone_from(&run.model);
        config.provider.clone_from(&run.provider);
        config.base_url.clone_from(&run.base_url);
        config.no_agents = run.no_agents;
        config.sandbox = match (run.sandbox, run.no_sandbox) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        if run.planning {
            config.planning = Some(true);
        }
        if run.compaction {
            config.compaction = Some(true);
        }
    }
    let finish = FinishOverrides {
        output_schema: flags.output_schema.clone(),
        output_retries: count("--output-retries", flags.output_retries.as_deref())?,
        output_file: flags.output_file.clone(),
        checks: flags.checks.clone(),
        check_timeout_seconds: positive_integer("--check-timeout", flags.check_timeout.as_deref())?,
        max_check_cycles: count("--max-check-cycles", flags.max_check_cycles.as_deref())?,
    };
    Ok(Overrides {
        config,
        finish,
        thinking: flags.thinking.clone(),
        stream: flags.stream,
        replay: flags.replay.clone(),
        record: flags.record.clone(),
        events_jsonl: flags.events_jsonl.clone(),
        events_include_args: flags.events_include_args,
        ..Overrides::default()
    })
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

/// \[beyond\] A count flag that may be 0 (`--output-retries`, `--max-check-cycles`).
fn count(flag: &str, value: Option<&str>) -> Result<Option<u32>, CommandError> {
    let Some(value) = value else { return Ok(None) };
    value.parse::<u32>().map(Some).map_err(|_| {
        CommandError::Fatal(format!(
            "{flag} must be a non-negative integer, got {}",
            odek_contract::quoting::quote(value)
        ))
    })
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

/// One turn of `run` or `continue` on `history`, then the answer on stdout.
async fn execute(
    runtime: &Runtime,
    face: &TerminalFace,
    flags: &LoopArgs,
    history: Vec<Message>,
    record: Option<odek::agent::session::Session>,
    user: String,
) -> Result<(), CommandError> {
    if flags.events_jsonl.as_deref() == Some("-") && !flags.json {
        return Err(CommandError::Fatal(
            "events-jsonl: - writes the events to stdout, which carries the answer: add --json".into(),
        ));
    }
    let settings = runtime.settings();
    face.set_colour(colour_allowed(&runtime.setup().loaded.env) && !settings.no_color);
    let mut session = runtime.session(history, record)?;
    // Listening from here on: a stop signal during MCP startup is acted on once startup ends
    // (each handshake is bounded by its server's timeout); a second signal exits at once.
    let cancel = cancel_on_stop_signals();
    let outcome = session.turn(user, &cancel).await;
    let spent = session.spent().usage;
    let denials = session.denials().clone();
    session.close().await;
    match outcome {
        Ok(outcome) => print_answer(&outcome, flags.json, &denials),
        Err(error) => {
            if flags.json {
                print_failure(&error, spent, &denials)?;
            }
            Err(turn_error(error))
        }
    }
}

/// `--json` on a failed turn: the result object still comes, with the outcome and the error, so
/// a script that reads stdout never has to guess from an empty line.
fn print_failure(error: &RuntimeError, spent: odek::Usage, denials: &Denials) -> Result<(), CommandError> {
    let mut result = serde_json::json!({
        "outcome": error.outcome(),
        "error": redact(&error.to_string()),
        "input_tokens": spent.input_tokens,
        "output_tokens": spent.output_tokens,
        "denials": denials,
    });
    if let RuntimeError::Run(RunError::ChecksFailed { checks, .. }) = error {
        result["checks"] = checks.iter().map(odek::CheckReport::to_json).collect();
    }
    let mut stdout = std::io::stdout().lock();
    // Keys sorted, as the result object has always been written.
    writeln!(stdout, "{}", odek_contract::canonical_json::sorted_value(result))?;
    stdout.flush()?;
    Ok(())
}

/// A failed turn as the command's error, its outcome choosing the exit code.
pub(crate) fn turn_error(error: RuntimeError) -> CommandError {
    CommandError::Run { outcome: error.outcome(), message: error.to_string() }
}

/// The answer on stdout: the `--json` result object, the text exactly when piped, or the text
/// made terminal-safe on a terminal. `denials` are the turn's, for the result object.
pub(crate) fn print_answer(outcome: &TurnOutcome, json: bool, denials: &Denials) -> Result<(), CommandError> {
    let answer = redact(&outcome.answer);
    let mut stdout = std::io::stdout().lock();
    if json {
        let mut result = serde_json::json!({
            "outcome": Outcome::Success,
            "answer": answer,
            "iterations": outcome.iterations,
            "input_tokens": outcome.usage.input_tokens,
            "output_tokens": outcome.usage.output_tokens,
            "denials": denials,
        });
        if let Some(output) = &outcome.output {
            result["output"] = redact_json(output);
        }
        if !outcome.checks.is_empty() {
            result["checks"] = outcome.checks.iter().map(odek::CheckReport::to_json).collect();
        }
        // Keys sorted, as the result object has always been written.
        writeln!(stdout, "{}", odek_contract::canonical_json::sorted_value(result))?;
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
