//! `odek subagent`: one focused task run as a child process (spec `subagents.md` §4–§7), the
//! face of `odek::child`. Parses its own flags (the spec's exact setup errors, exit 3, with a
//! result on stdout), reads the task file and the API key a parent hands over, has the runtime
//! prepare and run the child, and reports the result object — one JSON line, or the protocol-2
//! NDJSON stream ending in the framed `result` — with the start and end lines on stderr. Start
//! at [`run`].

use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use odek::agent::budget::BudgetLimits;
use odek::agent::observer::{LoopEvent, LoopObserver};
use odek::agent::plan::PlanEvent;
use odek::agent::subagent::result::SubagentResult;
use odek::agent::subagent::spawn::CONFIG_FD_VARIABLE;
use odek::agent::subagent::stream::{BudgetFields, ProgressStream};
use odek::agent::subagent::task::{TaskFile, is_parent_task_file, read_task_file};
use odek::child::{ChildError, ChildFlags, ChildPlan};
use odek::config::{CliOverrides, ConfigSources};
use odek::danger::DangerClass;
use odek::llm::StreamObserver;
use odek::mcp::{McpEvent, McpObserver, StderrObserver};
use odek::parts::delegation_depth;
use odek::setup::Setup;
use odek::{Overrides, Runtime, Subscriber};
use odek_contract::quoting::quote;
use odek_contract::redaction::{redact, register_secret};
use odek_contract::runes::runes_with_ellipsis;
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};

use super::run::load_setup;
use crate::interrupt::cancel_on_stop_signals;
use crate::outcome::{CommandError, SubagentEnd, exit_code};
use crate::terminal::console::StdConsole;
use crate::terminal::print_warning;

/// Set to `3` by a parent that hands over the API key on file descriptor 3.
pub const API_KEY_FD_VARIABLE: &str = "ODEK_API_KEY_FD";
/// Longest API key read from fd 3 (bytes).
const MAX_KEY_BYTES: u64 = 64 * 1024;
/// The goal shown on the start line, in runes.
const GOAL_DISPLAY_RUNES: usize = 60;

/// The flags of `odek subagent`, parsed by hand so every error is the spec's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubagentFlags {
    pub goal: Option<String>,
    pub context: Option<String>,
    pub task: Option<PathBuf>,
    /// `--timeout` as given (≤ 0 = the configured default).
    pub timeout: Option<i64>,
    /// `--max-iter` as given (≤ 0 = the configured default).
    pub max_iter: Option<i64>,
    pub quiet: bool,
    pub stream: bool,
    pub parent_session: Option<String>,
    pub profile: Option<String>,
}

/// §4's flag rules: `--flag value` or `--flag=value`; the exact setup errors.
pub fn parse_subagent_flags(args: &[String]) -> Result<SubagentFlags, String> {
    let mut flags = SubagentFlags::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        match name {
            "--quiet" | "--stream" if inline.is_none() => {
                if name == "--quiet" {
                    flags.quiet = true;
                } else {
                    flags.stream = true;
                }
            }
            "--timeout" | "--max-iter" => {
                let value = inline.or_else(|| rest.next().cloned());
                let Some(value) = value else {
                    return Err(format!("{name} requires an integer value"));
                };
                let number =
                    value.trim().parse::<i64>().map_err(|_| format!("{name}: invalid integer {}", quote(&value)))?;
                if name == "--timeout" {
                    flags.timeout = Some(number);
                } else {
                    flags.max_iter = Some(number);
                }
            }
            "--goal" | "--context" | "--task" | "--parent-session" | "--profile" => {
                let Some(value) = inline.or_else(|| rest.next().cloned()) else {
                    return Err(format!("{name} requires a value"));
                };
                match name {
                    "--goal" => flags.goal = Some(value),
                    "--context" => flags.context = Some(value),
                    "--task" => flags.task = Some(PathBuf::from(value)),
                    "--parent-session" => flags.parent_session = Some(value),
                    _ => flags.profile = Some(value),
                }
            }
            _ if name.starts_with('-') => return Err(format!("unknown flag {}", quote(name))),
            _ => return Err(format!("unexpected argument {}", quote(arg))),
        }
    }
    match (&flags.goal, &flags.task) {
        (Some(_), Some(_)) => Err("--goal and --task are mutually exclusive".to_owned()),
        (None, None) => Err("either --goal or --task is required".to_owned()),
        _ => Ok(flags),
    }
}

/// Where the result goes: one JSON line (legacy) or the protocol-2 stream.
enum Output {
    Legacy,
    Framed(Arc<ProgressStream>),
}

impl Output {
    fn finish(&self, result: &SubagentResult) {
        match self {
            Output::Legacy => println!("{}", result.to_json_line()),
            Output::Framed(stream) => stream.finished(result),
        }
    }

