//! Blocking pipes as async streams: stdin and stdout when the kernel cannot wait on them
//! without a thread (a terminal, a regular file, a pipe shared with stderr), and whatever
//! [`Server::run`](crate::Server::run) is given. Each gets one thread that only copies bytes
//! through an in-memory pipe; framing and dispatch stay on the async side.
//!
//! Where the stdio descriptors can be waited on directly, [`stdio`] returns them as tokio pipes
//! and no thread is involved.

use std::io::{self, Read, Write};
use std::thread;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::Error;
use crate::server::log_to_stderr;

/// Bytes in flight between a blocking pipe's thread and the async side.
const BRIDGE_BYTES: usize = 64 * 1024;

/// The input side, whatever carries it.
pub(crate) type Input = Box<dyn AsyncRead + Unpin + Send>;
/// The output side.
pub(crate) type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// How a blocking output's thread ended. The async side only sees the in-memory pipe close;
/// this carries the write error that ended the thread, once it has written out what it was
/// handed.
pub(crate) struct OutputThread(Option<oneshot::Receiver<Option<io::Error>>>);

impl OutputThread {
    /// An output written by the runtime itself: no thread, nothing to wait for.
    pub(crate) fn none() -> Self {
        Self(None)
    }

    /// Waits for the thread to end (after the async side dropped its end) and returns its write
    /// error, if any.
    pub(crate) async fn finished(self) -> Option<io::Error> {
        match self.0 {
            Some(ended) => ended.await.ok().flatten(),
            None => None,
        }
    }
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

/// `output` written on a thread of its own, which flushes after each batch the writer hands
/// over. Its first write error ends it; [`OutputThread::finished`] returns that error.
pub(crate) fn blocking_output<W: Write + Send + 'static>(
    mut output: W,
    runtime: &Handle,
) -> Result<(Output, OutputThread), Error> {
    let (ours, mut theirs) = tokio::io::duplex(BRIDGE_BYTES);
    let (ended, ended_signal) = oneshot::channel();
    let runtime = runtime.clone();
    thread::Builder::new()
        .name("odek-ext-writer".into())
        .spawn(move || {
            let mut buffer = vec![0; BRIDGE_BYTES];
            let error = loop {
                let read = match runtime.block_on(theirs.read(&mut buffer)) {
                    Ok(0) | Err(_) => break None,
                    Ok(read) => read,
                };
                if let Err(error) = output.write_all(&buffer[..read]).and_then(|()| output.flush()) {
                    break Some(error);
                }
            };
            // Closing our end first: a writer still sending learns of the failure at once.
            drop(theirs);
            let _ = ended.send(error);
        })
        .map_err(|error| Error::io("spawn writer thread", error))?;
    Ok((Box::new(ours), OutputThread(Some(ended_signal))))
}

/// The process's stdin and stdout as async streams, and what serving them left to undo.
pub(crate) struct Stdio {
    pub(crate) input: Input,
    pub(crate) output: Output,
    pub(crate) output_thread: OutputThread,
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
    /// Blocking mode again. Call inside the runtime, after serving ended.
    #[cfg(unix)]
    pub(crate) fn restore(self) {
        use tokio::net::unix::pipe;
        if let Some(file) = self.stdin {
            let _ = pipe::Receiver::from_file(file).and_then(pipe::Receiver::into_blocking_fd);
        }
        if let Some(file) = self.stdout {
            let _ = pipe::Sender::from_file(file).and_then(pipe::Sender::into_blocking_fd);
        }
    }

    #[cfg(not(unix))]
    pub(crate) fn restore(self) {}
}

/// The process's stdin and stdout as async streams: as tokio pipes when they are pipes the
/// kernel can wait on (stdout only when it is not also stderr, whose writes must stay
/// blocking), else through a copying thread. Own duplicates of fds 0 and 1, so reads and writes
/// bypass std's locks and line buffering.
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

    let mut pipe_modes = PipeModes::default();
    let input: Input = match is_fifo(&stdin).then(|| stdin.try_clone()) {
        Some(Ok(kept)) => match pipe::Receiver::from_file(stdin) {
            Ok(receiver) => {
                pipe_modes.stdin = Some(kept);
                Box::new(receiver)
            }
            Err(_) => blocking_input(kept, runtime)?,
        },
        _ => blocking_input(stdin, runtime)?,
    };
    if is_fifo(&stdout)
        && !stdout_is_stderr
        && let Ok(kept) = stdout.try_clone()
    {
        match pipe::Sender::from_file(stdout) {
            Ok(sender) => {
                pipe_modes.stdout = Some(kept);
                return Ok(Stdio { input, output: Box::new(sender), output_thread: OutputThread::none(), pipe_modes });
            }
            Err(_) => {
                let (output, output_thread) = blocking_output(kept, runtime)?;
                return Ok(Stdio { input, output, output_thread, pipe_modes });
            }
        }
    }
    let (output, output_thread) = blocking_output(stdout, runtime)?;
    Ok(Stdio { input, output, output_thread, pipe_modes })
}

#[cfg(not(unix))]
pub(crate) fn stdio(runtime: &Handle) -> Result<Stdio, Error> {
    let input = blocking_input(std::io::stdin(), runtime)?;
    let (output, output_thread) = blocking_output(std::io::stdout(), runtime)?;
    Ok(Stdio { input, output, output_thread, pipe_modes: PipeModes::default() })
}
