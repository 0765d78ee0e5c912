//! The checks of `odek ext check`, one function each, named after what they require. Each
//! reads the [`Observations`] and returns its [`CheckResult`]s; none of them talks to the
//! server. A check that only means something for a process is reported as not applicable over
//! HTTP, never judged on what HTTP cannot show. Start at [`all`], which lists
//! them in report order.

use std::collections::HashSet;

use odek_contract::artifact_ref::ArtifactRoots;
use odek_contract::envelope::probe_envelope;
use odek_contract::error::ContractError;
use odek_contract::model_view::OutputCheck;
use odek_contract::names::{qualify_tool_name, validate_tool_name};
use odek_contract::quoting::quote;
use odek_contract::tool_result::{ResultContext, ToolOutput, decode_tool_result};
use serde_json::Value;

use serde::Serialize;

use crate::observe::{CallObservation, Observations, UNKNOWN_ARGUMENT, is_error_result};
use crate::options::CheckOptions;
use crate::probe::{Answer, EVIDENCE_BYTES, Exit, Failure, cut};
use odek_mcp::McpError;
use odek_mcp::OutputSchema;
use odek_mcp::discovery::{
    ListedTool, SUPPORTED_PROTOCOL_VERSIONS, answered_protocol_version, check_tool_names, registration_checks_quiet,
};
use odek_mcp::{decode_call_result, decode_checked_call_result};

/// pass / warn / fail, and skip for a check that could not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Skip,
    Warn,
    Fail,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Skip => "skip",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// The verdict of one check (for per-tool checks, on one tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// `handshake`, `stdout`, `http`, `tools`, `calls`, `load` or `shutdown`.
    pub group: &'static str,
    /// The check's name, e.g. `ping_answers`.
    pub check: &'static str,
    /// The raw tool name, for per-tool checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub status: Status,
    /// One line: what was seen, and for warn/fail what to fix.
    pub reason: String,
    /// The offending text, cut, on warn/fail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// Every check, in report order.
pub fn judge(observations: &Observations, options: &CheckOptions) -> Vec<CheckResult> {
    let roots = ArtifactRoots::new(&options.artifact_roots);
    all(observations, options, &roots)
}

/// Every check in report order.
fn all(observations: &Observations, options: &CheckOptions, roots: &ArtifactRoots) -> Vec<CheckResult> {
    let remote = options.target.is_remote();
    let mut results = vec![if remote { server_reachable(observations) } else { server_starts(observations) }];
    if observations.start_error.is_some() {
        return results;
    }
    // A check of what only a process has: judged over stdio, not applicable over HTTP.
    let process_only = |group, name, why: &str, judge: &dyn Fn() -> CheckResult| {
        if remote { check(group, name, Status::Skip, format!("not applicable over HTTP: {why}")) } else { judge() }
    };
    results.push(initialize_answers(observations));
    results.push(protocol_version_supported(observations));
    results.push(process_only(
        "handshake",
        "initialized_notification_accepted",
        "odek reads nothing back from a notification's POST (a server that fails on it fails ping_answers)",
        &|| initialized_notification_accepted(observations),
    ));
    results.push(ping_answers(observations));
    results.push(process_only(
        "stdout",
        "stdout_only_json_rpc",
        "there is no stdout (see answers_are_json_rpc)",
        &|| stdout_only_json_rpc(observations),
    ));
    results.push(process_only(
        "stdout",
        "stdout_lines_within_limit",
        "there is no stdout (see answers_within_limit)",
        &|| stdout_lines_within_limit(observations, options),
    ));
    results.push(process_only(
        "stdout",
        "responses_match_requests",
        "each answer comes on its own request's POST (see answers_are_json_rpc)",
        &|| responses_match_requests(observations),
    ));
    if remote {
        results.push(session_id_issued(observations, options));
        results.push(answers_are_json_rpc(observations));
        results.push(answers_within_limit(observations, options));
    }
    results.push(tools_list_answers(observations));
    let listed = match &observations.tools {
        Some(Ok(tools)) => Some(tools.as_slice()),
        _ => None,
    };
    // The client's registration checks, once: their warnings and the schemas they compile.
    let registration = listed.map(|tools| registration_checks_quiet(&options.server, tools.to_vec()));
    let warnings = registration.as_ref().map(|(_, warnings)| warnings.as_slice());
    results.push(tool_names_valid(listed, &options.server));
    results.push(tool_names_unique(listed));
    results.push(tool_schemas_accepted(warnings));
    results.push(tool_descriptions_clean(warnings));
    results.push(exposed_names_fit(listed, &options.server));
    if !options.examples.is_empty() {
        results.push(call_examples_name_listed_tools(observations));
    }
    for call in &observations.calls {
        let context = ResultContext {
            server: &options.server,
            tool: &call.tool,
            max_result_chars: options.max_result_chars,
            roots,
        };
        let output_schema = registration.as_ref().and_then(|(registered, _)| {
            registered.iter().find(|tool| tool.raw_name == call.tool)?.compiled_output_schema.clone()
        });
        let checked = CheckedCall { call, context, output_schema: output_schema.as_deref() };
        results.push(call_answers(&checked, options));
        results.push(unknown_arguments_tolerated(&checked));
        results.push(result_decodes(&checked));
        results.push(embedded_resources_shown(call));
        results.push(envelope_well_formed(call));
        results.push(artifacts_validate(call, &context));
        results.push(result_within_caps(&checked));
    }
    for skipped in &observations.skipped_calls {
        results.push(CheckResult {
            group: "calls",
            check: "call_answers",
            tool: Some(skipped.tool.clone()),
            status: Status::Skip,
            reason: format!("not called: {}", skipped.reason),
            evidence: None,
        });
    }
    results.push(tools_exercised(observations));
    results.push(concurrent_calls_answered(observations, options));
    results.push(process_only(
        "shutdown",
        "exits_on_stdin_close",
        "there is no process (odek ends the session with DELETE)",
        &|| exits_on_stdin_close(observations),
    ));
    results
}

