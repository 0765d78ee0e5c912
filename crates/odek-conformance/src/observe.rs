//! The observing half of a check run: [`observe`] starts the server (or opens an HTTP session)
//! once, drives it through the handshake, its tool list, a call of each planned tool, a burst of
//! concurrent calls and a shutdown, and records [`Observations`] — restarting the server (a new
//! session over HTTP) when a step kills the connection, so later steps still run. Nothing here
//! judges; `checks` does.
//!
//! Which tools are called is decided up front, by [`plan_calls`]: never one annotated
//! `destructiveHint: true`, only `readOnlyHint: true` ones under [`CallPolicy::ReadOnly`] (the
//! default for a configured server, which runs with its real credentials) — unless the author
//! named the tool with a `--call` example, an explicit request that wins over the hints. Only a
//! tool annotated `readOnlyHint: true` is called more than once (the same call with an unknown
//! argument, and the load burst): any other tool may act on the world each time.

use std::time::Duration;

use odek_mcp::discovery::{ListedTool, ListingError, list_pages};
use odek_mcp::wire::{Params, tool_call_prefix};
use serde::Serialize;
use serde_json::Value;

use crate::arguments::arguments_from_schema;
use crate::options::{CallPolicy, CheckOptions, Target};
use crate::probe::{Answer, Exit, Failure, HttpLaunch, Launch, Pages, Probe, StdioLaunch, Transcript};

/// The argument added to a successful call to see that unknown arguments are tolerated.
pub(crate) const UNKNOWN_ARGUMENT: &str = "odek_check_unknown_argument";
/// Most tools called (in list order); the rest are reported as skipped.
pub(crate) const MAX_CALLED_TOOLS: usize = 128;
/// Restarts after a step killed the connection, at most.
pub(crate) const MAX_RESTARTS: usize = 8;
/// Why a tool not annotated `readOnlyHint: true` is called once only, in the plan.
const CALLED_ONCE: &str = "called once: not annotated readOnlyHint: true, so neither repeated with an unknown argument nor used for the load burst";

/// What the check does with one listed tool, and why; decided before any call is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedCall {
    pub tool: String,
    /// Whether it is called.
    pub call: bool,
    pub reason: String,
}

/// `initialize` and what came back.
#[derive(Debug)]
pub(crate) struct InitializeObservation {
    pub outcome: Result<Answer, Failure>,
}

/// One `tools/call` the check made.
#[derive(Debug)]
pub(crate) struct CallObservation {
    pub tool: String,
    /// The arguments sent, and whether the author supplied them.
    pub arguments: Value,
    pub from_example: bool,
    /// The tool's schema declares `additionalProperties: false` (odek shows the model that).
    pub closed_schema: bool,
    /// The tool is annotated `readOnlyHint: true`: only such a call is repeated.
    pub read_only: bool,
    pub outcome: Result<Answer, Failure>,
    /// The same call with [`UNKNOWN_ARGUMENT`] added, made when the first one succeeded and the
    /// tool is read-only.
    pub with_unknown_argument: Option<Result<Answer, Failure>>,
}

/// A tool the check did not call, and why.
#[derive(Debug, Clone)]
pub(crate) struct SkippedCall {
    pub tool: String,
    pub reason: String,
}

/// The concurrent burst.
#[derive(Debug)]
pub(crate) struct LoadObservation {
    /// What was sent N times: `tools/call <tool>` or `ping`.
    pub what: String,
    /// Each request's id (stdio) or position in the burst (HTTP), and its outcome.
    pub outcomes: Vec<(i64, Result<Answer, Failure>)>,
}

