//! One path for every incoming message, whatever carried it: a stdio line or a member of an
//! HTTP body goes through [`handle_message`], which answers the built-in methods, runs requests
//! in tasks, routes the client's replies to waiting handlers and applies cancellations.
//!
//! What a connection shares ([`Shared`]) is built from the server's [`Blueprint`] once per
//! connection: once for stdio, once per session for HTTP. Where answers go is the caller's
//! [`Route`]: the one stdout writer, or the stream of the HTTP POST that carried the messages.
//! Not here: reading lines or HTTP bodies (`server`, `http`), and framing (`jsonrpc`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};

use crate::builtins::{Reply, Request, answer_inline, runs_in_task};
use crate::connection::{Connection, Identity};
use crate::context::{CallContext, Cancellation, ToolList, ToolSet};
use crate::jsonrpc::{self, Message, RequestId, RpcError, codes};
use crate::offerings::Offerings;
use crate::server::CancelPolicy;
use crate::tools::BoxFuture;
use crate::transport::Outgoing;

pub(crate) type Interceptor = Arc<dyn Fn(Arc<CallContext>, Request) -> BoxFuture<Reply> + Send + Sync>;

pub(crate) type NotificationHook = Arc<dyn Fn(&str, Option<&Value>) -> Option<Value> + Send + Sync>;

/// What every connection of one server starts from: its identity, policies, the initial tools,
/// the other offerings and the hooks. Each connection gets its own copy of the tool list; the
/// offerings never change, so all share them.
#[derive(Clone)]
pub(crate) struct Blueprint {
    pub(crate) identity: Identity,
    pub(crate) cancel_policy: CancelPolicy,
    pub(crate) max_in_flight: usize,
    pub(crate) tools: ToolSet,
    pub(crate) offerings: Arc<Offerings>,
    pub(crate) interceptor: Option<Interceptor>,
    pub(crate) notification_hook: Option<NotificationHook>,
}

impl Blueprint {
    /// A new connection whose messages unrelated to any request go to `outgoing`.
    pub(crate) fn connect(&self, outgoing: mpsc::Sender<Outgoing>, runtime: Handle) -> Arc<Shared> {
        Arc::new(Shared {
            connection: Arc::new(Connection::new(self.identity.clone(), outgoing)),
            tools: Arc::new(ToolList::new(self.tools.clone())),
            offerings: Arc::clone(&self.offerings),
            cancel_policy: self.cancel_policy,
            interceptor: self.interceptor.clone(),
            notification_hook: self.notification_hook.clone(),
            in_flight: Mutex::new(HashMap::new()),
            in_flight_count: AtomicUsize::new(0),
            in_flight_permits: Arc::new(Semaphore::new(self.max_in_flight)),
            idle: Notify::new(),
            runtime,
        })
    }
}

/// Where the answers to a group of incoming messages go, and everything the handlers of its
/// requests send: on stdio the one writer, over HTTP the POST's own stream.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) outgoing: mpsc::Sender<Outgoing>,
    /// Whether a request that ends without a reply, and sent nothing, keeps the route open
    /// until it is cancelled. Over HTTP this keeps its stream open, so the client goes on
    /// waiting exactly as a stdio client does, and its deadline and cancellation still apply.
    pub(crate) hold_unanswered: bool,
}

impl Route {
    async fn send_reply(&self, line: Vec<u8>) {
        let _ = self.outgoing.send(Outgoing::Reply(line)).await;
    }
}

/// What the request tasks and the transport of one connection share beyond the
/// [`Connection`]: the tool list, the offerings, the interceptor and notification hook, and the
/// requests in flight.
pub(crate) struct Shared {
    pub(crate) connection: Arc<Connection>,
    tools: Arc<ToolList>,
    offerings: Arc<Offerings>,
    cancel_policy: CancelPolicy,
    interceptor: Option<Interceptor>,
    notification_hook: Option<NotificationHook>,
    in_flight: Mutex<HashMap<RequestId, Arc<Cancellation>>>,
    in_flight_count: AtomicUsize,
    /// Bounds concurrent requests; see [`Server::max_in_flight`](crate::Server::max_in_flight).
    in_flight_permits: Arc<Semaphore>,
    idle: Notify,
    pub(crate) runtime: Handle,
}

