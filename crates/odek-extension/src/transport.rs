//! The output side of a connection: the [`Outgoing`] messages every transport consumes, and
//! stdio's writer task, which owns the pipe.
//!
//! Everything that reaches stdout goes through [`Outgoing`] messages on one bounded queue, so
//! lines are never interleaved (over HTTP, each stream has such a queue; see `http`). The writer
//! batches whatever is queued into a buffer and flushes when the queue runs empty: one `write(2)`
//! for a burst of small replies, and a single copy per message. A [`RawStream`] takes the pipe
//! exclusively until it is dropped, which is how a handler streams a gigabyte-long line without
//! holding it in memory.
//!
//! Not here: reading stdin (see `server`), what carries the bytes (`blocking_io::Output`: the
//! runtime, or a thread for a blocking writer), and framing (`jsonrpc`).

use std::borrow::Cow;
use std::io;

use tokio::sync::{mpsc, oneshot};

use crate::Error;
use crate::blocking_io::Output;

/// Capacity of the outgoing queue, in messages. When it is full, async senders wait and the
/// reader stops reading, which pushes back on a client that does not read stdout.
pub(crate) const OUTGOING_QUEUE_MESSAGES: usize = 1024;

/// Capacity of one raw stream's chunk queue, in chunks: at most this many chunks are buffered
/// between a streaming handler and the pipe.
const STREAM_QUEUE_CHUNKS: usize = 4;

/// A chunk of raw output; `'static` slices (e.g. a constant run of padding) cost no allocation.
pub type Chunk = Cow<'static, [u8]>;

/// One unit of work for the writer.
pub(crate) enum Outgoing {
    /// Bytes written as given (normally one complete line).
    Bytes(Vec<u8>),
    /// One complete JSON-RPC response line, written like `Bytes`. Over HTTP a POST whose
    /// requests produced only these is answered as `application/json`.
    Reply(Vec<u8>),
    /// Exclusive use of the pipe until the sender side is dropped.
    Stream(mpsc::Receiver<Chunk>),
    /// Flush, then acknowledge.
    Flush(oneshot::Sender<()>),
    /// Flush and stop; later messages are dropped.
    Shutdown,
}

/// How the writer ended.
pub(crate) struct WriterExit {
    pub(crate) error: Option<io::Error>,
}

/// Starts the writer task on the current runtime. `on_failure` runs once, after the first write
/// error (the peer is gone); the task then keeps draining and dropping messages so that no
/// sender ever waits on a dead pipe.
pub(crate) fn spawn_writer(
    output: Output,
    on_failure: Box<dyn FnOnce() + Send>,
) -> (mpsc::Sender<Outgoing>, oneshot::Receiver<WriterExit>) {
    let (sender, receiver) = mpsc::channel(OUTGOING_QUEUE_MESSAGES);
    let (exit_sender, exit_receiver) = oneshot::channel();
    tokio::spawn(async move {
        let exit = write_loop(output, receiver, on_failure).await;
        let _ = exit_sender.send(exit);
    });
    (sender, exit_receiver)
}

/// The first write error, kept; the notification runs when it happens.
struct Failure {
    error: Option<io::Error>,
    on_failure: Option<Box<dyn FnOnce() + Send>>,
}

impl Failure {
    fn healthy(&self) -> bool {
        self.error.is_none()
    }

    fn record(&mut self, result: io::Result<()>) {
        if let Err(error) = result
            && self.error.is_none()
        {
            self.error = Some(error);
            if let Some(notify) = self.on_failure.take() {
                notify();
            }
        }
    }
}

/// Drops the output before returning: when the exit is sent, nothing writes stdout any more.
async fn write_loop(
    mut writer: Output,
    mut receiver: mpsc::Receiver<Outgoing>,
    on_failure: Box<dyn FnOnce() + Send>,
) -> WriterExit {
    let mut failure = Failure { error: None, on_failure: Some(on_failure) };
    while let Some(mut message) = receiver.recv().await {
        loop {
            match message {
                Outgoing::Bytes(bytes) | Outgoing::Reply(bytes) => {
                    if failure.healthy() {
                        failure.record(writer.write_all(&bytes).await);
                    }
                }
                Outgoing::Stream(mut chunks) => {
                    while let Some(chunk) = chunks.recv().await {
                        if failure.healthy() {
                            failure.record(writer.write_all(&chunk).await);
                        }
                    }
                }
                Outgoing::Flush(done) => {
                    if failure.healthy() {
                        failure.record(writer.flush().await);
                    }
                    let _ = done.send(());
                }
                Outgoing::Shutdown => {
                    if failure.healthy() {
                        failure.record(writer.flush().await);
                    }
                    return WriterExit { error: failure.error };
                }
            }
            match receiver.try_recv() {
                Ok(next) => message = next,
                Err(_) => break,
            }
        }
        if failure.healthy() {
            failure.record(writer.flush().await);
        }
    }
    if failure.healthy() {
        failure.record(writer.flush().await);
    }
    WriterExit { error: failure.error }
}

