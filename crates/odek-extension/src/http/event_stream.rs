//! One SSE stream of a session ([`EventStream`]): the frames its [`pump`] writes (every line of
//! output, as stdio would write it, becomes the `data` of one event with an `id:`), a bounded
//! replay buffer a reconnecting client reads again from its `Last-Event-ID`, and the response
//! body a client's connection pulls from ([`EventBody`]).
//!
//! A stream has at most one reader at a time; a newer one replaces it. Frames the reader has
//! not taken are never dropped while it is attached: the pump waits instead, which pushes back
//! on the handlers exactly as a full stdout pipe does. Without a reader the oldest frames give
//! way. Not here: which stream a message belongs to (the service and `dispatch`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame as BodyFrame};
use tokio::sync::futures::OwnedNotified;
use tokio::sync::{Notify, mpsc};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use crate::transport::Outgoing;

/// 256 KiB: how much of its most recent output each SSE stream keeps, read or not (64 bytes
/// counted per frame besides its own). A client reconnecting with `Last-Event-ID` gets every
/// later event still inside it; older events are gone. A single event larger than this is
/// still sent whole; only its replay may be incomplete.
pub const REPLAY_BUFFER_BYTES: usize = 256 * 1024;

/// Largest payload of one frame; a longer line is sent as several frames of one event.
const MAX_FRAME_PAYLOAD_BYTES: usize = 64 * 1024;

/// What a frame costs in the buffer's accounting beyond its bytes, so that a flood of tiny
/// frames is bounded as well.
const FRAME_OVERHEAD_BYTES: usize = 64;

/// Sent between events when a stream has had nothing to say for a keep-alive interval: a
/// comment line, which SSE clients ignore.
const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n";

/// A piece of one event on the wire.
struct Frame {
    /// The event's number within its stream (from 1).
    seq: u64,
    /// Carries the event's `id:` line.
    starts_event: bool,
    /// Carries the blank line that ends the event.
    ends_event: bool,
    bytes: Bytes,
}

impl Frame {
    fn cost(&self) -> usize {
        self.bytes.len() + FRAME_OVERHEAD_BYTES
    }
}

/// The attached reader's position.
struct Reader {
    token: u64,
    /// Absolute index of the next frame it takes.
    next_index: u64,
    /// Events up to this number were seen already (its `Last-Event-ID`).
    after_event: u64,
    /// It took the start of an event but not yet its end.
    mid_event: bool,
}

#[derive(Default)]
struct StreamState {
    frames: VecDeque<Frame>,
    /// Absolute index of `frames[0]`.
    first_index: u64,
    buffered_bytes: usize,
    reader: Option<Reader>,
    next_reader_token: u64,
    /// The highest event number a reader took completely.
    delivered_events: u64,
    closed: bool,
}

impl StreamState {
    /// Evicts frames until `cost` more fit: read frames, or any frame when nobody reads.
    /// `false` when unread frames of the attached reader are in the way.
    fn make_room(&mut self, cost: usize) -> bool {
        loop {
            if self.buffered_bytes + cost <= REPLAY_BUFFER_BYTES || self.frames.is_empty() {
                return true;
            }
            if self.reader.as_ref().is_some_and(|reader| reader.next_index <= self.first_index) {
                return false;
            }
            if let Some(frame) = self.frames.pop_front() {
                self.first_index += 1;
                self.buffered_bytes -= frame.cost();
            }
        }
    }
}

/// What a reader finds when it looks.
enum Take {
    Frame(Bytes),
    /// Nothing yet; `between_events` says a keep-alive comment would not split an event.
    Wait {
        between_events: bool,
    },
    /// The stream is closed and drained, or this reader was replaced.
    End,
}

/// The stream was closed (its session ended) while a frame waited for room.
#[derive(Debug)]
pub(crate) struct StreamClosed;