/// One call with what the client would decode it with: its context and the tool's compiled
/// `outputSchema`.
struct CheckedCall<'a> {
    call: &'a CallObservation,
    context: ResultContext<'a>,
    output_schema: Option<&'a OutputSchema>,
}

impl CheckedCall<'_> {
    /// The result as the client decodes it for the model, schema check included.
    fn decode(&self, answer: &Answer) -> Result<ToolOutput, McpError> {
        let schema = self.output_schema.map(|schema| schema as &dyn OutputCheck);
        decode_checked_call_result(answer.result_json(), &self.context, schema)
    }

    /// The error text the model would get for an `isError: true` result (the client's own
    /// error view: an image first still has its text); `None` for any other result.
    fn error_result_text(&self, answer: &Answer) -> Option<String> {
        if !is_error_result(answer) {
            return None;
        }
        Some(match decode_call_result(answer.result_json(), &self.context) {
            Err(McpError::ToolReturnedError { message, .. }) => message,
            Err(other) => other.to_string(),
            Ok(output) => output.text,
        })
    }
}

fn check(group: &'static str, check: &'static str, status: Status, reason: impl Into<String>) -> CheckResult {
    CheckResult { group, check, tool: None, status, reason: reason.into(), evidence: None }
}

fn with_evidence(mut result: CheckResult, evidence: impl Into<String>) -> CheckResult {
    result.evidence = Some(cut(&evidence.into(), EVIDENCE_BYTES));
    result
}

fn for_tool(mut result: CheckResult, tool: &str) -> CheckResult {
    result.tool = Some(tool.to_owned());
    result
}

fn millis(duration: std::time::Duration) -> u128 {
    duration.as_millis()
}

/// The command can be started at all.
fn server_starts(observations: &Observations) -> CheckResult {
    match &observations.start_error {
        None => check("handshake", "server_starts", Status::Pass, "the process started"),
        Some(error) => check("handshake", "server_starts", Status::Fail, format!("the process did not start: {error}")),
    }
}

/// HTTP: something answers at the URL and takes the credentials (the first request neither
/// failed to connect nor got 401 or 403).
fn server_reachable(observations: &Observations) -> CheckResult {
    const NAME: &str = "server_reachable";
    match &observations.start_error {
        None => check("handshake", NAME, Status::Pass, "connected; the credentials were not refused"),
        Some(error) => check("handshake", NAME, Status::Fail, error.clone()),
    }
}

/// `initialize` gets a JSON object result within the timeout.
fn initialize_answers(observations: &Observations) -> CheckResult {
    const NAME: &str = "initialize_answers";
    let Some(initialize) = &observations.initialize else {
        return check("handshake", NAME, Status::Skip, "initialize was not sent");
    };
    match &initialize.outcome {
        Ok(answer) => match odek_mcp::wire::parse_object::<serde_json::Map<String, Value>>(answer.result_json()) {
            Ok(_) => check("handshake", NAME, Status::Pass, format!("answered in {} ms", millis(answer.elapsed))),
            Err(error) => with_evidence(
                check("handshake", NAME, Status::Fail, format!("the initialize result must be a JSON object: {error}")),
                String::from_utf8_lossy(answer.result_json()),
            ),
        },
        Err(failure) => check(
            "handshake",
            NAME,
            Status::Fail,
            format!("initialize failed: {failure}; odek does not start a server whose handshake fails"),
        ),
    }
}

/// The `protocolVersion` answered is one odek supports.
fn protocol_version_supported(observations: &Observations) -> CheckResult {
    const NAME: &str = "protocol_version_supported";
    let Some(Ok(answer)) = observations.initialize.as_ref().map(|initialize| &initialize.outcome) else {
        return check("handshake", NAME, Status::Skip, "initialize was not answered");
    };
    let version = answered_protocol_version(answer.result_value().get("protocolVersion"));
    if SUPPORTED_PROTOCOL_VERSIONS.contains(&version.as_str()) {
        return check("handshake", NAME, Status::Pass, format!("protocol {version}"));
    }
    let seen = if version.is_empty() {
        "no protocolVersion".to_owned()
    } else {
        format!("protocol version {}", quote(&version))
    };
    check(
        "handshake",
        NAME,
        Status::Warn,
        format!(
            "answered {seen}; odek warns and continues with 2025-03-26 behaviour (supported: {})",
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        ),
    )
}

/// `notifications/initialized` gets no reply (it is a notification) and the server keeps going.
fn initialized_notification_accepted(observations: &Observations) -> CheckResult {
    const NAME: &str = "initialized_notification_accepted";
    if let Some(reply) = observations.transcript.initialized_replies.first() {
        return with_evidence(
            check(
                "handshake",
                NAME,
                Status::Fail,
                "the server answered notifications/initialized; notifications get no response (accept it silently)",
            ),
            &reply.excerpt,
        );
    }
    match &observations.ping {
        Some(Err(Failure::Closed(status))) => check(
            "handshake",
            NAME,
            Status::Fail,
            format!(
                "the server closed the connection after notifications/initialized{}",
                status.map_or_else(String::new, |status| format!(" (exit status {status})"))
            ),
        ),
        _ => check("handshake", NAME, Status::Pass, "accepted without a reply"),
    }
}

/// `ping` is answered with a result.
fn ping_answers(observations: &Observations) -> CheckResult {
    const NAME: &str = "ping_answers";
    match &observations.ping {
        None => check("handshake", NAME, Status::Skip, "ping was not sent"),
        Some(Ok(answer)) => {
            check("handshake", NAME, Status::Pass, format!("answered in {} ms", millis(answer.elapsed)))
        }
        Some(Err(failure)) => check(
            "handshake",
            NAME,
            Status::Fail,
            format!("ping failed: {failure}; answer ping with an empty result {{}}"),
        ),
    }
}

