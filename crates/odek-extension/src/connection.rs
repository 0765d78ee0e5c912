//! What every task serving one connection shares ([`Connection`]): the queue for messages that
//! belong to the connection rather than to one request (stdio: the one stdout writer; HTTP: the
//! session's standalone stream), the table of server-initiated requests waiting for the
//! client's reply, the next id for such a request, what the built-in methods answer with
//! ([`Identity`]), and what the client set up for itself: the capabilities it declared in
//! `initialize`, its log level and its resource subscriptions (at most
//! [`MAX_SUBSCRIPTIONS`]). It knows nothing of tools or handlers, so the call context and the
//! server both build on it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::Error;
use crate::jsonrpc::{RequestId, RpcError};
use crate::logging::LogThreshold;
use crate::revision::VersionAnswer;
use crate::transport::Outgoing;

/// Most resources one connection may be subscribed to at once; a subscription past it is
/// refused (`-32602`).
pub const MAX_SUBSCRIPTIONS: usize = 1024;

/// Longest uri a subscription may name, in bytes; a longer one is refused (`-32602`).
pub const MAX_SUBSCRIBED_URI_BYTES: usize = 8192;

/// What `initialize` answers with (its `instructions` included), the page size of
/// `tools/list` and `resources/list`, and how a call of an unknown tool is answered.
#[derive(Clone, Debug)]
pub(crate) struct Identity {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) protocol_version: VersionAnswer,
    pub(crate) instructions: Option<String>,
    pub(crate) page_size: Option<usize>,
    pub(crate) unknown_tool: crate::server::UnknownTool,
}

/// Where the client's reply to one server-initiated request is delivered.
pub(crate) type ReplySender = oneshot::Sender<Result<Value, RpcError>>;

/// Waiters for replies to server-initiated requests. Several waiters may share an id (a
/// fixture pinging with id 0 from concurrent calls); replies resolve them first come, first
/// served.
#[derive(Default)]
struct PendingRequests {
    waiters: HashMap<RequestId, VecDeque<(u64, ReplySender)>>,
    next_token: u64,
    closed: bool,
}

/// State shared by the reader task, the request tasks and every
/// [`CallContext`](crate::CallContext) of one connection.
pub(crate) struct Connection {
    pub(crate) identity: Identity,
    pub(crate) outgoing: mpsc::Sender<Outgoing>,
    /// Set while a client listens for messages unrelated to any request on a stream of their
    /// own (HTTP's standalone `GET` stream). Never set on stdio, where everything shares the
    /// one pipe anyway.
    pub(crate) listening: Arc<AtomicBool>,
    pending: Mutex<PendingRequests>,
    next_request_id: AtomicI64,
    /// The `capabilities` of the client's last `initialize`.
    client_capabilities: Mutex<Option<Value>>,
    pub(crate) log_threshold: LogThreshold,
    subscriptions: Mutex<HashSet<String>>,
}

impl Connection {
    pub(crate) fn new(identity: Identity, outgoing: mpsc::Sender<Outgoing>) -> Self {
        Self {
            identity,
            outgoing,
            listening: Arc::new(AtomicBool::new(false)),
            pending: Mutex::new(PendingRequests::default()),
            next_request_id: AtomicI64::new(1),
            client_capabilities: Mutex::new(None),
            log_threshold: LogThreshold::default(),
            subscriptions: Mutex::new(HashSet::new()),
        }
    }

    /// Remembers what the client declared in `initialize` (a later `initialize` replaces it).
    pub(crate) fn set_client_capabilities(&self, capabilities: Value) {
        *self.client_capabilities.lock().unwrap_or_else(PoisonError::into_inner) = Some(capabilities);
    }

