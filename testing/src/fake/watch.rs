//! Delivers changes to open watches as the real server does.

use bytes::Bytes;
use serde_json::Value;
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
    /// `object` as JSON, written once and shared by every watch that sends it.
    pub(crate) text: Bytes,
    pub(crate) old: Option<Value>,
}

/// An open watch.
#[derive(Debug)]
pub(crate) struct Watcher {
    pub(crate) resource: String,
    pub(crate) namespace: Option<String>,
    pub(crate) selector: Selector,
    pub(crate) sender: UnboundedSender<Bytes>,
    /// Writes each event's object before its type (a server unlike the real one).
    pub(crate) object_first: bool,
}

/// `object` as JSON.
pub(crate) fn text(object: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(object).unwrap_or_default())
}

/// The line a watch sends for one event: its type before its object, as the real server
/// writes it (clients may rely on that order to keep the object's text as it is).
pub(crate) fn event_line(kind: &str, text: &[u8]) -> Bytes {
    let mut line = Vec::with_capacity(text.len() + 32);
    line.extend_from_slice(br#"{"type":""#);
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(br#"","object":"#);
    line.extend_from_slice(text);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

/// The line a watch sends for one event, its object first if `object_first`.
pub(crate) fn line(object_first: bool, kind: &str, text: &[u8]) -> Bytes {
    if !object_first {
        return event_line(kind, text);
    }
    let mut line = br#"{"object":"#.to_vec();
    line.extend_from_slice(text);
    line.extend_from_slice(format!(",\"type\":\"{kind}\"}}\n").as_bytes());
    Bytes::from(line)
}

/// Whether a watch of `namespace` (all when `None`) and `selector` sees `object`.
pub(crate) fn wants(namespace: Option<&str>, selector: &Selector, object: &Value) -> bool {
    let in_namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    namespace.is_none_or(|want| want == in_namespace) && selector.matches(object)
}

impl Watcher {
    /// The line this watch sends for one event.
    pub(crate) fn line(&self, kind: &str, text: &[u8]) -> Bytes {
        line(self.object_first, kind, text)
    }

    pub(crate) fn wants(&self, object: &Value) -> bool {
        wants(self.namespace.as_deref(), &self.selector, object)
    }

    /// Sends an event if it concerns this watch; false when the watch is closed.
    pub(crate) fn deliver(&self, event: &Event) -> bool {
        match self.line_for(event) {
            Some(line) => self.sender.send(line).is_ok(),
            None => !self.sender.is_closed(),
        }
    }

    /// The line this watch sends for an event, if it concerns it, turning selector transitions
    /// into ADDED or DELETED like the real server.
    pub(crate) fn line_for(&self, event: &Event) -> Option<Bytes> {
        if event.resource != self.resource {
            return None;
        }
        let now = self.wants(&event.object);
        let before = event.old.as_ref().is_some_and(|old| self.wants(old));
        let kind = match (event.kind, before, now) {
            (EventType::Added, _, true) | (EventType::Modified, false, true) => "ADDED",
            (EventType::Modified, true, true) => "MODIFIED",
            (EventType::Modified, true, false) | (EventType::Deleted, _, true) => "DELETED",
            _ => return None,
        };
        Some(self.line(kind, &event.text))
    }
}
