//! Opens a watch and splits its response body into event lines, copying none that arrive whole.
//!
//! kube's `Client::request_events` copies each line into a `String` and parses its object
//! twice when it is kept as text; here each line is a slice of the chunk it arrived in (only a
//! line split over chunks is copied, once), so the reflector parses every event exactly once.

use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::body::Body as HttpBody;
use kube::client::Body;
use kube::core::Status;

/// The lines of one watch response, in order.
pub(crate) struct WatchLines<B = Body> {
    body: B,
    /// The unread rest of the last chunk.
    chunk: Bytes,
    /// The start of a line whose end has not arrived yet.
    partial: BytesMut,
    /// How much of `chunk` the line returned last takes up.
    returned: usize,
    /// Whether the line returned last was joined in `partial`.
    joined: bool,
    /// The body's failure, once it failed.
    failed: Option<kube::Error>,
}

impl WatchLines {
    /// Sends the watch `request`; a response that is not a success is the server's `Status`.
    pub(crate) async fn open(
        client: &kube::Client,
        mut request: http::Request<Vec<u8>>,
    ) -> Result<Self, kube::Error> {
        // A compressed watch stream is gzipped one member per event, which the client's
        // decompression does not read past the first: ask for it plain, as kube does.
        request
            .headers_mut()
            .entry(http::header::ACCEPT_ENCODING)
            .or_insert(http::HeaderValue::from_static("identity"));
        let response = client.send(request.map(Body::from)).await?;
        let status = response.status();
        if status.is_client_error() || status.is_server_error() {
            return Err(refusal(status, response.into_body()).await);
        }
        Ok(Self::new(response.into_body()))
    }
}

impl<B> WatchLines<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    fn new(body: B) -> Self {
        Self {
            body,
            chunk: Bytes::new(),
            partial: BytesMut::new(),
            returned: 0,
            joined: false,
            failed: None,
        }
    }

    /// The next complete line (without its newline); `None` once the body ends. A line cut off
    /// by the end of the body, or by the connection breaking mid-chunk, ends the stream too:
    /// the reflector resumes from the last version it saw. Waiting for the next chunk longer
    /// than `idle` is [`Idle`]; a line already received is returned without a timer.
    pub(crate) async fn next(&mut self, idle: Duration) -> Result<Option<&[u8]>, Idle> {
        // What the line returned last took up: it is only borrowed until this call.
        self.chunk.advance(std::mem::take(&mut self.returned));
        if self.joined {
            self.partial.clear();
            self.joined = false;
        }
        loop {
            if let Some(end) = memchr::memchr(b'\n', &self.chunk) {
                self.returned = end + 1;
                if !self.partial.is_empty() {
                    self.partial.extend_from_slice(&self.chunk[..end]);
                    self.joined = true;
                    return Ok(Some(&self.partial));
                }
                if end == 0 {
                    self.chunk.advance(std::mem::take(&mut self.returned));
                    continue;
                }
                return Ok(Some(&self.chunk[..end]));
            }
            if !self.chunk.is_empty() {
                self.partial.extend_from_slice(&self.chunk);
                self.chunk.clear();
            }
            let frame = tokio::time::timeout(idle, self.body.frame()).await;
            match frame.map_err(|_| Idle)? {
                None => return Ok(None),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.chunk = data;
                    }
                }
                Some(Err(err)) if cut_off(&err) => return Ok(None),
                Some(Err(err)) => {
                    self.failed = Some(kube::Error::ReadEvents(std::io::Error::other(err)));
                    return Ok(None);
                }
            }
        }
    }

    /// Why the stream ended early, if it failed rather than ended.
    pub(crate) fn failure(&mut self) -> Option<kube::Error> {
        self.failed.take()
    }
}

/// No chunk arrived within the idle timeout.
#[derive(Debug)]
pub(crate) struct Idle;

/// Whether a body error is the connection ending mid-response (resumable), not a failure.
fn cut_off(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(err);
    while let Some(err) = source {
        if err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
            || err
                .downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_incomplete_message)
            || err.to_string().contains("unexpected EOF during chunk")
        {
            return true;
        }
        source = err.source();
    }
    false
}

/// The error of a refused watch: the server's `Status`, or one made from its status line and text.
async fn refusal(code: http::StatusCode, body: Body) -> kube::Error {
    let text = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => return err,
    };
    let status = serde_json::from_slice::<Status>(&text).unwrap_or_else(|_| {
        Status::failure(String::from_utf8_lossy(&text).trim(), "").with_code(code.as_u16())
    });
    kube::Error::Api(status.boxed())
}

#[cfg(test)]
mod tests {
    use http_body_util::StreamBody;
    use hyper::body::Frame;

    use super::*;

    type Chunks =
        StreamBody<futures::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, std::io::Error>>>>;

    fn lines_of(chunks: &[&'static str]) -> WatchLines<Chunks> {
        let frames = chunks
            .iter()
            .map(|c| Ok(Frame::data(Bytes::from_static(c.as_bytes()))));
        WatchLines::new(StreamBody::new(futures::stream::iter(
            frames.collect::<Vec<_>>(),
        )))
    }

    async fn collect(mut lines: WatchLines<Chunks>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(line) = lines.next(Duration::from_secs(5)).await.expect("not idle") {
            out.push(String::from_utf8_lossy(line).into_owned());
        }
        assert!(lines.failure().is_none());
        out
    }

    #[tokio::test]
    async fn lines_are_split_at_newlines_wherever_the_chunks_break() {
        let chunks = ["{\"a\":1}\n{\"b\"", ":2}\n\n{", "\"c\":3", "}\n{\"cut\""];
        assert_eq!(
            collect(lines_of(&chunks)).await,
            ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"],
            "blank lines are skipped and a line the body ends inside is dropped"
        );
    }
}
