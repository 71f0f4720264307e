//! Names one reason a reconcile runs: a watch event, a mapped change, a resync, a requeue.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::cache::ObjectKey;

/// What kind of thing made a key reconcile; see [`Trigger`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Reason {
    /// A watch event of the reconciled object itself.
    Event,
    /// A change of an object it controls (an `ownerReference` with `controller: true`).
    Owned,
    /// A change of a watched object that a mapper turned into this key.
    Watched,
    /// The informer's periodic resync.
    Resync,
    /// The object was in the cache when a term of the controller started (the initial list,
    /// or a new term of leadership).
    Listed,
    /// A new value of [`RECONCILE_REQUESTED_ANNOTATION`](crate::controller::RECONCILE_REQUESTED_ANNOTATION).
    Requested,
    /// The last reconcile asked to run again now (rate limited), or hit a conflict.
    Requeue,
    /// The last reconcile asked to run again after a delay.
    RequeueAfter,
    /// A retry with backoff after the last reconcile failed or panicked.
    Retry,
    /// A key from a stream given to [`Controller::reconcile_on`](crate::controller::Controller::reconcile_on).
    Stream,
}

/// The type of the watch event behind a trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EventType {
    /// The object appeared.
    Added,
    /// The object changed.
    Modified,
    /// The object went away.
    Deleted,
}

/// One reason a reconcile runs. Several triggers of one key that arrive while it waits in the
/// queue run one reconcile; [`Context::triggers`](crate::controller::Context::triggers) hands
/// that reconcile all of them (up to [`MAX_TRIGGERS`](crate::controller::MAX_TRIGGERS)).
///
/// Made without allocating: the kind is a static name for compiled kinds, the object's key is
/// shared with the cache, and a numeric resourceVersion (etcd's) is kept as a number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trigger {
    reason: Reason,
    event: Option<EventType>,
    /// The kind and key of the changed object, for owned and watched changes.
    object: Option<(Cow<'static, str>, ObjectKey)>,
    version: Version,
}

/// A resourceVersion: etcd's are numbers, kept as such; anything else as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    None,
    Number(u64),
    Text(Box<str>),
}

impl Version {
    /// `text` as a number when it is one (no allocation), else as text.
    pub(crate) fn of(text: Option<&str>) -> Self {
        match text {
            None => Self::None,
            Some(text) => match text.parse() {
                Ok(n) if is_canonical_number(text) => Self::Number(n),
                _ => Self::Text(text.into()),
            },
        }
    }

    fn text(&self) -> Option<String> {
        match self {
            Self::None => None,
            Self::Number(n) => Some(n.to_string()),
            Self::Text(t) => Some(t.to_string()),
        }
    }
}

/// Whether `text` is a number written the one way `u64::to_string` writes it.
fn is_canonical_number(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'))
}

impl Trigger {
    /// A trigger with no changed object and no event: a resync, a requeue, a stream's key.
    pub(crate) fn bare(reason: Reason) -> Self {
        Self {
            reason,
            event: None,
            object: None,
            version: Version::None,
        }
    }

    /// A watch event `event` of the reconciled object at resourceVersion `version`.
    pub(crate) fn event(reason: Reason, event: EventType, version: Option<&str>) -> Self {
        Self {
            reason,
            event: Some(event),
            object: None,
            version: Version::of(version),
        }
    }

    /// A change `event` of the `kind` object `key` at `version`, mapped to the reconciled key.
    pub(crate) fn mapped(
        reason: Reason,
        event: EventType,
        kind: Cow<'static, str>,
        key: ObjectKey,
        version: Option<&str>,
    ) -> Self {
        Self {
            reason,
            event: Some(event),
            object: Some((kind, key)),
            version: Version::of(version),
        }
    }

    /// What kind of trigger it is.
    #[must_use]
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The watch event's type, for event, owned and watched triggers (a change
    /// standing for several changes of its object is `Modified`).
    #[must_use]
    pub fn event_type(&self) -> Option<EventType> {
        self.event
    }

    /// The kind of the changed object, for owned and watched triggers.
    #[must_use]
    pub fn kind(&self) -> Option<&str> {
        self.object.as_ref().map(|(kind, _)| kind.as_ref())
    }

    /// The key of the changed object, for owned and watched triggers.
    #[must_use]
    pub fn object(&self) -> Option<&ObjectKey> {
        self.object.as_ref().map(|(_, key)| key)
    }

    /// The resourceVersion the event carried, if any.
    #[must_use]
    pub fn resource_version(&self) -> Option<String> {
        self.version.text()
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Event => "event",
            Self::Owned => "owned object changed",
            Self::Watched => "watched object changed",
            Self::Resync => "resync",
            Self::Listed => "listed at start",
            Self::Requested => "reconcile requested",
            Self::Requeue => "requeue",
            Self::RequeueAfter => "requeue after delay",
            Self::Retry => "retry after failure",
            Self::Stream => "stream",
        })
    }
}

impl fmt::Display for Trigger {
    /// `Modified ConfigMap prod/web (owned object changed) @ 1234`, `resync`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(event) = self.event {
            write!(f, "{event:?} ")?;
        }
        match &self.object {
            Some((kind, key)) => write!(f, "{kind} {key} ({})", self.reason)?,
            None => write!(f, "{}", self.reason)?,
        }
        if let Some(version) = self.version.text() {
            write!(f, " @ {version}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numeric_resource_version_is_kept_as_a_number_and_others_as_text() {
        assert_eq!(Version::of(Some("1234")), Version::Number(1234));
        assert_eq!(Version::of(Some("0012")), Version::Text("0012".into()));
        assert_eq!(Version::of(Some("a1")), Version::Text("a1".into()));
        assert_eq!(Version::of(Some("+1")), Version::Text("+1".into()));
        assert_eq!(Version::of(Some("0")), Version::Number(0));
        assert_eq!(Version::of(None), Version::None);
    }

    #[test]
    fn a_trigger_reads_as_a_line() {
        let owned = Trigger::mapped(
            Reason::Owned,
            EventType::Modified,
            Cow::Borrowed("ConfigMap"),
            ObjectKey::new(Some("prod"), "web"),
            Some("42"),
        );
        assert_eq!(
            owned.to_string(),
            "Modified ConfigMap prod/web (owned object changed) @ 42"
        );
        assert_eq!(Trigger::bare(Reason::Resync).to_string(), "resync");
    }
}
