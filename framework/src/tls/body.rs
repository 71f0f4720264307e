//! Reads a request body up to a size limit.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Limited};
use hyper::body::Incoming;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The body is larger than the limit.
    #[error("the request body is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The connection failed while reading it.
    #[error("reading the request body")]
    Read(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The whole body, or [`BodyError::TooLarge`] as soon as more than `limit` bytes arrive (a
/// `Content-Length` above the limit is refused before anything is read).
pub(crate) async fn read_limited(body: Incoming, limit: usize) -> Result<Bytes, BodyError> {
    use hyper::body::Body as _;
    if body
        .size_hint()
        .exact()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(BodyError::TooLarge { limit });
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge { limit }),
        Err(e) => Err(BodyError::Read(e)),
    }
}