    fn setup_result(&self, result: &SubagentResult) {
        match self {
            Output::Legacy => println!("{}", result.to_json_line()),
            Output::Framed(stream) => stream.result(result),
        }
    }
}

/// A setup error: `odek: <msg>` on stderr, the §7 result on stdout, [`SubagentEnd::SetupFailed`].
fn setup_failure(message: &str, output: &Output) -> CommandError {
    let message = redact(message);
    eprintln!("odek: {}", sanitise_for_terminal(&message, Layout::Lines));
    output.setup_result(&SubagentResult::setup_error(&message));
    CommandError::Subagent(SubagentEnd::SetupFailed)
}

pub async fn run(args: &[String]) -> Result<(), CommandError> {
    let started = Instant::now();
    let flags = parse_subagent_flags(args).map_err(|message| setup_failure(&message, &Output::Legacy))?;
    let task = match load_task(&flags) {
        Ok(task) => task,
        Err(message) => return Err(setup_failure(&message, &Output::Legacy)),
    };
    let framed = flags.stream && task.wants_protocol_2();
    let prepared = match prepare(&flags, &task, framed) {
        Ok(prepared) => prepared,
        Err(Prepare::Setup(message, output)) => return Err(setup_failure(&message, &output)),
        Err(Prepare::SpawnGate(error, output)) => {
            eprintln!("✗ Sub-agent exhausted its execution budget (execution_budget)");
            output.setup_result(&SubagentResult::spawn_gate(&error));
            return Err(CommandError::Subagent(SubagentEnd::BudgetExhausted));
        }
    };
    execute(prepared, &flags, &task, started).await
}

/// The task: from `--task` (deleted afterwards when a parent wrote it) or from `--goal`.
fn load_task(flags: &SubagentFlags) -> Result<TaskFile, String> {
    let Some(path) = &flags.task else {
        return Ok(TaskFile {
            goal: flags.goal.clone().unwrap_or_default(),
            context: flags.context.clone().unwrap_or_default(),
            ..TaskFile::default()
        });
    };
    let task = read_task_file(path).map_err(|err| err.to_string());
    if is_parent_task_file(path, &std::env::temp_dir()) {
        // Best effort: the parent deletes it too once the child has exited.
        let _ = std::fs::remove_file(path);
    }
    let task = task?;
    if task.goal.trim().is_empty() {
        return Err("parse task file: goal is required".to_owned());
    }
    Ok(task)
}

/// Everything decided before the loop starts.
struct Prepared {
    /// The runtime with the child's settings: profile, trust, budgets, no plan tool.
    runtime: Runtime,
    face: Arc<SubagentFace>,
    plan: ChildPlan,
    output: Output,
}

enum Prepare {
    Setup(String, Output),
    SpawnGate(String, Output),
}

