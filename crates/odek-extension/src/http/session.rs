//! HTTP sessions: the table of live sessions ([`Sessions`], bounded, found by the
//! `Mcp-Session-Id` header), and one session ([`Session`]): its connection state (`dispatch`'s
//! `Shared`), its standalone stream, and the streams of its POSTs kept for resumption.
//!
//! A session is what a stdio process is to its client: its own tool list, its own requests in
//! flight, its own server-initiated requests. Ending it (DELETE, eviction, shutdown) cancels its
//! running calls and closes its streams. Not here: the HTTP requests themselves (`service`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use hyper::header::{HeaderMap, HeaderName};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::event_stream::{EventStream, pump};
use crate::dispatch::{Blueprint, Shared};
use crate::transport::OUTGOING_QUEUE_MESSAGES;

/// The header that carries a session's id, both ways.
pub(crate) const SESSION_ID_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// Random bytes in a session id; the id is their lowercase hex (64 visible ASCII characters).
const SESSION_ID_BYTES: usize = 32;

/// Closed POST streams a session keeps for resumption, the most recent ones; open streams are
/// always kept.
pub const MAX_RETAINED_STREAMS: usize = 16;

/// A fresh session id from the operating system's CSPRNG.
pub(crate) fn new_session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; SESSION_ID_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// One client's session.
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) shared: Arc<Shared>,
    /// The standalone `GET` stream (key 0): messages unrelated to any request.
    pub(crate) standalone: Arc<EventStream>,
    streams: Mutex<StreamTable>,
    /// Fires when the session ends.
    pub(crate) ended: CancellationToken,
    last_used: Mutex<Instant>,
}

#[derive(Default)]
struct StreamTable {
    by_key: HashMap<u64, Arc<EventStream>>,
    /// Keys, oldest first.
    order: VecDeque<u64>,
    next_key: u64,
}

impl StreamTable {
    /// Forgets the oldest closed streams beyond [`MAX_RETAINED_STREAMS`].
    fn prune(&mut self) {
        let mut closed = self.order.iter().filter(|key| self.by_key.get(key).is_some_and(|s| s.is_closed())).count();
        let by_key = &mut self.by_key;
        self.order.retain(|key| {
            let is_closed = by_key.get(key).is_none_or(|stream| stream.is_closed());
            if closed > MAX_RETAINED_STREAMS && is_closed {
                closed -= 1;
                by_key.remove(key);
                return false;
            }
            true
        });
    }
}

impl Session {
    fn new(id: String, blueprint: &Blueprint, runtime: &Handle) -> Arc<Self> {
        let (outgoing, receiver) = mpsc::channel(OUTGOING_QUEUE_MESSAGES);
        let shared = blueprint.connect(outgoing, runtime.clone());
        let standalone = EventStream::new(0, Some(Arc::clone(&shared.connection.listening)));
        let ended = CancellationToken::new();
        runtime.spawn(pump(Arc::clone(&standalone), Vec::new(), receiver, ended.clone()));
        Arc::new(Self {
            id,
            shared,
            standalone,
            streams: Mutex::default(),
            ended,
            last_used: Mutex::new(Instant::now()),
        })
    }

    /// A new stream for a POST's answers, kept for resumption.
    pub(crate) fn open_stream(&self) -> Arc<EventStream> {
        let mut table = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        table.prune();
        table.next_key += 1;
        let key = table.next_key;
        let stream = EventStream::new(key, None);
        table.by_key.insert(key, Arc::clone(&stream));
        table.order.push_back(key);
        stream
    }

    /// The stream with this key, if the session still keeps it.
    pub(crate) fn stream(&self, key: u64) -> Option<Arc<EventStream>> {
        if key == 0 {
            return Some(Arc::clone(&self.standalone));
        }
        self.streams.lock().unwrap_or_else(PoisonError::into_inner).by_key.get(&key).cloned()
    }

