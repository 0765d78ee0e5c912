//! The MCP hub: every configured server of a run, started in name order, its tools in one
//! catalogue, and the call pipeline the agent (and `odek ext call`) uses. It owns the lifecycle
//! rules of spec `mcp-client.md`: startup with no partial tool set (§1; [beyond] a
//! `required: false` server that fails is left out instead), per-tool approval asked once per
//! server, crash restarts (§11), stale-list refresh (§12) and shutdown of every server on every
//! path (§13).
//!
//! Start at [`McpHub::start`] and [`McpHub::call`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use odek_contract::artifact_ref::ArtifactRoots;
use odek_contract::model_view::OutputCheck;
use odek_contract::names::ExposedName;
use odek_contract::quoting::quote;
use odek_contract::tool_result::{ResultContext, ToolOutput, cap_error_text};
use odek_contract::truncation::apply_result_limit;

use crate::approval::{ToolApproval, ToolApprovalRequest, ToolApprover};
use crate::call::{decode_checked_call_result, decode_unless_blocking};
use crate::catalogue::{Catalogue, Route};
use crate::connection::{CallOptions, Connection, ExitInfo, HttpParams, SpawnParams, cancelled};
use crate::discovery::{
    Discovered, ListedTool, ToolDescriptor, check_tool_names, cursor_params, handshake, list_tools,
    registration_checks_quiet,
};
use crate::env_allowlist::server_env;
use crate::error::{Cause, DeadlineLimit, HttpFailure, McpError, RequestFailure};
use crate::oauth::{Authorizer, OAuthError};
use crate::observer::{McpEvent, McpObserver};
use crate::output_schema::OutputSchema;
use crate::resources::{LIST_METHOD, READ_METHOD, decode_read_result, read_params, render_resource_page};
use crate::server_config::{Limits, SecretValue, ServerSpec, Transport};
use crate::wire::{Params, ResultFrame, encode_arguments};

/// Restarts allowed per server per run.
pub(crate) const MAX_RESTARTS: u32 = 3;

/// What the hub needs from its embedder.
#[derive(Clone)]
pub struct HubOptions {
    pub observer: Arc<dyn McpObserver>,
    pub approver: Arc<dyn ToolApprover>,
    /// Sent as `clientInfo.version`.
    pub client_version: String,
    /// The parent environment the allowlist picks from.
    pub parent_env: Vec<(String, String)>,
    /// \[beyond\] The start-up deadline of a server whose entry sets none.
    pub startup_timeout: Duration,
    /// \[beyond\] How the stdio servers that ask for the sandbox are confined (issue 20).
    pub sandbox: crate::ServerSandbox,
    /// \[beyond\] OAuth for the remote servers without a static token (issue 35): the token
    /// file's directory and, for an interactive face, how a login is shown; `None`: a `401` is
    /// only an error.
    pub oauth: Option<crate::oauth::OAuthOptions>,
    /// \[beyond\] Who answers the servers' `elicitation/create` (issue 35).
    pub elicitation: crate::ElicitationSettings,
}

/// A server's state as `odek ext list` shows it.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub protocol_version: String,
    pub limits: Limits,
    pub tools: Vec<ExposedName>,
    pub restarts: u32,
    pub disabled: bool,
    /// \[beyond\] The server sent `instructions` that reach the system prompt.
    pub instructions: bool,
    /// \[beyond\] Its handshake offered resources.
    pub resources: bool,
}

enum Slot {
    Live(Arc<Connection>),
    Disabled,
}

struct ServerRuntime {
    spec: ServerSpec,
    index: usize,
    roots: ArtifactRoots,
    env: BTreeMap<String, String>,
    /// \[beyond\] What a confined package runner is granted besides its server policy (issue 32).
    runner: Option<crate::package_runner::RunnerGrant>,
    /// \[beyond\] The bearer token of an HTTP server (`token_env`, read once at start).
    token: Option<SecretValue>,
    /// \[beyond\] The OAuth authorizer of an HTTP server without a static token (or why its
    /// entry cannot have one), kept across restarts so a refreshed token outlives a session.
    authorizer: Result<Option<Arc<Authorizer>>, OAuthError>,
    stale: Arc<AtomicBool>,
    /// Serialises restarts and re-listing of this server. Held across the awaits of a restart on
    /// purpose: concurrent callers must wait for the one restart rather than start their own.
    slot: tokio::sync::Mutex<Slot>,
    restarts: AtomicU32,
    /// Set once a restart was decided and until one succeeds: a restart that failed or was
    /// interrupted must be retried by the next call, although odek itself closed the old
    /// connection meanwhile.
    restart_due: AtomicBool,
    protocol_version: Mutex<String>,
    /// \[beyond\] The model-facing block of the server's `instructions`, from its latest
    /// handshake.
    instructions: Mutex<Option<String>>,
    /// \[beyond\] Whether the latest handshake offered `resources`.
    resources: AtomicBool,
    /// Tools the approver turned down, as listed: a re-list does not ask (or warn) again.
    declined: Mutex<Vec<ToolDescriptor>>,
}

/// The running MCP servers of one run and their tool catalogue.
pub struct McpHub {
    servers: Vec<Arc<ServerRuntime>>,
    catalogue: RwLock<Catalogue>,
    options: HubOptions,
    /// Set by [`McpHub::shutdown`]: no call may start or restart a server afterwards.
    closed: AtomicBool,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub").field("servers", &self.servers.len()).finish()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum StartMode {
    /// The run's rule: the first failure closes everything and is returned.
    FailFast,
    /// `odek ext list`: start what can be started, report the rest.
    KeepGoing,
}

impl McpHub {
    /// Starts every server (spec §1 steps 4–5): connect and list concurrently, then register in
    /// ascending name order with the name rules, registration checks and per-tool approval. Any
    /// failure of a required server closes every server and fails with
    /// `mcp server "<name>": <error>` — \[beyond\] for every required server that failed to
    /// connect, not only the first, and with how to make a server optional
    /// ([`McpError::RequiredServersFailed`]). [beyond] A server with `required: false` that fails is
    /// reported ([`report_optional_failure`]) and left out: the hub holds the others, in the same
    /// order, and never starts it later in the run.
    pub async fn start(specs: Vec<ServerSpec>, options: HubOptions) -> Result<McpHub, McpError> {
        let (hub, failures) = Self::start_inner(specs, options, StartMode::FailFast).await;
        if failures.is_empty() {
            return Ok(hub);
        }
        hub.shutdown().await;
        Err(McpError::RequiredServersFailed { failures: failures.into_iter().map(|(_, error)| error).collect() })
    }

