//! Packs a [`Reconciled`] into a few dozen bytes and back: varints, kinds interned, names that
//! repeat the reconciled object's written as one byte.

use std::collections::HashMap;
use std::sync::Arc;

use super::record::{Ended, Reconciled, TriggerRecord, Verb, WriteRecord};
use super::trigger::{EventType, Reason};
use crate::cache::ObjectKey;

/// How many distinct kinds are interned; more are written out in full.
const MAX_INTERNED: usize = 4096;
/// The longest error message kept, in bytes.
pub(crate) const MAX_MESSAGE: usize = 512;

/// Kind names by number, shared by every record of a recorder.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    ids: HashMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
}

impl Interner {
    fn id(&mut self, name: &str) -> Option<u32> {
        if let Some(id) = self.ids.get(name) {
            return Some(*id);
        }
        if self.names.len() >= MAX_INTERNED {
            return None;
        }
        let id = u32::try_from(self.names.len()).ok()?;
        let name: Arc<str> = name.into();
        self.names.push(Arc::clone(&name));
        self.ids.insert(name, id);
        Some(id)
    }

    /// Bytes held, for the memory measurement.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        self.names.iter().map(|n| n.len() + 16).sum::<usize>()
            + self.names.capacity() * 16
            + self.ids.capacity() * 24
    }
}

/// Writes `record`, a reconcile of `object` that started `since_ms` after the recorder's base.
pub(crate) fn encode(
    record: &Reconciled,
    since_ms: u64,
    object: &ObjectKey,
    interner: &mut Interner,
    out: &mut Vec<u8>,
) {
    varint(out, since_ms);
    varint(out, record.queued_ms);
    varint(out, record.ran_ms);
    match &record.result {
        Ended::Ok => out.push(0),
        Ended::Requeue => out.push(1),
        Ended::RequeueAfter { delay_ms } => {
            out.push(2);
            varint(out, *delay_ms);
        }
        Ended::Error { message } => message_of(out, 3, message),
        Ended::Timeout { message } => message_of(out, 4, message),
        Ended::Panic { message } => message_of(out, 5, message),
    }
    // The count of triggers, and whether more were dropped (rare: then their number follows).
    let more = record.more_triggers > 0;
    varint(out, (record.triggers.len() as u64) << 1 | u64::from(more));
    if more {
        varint(out, u64::from(record.more_triggers));
    }
    for trigger in &record.triggers {
        let has_object = trigger.name.is_some();
        out.push(
            reason_tag(trigger.reason) | event_tag(trigger.event) << 4 | u8::from(has_object) << 6,
        );
        if has_object {
            kind(out, trigger.kind.as_deref().unwrap_or_default(), interner);
            place(
                out,
                object,
                trigger.namespace.as_deref(),
                trigger.name.as_deref().unwrap_or_default(),
            );
        }
        match trigger.resource_version.as_deref() {
            None => out.push(0),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n.to_string() == v => {
                    out.push(1);
                    varint(out, n);
                }
                _ => {
                    out.push(2);
                    text(out, v);
                }
            },
        }
    }
    varint(out, record.writes.len() as u64);
    for write in &record.writes {
        out.push(verb_tag(write.verb) | u8::from(write.status) << 4);
        kind(out, &write.kind, interner);
        place(out, object, write.namespace.as_deref(), &write.name);
        // 200 in one byte: the distance from 200, zigzagged.
        let from_200 = i64::from(write.code) - 200;
        varint(out, ((from_200 << 1) ^ (from_200 >> 63)).cast_unsigned());
        match &write.diff {
            None => out.push(0),
            Some(diff) => {
                out.push(1);
                text(out, diff);
            }
        }
    }
}

