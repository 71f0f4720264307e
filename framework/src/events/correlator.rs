//! Decides what each event becomes: a new Event object, a count on an existing one, or nothing.
//!
//! The semantics are client-go's `EventCorrelator`, adapted to `events.k8s.io/v1`: an identical
//! repeat within the window counts in the `series` of the Event already written; a different
//! event about the same object spends a token of that object's bucket, so a loop whose message
//! keeps changing writes a bounded number of Event objects.

use std::time::Duration;

use super::event_type::EventType;
use k8s_openapi::api::core::v1::ObjectReference;
use tokio::time::Instant;

use super::lru::Lru;
use super::name;

/// How long after its last occurrence an identical event still counts in the same Event
/// (client-go's aggregation interval).
pub(crate) const WINDOW: Duration = Duration::from_secs(10 * 60);
/// New Event objects one object may get at once (client-go's spam filter burst).
pub(crate) const BURST: u32 = 25;
/// Time to earn one more new Event object (client-go: 1/300 per second).
pub(crate) const REFILL: Duration = Duration::from_secs(5 * 60);
/// Events and objects remembered (client-go's LRU size); the oldest are forgotten first.
pub(crate) const CAPACITY: usize = 4096;

/// What identifies an object for the rate limit: API version, kind, namespace, name, uid.
pub(crate) type ObjectId = [String; 5];

/// What makes two events identical (the reporting controller is the recorder's own).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) object: ObjectId,
    pub(crate) field_path: String,
    pub(crate) type_: EventType,
    pub(crate) reason: String,
    pub(crate) note: String,
    pub(crate) action: String,
}

impl Key {
    /// The key of an event about `regarding`.
    pub(crate) fn new(
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: &str,
        action: &str,
    ) -> Self {
        let field = |f: &Option<String>| f.clone().unwrap_or_default();
        Self {
            object: [
                field(&regarding.api_version),
                field(&regarding.kind),
                field(&regarding.namespace),
                field(&regarding.name),
                field(&regarding.uid),
            ],
            field_path: field(&regarding.field_path),
            type_,
            reason: reason.to_owned(),
            note: note.to_owned(),
            action: action.to_owned(),
        }
    }
}

/// What to do with one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Write a new Event object with this name.
    Create {
        /// The new Event's name.
        name: String,
    },
    /// Count it in the existing Event `name`, whose series now reaches `count`.
    Aggregate {
        /// The Event written for the first occurrence.
        name: String,
        /// Occurrences so far, this one included.
        count: i32,
    },
    /// Drop it: its object has spent its budget of new Event objects.
    Limited,
}

/// The memory of recent events and of each object's budget, both bounded.
#[derive(Debug)]
pub(crate) struct Correlator {
    seen: Lru<Key, Seen>,
    budgets: Lru<ObjectId, Bucket>,
}

#[derive(Debug)]
struct Seen {
    name: String,
    count: i32,
    last: Instant,
}

/// A token bucket: `BURST` tokens, one more every `REFILL`.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl Default for Correlator {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