/// Nothing but JSON-RPC messages on stdout: logs belong on stderr.
fn stdout_only_json_rpc(observations: &Observations) -> CheckResult {
    const NAME: &str = "stdout_only_json_rpc";
    let transcript = &observations.transcript;
    if transcript.not_json_rpc.count == 0 {
        return check("stdout", NAME, Status::Pass, format!("{} line(s), all JSON-RPC", transcript.lines));
    }
    let during = transcript.not_json_rpc.kept.first().map(|offender| offender.during.as_str()).unwrap_or_default();
    with_evidence(
        check(
            "stdout",
            NAME,
            Status::Fail,
            format!(
                "{} of {} stdout line(s) are not JSON-RPC messages (first while waiting for {during}); write logs to stderr",
                transcript.not_json_rpc.count, transcript.lines
            ),
        ),
        transcript.not_json_rpc.first_excerpt(),
    )
}

/// Every stdout line fits in `max_response_bytes`.
fn stdout_lines_within_limit(observations: &Observations, options: &CheckOptions) -> CheckResult {
    const NAME: &str = "stdout_lines_within_limit";
    match &observations.transcript.oversized {
        None => check(
            "stdout",
            NAME,
            Status::Pass,
            format!(
                "largest line {} bytes (max_response_bytes {})",
                observations.transcript.largest_line, options.max_response_bytes
            ),
        ),
        Some((limit, during)) => check(
            "stdout",
            NAME,
            Status::Fail,
            format!(
                "a line longer than max_response_bytes ({limit} bytes) arrived while waiting for {during}; odek drops it and closes the connection: return a summary and an artifact instead"
            ),
        ),
    }
}

/// Every response answers a request that was sent and not yet answered, by integer id.
fn responses_match_requests(observations: &Observations) -> CheckResult {
    const NAME: &str = "responses_match_requests";
    let transcript = &observations.transcript;
    if transcript.unmatched.count == 0 {
        return check("stdout", NAME, Status::Pass, "every response matched a request id");
    }
    with_evidence(
        check(
            "stdout",
            NAME,
            Status::Fail,
            format!(
                "{} response(s) matched no request in flight (a wrong, repeated or non-integer id); echo each request's id exactly once",
                transcript.unmatched.count
            ),
        ),
        transcript.unmatched.first_excerpt(),
    )
}

/// HTTP: whether the server keeps a session (`Mcp-Session-Id` on `initialize`). Either is
/// fine; the report says which odek will do.
fn session_id_issued(observations: &Observations, options: &CheckOptions) -> CheckResult {
    const NAME: &str = "session_id_issued";
    if options.target.transport() == "http+sse" {
        return check(
            "http",
            NAME,
            Status::Skip,
            "not applicable over HTTP+SSE: the session is the endpoint its event stream names",
        );
    }
    let reason = if observations.transcript.session_issued {
        "the server issued a session id on initialize; odek sends it with every request and ends the session with DELETE"
    } else {
        "no session id was issued (a stateless server); odek sends none"
    };
    check("http", NAME, Status::Pass, reason)
}

/// HTTP: every answer is `application/json` (one JSON-RPC message, the response to its POST)
/// or `text/event-stream`; odek fails a request whose answer is anything else.
fn answers_are_json_rpc(observations: &Observations) -> CheckResult {
    const NAME: &str = "answers_are_json_rpc";
    let unreadable = &observations.transcript.unreadable_answers;
    let Some(first) = unreadable.kept.first() else {
        return check(
            "http",
            NAME,
            Status::Pass,
            "every answer was application/json or text/event-stream with the response to its request",
        );
    };
    with_evidence(
        check(
            "http",
            NAME,
            Status::Fail,
            format!(
                "{} answer(s) could not be used and failed their request (first while waiting for {}); answer each POST with application/json holding the response to it, or text/event-stream",
                unreadable.count, first.during
            ),
        ),
        &first.excerpt,
    )
}

/// HTTP: every JSON body and event stream fits in `max_response_bytes`.
fn answers_within_limit(observations: &Observations, options: &CheckOptions) -> CheckResult {
    const NAME: &str = "answers_within_limit";
    match &observations.transcript.oversized {
        None => check(
            "http",
            NAME,
            Status::Pass,
            format!("every answer fit in max_response_bytes ({} bytes)", options.max_response_bytes),
        ),
        Some((limit, during)) => check(
            "http",
            NAME,
            Status::Fail,
            format!(
                "an answer longer than max_response_bytes ({limit} bytes) arrived while waiting for {during}; odek stops reading it, drops it and fails that request (later ones go on): return a summary and an artifact instead"
            ),
        ),
    }
}

/// `tools/list` is answered and its pagination ends.
fn tools_list_answers(observations: &Observations) -> CheckResult {
    const NAME: &str = "tools_list_answers";
    match &observations.tools {
        None => check("tools", NAME, Status::Skip, "tools/list was not sent"),
        Some(Ok(tools)) => check("tools", NAME, Status::Pass, format!("{} tool(s)", tools.len())),
        Some(Err(error)) => check("tools", NAME, Status::Fail, format!("tools/list failed: {error}")),
    }
}

fn no_list(name: &'static str) -> CheckResult {
    check("tools", name, Status::Skip, "no tool list")
}

