//! The connections `odek serve` holds: at most [`MAX_CONNECTIONS`] open at once (one past it is
//! closed as soon as it is accepted, so idle clients cannot grow memory without bound), each
//! with `TCP_NODELAY` (an event goes out when it is written); and the open-file limit raised
//! so that bound, not the default 1024 descriptors, is what a crowd of clients meets.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Connections open at once.
pub const MAX_CONNECTIONS: usize = 2048;

/// How long accepting pauses after the OS refused (out of descriptors, say).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The listener with its bound.
pub struct Bounded {
    inner: TcpListener,
    open: Arc<Semaphore>,
}

impl Bounded {
    pub fn new(inner: TcpListener) -> Bounded {
        raise_open_file_limit();
        Bounded { inner, open: Arc::new(Semaphore::new(MAX_CONNECTIONS)) }
    }
}

/// An accepted connection, holding its place among [`MAX_CONNECTIONS`] until it is dropped.
pub struct Held {
    stream: TcpStream,
    _place: OwnedSemaphorePermit,
}

impl axum::serve::Listener for Bounded {
    type Io = Held;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Held, SocketAddr) {
        loop {
            let Ok((stream, addr)) = self.inner.accept().await else {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            };
            // Past the bound the connection is dropped, which closes it.
            if let Ok(place) = Arc::clone(&self.open).try_acquire_owned() {
                let _ = stream.set_nodelay(true);
                return (Held { stream, _place: place }, addr);
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl AsyncRead for Held {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Held {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The soft open-file limit raised to the hard one (at most what the connections, the runs'
/// servers and their pipes need), so the connection bound is reached before the OS's.
fn raise_open_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    const ENOUGH: u64 = 65_536;
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let wanted = hard.min(ENOUGH);
        if soft < wanted {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, wanted, hard);
        }
    }
}