    /// Starts every server independently and reports each failure instead of stopping; the hub
    /// holds the servers that started. For diagnostics (`odek ext list`), never for a run.
    pub async fn start_report(specs: Vec<ServerSpec>, options: HubOptions) -> (McpHub, Vec<(String, McpError)>) {
        Self::start_inner(specs, options, StartMode::KeepGoing).await
    }

    async fn start_inner(
        mut specs: Vec<ServerSpec>,
        mut options: HubOptions,
        mode: StartMode,
    ) -> (McpHub, Vec<(String, McpError)>) {
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        // Warnings can echo server text: redact once, before any observer sees them.
        options.observer = Arc::new(RedactingObserver(options.observer));
        let mut servers = Vec::with_capacity(specs.len());
        let operator_env: BTreeMap<String, String> = options.parent_env.iter().cloned().collect();
        for (index, spec) in specs.into_iter().enumerate() {
            let token = http_token(&spec, &options);
            let authorizer = match &options.oauth {
                Some(oauth) => {
                    Authorizer::for_server(&spec, oauth, &options.parent_env).map(|found| found.map(Arc::new))
                }
                None => Ok(None),
            };
            let mut env = match &spec.transport {
                Transport::Stdio { env, .. } => {
                    let (env, warnings) =
                        server_env(&spec.name, env, &spec.secret_env, options.parent_env.iter().cloned());
                    for warning in warnings {
                        options.observer.warning(&spec.name, &warning);
                    }
                    env
                }
                Transport::Http { .. } => BTreeMap::new(),
            };
            let runner = options.sandbox.grant_runner(&spec, &mut env, &operator_env, options.observer.as_ref());
            servers.push(Arc::new(ServerRuntime {
                roots: ArtifactRoots::new(&spec.artifact_roots),
                index,
                env,
                runner,
                token,
                authorizer,
                stale: Arc::new(AtomicBool::new(false)),
                slot: tokio::sync::Mutex::new(Slot::Disabled),
                restarts: AtomicU32::new(0),
                restart_due: AtomicBool::new(false),
                protocol_version: Mutex::new(String::new()),
                instructions: Mutex::new(None),
                resources: AtomicBool::new(false),
                declined: Mutex::new(Vec::new()),
                spec,
            }));
        }
        let hub = McpHub {
            catalogue: RwLock::new(Catalogue::new(servers.iter().map(|s| s.spec.name.clone()).collect())),
            servers,
            options,
            closed: AtomicBool::new(false),
        };

        // Connect and list concurrently; register strictly in name order.
        let mut connecting = Vec::with_capacity(hub.servers.len());
        for server in &hub.servers {
            let server = Arc::clone(server);
            let options = hub.options.clone();
            connecting.push(tokio::spawn(async move {
                let started = Instant::now();
                // The per-server checks run here, concurrently; registration stays in name order.
                let outcome = connect(&server, &options).await.map(|(connection, discovered)| {
                    let mut prepared = prepare(&server.spec, discovered.tools);
                    prepared.warnings.extend(discovered.instructions.warning);
                    let handshake = Handshake {
                        protocol_version: discovered.protocol_version,
                        instructions: discovered.instructions.block,
                        resources: discovered.resources,
                    };
                    (connection, handshake, prepared)
                });
                (outcome, started.elapsed())
            }));
        }
        let mut failures = Vec::new();
        let mut failed_required = false;
        let mut connected = Vec::with_capacity(connecting.len());
        for (server, task) in hub.servers.iter().zip(connecting) {
            connected.push(match task.await {
                Ok(outcome) => outcome,
                Err(join) => {
                    (Err(McpError::Spawn { server: server.spec.name.clone(), error: join.to_string() }), Duration::ZERO)
                }
            });
        }
        for (server, (outcome, connect_time)) in hub.servers.iter().zip(connected) {
            let result = match outcome {
                // A required server failed: the run will not start, so nothing more is registered
                // (and nobody is asked to approve tools), but every server that failed to connect
                // is still reported.
                Ok((connection, ..)) if failed_required => {
                    connection.shutdown().await;
                    continue;
                }
                Ok((connection, handshake, prepared)) => {
                    hub.register_started(server, connection, handshake, prepared, connect_time).await
                }
                Err(error) => Err(error),
            };
            let Err(error) = result else { continue };
            let name = &server.spec.name;
            let error = McpError::at_startup(name, error);
            match mode {
                StartMode::FailFast if !server.spec.required => {
                    report_optional_failure(hub.options.observer.as_ref(), name, &error, Some(error.error_class()));
                }
                StartMode::FailFast => {
                    hub.options
                        .observer
                        .event(McpEvent::ServerFailed { server: name.clone(), error_class: error.error_class() });
                    failed_required = true;
                    failures.push((name.clone(), error));
                }
                StartMode::KeepGoing => {
                    hub.options
                        .observer
                        .event(McpEvent::ServerFailed { server: name.clone(), error_class: error.error_class() });
                    failures.push((name.clone(), error));
                }
            }
        }
        (hub, failures)
    }

    async fn register_started(
        &self,
        server: &ServerRuntime,
        connection: Arc<Connection>,
        handshake: Handshake,
        prepared: Prepared,
        connect_time: Duration,
    ) -> Result<(), McpError> {
        // Connect → registered, without the time spent waiting for earlier servers' turn.
        let registering = Instant::now();
        let count = match self.register_prepared(server, prepared, false).await {
            Ok(count) => count,
            Err(error) => {
                connection.shutdown().await;
                return Err(error);
            }
        };
        let protocol_version = handshake.protocol_version.clone();
        server.keep_handshake(handshake);
        *server.slot.lock().await = Slot::Live(connection);
        self.options.observer.event(McpEvent::ServerStarted {
            server: server.spec.name.clone(),
            tools: count,
            duration_ms: u64::try_from((connect_time + registering.elapsed()).as_millis()).unwrap_or(u64::MAX),
            protocol_version,
        });
        Ok(())
    }

