//! A whole response body that lets the request it answers end cleanly.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Body, Frame, SizeHint};

use super::linger::LINGER;

/// A whole response body that, over HTTP/2, holds the request body it answers until the
/// response is sent, then reads and discards the rest of it for up to [`LINGER`].
///
/// Dropping a request body that was not read to its end resets its stream: with `CANCEL` while
/// the response is still unsent, which a client reports as a stream error (curl: "Stream error
/// in the HTTP/2 framing layer") instead of the answer, and with `NO_ERROR` once the response
/// has ended, which RFC 9113 §8.1 defines as "stop sending, you have the answer". Clients that
/// write their whole body before reading (curl 7.x among them) still fail on the second, so
/// the rest is read (granting the client flow-control window) for a moment: the stream then
/// ends normally, or, from a client still sending after that, with `NO_ERROR`. This is the
/// HTTP/2 counterpart of [`Lingering`](super::Lingering).
pub(crate) struct Reply {
    body: Full<Bytes>,
    /// Reads the rest of the request body; run when the response is dropped (sent).
    discard_rest: Option<BoxFuture<'static, ()>>,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("body", &self.body)
            .field("holds_request", &self.discard_rest.is_some())
            .finish()
    }
}

impl Reply {
    /// `body`, holding nothing.
    pub(crate) fn new(body: Bytes) -> Self {
        Self {
            body: Full::new(body),
            discard_rest: None,
        }
    }

    /// `body`, holding `request` (a request body not read to its end) until it is sent.
    pub(crate) fn holding<B>(body: Bytes, mut request: B) -> Self
    where
        B: Body + Send + Unpin + 'static,
    {
        let discard_rest = async move { while let Some(Ok(_)) = request.frame().await {} };
        Self {
            body: Full::new(body),
            discard_rest: Some(Box::pin(discard_rest)),
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        // Outside a runtime (a test calling the router directly) the request is dropped here.
        if let Some(discard_rest) = self.discard_rest.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(tokio::time::timeout(LINGER, discard_rest));
        }
    }
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