/// Names follow the contract (1–64 of `[A-Za-z0-9_-]`, no `__`). A name equal to a built-in
/// tool's is fine: odek exposes it as `<server>__<tool>`.
fn tool_names_valid(listed: Option<&[ListedTool]>, server: &str) -> CheckResult {
    const NAME: &str = "tool_names_valid";
    let Some(tools) = listed else { return no_list(NAME) };
    let Err(error) = check_tool_names(server, tools) else {
        return check("tools", NAME, Status::Pass, format!("{} valid name(s)", tools.len()));
    };
    let problems: Vec<String> = match &error {
        McpError::InvalidToolNames { rejected, .. } => {
            rejected.iter().map(|rejected| rejected.error.to_string()).collect()
        }
        other => vec![other.to_string()],
    };
    with_evidence(
        check(
            "tools",
            NAME,
            Status::Fail,
            format!("{} tool name(s) break the naming rules; odek rejects the whole server: {error}", problems.len()),
        ),
        problems.join("; "),
    )
}

/// No name is listed twice.
fn tool_names_unique(listed: Option<&[ListedTool]>) -> CheckResult {
    const NAME: &str = "tool_names_unique";
    let Some(tools) = listed else { return no_list(NAME) };
    let mut seen = HashSet::new();
    let duplicates: Vec<&str> =
        tools.iter().filter(|tool| !seen.insert(tool.name.as_str())).map(|tool| tool.name.as_str()).collect();
    match duplicates.first() {
        None => check("tools", NAME, Status::Pass, "no duplicates"),
        Some(first) => check(
            "tools",
            NAME,
            Status::Fail,
            format!("tool {} is listed more than once; odek rejects the server (exposed-name collision)", quote(first)),
        ),
    }
}

/// Input schemas are JSON objects, at most 262144 bytes, free of prompt-injection patterns; a
/// declared `outputSchema` compiles (else odek ignores it: a warning).
fn tool_schemas_accepted(warnings: Option<&[String]>) -> CheckResult {
    const NAME: &str = "tool_schemas_accepted";
    let Some(warnings) = warnings else { return no_list(NAME) };
    let skipped: Vec<&String> = warnings.iter().filter(|warning| warning.ends_with("; skipping")).collect();
    if let Some(first) = skipped.first() {
        return with_evidence(
            check("tools", NAME, Status::Fail, format!("odek skips {} tool(s) for their input schema", skipped.len())),
            first.as_str(),
        );
    }
    let ignored: Vec<&String> =
        warnings.iter().filter(|warning| warning.contains(": outputSchema ignored (")).collect();
    match ignored.first() {
        None => check("tools", NAME, Status::Pass, "every input schema is accepted, every outputSchema compiles"),
        Some(first) => with_evidence(
            check(
                "tools",
                NAME,
                Status::Warn,
                format!(
                    "odek ignores the outputSchema of {} tool(s), so their structuredContent is not checked; declare a schema odek can compile and bound (local $refs only, no $dynamicRef or unevaluated*)",
                    ignored.len()
                ),
            ),
            first.as_str(),
        ),
    }
}

/// Descriptions are free of prompt-injection patterns (else odek withholds them).
fn tool_descriptions_clean(warnings: Option<&[String]>) -> CheckResult {
    const NAME: &str = "tool_descriptions_clean";
    let Some(warnings) = warnings else { return no_list(NAME) };
    let withheld: Vec<&String> = warnings.iter().filter(|warning| warning.ends_with("description withheld")).collect();
    match withheld.first() {
        None => check("tools", NAME, Status::Pass, "no prompt-injection patterns"),
        Some(first) => with_evidence(
            check(
                "tools",
                NAME,
                Status::Fail,
                format!(
                    "odek withholds {} description(s) that match prompt-injection patterns; describe what the tool does, give the model no instructions",
                    withheld.len()
                ),
            ),
            first.as_str(),
        ),
    }
}

/// `<server>__<tool>` fits in 64 characters (else odek shortens it with a hash).
fn exposed_names_fit(listed: Option<&[ListedTool]>, server: &str) -> CheckResult {
    const NAME: &str = "exposed_names_fit";
    let Some(tools) = listed else { return no_list(NAME) };
    let long: Vec<(&str, String)> = tools
        .iter()
        .filter(|tool| validate_tool_name(&tool.name).is_ok())
        .filter(|tool| server.len() + 2 + tool.name.len() > 64)
        .map(|tool| (tool.name.as_str(), qualify_tool_name(server, &tool.name).into_string()))
        .collect();
    match long.first() {
        None => check("tools", NAME, Status::Pass, format!("every {server}__<tool> name fits in 64 characters")),
        Some((tool, exposed)) => with_evidence(
            check(
                "tools",
                NAME,
                Status::Warn,
                format!(
                    "{} exposed name(s) exceed 64 characters and are shortened with a hash the model sees; shorten the tool name (server {})",
                    long.len(),
                    quote(server)
                ),
            ),
            format!("{tool} -> {exposed}"),
        ),
    }
}

/// Every `--call` example names a tool the server lists.
fn call_examples_name_listed_tools(observations: &Observations) -> CheckResult {
    const NAME: &str = "call_examples_name_listed_tools";
    match observations.unknown_examples.first() {
        None => check("calls", NAME, Status::Pass, "every --call example names a listed tool"),
        Some(tool) => {
            check("calls", NAME, Status::Fail, format!("--call names {}, which the server does not list", quote(tool)))
        }
    }
}

fn source(call: &CallObservation) -> &'static str {
    if call.from_example { "the --call example" } else { "arguments derived from the schema" }
}

