//! What a tool handler is given and may change: the [`CallContext`] of its request, and the
//! [`ToolSet`] of the connection. The two live together because each names the other: a
//! handler ([`ToolHandler`]) takes a context, and a context changes the set of handlers.
//!
//! Everything a context writes goes through one queue, the one of its request's route (stdio:
//! the connection's single writer; HTTP: the stream of the POST that carried the request), so a
//! handler can never tear a line another task is writing. The raw-output methods exist for test
//! fixtures that must misbehave on purpose; a normal extension server uses notifications,
//! requests and results.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::Error;
use crate::connection::Connection;
use crate::jsonrpc::{self, RequestId, RpcError};
use crate::logging::LogLevel;
use crate::offerings::Offerings;
use crate::tools::{BoxFuture, ToolDef, ToolResponse, validate_tool_name};
use crate::transport::{Outgoing, RawStream};

/// The state of one request's cancellation (`notifications/cancelled`).
#[derive(Default)]
pub(crate) struct Cancellation {
    cancelled: AtomicBool,
    reason: OnceLock<String>,
    notify: Notify,
}

impl Cancellation {
    pub(crate) fn cancel(&self, reason: Option<&str>) {
        let _ = self.reason.set(reason.unwrap_or_default().to_owned());
        self.cancelled.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    pub(crate) async fn cancelled(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

/// The context of one client request, handed to tool handlers and interceptors.
pub struct CallContext {
    pub(crate) connection: Arc<Connection>,
    /// Where this request's output goes: its route (see `dispatch::Route`).
    pub(crate) outgoing: mpsc::Sender<Outgoing>,
    /// Whether anything was queued on `outgoing` for this request.
    pub(crate) sent_output: AtomicBool,
    pub(crate) tools: Arc<ToolList>,
    pub(crate) offerings: Arc<Offerings>,
    pub(crate) request_id: Value,
    pub(crate) method: String,
    pub(crate) progress_token: Option<Value>,
    pub(crate) cancellation: Arc<Cancellation>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CallContext")
            .field("request_id", &self.request_id)
            .field("method", &self.method)
            .field("progress_token", &self.progress_token)
            .finish_non_exhaustive()
    }
}

impl CallContext {
    /// The client's id for this request, exactly as it arrived.
    pub fn request_id(&self) -> &Value {
        &self.request_id
    }

    /// The request's method (`tools/call` for tool handlers).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// `params._meta.progressToken` of the request, if the client sent one.
    pub fn progress_token(&self) -> Option<&Value> {
        self.progress_token.as_ref()
    }

    /// Whether the client sent `notifications/cancelled` for this request.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Completes once the client cancels this request (never, if it does not). Only observable
    /// under [`CancelPolicy::Signal`](crate::CancelPolicy::Signal); under the default policy
    /// the handler is dropped at that moment instead.
    pub async fn cancelled(&self) {
        self.cancellation.cancelled().await;
    }

    /// The `reason` of the cancellation (`""` if the client gave none); `None` until cancelled.
    pub fn cancel_reason(&self) -> Option<&str> {
        self.cancellation.reason.get().map(String::as_str)
    }

    /// Queues `message` on this request's route.
    async fn send(&self, message: Outgoing) -> Result<(), Error> {
        self.sent_output.store(true, Ordering::Release);
        self.outgoing.send(message).await.map_err(|_| Error::ConnectionClosed)
    }

    pub(crate) fn sent_output(&self) -> bool {
        self.sent_output.load(Ordering::Acquire)
    }

    /// Sends a notification `{"jsonrpc":"2.0","method":…,"params":…}`. Over HTTP it goes on the
    /// stream of this request's POST.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        self.send(Outgoing::Bytes(jsonrpc::notification_line(method, params.as_ref()))).await
    }

    /// Sends `notifications/progress` with this request's progress token. Returns `Ok(false)`
    /// without sending anything when the client asked for no progress (no token).
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> Result<bool, Error> {
        let Some(token) = &self.progress_token else {
            return Ok(false);
        };
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), Value::from(progress));
        if let Some(total) = total {
            params.insert("total".into(), Value::from(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), Value::from(message));
        }
        self.notify("notifications/progress", Some(Value::Object(params))).await?;
        Ok(true)
    }

    /// Sends `notifications/message` with `level` (`debug`, `info`, `warning`, `error`, …) and
    /// `data` (a string or any JSON value). A message below the level the client set with
    /// `logging/setLevel` (see [`Server::logging`](crate::Server::logging)) is not sent.
    pub async fn log(&self, level: &str, data: Value) -> Result<(), Error> {
        if let Some(known) = LogLevel::parse(level)
            && !self.connection.log_threshold.allows(known)
        {
            return Ok(());
        }
        let mut params = Map::new();
        params.insert("level".into(), Value::from(level));
        params.insert("data".into(), data);
        self.notify("notifications/message", Some(Value::Object(params))).await
    }

    /// Sends `notifications/tools/list_changed`. It concerns the session rather than this
    /// request, so over HTTP it goes on the session's standalone `GET` stream while a client
    /// listens there, and on this request's stream otherwise.
    pub async fn notify_tools_changed(&self) -> Result<(), Error> {
        self.notify_session(jsonrpc::notification_line("notifications/tools/list_changed", None)).await
    }

    /// Sends a notification that concerns the session rather than this request: on the
    /// standalone stream while a client listens there, else on this request's route.
    async fn notify_session(&self, line: Vec<u8>) -> Result<(), Error> {
        if self.connection.is_listening() {
            return self.connection.send(line).await;
        }
        self.send(Outgoing::Bytes(line)).await
    }

    /// Sends `notifications/resources/updated` for `uri` when the client subscribed to it on
    /// this connection (see [`Server::resource_subscriptions`](crate::Server::resource_subscriptions));
    /// returns whether it did. Like the tool list's change, it goes on the standalone stream
    /// while a client listens there.
    pub async fn notify_resource_updated(&self, uri: &str) -> Result<bool, Error> {
        if !self.connection.is_subscribed(uri) {
            return Ok(false);
        }
        let params = serde_json::json!({"uri": uri});
        self.notify_session(jsonrpc::notification_line("notifications/resources/updated", Some(&params))).await?;
        Ok(true)
    }

    /// Sends a request to the client and returns once it is queued for writing; the reply is
    /// awaited with [`PendingReply::wait`]. `id` of `None` picks the next free integer id.
    /// Writing the request before waiting lets a handler order it against other output.
    pub async fn send_request(
        &self,
        id: Option<RequestId>,
        method: &str,
        params: Option<Value>,
    ) -> Result<PendingReply, Error> {
        let id = id.unwrap_or_else(|| self.connection.next_request_id());
        let (token, receiver) = self.connection.register_pending(&id)?;
        let pending = PendingReply {
            connection: Arc::clone(&self.connection),
            id: id.clone(),
            token,
            method: method.to_owned(),
            receiver: Some(receiver),
        };
        self.send(Outgoing::Bytes(jsonrpc::request_line(&id.to_value(), method, params.as_ref()))).await?;
        Ok(pending)
    }

    /// Sends a request to the client and waits at most `timeout` for its reply.
    pub async fn request(&self, method: &str, params: Option<Value>, timeout: Duration) -> Result<Value, Error> {
        self.send_request(None, method, params).await?.wait(timeout).await
    }

    /// Writes `line` and a `\n` to stdout as is. **For test fixtures only**: nothing checks
    /// that the line is JSON-RPC. Over HTTP each line becomes the data of one SSE event on this
    /// request's stream (see the `http` module).
    pub async fn write_raw_line(&self, line: &str) -> Result<(), Error> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.send(Outgoing::Bytes(bytes)).await
    }

    /// Writes `bytes` to stdout as is, without adding a newline. **For test fixtures only.**
    pub async fn write_raw_bytes(&self, bytes: Vec<u8>) -> Result<(), Error> {
        self.send(Outgoing::Bytes(bytes)).await
    }

    /// Takes stdout (over HTTP, this request's stream) exclusively for chunked raw output until
    /// the returned stream is dropped. **For test fixtures only** (e.g. a reply line too large
    /// to hold in memory). Do not await anything that needs the same output (a request, a
    /// notification) while holding it: that deadlocks.
    pub async fn raw_stream(&self) -> Result<RawStream, Error> {
        self.sent_output.store(true, Ordering::Release);
        RawStream::open(&self.outgoing).await
    }

    /// Waits until everything queued so far has been written and flushed (over HTTP: handed
    /// to the stream).
    pub async fn flush(&self) -> Result<(), Error> {
        let (done, flushed) = oneshot::channel();
        self.outgoing.send(Outgoing::Flush(done)).await.map_err(|_| Error::ConnectionClosed)?;
        flushed.await.map_err(|_| Error::ConnectionClosed)
    }

    /// A snapshot of the current tool set.
    pub fn tools(&self) -> Arc<ToolSet> {
        self.tools.snapshot()
    }

    /// Changes the tool list atomically (`change` edits the list under a lock that no
    /// `.await` can hold), then sends one `notifications/tools/list_changed` if a tool was
    /// added or removed. Requests already running keep the tool snapshot they started with.
    /// `change` must not call back into this context (the lock is not reentrant).
    pub async fn update_tools<R>(&self, change: impl FnOnce(&mut ToolSet) -> R) -> Result<R, Error> {
        let (outcome, changed) = self.tools.update(change);
        if changed {
            self.notify_tools_changed().await?;
        }
        Ok(outcome)
    }
}

