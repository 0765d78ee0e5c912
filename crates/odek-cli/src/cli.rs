//! Command-line parsing: clap does the work, this module turns its errors into odek's exact
//! console texts (spec README §5, `config.md` §10): `unknown command "<cmd>"` with usage,
//! `unknown flag "<flag>"`, `<flag> requires a value`, each a usage error (exit 1, chosen by
//! [`crate::outcome::exit_code`]).

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::outcome::CommandError;

/// A fast, secure, single-binary agent runtime.
#[derive(Debug, Parser)]
#[command(
    name = "odek",
    version,
    about = "A fast, secure, single-binary agent runtime",
    long_about = None,
    disable_help_subcommand = true,
    propagate_version = true,
    override_usage = "odek [-C <DIR>] <COMMAND>",
    after_help = "Global option (before the command): -C <DIR>  run as if odek was started in <DIR>"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the agent on a task and print its final answer
    Run(RunArgs),
    /// Continue a saved session with a new task
    Continue(ContinueArgs),
    /// Talk to the agent turn by turn at a terminal (a persisted session; /help lists the commands)
    Repl(ReplArgs),
    /// Inspect and exercise the configured MCP extension servers
    #[command(subcommand)]
    Ext(ExtCommand),
    /// List, show, delete and trim saved sessions
    #[command(subcommand)]
    Session(SessionCommand),
    /// Run one focused task as a sub-agent (what delegate_tasks starts; never prompts)
    Subagent(SubagentArgs),
    /// Serve odek over MCP to other agents and editors: the built-in file tools and shell, confined
    /// to this directory, and whole agent runs (run_task) that return verified artifacts
    Mcp(McpArgs),
    /// Serve odek to an editor over the Agent Client Protocol (ACP) on stdio: many sessions,
    /// streamed answers, tool calls with diffs, plans and approvals in the editor. Takes the
    /// model, provider and budget flags of `odek run`
    Acp(Box<RunArgs>),
    /// Serve odek over HTTP on loopback: an API orchestrators drive (runs, their odek.event/v1
    /// stream over Server-Sent Events, approvals, sessions), every request authenticated by a
    /// token shown once on stderr. Takes the model, provider and budget flags of `odek run`
    Serve(Box<ServeArgs>),
}

/// `odek serve`.
#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    /// Listen on ADDR (host:port; port 0 picks one); loopback unless --allow-remote
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7420")]
    pub addr: String,
    /// Read the token every request must carry from FILE (provisioned by the operator; then never
    /// shown) instead of minting one per start
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// Listen on a non-loopback address (put a TLS-terminating proxy in front)
    #[arg(long)]
    pub allow_remote: bool,
    /// Runs running at once; more are refused with 429 (default: the config's
    /// serve.max_concurrent_runs, else 4)
    #[arg(long, value_name = "N")]
    pub max_concurrent_runs: Option<String>,
    /// Open the page in the system's browser once listening
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `odek mcp`: stdio by default, Streamable HTTP with `--http`.
#[derive(Debug, Clone, Default, Args)]
pub struct McpArgs {
    /// Serve MCP Streamable HTTP on ADDR (host:port, e.g. 127.0.0.1:7300; port 0 picks one) instead
    /// of stdio; a bearer token every request must carry is printed once on stderr
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Let --http listen on an address that is not loopback (the token is then all that guards it)
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// Where run_task's artifacts go, one folder per run (default ~/.odek/artifacts/mcp)
    #[arg(long, value_name = "DIR")]
    pub artifact_root: Option<std::path::PathBuf>,
    /// run_task calls running at once; more wait, reporting progress (default 2)
    #[arg(long, value_name = "N")]
    pub max_concurrent_runs: Option<String>,
    /// Append the runs' odek.event/v1 streams to FILE (created 0600; - is refused: stdout is the protocol)
    #[arg(long, value_name = "FILE")]
    pub events_jsonl: Option<String>,
    /// Model id run_task's runs use
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Provider of run_task's runs: openai, openai-responses, anthropic, replay, or a name from providers
    #[arg(long, value_name = "ID")]
    pub provider: Option<String>,
    /// Provider endpoint of run_task's runs
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Answer run_task's runs from an odek.replay/v1 script: each goal from its subagents entries
    #[arg(long, value_name = "FILE")]
    pub replay: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List saved sessions, newest first
    List {
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
    },
    /// Show a session's metadata and conversation
    Show {
        /// The session ID
        id: String,
        /// Print the session file instead
        #[arg(long)]
        json: bool,
    },
    /// Delete a session and its sub-agent artifacts
    Delete {
        /// The session ID
        id: String,
    },
    /// Delete old sessions; a session is removed only when every given criterion selects it
    Trim {
        /// Keep the <n> most recently updated sessions
        #[arg(long, value_name = "n")]
        keep: Option<usize>,
        /// Remove sessions last updated more than <days> days ago (e.g. 30d)
        #[arg(long, value_name = "days")]
        older_than: Option<String>,
    },
}