/// One SSE stream: a POST's (key 1, 2, …) or the session's standalone `GET` stream (key 0).
/// Event ids are `<key>-<event number>`.
pub(crate) struct EventStream {
    key: u64,
    state: Mutex<StreamState>,
    /// Wakes the reader (new frames, closed, replaced) and the pump (room).
    changed: Arc<Notify>,
    /// The connection's flag for a listening standalone stream (see `Connection::listening`).
    listening: Option<Arc<AtomicBool>>,
}

impl EventStream {
    pub(crate) fn new(key: u64, listening: Option<Arc<AtomicBool>>) -> Arc<Self> {
        Arc::new(Self { key, state: Mutex::default(), changed: Arc::new(Notify::new()), listening })
    }

    fn lock(&self) -> MutexGuard<'_, StreamState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends a frame, waiting while the attached reader has not taken enough to make room.
    async fn push(&self, frame: Frame) -> Result<(), StreamClosed> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.lock();
                if state.closed {
                    return Err(StreamClosed);
                }
                if state.make_room(frame.cost()) {
                    state.buffered_bytes += frame.cost();
                    state.frames.push_back(frame);
                    drop(state);
                    self.changed.notify_waiters();
                    return Ok(());
                }
            }
            changed.await;
        }
    }

    /// No frame follows; the reader ends once it has taken the rest.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_waiters();
    }

    /// Makes a new reader the stream's only one and returns its token. It starts at the first
    /// event after number `after_event` still buffered, or, for `None`, after the last event
    /// a reader took completely.
    pub(crate) fn attach(&self, after_event: Option<u64>) -> u64 {
        let token = {
            let mut state = self.lock();
            let after_event = after_event.unwrap_or(state.delivered_events);
            state.next_reader_token += 1;
            let token = state.next_reader_token;
            let offset = state
                .frames
                .iter()
                .position(|frame| frame.starts_event && frame.seq > after_event)
                .unwrap_or(state.frames.len());
            let next_index = state.first_index + offset as u64;
            state.reader = Some(Reader { token, next_index, after_event, mid_event: false });
            token
        };
        if let Some(listening) = &self.listening {
            listening.store(true, Ordering::Release);
        }
        // The replaced reader ends, and a waiting pump may evict what the old one had read.
        self.changed.notify_waiters();
        token
    }

    fn detach(&self, token: u64) {
        let detached = {
            let mut state = self.lock();
            let current = state.reader.as_ref().is_some_and(|reader| reader.token == token);
            if current {
                state.reader = None;
            }
            current
        };
        if detached {
            if let Some(listening) = &self.listening {
                listening.store(false, Ordering::Release);
            }
            self.changed.notify_waiters();
        }
    }

    /// Whether a client is reading the stream right now.
    pub(crate) fn has_reader(&self) -> bool {
        self.lock().reader.is_some()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    fn take(&self, token: u64) -> Take {
        let (take, advanced) = {
            let mut state = self.lock();
            let StreamState { frames, first_index, reader, delivered_events, closed, .. } = &mut *state;
            let Some(reader) = reader.as_mut().filter(|reader| reader.token == token) else {
                return Take::End;
            };
            if reader.next_index < *first_index {
                reader.next_index = *first_index;
                reader.mid_event = false;
            }
            let start = reader.next_index;
            let take = loop {
                let Some(frame) = frames.get((reader.next_index - *first_index) as usize) else {
                    break if *closed { Take::End } else { Take::Wait { between_events: !reader.mid_event } };
                };
                reader.next_index += 1;
                // The rest of an event whose start it never took, or an event it saw before.
                if !reader.mid_event && (!frame.starts_event || frame.seq <= reader.after_event) {
                    continue;
                }
                reader.mid_event = !frame.ends_event;
                if frame.ends_event {
                    *delivered_events = (*delivered_events).max(frame.seq);
                }
                break Take::Frame(frame.bytes.clone());
            };
            (take, reader.next_index != start)
        };
        // What the reader moved past may now give way to a pump waiting for room.
        if advanced {
            self.changed.notify_waiters();
        }
        take
    }
}