/// A request sent to the client whose reply has not been awaited yet. Dropping it forgets the
/// request (a late reply is then ignored).
pub struct PendingReply {
    connection: Arc<Connection>,
    id: RequestId,
    token: u64,
    method: String,
    receiver: Option<oneshot::Receiver<Result<Value, RpcError>>>,
}

impl std::fmt::Debug for PendingReply {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PendingReply")
            .field("id", &self.id)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

impl PendingReply {
    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// Waits at most `timeout` for the reply: its `result`, or [`Error::Rpc`] for an `error`,
    /// [`Error::RequestTimeout`], or [`Error::ConnectionClosed`] when stdin closes first.
    pub async fn wait(mut self, timeout: Duration) -> Result<Value, Error> {
        let Some(receiver) = self.receiver.take() else {
            return Err(Error::ConnectionClosed);
        };
        match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(Error::Rpc { code: error.code, message: error.message }),
            Ok(Err(_)) => Err(Error::ConnectionClosed),
            Err(_) => Err(Error::RequestTimeout { method: self.method.clone(), timeout_ms: timeout.as_millis() }),
        }
    }
}

impl Drop for PendingReply {
    fn drop(&mut self) {
        self.connection.forget_pending(&self.id, self.token);
    }
}

/// A type-erased tool handler.
pub type ToolHandler = Arc<dyn Fn(Arc<CallContext>, Value) -> BoxFuture<ToolResponse> + Send + Sync>;

