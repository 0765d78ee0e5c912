//! `odek ext`: what the model will see from the configured extension servers, observable from the
//! shell. `list` starts every server and reports each one; `call` runs tools through exactly the
//! pipeline the agent uses (config, approvals, startup, the MCP call pipeline) and prints the
//! contract's text, before the loop's untrusted wrapper — or, with `--model-view`, the whole
//! tool message the loop builds from it (docs/MODEL-VIEW.md).

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use odek::agent::run::{outcome_text, tool_message};
use odek::agent::tool::{ToolError, ToolOutcome};
use odek::agent::{LIST_MCP_RESOURCES, READ_MCP_RESOURCE, call_resource_tool, mcp_outcome};
use odek::mcp::bounded_lines::{BoundedLineReader, Overflow};
use odek::mcp::hub::optional_failure_warning;
use odek::mcp::{
    CallOptions, McpError, McpEvent, McpHub, McpObserver, ServerSpec, StderrObserver, ToolDescriptor, Transport,
};
use odek_contract::terminal_text::{Layout, sanitise_for_terminal};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

#[path = "ext_check.rs"]
mod check;
#[path = "conformance_client.rs"]
mod conformance_client;
#[path = "ext_login.rs"]
mod login;

use odek::setup::{Setup, run_unconfined, start_hub, start_servers, validated};

use super::run::load_setup;
use crate::cli::ExtCommand;
use crate::interrupt::cancel_on_stop_signals;
use crate::outcome::CommandError;
use crate::terminal::console::StdConsole;
use crate::terminal::print_warning;
use odek::config::{McpServerConfig, ServerOrigin};

/// The argument text of a call given no arguments.
const NO_ARGUMENTS: &str = "{}";

/// Longest request line `odek ext call --jsonl` reads (16 MiB).
pub const MAX_JSONL_LINE_BYTES: usize = 16 * 1024 * 1024;

pub async fn run(command: ExtCommand) -> Result<(), CommandError> {
    match command {
        ExtCommand::List { json } => list(json).await,
        ExtCommand::Check(args) => check::check(*args).await,
        ExtCommand::Login { server, no_browser, timeout } => login::login(&server, no_browser, timeout).await,
        ExtCommand::Logout { server } => login::logout(&server).await,
        ExtCommand::ConformanceClient { url } => conformance_client::run(&url).await,
        ExtCommand::Call { jsonl: true, model_view, .. } => call_jsonl(model_view).await,
        // Without arguments the call sends `{}`: MCP servers built on the TypeScript SDK reject
        // the `null` an empty argument string becomes (pass '' to send exactly that).
        ExtCommand::Call { tool, arguments, model_view, .. } => {
            call_one(&tool.unwrap_or_default(), arguments.as_deref().unwrap_or(NO_ARGUMENTS), model_view).await
        }
    }
}

/// Startup exactly as a run does it: validate every enabled server, approve project servers,
/// then start them all; the first failure is fatal. `ext call --jsonl` starts this way, up front
/// (a request line may name any server, and a sequence is meant to reuse the same processes).
async fn start_for_calls(observer: Arc<dyn McpObserver>) -> Result<McpHub, CommandError> {
    Ok(start_hub(&load_server_setup()?, observer, Arc::new(StdConsole)).await?)
}

/// The config loaded and, \[beyond\], the sandbox of the config files prepared: the servers that
/// ask for it run confined under `odek ext` as they do in a run.
fn load_server_setup() -> Result<Setup, CommandError> {
    let mut setup = load_setup()?;
    setup.prepare_server_sandbox(&print_warning)?;
    Ok(setup)
}

/// [beyond] Startup for one `ext call <server>__<tool>`: as [`start_for_calls`], but only for
/// the server the name belongs to ([`servers_for_call`]), so no other server is spawned or
/// asked about.
async fn start_for_call(tool: &str, observer: Arc<dyn McpObserver>) -> Result<McpHub, CommandError> {
    let setup = load_server_setup()?;
    let servers = servers_for_call(&setup, tool)?;
    Ok(start_servers(&setup, servers, observer, Arc::new(StdConsole)).await?)
}

