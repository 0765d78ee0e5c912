//! The MCP hub: every configured server of a run, started in name order, its tools in one
//! catalogue, and the call pipeline the agent (and `odek ext call`) uses. It owns the lifecycle
//! rules of spec `mcp-client.md`: startup with no partial tool set (§1), per-tool approval, crash
//! restarts (§11), stale-list refresh (§12) and shutdown of every server on every path (§13).
//!
//! Start at [`McpHub::start`] and [`McpHub::call`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use odek_contract::artifact_ref::ArtifactRoots;
use odek_contract::names::ExposedName;
use odek_contract::quoting::quote;
use odek_contract::tool_result::{ResultContext, ToolOutput, cap_error_text};

use crate::approval::{ToolApproval, ToolApprovalRequest, ToolApprover};
use crate::call::{call_params, decode_call_result, encode_arguments};
use crate::catalogue::Catalogue;
use crate::connection::{CallOptions, Connection, SpawnParams};
use crate::discovery::{
    Discovered, ListedTool, ToolDescriptor, check_tool_names, handshake, list_tools, registration_checks,
};
use crate::env_allowlist::build_server_env;
use crate::error::{Cause, McpError, RequestFailure};
use crate::observer::{McpEvent, McpObserver};
use crate::server_config::{Limits, ServerSpec, Transport};

/// Restarts allowed per server per run.
pub const MAX_RESTARTS: u32 = 3;

/// What the hub needs from its embedder.
#[derive(Clone)]
pub struct HubOptions {
    pub observer: Arc<dyn McpObserver>,
    pub approver: Arc<dyn ToolApprover>,
    /// Sent as `clientInfo.version`.
    pub client_version: String,
    /// The parent environment the allowlist picks from.
    pub parent_env: Vec<(String, String)>,
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
    stale: Arc<AtomicBool>,
    /// Serialises restarts and re-listing of this server. Held across the awaits of a restart on
    /// purpose: concurrent callers must wait for the one restart rather than start their own.
    slot: tokio::sync::Mutex<Slot>,
    restarts: AtomicU32,
    protocol_version: Mutex<String>,
}

/// The running MCP servers of one run and their tool catalogue.
pub struct McpHub {
    servers: Vec<Arc<ServerRuntime>>,
    catalogue: RwLock<Catalogue>,
    options: HubOptions,
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
    /// failure closes every server and fails with `mcp server "<name>": <error>`.
    pub async fn start(specs: Vec<ServerSpec>, options: HubOptions) -> Result<McpHub, McpError> {
        let (hub, mut failures) = Self::start_inner(specs, options, StartMode::FailFast).await;
        match failures.pop() {
            None => Ok(hub),
            Some((_, error)) => {
                hub.shutdown().await;
                Err(error)
            }
        }
    }

    /// Starts every server independently and reports each failure instead of stopping; the hub
    /// holds the servers that started. For diagnostics (`odek ext list`), never for a run.
    pub async fn start_report(specs: Vec<ServerSpec>, options: HubOptions) -> (McpHub, Vec<(String, McpError)>) {
        Self::start_inner(specs, options, StartMode::KeepGoing).await
    }

    async fn start_inner(
        mut specs: Vec<ServerSpec>,
        options: HubOptions,
        mode: StartMode,
    ) -> (McpHub, Vec<(String, McpError)>) {
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let mut servers = Vec::with_capacity(specs.len());
        for (index, spec) in specs.into_iter().enumerate() {
            let env = match &spec.transport {
                Transport::Stdio { env, .. } => {
                    let (env, warnings) = build_server_env(&spec.name, env, options.parent_env.iter().cloned());
                    for warning in warnings {
                        options.observer.warning(&spec.name, &warning);
                    }
                    env
                }
                Transport::Http { .. } => BTreeMap::new(),
            };
            servers.push(Arc::new(ServerRuntime {
                roots: ArtifactRoots::new(&spec.artifact_roots),
                index,
                env,
                stale: Arc::new(AtomicBool::new(false)),
                slot: tokio::sync::Mutex::new(Slot::Disabled),
                restarts: AtomicU32::new(0),
                protocol_version: Mutex::new(String::new()),
                spec,
            }));
        }
        let hub = McpHub {
            catalogue: RwLock::new(Catalogue::new(servers.iter().map(|s| s.spec.name.clone()).collect())),
            servers,
            options,
        };

        // Connect and list concurrently; register strictly in name order.
        let mut connecting = Vec::with_capacity(hub.servers.len());
        for server in &hub.servers {
            let server = Arc::clone(server);
            let options = hub.options.clone();
            let started = Instant::now();
            connecting.push((started, tokio::spawn(async move { connect(&server, &options).await })));
        }
        let mut failures = Vec::new();
        let mut connected = Vec::with_capacity(connecting.len());
        for (started, task) in connecting {
            let outcome = match task.await {
                Ok(outcome) => outcome,
                Err(join) => Err(McpError::Spawn { server: String::new(), error: join.to_string() }),
            };
            connected.push((started, outcome));
        }
        for (server, (started, outcome)) in hub.servers.iter().zip(connected) {
            if mode == StartMode::FailFast && !failures.is_empty() {
                if let Ok((connection, _)) = outcome {
                    connection.shutdown().await;
                }
                continue;
            }
            let result = match outcome {
                Ok((connection, discovered)) => hub.register_started(server, connection, discovered, started).await,
                Err(error) => Err(error),
            };
            if let Err(error) = result {
                hub.options.observer.event(McpEvent::ServerFailed {
                    server: server.spec.name.clone(),
                    error_class: error.error_class(),
                });
                failures.push((server.spec.name.clone(), McpError::at_startup(&server.spec.name, error)));
            }
        }
        (hub, failures)
    }

