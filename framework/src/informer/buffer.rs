//! A handler's buffer of pending changes, coalesced per object so it never outgrows the cache.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use kube::Resource;

use crate::cache::{Change, Deleted, ObjectKey};
use crate::spare_capacity;

/// What a handler has yet to be told about one object.
#[derive(Debug)]
pub(crate) enum Pending<K> {
    /// Added (and maybe changed since): the latest state.
    Added(Arc<K>),
    /// Changed: the oldest state the handler has not seen replaced, and the latest.
    Updated { old: Arc<K>, new: Arc<K> },
    /// Deleted.
    Deleted(Deleted<K>),
    /// Deleted and created again under the same name: delivered as a delete, then an add.
    Replaced { deleted: Deleted<K>, added: Arc<K> },
    /// Added and deleted before the handler saw it: nothing to say.
    Nothing,
}

/// One pending change as it is handed out, with what the framework's own handlers need to know
/// of how it came about.
#[derive(Debug)]
pub(crate) struct Popped<K> {
    /// The object's key, computed once when the change was stored.
    pub(crate) key: ObjectKey,
    /// What changed.
    pub(crate) change: Pending<K>,
    /// It stands for several changes of its object: the states between were never handed out
    /// (a filter of a controller's own writes must not drop it for its last state alone).
    pub(crate) coalesced: bool,
    /// Every change in it was stored before the informer's first complete list.
    pub(crate) listed: bool,
}

/// Pending changes, one per object, in the order objects first became pending.
#[doc(alias = "DeltaFIFO")]
#[derive(Debug)]
pub(crate) struct Buffer<K> {
    order: VecDeque<ObjectKey>,
    pending: HashMap<ObjectKey, Popped<K>>,
}

impl<K: Resource> Buffer<K> {
    pub(crate) fn new() -> Self {
        Self {
            order: VecDeque::new(),
            pending: HashMap::new(),
        }
    }

    /// How many objects have a pending change; never more than objects seen since the last pop.
    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no object has a pending change.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Merges `change` of the object `key` into what is pending for it; `listed` if it was
    /// stored before the informer's first complete list.
    pub(crate) fn push(&mut self, key: ObjectKey, change: Change<K>, listed: bool) {
        if let Some(before) = self.pending.remove(&key) {
            let merged = Popped {
                key: key.clone(),
                change: merge(before.change, change),
                coalesced: true,
                listed: before.listed && listed,
            };
            self.pending.insert(key, merged);
        } else {
            self.order.push_back(key.clone());
            let first = Popped {
                key: key.clone(),
                change: Pending::from(change),
                coalesced: false,
                listed,
            };
            self.pending.insert(key, first);
        }
    }

    /// Queues a resync of `obj` unless a change of it is already pending (that one is newer).
    pub(crate) fn push_resync(&mut self, obj: &Arc<K>) {
        let key = ObjectKey::of(obj.as_ref());
        if !self.pending.contains_key(&key) {
            self.order.push_back(key.clone());
            let resync = Pending::Updated {
                old: Arc::clone(obj),
                new: Arc::clone(obj),
            };
            let popped = Popped {
                key: key.clone(),
                change: resync,
                coalesced: false,
                listed: false,
            };
            self.pending.insert(key, popped);
        }
    }

    /// The oldest pending change.
    pub(crate) fn pop(&mut self) -> Option<Popped<K>> {
        while let Some(key) = self.order.pop_front() {
            match self.pending.remove(&key) {
                Some(Popped {
                    change: Pending::Nothing,
                    ..
                })
                | None => {}
                Some(pending) => return Some(pending),
            }
        }
        // Drained: free the room a burst (an initial list of 10,000, say) left behind.
        if spare_capacity::oversized(self.pending.capacity())
            || spare_capacity::oversized(self.order.capacity())
        {
            self.pending.shrink_to(spare_capacity::KEPT);
            self.order.shrink_to(spare_capacity::KEPT);
        }
        None
    }
}

impl<K> From<Change<K>> for Pending<K> {
    fn from(change: Change<K>) -> Self {
        match change {
            Change::Added(obj) => Self::Added(obj),
            Change::Updated { old, new } => Self::Updated { old, new },
            Change::Deleted(deleted) => Self::Deleted(deleted),
        }
    }
}

