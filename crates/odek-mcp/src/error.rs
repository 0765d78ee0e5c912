//! The one error type of the MCP client. Every variant's text is the spec's exact wording
//! (`mcp-client.md` §15 and the sections it points to); the strings live here and nowhere else.
//! [`McpError::error_class`] gives the low-cardinality class for `mcp_server_failed` events.

use odek_contract::quoting::quote;
use thiserror::Error;

use crate::caps::{MAX_TOOL_LIST_BYTES, MAX_TOOLS_PER_SERVER};

/// Why a request never got its answer: the cause part of the dispatched / not-dispatched wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The request ran out of time; \[beyond\] the limit that ended it is named.
    DeadlineExceeded(DeadlineLimit),
    Canceled,
    /// The first write error, sticky for the connection.
    Write(String),
    ClosedBeforeDispatch,
    ClosedBeforeResponse,
    ClosedAfterOversize,
    RestartLimitExhausted,
    /// \[beyond\] HTTP: no connection to the server could be made (nothing was sent).
    Connect(String),
    /// \[beyond\] HTTP: the exchange broke after the request began to be sent.
    Transport(String),
    /// \[beyond\] HTTP: the server answered 404 to the session id; the next call starts a new
    /// session.
    SessionExpired,
    /// \[beyond\] HTTP+SSE: the stream never named the endpoint messages go to.
    NoEndpoint,
    /// \[beyond\] HTTP+SSE: the `url` answered the stream's GET with something else than an
    /// event stream (`http 405`, a content type): likely a Streamable HTTP endpoint.
    NotAnEventStream(String),
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::DeadlineExceeded(limit) => write!(f, "context deadline exceeded{limit}"),
            Cause::Canceled => f.write_str("context canceled"),
            Cause::Write(error) => write!(f, "write: {error}"),
            Cause::ClosedBeforeDispatch => f.write_str("connection closed before dispatch"),
            Cause::ClosedBeforeResponse => f.write_str("connection closed before response received"),
            Cause::ClosedAfterOversize => f.write_str("connection closed after a response exceeded max_response_bytes"),
            Cause::RestartLimitExhausted => f.write_str("server process exited and the restart limit (3) is exhausted"),
            Cause::Connect(error) => write!(f, "connect: {error}"),
            Cause::Transport(error) => write!(f, "http: {error}"),
            Cause::NoEndpoint => f.write_str(
                "the server's event stream named no endpoint (an \"endpoint\" event); if the url is a Streamable HTTP endpoint, set \"type\": \"http\"",
            ),
            Cause::NotAnEventStream(answer) => write!(
                f,
                "the url answered the event stream's GET with {answer}, so it is no HTTP+SSE endpoint; if it is a Streamable HTTP endpoint, set \"type\": \"http\""
            ),
            Cause::SessionExpired => {
                f.write_str("the server ended the session (http 404); the next call starts a new one")
            }
        }
    }
}

/// \[beyond\] Which limit ended a request that ran out of time, shown after the spec's `context
/// deadline exceeded` so the reader knows what to raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineLimit {
    /// The server's per-request `timeout_seconds` (the effective value).
    Timeout(std::time::Duration),
    /// The cap on how long progress notifications may keep a request going after its dispatch
    /// ([`crate::connection::PROGRESS_CAP`]).
    ProgressCap,
    /// A deadline of the caller's own; the caller's error says which.
    Caller,
}

impl std::fmt::Display for DeadlineLimit {
    /// The detail after `context deadline exceeded`, with its leading space (none for a caller's
    /// deadline, which its caller names).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeadlineLimit::Timeout(limit) => write!(f, " (timeout_seconds: {})", limit.as_secs()),
            DeadlineLimit::ProgressCap => write!(
                f,
                " ({}s after dispatch, the most that progress notifications extend a request)",
                crate::connection::PROGRESS_CAP.as_secs()
            ),
            DeadlineLimit::Caller => Ok(()),
        }
    }
}