impl Correlator {
    /// Remembers at most `capacity` events and as many objects.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            seen: Lru::new(capacity),
            budgets: Lru::new(capacity),
        }
    }

    /// Decides about an event with `key` that happened at `now`.
    pub(crate) fn observe(&mut self, key: &Key, now: Instant) -> Decision {
        if let Some(seen) = self.seen.get_mut(key)
            && now.saturating_duration_since(seen.last) <= WINDOW
        {
            seen.count = seen.count.saturating_add(1);
            seen.last = now;
            return Decision::Aggregate {
                name: seen.name.clone(),
                count: seen.count,
            };
        }
        if !self.take_token(&key.object, now) {
            return Decision::Limited;
        }
        let name = name::event_name(&key.object[3]);
        self.seen.insert(
            key.clone(),
            Seen {
                name: name.clone(),
                count: 1,
                last: now,
            },
        );
        Decision::Create { name }
    }

    /// Forgets `key`: its Event could not be written, so the next occurrence creates one.
    pub(crate) fn forget(&mut self, key: &Key) {
        self.seen.remove(key);
    }

    /// Points `key` at the Event `name`, written anew after the first one disappeared.
    pub(crate) fn renamed(&mut self, key: &Key, name: String) {
        if let Some(seen) = self.seen.get_mut(key) {
            seen.name = name;
        }
    }

    /// How many events it remembers.
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.seen.len()
    }

    fn take_token(&mut self, object: &ObjectId, now: Instant) -> bool {
        let bucket = if let Some(bucket) = self.budgets.get_mut(object) {
            bucket
        } else {
            let full = Bucket {
                tokens: f64::from(BURST),
                refilled: now,
            };
            self.budgets.insert(object.clone(), full);
            self.budgets
                .get_mut(object)
                .expect("correlator invariant: a bucket just inserted is present")
        };
        let earned =
            now.saturating_duration_since(bucket.refilled).as_secs_f64() / REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + earned).min(f64::from(BURST));
        bucket.refilled = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: Some("demo".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    fn key(object: &str, note: &str) -> Key {
        Key::new(
            &reference(object),
            EventType::Warning,
            "Failed",
            note,
            "Reconcile",
        )
    }

    fn created(decision: Decision) -> String {
        match decision {
            Decision::Create { name } => name,
            other => panic!("expected a new Event, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn identical_repeats_within_the_window_count_in_the_first_event() {
        let mut correlator = Correlator::default();
        let k = key("web", "connection refused");
        let name = created(correlator.observe(&k, Instant::now()));
        for count in 2..=20 {
            tokio::time::advance(Duration::from_secs(30)).await;
            assert_eq!(
                correlator.observe(&k, Instant::now()),
                Decision::Aggregate {
                    name: name.clone(),
                    count
                }
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_repeat_after_the_window_starts_a_new_event() {
        let mut correlator = Correlator::default();
        let k = key("web", "connection refused");
        let first = created(correlator.observe(&k, Instant::now()));
        tokio::time::advance(WINDOW + Duration::from_secs(1)).await;
        let second = created(correlator.observe(&k, Instant::now()));
        assert_ne!(first, second);
    }

    #[tokio::test(start_paused = true)]
    async fn a_changed_note_is_a_new_event_not_a_count_on_the_old_one() {
        let mut correlator = Correlator::default();
        let first = created(correlator.observe(&key("web", "for generation 1"), Instant::now()));
        let second = created(correlator.observe(&key("web", "for generation 2"), Instant::now()));
        assert_ne!(first, second);
        assert!(matches!(
            correlator.observe(&key("web", "for generation 2"), Instant::now()),
            Decision::Aggregate { name, count: 2 } if name == second
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_changing_note_writes_at_most_the_burst_then_one_event_per_refill() {
        let mut correlator = Correlator::default();
        let mut writes = 0;
        // A failure loop: a new message every second for an hour.
        for i in 0..3600 {
            let k = key("web", &format!("attempt {i} failed"));
            if matches!(
                correlator.observe(&k, Instant::now()),
                Decision::Create { .. }
            ) {
                writes += 1;
            }
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        // 25 at once, then one per 5 minutes (at about 300 s, 600 s, ..., 3300 s): 11 more.
        assert_eq!(writes, 25 + 11);
        // Another object has its own budget.
        assert!(matches!(
            correlator.observe(&key("db", "attempt 0 failed"), Instant::now()),
            Decision::Create { .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn identical_repeats_are_not_limited_by_the_budget() {
        let mut correlator = Correlator::default();
        for i in 0..BURST {
            created(correlator.observe(&key("web", &format!("note {i}")), Instant::now()));
        }
        assert_eq!(
            correlator.observe(&key("web", "one more"), Instant::now()),
            Decision::Limited
        );
        assert!(matches!(
            correlator.observe(&key("web", "note 0"), Instant::now()),
            Decision::Aggregate { count: 2, .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn the_memory_of_events_is_bounded() {
        let mut correlator = Correlator::with_capacity(100);
        for i in 0..1000 {
            correlator.observe(&key(&format!("object-{i}"), "same"), Instant::now());
        }
        assert_eq!(correlator.remembered(), 100);
        // The oldest were forgotten: their next occurrence is a new Event.
        created(correlator.observe(&key("object-0", "same"), Instant::now()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_forgotten_event_is_created_again_and_a_renamed_one_counts_on_the_new_name() {
        let mut correlator = Correlator::default();
        let k = key("web", "x");
        created(correlator.observe(&k, Instant::now()));
        correlator.forget(&k);
        created(correlator.observe(&k, Instant::now()));
        correlator.renamed(&k, "web.renamed".into());
        assert_eq!(
            correlator.observe(&k, Instant::now()),
            Decision::Aggregate {
                name: "web.renamed".into(),
                count: 2
            }
        );
    }
}
