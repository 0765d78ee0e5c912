//! What a handler can do while it serves one request: [`CallContext`].
//!
//! Everything here goes through the connection's single writer, so a handler can never tear a
//! line another task is writing. The raw-output methods exist for test fixtures that must
//! misbehave on purpose; a normal extension server uses notifications, requests and results.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{Notify, oneshot};

use crate::Error;
use crate::jsonrpc::{self, RequestId, RpcError};
use crate::server::{Reply, Request, Shared};
use crate::tools::ToolSet;
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
    pub(crate) shared: Arc<Shared>,
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

    /// Sends a notification `{"jsonrpc":"2.0","method":…,"params":…}`.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        self.shared.send(jsonrpc::notification_line(method, params.as_ref())).await
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
    /// `data` (a string or any JSON value).
    pub async fn log(&self, level: &str, data: Value) -> Result<(), Error> {
        let mut params = Map::new();
        params.insert("level".into(), Value::from(level));
        params.insert("data".into(), data);
        self.notify("notifications/message", Some(Value::Object(params))).await
    }

    /// Sends `notifications/tools/list_changed`.
    pub async fn notify_tools_changed(&self) -> Result<(), Error> {
        self.notify("notifications/tools/list_changed", None).await
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
        let id = id.unwrap_or_else(|| self.shared.next_request_id());
        let (token, receiver) = self.shared.register_pending(&id)?;
        let pending = PendingReply {
            shared: Arc::clone(&self.shared),
            id: id.clone(),
            token,
            method: method.to_owned(),
            receiver: Some(receiver),
        };
        self.shared.send(jsonrpc::request_line(&id.to_value(), method, params.as_ref())).await?;
        Ok(pending)
    }

    /// Sends a request to the client and waits at most `timeout` for its reply.
    pub async fn request(&self, method: &str, params: Option<Value>, timeout: Duration) -> Result<Value, Error> {
        self.send_request(None, method, params).await?.wait(timeout).await
    }

    /// Writes `line` and a `\n` to stdout as is. **For test fixtures only**: nothing checks
    /// that the line is JSON-RPC.
    pub async fn write_raw_line(&self, line: &str) -> Result<(), Error> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.shared.send(bytes).await
    }

    /// Writes `bytes` to stdout as is, without adding a newline. **For test fixtures only.**
    pub async fn write_raw_bytes(&self, bytes: Vec<u8>) -> Result<(), Error> {
        self.shared.send(bytes).await
    }

    /// Takes stdout exclusively for chunked raw output until the returned stream is dropped.
    /// **For test fixtures only** (e.g. a reply line too large to hold in memory). Do not await
    /// anything that needs stdout (a request, a notification) while holding it: that deadlocks.
    pub async fn raw_stream(&self) -> Result<RawStream, Error> {
        RawStream::open(&self.shared.outgoing).await
    }

    /// Waits until everything queued so far has been written and flushed.
    pub async fn flush(&self) -> Result<(), Error> {
        let (done, flushed) = oneshot::channel();
        self.shared.outgoing.send(Outgoing::Flush(done)).await.map_err(|_| Error::ConnectionClosed)?;
        flushed.await.map_err(|_| Error::ConnectionClosed)
    }

    /// A snapshot of the current tool set.
    pub fn tools(&self) -> Arc<ToolSet> {
        self.shared.tools_snapshot()
    }

    /// Changes the tool list atomically (`change` edits the list under a lock that no
    /// `.await` can hold), then sends one `notifications/tools/list_changed` if a tool was
    /// added or removed. Requests already running keep the tool snapshot they started with.
    /// `change` must not call back into this context (the lock is not reentrant).
    pub async fn update_tools<R>(&self, change: impl FnOnce(&mut ToolSet) -> R) -> Result<R, Error> {
        let (outcome, changed) = self.shared.update_tools(change);
        if changed {
            self.notify_tools_changed().await?;
        }
        Ok(outcome)
    }

    /// Runs the SDK's own handling of `request` (initialize, ping, tools/list, tools/call,
    /// method-not-found). Interceptors call this to delegate after (or instead of) their own
    /// behaviour.
    pub async fn builtin(self: &Arc<Self>, request: Request) -> Reply {
        if request.method == "tools/call" {
            return self.shared.call_tool(self, request.params).await.into();
        }
        self.shared.builtin_without_tools(&request.method, request.params)
    }
}

/// A request sent to the client whose reply has not been awaited yet. Dropping it forgets the
/// request (a late reply is then ignored).
pub struct PendingReply {
    shared: Arc<Shared>,
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
        self.shared.forget_pending(&self.id, self.token);
    }
}

#[cfg(test)]
mod tests {
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
}