/// How one JSON-RPC request failed, below the `mcpclient <name>: <method>: ` prefix.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequestFailure {
    /// The writer never began writing the request: safe to retry.
    #[error("MCP request not dispatched: {0}")]
    NotDispatched(Cause),
    /// The request was (or may have been) delivered: the server may have acted on it.
    #[error("MCP request outcome unknown after dispatch; verify remote state before retrying: {0}")]
    OutcomeUnknown(Cause),
    /// A response line did not fit in `max_response_bytes`; the connection is closed for good.
    #[error("mcpclient {server}: response line exceeded configured max_response_bytes limit of {limit} bytes")]
    ResponseTooLarge { server: String, limit: usize },
    /// A JSON-RPC error object. `message` is already sanitised and capped where the spec says so.
    #[error("MCP error {code}: {message}")]
    Rpc { code: i64, message: String },
    /// \[beyond\] An HTTP answer that carries no usable response (spec §14's wording).
    #[error("{0}")]
    Http(HttpFailure),
    /// \[beyond\] A failure with what to do about it after the spec's words: `<failure>; <hint>`
    /// (a 401 says whether a token was sent, an HTTP+SSE endpoint configured as Streamable HTTP
    /// names the `type` to set).
    #[error("{failure}; {hint}")]
    Hinted { failure: Box<RequestFailure>, hint: String },
}

impl RequestFailure {
    /// The `error_class` of a start-up failure of this kind (spec `mcp-client.md` §1).
    fn error_class(&self) -> &'static str {
        match self {
            RequestFailure::NotDispatched(Cause::DeadlineExceeded(_))
            | RequestFailure::OutcomeUnknown(Cause::DeadlineExceeded(_)) => "deadline_exceeded",
            RequestFailure::ResponseTooLarge { .. } | RequestFailure::Http(HttpFailure::TooLarge { .. }) => {
                "response_too_large"
            }
            RequestFailure::Http(_) | RequestFailure::Rpc { .. } => "protocol_error",
            RequestFailure::NotDispatched(_) | RequestFailure::OutcomeUnknown(_) => "connection_closed",
            RequestFailure::Hinted { failure, .. } => failure.error_class(),
        }
    }

    /// The failure without the hint [`RequestFailure::Hinted`] adds.
    pub fn unhinted(&self) -> &RequestFailure {
        match self {
            RequestFailure::Hinted { failure, .. } => failure.unhinted(),
            other => other,
        }
    }
}

