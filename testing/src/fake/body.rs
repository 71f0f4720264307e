//! Carries the fake's responses: a whole JSON document, or a watch streamed line by line.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Interval, Sleep};

use super::initial::{InitialEvents, Next};
use super::state::State;
use super::watch::{event_line, text};

/// The body of a response from [`FakeApiServer`](super::FakeApiServer).
#[derive(Debug)]
pub struct ResponseBody {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Full(Option<Bytes>),
    Watch(Box<WatchStream>),
}

/// An open watch: a streaming list's initial events, events from the state, a deadline and
/// periodic bookmarks.
#[derive(Debug)]
pub(crate) struct WatchStream {
    /// Sent before any event, until their end (a streaming list).
    pub(crate) initial: Option<InitialEvents>,
    /// Set when the initial events ended the watch (410 Gone).
    pub(crate) expired: bool,
    pub(crate) events: UnboundedReceiver<Bytes>,
    pub(crate) deadline: Pin<Box<Sleep>>,
    pub(crate) bookmarks: Option<Bookmarks>,
}

/// What a watch needs to send `BOOKMARK` events.
#[derive(Debug)]
pub(crate) struct Bookmarks {
    pub(crate) interval: Interval,
    pub(crate) state: Arc<Mutex<State>>,
    pub(crate) api_version: String,
    pub(crate) kind: String,
}

impl ResponseBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Self {
            inner: Inner::Full(Some(bytes.into())),
        }
    }

    /// The whole body of an answer that is not a watch (not yet read).
    pub(crate) fn full_bytes(&self) -> Option<&Bytes> {
        match &self.inner {
            Inner::Full(bytes) => bytes.as_ref(),
            Inner::Watch(_) => None,
        }
    }

    pub(crate) fn watch(stream: WatchStream) -> Self {
        Self {
            inner: Inner::Watch(Box::new(stream)),
        }
    }
}

/// The next of a streaming list's initial events, their end, or, while the state holds them
/// back, a bookmark (without the end annotation) at each bookmark interval.
fn initial_events(watch: &mut WatchStream, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
    let Some(initial) = &mut watch.initial else {
        return Poll::Ready(None);
    };
    let revision = initial.revision;
    match initial.next() {
        Next::Events(chunk) => return Poll::Ready(Some(chunk)),
        Next::End(line) => {
            initial.state.lock().bookmarks_sent += 1;
            watch.initial = None;
            return Poll::Ready(Some(line));
        }
        Next::Expired(line) => {
            watch.initial = None;
            watch.expired = true;
            return Poll::Ready(Some(line));
        }
        Next::Stalled => {}
    }
    if watch.deadline.as_mut().poll(cx).is_ready() {
        watch.expired = true;
        return Poll::Ready(None);
    }
    // Streaming lists require bookmarks; the interval also wakes the stall up to look again.
    let Some(bookmarks) = &mut watch.bookmarks else {
        return Poll::Pending;
    };
    if bookmarks.interval.poll_tick(cx).is_pending() {
        return Poll::Pending;
    }
    bookmarks.state.lock().bookmarks_sent += 1;
    let object = json!({
        "apiVersion": bookmarks.api_version,
        "kind": bookmarks.kind,
        "metadata": { "resourceVersion": revision.to_string() },
    });
    Poll::Ready(Some(event_line("BOOKMARK", &text(&object))))
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let watch = match &mut self.get_mut().inner {
            Inner::Full(bytes) => return Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Inner::Watch(watch) => watch,
        };
        if watch.expired {
            return Poll::Ready(None);
        }
        if watch.initial.is_some() {
            return initial_events(watch, cx).map(|line| line.map(|l| Ok(Frame::data(l))));
        }
        if let Poll::Ready(line) = watch.events.poll_recv(cx) {
            return Poll::Ready(line.map(|line| Ok(Frame::data(line))));
        }
        if watch.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some(bookmarks) = &mut watch.bookmarks
            && bookmarks.interval.poll_tick(cx).is_ready()
        {
            // Under the lock no event can slip in between: the bookmark's resourceVersion is
            // never ahead of an event this watch has still to send.
            let mut state = bookmarks.state.lock();
            if let Ok(line) = watch.events.try_recv() {
                return Poll::Ready(Some(Ok(Frame::data(line))));
            }
            state.bookmarks_sent += 1;
            let object = json!({
                "apiVersion": bookmarks.api_version,
                "kind": bookmarks.kind,
                "metadata": { "resourceVersion": state.revision().to_string() },
            });
            return Poll::Ready(Some(Ok(Frame::data(event_line(
                "BOOKMARK",
                &text(&object),
            )))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.inner, Inner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            Inner::Full(None) => SizeHint::with_exact(0),
            Inner::Watch(_) => SizeHint::default(),
        }
    }
}