    async fn register_started(
        &self,
        server: &ServerRuntime,
        connection: Arc<Connection>,
        discovered: Discovered,
        started: Instant,
    ) -> Result<(), McpError> {
        let count = match self.register(server, discovered.tools, false).await {
            Ok(count) => count,
            Err(error) => {
                connection.shutdown().await;
                return Err(error);
            }
        };
        *server.protocol_version.lock().unwrap_or_else(PoisonError::into_inner) = discovered.protocol_version.clone();
        *server.slot.lock().await = Slot::Live(connection);
        self.options.observer.event(McpEvent::ServerStarted {
            server: server.spec.name.clone(),
            tools: count,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            protocol_version: discovered.protocol_version,
        });
        Ok(())
    }

    /// Name rules, registration checks, collisions and approvals for one server's list, then the
    /// catalogue swap. On a re-list, tools identical to registered ones are kept without asking
    /// again and unapproved new or changed tools are left out with a warning.
    async fn register(&self, server: &ServerRuntime, tools: Vec<ListedTool>, relist: bool) -> Result<usize, McpError> {
        let name = &server.spec.name;
        check_tool_names(name, &tools)?;
        let candidates = registration_checks(name, tools, self.options.observer.as_ref());
        let previous = {
            let catalogue = self.catalogue.read().unwrap_or_else(PoisonError::into_inner);
            catalogue.check_collisions(server.index, &candidates)?;
            catalogue.tools_of(server.index).to_vec()
        };
        let mut approved = Vec::with_capacity(candidates.len());
        for tool in candidates {
            let unchanged = previous.iter().any(|known| {
                known.raw_name == tool.raw_name
                    && known.raw_description == tool.raw_description
                    && known.input_schema == tool.input_schema
            });
            if relist && unchanged {
                approved.push(tool);
                continue;
            }
            let request = ToolApprovalRequest {
                server: name.clone(),
                tool: tool.raw_name.clone(),
                description: tool.raw_description.clone(),
                input_schema: tool.input_schema.clone(),
                relist,
            };
            let approver = Arc::clone(&self.options.approver);
            let answer = tokio::task::spawn_blocking(move || approver.approve_tool(&request))
                .await
                .unwrap_or_else(|join| ToolApproval::Required(format!("approval prompt failed: {join}")));
            match (answer, relist) {
                (ToolApproval::Approved, _) => approved.push(tool),
                (ToolApproval::Declined, false) => {}
                (ToolApproval::Required(message), false) => return Err(McpError::ApprovalRequired(message)),
                (ToolApproval::Declined | ToolApproval::Required(_), true) => self.options.observer.warning(
                    name,
                    &format!(
                        "mcp server {}: tool {} changed or is new and is not approved; not registered",
                        quote(name),
                        quote(&tool.raw_name)
                    ),
                ),
            }
        }
        let count = approved.len();
        self.catalogue.write().unwrap_or_else(PoisonError::into_inner).replace(server.index, approved)?;
        Ok(count)
    }