/// How an HTTP answer failed a request (spec `mcp-client.md` §14).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HttpFailure {
    /// A status other than 2xx (3xx included: redirects are never followed). `body` is cut to
    /// 512 characters with `...` appended when cut.
    #[error("http {code}: {body}")]
    Status { code: u16, body: String },
    #[error("response exceeds max_response_bytes={limit}")]
    TooLarge { limit: usize },
    #[error("unexpected response content type {}", quote(content_type))]
    ContentType { content_type: String },
    #[error("parse response: {error}")]
    Parse { error: String },
    /// \[beyond\] OAuth could not give the request a token (issue 35): one line, never a token.
    #[error("authorization: {error}")]
    Authorization { error: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum McpError {
    /// A configuration error, already worded by its rule (limits, transport, server name).
    #[error("{0}")]
    Config(String),
    #[error("mcpclient {server}: start: {error}")]
    Spawn { server: String, error: String },
    /// \[beyond\] The OS refused to run the server's command: the spec's `start: <os error>`
    /// names the command, and a command with a blank in it (a whole command line in `command`)
    /// is told to put its arguments in `args`.
    #[error("mcpclient {server}: start {}: {error}{}", quote(command), command_line_hint(command))]
    StartCommand { server: String, command: String, error: String },
    /// \[beyond\] The server process ended during start-up, before answering `method`: its exit
    /// status and the last line it wrote on stderr, instead of the transport's `outcome unknown`.
    #[error(
        "mcpclient {server}: {method}: the server exited with status {status} before answering{}",
        last_stderr_text(last_stderr.as_deref())
    )]
    ExitedAtStartup { server: String, method: &'static str, status: i32, last_stderr: Option<String> },
    /// A request that failed in transport or with a JSON-RPC error.
    #[error("mcpclient {server}: {method}: {failure}")]
    Request { server: String, method: &'static str, failure: RequestFailure },
    #[error("mcpclient {server}: initialize: parse result: {error}")]
    InitializeParse { server: String, error: String },
    #[error("mcpclient {server}: parse tools/list: {error}")]
    ToolsListParse { server: String, error: String },
    #[error("mcpclient {server}: tools/list: server repeated cursor {}", quote(cursor))]
    RepeatedCursor { server: String, cursor: String },
    #[error("mcpclient {server}: tools/list: more than 100 pages")]
    TooManyPages { server: String },
    /// [beyond] The pages of one listing together exceed `MAX_TOOL_LIST_BYTES`.
    #[error(
        "mcpclient {server}: tools/list: the tool list exceeds {MAX_TOOL_LIST_BYTES} bytes (the cap per server); page {page} brought it to {observed} bytes"
    )]
    ToolListTooLarge { server: String, page: usize, observed: usize },
    /// [beyond] One listing names more than `MAX_TOOLS_PER_SERVER` tools.
    #[error(
        "mcpclient {server}: tools/list: the server lists more than {MAX_TOOLS_PER_SERVER} tools (the cap per server); refused at page {page}"
    )]
    TooManyTools { server: String, page: usize },
    /// Every listed tool whose raw name breaks the §3 rules, in list order (never empty): the
    /// first one's rule text exactly as the spec words it, then [beyond] the others and the
    /// `exclude_tools` entry that would let the server start.
    #[error("mcpclient {server}: tools/list: {}", invalid_tool_names_text(rejected))]
    InvalidToolNames { server: String, rejected: Vec<RejectedName> },
    #[error(
        "mcp server {}: tool {} maps to exposed name {}, already used by server {}",
        quote(server),
        quote(tool),
        quote(exposed),
        quote(other)
    )]
    ExposedNameCollision { server: String, tool: String, exposed: String, other: String },
    /// Per-tool approval was required and could not be asked for (text from the approver).
    #[error("{0}")]
    ApprovalRequired(String),
    #[error("mcpclient {server}: parse result: {error}")]
    ResultParse { server: String, error: String },
    /// \[beyond\] The answer to another request of odek's (`resources/list`, `resources/read`)
    /// is not what MCP says.
    #[error("mcpclient {server}: parse {method}: {error}")]
    ResponseParse { server: String, method: &'static str, error: String },
    /// \[beyond\] A resource request named a server that offers no resources (or none is live).
    #[error("{}", no_resources_text(server, offering))]
    NoResources { server: String, offering: Vec<String> },
    /// `isError: true`; `message` is sanitised and capped.
    #[error("mcpclient {server}: tool {tool} returned error: {message}")]
    ToolReturnedError { server: String, tool: String, message: String },
    /// Envelope or artifact failure; `detail` is the contract's text, capped.
    #[error("mcpclient {server}: tool {tool}: {detail}")]
    ToolResult { server: String, tool: String, detail: String },
    #[error("mcpclient {server}: restart failed: {source}")]
    RestartFailed { server: String, source: Box<McpError> },
    #[error("mcp server {}: restart rejected: {source}; server disabled", quote(server))]
    RestartRejected { server: String, source: Box<McpError> },
    #[error("mcpclient {server}: tool {tool} is no longer offered by the server")]
    NoLongerOffered { server: String, tool: String },
    #[error("mcp server {}: tool list refresh failed: {source}; server disabled", quote(server))]
    RefreshFailed { server: String, source: Box<McpError> },
    /// The exposed name is not in the catalogue (the loop renders `error: tool "<name>" not found`).
    #[error("tool {} not found", quote(exposed))]
    ToolNotFound { exposed: String },
    /// The transport named in the config is not available in this build.
    #[error("mcpclient {server}: {detail}")]
    Unsupported { server: String, detail: String },
    /// An error whose text was sanitised and capped for the model (see `McpHub::call`); keeps the
    /// class of the error it replaced.
    #[error("{text}")]
    Bounded { class: &'static str, text: String },
    /// \[beyond\] The server's start-up (spawn, `initialize`, the whole `tools/list`) did not
    /// finish within its start-up deadline.
    #[error(
        "mcpclient {server}: start-up (spawn, initialize, tools/list) did not finish within {}s (startup_timeout_seconds)",
        limit.as_secs()
    )]
    StartupTimeout { server: String, limit: std::time::Duration },
    /// The startup wrapper `mcp server "<name>": <error>`, never applied twice.
    #[error("{}", startup_text(server, source))]
    Startup { server: String, source: Box<McpError> },
    /// \[beyond\] The required servers that failed at start-up (never empty), each one's
    /// startup error on a line of its own, then how to let a run go on without such a server.
    #[error("{}", required_failures_text(failures))]
    RequiredServersFailed { failures: Vec<McpError> },
}

/// The hint after the failures of required servers.
pub const MAKE_OPTIONAL_HINT_ONE: &str =
    "to let the run go on without this server when it fails, set \"required\": false in its entry";
/// The same hint after several failures.
pub const MAKE_OPTIONAL_HINT_MANY: &str =
    "to let the run go on without one of these servers when it fails, set \"required\": false in its entry";