/// Erases an async closure into a [`ToolHandler`].
pub fn tool_handler<F, Fut>(handler: F) -> ToolHandler
where
    F: Fn(Arc<CallContext>, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResponse> + Send + 'static,
{
    Arc::new(move |context, arguments| Box::pin(handler(context, arguments)))
}

pub(crate) struct ToolEntry {
    pub(crate) def: ToolDef,
    pub(crate) handler: ToolHandler,
}

/// The tools a server offers, in `tools/list` order.
///
/// Cloning is cheap; the server swaps in a new snapshot on every change, so a `tools/list`
/// page or a `tools/call` lookup never waits for a mutation.
#[derive(Clone, Default)]
pub struct ToolSet {
    entries: Vec<Arc<ToolEntry>>,
    index: HashMap<String, usize>,
    validate_names: bool,
    /// Bumped by every successful change, so callers can tell whether anything changed.
    generation: u64,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_list().entries(self.names()).finish()
    }
}

impl ToolSet {
    pub(crate) fn new(validate_names: bool) -> Self {
        Self { validate_names, ..Self::default() }
    }

    pub(crate) fn set_validation(&mut self, validate_names: bool) {
        self.validate_names = validate_names;
    }

    /// Adds a tool at the end of the list. Fails on a duplicate name, or on an invalid name
    /// unless name validation was turned off with
    /// [`Server::validate_tool_names`](crate::Server::validate_tool_names).
    pub fn add<F, Fut>(&mut self, def: ToolDef, handler: F) -> Result<(), Error>
    where
        F: Fn(Arc<CallContext>, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResponse> + Send + 'static,
    {
        self.add_handler(def, tool_handler(handler))
    }

    /// [`ToolSet::add`] for an already type-erased handler.
    pub fn add_handler(&mut self, def: ToolDef, handler: ToolHandler) -> Result<(), Error> {
        if self.validate_names {
            validate_tool_name(&def.name)?;
        }
        if self.index.contains_key(&def.name) {
            return Err(Error::DuplicateTool { name: def.name });
        }
        self.index.insert(def.name.clone(), self.entries.len());
        self.entries.push(Arc::new(ToolEntry { def, handler }));
        self.generation += 1;
        Ok(())
    }

    /// Removes the tool called `name`; `false` if there was none.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(position) = self.index.remove(name) else {
            return false;
        };
        self.entries.remove(position);
        for slot in self.index.values_mut() {
            if *slot > position {
                *slot -= 1;
            }
        }
        self.generation += 1;
        true
    }

    /// Tool names in list order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|entry| entry.def.name.as_str()).collect()
    }

    /// The definition of the tool called `name`, as `tools/list` shows it.
    pub fn def(&self, name: &str) -> Option<&ToolDef> {
        self.get(name).map(|entry| &entry.def)
    }

    /// Whether a tool called `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.index.get(name).map(|&position| &self.entries[position])
    }

    pub(crate) fn entries(&self) -> &[Arc<ToolEntry>] {
        &self.entries
    }

    /// Re-checks every name; used at startup when validation is on.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.validate_names {
            for entry in &self.entries {
                validate_tool_name(&entry.def.name)?;
            }
        }
        Ok(())
    }
}

