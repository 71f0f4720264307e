//! Keeps the last reconciles of every object: the flight recorder.
//!
//! Each object's history is one boxed byte string: its last N records (see `encoding`), each
//! led by its length. At N = 8 a record without a diff takes about 20 bytes, so the history of
//! an object fits in a few hundred bytes (`scripts/bench` and the unit test below measure it).
//! Diffs are sampled: only the newest record of an object keeps the diffs of its writes (at most
//! [`MAX_DIFF`] bytes each); appending a record drops the diffs of the one before.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::encoding::{Interner, decode, encode, read_varint, varint};
use super::record::Reconciled;
use crate::cache::ObjectKey;

/// How many reconciles of each object a controller remembers, unless configured otherwise.
pub const DEFAULT_RECORDED_RECONCILES: usize = 8;
/// The longest diff kept for a write, in bytes; longer ones are cut and end in `…`.
pub(crate) const MAX_DIFF: usize = 256;

/// The flight recorder of one controller.
#[derive(Debug)]
pub(crate) struct Recorder {
    capacity: usize,
    /// Milliseconds since the Unix epoch when it was made: records store their start from here.
    base_ms: u64,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    histories: HashMap<ObjectKey, Box<[u8]>>,
    interner: Interner,
}

impl Recorder {
    /// A recorder of the last `capacity` reconciles per object (none when 0).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            base_ms: now_ms(),
            inner: Mutex::default(),
        }
    }

    /// Whether it records anything.
    pub(crate) fn is_on(&self) -> bool {
        self.capacity > 0
    }

    /// Appends `record` to the history of `key`, dropping its oldest beyond the capacity.
    pub(crate) fn record(&self, key: &ObjectKey, record: &Reconciled) {
        if !self.is_on() {
            return;
        }
        let mut inner = self.inner.lock();
        let Inner {
            histories,
            interner,
        } = &mut *inner;
        let since = record.started_ms.saturating_sub(self.base_ms);
        let mut encoded = Vec::with_capacity(32);
        encode(record, since, key, interner, &mut encoded);
        let old = histories.get(key).map_or(&[][..], |h| &h[..]);
        let mut records = split(old);
        if records.len() >= self.capacity {
            records.drain(..=records.len() - self.capacity);
        }
        let mut stripped = None;
        if let Some(last) = records.last_mut()
            && let Some(mut previous) = decode(last, self.base_ms, key, interner)
            && previous.writes.iter().any(|w| w.diff.is_some())
        {
            previous.writes.iter_mut().for_each(|w| w.diff = None);
            let mut bytes = Vec::new();
            let since = previous.started_ms.saturating_sub(self.base_ms);
            encode(&previous, since, key, interner, &mut bytes);
            stripped = Some(bytes);
        }
        let mut history = Vec::with_capacity(old.len() + encoded.len() + 2);
        let kept = records.len();
        for (i, record) in records.into_iter().enumerate() {
            let record = match (&stripped, i + 1 == kept) {
                (Some(bytes), true) => &bytes[..],
                _ => record,
            };
            varint(&mut history, record.len() as u64);
            history.extend_from_slice(record);
        }
        varint(&mut history, encoded.len() as u64);
        history.extend_from_slice(&encoded);
        histories.insert(key.clone(), history.into_boxed_slice());
    }

    /// The recorded reconciles of `key`, oldest first; `None` if it has none.
    pub(crate) fn history(&self, key: &ObjectKey) -> Option<Vec<Reconciled>> {
        let inner = self.inner.lock();
        let history = inner.histories.get(key)?;
        Some(
            split(history)
                .into_iter()
                .filter_map(|r| decode(r, self.base_ms, key, &inner.interner))
                .collect(),
        )
    }

    /// Forgets the history of `key` (its object is gone).
    pub(crate) fn forget(&self, key: &ObjectKey) {
        let gone = self.inner.lock().histories.remove(key);
        drop(gone);
    }

    /// The bytes its histories hold, with the table and an allocator's overhead per history,
    /// and how many objects have one.
    #[cfg(test)]
    pub(crate) fn footprint(&self) -> (usize, usize) {
        /// What an allocator adds to each allocation, about (glibc: 8 bytes of header, rounded
        /// up to 16).
        const PER_ALLOCATION: usize = 16;
        let inner = self.inner.lock();
        let slot = size_of::<(ObjectKey, Box<[u8]>)>() + 1;
        let table = inner.histories.capacity() * slot;
        let bytes: usize = inner
            .histories
            .values()
            .map(|h| h.len().next_multiple_of(16) + PER_ALLOCATION)
            .sum();
        (
            table + bytes + inner.interner.heap_bytes(),
            inner.histories.len(),
        )
    }
}

/// The records of a history.
fn split(mut history: &[u8]) -> Vec<&[u8]> {
    let mut records = Vec::new();
    while let Some((len, at)) = read_varint(history) {
        let Ok(len) = usize::try_from(len) else { break };
        let Some(record) = history.get(at..at + len) else {
            break;
        };
        records.push(record);
        history = &history[at + len..];
    }
    records
}