/// Everything one check run saw.
#[derive(Debug, Default)]
pub(crate) struct Observations {
    /// Set when the process could not be started at all, or (HTTP) nothing answered at the URL
    /// or it refused the credentials: then nothing else was run.
    pub start_error: Option<String>,
    pub initialize: Option<InitializeObservation>,
    pub ping: Option<Result<Answer, Failure>>,
    pub tools: Option<Result<Vec<ListedTool>, String>>,
    pub calls: Vec<CallObservation>,
    /// Every listed tool (and example tool), called or not, with the reason.
    pub plan: Vec<PlannedCall>,
    pub skipped_calls: Vec<SkippedCall>,
    /// `--call` examples naming a tool the server does not list.
    pub unknown_examples: Vec<String>,
    pub load: Option<LoadObservation>,
    pub exit: Option<Exit>,
    pub transcript: Transcript,
    /// Why the server was restarted during the run, in order.
    pub restarts: Vec<String>,
}

/// Runs the server through every step and records what it did.
pub(crate) async fn observe(options: &CheckOptions, announce: &(dyn Fn(&[PlannedCall]) + Sync)) -> Observations {
    let mut observations = Observations::default();
    let launch = launch(options);
    let mut probe = match Probe::open(&launch, Transcript::default()) {
        Ok(probe) => probe,
        Err(error) => {
            observations.start_error = Some(error);
            return observations;
        }
    };
    let timeout = options.timeout;
    let init = options.protocol.initialize_params(&options.client_version);

    let initialize = probe.request("initialize", Params::Json(&init), timeout).await;
    if let Some(error) = initialize.as_ref().err().and_then(Failure::unreachable) {
        // Every later step would fail the same way: one failure says it.
        observations.start_error = Some(error);
        let (_, transcript) = probe.close().await;
        observations.transcript = transcript;
        return observations;
    }
    observations.initialize = Some(InitializeObservation { outcome: initialize });
    observations.ping = Some(probe.initialized_then_ping(timeout).await);

    let mut session = Session {
        probe,
        launch: &launch,
        init: &init,
        timeout,
        last_step: "the handshake".to_owned(),
        restarts: &mut observations.restarts,
    };
    session.revive().await;
    let tools = list_all_tools(&mut session.probe, &options.server, timeout)
        .await
        .map(|tools| tools.into_iter().filter(|tool| !options.exclude_tools.contains(&tool.name)).collect());
    observations.tools = Some(tools.clone());
    let listed = match tools {
        Ok(listed) => {
            observations.unknown_examples = unknown_examples(&listed, options);
            listed
        }
        // Without a list, the author's examples are still called, so the call checks run.
        Err(_) => example_tools(options),
    };
    let decisions = plan_calls(&listed, options);
    observations.plan = decisions.iter().map(|(planned, _)| planned.clone()).collect();
    announce(&observations.plan);
    for ((planned, calls), tool) in decisions.into_iter().zip(&listed) {
        let Some((argument_sets, from_example)) = calls else {
            observations.skipped_calls.push(SkippedCall { tool: planned.tool, reason: planned.reason });
            continue;
        };
        let closed_schema = has_closed_schema(&tool.input_schema);
        let read_only = tool.hints.read_only == Some(true);
        for arguments in argument_sets {
            session.revive().await;
            session.step(format!("tools/call {}", tool.name));
            let mut call =
                observe_call(&mut session.probe, &tool.name, arguments, from_example, read_only, timeout).await;
            call.closed_schema = closed_schema;
            observations.calls.push(call);
        }
    }

    session.revive().await;
    session.step("the concurrent calls".to_owned());
    // The burst repeats a call many times: only one of a read-only tool, else pings.
    let burst = observations
        .calls
        .iter()
        .find(|call| call.read_only && call.outcome.as_ref().is_ok_and(|answer| !is_error_result(answer)))
        .map(|call| (call.tool.clone(), call.arguments.clone()));
    let concurrency = options.concurrency.max(1);
    observations.load = Some(match burst {
        Some((tool, arguments)) => {
            let call = CallParams::new(&tool, &arguments);
            let outcomes = session.probe.requests("tools/call", &vec![call.params(); concurrency], timeout).await;
            LoadObservation { what: format!("tools/call {tool}"), outcomes }
        }
        None => {
            let outcomes = session.probe.requests("ping", &vec![Params::Absent; concurrency], timeout).await;
            LoadObservation { what: "ping".to_owned(), outcomes }
        }
    });

    session.revive().await;
    let (exit, transcript) = session.probe.close().await;
    observations.exit = exit;
    observations.transcript = transcript;
    observations
}