/// The servers one `ext call <server>__<tool>` starts: every enabled server whose
/// `<name>__` begins the exposed name (a name may end in `_`, so `fx___echo` can be `fx_`'s
/// `echo` as well as `fx`'s `_echo`), or — for an exposed name shortened to 64 characters, whose
/// head may end inside the server name — every enabled server that head could belong to.
/// Those servers are treated as required: the operator asked for one of them, so its own error
/// is the answer. A name that fits no enabled server fails before anything is started.
fn servers_for_call(setup: &Setup, tool: &str) -> Result<Vec<McpServerConfig>, CommandError> {
    use odek_contract::names::QUALIFIER;
    use odek_contract::quoting::quote;
    let configured = &setup.loaded.config.mcp_servers;
    let prefixed: Vec<&McpServerConfig> = configured
        .iter()
        .filter(|server| tool.strip_prefix(server.name.as_str()).is_some_and(|rest| rest.starts_with(QUALIFIER)))
        .collect();
    let mut chosen: Vec<McpServerConfig> =
        prefixed.iter().filter(|server| server.entry.is_enabled()).map(|server| (*server).clone()).collect();
    if chosen.is_empty() {
        if let Some(disabled) = prefixed.first() {
            return Err(CommandError::Fatal(format!(
                "ext call: tool {}: MCP server {} is disabled (enabled: false)",
                quote(tool),
                quote(&disabled.name)
            )));
        }
        chosen = configured
            .iter()
            .filter(|server| server.entry.is_enabled() && could_be_shortened_from(tool, &server.name))
            .cloned()
            .collect();
    }
    if chosen.is_empty() {
        let prefix = tool.split_once(QUALIFIER).map_or(tool, |(server, _)| server);
        let names: Vec<String> = configured.iter().map(|server| quote(&server.name)).collect();
        let listing = if names.is_empty() {
            "no MCP servers are configured".to_owned()
        } else {
            format!("configured servers: {}", names.join(", "))
        };
        return Err(CommandError::Fatal(format!(
            "ext call: tool {} names no configured MCP server {}; {listing}",
            quote(tool),
            quote(prefix)
        )));
    }
    for server in &mut chosen {
        server.entry.required = Some(true);
    }
    Ok(chosen)
}

/// Whether `tool` is a shortened exposed name (spec `mcp-client.md` §3: 55 characters, `_`, 8
/// hex digits) whose head is consistent with `<server>__`.
fn could_be_shortened_from(tool: &str, server: &str) -> bool {
    use odek_contract::names::{MAX_NAME_BYTES, QUALIFIER};
    const HEAD_CHARS: usize = 55;
    if tool.len() != MAX_NAME_BYTES || !tool.is_ascii() {
        return false;
    }
    let (head, hash) = tool.split_at(HEAD_CHARS);
    let hash_ok = hash.strip_prefix('_').is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()));
    let qualified = format!("{server}{QUALIFIER}");
    hash_ok && (head.starts_with(&qualified) || qualified.starts_with(head))
}

async fn call_one(tool: &str, arguments: &str, model_view: bool) -> Result<(), CommandError> {
    if is_resource_tool(tool) {
        return call_resource_tool_once(tool, arguments, model_view).await;
    }
    let hub = start_for_call(tool, Arc::new(CallObserver)).await?;
    let options = CallOptions { deadline: None, cancel: Some(cancel_on_stop_signals()) };
    let descriptor = hub.tool(tool);
    let outcome = hub.call(tool, arguments, &options).await;
    hub.shutdown().await;
    let mut stdout = std::io::stdout().lock();
    if model_view {
        // The model view of a failed call is its `error: ` message: printed, then exit 1.
        let (message, failed) = model_view_message(tool, descriptor.as_ref(), outcome);
        writeln!(stdout, "{message}")?;
        stdout.flush()?;
        return if failed { Err(CommandError::Reported) } else { Ok(()) };
    }
    let output = outcome?;
    // What the model would see is redacted (a server may echo a `secret_env` value back).
    writeln!(stdout, "{}", odek_contract::redaction::redact(&output.text))?;
    stdout.flush()?;
    Ok(())
}

/// [beyond] Whether `tool` is one of the resource tools (`list_mcp_resources`,
/// `read_mcp_resource`), which `ext call` runs as the loop does, over every enabled server.
fn is_resource_tool(tool: &str) -> bool {
    tool == LIST_MCP_RESOURCES || tool == READ_MCP_RESOURCE
}