/// `odek subagent` parses its own flags: its setup errors are results on stdout with exit 3.
#[derive(Debug, Args)]
pub struct SubagentArgs {
    /// --goal <s> | --task <file>, --context <s>, --timeout <sec>, --max-iter <n>, --quiet,
    /// --stream, --parent-session <id>, --profile <name>
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub flags: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum ExtCommand {
    /// Start every configured server and show its status, tools, limits and warnings
    List {
        /// Print one JSON document instead of text
        #[arg(long)]
        json: bool,
    },
    /// Call one tool through the same pipeline the agent uses and print what the model would see
    Call {
        /// Read `{"tool": …, "arguments": …}` lines from stdin and answer one JSON line per call
        #[arg(long, conflicts_with_all = ["tool", "arguments"])]
        jsonl: bool,
        /// The exposed tool name (`<server>__<tool>`)
        #[arg(required_unless_present = "jsonl")]
        tool: Option<String>,
        /// The tool arguments as JSON (default: none)
        arguments: Option<String>,
        /// Print exactly the tool message the model would receive (untrusted wrapper and
        /// tool-result delimiter included, an error as `error: <text>`); with --jsonl, add it to
        /// each answer as "model_view"
        #[arg(long)]
        model_view: bool,
    },
    /// Check an extension server against the odek-extension/v1 contract and report pass / warn /
    /// fail per check (exit 0 all pass, 1 any failure, 2 warnings only)
    Check(Box<ExtCheckArgs>),
    /// Log in to a remote server with OAuth: opens the authorization page ($BROWSER, else the
    /// desktop's opener, else printed) and waits for its redirect
    Login {
        /// The configured server's name
        server: String,
        /// Print the URL on stderr instead of opening a browser
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the redirect (seconds)
        #[arg(long, value_name = "SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
    },
    /// Forget a remote server's OAuth tokens (and revoke them at its authorization server, best
    /// effort)
    Logout {
        /// The configured server's name
        server: String,
    },
    /// The client leg of the official MCP conformance suite: connect to URL as a run would,
    /// call every tool, shut down (the suite appends the URL; see .ci/conformance)
    #[command(hide = true)]
    ConformanceClient {
        /// The scenario server's URL
        url: String,
    },
}

/// `odek ext check [flags] <configured-server>`, `odek ext check [flags] --url <url>` or
/// `odek ext check [flags] -- <command> [args...]`.
#[derive(Debug, Clone, Args)]
pub struct ExtCheckArgs {
    /// Print one JSON object with every check instead of the report
    #[arg(long)]
    pub json: bool,
    /// Per-request timeout in seconds (default: the server's timeout_seconds, else 30)
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub timeout: Option<u64>,
    /// A directory artifact refs may point into (repeatable; adds to the server's artifact_roots)
    #[arg(long = "artifact-root", value_name = "DIR")]
    pub artifact_roots: Vec<String>,
    /// Call TOOL with these JSON arguments instead of ones derived from its schema (repeatable)
    #[arg(long = "call", num_args = 2, value_names = ["TOOL", "JSON"])]
    pub calls: Vec<String>,
    /// Never call TOOL (for tools with side effects; repeatable)
    #[arg(long = "skip-call", value_name = "TOOL")]
    pub skip_calls: Vec<String>,
    /// Which tools to call: read-only (only tools annotated readOnlyHint: true; the default for a
    /// configured server) or all (every tool not annotated destructiveHint: true; the default
    /// after --). A tool annotated destructiveHint: true is only called with a --call example
    #[arg(long = "calls", value_name = "WHICH", value_parser = ["read-only", "all"])]
    pub call_policy: Option<String>,
    /// Concurrent calls in the load check
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value_t = odek_conformance::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    /// The server name used for exposed names (default: the command's file name, or the URL's host)
    #[arg(long, value_name = "NAME", conflicts_with = "server")]
    pub name: Option<String>,
    /// Check the Streamable HTTP server at this URL (http only to a loopback host unless
    /// --allow-insecure-http; no credentials in the URL)
    #[arg(long, value_name = "URL", conflicts_with_all = ["server", "command"])]
    pub url: Option<String>,
    /// A header sent with every request to --url, as 'Name: value' (repeatable; the value is
    /// never printed)
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// The environment variable holding a bearer token for --url (sent as Authorization: Bearer)
    #[arg(long, value_name = "VAR", requires = "url")]
    pub token_env: Option<String>,
    /// Allow plain http:// to a host that is not loopback (with --url)
    #[arg(long, requires = "url")]
    pub allow_insecure_http: bool,
    /// A server configured in mcp_servers
    #[arg(required_unless_present_any = ["command", "url"], conflicts_with = "command")]
    pub server: Option<String>,
    /// After `--`: the command that starts the server, and its arguments
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Flags `odek run` and `odek continue` share.
#[derive(Debug, Clone, Default, Args)]
pub struct LoopArgs {
    /// Think→act cycles at most (default 90)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_iter: Option<String>,
    /// Stream the model's answers (SSE)
    #[arg(long)]
    pub stream: bool,
    /// Thinking level: enabled, disabled, low, medium, high
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,
    /// Answer from a replay script instead of a model endpoint (with `--provider replay`)
    #[arg(long, value_name = "FILE")]
    pub replay: Option<std::path::PathBuf>,
    /// Write the model's answers to a replay script as the run goes
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
    /// Turn the plan tool off
    #[arg(long)]
    pub no_planning: bool,
    /// Turn the digest of trimmed context off
    #[arg(long)]
    pub no_compaction: bool,
    /// Do not ask the provider to cache the prompt prefix (Anthropic cache breakpoints)
    #[arg(long)]
    pub no_prompt_caching: bool,
    /// Allow only these tools (repeatable)
    #[arg(long = "tool", value_name = "NAME")]
    pub tools: Vec<String>,
    /// Disable a tool (repeatable)
    #[arg(long = "no-tool", value_name = "NAME")]
    pub no_tools: Vec<String>,
    /// Attach a file as context (repeatable)
    #[arg(long = "ctx", value_name = "FILE")]
    pub ctx: Vec<std::path::PathBuf>,
    /// Record an external-state reference in the session (repeatable; kind=uri or key=value pairs)
    #[arg(long = "external-ref", value_name = "SPEC")]
    pub external_refs: Vec<String>,
    /// Print nothing but warnings, errors and the final answer
    #[arg(long, short)]
    pub quiet: bool,
    /// Append the odek.event/v1 stream to this file as JSON lines (`-`: stdout, with --json)
    #[arg(long, value_name = "PATH")]
    pub events_jsonl: Option<String>,
    /// Add the (redacted) raw tool arguments to tool_call_started events
    #[arg(long)]
    pub events_include_args: bool,
    /// Print the final answer as one JSON object (the line after any events on stdout)
    #[arg(long)]
    pub json: bool,
    /// Wall-clock budget in seconds (exit 4 when exhausted)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub max_runtime: Option<String>,
    /// Budget of executed tool calls
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_tool_calls: Option<String>,
    /// Budget of cumulative input tokens
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_input_tokens: Option<String>,
    /// Budget of cumulative output tokens
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_output_tokens: Option<String>,
    /// Estimated cost budget in USD (needs prices in ~/.odek/config.json)
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub max_cost_usd: Option<String>,
    /// Any refused operation, MCP server that did not start or named tool that is missing ends
    /// the run with outcome denied (exit 7)
    #[arg(long)]
    pub strict: bool,
    /// Per model attempt: seconds until the first byte of the answer (default 120; exit 6 when
    /// it passes)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub first_byte_timeout: Option<String>,
    /// Longest silence of a streamed answer, in seconds (default 90; exit 6 when it passes)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub stream_idle_timeout: Option<String>,
    /// Start-up deadline of an MCP server that sets no startup_timeout_seconds (default 30)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub mcp_startup_timeout: Option<String>,
    /// Seconds MCP servers get to exit after the run before their process groups are killed
    /// (default 10)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub shutdown_drain: Option<String>,
    /// Seconds between run_heartbeat events in the event stream (default 30; 0 = none)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub heartbeat: Option<String>,
    /// JSON Schema (2020-12) file the final answer must match; printed as compact JSON (exit 5 if it never does)
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<std::path::PathBuf>,
    /// Answers sent back for not matching --output-schema before the run fails (default 2)
    #[arg(long, value_name = "N")]
    pub output_retries: Option<String>,
    /// Also write the final answer to this file (atomically, mode 0600; a symlink is refused)
    #[arg(long, value_name = "PATH")]
    pub output_file: Option<std::path::PathBuf>,
    /// A shell command that must exit 0 after the final answer (repeatable; failures go back to the model)
    #[arg(long = "check", value_name = "COMMAND")]
    pub checks: Vec<String>,
    /// Seconds each --check may run (default 300)
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub check_timeout: Option<String>,
    /// Times failing checks go back to the model before the run fails (default 3; exit 5)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_check_cycles: Option<String>,
    /// The task; everything after `--` is taken verbatim
    #[arg(value_name = "TASK", allow_hyphen_values = false)]
    pub task: Vec<String>,
}

/// \[beyond\] A liveness deadline flag (`--first-byte-timeout`, …): whole seconds from 1 to a
/// day, else `<flag> must be an integer from 1 to 86400 (seconds), got "<v>"`.
pub(crate) fn deadline_seconds(flag: &str, value: Option<&str>) -> Result<Option<u64>, CommandError> {
    seconds_in_range(flag, value, 1, "1")
}

/// \[beyond\] `--heartbeat`: whole seconds from 0 (off) to a day, else `--heartbeat must be an
/// integer from 0 (off) to 86400 (seconds), got "<v>"`.
pub(crate) fn heartbeat_seconds(value: Option<&str>) -> Result<Option<u64>, CommandError> {
    seconds_in_range("--heartbeat", value, 0, "0 (off)")
}

fn seconds_in_range(flag: &str, value: Option<&str>, min: u64, min_text: &str) -> Result<Option<u64>, CommandError> {
    let Some(value) = value else { return Ok(None) };
    let max = odek::config::MAX_DEADLINE_SECONDS;
    match value.parse::<u64>() {
        Ok(seconds) if (min..=max).contains(&seconds) => Ok(Some(seconds)),
        _ => Err(CommandError::Fatal(format!(
            "{flag} must be an integer from {min_text} to {max} (seconds), got {}",
            odek_contract::quoting::quote(value)
        ))),
    }
}

/// `odek run`.
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Model id sent to the provider
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Provider: openai (chat completions), openai-responses, anthropic, replay, or a name from providers in ~/.odek/config.json
    #[arg(long, value_name = "ID")]
    pub provider: Option<String>,
    /// Provider endpoint
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Identity prompt override (the security guidance is always kept)
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Do not read ./AGENTS.md
    #[arg(long)]
    pub no_agents: bool,
    /// Turn the plan tool on
    #[arg(long, conflicts_with = "no_planning")]
    pub planning: bool,
    /// Turn the digest of trimmed context on
    #[arg(long, conflicts_with = "no_compaction")]
    pub compaction: bool,
    /// Persist the run as a session under ~/.odek/sessions
    #[arg(long)]
    pub session: bool,
    /// Confine every process odek starts in the kernel sandbox (the default where the kernel can)
    #[arg(long, conflicts_with = "no_sandbox")]
    pub sandbox: bool,
    /// Run processes unconfined (refused when the sandbox is required)
    #[arg(long)]
    pub no_sandbox: bool,
    #[command(flatten)]
    pub common: LoopArgs,
}

/// `odek continue`.
#[derive(Debug, Clone, Default, Args)]
pub struct ContinueArgs {
    /// The session to resume (default: the latest)
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    #[command(flatten)]
    pub common: LoopArgs,
}

/// `odek repl`: the session flags, the model and endpoint flags of `odek run`, and the budgets.
/// `--tool` and `--no-tool` are refused by name ([`repl_rejected_flag`]).
#[derive(Debug, Clone, Default, Args)]
pub struct ReplArgs {
    /// Resume this session (default: a new one)
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Model id sent to the provider
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Provider: openai (chat completions), openai-responses, anthropic, replay, or a name from providers in ~/.odek/config.json
    #[arg(long, value_name = "ID")]
    pub provider: Option<String>,
    /// Provider endpoint
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Turn the plan tool on
    #[arg(long, conflicts_with = "no_planning")]
    pub planning: bool,
    /// Turn the plan tool off
    #[arg(long)]
    pub no_planning: bool,
    /// Turn the digest of trimmed context on
    #[arg(long, conflicts_with = "no_compaction")]
    pub compaction: bool,
    /// Turn the digest of trimmed context off
    #[arg(long)]
    pub no_compaction: bool,
    /// Do not ask the provider to cache the prompt prefix (Anthropic cache breakpoints)
    #[arg(long)]
    pub no_prompt_caching: bool,
    /// Stream the model's answers (SSE), printed as they arrive
    #[arg(long)]
    pub stream: bool,
    /// Thinking level: enabled, disabled, low, medium, high
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,
    /// Answer from a replay script instead of a model endpoint (with `--provider replay`)
    #[arg(long, value_name = "FILE")]
    pub replay: Option<std::path::PathBuf>,
    /// Write the model's answers to a replay script as the session goes
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
    /// Print nothing but warnings, errors and the answers
    #[arg(long, short)]
    pub quiet: bool,
    /// Append the odek.event/v1 stream of every turn to this file as JSON lines
    #[arg(long, value_name = "PATH")]
    pub events_jsonl: Option<String>,
    /// Add the (redacted) raw tool arguments to tool_call_started events
    #[arg(long)]
    pub events_include_args: bool,
    /// Think→act cycles at most per turn (default 90)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_iter: Option<String>,
    /// Wall-clock budget of each turn in seconds
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub max_runtime: Option<String>,
    /// Budget of executed tool calls for the session
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_tool_calls: Option<String>,
    /// Budget of cumulative input tokens for the session
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_input_tokens: Option<String>,
    /// Budget of cumulative output tokens for the session
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_output_tokens: Option<String>,
    /// Estimated cost budget of the session in USD (needs prices in ~/.odek/config.json)
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub max_cost_usd: Option<String>,
    /// Confine every process odek starts in the kernel sandbox (the default where the kernel can)
    #[arg(long, conflicts_with = "no_sandbox")]
    pub sandbox: bool,
    /// Run processes unconfined (refused when the sandbox is required)
    #[arg(long)]
    pub no_sandbox: bool,
}

impl ReplArgs {
    /// The same flags as `odek run` has them, so the REPL's overrides come from `run`'s parsing.
    pub fn as_run_args(&self) -> RunArgs {
        RunArgs {
            model: self.model.clone(),
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            planning: self.planning,
            compaction: self.compaction,
            session: true,
            sandbox: self.sandbox,
            no_sandbox: self.no_sandbox,
            common: LoopArgs {
                max_iter: self.max_iter.clone(),
                stream: self.stream,
                thinking: self.thinking.clone(),
                replay: self.replay.clone(),
                record: self.record.clone(),
                no_planning: self.no_planning,
                no_compaction: self.no_compaction,
                no_prompt_caching: self.no_prompt_caching,
                quiet: self.quiet,
                events_jsonl: self.events_jsonl.clone(),
                events_include_args: self.events_include_args,
                max_runtime: self.max_runtime.clone(),
                max_tool_calls: self.max_tool_calls.clone(),
                max_input_tokens: self.max_input_tokens.clone(),
                max_output_tokens: self.max_output_tokens.clone(),
                max_cost_usd: self.max_cost_usd.clone(),
                ..LoopArgs::default()
            },
            ..RunArgs::default()
        }
    }
}

/// Flags `odek repl` refuses by name: the reference's REPL has no tool selection.
const REJECTED_BY_REPL: &[&str] = &["--tool", "--no-tool"];

/// `odek repl: <flag> is not supported in the REPL` for the first refused flag.
fn repl_rejected_flag(args: &[OsString]) -> Option<String> {
    for arg in args.iter().skip(2) {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            return None;
        }
        let flag = arg.split('=').next().unwrap_or(arg);
        if REJECTED_BY_REPL.contains(&flag) {
            return Some(format!("odek repl: {flag} is not supported in the REPL\n"));
        }
    }
    None
}

