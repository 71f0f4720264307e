//! A change to the cache, as delivered to event handlers.

use std::sync::Arc;

use kube::Resource;

use super::ObjectKey;

/// One change the store went through.
#[derive(Debug)]
pub enum Change<K> {
    /// An object appeared.
    Added(Arc<K>),
    /// An object changed (its resourceVersion differs), or a resync re-delivers it (same object).
    Updated {
        /// The state before.
        old: Arc<K>,
        /// The state now in the store.
        new: Arc<K>,
    },
    /// An object went away.
    Deleted(Deleted<K>),
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Added(obj) => Self::Added(Arc::clone(obj)),
            Self::Updated { old, new } => Self::Updated {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Self::Deleted(deleted) => Self::Deleted(deleted.clone()),
        }
    }
}

impl<K: Resource> Change<K> {
    /// The key of the object that changed.
    #[must_use]
    pub fn key(&self) -> ObjectKey {
        match self {
            Self::Added(obj) | Self::Updated { new: obj, .. } => ObjectKey::of(obj.as_ref()),
            Self::Deleted(deleted) => ObjectKey::of(deleted.object().as_ref()),
        }
    }
}

/// A deleted object: its final state, or the last state seen when the deletion itself was missed.
#[derive(Debug)]
pub enum Deleted<K> {
    /// The final state, from the watch's delete event.
    Final(Arc<K>),
    /// The deletion was missed (e.g. while disconnected) and noticed on a relist; this is the last
    /// state the cache had, which may be stale.
    #[doc(alias = "DeletedFinalStateUnknown")]
    FinalStateUnknown(Arc<K>),
}

impl<K> Clone for Deleted<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Final(obj) => Self::Final(Arc::clone(obj)),
            Self::FinalStateUnknown(obj) => Self::FinalStateUnknown(Arc::clone(obj)),
        }
    }
}

impl<K> Deleted<K> {
    /// The final state, or the last known one.
    #[must_use]
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Final(obj) | Self::FinalStateUnknown(obj) => obj,
        }
    }

    /// Whether the final state is unknown (the deletion was found by a relist).
    #[must_use]
    pub fn is_final_state_unknown(&self) -> bool {
        matches!(self, Self::FinalStateUnknown(_))
    }
}