    /// Name rules, registration checks, collisions and approvals for one server's list, then the
    /// catalogue swap. On a re-list, tools identical to registered ones are kept without asking
    /// again and unapproved new or changed tools are left out with a warning.
    async fn register(&self, server: &ServerRuntime, tools: Vec<ListedTool>, relist: bool) -> Result<usize, McpError> {
        self.register_prepared(server, prepare(&server.spec, tools), relist).await
    }

    async fn register_prepared(
        &self,
        server: &ServerRuntime,
        prepared: Prepared,
        relist: bool,
    ) -> Result<usize, McpError> {
        let name = &server.spec.name;
        prepared.names?;
        let previous = {
            let catalogue = self.catalogue.read().unwrap_or_else(PoisonError::into_inner);
            catalogue.check_collisions(server.index, prepared.raw_names.iter().map(String::as_str))?;
            catalogue.tools_of(server.index).to_vec()
        };
        for warning in &prepared.warnings {
            self.options.observer.warning(name, warning);
        }
        let declined_before = server.declined.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut declined = Vec::new();
        let candidates = prepared.candidates;
        // (list position, tool): approvals come back out of order, the catalogue keeps list order.
        let mut approved = Vec::with_capacity(candidates.len());
        let mut to_ask = Vec::new();
        for (position, tool) in candidates.into_iter().enumerate() {
            if relist && previous.iter().any(|known| same_tool(known, &tool)) {
                approved.push((position, tool));
            } else if relist && declined_before.iter().any(|known| same_tool(known, &tool)) {
                declined.push(tool);
            } else {
                to_ask.push((position, tool));
            }
        }
        // One blocking task asks about all of this server's tools at once, in list order (prompts
        // read the terminal); at startup the answers stop at the first tool that needs an
        // approval nobody can give.
        let requests: Vec<ToolApprovalRequest> = to_ask
            .iter()
            .map(|(_, tool)| ToolApprovalRequest {
                server: name.clone(),
                tool: tool.raw_name.clone(),
                description: tool.raw_description.clone(),
                input_schema: tool.input_schema.clone(),
                relist,
            })
            .collect();
        let approver = Arc::clone(&self.options.approver);
        let answers = if requests.is_empty() {
            Vec::new()
        } else {
            tokio::task::spawn_blocking(move || approver.approve_tools(&requests))
                .await
                .unwrap_or_else(|join| vec![ToolApproval::Required(format!("approval prompt failed: {join}"))])
        };
        for ((position, tool), answer) in to_ask.into_iter().zip(answers) {
            match (answer, relist) {
                (ToolApproval::Approved, _) => approved.push((position, tool)),
                (ToolApproval::Declined, false) => declined.push(tool),
                (ToolApproval::Required(message), false) => return Err(McpError::ApprovalRequired(message)),
                (ToolApproval::Declined | ToolApproval::Required(_), true) => {
                    self.options.observer.warning(
                        name,
                        &format!(
                            "mcp server {}: tool {} changed or is new and is not approved; not registered",
                            quote(name),
                            quote(&tool.raw_name)
                        ),
                    );
                    declined.push(tool);
                }
            }
        }
        approved.sort_by_key(|(position, _)| *position);
        let approved: Vec<ToolDescriptor> = approved.into_iter().map(|(_, tool)| tool).collect();
        let count = approved.len();
        self.catalogue.write().unwrap_or_else(PoisonError::into_inner).replace(server.index, approved)?;
        *server.declined.lock().unwrap_or_else(PoisonError::into_inner) = declined;
        Ok(count)
    }

    /// The current catalogue, in order: server name, then each server's list order.
    pub fn tools(&self) -> Vec<ToolDescriptor> {
        self.catalogue.read().unwrap_or_else(PoisonError::into_inner).all()
    }

    /// The catalogue entry behind an exposed name (one clone, where [`McpHub::tools`] clones
    /// every entry).
    pub fn tool(&self, exposed: &str) -> Option<ToolDescriptor> {
        self.catalogue.read().unwrap_or_else(PoisonError::into_inner).tool(exposed).cloned()
    }

    /// Every started server with its effective limits and exposed tools.
    pub fn servers(&self) -> Vec<ServerInfo> {
        let catalogue = self.catalogue.read().unwrap_or_else(PoisonError::into_inner);
        self.servers
            .iter()
            .map(|server| ServerInfo {
                name: server.spec.name.clone(),
                protocol_version: server.protocol_version.lock().unwrap_or_else(PoisonError::into_inner).clone(),
                limits: server.spec.limits,
                tools: catalogue.tools_of(server.index).iter().map(|tool| tool.exposed.clone()).collect(),
                restarts: server.restarts.load(Ordering::Acquire),
                disabled: !server.is_enabled(),
                instructions: server.instructions.lock().unwrap_or_else(PoisonError::into_inner).is_some(),
                resources: server.resources.load(Ordering::Acquire),
            })
            .collect()
    }

    /// Calls one tool by exposed name with the model's raw argument string and returns the text
    /// the contract produces (before the loop's untrusted wrapper). Whatever fails, the error
    /// text is sanitised and never longer than the server's `max_result_chars`.
    pub async fn call(&self, exposed: &str, arguments: &str, options: &CallOptions) -> Result<ToolOutput, McpError> {
        let (server, route) = {
            let catalogue = self.catalogue.read().unwrap_or_else(PoisonError::into_inner);
            let route =
                catalogue.route(exposed).ok_or_else(|| McpError::ToolNotFound { exposed: exposed.to_owned() })?;
            (Arc::clone(&self.servers[route.server]), route.clone())
        };
        self.call_server(&server, &route, exposed, arguments, options)
            .await
            .map_err(|error| bound_error(error, &result_context(&server, &route.raw_name)))
    }

