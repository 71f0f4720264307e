//! Closes a connection without resetting it under a client that is still sending.

use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// How long a closing connection keeps reading what the client still sends.
pub(crate) const LINGER: Duration = Duration::from_secs(5);

/// A stream whose shutdown lingers: it closes the write side (TLS `close_notify`, then TCP
/// FIN), then reads and discards whatever the client still sends until the client closes too,
/// or for at most [`LINGER`].
///
/// An HTTP/1 server that answers before reading a whole request (a 413 for a body over the
/// limit) and then closes the socket with bytes still unread makes the kernel send a reset,
/// and a client that writes its whole body before reading (Python's `http.client`, most
/// libraries) loses the answer to it. Reading on for a moment lets that client finish writing
/// and read the answer, then see a clean end of stream: Apache's "lingering close".
#[derive(Debug)]
pub(crate) struct Lingering<S> {
    inner: S,
    /// Set once the write side is closed: when to stop reading.
    until: Option<Pin<Box<Sleep>>>,
}

impl<S> Lingering<S> {
    /// `inner`, lingering on shutdown.
    pub(crate) fn new(inner: S) -> Self {
        Self { inner, until: None }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Lingering<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Lingering<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.until.is_none() {
            ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
            this.until = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        let mut scratch = [0_u8; 8 * 1024];
        loop {
            if let Some(until) = &mut this.until
                && until.as_mut().poll(cx).is_ready()
            {
                return Poll::Ready(Ok(()));
            }
            let mut discarded = ReadBuf::new(&mut scratch);
            match ready!(Pin::new(&mut this.inner).poll_read(cx, &mut discarded)) {
                Ok(()) if !discarded.filled().is_empty() => {}
                // The client closed too (or broke the connection): nothing left to wait for.
                Ok(()) | Err(_) => return Poll::Ready(Ok(())),
            }
        }
    }
}
