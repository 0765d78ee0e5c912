//! The supervisor's workers. A notified call waits in the kernel until the supervisor answers
//! it, so the supervisor never refuses one for being busy: the thread that receives calls hands
//! each to a [`Lane`] — `connect` and `bind`, which may wait on the network, or the metadata
//! calls, which do not, so a slow connect never holds up a `chmod` — whose bounded queue feeds a
//! few worker threads. A worker is spawned when its lane has more work than idle workers (up to
//! the lane's limit), drops its capabilities once, and serves until the supervisor stops. When
//! a queue is full the receiving thread stops receiving, and further calls wait in the kernel,
//! pending. Every call handed over is answered exactly once ([`Pending`]): by its handler, or —
//! when the handler panics or the supervisor stops first — with an error. Every wait here ends
//! when the supervisor stops; stopping waits for the workers a bounded time. Start at
//! [`Pool::new`] and [`Pool::submit`].

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::notify::{self, Notification};

/// Calls waiting per lane for a worker; when full, further calls wait in the kernel.
const QUEUE_BOUND: usize = 64;
/// How often a stopping pool repeats its abort while workers are still busy.
const ABORT_INTERVAL: Duration = Duration::from_millis(20);

/// Which workers a call goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// `connect` and `bind`: a blocking connect waits on the network.
    Network,
    /// The metadata calls: a path resolved and one change made, never a wait on anyone.
    Metadata,
}

impl Lane {
    fn index(self) -> usize {
        match self {
            Lane::Network => 0,
            Lane::Metadata => 1,
        }
    }

    /// Workers at most: connects may each wait long, metadata calls only need the cores.
    fn max_workers(self) -> usize {
        match self {
            Lane::Network => 16,
            Lane::Metadata => 4,
        }
    }
}

/// A received call not answered yet. It is answered once: by [`Pending::answer`], or — if it is
/// dropped unanswered (its handler panicked, the supervisor stopped) — with `EIO`.
pub(crate) struct Pending {
    listener: Arc<OwnedFd>,
    pub(crate) notification: Notification,
    answered: bool,
}

impl Pending {
    pub(crate) fn new(listener: Arc<OwnedFd>, notification: Notification) -> Pending {
        Pending { listener, notification, answered: false }
    }

    /// The listener the call came from (its handler checks the call is still pending there).
    pub(crate) fn listener(&self) -> &OwnedFd {
        &self.listener
    }

    pub(crate) fn answer(mut self, outcome: Result<i64, i32>) {
        self.send(outcome);
    }