    async fn call_server(
        &self,
        server: &ServerRuntime,
        route: &Route,
        exposed: &str,
        arguments: &str,
        options: &CallOptions,
    ) -> Result<ToolOutput, McpError> {
        let name = &server.spec.name;
        let raw_tool: &str = &route.raw_name;
        let connection = self.connection_within(server, Purpose::Tool { raw_tool, exposed }, options).await?;
        let encoded = encode_arguments(arguments);
        let frame = connection
            .request("tools/call", Params::ToolCall { prefix: &route.params_prefix, arguments: &encoded }, options)
            .await
            .map_err(|failure| request_error(server, "tools/call", raw_tool, failure))?;
        let output_schema = route.output_schema.clone();
        let context = result_context(server, raw_tool);
        if let Some(decoded) = decode_unless_blocking(frame.result_json(), &context, as_check(output_schema.as_deref()))
        {
            return decoded;
        }
        // Artifact validation stats and hashes files, and a schema check walks a value of up to
        // max_response_bytes: off the async workers, and never past the caller's bounds (the
        // check's own work is bounded; an abandoned one finishes alone).
        let (server_name, tool, limit, roots) =
            (name.clone(), raw_tool.to_owned(), server.spec.limits.max_result_chars, server.roots.clone());
        let decoded = decode_off_workers(
            move || {
                let context =
                    ResultContext { server: &server_name, tool: &tool, max_result_chars: limit, roots: &roots };
                decode_checked_call_result(frame.result_json(), &context, as_check(output_schema.as_deref()))
            },
            options,
        )
        .await;
        decoded.map_err(|failure| match failure {
            Abandoned::Cause(cause) => McpError::Request {
                server: name.clone(),
                method: "tools/call",
                failure: RequestFailure::OutcomeUnknown(cause),
            },
            Abandoned::Failed(detail) => {
                McpError::ToolResult { server: name.clone(), tool: raw_tool.to_owned(), detail }
            }
        })?
    }

    /// The usual case without waiting: the slot is free (no restart or re-list under way) and
    /// holds a connection that is alive. `None` sends the caller through
    /// [`McpHub::connection_for_call`], which decides everything else.
    fn live_connection(&self, server: &ServerRuntime) -> Option<Arc<Connection>> {
        let slot = server.slot.try_lock().ok()?;
        match &*slot {
            Slot::Live(connection) if !self.closed.load(Ordering::Acquire) && !connection.is_dead() => {
                Some(Arc::clone(connection))
            }
            _ => None,
        }
    }

    /// The live connection for a call, restarting a crashed server first (spec §11).
    async fn connection_for_call(
        &self,
        server: &ServerRuntime,
        purpose: Purpose<'_>,
    ) -> Result<Arc<Connection>, McpError> {
        let name = &server.spec.name;
        let method = purpose.method();
        let mut slot = server.slot.lock().await;
        if self.closed.load(Ordering::Acquire) {
            return Err(McpError::Request {
                server: name.clone(),
                method,
                failure: RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch),
            });
        }
        let current = match &*slot {
            Slot::Live(connection) => Arc::clone(connection),
            Slot::Disabled => return Err(purpose.unavailable(name, self.resource_servers())),
        };
        if !current.is_dead() {
            return Ok(current);
        }
        if !server.restart_due.load(Ordering::Acquire) && !current.restartable() {
            // Closed for good (oversized line) or a sticky write failure on a live process:
            // the request fails with the connection's own reason.
            return Ok(current);
        }
        if server.restarts.load(Ordering::Acquire) >= MAX_RESTARTS {
            return Err(McpError::Request {
                server: name.clone(),
                method,
                failure: RequestFailure::NotDispatched(Cause::RestartLimitExhausted),
            });
        }
        server.restart_due.store(true, Ordering::Release);
        let restarts = server.restarts.fetch_add(1, Ordering::AcqRel) + 1;
        // Reap the old process first: its stdout may reach EOF before its exit is observed.
        current.shutdown().await;
        // An HTTP server has no process: its restart (a new session) has no exit status.
        let exit_status = (!current.is_remote()).then(|| current.exit_info().map_or(-1, |exit| exit.status));