/// Flags `odek continue` refuses because the session pins them (spec `loop-and-sessions.md` §10.5).
const PINNED_BY_SESSION: &[&str] =
    &["--model", "--provider", "--base-url", "--system", "--sandbox", "--no-sandbox", "--session"];

/// `odek continue: <flag> is pinned by the session and cannot be changed` for the first pinned
/// flag before `--`.
fn pinned_flag_error(args: &[OsString]) -> Option<String> {
    for arg in args.iter().skip(2) {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            return None;
        }
        let flag = arg.split('=').next().unwrap_or(arg);
        if PINNED_BY_SESSION.contains(&flag) || flag.starts_with("--sandbox-") {
            return Some(format!("odek continue: {flag} is pinned by the session and cannot be changed\n"));
        }
    }
    None
}

/// [beyond] `odek -C <dir> <command> …` (as `git -C`): the leading `-C <dir>` pairs, taken off
/// the arguments so that the command sees its usual ones. Each later `-C` is relative to the
/// one before, as in git; the caller changes directory to the returned path before anything
/// reads a file (config, `./odek.json`, the task's `@path`s). Only leading pairs count: a `-C`
/// after the command is the command's business.
pub fn take_directory_flags(args: &[OsString]) -> Result<(Option<std::path::PathBuf>, Vec<OsString>), String> {
    let mut directory: Option<std::path::PathBuf> = None;
    let mut rest = args.iter().skip(1).peekable();
    while rest.peek().is_some_and(|arg| *arg == "-C") {
        rest.next();
        let dir = rest.next().ok_or_else(|| "-C requires a value".to_owned())?;
        if dir.is_empty() {
            return Err("-C requires a value".to_owned());
        }
        directory = Some(match directory {
            Some(base) => base.join(dir),
            None => std::path::PathBuf::from(dir),
        });
    }
    let remaining = args.iter().take(1).cloned().chain(rest.cloned()).collect();
    Ok((directory, remaining))
}