/// Turns output into frames: each line (up to `\n`) is one event's `data`, split over frames
/// of at most [`MAX_FRAME_PAYLOAD_BYTES`]. A line may arrive in pieces (a raw stream); the
/// event stays open until its newline. A `\r` inside a line, which SSE would read as a line
/// break, becomes a second `data:` line of the same event (a `\n` once the client joins them).
struct Framer {
    key: u64,
    seq: u64,
    open: bool,
}

impl Framer {
    async fn write(&mut self, stream: &EventStream, mut bytes: &[u8]) -> Result<(), StreamClosed> {
        while !bytes.is_empty() {
            let line_end = bytes.iter().position(|&byte| byte == b'\n');
            let length = line_end.unwrap_or(bytes.len()).min(MAX_FRAME_PAYLOAD_BYTES);
            let ends_event = line_end == Some(length);
            let (payload, rest) = bytes.split_at(length);
            bytes = if ends_event { &rest[1..] } else { rest };
            stream.push(self.frame(payload, ends_event)).await?;
        }
        Ok(())
    }

    /// Ends an event left open by output that stopped mid-line.
    async fn finish(&mut self, stream: &EventStream) -> Result<(), StreamClosed> {
        if self.open { stream.push(self.frame(b"", true)).await } else { Ok(()) }
    }

    fn frame(&mut self, payload: &[u8], ends_event: bool) -> Frame {
        let starts_event = !self.open;
        let mut bytes = Vec::with_capacity(payload.len() + 48);
        if starts_event {
            self.seq += 1;
            let _ = write!(bytes, "id: {}-{}\ndata: ", self.key, self.seq);
        }
        for (index, part) in payload.split(|&byte| byte == b'\r').enumerate() {
            if index > 0 {
                bytes.extend_from_slice(b"\ndata: ");
            }
            bytes.extend_from_slice(part);
        }
        if ends_event {
            bytes.extend_from_slice(b"\n\n");
        }
        self.open = !ends_event;
        Frame { seq: self.seq, starts_event, ends_event, bytes: Bytes::from(bytes) }
    }

    async fn write_message(&mut self, stream: &EventStream, message: Outgoing) -> Result<(), StreamClosed> {
        match message {
            Outgoing::Bytes(bytes) | Outgoing::Reply(bytes) => self.write(stream, &bytes).await,
            Outgoing::Stream(mut chunks) => {
                while let Some(chunk) = chunks.recv().await {
                    self.write(stream, &chunk).await?;
                }
                Ok(())
            }
            Outgoing::Flush(done) => {
                let _ = done.send(());
                Ok(())
            }
            Outgoing::Shutdown => Ok(()),
        }
    }
}

/// Writes `first`, then everything that arrives on `receiver`, into `stream`, and closes it
/// once every sender is gone or `ended` fires (then whatever is still queued is dropped).
pub(crate) async fn pump(
    stream: Arc<EventStream>,
    first: Vec<Outgoing>,
    mut receiver: mpsc::Receiver<Outgoing>,
    ended: CancellationToken,
) {
    let mut framer = Framer { key: stream.key, seq: 0, open: false };
    let work = async {
        for message in first {
            framer.write_message(&stream, message).await?;
        }
        while let Some(message) = receiver.recv().await {
            framer.write_message(&stream, message).await?;
        }
        framer.finish(&stream).await
    };
    tokio::select! {
        _ = work => {}
        () = ended.cancelled() => {}
    }
    stream.close();
}

/// The response body of one reader: frames as the stream gets them, a keep-alive comment
/// between events when it is quiet, and the end once the stream is closed and drained (or
/// this reader was replaced). Dropping it (the client went away) detaches the reader.
pub(crate) struct EventBody {
    stream: Arc<EventStream>,
    token: u64,
    changed: Option<Pin<Box<OwnedNotified>>>,
    keep_alive: Pin<Box<Sleep>>,
    keep_alive_interval: Duration,
}