        let (connection, discovered) = match connect(server, &self.options).await {
            Ok(connected) => connected,
            Err(error) => {
                self.options
                    .observer
                    .event(McpEvent::ServerFailed { server: name.clone(), error_class: error.error_class() });
                return Err(McpError::RestartFailed { server: name.clone(), source: Box::new(error) });
            }
        };
        if let Err(error) = self.register(server, discovered.tools, true).await {
            connection.shutdown().await;
            self.options
                .observer
                .event(McpEvent::ServerFailed { server: name.clone(), error_class: error.error_class() });
            if error.is_name_rejection() {
                *slot = Slot::Disabled;
                self.catalogue.write().unwrap_or_else(PoisonError::into_inner).remove_server(server.index);
                return Err(McpError::RestartRejected { server: name.clone(), source: Box::new(error) });
            }
            return Err(McpError::RestartFailed { server: name.clone(), source: Box::new(error) });
        }
        if let Some(warning) = &discovered.instructions.warning {
            self.options.observer.warning(name, warning);
        }
        server.keep_handshake(Handshake {
            protocol_version: discovered.protocol_version,
            instructions: discovered.instructions.block,
            resources: discovered.resources,
        });
        *slot = Slot::Live(Arc::clone(&connection));
        server.restart_due.store(false, Ordering::Release);
        self.options.observer.event(McpEvent::ServerRestarted { server: name.clone(), restarts, exit_status });
        match purpose {
            Purpose::Tool { raw_tool, .. } => {
                let catalogue = self.catalogue.read().unwrap_or_else(PoisonError::into_inner);
                if !catalogue.offers(server.index, raw_tool) {
                    return Err(McpError::NoLongerOffered { server: name.clone(), tool: raw_tool.to_owned() });
                }
            }
            Purpose::Resources { .. } if !server.resources.load(Ordering::Acquire) => {
                return Err(purpose.unavailable(name, self.resource_servers()));
            }
            Purpose::Resources { .. } => {}
        }
        Ok(connection)
    }

    /// The live connection for a request of `purpose`, within the caller's bounds: at once in
    /// the usual case, else after waiting for another caller's restart or restarting the server
    /// (spec §11) — a deadline or cancellation first fails the request as not dispatched.
    async fn connection_within(
        &self,
        server: &ServerRuntime,
        purpose: Purpose<'_>,
        options: &CallOptions,
    ) -> Result<Arc<Connection>, McpError> {
        if let Some(connection) = self.live_connection(server) {
            return Ok(connection);
        }
        let not_dispatched = |cause| McpError::Request {
            server: server.spec.name.clone(),
            method: purpose.method(),
            failure: RequestFailure::NotDispatched(cause),
        };
        tokio::select! {
            biased;
            () = cancelled(options.cancel.as_ref()) => Err(not_dispatched(Cause::Canceled)),
            connection = until(options.deadline, self.connection_for_call(server, purpose)) => match connection {
                Some(connection) => connection,
                None => Err(not_dispatched(Cause::DeadlineExceeded(DeadlineLimit::Caller))),
            },
        }
    }

    /// \[beyond\] The model-facing block of every live server's `instructions`, in name order
    /// (servers that sent none, or had them withheld, are left out).
    pub fn instructions(&self) -> Vec<ServerInstructions> {
        self.servers
            .iter()
            .filter(|server| server.is_enabled())
            .filter_map(|server| {
                let block = server.instructions.lock().unwrap_or_else(PoisonError::into_inner).clone()?;
                Some(ServerInstructions { server: server.spec.name.clone(), block })
            })
            .collect()
    }

    /// \[beyond\] The live servers whose handshake offered resources, in name order.
    pub fn resource_servers(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter(|server| server.resources.load(Ordering::Acquire) && server.is_enabled())
            .map(|server| server.spec.name.clone())
            .collect()
    }

    /// \[beyond\] One `resources/list` page of `server` (the first without a `cursor`) as the
    /// model reads it (`resources::render_resource_page`), capped at the server's
    /// `max_result_chars`; `tool` names the caller in the truncation notice. Errors are worded
    /// and bounded as a tool call's are.
    pub async fn list_resources(
        &self,
        server: &str,
        cursor: Option<&str>,
        tool: &str,
        options: &CallOptions,
    ) -> Result<ToolOutput, McpError> {
        let runtime = self.resource_server(server)?;
        let params = cursor.map(cursor_params);
        let params = params.as_deref().map_or(Params::Absent, Params::Json);
        let context = result_context(&runtime, tool);
        let frame = self.resource_request(&runtime, LIST_METHOD, params, options).await;
        let output = frame.and_then(|frame| {
            render_resource_page(&runtime.spec.name, tool, frame.result_json(), runtime.spec.limits.max_result_chars)
        });
        output.map_err(|error| bound_error(error, &context))
    }

    /// \[beyond\] Reads the resource `uri` of `server` through the model view
    /// (`resources::decode_read_result`): texts as text, binary contents as metadata lines,
    /// envelopes and artifact refs under the server's roots as for a tool, capped at its
    /// `max_result_chars`. Errors are worded and bounded as a tool call's are.
    pub async fn read_resource(&self, server: &str, uri: &str, options: &CallOptions) -> Result<ToolOutput, McpError> {
        let runtime = self.resource_server(server)?;
        let params = read_params(uri);
        let context = result_context(&runtime, READ_METHOD);
        let frame = self.resource_request(&runtime, READ_METHOD, Params::Json(&params), options).await;
        let output = match frame {
            Ok(frame) => {
                // Artifact refs are stat'ed and hashed: off the async workers.
                let (name, limit, roots) =
                    (runtime.spec.name.clone(), runtime.spec.limits.max_result_chars, runtime.roots.clone());
                let decoded = decode_off_workers(
                    move || {
                        let context =
                            ResultContext { server: &name, tool: READ_METHOD, max_result_chars: limit, roots: &roots };
                        decode_read_result(frame.result_json(), &context)
                    },
                    options,
                )
                .await;
                let server = &runtime.spec.name;
                decoded.unwrap_or_else(|failure| {
                    Err(match failure {
                        Abandoned::Cause(cause) => McpError::Request {
                            server: server.clone(),
                            method: READ_METHOD,
                            failure: RequestFailure::OutcomeUnknown(cause),
                        },
                        Abandoned::Failed(error) => {
                            McpError::ResponseParse { server: server.clone(), method: READ_METHOD, error }
                        }
                    })
                })
            }
            Err(error) => Err(error),
        };
        output.map_err(|error| bound_error(error, &context))
    }

    /// The live server `name`, when its handshake offered resources.
    fn resource_server(&self, name: &str) -> Result<Arc<ServerRuntime>, McpError> {
        self.servers
            .iter()
            .find(|server| server.spec.name == name && server.resources.load(Ordering::Acquire) && server.is_enabled())
            .cloned()
            .ok_or_else(|| McpError::NoResources { server: name.to_owned(), offering: self.resource_servers() })
    }

    /// One resource request on `server`'s connection (restarted first when it crashed), with
    /// a JSON-RPC error message capped like a tool's.
    async fn resource_request(
        &self,
        server: &ServerRuntime,
        method: &'static str,
        params: Params<'_>,
        options: &CallOptions,
    ) -> Result<ResultFrame, McpError> {
        let connection = self.connection_within(server, Purpose::Resources { method }, options).await?;
        connection
            .request(method, params, options)
            .await
            .map_err(|failure| request_error(server, method, method, failure))
    }

    /// Re-lists every server whose list was announced as changed (spec §12); call before each
    /// model turn. A failed re-list disables the server with a warning.
    pub async fn refresh_stale(&self) {
        for server in &self.servers {
            if !server.stale.swap(false, Ordering::AcqRel) {
                continue;
            }
            let mut slot = server.slot.lock().await;
            let Slot::Live(connection) = &*slot else { continue };
            let connection = Arc::clone(connection);
            if connection.is_dead() {
                // The restart before the next call re-lists anyway.
                continue;
            }
            let relisted = match list_tools(&connection).await {
                Ok(tools) => self.register(server, tools, true).await.map(|_| ()),
                Err(error) => Err(error),
            };
            if let Err(error) = relisted {
                *slot = Slot::Disabled;
                self.catalogue.write().unwrap_or_else(PoisonError::into_inner).remove_server(server.index);
                drop(slot);
                connection.shutdown().await;
                let name = server.spec.name.clone();
                let warning = McpError::RefreshFailed { server: name.clone(), source: Box::new(error) };
                self.options.observer.warning(&name, &warning.to_string());
            }
        }
    }

    /// True when some server announced a tool-list change not yet re-listed.
    pub fn has_stale(&self) -> bool {
        self.servers.iter().any(|server| server.stale.load(Ordering::Acquire))
    }

    /// \[beyond\] [`McpHub::shutdown`] bounded by `drain`: when it expires, every server still
    /// running has its process group killed at once (whatever it started with it). `false`
    /// when the drain expired.
    pub async fn shutdown_within(&self, drain: Duration) -> bool {
        if tokio::time::timeout(drain, self.shutdown()).await.is_ok() {
            return true;
        }
        for server in &self.servers {
            // A slot held by a restart belongs to a call that was abandoned with the run; the
            // dropped connection of that restart closes itself.
            if let Ok(slot) = server.slot.try_lock()
                && let Slot::Live(connection) = &*slot
            {
                connection.kill_group();
            }
        }
        false
    }

    /// Closes every server concurrently (spec §13). Idempotent; later calls fail without
    /// starting anything.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::Release);
        let mut closing = Vec::with_capacity(self.servers.len());
        for server in &self.servers {
            let slot = server.slot.lock().await;
            if let Slot::Live(connection) = &*slot {
                let connection = Arc::clone(connection);
                closing.push(tokio::spawn(async move { connection.shutdown().await }));
            }
        }
        for task in closing {
            let _ = task.await;
        }
    }
}