/// The one pending change equivalent to `before` followed by `change`, from the handler's view.
fn merge<K>(before: Pending<K>, change: Change<K>) -> Pending<K> {
    match (before, change) {
        (Pending::Nothing, change) => Pending::from(change),
        (Pending::Added(_), Change::Added(new) | Change::Updated { new, .. }) => {
            Pending::Added(new)
        }
        (Pending::Added(_), Change::Deleted(_)) => Pending::Nothing,
        (Pending::Updated { old, .. }, Change::Added(new) | Change::Updated { new, .. }) => {
            Pending::Updated { old, new }
        }
        (Pending::Updated { .. } | Pending::Deleted(_), Change::Deleted(deleted)) => {
            Pending::Deleted(deleted)
        }
        (
            Pending::Deleted(deleted) | Pending::Replaced { deleted, .. },
            Change::Added(added) | Change::Updated { new: added, .. },
        ) => Pending::Replaced { deleted, added },
        // The handler knew the object that `deleted` ended; the later one it never saw.
        (Pending::Replaced { deleted, .. }, Change::Deleted(_)) => Pending::Deleted(deleted),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn cm(name: &str, rv: u64) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(name.into()),
                resource_version: Some(rv.to_string()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    fn push(buffer: &mut Buffer<ConfigMap>, change: Change<ConfigMap>, listed: bool) {
        buffer.push(change.key(), change, listed);
    }

    fn rv(obj: &ConfigMap) -> &str {
        obj.metadata.resource_version.as_deref().unwrap_or_default()
    }

    #[test]
    fn updates_coalesce_into_the_oldest_old_state_and_the_newest_new_state() {
        let mut buffer = Buffer::new();
        for i in 1..=10 {
            push(
                &mut buffer,
                Change::Updated {
                    old: cm("a", i),
                    new: cm("a", i + 1),
                },
                false,
            );
        }
        assert_eq!(buffer.len(), 1);
        match buffer.pop().map(|p| p.change) {
            Some(Pending::Updated { old, new }) => assert_eq!((rv(&old), rv(&new)), ("1", "11")),
            other => panic!("expected one coalesced update, got {other:?}"),
        }
        assert!(buffer.pop().is_none());
    }

    #[test]
    fn an_object_added_and_deleted_before_delivery_is_never_mentioned() {
        let mut buffer = Buffer::new();
        push(&mut buffer, Change::Added(cm("a", 1)), false);
        push(
            &mut buffer,
            Change::Updated {
                old: cm("a", 1),
                new: cm("a", 2),
            },
            false,
        );
        push(
            &mut buffer,
            Change::Deleted(Deleted::Final(cm("a", 3))),
            false,
        );
        push(&mut buffer, Change::Added(cm("b", 4)), false);
        assert!(
            matches!(buffer.pop().map(|p| p.change), Some(Pending::Added(b)) if b.metadata.name.as_deref() == Some("b"))
        );
        assert!(buffer.pop().is_none());
    }

    #[test]
    fn a_delete_then_recreate_is_delivered_as_both_and_resync_never_overrides_a_pending_change() {
        let mut buffer = Buffer::new();
        push(
            &mut buffer,
            Change::Deleted(Deleted::Final(cm("a", 2))),
            false,
        );
        push(&mut buffer, Change::Added(cm("a", 3)), false);
        buffer.push_resync(&cm("a", 3));
        buffer.push_resync(&cm("b", 1));
        assert_eq!(buffer.len(), 2);
        match buffer.pop().map(|p| p.change) {
            Some(Pending::Replaced { deleted, added }) => {
                assert_eq!((rv(deleted.object()), rv(&added)), ("2", "3"));
            }
            other => panic!("expected delete + add, got {other:?}"),
        }
        assert!(
            matches!(buffer.pop().map(|p| p.change), Some(Pending::Updated { old, new }) if Arc::ptr_eq(&old, &new))
        );
    }

    #[test]
    fn pending_changes_stay_bounded_by_the_number_of_objects() {
        let mut buffer = Buffer::new();
        for i in 0..100_000_u64 {
            let name = format!("cm-{}", i % 100);
            push(
                &mut buffer,
                Change::Updated {
                    old: cm(&name, i),
                    new: cm(&name, i + 1),
                },
                false,
            );
            assert!(buffer.len() <= 100);
        }
        assert_eq!(buffer.order.len(), 100);
    }

    #[test]
    fn a_drained_burst_gives_its_room_back_and_the_buffer_still_works() {
        let mut buffer = Buffer::new();
        for i in 0..10_000 {
            push(&mut buffer, Change::Added(cm(&format!("cm-{i}"), 1)), false);
        }
        let mut popped = 0;
        while buffer.pop().is_some() {
            popped += 1;
        }
        assert_eq!(popped, 10_000);
        // Both are empty: `shrink_to(spare_capacity::KEPT)` leaves about that much capacity.
        assert!(
            buffer.pending.capacity() <= 2 * spare_capacity::KEPT
                && buffer.order.capacity() <= 2 * spare_capacity::KEPT
        );
        push(&mut buffer, Change::Added(cm("again", 2)), false);
        assert!(
            matches!(buffer.pop().map(|p| p.change), Some(Pending::Added(obj)) if rv(&obj) == "2")
        );
    }

    #[test]
    fn a_change_says_whether_it_stands_for_several_and_whether_all_came_from_the_first_list() {
        let mut buffer = Buffer::new();
        push(&mut buffer, Change::Added(cm("listed", 1)), true);
        push(&mut buffer, Change::Added(cm("listed-then-live", 2)), true);
        push(
            &mut buffer,
            Change::Updated {
                old: cm("listed-then-live", 2),
                new: cm("listed-then-live", 3),
            },
            false,
        );
        let first = buffer.pop().expect("the first object's change");
        assert!(first.listed && !first.coalesced, "{first:?}");
        let second = buffer.pop().expect("the second object's change");
        assert!(!second.listed && second.coalesced, "{second:?}");
        assert!(matches!(second.change, Pending::Added(obj) if rv(&obj) == "3"));
        assert!(buffer.is_empty());
    }
}
