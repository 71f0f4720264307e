//! Opens a watch and splits its response body into event lines, copying none that arrive whole.
//!
//! kube's `Client::request_events` copies each line into a `String` and parses its object
//! twice when it is kept as text; here each line shares the chunk it arrived in (only a line
//! split over chunks is copied, once), so the reflector parses every event exactly once, and
//! can hand lines that are already there to another thread (see `decode_ahead`).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::FutureExt as _;
use http_body_util::BodyExt as _;
use hyper::body::{Body as HttpBody, Frame};
use kube::client::Body;
use kube::core::Status;

/// The lines of one watch response, in order.
pub(crate) struct WatchLines<B = Body> {
    body: B,
    /// The unread rest of the last chunk.
    chunk: Bytes,
    /// The start of a line whose end has not arrived yet.
    partial: BytesMut,
    /// Whether the body has ended (or failed): no more chunks will come.
    ended: bool,
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
    pub(crate) fn new(body: B) -> Self {
        Self {
            body,
            chunk: Bytes::new(),
            partial: BytesMut::new(),
            ended: false,
            failed: None,
        }
    }

    /// The next complete line (without its newline); `None` once the body ends. A line cut off
    /// by the end of the body, or by the connection breaking mid-chunk, ends the stream too:
    /// the reflector resumes from the last version it saw. Waiting for the next chunk longer
    /// than `idle` is [`Idle`]; a line already received is returned without a timer.
    pub(crate) async fn next(&mut self, idle: Duration) -> Result<Option<Bytes>, Idle> {
        loop {
            if let Some(line) = self.line_in_chunk() {
                return Ok(Some(line));
            }
            if self.ended {
                return Ok(None);
            }
            let frame = tokio::time::timeout(idle, self.body.frame()).await;
            self.receive(frame.map_err(|_| Idle)?);
        }
    }

    /// The next complete line if it has arrived already, in the chunk at hand or in chunks the
    /// body has ready; `None` if it would have to be waited for (or the body has ended).
    pub(crate) fn buffered(&mut self) -> Option<Bytes> {
        loop {
            if let Some(line) = self.line_in_chunk() {
                return Some(line);
            }
            if self.ended {
                return None;
            }
            let frame = self.body.frame().now_or_never()?;
            self.receive(frame);
        }
    }

    /// Adds to `batch` the lines that have arrived, until it holds `max_lines` lines or
    /// `max_bytes` bytes; returns the bytes it holds. While lines come several at once (the
    /// server is behind: it sends events one to a chunk only when it has no more), gives the
    /// connection's task a turn to read the next chunks, so that a backlog is gathered into one
    /// batch; a line that came alone is left as it is.
    pub(crate) async fn gather(
        &mut self,
        batch: &mut Vec<Bytes>,
        max_lines: usize,
        max_bytes: usize,
    ) -> usize {
        let mut bytes: usize = batch.iter().map(Bytes::len).sum();
        let mut before = 0;
        loop {
            while batch.len() < max_lines
                && bytes < max_bytes
                && let Some(line) = self.buffered()
            {
                bytes += line.len();
                batch.push(line);
            }
            let now = batch.len();
            if now < 2 || now >= max_lines || bytes >= max_bytes || now == before {
                return bytes;
            }
            before = now;
            tokio::task::yield_now().await;
        }
    }

    /// The next complete line in the chunk at hand (blank lines skipped).
    fn line_in_chunk(&mut self) -> Option<Bytes> {
        while let Some(end) = memchr::memchr(b'\n', &self.chunk) {
            let mut line = self.chunk.split_to(end + 1);
            line.truncate(end);
            if !self.partial.is_empty() {
                self.partial.extend_from_slice(&line);
                return Some(self.partial.split().freeze());
            }
            if !line.is_empty() {
                return Some(line);
            }
        }
        None
    }