    pub(crate) fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn last_used(&self) -> Instant {
        *self.last_used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// No request running and no stream being read.
    fn is_idle(&self) -> bool {
        !self.shared.is_busy()
            && !self.standalone.has_reader()
            && !self.streams.lock().unwrap_or_else(PoisonError::into_inner).by_key.values().any(|s| s.has_reader())
    }

    fn end(&self) {
        self.ended.cancel();
        self.shared.close("session ended");
        self.standalone.close();
        for stream in self.streams.lock().unwrap_or_else(PoisonError::into_inner).by_key.values() {
            stream.close();
        }
    }
}

/// What a request's `Mcp-Session-Id` names.
pub(crate) enum Lookup {
    /// No header.
    Missing,
    /// A header naming no live session (never issued, ended, or not even visible ASCII).
    Unknown,
    Found(Arc<Session>),
}

/// Why no session could be created.
pub(crate) enum CreateError {
    /// [`HttpOptions::max_sessions`](crate::HttpOptions::max_sessions) live sessions, none idle.
    Full,
    Random(getrandom::Error),
}

/// The live sessions, at most `max`.
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Arc<Session>>>,
    max: usize,
}

impl Sessions {
    pub(crate) fn new(max: usize) -> Self {
        Self { by_id: Mutex::default(), max }
    }

    pub(crate) fn lookup(&self, headers: &HeaderMap) -> Lookup {
        let Some(value) = headers.get(SESSION_ID_HEADER) else {
            return Lookup::Missing;
        };
        let Ok(id) = value.to_str() else {
            return Lookup::Unknown;
        };
        match self.by_id.lock().unwrap_or_else(PoisonError::into_inner).get(id) {
            Some(session) => Lookup::Found(Arc::clone(session)),
            None => Lookup::Unknown,
        }
    }

    /// A new session; at the limit the least recently used idle one is ended to make room.
    pub(crate) fn create(&self, blueprint: &Blueprint, runtime: &Handle) -> Result<Arc<Session>, CreateError> {
        let id = new_session_id().map_err(CreateError::Random)?;
        let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        if by_id.len() >= self.max {
            let evicted = by_id
                .values()
                .filter(|session| session.is_idle())
                .min_by_key(|session| session.last_used())
                .map(|session| session.id.clone());
            let Some(session) = evicted.and_then(|id| by_id.remove(&id)) else {
                return Err(CreateError::Full);
            };
            session.end();
        }
        let session = Session::new(id.clone(), blueprint, runtime);
        by_id.insert(id, Arc::clone(&session));
        Ok(session)
    }

    /// Ends `session`: its id is unknown from now on.
    pub(crate) fn end(&self, session: &Session) {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner).remove(&session.id);
        session.end();
    }

    pub(crate) fn end_all(&self) {
        let sessions: Vec<_> = self.by_id.lock().unwrap_or_else(PoisonError::into_inner).drain().collect();
        for (_, session) in sessions {
            session.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_64_hex_characters_and_differ() {
        let first = new_session_id().unwrap();
        let second = new_session_id().unwrap();
        assert_eq!(first.len(), 64);
        assert!(first.bytes().all(|byte| byte.is_ascii_hexdigit() && !byte.is_ascii_uppercase()));
        assert_ne!(first, second);
    }

    #[test]
    fn only_the_oldest_closed_streams_are_forgotten() {
        let mut table = StreamTable::default();
        for key in 1..=(MAX_RETAINED_STREAMS as u64 + 4) {
            let stream = EventStream::new(key, None);
            if key != 2 {
                stream.close();
            }
            table.by_key.insert(key, stream);
            table.order.push_back(key);
        }
        table.prune();
        let kept: Vec<u64> = table.order.iter().copied().collect();
        assert_eq!(kept.len(), MAX_RETAINED_STREAMS + 1);
        assert_eq!(kept[0], 2, "an open stream is never forgotten");
        assert_eq!(kept[1], 5, "the three oldest closed ones (1, 3, 4) are");
        assert!(!table.by_key.contains_key(&1) && table.by_key.contains_key(&2));
    }
}