/// How to reach the server of `options`.
fn launch(options: &CheckOptions) -> Launch {
    match &options.target {
        Target::Stdio { command, args, env } => Launch::Stdio(StdioLaunch {
            server: options.server.clone(),
            command: command.clone(),
            args: args.clone(),
            env: env.clone(),
            max_response_bytes: options.max_response_bytes,
            write_timeout: options.timeout,
        }),
        Target::Http { endpoint, token, legacy_sse } => Launch::Http(HttpLaunch {
            server: options.server.clone(),
            endpoint: endpoint.clone(),
            token: token.clone(),
            legacy_sse: *legacy_sse,
            max_response_bytes: options.max_response_bytes,
            timeout: options.timeout,
        }),
    }
}

/// `--call` examples naming a tool the listing does not have, each once.
fn unknown_examples(listed: &[ListedTool], options: &CheckOptions) -> Vec<String> {
    let mut unknown: Vec<String> = Vec::new();
    for (tool, _) in &options.examples {
        if !listed.iter().any(|listed| &listed.name == tool) && !unknown.contains(tool) {
            unknown.push(tool.clone());
        }
    }
    unknown
}

/// The tools the `--call` examples name, each once, for when `tools/list` failed.
fn example_tools(options: &CheckOptions) -> Vec<ListedTool> {
    let mut tools: Vec<ListedTool> = Vec::new();
    for (tool, _) in &options.examples {
        if !tools.iter().any(|listed| &listed.name == tool) {
            tools.push(ListedTool {
                name: tool.clone(),
                input_schema: serde_json::json!({"type": "object"}),
                ..ListedTool::default()
            });
        }
    }
    tools
}

/// The argument sets of a call, and whether the author supplied them.
type Calls = (Vec<Value>, bool);

/// For each listed tool, in order: whether it is called and why, with the argument sets when it
/// is. The rules, first match wins: `--skip-call` skips; past the first [`MAX_CALLED_TOOLS`] is
/// skipped; a `--call` example is called (the author asked for it); `destructiveHint: true` is
/// never called; under [`CallPolicy::ReadOnly`] only `readOnlyHint: true` is called; a tool
/// whose required arguments cannot be derived is skipped.
pub(crate) fn plan_calls(listed: &[ListedTool], options: &CheckOptions) -> Vec<(PlannedCall, Option<Calls>)> {
    listed
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let (reason, calls) = plan_call(index, tool, options);
            (PlannedCall { tool: tool.name.clone(), call: calls.is_some(), reason }, calls)
        })
        .collect()
}

fn plan_call(index: usize, tool: &ListedTool, options: &CheckOptions) -> (String, Option<Calls>) {
    if options.skip_calls.contains(&tool.name) {
        return ("skipped with --skip-call".to_owned(), None);
    }
    if index >= MAX_CALLED_TOOLS {
        return (format!("only the first {MAX_CALLED_TOOLS} tools are called"), None);
    }
    let examples: Vec<Value> = options
        .examples
        .iter()
        .filter(|(name, _)| name == &tool.name)
        .map(|(_, arguments)| arguments.clone())
        .collect();
    let read_only = tool.hints.read_only == Some(true);
    if !examples.is_empty() {
        let reason = if read_only {
            "a --call example names it".to_owned()
        } else {
            format!("a --call example names it; {CALLED_ONCE}")
        };
        return (reason, Some((examples, true)));
    }
    if tool.hints.destructive == Some(true) {
        return (
            format!(
                "annotated destructiveHint: true, so never called (give a --call {} '<json>' example to call it anyway)",
                tool.name
            ),
            None,
        );
    }
    if options.calls == CallPolicy::ReadOnly && !read_only {
        return (
            "not annotated readOnlyHint: true, and only read-only tools are called under --calls read-only (the default for a configured server, which runs with its real credentials); pass --calls all to call it".to_owned(),
            None,
        );
    }
    match arguments_from_schema(&tool.input_schema) {
        Ok(arguments) => {
            let reason = if read_only {
                "annotated readOnlyHint: true; arguments derived from the schema".to_owned()
            } else {
                format!(
                    "not annotated destructiveHint: true (under --calls all); arguments derived from the schema; {CALLED_ONCE}"
                )
            };
            (reason, Some((vec![arguments], false)))
        }
        Err(reason) => (format!("{reason}; pass an example with --call {} '<json>'", tool.name), None),
    }
}

