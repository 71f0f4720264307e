//! Keeps the triggers of each queued key until a worker takes the key.

use hashbrown::HashMap;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::trigger::Trigger;
use crate::cache::ObjectKey;

/// How many triggers of one key are kept for its next reconcile; later ones are counted only.
pub const MAX_TRIGGERS: usize = 16;

/// The triggers of one key, taken by the reconcile that runs for them.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    pub(crate) triggers: Vec<Trigger>,
    /// Triggers beyond [`MAX_TRIGGERS`], counted and dropped.
    pub(crate) dropped: u32,
    /// When the earliest of them made the key ready: the start of its wait in the queue.
    pub(crate) since: Option<Instant>,
    /// Whether `since` lies ahead (a delayed requeue): a trigger ready now moves it back.
    ahead: bool,
}

/// The triggers of the keys waiting in a controller's queue (or being processed and queued
/// again).
///
/// A trigger is pushed before its key is added to the queue, and a worker takes a key's
/// triggers right after `get` hands the key out, so every trigger reaches exactly one
/// reconcile: the next one to start after it was pushed. (One pushed between the worker's
/// `get` and its `take` rides with that reconcile, and the queue's add then runs one more,
/// which may find no trigger of its own.)
#[derive(Debug, Default)]
pub(crate) struct Pending {
    keys: Mutex<HashMap<ObjectKey, Taken>>,
    /// How many triggers each key was given, for the simulation's oracle.
    #[cfg(test)]
    pushed: Mutex<HashMap<ObjectKey, u64>>,
}

impl Pending {
    /// Notes `trigger` for the next reconcile of `key`, ready now.
    pub(crate) fn push(&self, key: &ObjectKey, trigger: Trigger) {
        self.push_ready_at(key, trigger, None);
    }

    /// Notes `trigger` for the next reconcile of `key`, ready at `ready` (`None`: now). The
    /// clock is read only for a key's first trigger, or when its wait has not begun yet.
    pub(crate) fn push_ready_at(&self, key: &ObjectKey, trigger: Trigger, ready: Option<Instant>) {
        #[cfg(test)]
        {
            *self.pushed.lock().entry(key.clone()).or_default() += 1;
        }
        let mut keys = self.keys.lock();
        if let Some(taken) = keys.get_mut(key) {
            if taken.ahead || ready.is_some() {
                let ready = ready.unwrap_or_else(Instant::now);
                let since = taken.since.map_or(ready, |since| since.min(ready));
                taken.ahead = since > Instant::now();
                taken.since = Some(since);
            }
            if taken.triggers.len() < MAX_TRIGGERS {
                taken.triggers.push(trigger);
            } else {
                taken.dropped = taken.dropped.saturating_add(1);
            }
            return;
        }
        keys.insert(
            key.clone(),
            Taken {
                triggers: vec![trigger],
                dropped: 0,
                since: Some(ready.unwrap_or_else(Instant::now)),
                ahead: ready.is_some(),
            },
        );
    }

    /// The triggers of `key` since the last take.
    pub(crate) fn take(&self, key: &ObjectKey) -> Taken {
        self.keys.lock().remove(key).unwrap_or_default()
    }

    /// Forgets every key's triggers: a new term's queue starts empty.
    pub(crate) fn clear(&self) {
        let old = std::mem::take(&mut *self.keys.lock());
        drop(old);
    }

    /// How many keys have triggers waiting.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.keys.lock().len()
    }

    /// How many triggers `key` was given in all.
    #[cfg(test)]
    pub(crate) fn pushed(&self, key: &ObjectKey) -> u64 {
        self.pushed.lock().get(key).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::why::Reason;

    #[test]
    fn triggers_of_a_key_are_taken_once_in_order() {
        let pending = Pending::default();
        let key = ObjectKey::new(Some("ns"), "a");
        pending.push(&key, Trigger::bare(Reason::Resync));
        pending.push(&key, Trigger::bare(Reason::Requeue));
        let taken = pending.take(&key);
        let reasons: Vec<_> = taken.triggers.iter().map(Trigger::reason).collect();
        assert_eq!(reasons, [Reason::Resync, Reason::Requeue]);
        assert!(pending.take(&key).triggers.is_empty(), "taken once");
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_starts_at_the_earliest_trigger_ready_and_a_delayed_requeue_is_not_ready_yet()
    {
        let pending = Pending::default();
        let key = ObjectKey::new(None, "a");
        let start = Instant::now();
        let later = start + std::time::Duration::from_secs(60);
        pending.push_ready_at(&key, Trigger::bare(Reason::RequeueAfter), Some(later));
        tokio::time::advance(std::time::Duration::from_secs(5)).await;
        pending.push(&key, Trigger::bare(Reason::Event));
        tokio::time::advance(std::time::Duration::from_secs(5)).await;
        pending.push(&key, Trigger::bare(Reason::Resync));
        let taken = pending.take(&key);
        assert_eq!(taken.since, Some(start + std::time::Duration::from_secs(5)));
        assert_eq!(taken.triggers.len(), 3);
    }

    #[test]
    fn triggers_beyond_the_bound_are_counted_not_kept() {
        let pending = Pending::default();
        let key = ObjectKey::new(None, "a");
        for _ in 0..MAX_TRIGGERS + 5 {
            pending.push(&key, Trigger::bare(Reason::Resync));
        }
        let taken = pending.take(&key);
        assert_eq!(taken.triggers.len(), MAX_TRIGGERS);
        assert_eq!(taken.dropped, 5);
    }
}