/// The names `odek` accepts as its first word.
const COMMANDS: &[&str] = &["ext", "run", "continue", "repl", "session", "subagent", "mcp", "acp", "serve"];

/// What parsing decided.
#[derive(Debug)]
pub enum Parsed {
    Command(Box<Command>),
    /// Help, version or an error: print, then end with `outcome` (a usage error is
    /// [`CommandError::Reported`]: its text is `stderr`).
    Exit {
        stdout: String,
        stderr: String,
        outcome: Result<(), CommandError>,
    },
}

/// Parses `args` (including the program name).
pub fn parse_args(args: &[OsString]) -> Parsed {
    if let Some(first) = args.get(1).and_then(|arg| arg.to_str())
        && !first.starts_with('-')
        && !COMMANDS.contains(&first)
    {
        let usage = Cli::command().render_help().to_string();
        return Parsed::Exit {
            stdout: String::new(),
            stderr: format!("odek: unknown command {}\n\n{usage}", odek_contract::quoting::quote(first)),
            outcome: Err(CommandError::Reported),
        };
    }
    // Everything after `subagent` is its own (help included): see `commands::subagent`.
    if args.get(1).and_then(|arg| arg.to_str()) == Some("subagent") {
        let flags = args[2..].iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
        return Parsed::Command(Box::new(Command::Subagent(SubagentArgs { flags })));
    }
    if args.get(1).and_then(|arg| arg.to_str()) == Some("continue")
        && let Some(stderr) = pinned_flag_error(args)
    {
        return Parsed::Exit { stdout: String::new(), stderr, outcome: Err(CommandError::Reported) };
    }
    if args.get(1).and_then(|arg| arg.to_str()) == Some("repl")
        && let Some(stderr) = repl_rejected_flag(args)
    {
        return Parsed::Exit { stdout: String::new(), stderr, outcome: Err(CommandError::Reported) };
    }
    match Cli::try_parse_from(args) {
        Ok(cli) => Parsed::Command(Box::new(cli.command)),
        Err(error) => from_clap_error(&error),
    }
}