/// The call is answered within the timeout.
fn call_answers(checked: &CheckedCall<'_>, options: &CheckOptions) -> CheckResult {
    const NAME: &str = "call_answers";
    let call = checked.call;
    let result = match &call.outcome {
        Ok(answer) => {
            let mut reason = format!("answered in {} ms with {}", millis(answer.elapsed), source(call));
            if let Some(message) = checked.error_result_text(answer) {
                reason.push_str(&format!(" (isError: {message})"));
            }
            check("calls", NAME, Status::Pass, reason)
        }
        Err(Failure::Rpc { code, message }) => check(
            "calls",
            NAME,
            Status::Pass,
            format!("answered with JSON-RPC error {code} ({message}) to {}", source(call)),
        ),
        Err(Failure::Timeout(_)) => with_evidence(
            check(
                "calls",
                NAME,
                Status::Fail,
                format!(
                    "no answer within {} s (odek's call deadline); answer sooner or send notifications/progress",
                    options.timeout.as_secs_f64()
                ),
            ),
            call.arguments.to_string(),
        ),
        Err(failure) => {
            with_evidence(check("calls", NAME, Status::Fail, failure.to_string()), call.arguments.to_string())
        }
    };
    for_tool(result, &call.tool)
}

/// The successful result, when the call produced one.
fn success(call: &CallObservation) -> Option<&Answer> {
    call.outcome.as_ref().ok().filter(|answer| !is_error_result(answer))
}

/// A successful call with one extra, unknown argument still succeeds (the additive rule). A
/// tool whose schema declares `additionalProperties: false` only gets a warning: odek gives the
/// model that schema, so the model is told not to send unknown arguments. \[beyond\] So does a
/// rejection that names the unknown argument (a strict validator: fastmcp 2.x's pydantic
/// `unexpected_keyword_argument`, zod's `.strict()`): the model reads which argument to leave
/// out. Only a tool annotated `readOnlyHint: true` is called a second time to see it.
fn unknown_arguments_tolerated(checked: &CheckedCall<'_>) -> CheckResult {
    let call = checked.call;
    const NAME: &str = "unknown_arguments_tolerated";
    const FIX: &str = "ignore arguments you do not know";
    // Why a rejection is only a warning, when it is; `"; "` before the fix otherwise.
    let leniency = |message: &str| {
        if call.closed_schema {
            (
                Status::Warn,
                "; a warning, not a failure: the tool's schema declares additionalProperties: false, which odek shows the model, so the model is told not to send unknown arguments — still, ",
            )
        } else if message.contains(UNKNOWN_ARGUMENT) {
            (
                Status::Warn,
                "; a warning, not a failure: the error names the unknown argument (a strict validator, as fastmcp 2.x's), so the model learns what to leave out — still, declare additionalProperties: false so the model is told beforehand, or ",
            )
        } else {
            (Status::Fail, "; ")
        }
    };
    let result = match &call.with_unknown_argument {
        None if success(call).is_some() && !call.read_only => check(
            "calls",
            NAME,
            Status::Skip,
            "not annotated readOnlyHint: true, so the call is not repeated with an unknown argument (it may act on the world again)",
        ),
        None => check("calls", NAME, Status::Skip, "the call did not succeed, so there is nothing to compare"),
        Some(Ok(answer)) => match checked.error_result_text(answer) {
            None => check("calls", NAME, Status::Pass, format!("an extra {UNKNOWN_ARGUMENT:?} argument was ignored")),
            Some(message) => {
                let (status, why) = leniency(&message);
                with_evidence(
                    check(
                        "calls",
                        NAME,
                        status,
                        format!("an extra unknown argument turned the result into isError{why}{FIX}"),
                    ),
                    message,
                )
            }
        },
        Some(Err(failure)) => {
            let failure = failure.to_string();
            let (status, why) = leniency(&failure);
            check("calls", NAME, status, format!("with an extra unknown argument the call failed: {failure}{why}{FIX}"))
        }
    };
    for_tool(result, &call.tool)
}

/// At least one call succeeded (a result without `isError`): a run in which none did checked
/// nothing of the calls, which is a warning (`no tool was exercised`), not a pass.
fn tools_exercised(observations: &Observations) -> CheckResult {
    const NAME: &str = "tools_exercised";
    let succeeded: HashSet<&str> =
        observations.calls.iter().filter(|call| success(call).is_some()).map(|call| call.tool.as_str()).collect();
    if !succeeded.is_empty() {
        return check("calls", NAME, Status::Pass, format!("{} tool(s) answered a call successfully", succeeded.len()));
    }
    let why = if observations.plan.is_empty() {
        "the server lists no tool".to_owned()
    } else if observations.calls.is_empty() {
        format!("none of the {} listed tool(s) was called (see the plan)", observations.plan.len())
    } else {
        format!("none of the {} call(s) made succeeded", observations.calls.len())
    };
    check(
        "calls",
        NAME,
        Status::Warn,
        format!(
            "no tool was exercised: {why}; give --call <tool> '<json>' examples (or --calls all for a configured server) so the checks can see real results"
        ),
    )
}

/// The result decodes as `{"content":[…],"isError":bool}`, and its `structuredContent` passes the
/// tool's own `outputSchema` (a run fails the call otherwise).
fn result_decodes(checked: &CheckedCall<'_>) -> CheckResult {
    const NAME: &str = "result_decodes";
    let result = match &checked.call.outcome {
        Err(_) => check("calls", NAME, Status::Skip, "no result"),
        Ok(answer) => match checked.decode(answer) {
            Err(McpError::ResultParse { error, .. }) => with_evidence(
                check(
                    "calls",
                    NAME,
                    Status::Fail,
                    format!(
                        "the result does not decode: {error}; return {{\"content\":[{{\"type\":\"text\",\"text\":…}}]}}"
                    ),
                ),
                String::from_utf8_lossy(answer.result_json()),
            ),
            // Envelope and artifact failures have their own checks; what only the schema rejects
            // is this one's.
            Err(error @ McpError::ToolResult { .. })
                if checked.output_schema.is_some()
                    && decode_call_result(answer.result_json(), &checked.context).is_ok() =>
            {
                check(
                    "calls",
                    NAME,
                    Status::Fail,
                    format!(
                        "{error}; odek fails the call: return structuredContent that matches the declared outputSchema"
                    ),
                )
            }
            _ if checked.output_schema.is_some() && has_structured_content(answer) => {
                check("calls", NAME, Status::Pass, "decodes; structuredContent matches the declared outputSchema")
            }
            _ => check("calls", NAME, Status::Pass, "decodes"),
        },
    };
    for_tool(result, &checked.call.tool)
}

