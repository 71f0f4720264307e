//! Reads a request body up to a size limit, draining a modest excess so the refusal reaches
//! the client on a connection that carries on.

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::body::Body;

/// How many bytes past the limit an HTTP/1 server reads and throws away before refusing a
/// body, so that a client that sends its whole body before reading the answer (most do) gets
/// the 413 on a connection it can reuse: a body only a little too large is the usual mistake.
/// A larger excess is refused at once and the connection closed (lingering, see
/// [`Lingering`](super::Lingering), so the answer still arrives).
pub(crate) const DRAIN_LIMIT: usize = 8 * 1024 * 1024;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The body is larger than the limit.
    #[error("the request body is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
        /// Whether the whole body was read (drained), so the connection can carry on.
        drained: bool,
    },
    /// The connection failed while reading it.
    #[error("reading the request body")]
    Read(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The whole of `body`, or [`BodyError::TooLarge`] when it has more than `limit` bytes. A body
/// up to `drain` bytes over is read to its end first (`drained`); a larger one, or one whose
/// `Content-Length` already says so, is refused as soon as that is known, with the rest unread.
pub(crate) async fn read_limited<B>(
    body: &mut B,
    limit: usize,
    drain: usize,
) -> Result<Bytes, BodyError>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let give_up = limit.saturating_add(drain);
    let too_large = |drained| BodyError::TooLarge { limit, drained };
    if body
        .size_hint()
        .exact()
        .is_some_and(|length| length > give_up as u64)
    {
        return Err(too_large(false));
    }
    let mut collected = BytesMut::new();
    let mut seen = 0_usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|e| BodyError::Read(e.into()))?.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if seen > give_up {
            return Err(too_large(false));
        }
        if seen <= limit {
            collected.extend_from_slice(&data);
        }
    }
    if seen > limit {
        return Err(too_large(true));
    }
    Ok(collected.freeze())
}