fn from_clap_error(error: &clap::Error) -> Parsed {
    let rendered = error.render().to_string();
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            Parsed::Exit { stdout: rendered, stderr: String::new(), outcome: Ok(()) }
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
            Parsed::Exit { stdout: String::new(), stderr: rendered, outcome: Err(CommandError::Reported) }
        }
        kind => {
            let message = match (kind, context_string(error, ContextKind::InvalidArg)) {
                (ErrorKind::UnknownArgument, Some(flag)) => {
                    let flag = flag.split('=').next().unwrap_or(&flag).to_owned();
                    format!("unknown flag {}", odek_contract::quoting::quote(&flag))
                }
                (ErrorKind::InvalidSubcommand, _) => match context_string(error, ContextKind::InvalidSubcommand) {
                    Some(command) => format!("unknown command {}", odek_contract::quoting::quote(&command)),
                    None => first_line(&rendered),
                },
                (ErrorKind::InvalidValue | ErrorKind::NoEquals, Some(flag)) if is_missing_value(error) => {
                    format!("{} requires a value", flag.split_whitespace().next().unwrap_or(&flag))
                }
                _ => first_line(&rendered),
            };
            Parsed::Exit {
                stdout: String::new(),
                stderr: format!("odek: {message}\n"),
                outcome: Err(CommandError::Reported),
            }
        }
    }
}

