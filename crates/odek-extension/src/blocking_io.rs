//! Blocking pipes beside the async transport: stdin and stdout when the kernel cannot wait on
//! them without a thread (a terminal, a regular file, stdout shared with stderr), and whatever
//! [`Server::run`](crate::Server::run) is given. Input gets one thread that copies bytes into an
//! in-memory pipe; output gets one thread that writes what the writer task hands it and answers
//! each flush once the bytes are written, with the write's error if it failed, so a flush still
//! means "written" and a failed write still ends serving at once. Framing and dispatch stay on
//! the async side.
//!
//! Where the stdio descriptors can be waited on directly, [`stdio`] returns them as tokio pipes
//! and no thread is involved.

use std::io::{self, Read, Write};
use std::thread;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};

use crate::Error;
use crate::server::log_to_stderr;

/// Bytes in flight between a blocking pipe's thread and the async side.
const BRIDGE_BYTES: usize = 64 * 1024;

/// Batches handed to an output thread and not yet written.
const OUTPUT_BATCHES: usize = 2;

/// The input side, whatever carries it.
pub(crate) type Input = Box<dyn AsyncRead + Unpin + Send>;

/// The output side: written by the runtime, or by a thread of its own.
pub(crate) enum Output {
    /// Waited on by the runtime (a tokio pipe, a socket half, any `AsyncWrite`), buffered.
    Async(BufWriter<Box<dyn AsyncWrite + Unpin + Send>>),
    /// A blocking writer on its own thread.
    Thread(ThreadWriter),
}

impl Output {
    pub(crate) fn of_async(output: Box<dyn AsyncWrite + Unpin + Send>) -> Self {
        Output::Async(BufWriter::with_capacity(BRIDGE_BYTES, output))
    }

    pub(crate) async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Output::Async(writer) => writer.write_all(bytes).await,
            Output::Thread(writer) => writer.write_all(bytes).await,
        }
    }

    /// Returns once everything written so far reached the output, or with the error that
    /// stopped it.
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Async(writer) => writer.flush().await,
            Output::Thread(writer) => writer.flush().await,
        }
    }
}

/// One unit of work for an output thread.
enum Job {
    Write(Vec<u8>),
    /// Flush, then answer with the first write or flush error so far, if any.
    Flush(oneshot::Sender<io::Result<()>>),
}

/// The async side of an output thread: collects bytes into batches of [`BRIDGE_BYTES`] and
/// hands them over; at most [`OUTPUT_BATCHES`] wait, then the writer task waits too.
pub(crate) struct ThreadWriter {
    batch: Vec<u8>,
    jobs: mpsc::Sender<Job>,
}

impl ThreadWriter {
    /// Starts the thread that writes to `output`.
    pub(crate) fn spawn<W: Write + Send + 'static>(mut output: W) -> Result<Self, Error> {
        let (jobs, mut queue) = mpsc::channel::<Job>(OUTPUT_BATCHES);
        thread::Builder::new()
            .name("odek-ext-writer".into())
            .spawn(move || {
                let mut failed: Option<io::Error> = None;
                while let Some(job) = queue.blocking_recv() {
                    match job {
                        Job::Write(bytes) => {
                            if failed.is_none()
                                && let Err(error) = output.write_all(&bytes)
                            {
                                failed = Some(error);
                            }
                        }
                        Job::Flush(answer) => {
                            if failed.is_none()
                                && let Err(error) = output.flush()
                            {
                                failed = Some(error);
                            }
                            let _ = answer.send(match &failed {
                                Some(error) => Err(io::Error::new(error.kind(), error.to_string())),
                                None => Ok(()),
                            });
                        }
                    }
                }
            })
            .map_err(|error| Error::io("spawn writer thread", error))?;
        Ok(ThreadWriter { batch: Vec::with_capacity(BRIDGE_BYTES), jobs })
    }

    async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.batch.extend_from_slice(bytes);
        if self.batch.len() >= BRIDGE_BYTES {
            self.hand_over().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> io::Result<()> {
        if !self.batch.is_empty() {
            self.hand_over().await?;
        }
        let (answer, answered) = oneshot::channel();
        self.jobs.send(Job::Flush(answer)).await.map_err(|_| thread_gone())?;
        answered.await.unwrap_or_else(|_| Err(thread_gone()))
    }

    async fn hand_over(&mut self) -> io::Result<()> {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BRIDGE_BYTES));
        self.jobs.send(Job::Write(batch)).await.map_err(|_| thread_gone())
    }
}

fn thread_gone() -> io::Error {
    io::Error::other("the stdout writer thread stopped")
}

/// `input` read on a thread of its own. A read error is logged and ends the input like EOF.
pub(crate) fn blocking_input<R: Read + Send + 'static>(mut input: R, runtime: &Handle) -> Result<Input, Error> {
    let (ours, mut theirs) = tokio::io::duplex(BRIDGE_BYTES);
    let runtime = runtime.clone();
    thread::Builder::new()
        .name("odek-ext-reader".into())
        .spawn(move || {
            let mut buffer = vec![0; BRIDGE_BYTES];
            loop {
                let read = match input.read(&mut buffer) {
                    Ok(0) => return,
                    Ok(read) => read,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => {
                        log_to_stderr(format_args!("read stdin: {error}"));
                        return;
                    }
                };
                // The server stopped reading: nothing more to deliver.
                if runtime.block_on(theirs.write_all(&buffer[..read])).is_err() {
                    return;
                }
            }
        })
        .map_err(|error| Error::io("spawn reader thread", error))?;
    Ok(Box::new(ours))
}