/// Reads a record written by [`encode`] for `object`, `base_ms` being the recorder's base.
pub(crate) fn decode(
    bytes: &[u8],
    base_ms: u64,
    object: &ObjectKey,
    interner: &Interner,
) -> Option<Reconciled> {
    let mut r = Reader { bytes, at: 0 };
    let started_ms = base_ms + r.varint()?;
    let queued_ms = r.varint()?;
    let ran_ms = r.varint()?;
    let result = match r.byte()? {
        0 => Ended::Ok,
        1 => Ended::Requeue,
        2 => Ended::RequeueAfter {
            delay_ms: r.varint()?,
        },
        3 => Ended::Error { message: r.text()? },
        4 => Ended::Timeout { message: r.text()? },
        5 => Ended::Panic { message: r.text()? },
        _ => return None,
    };
    let counted = r.varint()?;
    let count = counted >> 1;
    let more_triggers = if counted & 1 == 1 {
        u32::try_from(r.varint()?).ok()?
    } else {
        0
    };
    let mut triggers = Vec::new();
    for _ in 0..count {
        let tag = r.byte()?;
        let (kind, namespace, name) = if tag & 0x40 != 0 {
            let kind = r.kind(interner)?;
            let (namespace, name) = r.place(object)?;
            (Some(kind), namespace, Some(name))
        } else {
            (None, None, None)
        };
        let resource_version = match r.byte()? {
            0 => None,
            1 => Some(r.varint()?.to_string()),
            _ => Some(r.text()?),
        };
        triggers.push(TriggerRecord {
            reason: reason_of(tag & 0x0f)?,
            event: event_of((tag >> 4) & 0x03),
            kind,
            namespace,
            name,
            resource_version,
        });
    }
    let count = r.varint()?;
    let mut writes = Vec::new();
    for _ in 0..count {
        let tag = r.byte()?;
        let kind = r.kind(interner)?;
        let (namespace, name) = r.place(object)?;
        let zigzag = r.varint()?;
        let from_200 = (zigzag >> 1).cast_signed() ^ -(zigzag & 1).cast_signed();
        let code = u16::try_from(from_200 + 200).ok()?;
        let diff = match r.byte()? {
            0 => None,
            _ => Some(r.text()?),
        };
        writes.push(WriteRecord {
            verb: verb_of(tag & 0x0f)?,
            kind,
            namespace,
            name,
            status: tag & 0x10 != 0,
            code,
            diff,
        });
    }
    Some(Reconciled {
        started_ms,
        queued_ms,
        ran_ms,
        result,
        triggers,
        more_triggers,
        writes,
    })
}

/// Appends `n` as a LEB128 varint.
pub(crate) fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(low_bits(n) | 0x80);
        n >>= 7;
    }
    out.push(low_bits(n));
}

/// The low seven bits of `n`.
fn low_bits(n: u64) -> u8 {
    u8::try_from(n & 0x7f).unwrap_or_default()
}

