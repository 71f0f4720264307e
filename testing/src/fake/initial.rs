//! Sends a streaming list's initial events, read from the state a chunk at a time, then its end.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::json;

use super::selector::Selector;
use super::state::{Key, State};
use super::status::Failure;
use super::watch::{event_line, line, text, wants};

/// The most bytes of initial events sent in one chunk.
const CHUNK: usize = 64 * 1024;

/// The initial events of one streaming list (`sendInitialEvents=true`): an `ADDED` event per
/// current object, then a bookmark annotated `k8s.io/initial-events-end: "true"`.
///
/// Objects are read as the stream reaches them, not copied at the start, so a stream of a
/// million objects holds one chunk at a time. An object changed meanwhile is sent as it is
/// now (its change event follows the bookmark, as for any watch); one deleted before it was
/// reached is sent as it was when the watch opened, its `DELETED` event after the bookmark,
/// as a real server sends its snapshot.
#[derive(Debug)]
pub(crate) struct InitialEvents {
    pub(crate) state: Arc<Mutex<State>>,
    pub(crate) resource: String,
    pub(crate) namespace: Option<String>,
    pub(crate) selector: Selector,
    pub(crate) object_first: bool,
    pub(crate) api_version: String,
    pub(crate) kind: String,
    /// The state's resourceVersion when the watch opened: the end bookmark's.
    pub(crate) revision: u64,
    /// [`State::expired_watches`] when the watch opened: a change ends it with 410 Gone.
    pub(crate) expired: u64,
    /// The key of the last object sent.
    pub(crate) after: Option<Key>,
    /// How many objects were sent.
    pub(crate) sent: usize,
}

/// What the initial events have next.
pub(crate) enum Next {
    /// A chunk of `ADDED` events.
    Events(Bytes),
    /// The bookmark that ends them: live events follow.
    End(Bytes),
    /// The watch expired (410 Gone): this `ERROR` event, then the response ends.
    Expired(Bytes),
    /// The state holds the rest back ([`State::initial_events_limit`]); try again later.
    Stalled,
}

impl InitialEvents {
    /// The next chunk of events, or the end of them.
    pub(crate) fn next(&mut self) -> Next {
        let state = self.state.lock();
        if state.expired_watches() != self.expired {
            let failure = Failure::gone(format!(
                "too old resource version: {} ({})",
                self.revision,
                state.revision()
            ));
            return Next::Expired(event_line("ERROR", &text(&failure.to_json())));
        }
        let room = state
            .initial_events_limit
            .map_or(usize::MAX, |limit| limit.saturating_sub(self.sent));
        let mut chunk = Vec::new();
        let mut taken = 0;
        let mut last = None;
        let mut reached_end = true;
        for (key, object) in state.objects_at(&self.resource, self.revision, self.after.as_ref()) {
            let wanted = wants(self.namespace.as_deref(), &self.selector, object);
            if chunk.len() >= CHUNK || (wanted && taken >= room) {
                reached_end = false;
                break;
            }
            last = Some(key);
            if wanted {
                chunk.extend_from_slice(&line(self.object_first, "ADDED", &text(object)));
                taken += 1;
            }
        }
        self.sent += taken;
        if let Some(last) = last {
            self.after = Some(last.into_owned());
        }
        drop(state);
        if !chunk.is_empty() {
            return Next::Events(Bytes::from(chunk));
        }
        if !reached_end {
            return Next::Stalled;
        }
        let bookmark = json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "metadata": {
                "resourceVersion": self.revision.to_string(),
                "annotations": { "k8s.io/initial-events-end": "true" },
            },
        });
        Next::End(event_line("BOOKMARK", &text(&bookmark)))
    }
}