/// Whether a schema is closed to arguments it does not list.
fn has_closed_schema(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(false))
}

/// One call, and when it succeeded and the tool is read-only, the same call with
/// [`UNKNOWN_ARGUMENT`] added.
async fn observe_call(
    probe: &mut Probe,
    tool: &str,
    arguments: Value,
    from_example: bool,
    read_only: bool,
    timeout: Duration,
) -> CallObservation {
    let outcome = call_tool(probe, tool, &arguments, timeout).await;
    let with_unknown_argument = match (&outcome, &arguments) {
        (Ok(answer), Value::Object(members)) if read_only && !is_error_result(answer) => {
            let mut extended = members.clone();
            extended.insert(UNKNOWN_ARGUMENT.to_owned(), Value::Bool(true));
            Some(call_tool(probe, tool, &Value::Object(extended), timeout).await)
        }
        _ => None,
    };
    CallObservation {
        tool: tool.to_owned(),
        arguments,
        from_example,
        closed_schema: false,
        read_only,
        outcome,
        with_unknown_argument,
    }
}

/// The live probe, and how to replace it when a step killed the connection.
struct Session<'a> {
    probe: Probe,
    launch: &'a Launch,
    init: &'a str,
    timeout: Duration,
    /// The step that last used the connection, named in the restart note.
    last_step: String,
    restarts: &'a mut Vec<String>,
}

impl Session<'_> {
    /// Names the step about to use the connection (in restart notes and hygiene evidence).
    fn step(&mut self, step: String) {
        self.probe.set_step(&step);
        self.last_step = step;
    }

    /// When the connection died, starts the server again, or a new session over HTTP
    /// (handshake included, not judged) so the following steps still run. The transcript
    /// carries over.
    async fn revive(&mut self) {
        if !self.probe.is_dead() || self.restarts.len() >= MAX_RESTARTS {
            return;
        }
        let Ok(replacement) = Probe::open(self.launch, Transcript::default()) else { return };
        let old = std::mem::replace(&mut self.probe, replacement);
        // The new connection has not seen anything yet: its transcript continues the old one.
        let (_, transcript) = old.close().await;
        self.probe.continue_transcript(transcript);
        self.restarts.push(if self.launch.is_remote() {
            format!("a new session was started after the server ended the previous one during {}", self.last_step)
        } else {
            format!("the server was restarted after {} closed the connection", self.last_step)
        });
        self.probe.set_step("initialize after a restart");
        let _ = self.probe.request("initialize", Params::Json(self.init), self.timeout).await;
        self.probe.initialized().await;
        self.probe.set_step(&self.last_step);
    }
}

/// `tools/call` params as odek sends them: the tool's prefix, arguments with sorted keys, and
/// (added by the encoder) a progress token.
struct CallParams {
    prefix: String,
    arguments: String,
}

impl CallParams {
    fn new(tool: &str, arguments: &Value) -> CallParams {
        CallParams {
            prefix: tool_call_prefix(tool),
            arguments: odek_contract::canonical_json::to_canonical_string(arguments),
        }
    }

    fn params(&self) -> Params<'_> {
        Params::ToolCall { prefix: &self.prefix, arguments: &self.arguments }
    }
}

async fn call_tool(probe: &mut Probe, tool: &str, arguments: &Value, timeout: Duration) -> Result<Answer, Failure> {
    probe.request("tools/call", CallParams::new(tool, arguments).params(), timeout).await
}