/// \[beyond\] Issue 32: what the model reads of each embedded resource of a successful result.
/// An embedded text resource reaches the model as content under a line naming it (pass); a
/// blob, or a resource with neither, reaches it as a metadata line only (warn); a text resource
/// without a `uri` or `mimeType` is shown but not named (warn). A result without one passes, as a
/// plain-text result passes `envelope_well_formed`.
fn embedded_resources_shown(call: &CallObservation) -> CheckResult {
    const NAME: &str = "embedded_resources_shown";
    let Some(answer) = success(call) else {
        return for_tool(check("calls", NAME, Status::Skip, "no successful result"), &call.tool);
    };
    let value = answer.result_value();
    let resources: Vec<&Value> =
        content_items(&value, "resource").map(|item| item.get("resource").unwrap_or(&Value::Null)).collect();
    if resources.is_empty() {
        return for_tool(check("calls", NAME, Status::Pass, "no embedded resource"), &call.tool);
    }
    fn member<'v>(resource: &'v Value, name: &str) -> Option<&'v str> {
        resource.get(name).and_then(Value::as_str)
    }
    let texts = resources.iter().filter(|resource| member(resource, "text").is_some()).count();
    let unseen = resources.iter().find(|resource| member(resource, "text").is_none());
    let unnamed = resources.iter().find(|resource| {
        member(resource, "text").is_some()
            && (member(resource, "uri").is_none_or(str::is_empty)
                || member(resource, "mimeType").is_none_or(str::is_empty))
    });
    let evidence = |resource: &Value| {
        let mut shown = resource.clone();
        if let Some(members) = shown.as_object_mut() {
            for bulky in ["text", "blob"] {
                if let Some(Value::String(value)) = members.get(bulky) {
                    let replacement = format!("<{} chars>", value.chars().count());
                    members.insert(bulky.to_owned(), Value::String(replacement));
                }
            }
        }
        odek_contract::canonical_json::to_canonical_string(&shown)
    };
    let result = if let Some(resource) = unseen {
        let what = if member(resource, "blob").is_some() { "a blob" } else { "neither text nor blob" };
        with_evidence(
            check(
                "calls",
                NAME,
                Status::Warn,
                format!(
                    "an embedded resource with {what} reaches the model as a metadata line only ({texts} of {} shown as text): embed what the model must read as \"text\", or return bulky bytes as an artifact ref",
                    resources.len()
                ),
            ),
            evidence(resource),
        )
    } else if let Some(resource) = unnamed {
        with_evidence(
            check(
                "calls",
                NAME,
                Status::Warn,
                "an embedded text resource without a uri or mimeType is shown, but the model is not told what it is reading: give each its \"uri\" and \"mimeType\"",
            ),
            evidence(resource),
        )
    } else {
        check(
            "calls",
            NAME,
            Status::Pass,
            format!(
                "{texts} embedded text resource(s) reach the model as text, each under a line naming its uri and type"
            ),
        )
    };
    for_tool(result, &call.tool)
}

fn has_structured_content(answer: &Answer) -> bool {
    answer.result_value().get("structuredContent").is_some_and(|structured| !structured.is_null())
}

/// The texts of a result's text items, as the pipeline joins them.
fn text_items(answer: &Answer) -> Vec<String> {
    content_items(&answer.result_value(), "text")
        .map(|item| item.get("text").and_then(Value::as_str).unwrap_or_default().to_owned())
        .collect()
}

/// A result's content items of one `type`, in order.
fn content_items<'a>(result: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |item| item.get("type").and_then(Value::as_str) == Some(kind))
}

/// Whether any text item (or their join) claims the `odek.tool-result/v1` schema.
fn claims_envelope(texts: &[String]) -> bool {
    let joined = texts.join("\n");
    probe_envelope(&joined) != Ok(None) || texts.iter().any(|text| probe_envelope(text) != Ok(None))
}

/// An `odek.tool-result/v1` envelope decodes and carries at most 64 refs.
fn envelope_well_formed(call: &CallObservation) -> CheckResult {
    const NAME: &str = "envelope_well_formed";
    let Some(answer) = success(call) else {
        return for_tool(check("calls", NAME, Status::Skip, "no successful result"), &call.tool);
    };
    let texts = text_items(answer);
    if !claims_envelope(&texts) {
        return for_tool(check("calls", NAME, Status::Pass, "plain text result (no envelope)"), &call.tool);
    }
    let problem = texts.iter().chain(std::iter::once(&texts.join("\n"))).find_map(|text| probe_envelope(text).err());
    let result = match problem {
        None => check("calls", NAME, Status::Pass, "odek.tool-result/v1 envelope decodes"),
        Some(error) => with_evidence(check("calls", NAME, Status::Fail, error.to_string()), texts.join("\n")),
    };
    for_tool(result, &call.tool)
}