/// §4 setup steps 1–5 and the share-mode spawn gate.
fn prepare(flags: &SubagentFlags, task: &TaskFile, framed: bool) -> Result<Prepared, Prepare> {
    let legacy = || {
        if framed {
            Output::Framed(Arc::new(ProgressStream::new(&task.task_id, BudgetFields::default(), &Default::default())))
        } else {
            Output::Legacy
        }
    };
    let handed = read_handed_config().map_err(|message| Prepare::Setup(message, legacy()))?;
    let setup = match handed {
        Some(global) => load_handed_setup(&global),
        None => load_setup(),
    }
    .map_err(|err| Prepare::Setup(command_error_text(err), legacy()))?;
    let handed_key = read_handed_key().map_err(|message| Prepare::Setup(message, legacy()))?;
    let overrides = Overrides {
        config: CliOverrides {
            model: non_empty(&task.model),
            provider: non_empty(&task.provider),
            base_url: non_empty(&task.base_url),
            prompt_caching: task.prompt_caching,
            ..CliOverrides::default()
        },
        lenient_thinking: true,
        // [beyond] The parent's `--events-jsonl` (a path; stdout carries the result).
        events_jsonl: non_empty(&task.events_jsonl).filter(|path| path != "-"),
        ..Overrides::default()
    };
    let face = Arc::new(SubagentFace::default());
    let mut runtime =
        Runtime::new(setup, &overrides, face.clone()).map_err(|err| Prepare::Setup(err.to_string(), legacy()))?;
    let api_key = handed_key.or_else(|| runtime.settings().api_key.clone());
    runtime.settings_mut().api_key = api_key;
    let child_flags = ChildFlags {
        profile: flags.profile.as_deref(),
        timeout: flags.timeout,
        max_iter: flags.max_iter,
        parent_session: flags.parent_session.as_deref(),
    };
    let output = |plan: &ChildPlan, limits: &BudgetLimits| {
        if framed {
            let fields = BudgetFields {
                seconds: plan.timeout_seconds,
                iterations: plan.max_iterations,
                cost_usd: plan.operator_limits.max_cost_usd,
            };
            Output::Framed(Arc::new(ProgressStream::new(&task.task_id, fields, limits)))
        } else {
            Output::Legacy
        }
    };
    let plan = match runtime.prepare_child(task, &child_flags) {
        Ok(plan) => plan,
        Err(ChildError::Setup(message)) => return Err(Prepare::Setup(message, legacy())),
        Err(ChildError::SpawnGate(error, plan)) => {
            return Err(Prepare::SpawnGate(error, output(&plan, &plan.operator_limits)));
        }
    };
    let output = output(&plan, &plan.limits);
    Ok(Prepared { runtime, face, plan, output })
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

fn command_error_text(error: CommandError) -> String {
    match error {
        CommandError::Fatal(text) | CommandError::Run { message: text, .. } | CommandError::Verbatim(text) => text,
        CommandError::Reported => "setup failed".to_owned(),
        CommandError::Stopped { error, .. } => command_error_text(*error),
        other => format!("setup failed (exit {})", exit_code(&Err(other))),
    }
}

/// §4 step 1: with `ODEK_API_KEY_FD=3` the parent's key arrives on file descriptor 3; it is
/// read (bounded), registered for redaction, and the descriptor closed.
fn read_handed_key() -> Result<Option<String>, String> {
    if std::env::var(API_KEY_FD_VARIABLE).ok().as_deref() != Some("3") {
        return Ok(None);
    }
    let mut key = String::new();
    let file = take_handed_fd(3).ok_or_else(|| format!("{API_KEY_FD_VARIABLE}=3 but file descriptor 3 is not open"))?;
    file.take(MAX_KEY_BYTES).read_to_string(&mut key).map_err(|err| format!("read API key from fd 3: {err}"))?;
    let key = key.trim().to_owned();
    if key.is_empty() {
        return Ok(None);
    }
    register_secret(&key);
    Ok(Some(key))
}

/// \[beyond\] The setup of a confined child: the config files as [`load_setup`] reads them, but
/// the global one from the bytes its parent handed over.
fn load_handed_setup(global: &[u8]) -> Result<Setup, CommandError> {
    Ok(Setup::load_handed(ConfigSources::from_process()?, global, &print_warning)?)
}

/// \[beyond\] The global config a parent handed over on fd 4 (`ODEK_CONFIG_FD=4`): an
/// untrusted sub-agent runs in the sandbox, where `~/.odek` cannot be read. `None` without it.
fn read_handed_config() -> Result<Option<Vec<u8>>, String> {
    if std::env::var(CONFIG_FD_VARIABLE).ok().as_deref() != Some("4") {
        return Ok(None);
    }
    let file = take_handed_fd(4).ok_or_else(|| format!("{CONFIG_FD_VARIABLE}=4 but file descriptor 4 is not open"))?;
    let mut bytes = Vec::new();
    file.take(odek::config::MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("read the config from fd 4: {err}"))?;
    Ok(Some(bytes))
}

/// Takes ownership of `fd` (3: the key, 4: \[beyond\] the config), which the parent opened for
/// this process alone; dropping the file closes it.
#[allow(unsafe_code)]
fn take_handed_fd(fd: i32) -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    // Only a regular file is taken — what a parent hands over — never a pipe, socket or other
    // descriptor that happens to have the number.
    if !std::fs::metadata(format!("/proc/self/fd/{fd}")).is_ok_and(|metadata| metadata.is_file()) {
        return None;
    }
    // SAFETY: by the `ODEK_API_KEY_FD=3` / `ODEK_CONFIG_FD=4` contract, the fd was opened by the
    // parent for this process and nothing else in the process owns or uses it; it is taken
    // exactly once, at setup.
    Some(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// The child as a runtime subscriber: the protocol-2 progress stream when framed (nothing of the
/// loop otherwise), MCP lines and warnings on stderr, and the provider-reported usage remembered
/// for results of runs that ended in an error.
#[derive(Default)]
struct SubagentFace {
    stream: OnceLock<Arc<ProgressStream>>,
}

impl Subscriber for SubagentFace {
    fn warning(&self, text: &str) {
        print_warning(text);
    }

    fn delta(&self, text: &str, reasoning: bool) {
        if let Some(stream) = self.stream.get() {
            stream.on_delta(text, reasoning);
        }
    }

    fn progress(&self, event: &LoopEvent<'_>) {
        if let Some(stream) = self.stream.get() {
            stream.on_event(event);
        }
    }

    fn plan(&self, event: &PlanEvent) {
        if let Some(stream) = self.stream.get() {
            stream.on_plan_event(event);
        }
    }

    fn mcp_event(&self, event: McpEvent) {
        StderrObserver.event(event);
    }

    fn mcp_warning(&self, server: &str, text: &str) {
        StderrObserver.warning(server, text);
    }

    fn server_line(&self, server: &str, line: &str) {
        StderrObserver.server_line(server, line);
    }

    fn console(&self) -> Option<Arc<dyn odek::approvals::Console>> {
        Some(Arc::new(StdConsole))
    }
}

async fn execute(
    prepared: Prepared,
    flags: &SubagentFlags,
    task: &TaskFile,
    started: Instant,
) -> Result<(), CommandError> {
    let Prepared { runtime, face, plan, output } = prepared;
    let ChildPlan { timeout_seconds, max_iterations, max_risk, profile, .. } = &plan;
    if !flags.quiet {
        eprintln!("🔧 Sub-agent: {}", sanitise_for_terminal(&display_goal(&task.goal), Layout::Lines));
    }
    if let Output::Framed(stream) = &output {
        let depth = delegation_depth();
        let max_risk = max_risk.map(DangerClass::as_str).unwrap_or_default();
        stream.started(std::process::id(), depth, *timeout_seconds, *max_iterations, profile, max_risk);
        let _ = face.stream.set(Arc::clone(stream));
    }

    // Listening from here on: a stop signal during MCP startup is acted on once startup ends
    // (each handshake is bounded by its server's timeout); a second signal exits at once.
    let interrupt = cancel_on_stop_signals();
    let result = match runtime.run_child(task, &plan, started, &interrupt).await {
        Ok(result) => result,
        Err(err) => return Err(setup_failure(&command_error_text(err.into()), &output)),
    };
    if !flags.quiet || result.status == "budget_exhausted" || result.status == "error" {
        report_end(&result, flags.quiet);
    }
    output.finish(&result);
    match SubagentEnd::of(&result) {
        None => Ok(()),
        Some(end) => Err(CommandError::Subagent(end)),
    }
}

/// The goal for the start line: at most 60 runes, then `…`.
fn display_goal(goal: &str) -> String {
    let goal = goal.split_whitespace().collect::<Vec<_>>().join(" ");
    runes_with_ellipsis(&goal, GOAL_DISPLAY_RUNES).into_owned()
}

/// §7's closing stderr line; the failure lines are printed even with `--quiet`.
fn report_end(result: &SubagentResult, quiet: bool) {
    let line = match (result.status.as_str(), result.partial_reason.as_str()) {
        ("budget_exhausted", _) => "✗ Sub-agent exhausted its execution budget (execution_budget)".to_owned(),
        ("error", _) => format!("✗ Sub-agent failed: {}", result.error),
        _ if quiet => return,
        ("partial", "time_budget") => format!(
            "⏱ Sub-agent concluded on its time budget: {:.1}s, {} iterations",
            result.duration_seconds, result.iterations
        ),
        ("partial", "iteration_budget") => {
            format!(
                "⏱ Sub-agent concluded on its iteration budget (iteration_budget): {} iterations",
                result.iterations
            )
        }
        _ => format!(
            "✅ Sub-agent complete: {:.1}s, {} tokens, {} iterations",
            result.duration_seconds, result.tokens_used, result.iterations
        ),
    };
    eprintln!("{}", sanitise_for_terminal(&line, Layout::Lines));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<SubagentFlags, String> {
        parse_subagent_flags(&args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn setup_errors_are_the_spec_texts() {
        assert_eq!(
            parse(&["--goal", "a", "--task", "t.json"]).unwrap_err(),
            "--goal and --task are mutually exclusive"
        );
        assert_eq!(parse(&["--quiet"]).unwrap_err(), "either --goal or --task is required");
        assert_eq!(parse(&["--goal", "a", "--bogus"]).unwrap_err(), "unknown flag \"--bogus\"");
        assert_eq!(parse(&["--goal", "a", "--timeout"]).unwrap_err(), "--timeout requires an integer value");
        assert_eq!(parse(&["--goal", "a", "--timeout", "soon"]).unwrap_err(), "--timeout: invalid integer \"soon\"");
        assert_eq!(parse(&["--goal", "a", "--max-iter=x"]).unwrap_err(), "--max-iter: invalid integer \"x\"");
    }

    #[test]
    fn flags_in_both_forms() {
        let flags =
            parse(&["--goal=do it", "--timeout", "-5", "--max-iter=7", "--quiet", "--stream", "--profile", "p"])
                .unwrap();
        assert_eq!(flags.goal.as_deref(), Some("do it"));
        assert_eq!(flags.timeout, Some(-5));
        assert_eq!(flags.max_iter, Some(7));
        assert!(flags.quiet && flags.stream);
        assert_eq!(flags.profile.as_deref(), Some("p"));
    }

    #[test]
    fn goal_display_is_cut_at_60_runes() {
        assert_eq!(display_goal("short\ngoal"), "short goal");
        let long = "é".repeat(61);
        assert_eq!(display_goal(&long), format!("{}…", "é".repeat(60)));
    }
}