    fn send(&mut self, outcome: Result<i64, i32>) {
        if !self.answered {
            self.answered = true;
            notify::answer(self.listener.as_raw_fd(), self.notification.id, outcome);
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.send(Err(libc::EIO));
    }
}

/// What a worker does with a call: answer it (or drop it, which answers `EIO`).
pub(crate) type Handler = dyn Fn(Pending) + Send + Sync;

/// The queues and workers of one supervisor.
pub(crate) struct Pool {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    state: Mutex<State>,
    /// Per lane: a call was queued, or the pool is stopping.
    work: [Condvar; 2],
    /// The receiving thread waits here for room in a full queue.
    room: Condvar,
    /// A worker ended (stopping waits for all of them).
    ended: Condvar,
    handler: Box<Handler>,
}

#[derive(Default)]
struct State {
    queues: [VecDeque<Pending>; 2],
    /// Workers started per lane and not ended.
    workers: [usize; 2],
    /// Workers waiting for a call per lane.
    idle: [usize; 2],
    stopping: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Pool {
    pub(crate) fn new(handler: Box<Handler>) -> Pool {
        let shared = Shared {
            state: Mutex::new(State::default()),
            work: [Condvar::new(), Condvar::new()],
            room: Condvar::new(),
            ended: Condvar::new(),
            handler,
        };
        Pool { shared: Arc::new(shared), threads: Mutex::new(Vec::new()) }
    }

    /// Hands `call` to `lane`'s workers, waiting while its queue is full; a pool that is
    /// stopping answers it at once (`EIO`). A worker is started when the lane has more calls
    /// than idle workers and is below its limit; when none can be started and the lane has no
    /// worker at all, its calls are answered `EAGAIN` (no thread to spare on this machine).
    pub(crate) fn submit(&self, lane: Lane, call: Pending) {
        let at = lane.index();
        let start_worker = {
            let mut state = self.shared.lock();
            while state.queues[at].len() >= QUEUE_BOUND && !state.stopping {
                state = self.shared.room.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            if state.stopping {
                return;
            }
            state.queues[at].push_back(call);
            self.shared.work[at].notify_one();
            let more_work = state.queues[at].len() > state.idle[at];
            let start = more_work && state.workers[at] < lane.max_workers();
            if start {
                state.workers[at] += 1;
            }
            start
        };
        if start_worker && self.start_worker(lane).is_err() {
            let unserved = {
                let mut state = self.shared.lock();
                state.workers[at] -= 1;
                if state.workers[at] == 0 { std::mem::take(&mut state.queues[at]) } else { VecDeque::new() }
            };
            for call in unserved {
                call.answer(Err(libc::EAGAIN));
            }
        }
    }

    fn start_worker(&self, lane: Lane) -> std::io::Result<()> {
        let shared = Arc::clone(&self.shared);
        let thread = std::thread::Builder::new().name("odek-sandbox-worker".to_owned()).spawn(move || {
            // Once for the thread's life: it acts for callers that have none. Should it fail,
            // each handler's own check refuses its call (fails closed).
            let _ = crate::child::drop_thread_capabilities();
            serve(&shared, lane);
        })?;
        self.threads.lock().unwrap_or_else(PoisonError::into_inner).push(thread);
        Ok(())
    }

    /// Stops: calls still queued are answered `EIO` (their callers are being killed), a waiting
    /// [`Pool::submit`] returns, and the workers end once their current call is done. Waits for
    /// them until `deadline`, calling `abort` (which cuts a connect a worker is blocked in) every
    /// few milliseconds meanwhile; a worker still busy then is left to end on its own.
    pub(crate) fn stop(&self, deadline: Instant, abort: &dyn Fn()) {
        let abandoned = {
            let mut state = self.shared.lock();
            state.stopping = true;
            let abandoned: Vec<Pending> = state.queues.iter_mut().flat_map(std::mem::take).collect();
            abandoned
        };
        drop(abandoned);
        self.shared.room.notify_all();
        for work in &self.shared.work {
            work.notify_all();
        }
        let mut state = self.shared.lock();
        while state.workers.iter().sum::<usize>() > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            drop(state);
            abort();
            state = self.shared.lock();
            let wait = ABORT_INTERVAL.min(deadline - now);
            state = self.shared.ended.wait_timeout(state, wait).unwrap_or_else(PoisonError::into_inner).0;
        }
        let all_ended = state.workers.iter().sum::<usize>() == 0;
        drop(state);
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        if all_ended {
            for thread in threads {
                let _ = thread.join();
            }
        }
    }
}

/// One worker of `lane`: takes calls until the pool stops, each handled under a guard so a
/// panicking handler costs that call an `EIO` (its [`Pending`] dropped), never the worker.
fn serve(shared: &Shared, lane: Lane) {
    let at = lane.index();
    loop {
        let call = {
            let mut state = shared.lock();
            loop {
                if let Some(call) = state.queues[at].pop_front() {
                    shared.room.notify_one();
                    break Some(call);
                }
                if state.stopping {
                    break None;
                }
                state.idle[at] += 1;
                state = shared.work[at].wait(state).unwrap_or_else(PoisonError::into_inner);
                state.idle[at] -= 1;
            }
        };
        let Some(call) = call else { break };
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| (shared.handler)(call)));
    }
    let mut state = shared.lock();
    state.workers[at] -= 1;
    shared.ended.notify_all();
}

#[cfg(test)]
mod tests {
    use std::os::fd::FromRawFd;
    use std::sync::mpsc;

    use super::*;
    use crate::filter::AUDIT_ARCH;