/// Exclusive, chunked access to stdout. Obtained from
/// [`CallContext::raw_stream`](crate::CallContext::raw_stream).
///
/// While a `RawStream` is alive nothing else is written, so everything written through it
/// forms one uninterrupted byte sequence; dropping it releases the pipe. At most a few chunks
/// are buffered, so streaming a gigabyte costs a few chunks of memory. For test fixtures that
/// must produce exact bytes; a normal server never needs it.
#[derive(Debug)]
pub struct RawStream {
    pub(crate) chunks: mpsc::Sender<Chunk>,
}

impl RawStream {
    pub(crate) async fn open(outgoing: &mpsc::Sender<Outgoing>) -> Result<Self, Error> {
        let (chunks, receiver) = mpsc::channel(STREAM_QUEUE_CHUNKS);
        outgoing.send(Outgoing::Stream(receiver)).await.map_err(|_| Error::ConnectionClosed)?;
        Ok(Self { chunks })
    }

    /// Queues `chunk`; waits while the writer is behind.
    pub async fn write(&self, chunk: impl Into<Chunk>) -> Result<(), Error> {
        self.chunks.send(chunk.into()).await.map_err(|_| Error::ConnectionClosed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocking_io::ThreadWriter;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll};
    use tokio::io::AsyncWrite;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl AsyncWrite for Shared {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Poll::Ready(Ok(bytes.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    struct Broken;

    impl AsyncWrite for Broken {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<io::Result<usize>> {
            Poll::Ready(Err(io::Error::from(io::ErrorKind::BrokenPipe)))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Err(io::Error::from(io::ErrorKind::BrokenPipe)))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_stream_is_never_interleaved_with_other_messages() {
        let output = Shared::default();
        let (sender, exit) = spawn_writer(Output::of_async(Box::new(output.clone())), Box::new(|| {}));
        let stream = RawStream::open(&sender).await.unwrap();
        sender.send(Outgoing::Bytes(b"after\n".to_vec())).await.unwrap();
        stream.write(&b"part1 "[..]).await.unwrap();
        stream.write(b"part2\n".to_vec()).await.unwrap();
        drop(stream);
        sender.send(Outgoing::Shutdown).await.unwrap();
        assert!(exit.await.unwrap().error.is_none());
        assert_eq!(output.0.lock().unwrap().as_slice(), b"part1 part2\nafter\n");
    }

    #[tokio::test]
    async fn a_broken_pipe_is_reported_once_and_senders_never_block() {
        let (tell, told) = oneshot::channel();
        let (sender, exit) = spawn_writer(
            Output::of_async(Box::new(Broken)),
            Box::new(move || {
                let _ = tell.send(());
            }),
        );
        for _ in 0..(OUTGOING_QUEUE_MESSAGES * 2) {
            sender.send(Outgoing::Bytes(b"x\n".to_vec())).await.unwrap();
        }
        told.await.unwrap();
        sender.send(Outgoing::Shutdown).await.unwrap();
        let exit = exit.await.unwrap();
        assert_eq!(exit.error.unwrap().kind(), io::ErrorKind::BrokenPipe);
    }

    /// A blocking writer that takes its time and records what reached it.
    #[derive(Clone, Default)]
    struct Slow(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Slow {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            std::thread::sleep(std::time::Duration::from_millis(100));
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn on_a_thread_a_flush_returns_only_once_the_bytes_are_written() {
        let output = Slow::default();
        let (sender, exit) =
            spawn_writer(Output::Thread(ThreadWriter::spawn(output.clone()).unwrap()), Box::new(|| {}));
        sender.send(Outgoing::Bytes(b"marker\n".to_vec())).await.unwrap();
        let (done, flushed) = oneshot::channel();
        sender.send(Outgoing::Flush(done)).await.unwrap();
        flushed.await.unwrap();
        assert_eq!(output.0.lock().unwrap().as_slice(), b"marker\n");
        sender.send(Outgoing::Shutdown).await.unwrap();
        assert!(exit.await.unwrap().error.is_none());
    }

    struct Refusing;

    impl std::io::Write for Refusing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk on fire"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn on_a_thread_a_failed_write_is_reported_without_more_output() {
        let (tell, told) = oneshot::channel();
        let (sender, exit) = spawn_writer(
            Output::Thread(ThreadWriter::spawn(Refusing).unwrap()),
            Box::new(move || {
                let _ = tell.send(());
            }),
        );
        // One reply and nothing after it: the failure must still be noticed.
        sender.send(Outgoing::Reply(b"{}\n".to_vec())).await.unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), told).await.unwrap().unwrap();
        sender.send(Outgoing::Shutdown).await.unwrap();
        let error = exit.await.unwrap().error.unwrap();
        assert_eq!(error.to_string(), "disk on fire");
    }
}