/// [beyond] Reports a `required: false` server that could not be started and is left out of the
/// run: `mcp_server_failed` with `error_class` (when it failed; `None` when the operator declined
/// it, which is a decision, not a failure), then one redacted, single-line warning
/// `mcp server "<name>": <error>; continuing without it (required: false)`.
pub fn report_optional_failure(
    observer: &dyn McpObserver,
    server: &str,
    error: &dyn std::fmt::Display,
    error_class: Option<&'static str>,
) {
    if let Some(error_class) = error_class {
        observer.event(McpEvent::ServerFailed { server: server.to_owned(), error_class });
    }
    observer.warning(server, &odek_contract::redaction::redact(&optional_failure_warning(server, error)));
}

/// The warning text of [`report_optional_failure`]. Line breaks in the error (some carry a hint
/// on a second line, a server's text may carry its own) become `; `, so the warning stays one
/// line that a server cannot use to forge another.
pub fn optional_failure_warning(server: &str, error: &dyn std::fmt::Display) -> String {
    let prefix = format!("mcp server {}: ", quote(server));
    let text = error.to_string();
    let text = text.strip_prefix(&prefix).unwrap_or(&text);
    let one_line = text.split(['\r', '\n']).filter(|part| !part.is_empty()).collect::<Vec<_>>().join("; ");
    format!("{prefix}{one_line}; continuing without it (required: false)")
}

/// Whether a listed tool is the one already known: same raw name, description and schema.
fn same_tool(known: &ToolDescriptor, listed: &ToolDescriptor) -> bool {
    known.raw_name == listed.raw_name
        && known.raw_description == listed.raw_description
        && known.input_schema == listed.input_schema
}

fn result_context<'a>(server: &'a ServerRuntime, raw_tool: &'a str) -> ResultContext<'a> {
    ResultContext {
        server: &server.spec.name,
        tool: raw_tool,
        max_result_chars: server.spec.limits.max_result_chars,
        roots: &server.roots,
    }
}

/// The last word on any error text bound for the model: sanitised (forged metadata lines
/// indented) and capped at the server's `max_result_chars`, whichever part of it the server
/// supplied. An error already within bounds keeps its exact spec wording.
fn bound_error(error: McpError, context: &ResultContext<'_>) -> McpError {
    let text = error.to_string();
    let bounded = match &error {
        // Already the sanitised error view, whose metadata lines are odek's own (indenting them
        // again would disown them); the prefix before it is validated names only.
        McpError::ToolReturnedError { .. } => {
            apply_result_limit(&text, context.server, context.tool, context.max_result_chars)
        }
        _ => cap_error_text(&text, context),
    };
    if bounded.text == text {
        return error;
    }
    McpError::Bounded { class: error.error_class(), text: bounded.text }
}

fn as_check(schema: Option<&OutputSchema>) -> Option<&dyn OutputCheck> {
    schema.map(|schema| schema as &dyn OutputCheck)
}

/// A failed request of `server`; a JSON-RPC error's message (the server's text) is sanitised
/// and capped as a result of `tool` would be.
fn request_error(server: &ServerRuntime, method: &'static str, tool: &str, failure: RequestFailure) -> McpError {
    let failure = match failure {
        RequestFailure::Rpc { code, message } => {
            RequestFailure::Rpc { code, message: cap_error_text(&message, &result_context(server, tool)).text }
        }
        other => with_auth_hint(server, other),
    };
    McpError::Request { server: server.spec.name.clone(), method, failure }
}

/// Why [`decode_off_workers`] gave no decoded result.
enum Abandoned {
    /// The caller's cancellation or deadline came first.
    Cause(Cause),
    /// The decoding task failed (`decoding the result failed: <why>`).
    Failed(String),
}

/// Runs `decode` on a blocking thread, never past the caller's cancellation and deadline (an
/// abandoned decode finishes alone; its work is bounded).
async fn decode_off_workers<T: Send + 'static>(
    decode: impl FnOnce() -> T + Send + 'static,
    options: &CallOptions,
) -> Result<T, Abandoned> {
    let decoding = tokio::task::spawn_blocking(decode);
    tokio::select! {
        biased;
        () = cancelled(options.cancel.as_ref()) => Err(Abandoned::Cause(Cause::Canceled)),
        decoded = until(options.deadline, decoding) => match decoded {
            None => Err(Abandoned::Cause(Cause::DeadlineExceeded(DeadlineLimit::Caller))),
            Some(Ok(decoded)) => Ok(decoded),
            Some(Err(join)) => Err(Abandoned::Failed(format!("decoding the result failed: {join}"))),
        },
    }
}

/// Runs `future` until the deadline, if any; `None` when the deadline came first.
async fn until<F: std::future::Future>(deadline: Option<tokio::time::Instant>, future: F) -> Option<F::Output> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, future).await.ok(),
        None => Some(future.await),
    }
}

