//! The output side of a connection: the [`Outgoing`] messages every transport consumes, and
//! stdio's writer thread, which owns the pipe.
//!
//! Everything that reaches stdout goes through [`Outgoing`] messages on one bounded queue, so
//! lines are never interleaved (over HTTP, each stream has such a queue; see `http`). The writer batches whatever is queued into a `BufWriter` and
//! flushes when the queue runs empty: one `write(2)` for a burst of small replies, and a single
//! copy per message. A [`RawStream`] takes the pipe exclusively until it is dropped, which is how
//! a handler streams a gigabyte-long line without holding it in memory.
//!
//! Not here: reading stdin (see `server`), and framing (see `jsonrpc`).

use std::borrow::Cow;
use std::io::{self, BufWriter, Write};
use std::thread;

use tokio::sync::{mpsc, oneshot};

use crate::Error;

/// Capacity of the outgoing queue, in messages. When it is full, async senders wait and the
/// reader thread blocks, which pushes back on a client that does not read stdout.
pub(crate) const OUTGOING_QUEUE_MESSAGES: usize = 1024;

/// Capacity of one raw stream's chunk queue, in chunks: at most this many chunks are buffered
/// between a streaming handler and the pipe.
const STREAM_QUEUE_CHUNKS: usize = 4;

/// Size of the writer's buffer in bytes; larger writes go to the pipe directly.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// A chunk of raw output; `'static` slices (e.g. a constant run of padding) cost no allocation.
pub type Chunk = Cow<'static, [u8]>;

/// One unit of work for the writer thread.
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

/// How the writer thread ended.
pub(crate) struct WriterExit {
    pub(crate) error: Option<io::Error>,
}

/// Starts the writer thread. `on_failure` runs once, on the writer thread, after the first
/// write error (the peer is gone); the thread then keeps draining and dropping messages so that
/// no sender ever blocks on a dead pipe.
pub(crate) fn spawn_writer(
    output: Box<dyn Write + Send>,
    on_failure: Box<dyn FnOnce() + Send>,
) -> Result<(mpsc::Sender<Outgoing>, oneshot::Receiver<WriterExit>), Error> {
    let (sender, receiver) = mpsc::channel(OUTGOING_QUEUE_MESSAGES);
    let (exit_sender, exit_receiver) = oneshot::channel();
    thread::Builder::new()
        .name("odek-ext-writer".into())
        .spawn(move || {
            let exit = write_loop(output, receiver, on_failure);
            let _ = exit_sender.send(exit);
        })
        .map_err(|error| Error::io("spawn writer thread", error))?;
    Ok((sender, exit_receiver))
}

fn write_loop(
    output: Box<dyn Write + Send>,
    mut receiver: mpsc::Receiver<Outgoing>,
    on_failure: Box<dyn FnOnce() + Send>,
) -> WriterExit {
    let mut writer = BufWriter::with_capacity(WRITE_BUFFER_BYTES, output);
    let mut failure: Option<io::Error> = None;
    let mut on_failure = Some(on_failure);
    let mut record = |result: io::Result<()>, failure: &mut Option<io::Error>| {
        if let Err(error) = result
            && failure.is_none()
        {
            *failure = Some(error);
            if let Some(notify) = on_failure.take() {
                notify();
            }
        }
    };
    while let Some(mut message) = receiver.blocking_recv() {
        loop {
            match message {
                Outgoing::Bytes(bytes) | Outgoing::Reply(bytes) => {
                    if failure.is_none() {
                        record(writer.write_all(&bytes), &mut failure);
                    }
                }
                Outgoing::Stream(mut chunks) => {
                    while let Some(chunk) = chunks.blocking_recv() {
                        if failure.is_none() {
                            record(writer.write_all(&chunk), &mut failure);
                        }
                    }
                }
                Outgoing::Flush(done) => {
                    if failure.is_none() {
                        record(writer.flush(), &mut failure);
                    }
                    let _ = done.send(());
                }
                Outgoing::Shutdown => {
                    if failure.is_none() {
                        record(writer.flush(), &mut failure);
                    }
                    return WriterExit { error: failure };
                }
            }
            match receiver.try_recv() {
                Ok(next) => message = next,
                Err(_) => break,
            }
        }
        if failure.is_none() {
            record(writer.flush(), &mut failure);
        }
    }
    if failure.is_none() {
        record(writer.flush(), &mut failure);
    }
    WriterExit { error: failure }
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
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }

    #[tokio::test]
    async fn a_stream_is_never_interleaved_with_other_messages() {
        let output = Shared::default();
        let (sender, exit) = spawn_writer(Box::new(output.clone()), Box::new(|| {})).unwrap();
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
            Box::new(Broken),
            Box::new(move || {
                let _ = tell.send(());
            }),
        )
        .unwrap();
        for _ in 0..(OUTGOING_QUEUE_MESSAGES * 2) {
            sender.send(Outgoing::Bytes(b"x\n".to_vec())).await.unwrap();
        }
        told.await.unwrap();
        sender.send(Outgoing::Shutdown).await.unwrap();
        let exit = exit.await.unwrap();
        assert_eq!(exit.error.unwrap().kind(), io::ErrorKind::BrokenPipe);
    }
}