fn context_string(error: &clap::Error, kind: ContextKind) -> Option<String> {
    match error.get(kind)? {
        ContextValue::String(value) => Some(value.clone()),
        ContextValue::Strings(values) => values.first().cloned(),
        _ => None,
    }
}

fn is_missing_value(error: &clap::Error) -> bool {
    matches!(error.get(ContextKind::InvalidValue), Some(ContextValue::String(value)) if value.is_empty())
}

fn first_line(rendered: &str) -> String {
    let line = rendered.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Parsed {
        let args: Vec<OsString> = std::iter::once("odek").chain(args.iter().copied()).map(OsString::from).collect();
        parse_args(&args)
    }

    fn command(args: &[&str]) -> Command {
        match parse(args) {
            Parsed::Command(command) => *command,
            Parsed::Exit { stderr, .. } => panic!("expected a command, got {stderr}"),
        }
    }

    fn exit(parsed: Parsed) -> (String, String, u8) {
        match parsed {
            Parsed::Exit { stdout, stderr, outcome } => (stdout, stderr, crate::outcome::exit_code(&outcome)),
            Parsed::Command(command) => panic!("expected exit, got {command:?}"),
        }
    }

    #[test]
    fn leading_directory_flags_are_taken_off() {
        let args = |words: &[&str]| -> Vec<OsString> { words.iter().map(OsString::from).collect() };
        let (dir, rest) = take_directory_flags(&args(&["odek", "-C", "a", "-C", "b", "run", "-C", "x"])).unwrap();
        assert_eq!(dir, Some(std::path::PathBuf::from("a/b")));
        assert_eq!(rest, args(&["odek", "run", "-C", "x"]));
        let (dir, rest) = take_directory_flags(&args(&["odek", "ext", "list"])).unwrap();
        assert_eq!((dir, rest), (None, args(&["odek", "ext", "list"])));
        assert_eq!(take_directory_flags(&args(&["odek", "-C"])).unwrap_err(), "-C requires a value");
        assert_eq!(take_directory_flags(&args(&["odek", "-C", ""])).unwrap_err(), "-C requires a value");
    }

    #[test]
    fn unknown_command_prints_usage_and_exits_1() {
        let (stdout, stderr, code) = exit(parse(&["frobnicate", "--x"]));
        assert_eq!(code, 1);
        assert!(stdout.is_empty());
        assert!(stderr.starts_with("odek: unknown command \"frobnicate\"\n\n"), "{stderr}");
        assert!(stderr.contains("Usage: odek"), "{stderr}");
    }

    #[test]
    fn unknown_flag_is_named() {
        let (_, stderr, code) = exit(parse(&["ext", "list", "--bogus=1"]));
        assert_eq!((stderr.as_str(), code), ("odek: unknown flag \"--bogus\"\n", 1));
    }

    #[test]
    fn unknown_ext_subcommand() {
        let (_, stderr, code) = exit(parse(&["ext", "nope"]));
        assert_eq!((stderr.as_str(), code), ("odek: unknown command \"nope\"\n", 1));
    }

    #[test]
    fn version_and_help_go_to_stdout() {
        let (stdout, stderr, code) = exit(parse(&["--version"]));
        assert_eq!(stdout, format!("odek {}\n", env!("CARGO_PKG_VERSION")));
        assert!(stderr.is_empty());
        assert_eq!(code, 0);
        let (stdout, _, code) = exit(parse(&["--help"]));
        assert!(stdout.contains("ext"));
        assert_eq!(code, 0);
    }

    #[test]
    fn run_takes_flags_before_and_after_the_task_and_verbatim_text_after_dashes() {
        match command(&["run", "--model", "m", "fix", "the", "--quiet", "bug", "--", "--not-a-flag", "x"]) {
            Command::Run(args) => {
                assert_eq!(args.model.as_deref(), Some("m"));
                assert!(args.common.quiet);
                assert_eq!(args.common.task, ["fix", "the", "bug", "--not-a-flag", "x"]);
            }
            other => panic!("{other:?}"),
        }
        let (_, stderr, code) = exit(parse(&["run", "task", "--frobnicate"]));
        assert_eq!((stderr.as_str(), code), ("odek: unknown flag \"--frobnicate\"\n", 1));
        let (_, stderr, _) = exit(parse(&["run", "task", "--model"]));
        assert_eq!(stderr, "odek: --model requires a value\n");
    }

    #[test]
    fn continue_refuses_pinned_flags_by_name() {
        for flag in [
            "--model",
            "--provider=x",
            "--base-url",
            "--system",
            "--sandbox",
            "--no-sandbox",
            "--sandbox-image",
            "--session",
        ] {
            let (_, stderr, code) = exit(parse(&["continue", "more", flag]));
            let name = flag.split('=').next().unwrap();
            assert_eq!(stderr, format!("odek continue: {name} is pinned by the session and cannot be changed\n"));
            assert_eq!(code, 1);
        }
        assert!(matches!(command(&["continue", "--", "--model"]), Command::Continue(_)));
    }

    #[test]
    fn ext_call_forms() {
        match command(&["ext", "call", "fixture__echo", r#"{"text":"hi"}"#]) {
            Command::Ext(ExtCommand::Call {
                jsonl: false,
                tool: Some(tool),
                arguments: Some(args),
                model_view: false,
            }) => {
                assert_eq!(tool, "fixture__echo");
                assert_eq!(args, r#"{"text":"hi"}"#);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(command(&["ext", "call", "--jsonl"]), Command::Ext(ExtCommand::Call { jsonl: true, .. })));
        assert!(matches!(
            command(&["ext", "call", "--model-view", "fixture__echo"]),
            Command::Ext(ExtCommand::Call { model_view: true, tool: Some(_), arguments: None, .. })
        ));
        assert!(matches!(
            command(&["ext", "call", "--jsonl", "--model-view"]),
            Command::Ext(ExtCommand::Call { jsonl: true, model_view: true, .. })
        ));
        let (_, _, code) = exit(parse(&["ext", "call"]));
        assert_eq!(code, 1);
    }
}