/// Every artifact ref validates against the artifact roots (path, hash, size), ids unique.
fn artifacts_validate(call: &CallObservation, context: &ResultContext<'_>) -> CheckResult {
    const NAME: &str = "artifacts_validate";
    let Some(answer) = success(call) else {
        return for_tool(check("calls", NAME, Status::Skip, "no successful result"), &call.tool);
    };
    let texts = text_items(answer);
    let borrowed: Vec<&str> = texts.iter().map(String::as_str).collect();
    let result = match decode_tool_result(&borrowed, context) {
        Ok(output) if output.artifacts.is_empty() => check("calls", NAME, Status::Skip, "no artifact refs"),
        Ok(output) => check(
            "calls",
            NAME,
            Status::Pass,
            format!("{} artifact ref(s) validated against the artifact roots", output.artifacts.len()),
        ),
        Err(error @ (ContractError::ArtifactRefRejected(_) | ContractError::DuplicateArtifactId { .. })) => {
            let hint = match error.artifact_rule() {
                ContractError::ArtifactNoRoots { .. } => {
                    "; pass --artifact-root <dir> with the directory the server writes artifacts to"
                }
                ContractError::ArtifactOutsideRoots { .. } => {
                    "; write artifacts under a configured root (--artifact-root)"
                }
                _ => "",
            };
            check("calls", NAME, Status::Fail, format!("{error}{hint}"))
        }
        Err(_) => check("calls", NAME, Status::Skip, "the envelope is malformed (see envelope_well_formed)"),
    };
    for_tool(result, &call.tool)
}

/// The text the model would see fits in `max_result_chars` without truncation.
fn result_within_caps(checked: &CheckedCall<'_>) -> CheckResult {
    const NAME: &str = "result_within_caps";
    let (call, context) = (checked.call, &checked.context);
    let Some(answer) = success(call) else {
        return for_tool(check("calls", NAME, Status::Skip, "no successful result"), &call.tool);
    };
    let result = match checked.decode(answer) {
        Ok(output) => match output.observed_chars {
            None => check(
                "calls",
                NAME,
                Status::Pass,
                format!("{} chars (max_result_chars {})", output.text.chars().count(), context.max_result_chars),
            ),
            Some(observed) => check(
                "calls",
                NAME,
                Status::Warn,
                format!(
                    "the result is {observed} chars; odek cuts it to max_result_chars={}: return a short summary and the full output as an artifact",
                    context.max_result_chars
                ),
            ),
        },
        Err(_) => check("calls", NAME, Status::Skip, "the result was rejected (see the checks above)"),
    };
    for_tool(result, &call.tool)
}

/// N requests in flight at once are all answered, each under its own id.
fn concurrent_calls_answered(observations: &Observations, options: &CheckOptions) -> CheckResult {
    const NAME: &str = "concurrent_calls_answered";
    let Some(load) = &observations.load else {
        return check("load", NAME, Status::Skip, "not run");
    };
    let unanswered: Vec<(i64, &Failure)> = load
        .outcomes
        .iter()
        .filter_map(|(id, outcome)| match outcome {
            Err(failure) if !matches!(failure, Failure::Rpc { .. }) => Some((*id, failure)),
            _ => None,
        })
        .collect();
    let total = load.outcomes.len();
    match unanswered.first() {
        None => {
            let slowest = load
                .outcomes
                .iter()
                .filter_map(|(_, outcome)| outcome.as_ref().ok())
                .map(|answer| answer.elapsed)
                .max();
            check(
                "load",
                NAME,
                Status::Pass,
                format!(
                    "{total} concurrent {} answered with matching ids in {} ms",
                    load.what,
                    slowest.map_or(0, millis)
                ),
            )
        }
        Some((_, failure)) => {
            let ids: Vec<String> = unanswered.iter().map(|(id, _)| id.to_string()).collect();
            let numbered = if options.target.is_remote() {
                "unanswered requests (by position in the burst)"
            } else {
                "unanswered ids"
            };
            with_evidence(
                check(
                    "load",
                    NAME,
                    Status::Fail,
                    format!(
                        "{} of {total} concurrent {} got no answer with their id ({failure}); answer every request under its own id (timeout {} s)",
                        unanswered.len(),
                        load.what,
                        options.timeout.as_secs_f64()
                    ),
                ),
                format!("{numbered}: {}", ids.join(", ")),
            )
        }
    }
}

