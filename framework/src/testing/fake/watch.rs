//! Delivers changes to open watches as the real server does.

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::selector::Selector;

/// The kind of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

/// A change, kept in the history so watches can start from a past resourceVersion.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub(crate) revision: u64,
    pub(crate) resource: String,
    pub(crate) kind: EventType,
    pub(crate) object: Value,
    pub(crate) old: Option<Value>,
}

/// An open watch.
#[derive(Debug)]
pub(crate) struct Watcher {
    pub(crate) resource: String,
    pub(crate) namespace: Option<String>,
    pub(crate) selector: Selector,
    pub(crate) sender: UnboundedSender<Bytes>,
}

/// The line a watch sends for one event.
pub(crate) fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({ "type": kind, "object": object }).to_string();
    line.push('\n');
    Bytes::from(line)
}

impl Watcher {
    pub(crate) fn wants(&self, object: &Value) -> bool {
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
        self.namespace
            .as_deref()
            .is_none_or(|want| want == namespace)
            && self.selector.matches(object)
    }

    /// Sends an event if it concerns this watch, turning selector transitions into ADDED or
    /// DELETED like the real server; false when the watch is closed.
    pub(crate) fn deliver(&self, event: &Event) -> bool {
        if event.resource != self.resource {
            return true;
        }
        let now = self.wants(&event.object);
        let before = event.old.as_ref().is_some_and(|old| self.wants(old));
        let kind = match (event.kind, before, now) {
            (EventType::Added, _, true) | (EventType::Modified, false, true) => "ADDED",
            (EventType::Modified, true, true) => "MODIFIED",
            (EventType::Modified, true, false) | (EventType::Deleted, _, true) => "DELETED",
            _ => return !self.sender.is_closed(),
        };
        self.sender.send(event_line(kind, &event.object)).is_ok()
    }
}