/// One resource tool call: the servers started as a run starts them (the tool's `server`
/// argument may name any of them), the call through the loop's own tool, printed as a tool's.
async fn call_resource_tool_once(tool: &str, arguments: &str, model_view: bool) -> Result<(), CommandError> {
    let hub = Arc::new(start_for_calls(Arc::new(StderrObserver)).await?);
    let options = CallOptions { deadline: None, cancel: Some(cancel_on_stop_signals()) };
    let outcome = resource_tool_outcome(&hub, tool, arguments, options).await;
    hub.shutdown().await;
    let mut stdout = std::io::stdout().lock();
    if model_view {
        writeln!(stdout, "{}", tool_message(tool, &outcome_text(&outcome)))?;
        stdout.flush()?;
        return if outcome.is_err() { Err(CommandError::Reported) } else { Ok(()) };
    }
    let outcome =
        outcome.map_err(|error| CommandError::Fatal(odek_contract::redaction::redact(&error.message).into_owned()))?;
    writeln!(stdout, "{}", odek_contract::redaction::redact(&outcome.output))?;
    stdout.flush()?;
    Ok(())
}

/// A resource tool's outcome; `tool "<name>" not found` when no server offers resources, as the
/// loop would answer (the tools are not offered then).
async fn resource_tool_outcome(
    hub: &Arc<McpHub>,
    tool: &str,
    arguments: &str,
    options: CallOptions,
) -> Result<ToolOutcome, ToolError> {
    call_resource_tool(hub, tool, arguments, options)
        .await
        .unwrap_or_else(|| Err(ToolError::new(McpError::ToolNotFound { exposed: tool.to_owned() }.to_string())))
}

/// Exactly the tool message the agent's loop builds for this call (the same functions: the MCP
/// tool's outcome, then redaction, the untrusted wrapper or `error: `, compression and the
/// tool-result delimiter under a fresh nonce), and whether the call failed.
fn model_view_message(
    tool: &str,
    descriptor: Option<&ToolDescriptor>,
    outcome: Result<odek::mcp::ToolOutput, McpError>,
) -> (String, bool) {
    let outcome = match descriptor {
        Some(descriptor) => mcp_outcome(descriptor, outcome),
        None => Err(ToolError::new(McpError::ToolNotFound { exposed: tool.to_owned() }.to_string())),
    };
    (tool_message(tool, &outcome_text(&outcome)), outcome.is_err())
}

