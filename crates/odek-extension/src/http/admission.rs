//! Which connections hold their place ([`Admissions`]): a connection is *unadmitted* from its
//! accept until a request of it passes the origin and token checks. When every connection slot
//! is taken and a new connection comes, the oldest unadmitted one is dropped to make room, so
//! connections that never send a request (or only refused ones) cannot hold the server: without
//! this, [`HttpOptions::max_connections`](super::HttpOptions::max_connections) half-open
//! connections kept everyone else waiting until their header deadline, again and again.
//! Admitted connections keep their slot until they end.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

/// The unadmitted connections, oldest first.
#[derive(Default)]
pub(super) struct Admissions {
    waiting: Mutex<VecDeque<(u64, CancellationToken)>>,
    next_id: AtomicU64,
}

impl Admissions {
    /// A new connection, unadmitted until [`Admission::admit`].
    pub(super) fn enter(self: &Arc<Self>) -> Admission {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let dropped = CancellationToken::new();
        self.lock().push_back((id, dropped.clone()));
        Admission { id, dropped, admissions: Arc::clone(self), admitted: AtomicBool::new(false) }
    }

    /// Drops the oldest unadmitted connection, if there is one; whether there was.
    pub(super) fn drop_oldest(&self) -> bool {
        let oldest = self.lock().pop_front();
        oldest.map(|(_, dropped)| dropped.cancel()).is_some()
    }

    fn leave(&self, id: u64) {
        self.lock().retain(|(waiting, _)| *waiting != id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, CancellationToken)>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One connection's place among the unadmitted; leaving it (however the connection ends)
/// takes it off the list.
pub(crate) struct Admission {
    id: u64,
    dropped: CancellationToken,
    admissions: Arc<Admissions>,
    /// Off the list already: later requests of the connection take no lock.
    admitted: AtomicBool,
}

impl Admission {
    /// A request of this connection passed the checks: it is no longer dropped for room.
    pub(crate) fn admit(&self) {
        if !self.admitted.swap(true, Ordering::Relaxed) {
            self.admissions.leave(self.id);
        }
    }

    /// Resolves when this connection is dropped to make room for a new one.
    pub(super) async fn dropped(&self) {
        self.dropped.cancelled().await;
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if !*self.admitted.get_mut() {
            self.admissions.leave(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_unadmitted_connection_gives_way_and_an_admitted_one_never_does() {
        let admissions = Arc::new(Admissions::default());
        let (first, second, third) = (admissions.enter(), admissions.enter(), admissions.enter());
        first.admit();
        assert!(admissions.drop_oldest());
        assert!(!first.dropped.is_cancelled(), "admitted: keeps its place");
        assert!(second.dropped.is_cancelled());
        drop(third);
        assert!(!admissions.drop_oldest(), "the only other one left");
    }
}