/// One line per failure, then the hint — unless every failure is a tool approval nobody could
/// give, whose own text already says what to do.
fn required_failures_text(failures: &[McpError]) -> String {
    let texts: Vec<String> = failures.iter().map(ToString::to_string).collect();
    let mut text = texts.join("\n");
    if !failures.iter().all(McpError::unwrapped_is_approval) {
        text.push('\n');
        text.push_str(if failures.len() > 1 { MAKE_OPTIONAL_HINT_MANY } else { MAKE_OPTIONAL_HINT_ONE });
    }
    text
}

/// `no MCP server "<server>" offers resources; servers with resources: "a", "b"` (or `: none`).
fn no_resources_text(server: &str, offering: &[String]) -> String {
    let offering = if offering.is_empty() {
        "none".to_owned()
    } else {
        offering.iter().map(|name| quote(name)).collect::<Vec<_>>().join(", ")
    };
    format!("no MCP server {} offers resources; servers with resources: {offering}", quote(server))
}

/// A raw tool name the §3 rules reject, and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedName {
    pub name: String,
    pub error: odek_contract::ContractError,
}

/// Rejected names after the first whose rule text is spelled out; the rest are counted (every
/// one is still in the `exclude_tools` list).
pub(crate) const MAX_DETAILED_REJECTED_NAMES: usize = 16;

/// `<first rule text>[ (and <n> more: <rule text>; …)]; to use the server without <it|these n
/// tools>, add <it|them> to its "exclude_tools": [<names as JSON>]`.
fn invalid_tool_names_text(rejected: &[RejectedName]) -> String {
    let Some((first, others)) = rejected.split_first() else { return String::new() };
    let mut text = first.error.to_string();
    if !others.is_empty() {
        let mut details: Vec<String> =
            others.iter().take(MAX_DETAILED_REJECTED_NAMES).map(|other| other.error.to_string()).collect();
        if others.len() > MAX_DETAILED_REJECTED_NAMES {
            details.push(format!("{} more not shown", others.len() - MAX_DETAILED_REJECTED_NAMES));
        }
        text.push_str(&format!(" (and {} more: {})", others.len(), details.join("; ")));
    }
    // A name listed twice is excluded by one entry.
    let mut names: Vec<&str> = Vec::with_capacity(rejected.len());
    let mut seen = std::collections::HashSet::new();
    for rejected in rejected {
        if seen.insert(rejected.name.as_str()) {
            names.push(rejected.name.as_str());
        }
    }
    let (which, pronoun) = if names.len() == 1 {
        ("that tool".to_owned(), "it")
    } else {
        (format!("these {} tools", names.len()), "them")
    };
    let names = serde_json::to_string(&names).unwrap_or_default();
    text.push_str(&format!("; to use the server without {which}, add {pronoun} to its \"exclude_tools\": {names}"));
    text
}

/// After a command that could not be started: a blank in it means a whole command line was
/// written where the program alone goes (no shell splits it).
fn command_line_hint(command: &str) -> &'static str {
    if command.trim().contains(char::is_whitespace) {
        "; \"command\" is run without a shell: put the program alone in \"command\" and its arguments in \"args\""
    } else {
        ""
    }
}

/// What a server that exited at start-up last said, as the end of the error.
fn last_stderr_text(line: Option<&str>) -> String {
    match line {
        Some(line) => format!("; its last stderr line: {line}"),
        None => " (it wrote nothing on stderr)".to_owned(),
    }
}

fn startup_text(server: &str, source: &McpError) -> String {
    let prefix = format!("mcp server {}: ", quote(server));
    let inner = source.to_string();
    if inner.starts_with(&prefix) || matches!(source, McpError::ApprovalRequired(_)) {
        inner
    } else {
        format!("{prefix}{inner}")
    }
}

impl McpError {
    /// Wraps a startup failure as `mcp server "<name>": <error>` (once).
    pub fn at_startup(server: &str, source: McpError) -> McpError {
        match source {
            already @ McpError::Startup { .. } => already,
            source => McpError::Startup { server: server.to_owned(), source: Box::new(source) },
        }
    }