/// The process's stdin and stdout as async streams, and what serving them left to undo.
pub(crate) struct Stdio {
    pub(crate) input: Input,
    pub(crate) output: Output,
    pub(crate) pipe_modes: PipeModes,
}

/// Pipes the runtime waits on are switched to non-blocking mode, which belongs to the pipe's
/// open file description: the client that started the server may share it, as may a later
/// command on the same pipe (`{ server; other; } | client`). [`PipeModes::restore`] switches
/// them back once nothing reads or writes them any more; a serve that is cancelled instead
/// (its future dropped) leaves them as they are. Clients hand a server blocking pipes; one that
/// was already non-blocking comes back blocking.
#[derive(Default)]
pub(crate) struct PipeModes {
    #[cfg(unix)]
    stdin: Option<std::fs::File>,
    #[cfg(unix)]
    stdout: Option<std::fs::File>,
}

impl PipeModes {
    /// Blocking mode again. Call inside the runtime, once serving ended and nothing reads or
    /// writes the pipes any more.
    #[cfg(unix)]
    pub(crate) fn restore(self) {
        use tokio::net::unix::pipe;
        if let Some(file) = self.stdin
            && let Err(error) = pipe::Receiver::from_file(file).and_then(pipe::Receiver::into_blocking_fd)
        {
            log_to_stderr(format_args!("stdin stays non-blocking: {error}"));
        }
        if let Some(file) = self.stdout
            && let Err(error) = pipe::Sender::from_file(file).and_then(pipe::Sender::into_blocking_fd)
        {
            log_to_stderr(format_args!("stdout stays non-blocking: {error}"));
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn restore(self) {}
}

/// The process's stdin and stdout as async streams: as tokio pipes when they are pipes the
/// kernel can wait on (stdout only when it is not also stderr, whose writes must stay
/// blocking), else through a thread. Own duplicates of fds 0 and 1, so reads and writes bypass
/// std's locks and line buffering. A pipe tokio refuses for what it is (its access mode) gets a
/// thread; one it cannot register after switching it to non-blocking mode is an error, since a
/// thread would then meet `EAGAIN`.
#[cfg(unix)]
pub(crate) fn stdio(runtime: &Handle) -> Result<Stdio, Error> {
    use std::fs::File;
    use std::os::fd::{AsFd, BorrowedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    use tokio::net::unix::pipe;

    let duplicate = |fd: BorrowedFd<'_>, what: &'static str| {
        fd.try_clone_to_owned().map(File::from).map_err(|error| Error::io(what, error))
    };
    let stdin = duplicate(std::io::stdin().as_fd(), "duplicate stdin")?;
    let stdout = duplicate(std::io::stdout().as_fd(), "duplicate stdout")?;
    let is_fifo = |file: &File| file.metadata().is_ok_and(|metadata| metadata.file_type().is_fifo());
    let identity = |metadata: std::fs::Metadata| (metadata.dev(), metadata.ino());
    let stdout_is_stderr = match (stdout.metadata(), duplicate(std::io::stderr().as_fd(), "duplicate stderr")) {
        (Ok(out), Ok(err)) => err.metadata().is_ok_and(|err| identity(err) == identity(out)),
        _ => true,
    };
    let refused_as_is = |error: &io::Error| error.kind() == io::ErrorKind::InvalidInput;

    let mut pipe_modes = PipeModes::default();
    let input: Input = match is_fifo(&stdin).then(|| stdin.try_clone()) {
        Some(Ok(kept)) => match pipe::Receiver::from_file(stdin) {
            Ok(receiver) => {
                pipe_modes.stdin = Some(kept);
                Box::new(receiver)
            }
            Err(error) if refused_as_is(&error) => blocking_input(kept, runtime)?,
            Err(error) => return Err(Error::io("wait on stdin", error)),
        },
        _ => blocking_input(stdin, runtime)?,
    };
    let output = match (is_fifo(&stdout) && !stdout_is_stderr).then(|| stdout.try_clone()) {
        Some(Ok(kept)) => match pipe::Sender::from_file(stdout) {
            Ok(sender) => {
                pipe_modes.stdout = Some(kept);
                Output::of_async(Box::new(sender))
            }
            Err(error) if refused_as_is(&error) => Output::Thread(ThreadWriter::spawn(kept)?),
            Err(error) => {
                pipe_modes.restore();
                return Err(Error::io("wait on stdout", error));
            }
        },
        _ => Output::Thread(ThreadWriter::spawn(stdout)?),
    };
    Ok(Stdio { input, output, pipe_modes })
}

#[cfg(not(unix))]
pub(crate) fn stdio(runtime: &Handle) -> Result<Stdio, Error> {
    let input = blocking_input(std::io::stdin(), runtime)?;
    let output = Output::Thread(ThreadWriter::spawn(std::io::stdout())?);
    Ok(Stdio { input, output, pipe_modes: PipeModes::default() })
}