/// Redacts warnings before they reach the embedder's observer.
struct RedactingObserver(Arc<dyn McpObserver>);

impl McpObserver for RedactingObserver {
    fn event(&self, event: McpEvent) {
        self.0.event(event);
    }

    fn warning(&self, server: &str, text: &str) {
        self.0.warning(server, &odek_contract::redaction::redact(text));
    }

    fn server_line(&self, server: &str, line: &str) {
        // Already cleaned and redacted by the connection.
        self.0.server_line(server, line);
    }

    fn activity(&self, server: &str) {
        self.0.activity(server);
    }

    fn shows_progress(&self) -> bool {
        self.0.shows_progress()
    }
}

/// \[beyond\] A server's `instructions` as the model may see them (`instructions.rs`): a
/// preamble naming the server, then its text, cut at [`crate::MAX_INSTRUCTIONS_BYTES`], inside
/// the untrusted wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInstructions {
    pub server: String,
    /// The model-facing block, ready to be put into the system prompt.
    pub block: String,
}

/// What a request needs a server's connection for: what a failure names, and what must still
/// hold after a restart.
#[derive(Clone, Copy)]
enum Purpose<'a> {
    /// `tools/call` of a listed tool (still offered after a restart).
    Tool { raw_tool: &'a str, exposed: &'a str },
    /// A resource request (the server still offers resources after a restart).
    Resources { method: &'static str },
}

impl Purpose<'_> {
    fn method(self) -> &'static str {
        match self {
            Purpose::Tool { .. } => "tools/call",
            Purpose::Resources { method } => method,
        }
    }

    /// The error for a server that was disabled (or no longer offers what is asked).
    fn unavailable(self, server: &str, offering: Vec<String>) -> McpError {
        match self {
            Purpose::Tool { exposed, .. } => McpError::ToolNotFound { exposed: exposed.to_owned() },
            Purpose::Resources { .. } => McpError::NoResources { server: server.to_owned(), offering },
        }
    }
}

/// What a server's handshake told that outlives it: shown by `servers`, put into the system
/// prompt, deciding the resource tools.
struct Handshake {
    protocol_version: String,
    instructions: Option<String>,
    resources: bool,
}

impl ServerRuntime {
    /// Keeps what the latest handshake said (at start and after each restart).
    fn keep_handshake(&self, handshake: Handshake) {
        *self.protocol_version.lock().unwrap_or_else(PoisonError::into_inner) = handshake.protocol_version;
        *self.instructions.lock().unwrap_or_else(PoisonError::into_inner) = handshake.instructions;
        self.resources.store(handshake.resources, Ordering::Release);
    }

    /// Whether the server is live now (not disabled; a slot held by a restart counts as live).
    fn is_enabled(&self) -> bool {
        !self.slot.try_lock().is_ok_and(|slot| matches!(*slot, Slot::Disabled))
    }
}

/// A server's list after the checks that need no other server (exclusions, name rules, the
/// registration checks of §4 with their warnings held back), ready to register in order.
struct Prepared {
    names: Result<(), McpError>,
    raw_names: Vec<String>,
    candidates: Vec<ToolDescriptor>,
    warnings: Vec<String>,
}

fn prepare(spec: &ServerSpec, mut tools: Vec<ListedTool>) -> Prepared {
    tools.retain(|tool| !spec.exclude_tools.contains(&tool.name));
    let names = check_tool_names(&spec.name, &tools);
    let raw_names = tools.iter().map(|tool| tool.name.clone()).collect();
    let (candidates, warnings) =
        if names.is_ok() { registration_checks_quiet(&spec.name, tools) } else { (Vec::new(), Vec::new()) };
    Prepared { names, raw_names, candidates, warnings }
}

/// Spawns the server and runs the handshake within its start-up deadline (the entry's, else
/// the hub's): a server that has not answered `initialize` and every `tools/list` page by then
/// is closed and fails with [`McpError::StartupTimeout`].
async fn connect(server: &ServerRuntime, options: &HubOptions) -> Result<(Arc<Connection>, Discovered), McpError> {
    let limit = server.spec.limits.startup_timeout.unwrap_or(options.startup_timeout);
    let deadline = tokio::time::Instant::now() + limit;
    let connection = spawn(server, options)?;
    let handshake = handshake(
        &connection,
        &options.client_version,
        server.spec.protocol,
        &server.stale,
        &options.observer,
        deadline,
    );
    let error = match tokio::time::timeout_at(deadline, handshake).await {
        Ok(Ok(discovered)) => return Ok((connection, discovered)),
        // A handshake request whose own timeout fired at the same moment is the same stall.
        Ok(Err(error)) if !(tokio::time::Instant::now() >= deadline && is_deadline_failure(&error)) => {
            let error = explain_startup_failure(server, &connection, error, deadline).await;
            // A server whose pipes closed is normally exiting: its exit is awaited (briefly)
            // before odek's shutdown could be taken for its cause.
            let exit =
                if closed_connection(&error) { connection.exit_within(EXIT_AT_START_UP_GRACE).await } else { None };
            connection.shutdown().await;
            options.sandbox.hint_startup_failure(&server.spec, options.observer.as_ref());
            return Err(exited_at_startup(&connection, error, exit));
        }
        Ok(Err(_)) | Err(_) => McpError::StartupTimeout { server: server.spec.name.clone(), limit },
    };
    // A server that stalled its start-up is owed no grace period.
    connection.kill().await;
    options.sandbox.hint_startup_failure(&server.spec, options.observer.as_ref());
    Err(error)
}

/// Longest wait for the probe that tells an HTTP+SSE endpoint from a Streamable HTTP one.
const LEGACY_PROBE_LIMIT: Duration = Duration::from_secs(5);