/// The tool set of one connection: every request keeps the snapshot it started with, and a
/// change swaps in a new one.
pub(crate) struct ToolList(RwLock<Arc<ToolSet>>);

impl ToolList {
    pub(crate) fn new(tools: ToolSet) -> Self {
        Self(RwLock::new(Arc::new(tools)))
    }

    pub(crate) fn snapshot(&self) -> Arc<ToolSet> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Applies `change` to the tool list; also says whether the list actually changed.
    pub(crate) fn update<R>(&self, change: impl FnOnce(&mut ToolSet) -> R) -> (R, bool) {
        let mut tools = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let before = tools.generation();
        let outcome = change(Arc::make_mut(&mut tools));
        (outcome, tools.generation() != before)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn cancellation_wakes_waiters_registered_before_and_after() {
        let cancellation = Arc::new(Cancellation::default());
        let early = {
            let cancellation = Arc::clone(&cancellation);
            tokio::spawn(async move { cancellation.cancelled().await })
        };
        tokio::task::yield_now().await;
        cancellation.cancel(Some("timeout"));
        early.await.unwrap();
        cancellation.cancelled().await;
        assert_eq!(cancellation.reason.get().map(String::as_str), Some("timeout"));
    }

    #[test]
    fn removal_keeps_order_and_index_in_step() {
        let mut tools = ToolSet::new(true);
        for name in ["a", "b", "c"] {
            tools.add(ToolDef::new(name, "", json!({})), |_, _| async { ToolResponse::text("") }).unwrap();
        }
        assert!(tools.remove("a"));
        assert!(!tools.remove("a"));
        assert_eq!(tools.names(), ["b", "c"]);
        assert_eq!(tools.get("c").unwrap().def.name, "c");
        assert!(matches!(
            tools.add(ToolDef::new("b", "", json!({})), |_, _| async { ToolResponse::NoReply }),
            Err(Error::DuplicateTool { .. })
        ));
        assert!(tools.add(ToolDef::new("bad name", "", json!({})), |_, _| async { ToolResponse::NoReply }).is_err());
    }
}