    /// Takes in what the body gave: a chunk, its end, or its failure. What is left of the chunk
    /// before it (no newline) is the start of a line.
    fn receive(&mut self, frame: Option<Result<Frame<Bytes>, B::Error>>) {
        if !self.chunk.is_empty() {
            self.partial.extend_from_slice(&self.chunk);
            self.chunk.clear();
        }
        match frame {
            None => self.ended = true,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    self.chunk = data;
                }
            }
            Some(Err(err)) => {
                self.ended = true;
                if !cut_off(&err) {
                    self.failed = Some(kube::Error::ReadEvents(std::io::Error::other(err)));
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
pub(super) async fn refusal(code: http::StatusCode, body: Body) -> kube::Error {
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
    use futures::channel::mpsc;
    use http_body_util::StreamBody;

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
            out.push(String::from_utf8_lossy(&line).into_owned());
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

    type Fed = StreamBody<mpsc::UnboundedReceiver<Result<Frame<Bytes>, std::io::Error>>>;

    fn feed(tx: &mpsc::UnboundedSender<Result<Frame<Bytes>, std::io::Error>>, chunk: &'static str) {
        tx.unbounded_send(Ok(Frame::data(Bytes::from_static(chunk.as_bytes()))))
            .expect("the lines are listening");
    }

    fn text(line: Option<Bytes>) -> Option<String> {
        line.map(|l| String::from_utf8_lossy(&l).into_owned())
    }

    #[tokio::test]
    async fn buffered_lines_come_from_every_chunk_that_has_arrived_and_none_is_waited_for() {
        let (tx, rx) = mpsc::unbounded();
        let mut lines: WatchLines<Fed> = WatchLines::new(StreamBody::new(rx));
        assert_eq!(text(lines.buffered()), None, "nothing has arrived");
        feed(&tx, "{\"a\":1}\n{\"b\"");
        feed(&tx, ":2}\n{\"c\"");
        assert_eq!(text(lines.buffered()).as_deref(), Some("{\"a\":1}"));
        assert_eq!(
            text(lines.buffered()).as_deref(),
            Some("{\"b\":2}"),
            "a line joined across two chunks that have both arrived"
        );
        assert_eq!(
            text(lines.buffered()),
            None,
            "the rest of the line has not arrived"
        );
        feed(&tx, ":3}\n");
        drop(tx);
        let idle = Duration::from_secs(5);
        assert_eq!(
            text(lines.next(idle).await.expect("not idle")).as_deref(),
            Some("{\"c\":3}"),
            "the line kept its start while the body was waited for"
        );
        assert_eq!(text(lines.buffered()), None);
        assert_eq!(text(lines.next(idle).await.expect("not idle")), None);
        assert!(lines.failure().is_none(), "the body ended, it did not fail");
    }

    #[tokio::test]
    async fn a_failure_seen_while_taking_buffered_lines_ends_the_stream_and_is_reported() {
        let (tx, rx) = mpsc::unbounded();
        let mut lines: WatchLines<Fed> = WatchLines::new(StreamBody::new(rx));
        feed(&tx, "{\"a\":1}\n");
        tx.unbounded_send(Err(std::io::Error::other("reset by peer")))
            .expect("the lines are listening");
        assert_eq!(text(lines.buffered()).as_deref(), Some("{\"a\":1}"));
        assert_eq!(text(lines.buffered()), None);
        feed(&tx, "{\"after\":1}\n");
        let next = lines.next(Duration::from_secs(5)).await.expect("not idle");
        assert_eq!(text(next), None, "nothing is read past the failure");
        let failure = lines.failure().map(|e| e.to_string()).unwrap_or_default();
        assert!(failure.contains("reset by peer"), "{failure}");
    }

    #[tokio::test]
    async fn a_gathered_batch_stops_at_its_line_or_byte_limit_and_the_rest_stays_for_the_next() {
        let (tx, rx) = mpsc::unbounded();
        let mut lines: WatchLines<Fed> = WatchLines::new(StreamBody::new(rx));
        feed(
            &tx,
            "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n{\"n\":5}\n",
        );
        feed(&tx, "{\"n\":6}\n{\"n\":7}\n");
        let mut batch = Vec::new();
        let bytes = lines.gather(&mut batch, 3, 1 << 20).await;
        assert_eq!(batch.len(), 3, "at most three lines");
        assert_eq!(bytes, 21, "three lines of seven bytes");
        let mut batch = Vec::new();
        let bytes = lines.gather(&mut batch, 100, 10).await;
        assert_eq!(
            (batch.len(), bytes),
            (2, 14),
            "the line that reaches ten bytes is the last"
        );
        let mut batch = Vec::new();
        lines.gather(&mut batch, 100, 1 << 20).await;
        let rest: Vec<_> = batch.into_iter().map(|l| text(Some(l))).collect();
        assert_eq!(
            rest,
            [Some("{\"n\":6}".to_owned()), Some("{\"n\":7}".to_owned())],
            "the rest, across the chunks that have arrived, in order"
        );
    }
}