/// Reads a varint at the start of `bytes`: its value and length.
pub(crate) fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut n = 0u64;
    for (i, b) in bytes.iter().enumerate().take(10) {
        n |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

fn text(out: &mut Vec<u8>, s: &str) {
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn message_of(out: &mut Vec<u8>, tag: u8, message: &str) {
    out.push(tag);
    text(out, truncate(message, MAX_MESSAGE));
}

/// `s` cut to at most `max` bytes, at a character boundary.
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A kind: its interned number + 1, or 0 and the name.
fn kind(out: &mut Vec<u8>, name: &str, interner: &mut Interner) {
    if let Some(id) = interner.id(name) {
        varint(out, u64::from(id) + 1);
    } else {
        out.push(0);
        text(out, name);
    }
}

/// A namespace and name, one byte each when they are the reconciled object's.
fn place(out: &mut Vec<u8>, object: &ObjectKey, namespace: Option<&str>, name: &str) {
    match namespace {
        ns if ns == object.namespace() => out.push(0),
        None => out.push(1),
        Some(ns) => {
            out.push(2);
            text(out, ns);
        }
    }
    if name == object.name() {
        out.push(0);
    } else {
        out.push(1);
        text(out, name);
    }
}

fn reason_tag(reason: Reason) -> u8 {
    let at = REASONS.iter().position(|r| *r == reason).unwrap_or(0);
    u8::try_from(at).unwrap_or_default()
}

fn reason_of(tag: u8) -> Option<Reason> {
    REASONS.get(usize::from(tag)).copied()
}

const REASONS: [Reason; 10] = [
    Reason::Event,
    Reason::Owned,
    Reason::Watched,
    Reason::Resync,
    Reason::Listed,
    Reason::Requested,
    Reason::Requeue,
    Reason::RequeueAfter,
    Reason::Retry,
    Reason::Stream,
];

fn event_tag(event: Option<EventType>) -> u8 {
    match event {
        None => 0,
        Some(EventType::Added) => 1,
        Some(EventType::Modified) => 2,
        Some(EventType::Deleted) => 3,
    }
}

fn event_of(tag: u8) -> Option<EventType> {
    match tag {
        1 => Some(EventType::Added),
        2 => Some(EventType::Modified),
        3 => Some(EventType::Deleted),
        _ => None,
    }
}

const VERBS: [Verb; 5] = [
    Verb::Create,
    Verb::Update,
    Verb::Patch,
    Verb::Apply,
    Verb::Delete,
];

fn verb_tag(verb: Verb) -> u8 {
    let at = VERBS.iter().position(|v| *v == verb).unwrap_or(0);
    u8::try_from(at).unwrap_or_default()
}

fn verb_of(tag: u8) -> Option<Verb> {
    VERBS.get(usize::from(tag)).copied()
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let (n, len) = read_varint(self.bytes.get(self.at..)?)?;
        self.at += len;
        Some(n)
    }

    fn text(&mut self) -> Option<String> {
        let len = usize::try_from(self.varint()?).ok()?;
        let bytes = self.bytes.get(self.at..self.at + len)?;
        self.at += len;
        String::from_utf8(bytes.to_vec()).ok()
    }

    fn kind(&mut self, interner: &Interner) -> Option<String> {
        match self.varint()? {
            0 => self.text(),
            id => interner
                .names
                .get(usize::try_from(id - 1).ok()?)
                .map(ToString::to_string),
        }
    }

    fn place(&mut self, object: &ObjectKey) -> Option<(Option<String>, String)> {
        let namespace = match self.byte()? {
            0 => object.namespace().map(str::to_owned),
            1 => None,
            _ => Some(self.text()?),
        };
        let name = match self.byte()? {
            0 => object.name().to_owned(),
            _ => self.text()?,
        };
        Some((namespace, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Reconciled {
        Reconciled {
            started_ms: 1_000_123,
            queued_ms: 3,
            ran_ms: 250,
            result: Ended::Error {
                message: "admission webhook denied: é".into(),
            },
            triggers: vec![
                TriggerRecord {
                    reason: Reason::Owned,
                    event: Some(EventType::Modified),
                    kind: Some("ConfigMap".into()),
                    namespace: Some("prod".into()),
                    name: Some("web-config".into()),
                    resource_version: Some("4711".into()),
                },
                TriggerRecord {
                    reason: Reason::Watched,
                    event: Some(EventType::Deleted),
                    kind: Some("Namespace".into()),
                    namespace: None,
                    name: Some("prod".into()),
                    resource_version: Some("x7".into()),
                },
                TriggerRecord {
                    reason: Reason::RequeueAfter,
                    event: None,
                    kind: None,
                    namespace: None,
                    name: None,
                    resource_version: None,
                },
            ],
            more_triggers: 2,
            writes: vec![WriteRecord {
                verb: Verb::Apply,
                kind: "ConfigMap".into(),
                namespace: Some("prod".into()),
                name: "web".into(),
                status: true,
                code: 422,
                diff: Some(r#"{"data":{"a":"2"}}"#.into()),
            }],
        }
    }

    #[test]
    fn a_record_reads_back_as_it_was_written() {
        let object = ObjectKey::new(Some("prod"), "web");
        let mut interner = Interner::default();
        let mut bytes = Vec::new();
        let record = full();
        encode(&record, 123, &object, &mut interner, &mut bytes);
        assert_eq!(decode(&bytes, 1_000_000, &object, &interner), Some(record));
    }

    #[test]
    fn a_typical_record_takes_a_few_dozen_bytes() {
        let object = ObjectKey::new(Some("prod"), "web");
        let mut interner = Interner::default();
        let mut bytes = Vec::new();
        let record = Reconciled {
            started_ms: 3_600_000,
            queued_ms: 2,
            ran_ms: 40,
            result: Ended::Ok,
            triggers: vec![TriggerRecord {
                reason: Reason::Event,
                event: Some(EventType::Modified),
                kind: None,
                namespace: None,
                name: None,
                resource_version: Some("1234567".into()),
            }],
            more_triggers: 0,
            writes: vec![WriteRecord {
                verb: Verb::Apply,
                kind: "ConfigMap".into(),
                namespace: Some("prod".into()),
                name: "web".into(),
                status: false,
                code: 200,
                diff: None,
            }],
        };
        encode(
            &record,
            record.started_ms,
            &object,
            &mut interner,
            &mut bytes,
        );
        assert!(bytes.len() <= 20, "{} bytes", bytes.len());
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_MESSAGE);
        assert_eq!(truncate(&long, MAX_MESSAGE).len(), MAX_MESSAGE);
        assert_eq!(truncate("ééé", 3), "é");
    }
}