    /// The `error_class` of `mcp_server_failed` (spec `mcp-client.md` §1).
    pub fn error_class(&self) -> &'static str {
        match self {
            McpError::Config(_) | McpError::Unsupported { .. } => "config",
            McpError::Bounded { class, .. } => class,
            McpError::ApprovalRequired(_) => "approval_required",
            McpError::Spawn { .. } | McpError::StartCommand { .. } => "spawn_failed",
            McpError::ExitedAtStartup { .. } => "connection_closed",
            McpError::StartupTimeout { .. } => "stalled",
            McpError::Request { failure, .. } => failure.error_class(),
            McpError::InitializeParse { .. }
            | McpError::ToolsListParse { .. }
            | McpError::RepeatedCursor { .. }
            | McpError::TooManyPages { .. }
            | McpError::ToolListTooLarge { .. }
            | McpError::TooManyTools { .. }
            | McpError::ResultParse { .. }
            | McpError::ResponseParse { .. } => "protocol_error",
            McpError::InvalidToolNames { .. } | McpError::ExposedNameCollision { .. } => "invalid_tool",
            McpError::RestartFailed { source, .. }
            | McpError::RestartRejected { source, .. }
            | McpError::RefreshFailed { source, .. }
            | McpError::Startup { source, .. } => source.error_class(),
            McpError::RequiredServersFailed { failures } => failures.first().map_or("error", McpError::error_class),
            McpError::ToolReturnedError { .. }
            | McpError::ToolResult { .. }
            | McpError::NoLongerOffered { .. }
            | McpError::ToolNotFound { .. }
            | McpError::NoResources { .. } => "error",
        }
    }

    /// The start-up deadline that fired, when this is (or wraps) a start-up stall.
    pub fn startup_stall(&self) -> Option<std::time::Duration> {
        match self {
            McpError::StartupTimeout { limit, .. } => Some(*limit),
            McpError::Startup { source, .. } => source.startup_stall(),
            McpError::RequiredServersFailed { failures } => failures.first().and_then(McpError::startup_stall),
            _ => None,
        }
    }

    /// Whether this is (or wraps at start-up) a tool approval nobody could give.
    fn unwrapped_is_approval(&self) -> bool {
        match self {
            McpError::ApprovalRequired(_) => true,
            McpError::Startup { source, .. } => source.unwrapped_is_approval(),
            _ => false,
        }
    }

    /// True for the name failures that disable a server when they happen on restart.
    pub(crate) fn is_name_rejection(&self) -> bool {
        matches!(self, McpError::InvalidToolNames { .. } | McpError::ExposedNameCollision { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_wording_is_exact() {
        let err = McpError::Request {
            server: "fx".into(),
            method: "tools/call",
            failure: RequestFailure::OutcomeUnknown(Cause::DeadlineExceeded(DeadlineLimit::Caller)),
        };
        assert_eq!(
            err.to_string(),
            "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: context deadline exceeded"
        );
        let timeout = DeadlineLimit::Timeout(std::time::Duration::from_secs(30));
        let err = McpError::Request {
            server: "fx".into(),
            method: "tools/call",
            failure: RequestFailure::OutcomeUnknown(Cause::DeadlineExceeded(timeout)),
        };
        assert_eq!(
            err.to_string(),
            "mcpclient fx: tools/call: MCP request outcome unknown after dispatch; verify remote state before retrying: context deadline exceeded (timeout_seconds: 30)"
        );
        assert_eq!(
            Cause::DeadlineExceeded(DeadlineLimit::ProgressCap).to_string(),
            "context deadline exceeded (3600s after dispatch, the most that progress notifications extend a request)"
        );
        let err = McpError::Request {
            server: "fx".into(),
            method: "tools/call",
            failure: RequestFailure::NotDispatched(Cause::RestartLimitExhausted),
        };
        assert_eq!(
            err.to_string(),
            "mcpclient fx: tools/call: MCP request not dispatched: server process exited and the restart limit (3) is exhausted"
        );
        let err = McpError::Request {
            server: "fx".into(),
            method: "tools/call",
            failure: RequestFailure::ResponseTooLarge { server: "fx".into(), limit: 1024 },
        };
        assert_eq!(
            err.to_string(),
            "mcpclient fx: tools/call: mcpclient fx: response line exceeded configured max_response_bytes limit of 1024 bytes"
        );
    }

    #[test]
    fn startup_prefix_is_applied_once() {
        let inner = McpError::ExposedNameCollision {
            server: "fx".into(),
            tool: "echo".into(),
            exposed: "fx__echo".into(),
            other: "fy".into(),
        };
        let wrapped = McpError::at_startup("fx", inner);
        assert_eq!(
            wrapped.to_string(),
            "mcp server \"fx\": tool \"echo\" maps to exposed name \"fx__echo\", already used by server \"fy\""
        );
        let spawn = McpError::at_startup("fx", McpError::Spawn { server: "fx".into(), error: "boom".into() });
        assert_eq!(spawn.to_string(), "mcp server \"fx\": mcpclient fx: start: boom");
        assert_eq!(McpError::at_startup("fx", spawn.clone()), spawn);
        assert_eq!(spawn.error_class(), "spawn_failed");
    }
}