impl Shared {
    /// Waits at most `grace` until no request is in flight.
    pub(crate) async fn wait_idle(&self, grace: Duration) {
        let _ = tokio::time::timeout(grace, async {
            loop {
                let idle = self.idle.notified();
                tokio::pin!(idle);
                idle.as_mut().enable();
                if self.in_flight_count.load(Ordering::Acquire) == 0 {
                    return;
                }
                idle.await;
            }
        })
        .await;
    }

    /// Whether any request is running (or held open without a reply).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn is_busy(&self) -> bool {
        self.in_flight_count.load(Ordering::Acquire) > 0
    }

    /// Ends the connection for good: no new request starts, every running one is cancelled
    /// with `reason`, and waiters for client replies fail.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn close(&self, reason: &str) {
        self.in_flight_permits.close();
        let running: Vec<_> =
            self.in_flight.lock().unwrap_or_else(PoisonError::into_inner).values().map(Arc::clone).collect();
        for cancellation in running {
            cancellation.cancel(Some(reason));
        }
        self.connection.close_pending();
    }
}

/// Handles one incoming message (`Err`: it was not JSON). Answers and handler output go to
/// `route`; only a request that needs a task, at the in-flight limit, waits here for a slot,
/// which pushes back on the client.
pub(crate) async fn handle_message(shared: &Arc<Shared>, message: Result<Message, serde_json::Error>, route: &Route) {
    let Ok(message) = message else {
        let error = RpcError::new(codes::PARSE_ERROR, "parse error");
        route.send_reply(jsonrpc::error_line(&Value::Null, &error)).await;
        return;
    };
    match message {
        Message::Request { id, method, params } => dispatch_request(shared, id, method, params, route).await,
        Message::Notification { method, params } => handle_notification(shared, &method, params).await,
        Message::Response { id, outcome } => shared.connection.resolve_pending(&id, outcome),
        Message::Invalid { id } => {
            let error = RpcError::new(codes::INVALID_REQUEST, "invalid request");
            route.send_reply(jsonrpc::error_line(&id.unwrap_or(Value::Null), &error)).await;
        }
    }
}

/// Whether a message gets an answer of its own (requests, and what is answered with an error).
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn expects_reply(message: &Result<Message, serde_json::Error>) -> bool {
    !matches!(message, Ok(Message::Notification { .. } | Message::Response { .. }))
}

async fn dispatch_request(shared: &Arc<Shared>, id: Value, method: String, params: Option<Value>, route: &Route) {
    if shared.interceptor.is_none() && !runs_in_task(&method, &shared.offerings) {
        // Cheap, ordered, no task: initialize, ping, the lists, settings and unknown methods.
        let reply = answer_inline(&shared.connection, &shared.tools.snapshot(), &shared.offerings, &method, params);
        if let Some(line) = reply_line(&id, &reply) {
            route.send_reply(line).await;
        }
        return;
    }
    let Ok(permit) = Arc::clone(&shared.in_flight_permits).acquire_owned().await else {
        return;
    };
    let progress_token =
        params.as_ref().and_then(|params| params.get("_meta")).and_then(|meta| meta.get("progressToken")).cloned();
    let cancellation = Arc::new(Cancellation::default());
    // Registered before the next message is handled, so a cancellation right behind the
    // request always finds it.
    let in_flight = InFlight::enter(shared, &id, &cancellation, permit, route);
    let context = Arc::new(CallContext {
        connection: Arc::clone(&shared.connection),
        outgoing: route.outgoing.clone(),
        sent_output: AtomicBool::new(false),
        tools: Arc::clone(&shared.tools),
        offerings: Arc::clone(&shared.offerings),
        request_id: id,
        method: method.clone(),
        progress_token,
        cancellation,
    });
    shared.runtime.spawn(run_request(
        Arc::clone(shared),
        context,
        in_flight,
        route.clone(),
        Request { method, params },
    ));
}