/// One `--jsonl` request line.
#[derive(Deserialize)]
struct CallRequest {
    tool: String,
    /// A JSON string is the raw argument text as a model would send it (even when it is not
    /// JSON, and `""` for an empty string, sent as `null`); any other value is sent compactly;
    /// absent means `{}`.
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

/// One `--jsonl` answer line.
#[derive(Serialize)]
struct CallRecord {
    tool: Option<String>,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    duration_ms: u64,
    /// [beyond] Present when the `max_result_chars` cap cut the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    observed_chars: Option<usize>,
    /// [beyond] With `--model-view`: the tool message the model would receive.
    #[serde(skip_serializing_if = "Option::is_none")]
    model_view: Option<String>,
}

/// Reads requests from stdin and answers each in order against the same server processes, so a
/// sequence (a timeout then a reuse, a crash then a restart) can be scripted. Tool-list changes
/// are applied before each call, as the loop does before each model turn.
async fn call_jsonl(model_view: bool) -> Result<(), CommandError> {
    let hub = Arc::new(start_for_calls(Arc::new(CallObserver)).await?);
    let cancel = cancel_on_stop_signals();
    let outcome = answer_lines(&hub, &cancel, model_view).await;
    hub.shutdown().await;
    outcome
}

async fn answer_lines(hub: &Arc<McpHub>, cancel: &CancellationToken, model_view: bool) -> Result<(), CommandError> {
    let mut requests = BoundedLineReader::new(tokio::io::stdin(), MAX_JSONL_LINE_BYTES, Overflow::Fail);
    loop {
        let line = tokio::select! {
            () = cancel.cancelled() => return Err(CommandError::Fatal("interrupted".into())),
            line = requests.next_line() => line,
        };
        let line = match line {
            Ok(Some(line)) => line.bytes,
            Ok(None) => return Ok(()),
            Err(err) => return Err(CommandError::Fatal(format!("ext call --jsonl: read stdin: {err}"))),
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let record = match serde_json::from_slice::<CallRequest>(&line) {
            Err(err) => CallRecord {
                tool: None,
                ok: false,
                text: None,
                error: Some(format!("invalid request line: {err}")),
                duration_ms: 0,
                observed_chars: None,
                model_view: None,
            },
            Ok(request) => answer(hub, request, cancel, model_view).await,
        };
        let mut stdout = std::io::stdout().lock();
        serde_json::to_writer(&mut stdout, &record)?;
        stdout.write_all(b"\n")?;
        stdout.flush()?;
    }
}

async fn answer(hub: &Arc<McpHub>, request: CallRequest, cancel: &CancellationToken, model_view: bool) -> CallRecord {
    let arguments = match request.arguments {
        None => NO_ARGUMENTS.to_owned(),
        Some(serde_json::Value::String(raw)) => raw,
        Some(value) => value.to_string(),
    };
    hub.refresh_stale().await;
    if is_resource_tool(&request.tool) {
        return answer_resource_tool(hub, request.tool, &arguments, cancel, model_view).await;
    }
    // The model view renders with the tool's descriptor as the loop holds it; a plain answer
    // needs none (a clone per call was most of what a call allocated).
    let descriptor = if model_view { hub.tool(&request.tool) } else { None };
    let started = Instant::now();
    let options = CallOptions { deadline: None, cancel: Some(cancel.clone()) };
    let outcome = hub.call(&request.tool, &arguments, &options).await;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let view = model_view.then(|| model_view_message(&request.tool, descriptor.as_ref(), outcome.clone()).0);
    match outcome {
        Ok(output) => CallRecord {
            tool: Some(request.tool),
            ok: true,
            text: Some(odek_contract::redaction::redact(&output.text).into_owned()),
            error: None,
            duration_ms,
            observed_chars: output.observed_chars,
            model_view: view,
        },
        Err(err) => CallRecord {
            tool: Some(request.tool),
            ok: false,
            text: None,
            error: Some(odek_contract::redaction::redact(&err.to_string()).into_owned()),
            duration_ms,
            observed_chars: None,
            model_view: view,
        },
    }
}

/// One `--jsonl` request for a resource tool, answered as [`answer`] answers a tool's.
async fn answer_resource_tool(
    hub: &Arc<McpHub>,
    tool: String,
    arguments: &str,
    cancel: &CancellationToken,
    model_view: bool,
) -> CallRecord {
    let started = Instant::now();
    let options = CallOptions { deadline: None, cancel: Some(cancel.clone()) };
    let outcome = resource_tool_outcome(hub, &tool, arguments, options).await;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let view = model_view.then(|| tool_message(&tool, &outcome_text(&outcome)));
    let redact = |text: &str| odek_contract::redaction::redact(text).into_owned();
    let (text, error, observed_chars) = match &outcome {
        Ok(outcome) => (
            Some(redact(&outcome.output)),
            None,
            outcome.observed_chars().map(|chars| usize::try_from(chars).unwrap_or(usize::MAX)),
        ),
        Err(error) => (None, Some(redact(&error.message)), None),
    };
    CallRecord { tool: Some(tool), ok: outcome.is_ok(), text, error, duration_ms, observed_chars, model_view: view }
}

/// What `ext call` shows on stderr while its calls run: what a run shows of its servers
/// ([`StderrObserver`]: start-up, restarts, warnings, stderr and log lines), and the progress a
/// running call reports, as a line of its server (`[<server>] progress 2/5: <message>`).
struct CallObserver;

impl McpObserver for CallObserver {
    fn event(&self, event: McpEvent) {
        StderrObserver.event(event);
    }

    fn warning(&self, server: &str, text: &str) {
        StderrObserver.warning(server, text);
    }

    fn server_line(&self, server: &str, line: &str) {
        StderrObserver.server_line(server, line);
    }

    fn shows_progress(&self) -> bool {
        true
    }
}

/// Collects each server's warnings for the listing while still printing them on stderr; every
/// text is redacted first (a server's error or warning may echo a `secret_env` value).
#[derive(Default)]
struct ListObserver {
    warnings: Mutex<BTreeMap<String, Vec<String>>>,
}

impl ListObserver {
    fn add(&self, server: &str, text: &str) {
        self.warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(server.to_owned())
            .or_default()
            .push(text.to_owned());
    }

    fn take(&self, server: &str) -> Vec<String> {
        self.warnings.lock().unwrap_or_else(PoisonError::into_inner).remove(server).unwrap_or_default()
    }
}

impl McpObserver for ListObserver {
    fn event(&self, event: McpEvent) {
        StderrObserver.event(event);
    }

    fn warning(&self, server: &str, text: &str) {
        let text = odek_contract::redaction::redact(text);
        StderrObserver.warning(server, &text);
        self.add(server, &text);
    }

    fn server_line(&self, server: &str, line: &str) {
        StderrObserver.server_line(server, &odek_contract::redaction::redact(line));
    }
}

/// An error as `odek ext list` shows it, on stdout and stderr: redacted, since a failing server
/// may quote its own token back (`secret_env` values are known secrets).
fn listed_error(error: &dyn std::fmt::Display) -> String {
    odek_contract::redaction::redact(&error.to_string()).into_owned()
}

/// One server in `odek ext list`.
#[derive(Serialize)]
struct ServerReport {
    name: String,
    /// `ok`, `failed` or `disabled`.
    status: &'static str,
    origin: &'static str,
    /// [beyond] `false` for a `required: false` server: its failure is a warning, as in a run.
    required: bool,
    /// [beyond] The names of the variables `secret_env` hands the server; never their values.
    secret_env: Vec<String>,
    /// [beyond] A remote server's endpoint, and the names of the headers sent to it (never
    /// their values).
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    headers: Vec<String>,
    /// \[beyond\] A remote server's authorization: `token_env`, `header`, `none`, or `oauth: <state>`
    /// (never a token).
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol_version: Option<String>,
    tool_count: usize,
    tools: Vec<String>,
    /// [beyond] The server sent instructions that reach the system prompt.
    instructions: bool,
    /// [beyond] The server offers resources (`list_mcp_resources`, `read_mcp_resource`).
    resources: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<LimitsReport>,
    artifact_roots: Vec<String>,
    warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
struct LimitsReport {
    timeout_seconds: u64,
    max_response_bytes: usize,
    max_result_chars: usize,
}

impl From<odek::mcp::Limits> for LimitsReport {
    fn from(limits: odek::mcp::Limits) -> Self {
        LimitsReport {
            timeout_seconds: limits.timeout.as_secs(),
            max_response_bytes: limits.max_response_bytes,
            max_result_chars: limits.max_result_chars,
        }
    }
}

/// Starts every configured server independently and reports each; exit 1 if a required server
/// failed ([beyond] a `required: false` server's failure is reported and warned about, and does
/// not change the exit code, as it would not fail a run).
async fn list(json: bool) -> Result<(), CommandError> {
    let setup = load_server_setup()?;
    let observer = Arc::new(ListObserver::default());
    let approvals = setup.approvals(Arc::new(StdConsole));
    let mut reports: BTreeMap<String, ServerReport> = BTreeMap::new();
    let mut startable = Vec::new();
    let mut specs: Vec<ServerSpec> = Vec::new();
    for server in &setup.loaded.config.mcp_servers {
        let mut report = ServerReport {
            name: server.name.clone(),
            status: "disabled",
            origin: match server.origin {
                ServerOrigin::Global => "global",
                ServerOrigin::Project => "project",
            },
            required: server.entry.is_required(),
            secret_env: server.entry.secret_env.keys().cloned().collect(),
            url: server.entry.url.clone().filter(|url| !url.is_empty()),
            headers: server.entry.headers.keys().cloned().collect(),
            auth: None,
            protocol_version: None,
            tool_count: 0,
            tools: Vec::new(),
            instructions: false,
            resources: false,
            limits: None,
            artifact_roots: server.entry.artifact_roots.clone(),
            warnings: Vec::new(),
            error: None,
        };
        if server.entry.is_enabled() {
            let prepared =
                validated(server, observer.as_ref()).map_err(|err| listed_error(&err)).and_then(|mut spec| {
                    let unconfined = approvals
                        .approve_project_servers(std::slice::from_ref(server))
                        .map_err(|err| listed_error(&err))?;
                    run_unconfined(std::slice::from_mut(&mut spec), &unconfined, observer.as_ref());
                    Ok(spec)
                });
            match prepared {
                Ok(spec) => {
                    report.limits = Some(spec.limits.into());
                    specs.push(spec);
                    startable.push(server.clone());
                }
                Err(error) => {
                    report.status = "failed";
                    report.error = Some(error);
                }
            }
        }
        reports.insert(server.name.clone(), report);
    }

    let approver = Arc::new(approvals.tool_approver(&startable)?);
    let remote: Vec<ServerSpec> =
        specs.iter().filter(|spec| matches!(spec.transport, Transport::Http { .. })).cloned().collect();
    let (hub, failures) = McpHub::start_report(specs, setup.hub_options(observer.clone(), approver)).await;
    for info in hub.servers() {
        if let Some(report) = reports.get_mut(&info.name) {
            report.status = "ok";
            report.protocol_version = Some(info.protocol_version);
            report.tool_count = info.tools.len();
            report.tools = info.tools.into_iter().map(odek_contract::names::ExposedName::into_string).collect();
            report.instructions = info.instructions;
            report.resources = info.resources;
        }
    }
    for (name, error) in &failures {
        if let Some(report) = reports.get_mut(name) {
            report.status = "failed";
            report.protocol_version = None;
            report.tool_count = 0;
            report.tools.clear();
            report.error = Some(listed_error(error));
        }
    }
    hub.shutdown().await;
    for spec in &remote {
        if let Some(report) = reports.get_mut(&spec.name) {
            report.auth = login::auth_state(&setup, spec, report.status == "ok");
        }
    }
    for report in reports.values_mut() {
        report.warnings = observer.take(&report.name);
    }

    let reports: Vec<ServerReport> = reports.into_values().collect();
    let mut stdout = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut stdout, &serde_json::json!({ "servers": reports }))?;
        writeln!(stdout)?;
    } else {
        write_listing(&mut stdout, &reports)?;
    }
    stdout.flush()?;
    drop(stdout);
    let mut failed = false;
    for report in &reports {
        match &report.error {
            Some(error) if report.required => {
                eprintln!("odek: {}", sanitise_for_terminal(error, Layout::Lines));
                failed = true;
            }
            // Worded as a run words it, on one line.
            Some(error) => {
                print_warning(&optional_failure_warning(&report.name, error));
            }
            None => {}
        }
    }
    if failed { Err(CommandError::Reported) } else { Ok(()) }
}

/// The text listing. The server's protocol version and the configured values are shown as
/// terminal-safe text: a server answers what it likes, and a project's `odek.json` is not ours.
fn write_listing(out: &mut impl Write, reports: &[ServerReport]) -> std::io::Result<()> {
    let line = |text: &str| sanitise_for_terminal(text, Layout::Line).into_owned();
    if reports.is_empty() {
        writeln!(
            out,
            "no MCP servers configured (add mcp_servers to ~/.odek/config.json or ./odek.json, or mcpServers to ./.mcp.json)"
        )?;
    }
    for report in reports {
        let origin =
            if report.required { report.origin.to_owned() } else { format!("{}, required: false", report.origin) };
        match report.status {
            "ok" => writeln!(
                out,
                "{} ({origin}): ok, protocol {}, {} tool(s)",
                report.name,
                line(report.protocol_version.as_deref().filter(|v| !v.is_empty()).unwrap_or("(none)")),
                report.tool_count
            )?,
            status => writeln!(out, "{} ({origin}): {status}", report.name)?,
        }
        if !report.secret_env.is_empty() {
            writeln!(out, "  secret_env: {}", line(&report.secret_env.join(", ")))?;
        }
        if let Some(url) = &report.url {
            writeln!(out, "  url: {}", line(url))?;
        }
        if !report.headers.is_empty() {
            writeln!(out, "  headers: {}", line(&report.headers.join(", ")))?;
        }
        if let Some(auth) = &report.auth {
            writeln!(out, "  auth: {}", line(auth))?;
        }
        if let Some(limits) = &report.limits {
            writeln!(
                out,
                "  limits: timeout_seconds={} max_response_bytes={} max_result_chars={}",
                limits.timeout_seconds, limits.max_response_bytes, limits.max_result_chars
            )?;
        }
        if report.status != "disabled" {
            let roots = if report.artifact_roots.is_empty() {
                "(none: every artifact ref is rejected)".to_owned()
            } else {
                line(&report.artifact_roots.join(", "))
            };
            writeln!(out, "  artifact_roots: {roots}")?;
        }
        if report.instructions {
            writeln!(out, "  instructions: sent (in the system prompt, screened and wrapped)")?;
        }
        if report.resources {
            writeln!(out, "  resources: offered (list_mcp_resources, read_mcp_resource)")?;
        }
        for tool in &report.tools {
            writeln!(out, "  tool: {tool}")?;
        }
        for warning in &report.warnings {
            writeln!(out, "  warning: {}", sanitise_for_terminal(warning, Layout::Lines))?;
        }
        if let Some(error) = &report.error {
            writeln!(out, "  error: {}", sanitise_for_terminal(error, Layout::Lines))?;
        }
    }
    Ok(())
}