/// \[beyond\] A failed start-up request with what to do about it: a 401 says whether a token
/// was sent ([`with_auth_hint`]); an `initialize` that a Streamable HTTP entry's url refused
/// (400, 404, 405) while it serves an event stream to a GET is an HTTP+SSE endpoint, and the
/// error names the `type` to set. Call while the connection is open (the probe uses it).
async fn explain_startup_failure(
    server: &ServerRuntime,
    connection: &Connection,
    error: McpError,
    deadline: tokio::time::Instant,
) -> McpError {
    let McpError::Request { server: name, method, failure } = error else { return error };
    let refused = matches!(failure.unhinted(), RequestFailure::Http(HttpFailure::Status { code: 400 | 404 | 405, .. }));
    let limit = deadline.saturating_duration_since(tokio::time::Instant::now()).min(LEGACY_PROBE_LIMIT);
    let failure = if method == "initialize" && refused && connection.serves_legacy_sse(limit).await {
        RequestFailure::Hinted {
            failure: Box::new(failure),
            hint: "the url serves the deprecated HTTP+SSE transport (a GET opens its event stream): set \"type\": \"sse\" in the server's entry".to_owned(),
        }
    } else {
        with_auth_hint(server, failure)
    };
    McpError::Request { server: name, method, failure }
}

/// \[beyond\] A 401 from a remote server says whether a bearer token was sent and where one
/// comes from (`token_env`, `headers`); other failures are returned as they are.
fn with_auth_hint(server: &ServerRuntime, failure: RequestFailure) -> RequestFailure {
    let Transport::Http { endpoint, token_env, .. } = &server.spec.transport else { return failure };
    if !matches!(failure.unhinted(), RequestFailure::Http(HttpFailure::Status { code: 401, .. })) {
        return failure;
    }
    let headers: Vec<&str> = endpoint.headers.iter().map(|(name, _)| name.as_str()).collect();
    let hint = if server.token.is_some() {
        format!("a bearer token was sent (from token_env {token_env}) and refused")
    } else if headers.iter().any(|name| name.eq_ignore_ascii_case("authorization")) {
        "a token was sent (the Authorization header of \"headers\") and refused".to_owned()
    } else if !token_env.is_empty() {
        format!("no token was sent: token_env {token_env} names a variable that is unset or empty")
    } else if !headers.is_empty() {
        format!(
            "no bearer token was sent, only the headers {}; set \"token_env\" to the variable holding a token, or check \"headers\"",
            headers.join(", ")
        )
    } else {
        "no token was sent: set \"token_env\" to the variable holding a bearer token, or give the header the server expects in \"headers\"".to_owned()
    };
    RequestFailure::Hinted { failure: Box::new(failure), hint }
}

/// \[beyond\] A start-up request that failed because the server process went away (its own
/// exit, not odek's) is reported with the exit status and the last line the server wrote on
/// stderr — which say why — instead of the transport's wording. `exit` is how it ended when it
/// ended before odek's shutdown; call after that shutdown, which waits for the last of stderr.
fn exited_at_startup(connection: &Connection, error: McpError, exit: Option<ExitInfo>) -> McpError {
    let McpError::Request { server, method, .. } = &error else { return error };
    match exit {
        Some(exit) if !exit.caused_by_odek => McpError::ExitedAtStartup {
            server: server.clone(),
            method,
            status: exit.status,
            last_stderr: connection.last_stderr_line(),
        },
        _ => error,
    }
}

/// How long a server whose pipes closed during start-up is given to exit on its own (1 s).
const EXIT_AT_START_UP_GRACE: Duration = Duration::from_secs(1);

/// Whether a start-up request failed because the connection closed under it (the server went
/// away, or closed its end).
fn closed_connection(error: &McpError) -> bool {
    matches!(
        error,
        McpError::Request {
            failure: RequestFailure::NotDispatched(Cause::ClosedBeforeDispatch | Cause::Write(_))
                | RequestFailure::OutcomeUnknown(Cause::ClosedBeforeResponse),
            ..
        }
    )
}

fn is_deadline_failure(error: &McpError) -> bool {
    matches!(
        error,
        McpError::Request {
            failure: RequestFailure::NotDispatched(Cause::DeadlineExceeded(_))
                | RequestFailure::OutcomeUnknown(Cause::DeadlineExceeded(_)),
            ..
        }
    )
}

fn spawn(server: &ServerRuntime, options: &HubOptions) -> Result<Arc<Connection>, McpError> {
    let connection = open_connection(server, options)?;
    connection.answer_elicitations(options.elicitation.clone());
    Ok(connection)
}

fn open_connection(server: &ServerRuntime, options: &HubOptions) -> Result<Arc<Connection>, McpError> {
    let (command, args) = match &server.spec.transport {
        Transport::Stdio { command, args, .. } => (command, args),
        Transport::Http { endpoint, legacy_sse, .. } => {
            return Connection::connect_http(HttpParams {
                server: &server.spec.name,
                endpoint,
                token: server.token.as_ref(),
                max_response_bytes: server.spec.limits.max_response_bytes,
                timeout: server.spec.limits.timeout,
                stale: Arc::clone(&server.stale),
                observer: Arc::clone(&options.observer),
                legacy_sse: *legacy_sse,
                authorizer: server
                    .authorizer
                    .clone()
                    .map_err(|error| McpError::Config(format!("mcpclient {}: {error}", server.spec.name)))?,
            });
        }
    };
    let sandbox = options
        .sandbox
        .for_server(&server.spec, server.runner.as_ref())
        .map_err(|error| McpError::Spawn { server: server.spec.name.clone(), error })?;
    Connection::spawn(SpawnParams {
        sandbox,
        server: &server.spec.name,
        command,
        args,
        env: &server.env,
        max_response_bytes: server.spec.limits.max_response_bytes,
        timeout: server.spec.limits.timeout,
        stale: Arc::clone(&server.stale),
        observer: Arc::clone(&options.observer),
        cwd: server.spec.cwd.as_deref(),
    })
}

/// The bearer token `token_env` names, from odek's environment (spec §14, `remote::bearer_token`);
/// an unset or empty variable is a warning and the requests go unauthenticated.
fn http_token(spec: &ServerSpec, options: &HubOptions) -> Option<SecretValue> {
    let Transport::Http { token_env, .. } = &spec.transport else { return None };
    let (token, warning) = crate::remote::bearer_token(&spec.name, token_env, options.parent_env.iter().cloned());
    if let Some(warning) = warning {
        options.observer.warning(&spec.name, &warning);
    }
    token
}