    /// The current catalogue, in order: server name, then each server's list order.
    pub fn tools(&self) -> Vec<ToolDescriptor> {
        self.catalogue.read().unwrap_or_else(PoisonError::into_inner).all()
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
                disabled: server.slot.try_lock().is_ok_and(|slot| matches!(*slot, Slot::Disabled)),
            })
            .collect()
    }

    /// Calls one tool by exposed name with the model's raw argument string and returns the text
    /// the contract produces (before the loop's untrusted wrapper).
    pub async fn call(&self, exposed: &str, arguments: &str, options: &CallOptions) -> Result<ToolOutput, McpError> {
        let (server, raw_tool) = {
            let catalogue = self.catalogue.read().unwrap_or_else(PoisonError::into_inner);
            let (server, tool) =
                catalogue.find(exposed).ok_or_else(|| McpError::ToolNotFound { exposed: exposed.to_owned() })?;
            (Arc::clone(&self.servers[server]), tool.raw_name.clone())
        };
        let connection = self.connection_for_call(&server, &raw_tool, exposed).await?;
        let encoded = encode_arguments(arguments);
        let context = ResultContext {
            server: &server.spec.name,
            tool: &raw_tool,
            max_result_chars: server.spec.limits.max_result_chars,
            roots: &server.roots,
        };
        let frame = connection
            .request("tools/call", |id| Some(call_params(&raw_tool, &encoded, id)), options)
            .await
            .map_err(|failure| {
                let failure = match failure {
                    RequestFailure::Rpc { code, message } => {
                        RequestFailure::Rpc { code, message: cap_error_text(&message, &context).text }
                    }
                    RequestFailure::ResponseTooLarge { .. } => {
                        // Close for good, off the caller's path: the failure must not wait on it.
                        let closing = Arc::clone(&connection);
                        tokio::spawn(async move { closing.shutdown().await });
                        failure
                    }
                    other => other,
                };
                McpError::Request { server: server.spec.name.clone(), method: "tools/call", failure }
            })?;
        decode_call_result(frame.result_json(), &context)
    }

    /// The live connection for a call, restarting a crashed server first (spec §11).
    async fn connection_for_call(
        &self,
        server: &ServerRuntime,
        raw_tool: &str,
        exposed: &str,
    ) -> Result<Arc<Connection>, McpError> {
        let name = &server.spec.name;
        let mut slot = server.slot.lock().await;
        let current = match &*slot {
            Slot::Live(connection) => Arc::clone(connection),
            Slot::Disabled => return Err(McpError::ToolNotFound { exposed: exposed.to_owned() }),
        };
        if !current.is_dead() {
            return Ok(current);
        }
        if current.closed_by_oversize() {
            return Err(McpError::Request {
                server: name.clone(),
                method: "tools/call",
                failure: RequestFailure::NotDispatched(Cause::ClosedAfterOversize),
            });
        }
        if !current.restartable() {
            // A sticky write failure on a live process: the request fails with it.
            return Ok(current);
        }
        if server.restarts.load(Ordering::Acquire) >= MAX_RESTARTS {
            return Err(McpError::Request {
                server: name.clone(),
                method: "tools/call",
                failure: RequestFailure::NotDispatched(Cause::RestartLimitExhausted),
            });
        }
        let restarts = server.restarts.fetch_add(1, Ordering::AcqRel) + 1;
        // Reap the old process first: its stdout may reach EOF before its exit is observed.
        current.shutdown().await;
        let exit_status = current.exit_info().map_or(-1, |exit| exit.status);

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
        *server.protocol_version.lock().unwrap_or_else(PoisonError::into_inner) = discovered.protocol_version;
        *slot = Slot::Live(Arc::clone(&connection));
        self.options.observer.event(McpEvent::ServerRestarted {
            server: name.clone(),
            restarts,
            exit_status: Some(exit_status),
        });
        let offered = self.catalogue.read().unwrap_or_else(PoisonError::into_inner).offers(server.index, raw_tool);
        if !offered {
            return Err(McpError::NoLongerOffered { server: name.clone(), tool: raw_tool.to_owned() });
        }
        Ok(connection)
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

    /// Closes every server concurrently (spec §13). Idempotent.
    pub async fn shutdown(&self) {
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

/// Spawns the server and runs the handshake; a failed handshake closes the process.
async fn connect(server: &ServerRuntime, options: &HubOptions) -> Result<(Arc<Connection>, Discovered), McpError> {
    let (command, args) = match &server.spec.transport {
        Transport::Stdio { command, args, .. } => (command, args),
        Transport::Http { .. } => {
            return Err(McpError::Unsupported {
                server: server.spec.name.clone(),
                detail: "the Streamable HTTP transport (url) is not available in this build; use command".into(),
            });
        }
    };
    let connection = Connection::spawn(SpawnParams {
        server: &server.spec.name,
        command,
        args,
        env: &server.env,
        max_response_bytes: server.spec.limits.max_response_bytes,
        timeout: server.spec.limits.timeout,
        stale: Arc::clone(&server.stale),
        observer: Arc::clone(&options.observer),
    })?;
    match handshake(&connection, &options.client_version, &server.stale, &options.observer).await {
        Ok(discovered) => Ok((connection, discovered)),
        Err(error) => {
            connection.shutdown().await;
            Err(error)
        }
    }
}