/// Whether a result says `isError: true`.
pub(crate) fn is_error_result(answer: &Answer) -> bool {
    answer.result_value().get("isError") == Some(&Value::Bool(true))
}

/// Every `tools/list` page through the client's own listing loop ([`list_pages`]), so the caps
/// and stop rules (repeated cursor, pages, bytes, tools) and the parse are exactly odek's.
async fn list_all_tools(probe: &mut Probe, server: &str, timeout: Duration) -> Result<Vec<ListedTool>, String> {
    list_pages(server, &mut Pages { probe, timeout }).await.map_err(|error| match error {
        ListingError::Request(failure) => failure.to_string(),
        ListingError::Refused(error) => format!("odek refuses the server: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use odek_mcp::discovery::ToolHints;

    use super::*;

    fn tool(name: &str, read_only: Option<bool>, destructive: Option<bool>) -> ListedTool {
        ListedTool {
            name: name.into(),
            input_schema: serde_json::json!({"type": "object"}),
            hints: ToolHints { read_only, destructive },
            ..ListedTool::default()
        }
    }

    fn options(calls: CallPolicy) -> CheckOptions {
        CheckOptions {
            timeout: Duration::from_secs(1),
            max_response_bytes: 1024,
            max_result_chars: 1000,
            examples: vec![("named".into(), serde_json::json!({"x": 1}))],
            skip_calls: vec!["skipped".into()],
            calls,
            concurrency: 1,
            ..CheckOptions::new(
                "srv".into(),
                Target::Stdio { command: "/bin/srv".into(), args: Vec::new(), env: BTreeMap::new() },
            )
        }
    }

    fn called(listed: &[ListedTool], options: &CheckOptions) -> Vec<(String, bool)> {
        plan_calls(listed, options).into_iter().map(|(planned, _)| (planned.tool, planned.call)).collect()
    }

    #[test]
    fn the_plan_never_calls_destructive_tools_and_honours_the_policy_red() {
        let listed = [
            tool("reader", Some(true), None),
            tool("plain", None, None),
            tool("writer", Some(false), Some(false)),
            tool("wiper", None, Some(true)),
            tool("contradictory", Some(true), Some(true)),
            tool("named", None, Some(true)),
            tool("skipped", Some(true), None),
        ];
        let expect = |plain: bool| {
            vec![
                ("reader".to_owned(), true),
                ("plain".to_owned(), plain),
                ("writer".to_owned(), plain),
                ("wiper".to_owned(), false),
                ("contradictory".to_owned(), false),
                ("named".to_owned(), true),
                ("skipped".to_owned(), false),
            ]
        };
        assert_eq!(called(&listed, &options(CallPolicy::All)), expect(true));
        assert_eq!(called(&listed, &options(CallPolicy::ReadOnly)), expect(false));
        let plan = plan_calls(&listed, &options(CallPolicy::ReadOnly));
        assert_eq!(plan[5].1, Some((vec![serde_json::json!({"x": 1})], true)), "the --call example is what is sent");
        assert_eq!(plan[6].0.reason, "skipped with --skip-call");
    }

    #[test]
    fn the_plan_skips_tools_past_the_call_cap_and_unfillable_ones() {
        let mut listed: Vec<ListedTool> =
            (0..MAX_CALLED_TOOLS + 1).map(|n| tool(&format!("t{n}"), None, None)).collect();
        listed[0].input_schema = serde_json::json!({"type": "object", "properties": {"x": false}, "required": ["x"]});
        let plan = plan_calls(&listed, &options(CallPolicy::All));
        assert_eq!(
            plan[0].0.reason,
            "required argument \"x\": its schema is false; pass an example with --call t0 '<json>'"
        );
        assert!(!plan[0].0.call && plan[1].0.call);
        assert_eq!(plan[MAX_CALLED_TOOLS].0.reason, "only the first 128 tools are called");
    }
}