    /// The `capabilities` the client declared, once it initialized.
    pub(crate) fn client_capabilities(&self) -> Option<Value> {
        self.client_capabilities.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Subscribes the connection to `uri`; `Err` names why not (too long a uri, too many).
    pub(crate) fn subscribe(&self, uri: &str) -> Result<(), String> {
        if uri.len() > MAX_SUBSCRIBED_URI_BYTES {
            return Err(format!("a subscribed uri may have at most {MAX_SUBSCRIBED_URI_BYTES} bytes"));
        }
        let mut subscriptions = self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        if subscriptions.len() >= MAX_SUBSCRIPTIONS && !subscriptions.contains(uri) {
            return Err(format!("at most {MAX_SUBSCRIPTIONS} subscriptions per connection"));
        }
        subscriptions.insert(uri.to_owned());
        Ok(())
    }

    /// Ends the subscription to `uri`, if there was one.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner).remove(uri);
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner).contains(uri)
    }

    pub(crate) fn is_listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }

    pub(crate) async fn send(&self, bytes: Vec<u8>) -> Result<(), Error> {
        self.outgoing.send(Outgoing::Bytes(bytes)).await.map_err(|_| Error::ConnectionClosed)
    }

    pub(crate) fn next_request_id(&self) -> RequestId {
        RequestId::Number(self.next_request_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn register_pending(
        &self,
        id: &RequestId,
    ) -> Result<(u64, oneshot::Receiver<Result<Value, RpcError>>), Error> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.closed {
            return Err(Error::ConnectionClosed);
        }
        let (sender, receiver) = oneshot::channel();
        pending.next_token += 1;
        let token = pending.next_token;
        pending.waiters.entry(id.clone()).or_default().push_back((token, sender));
        Ok((token, receiver))
    }

    pub(crate) fn forget_pending(&self, id: &RequestId, token: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(queue) = pending.waiters.get_mut(id) {
            queue.retain(|(waiting, _)| *waiting != token);
            if queue.is_empty() {
                pending.waiters.remove(id);
            }
        }
    }

    /// Routes a client reply to the oldest waiter with that id; replies to unknown ids (and
    /// ids that cannot be ours, like `null` or `1.0`) are dropped.
    pub(crate) fn resolve_pending(&self, id: &Value, outcome: Result<Value, RpcError>) {
        let Some(id) = RequestId::from_wire(id) else {
            return;
        };
        let waiter = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(queue) = pending.waiters.get_mut(&id) else {
                return;
            };
            let waiter = queue.pop_front();
            if queue.is_empty() {
                pending.waiters.remove(&id);
            }
            waiter
        };
        if let Some((_, sender)) = waiter {
            let _ = sender.send(outcome);
        }
    }

    /// No reply can arrive once stdin is closed (or the HTTP session ended): fail every waiter
    /// and refuse new requests.
    pub(crate) fn close_pending(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.closed = true;
        pending.waiters.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> Connection {
        let identity = Identity {
            name: "t".into(),
            version: "0".into(),
            protocol_version: VersionAnswer::Negotiate,
            instructions: None,
            page_size: None,
            unknown_tool: crate::server::UnknownTool::default(),
        };
        Connection::new(identity, mpsc::channel(1).0)
    }

    #[test]
    fn subscriptions_are_bounded_in_number_and_uri_length() {
        let connection = connection();
        for n in 0..MAX_SUBSCRIPTIONS {
            connection.subscribe(&format!("a://{n}")).unwrap();
        }
        assert!(connection.subscribe("a://0").is_ok(), "subscribing again takes no new room");
        assert_eq!(connection.subscribe("a://one-more").unwrap_err(), "at most 1024 subscriptions per connection");
        connection.unsubscribe("a://0");
        assert!(!connection.is_subscribed("a://0"));
        connection.subscribe("a://one-more").unwrap();
        assert!(connection.is_subscribed("a://one-more"));
        let long = format!("a://{}", "x".repeat(MAX_SUBSCRIBED_URI_BYTES));
        assert_eq!(connection.subscribe(&long).unwrap_err(), "a subscribed uri may have at most 8192 bytes");
    }
}