impl EventBody {
    /// A body for the reader `token` got from [`EventStream::attach`].
    pub(crate) fn new(stream: Arc<EventStream>, token: u64, keep_alive_interval: Duration) -> Self {
        let keep_alive = Box::pin(tokio::time::sleep(keep_alive_interval));
        Self { stream, token, changed: None, keep_alive, keep_alive_interval }
    }
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        loop {
            // Registered before looking, so a frame pushed in between still wakes this task.
            let changed = this.changed.get_or_insert_with(|| {
                let mut changed = Box::pin(Arc::clone(&this.stream.changed).notified_owned());
                changed.as_mut().enable();
                changed
            });
            match this.stream.take(this.token) {
                Take::Frame(bytes) => {
                    this.keep_alive.as_mut().reset(Instant::now() + this.keep_alive_interval);
                    return Poll::Ready(Some(Ok(BodyFrame::data(bytes))));
                }
                Take::End => return Poll::Ready(None),
                Take::Wait { between_events } => {
                    if changed.as_mut().poll(context).is_ready() {
                        this.changed = None;
                        continue;
                    }
                    if between_events && this.keep_alive.as_mut().poll(context).is_ready() {
                        this.keep_alive.as_mut().reset(Instant::now() + this.keep_alive_interval);
                        return Poll::Ready(Some(Ok(BodyFrame::data(Bytes::from_static(KEEP_ALIVE_COMMENT)))));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl Drop for EventBody {
    fn drop(&mut self) {
        self.stream.detach(self.token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_frames(stream: &EventStream, token: u64) -> Vec<u8> {
        let mut bytes = Vec::new();
        while let Take::Frame(frame) = stream.take(token) {
            bytes.extend_from_slice(&frame);
        }
        bytes
    }

    async fn write(stream: &Arc<EventStream>, messages: Vec<&[u8]>) {
        let (sender, receiver) = mpsc::channel(16);
        let first = messages.into_iter().map(|bytes| Outgoing::Bytes(bytes.to_vec())).collect();
        drop(sender);
        pump(Arc::clone(stream), first, receiver, CancellationToken::new()).await;
    }

    #[tokio::test]
    async fn each_line_is_one_event_with_an_id() {
        let stream = EventStream::new(3, None);
        let token = stream.attach(Some(0));
        write(&stream, vec![b"{\"a\":1}\n", b"x\ry\n\n", b"unterminated"]).await;
        assert_eq!(
            String::from_utf8(all_frames(&stream, token)).unwrap(),
            "id: 3-1\ndata: {\"a\":1}\n\nid: 3-2\ndata: x\ndata: y\n\nid: 3-3\ndata: \n\nid: 3-4\ndata: unterminated\n\n"
        );
        assert!(matches!(stream.take(token), Take::End));
    }

    #[tokio::test]
    async fn a_long_line_is_one_event_over_several_frames() {
        let stream = EventStream::new(1, None);
        let token = stream.attach(Some(0));
        let mut line = vec![b'x'; MAX_FRAME_PAYLOAD_BYTES * 2 + 5];
        line.push(b'\n');
        write(&stream, vec![&line]).await;
        let mut frames = 0;
        let mut bytes = Vec::new();
        while let Take::Frame(frame) = stream.take(token) {
            frames += 1;
            bytes.extend_from_slice(&frame);
        }
        assert_eq!(frames, 3);
        let expected = format!("id: 1-1\ndata: {}\n\n", "x".repeat(MAX_FRAME_PAYLOAD_BYTES * 2 + 5));
        assert_eq!(bytes, expected.as_bytes());
    }

    #[tokio::test]
    async fn a_reader_resumes_after_its_last_event_id() {
        let stream = EventStream::new(2, None);
        write(&stream, vec![b"one\n", b"two\n", b"three\n"]).await;
        let token = stream.attach(Some(1));
        assert_eq!(all_frames(&stream, token), b"id: 2-2\ndata: two\n\nid: 2-3\ndata: three\n\n");
        // Without an id: after the last event a reader took completely, so nothing.
        let token = stream.attach(None);
        assert!(matches!(stream.take(token), Take::End));
    }

    #[tokio::test]
    async fn a_replaced_reader_ends_and_the_new_one_starts_after_what_was_delivered() {
        let stream = EventStream::new(0, Some(Arc::new(AtomicBool::new(false))));
        let (sender, receiver) = mpsc::channel(16);
        tokio::spawn(pump(Arc::clone(&stream), Vec::new(), receiver, CancellationToken::new()));
        let old = stream.attach(None);
        assert!(stream.listening.as_ref().unwrap().load(Ordering::Acquire));
        sender.send(Outgoing::Bytes(b"first\n".to_vec())).await.unwrap();
        let (done, flushed) = tokio::sync::oneshot::channel();
        sender.send(Outgoing::Flush(done)).await.unwrap();
        flushed.await.unwrap();
        assert!(matches!(stream.take(old), Take::Frame(_)));
        sender.send(Outgoing::Bytes(b"second\n".to_vec())).await.unwrap();
        let (done, flushed) = tokio::sync::oneshot::channel();
        sender.send(Outgoing::Flush(done)).await.unwrap();
        flushed.await.unwrap();
        let new = stream.attach(None);
        assert!(matches!(stream.take(old), Take::End));
        assert!(matches!(stream.take(new), Take::Frame(frame) if &frame[..] == b"id: 0-2\ndata: second\n\n"));
        stream.detach(new);
        assert!(!stream.listening.as_ref().unwrap().load(Ordering::Acquire));
    }

    #[tokio::test]
    async fn without_a_reader_the_buffer_stays_bounded() {
        let stream = EventStream::new(1, None);
        let line = vec![b'y'; 1000];
        let lines: Vec<&[u8]> = (0..1000).map(|_| &line[..]).collect();
        write(&stream, lines).await;
        let state = stream.lock();
        assert!(state.buffered_bytes <= REPLAY_BUFFER_BYTES);
        assert!(state.first_index > 0, "the oldest frames gave way");
    }

    #[tokio::test]
    async fn an_attached_reader_that_does_not_read_holds_the_pump_back() {
        let stream = EventStream::new(1, None);
        let token = stream.attach(Some(0));
        let line = vec![b'z'; 1000];
        let (sender, receiver) = mpsc::channel(4096);
        let pumping = tokio::spawn(pump(Arc::clone(&stream), Vec::new(), receiver, CancellationToken::new()));
        for _ in 0..1000 {
            let mut bytes = line.clone();
            bytes.push(b'\n');
            sender.send(Outgoing::Bytes(bytes)).await.unwrap();
        }
        drop(sender);
        // Every event reaches the reader, none is evicted unread.
        let mut events = 0;
        loop {
            match stream.take(token) {
                Take::Frame(frame) => {
                    assert!(frame.starts_with(format!("id: 1-{}\n", events + 1).as_bytes()));
                    events += 1;
                }
                Take::End => break,
                Take::Wait { .. } => {
                    assert!(stream.lock().buffered_bytes <= REPLAY_BUFFER_BYTES);
                    tokio::task::yield_now().await;
                }
            }
        }
        assert_eq!(events, 1000);
        pumping.await.unwrap();
    }

    #[tokio::test]
    async fn closing_fails_a_waiting_push() {
        let stream = EventStream::new(1, None);
        let _token = stream.attach(Some(0));
        let filling = Bytes::from(vec![b'q'; REPLAY_BUFFER_BYTES - FRAME_OVERHEAD_BYTES]);
        stream.push(Frame { seq: 1, starts_event: true, ends_event: false, bytes: filling }).await.unwrap();
        let blocked = {
            let stream = Arc::clone(&stream);
            tokio::spawn(async move {
                let more = Bytes::from_static(b"more");
                stream.push(Frame { seq: 1, starts_event: false, ends_event: true, bytes: more }).await
            })
        };
        tokio::task::yield_now().await;
        assert!(!blocked.is_finished(), "the unread frame leaves no room");
        stream.close();
        assert!(blocked.await.unwrap().is_err());
    }
}