    /// Makes the calling thread's `getppid` calls wait for `listener` (a filter applies to the
    /// thread that installs it and its later children only), and returns the listener.
    fn notify_getppid_of_this_thread() -> OwnedFd {
        let statement = |code: u32, k: u32| seccompiler::sock_filter { code: code as u16, jt: 0, jf: 0, k };
        let jump = |k: u32, jt: u8, jf: u8| seccompiler::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt,
            jf,
            k,
        };
        let program = vec![
            statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4),
            jump(AUDIT_ARCH, 0, 3),
            statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
            jump(libc::SYS_getppid as u32, 0, 1),
            statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_USER_NOTIF),
            statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
        ];
        #[allow(unsafe_code)]
        // SAFETY: prctl with integer arguments (no_new_privs, for this thread only).
        let set = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) };
        assert_eq!(set, 0);
        let listener = crate::child::install_filter(&program, true).unwrap();
        #[allow(unsafe_code)]
        // SAFETY: the kernel just made this descriptor for us.
        unsafe {
            OwnedFd::from_raw_fd(listener)
        }
    }

    /// `getppid` with a first argument the filter sees (the call ignores it): the answer.
    fn getppid_marked(mark: u64) -> Result<i64, i32> {
        #[allow(unsafe_code)]
        // SAFETY: getppid takes no arguments and touches no memory.
        let result = unsafe { libc::syscall(libc::SYS_getppid, mark) };
        if result < 0 { Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0)) } else { Ok(result) }
    }

    /// A thread whose `getppid` calls wait for the returned listener, and the receiver of what
    /// its calls (marked 1, 2…, `count` of them) were answered.
    fn caller(count: u64) -> (Arc<OwnedFd>, mpsc::Receiver<Vec<Result<i64, i32>>>) {
        let (sender, received) = mpsc::channel();
        let (answers, answered) = mpsc::channel();
        std::thread::spawn(move || {
            sender.send(notify_getppid_of_this_thread()).unwrap();
            let _ = answers.send((1..=count).map(getppid_marked).collect());
        });
        (Arc::new(received.recv().unwrap()), answered)
    }

    /// Receives the next call on `listener` (it must come within ten seconds).
    fn next_call(listener: &Arc<OwnedFd>) -> Pending {
        let mut fds = [nix::poll::PollFd::new(std::os::fd::AsFd::as_fd(&**listener), nix::poll::PollFlags::POLLIN)];
        let ready = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(10_000_u16)).unwrap();
        assert_eq!(ready, 1, "a call arrives (the next only once the one before is answered)");
        Pending::new(Arc::clone(listener), notify::receive(listener.as_raw_fd()).unwrap())
    }

    #[test]
    fn stopping_aborts_a_call_in_progress_and_waits_for_it_red() {
        let (listener, answered) = caller(1);
        let (release, released) = mpsc::channel::<()>();
        let (started, has_started) = mpsc::channel::<()>();
        let (released, started) = (Mutex::new(released), Mutex::new(started));
        let recorded = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handled = Arc::clone(&recorded);
        let pool = Pool::new(Box::new(move |call: Pending| {
            // Blocked, as in a connect, until stopping aborts it; then it records a refusal.
            let _ = started.lock().unwrap().send(());
            let _ = released.lock().unwrap().recv();
            handled.store(true, std::sync::atomic::Ordering::SeqCst);
            call.answer(Err(libc::EACCES));
        }));
        pool.submit(Lane::Network, next_call(&listener));
        has_started.recv_timeout(Duration::from_secs(30)).unwrap();
        pool.stop(Instant::now() + Duration::from_secs(30), &|| {
            let _ = release.send(());
        });
        assert!(recorded.load(std::sync::atomic::Ordering::SeqCst), "what the call recorded is there once stopped");
        assert_eq!(answered.recv_timeout(Duration::from_secs(30)).unwrap(), [Err(libc::EACCES)]);
    }

    #[test]
    fn a_panicking_handler_still_answers_its_call_and_its_worker_serves_the_next_red() {
        let (listener, answered) = caller(2);
        let pool = Pool::new(Box::new(|call: Pending| {
            assert_ne!(call.notification.args[0], 1, "a handler bug");
            call.answer(Ok(7));
        }));
        for _ in 0..2 {
            pool.submit(Lane::Metadata, next_call(&listener));
        }
        let answers = answered.recv_timeout(Duration::from_secs(30)).expect("both calls answered");
        assert_eq!(answers, [Err(libc::EIO), Ok(7)]);
        pool.stop(Instant::now() + Duration::from_secs(5), &|| {});
    }
}