/// The process exits within 5 s of its stdin closing.
fn exits_on_stdin_close(observations: &Observations) -> CheckResult {
    const NAME: &str = "exits_on_stdin_close";
    match &observations.exit {
        None => check("shutdown", NAME, Status::Skip, "not run"),
        Some(Exit::Exited { status, elapsed }) => check(
            "shutdown",
            NAME,
            Status::Pass,
            format!("exited {} ms after stdin closed (status {status})", millis(*elapsed)),
        ),
        Some(Exit::Killed) => check(
            "shutdown",
            NAME,
            Status::Fail,
            "still running 5 s after stdin closed, so it was killed; exit when stdin reaches end of file",
        ),
        Some(Exit::AlreadyGone(status)) => check(
            "shutdown",
            NAME,
            Status::Fail,
            format!("the process had already exited (status {status}) before stdin was closed"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::options::Target;
    use crate::probe::{Offender, Offenders};

    fn tool(name: &str) -> ListedTool {
        ListedTool { name: name.into(), input_schema: serde_json::json!({"type":"object"}), ..ListedTool::default() }
    }

    fn observations() -> Observations {
        Observations::default()
    }

    #[test]
    fn names_are_judged_by_the_client_rules() {
        let tools = [tool("ok"), tool("read file"), tool("shell"), tool("a.b")];
        let result = tool_names_valid(Some(&tools), "srv");
        assert_eq!(result.status, Status::Fail);
        assert_eq!(
            result.reason,
            "2 tool name(s) break the naming rules; odek rejects the whole server: mcpclient srv: tools/list: tool name \"read file\" contains invalid character ' ' (and 1 more: tool name \"a.b\" contains invalid character '.'); to use the server without these 2 tools, add them to its \"exclude_tools\": [\"read file\",\"a.b\"]"
        );
        assert_eq!(
            result.evidence.as_deref(),
            Some(
                "tool name \"read file\" contains invalid character ' '; tool name \"a.b\" contains invalid character '.'"
            )
        );
        let builtin_names = [tool("read_file"), tool("shell"), tool("plan")];
        assert_eq!(
            tool_names_valid(Some(&builtin_names), "srv").status,
            Status::Pass,
            "built-in names are not shadowed"
        );
        assert_eq!(tool_names_valid(None, "srv").status, Status::Skip);
        assert_eq!(tool_names_unique(Some(&[tool("a"), tool("b"), tool("a")])).status, Status::Fail);
        assert_eq!(tool_names_unique(Some(&[tool("a"), tool("b")])).status, Status::Pass);
    }

    #[test]
    fn long_exposed_names_warn_with_the_shortened_name() {
        let name = "t".repeat(60);
        let result = exposed_names_fit(Some(&[tool(&name), tool("short")]), "srv");
        assert_eq!(result.status, Status::Warn);
        let shortened = qualify_tool_name("srv", &name).into_string();
        assert_eq!(shortened.len(), 64);
        assert_eq!(result.evidence, Some(format!("{name} -> {shortened}")));
        assert_eq!(exposed_names_fit(Some(&[tool("short")]), "srv").status, Status::Pass);
    }

    #[test]
    fn shutdown_passes_only_for_an_exit_after_stdin_closed() {
        let mut seen = observations();
        seen.exit = Some(Exit::Exited { status: 0, elapsed: Duration::from_millis(3) });
        assert_eq!(exits_on_stdin_close(&seen).status, Status::Pass);
        seen.exit = Some(Exit::Killed);
        assert_eq!(exits_on_stdin_close(&seen).status, Status::Fail);
        seen.exit = Some(Exit::AlreadyGone(1));
        assert_eq!(exits_on_stdin_close(&seen).status, Status::Fail);
    }

    #[test]
    fn hygiene_failures_carry_the_first_offending_line() {
        let mut seen = observations();
        seen.transcript.lines = 5;
        seen.transcript.not_json_rpc = Offenders {
            kept: vec![Offender { excerpt: "INFO starting".into(), during: "initialize".into() }],
            count: 2,
        };
        let result = stdout_only_json_rpc(&seen);
        assert_eq!(result.status, Status::Fail);
        assert_eq!(result.evidence.as_deref(), Some("INFO starting"));
        assert!(
            result
                .reason
                .starts_with("2 of 5 stdout line(s) are not JSON-RPC messages (first while waiting for initialize)")
        );
    }

    fn options_for(target: Target) -> CheckOptions {
        CheckOptions {
            timeout: Duration::from_secs(1),
            max_response_bytes: 1024,
            max_result_chars: 1000,
            concurrency: 1,
            ..CheckOptions::new("s".into(), target)
        }
    }

    fn stdio() -> Target {
        Target::Stdio { command: "/nope".into(), args: Vec::new(), env: Default::default() }
    }

    fn http() -> Target {
        let endpoint =
            odek_mcp::remote::check_endpoint("s", "http://127.0.0.1:9/mcp", &Default::default(), "", false).unwrap();
        Target::Http { endpoint, token: None, legacy_sse: false }
    }

    #[test]
    fn a_server_that_cannot_start_or_be_reached_gets_one_failing_check() {
        let mut seen = observations();
        seen.start_error = Some("start /nope: No such file or directory (os error 2)".into());
        let results = all(&seen, &options_for(stdio()), &ArtifactRoots::default());
        assert_eq!(results.len(), 1);
        assert_eq!((results[0].check, results[0].status), ("server_starts", Status::Fail));
        seen.start_error = Some("the server could not be reached: …".into());
        let results = all(&seen, &options_for(http()), &ArtifactRoots::default());
        assert_eq!(results.len(), 1);
        assert_eq!((results[0].check, results[0].status), ("server_reachable", Status::Fail));
        assert_eq!(results[0].reason, "the server could not be reached: …");
    }

    /// Before: every check was judged as if the server were a process, so an HTTP server would
    /// have "passed" stdout hygiene it never had and "failed" to exit on a stdin it never had.
    #[test]
    fn process_only_checks_are_not_applicable_over_http() {
        let mut seen = observations();
        seen.transcript.oversized = Some((1024, "tools/call big".into()));
        let excerpt = "unexpected response content type \"text/html\"".to_owned();
        seen.transcript.unreadable_answers.note(Offender { excerpt, during: "ping".into() });
        let results = all(&seen, &options_for(http()), &ArtifactRoots::default());
        let status = |name: &str| results.iter().find(|result| result.check == name).map(|result| result.status);
        for name in [
            "initialized_notification_accepted",
            "stdout_only_json_rpc",
            "stdout_lines_within_limit",
            "responses_match_requests",
            "exits_on_stdin_close",
        ] {
            assert_eq!(status(name), Some(Status::Skip), "{name}");
            let reason = &results.iter().find(|result| result.check == name).unwrap().reason;
            assert!(reason.starts_with("not applicable over HTTP: "), "{reason}");
        }
        assert_eq!(status("server_reachable"), Some(Status::Pass));
        assert_eq!(status("server_starts"), None);
        assert_eq!(status("session_id_issued"), Some(Status::Pass));
        let oversized = results.iter().find(|result| result.check == "answers_within_limit").unwrap();
        assert_eq!(oversized.status, Status::Fail);
        assert!(oversized.reason.starts_with(
            "an answer longer than max_response_bytes (1024 bytes) arrived while waiting for tools/call big; "
        ));
        let unreadable = results.iter().find(|result| result.check == "answers_are_json_rpc").unwrap();
        assert_eq!(unreadable.status, Status::Fail);
        assert_eq!(unreadable.evidence.as_deref(), Some("unexpected response content type \"text/html\""));
        // Over stdio the same observations are judged as before, and nothing is about HTTP.
        let results = all(&seen, &options_for(stdio()), &ArtifactRoots::default());
        assert!(results.iter().all(|result| result.group != "http" && result.check != "server_reachable"));
    }
}