/// The wall clock in milliseconds since the Unix epoch (for display only: durations use tokio's
/// clock).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The flight recorders of every controller of a process, for `/debug/reconciles`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reconciles {
    recorders: Arc<Mutex<Vec<Registered>>>,
}

/// A controller's name, its kind's name and its recorder.
type Registered = (String, String, Arc<Recorder>);

/// What one controller recorded for an object.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct History {
    pub(crate) controller: String,
    pub(crate) kind: String,
    pub(crate) reconciles: Vec<Reconciled>,
}

impl Reconciles {
    /// Adds the recorder of the controller `name` of `kind`.
    pub(crate) fn register(&self, name: &str, kind: &str, recorder: Arc<Recorder>) {
        let mut recorders = self.recorders.lock();
        recorders.retain(|(n, _, _)| n != name);
        recorders.push((name.to_owned(), kind.to_owned(), recorder));
    }

    /// What the controllers (of `kind`, if given; case-insensitive) recorded for `key`.
    pub(crate) fn of(&self, kind: Option<&str>, key: &ObjectKey) -> Vec<History> {
        let recorders: Vec<_> = self.recorders.lock().clone();
        recorders
            .into_iter()
            .filter(|(_, k, _)| kind.is_none_or(|kind| kind.eq_ignore_ascii_case(k)))
            .filter_map(|(controller, kind, recorder)| {
                Some(History {
                    controller,
                    kind,
                    reconciles: recorder.history(key)?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::why::record::{Ended, TriggerRecord, Verb, WriteRecord};
    use crate::controller::why::{EventType, Reason};

    fn record(n: u64, diff: Option<&str>) -> Reconciled {
        Reconciled {
            started_ms: now_ms() + n * 60_000,
            queued_ms: 1,
            ran_ms: 12,
            result: Ended::Ok,
            triggers: vec![TriggerRecord {
                reason: Reason::Event,
                event: Some(EventType::Modified),
                kind: None,
                namespace: None,
                name: None,
                resource_version: Some((1_000_000 + n).to_string()),
            }],
            more_triggers: 0,
            writes: vec![WriteRecord {
                verb: Verb::Apply,
                kind: "ConfigMap".into(),
                namespace: Some("team-1".into()),
                name: "generator-1".into(),
                status: false,
                code: 200,
                diff: diff.map(str::to_owned),
            }],
        }
    }

    #[test]
    fn the_last_n_reconciles_are_kept_in_order_and_only_the_newest_keeps_diffs() {
        let recorder = Recorder::new(3);
        let key = ObjectKey::new(Some("team-1"), "generator-1");
        for n in 0..5 {
            recorder.record(&key, &record(n, Some(r#"{"data":{"n":"1"}}"#)));
        }
        let history = recorder.history(&key).expect("recorded");
        let versions: Vec<_> = history
            .iter()
            .map(|r| r.triggers[0].resource_version.clone().unwrap_or_default())
            .collect();
        assert_eq!(versions, ["1000002", "1000003", "1000004"]);
        let diffs: Vec<_> = history.iter().map(|r| r.writes[0].diff.is_some()).collect();
        assert_eq!(diffs, [false, false, true]);
        assert!(recorder.history(&ObjectKey::new(None, "other")).is_none());
    }

    #[test]
    fn a_recorder_of_zero_records_nothing() {
        let recorder = Recorder::new(0);
        let key = ObjectKey::new(None, "a");
        recorder.record(&key, &record(0, None));
        assert!(recorder.history(&key).is_none());
    }

    /// The issue's memory goal: at most 300 bytes per object, amortised over 100,000 objects
    /// with 8 reconciles each (one trigger and one apply each, the newest with a 40-byte diff).
    #[test]
    #[expect(
        clippy::print_stdout,
        reason = "`scripts/bench recorder` prints the figure"
    )]
    fn eight_reconciles_of_100_000_objects_take_at_most_300_bytes_each() {
        let recorder = Recorder::new(DEFAULT_RECORDED_RECONCILES);
        let diff = r#"{"spec":{"replicas":3,"image":"web:1.2"}}"#;
        for i in 0..100_000 {
            let key = ObjectKey::new(
                Some(&format!("team-{}", i % 100)),
                &format!("generator-{i}"),
            );
            for n in 0..DEFAULT_RECORDED_RECONCILES as u64 {
                let mut r = record(n, Some(diff));
                r.writes[0].namespace = key.namespace().map(str::to_owned);
                r.writes[0].name = key.name().to_owned();
                recorder.record(&key, &r);
            }
        }
        let (bytes, objects) = recorder.footprint();
        assert_eq!(objects, 100_000);
        let per_object = bytes / objects;
        println!("flight recorder: {per_object} bytes per object (N = 8, 100,000 objects)");
        assert!(per_object <= 300, "{per_object} bytes per object");
    }
}