async fn run_request(
    shared: Arc<Shared>,
    context: Arc<CallContext>,
    mut in_flight: InFlight,
    route: Route,
    request: Request,
) {
    let work = async {
        match &shared.interceptor {
            Some(interceptor) => interceptor(Arc::clone(&context), request).await,
            None => context.builtin(request).await,
        }
    };
    let reply = match shared.cancel_policy {
        CancelPolicy::AbortHandler => {
            let reply = tokio::select! {
                biased;
                () = context.cancellation.cancelled() => Reply::NoReply,
                reply = work => reply,
            };
            // A handler that noticed the cancellation itself and returned still gets no reply.
            if context.is_cancelled() { Reply::NoReply } else { reply }
        }
        CancelPolicy::Signal => work.await,
    };
    in_flight.armed = false;
    match reply_line(&context.request_id, &reply) {
        Some(line) => route.send_reply(line).await,
        None if route.hold_unanswered && !context.sent_output() => context.cancellation.cancelled().await,
        None => {}
    }
    drop(in_flight);
}

async fn handle_notification(shared: &Shared, method: &str, params: Option<Value>) {
    if method != "notifications/cancelled" {
        if let Some(hook) = &shared.notification_hook
            && let Some(message) = hook(method, params.as_ref())
        {
            let mut line = serde_json::to_vec(&message).unwrap_or_default();
            line.push(b'\n');
            let _ = shared.connection.send(line).await;
        }
        return;
    }
    let Some(params) = params else {
        return;
    };
    let Some(key) = params.get("requestId").and_then(RequestId::from_wire) else {
        return;
    };
    let cancellation = shared.in_flight.lock().unwrap_or_else(PoisonError::into_inner).get(&key).cloned();
    if let Some(cancellation) = cancellation {
        cancellation.cancel(params.get("reason").and_then(Value::as_str));
    }
}

fn reply_line(id: &Value, reply: &Reply) -> Option<Vec<u8>> {
    match reply {
        Reply::Result(result) => Some(jsonrpc::result_line(id, result)),
        Reply::Tool(result) => Some(jsonrpc::result_line(id, result)),
        Reply::Error(error) => Some(jsonrpc::error_line(id, error)),
        Reply::NoReply => None,
    }
}

/// Marks one request as running: registered for cancellation, counted for the EOF grace.
/// Dropped while still armed (the handler panicked), it answers `-32603` so the client does
/// not wait for a reply that will never come (best effort: skipped when the queue is full).
struct InFlight {
    shared: Arc<Shared>,
    outgoing: mpsc::Sender<Outgoing>,
    id: Value,
    key: Option<RequestId>,
    cancellation: Arc<Cancellation>,
    armed: bool,
    _permit: OwnedSemaphorePermit,
}

impl InFlight {
    fn enter(
        shared: &Arc<Shared>,
        id: &Value,
        cancellation: &Arc<Cancellation>,
        permit: OwnedSemaphorePermit,
        route: &Route,
    ) -> Self {
        let key = RequestId::from_wire(id);
        if let Some(key) = &key {
            shared
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key.clone(), Arc::clone(cancellation));
        }
        shared.in_flight_count.fetch_add(1, Ordering::AcqRel);
        Self {
            shared: Arc::clone(shared),
            outgoing: route.outgoing.clone(),
            id: id.clone(),
            key,
            cancellation: Arc::clone(cancellation),
            armed: true,
            _permit: permit,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(key) = &self.key {
            let mut in_flight = self.shared.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
            if in_flight.get(key).is_some_and(|current| Arc::ptr_eq(current, &self.cancellation)) {
                in_flight.remove(key);
            }
        }
        // Still armed means the handler's future was dropped without finishing: it panicked
        // (tokio drops a panicked task's future after catching the panic) or the runtime is
        // shutting down.
        if self.armed {
            let error = RpcError::internal("request handler stopped without a reply");
            let _ = self.outgoing.try_send(Outgoing::Reply(jsonrpc::error_line(&self.id, &error)));
        }
        if self.shared.in_flight_count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.idle.notify_waiters();
        }
    }
}
