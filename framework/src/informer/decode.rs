//! Turns a listed or watched object's JSON into `K`: stripped, transformed, or skipped and counted.

use std::sync::Arc;

use kube::Resource;
use kube::api::WatchEvent;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::transforms::Transforms;
use super::{Config, Stats};

/// Decodes objects for one reflector.
pub(crate) struct Decoder<K> {
    url: String,
    strip_managed_fields: bool,
    /// A compact store keeps each object's (stripped) JSON beside it.
    compact: bool,
    transforms: Arc<Transforms<K>>,
    stats: Arc<Stats>,
}

/// A decoded object, with the JSON a compact store keeps of it (`None` for a default store).
pub(crate) type Decoded<K> = (Arc<K>, Option<Vec<u8>>);

/// A watch event with its object decoded; `None` for one that does not fit `K` (logged and
/// counted).
pub(crate) type Event<K> = WatchEvent<Option<Decoded<K>>>;

impl<K: Resource + DeserializeOwned> Decoder<K> {
    pub(crate) fn new(
        url: &str,
        config: &Config,
        transforms: Arc<Transforms<K>>,
        stats: Arc<Stats>,
    ) -> Self {
        Self {
            url: url.to_owned(),
            strip_managed_fields: config.strip_managed_fields,
            compact: config.compact_hot.is_some(),
            transforms,
            stats,
        }
    }

    /// Decodes one line of a watch stream in one pass: the event and its object straight into
    /// `K`. Only an event whose object does not fit `K`, or whose JSON a compact store keeps, is
    /// read again, as an untyped tree. Either order of `type` and `object` is understood.
    ///
    /// With `exact`, every event is read as an untyped tree first, as a list's items are (see
    /// [`Self::decode`]): a streaming list's initial events fill the store as a list does, and
    /// a `Vec` decoded straight from text keeps spare capacity (an `ownerReferences` of one
    /// reference holds room for four) for as long as the object is cached.
    pub(crate) fn event(&self, line: &[u8], exact: bool) -> Result<Event<K>, serde_json::Error> {
        if !self.compact
            && !exact
            && let Ok(event) = serde_json::from_slice::<WatchEvent<K>>(line)
        {
            return Ok(map_object(event, |obj| Some((self.prepare(obj), None))));
        }
        let event = serde_json::from_slice::<WatchEvent<Value>>(line)?;
        Ok(map_object(event, |raw| self.decode(raw)))
    }

    /// Decodes one object from an untyped value.
    ///
    /// `managedFields` are dropped from the value before decoding when they are stripped, and
    /// the value is decoded by move, so its strings become the object's without a copy; and,
    /// unlike decoding from text, every list in the object is sized exactly.
    pub(crate) fn decode(&self, mut raw: Value) -> Option<Decoded<K>> {
        let json = prepare_raw(&mut raw, self.strip_managed_fields, self.compact);
        // Kept for the warning only: the value itself is consumed by the decode.
        let identity = Identity::of(&raw);
        match K::deserialize(raw) {
            Ok(obj) => Some((self.prepare(obj), json)),
            Err(err) => {
                self.skip(&identity, &err);
                None
            }
        }
    }

    /// Strips `managedFields` (if configured) and applies the transforms.
    fn prepare(&self, mut obj: K) -> Arc<K> {
        self.transforms.apply(&mut obj);
        Arc::new(obj)
    }

    /// Counts and logs an object that does not decode.
    fn skip(&self, identity: &Identity, err: &serde_json::Error) {
        Stats::count(&self.stats.decode_failures);
        tracing::warn!(
            url = self.url,
            namespace = identity.namespace,
            name = identity.name,
            error = %err,
            "skipping an object that does not decode"
        );
    }
}

/// `event` with its object, if it has one, turned by `f`.
fn map_object<T, U>(event: WatchEvent<T>, f: impl FnOnce(T) -> U) -> WatchEvent<U> {
    match event {
        WatchEvent::Added(obj) => WatchEvent::Added(f(obj)),
        WatchEvent::Modified(obj) => WatchEvent::Modified(f(obj)),
        WatchEvent::Deleted(obj) => WatchEvent::Deleted(f(obj)),
        WatchEvent::Bookmark(bookmark) => WatchEvent::Bookmark(bookmark),
        WatchEvent::Error(status) => WatchEvent::Error(status),
    }
}

/// Namespace and name of an object, for a warning about it.
struct Identity {
    namespace: String,
    name: String,
}

impl Identity {
    fn of(raw: &Value) -> Self {
        let meta = raw.get("metadata");
        let field = |name: &str| {
            meta.and_then(|m| m.get(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Self {
            namespace: field("namespace"),
            name: field("name"),
        }
    }
}

/// Drops `metadata.managedFields` from `raw` if they are stripped; returns the compact JSON a
/// compact store keeps of it (`None` for a default store).
fn prepare_raw(raw: &mut Value, strip_managed_fields: bool, compact: bool) -> Option<Vec<u8>> {
    if strip_managed_fields
        && let Some(meta) = raw.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("managedFields");
    }
    compact.then(|| serde_json::to_vec(raw).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    fn raw() -> Value {
        json!({
            "metadata": {
                "name": "a",
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]
            },
            "data": {"k": "v"}
        })
    }

    fn decoder(strip: bool, stats: &Arc<Stats>) -> Decoder<ConfigMap> {
        let config = Config::default().strip_managed_fields(strip);
        let transforms = Arc::new(Transforms::new(strip));
        Decoder::new("/cms", &config, transforms, Arc::clone(stats))
    }

    #[test]
    fn the_json_a_compact_store_keeps_leaves_out_managed_fields_only_when_they_are_stripped()
    -> anyhow::Result<()> {
        let mut stripped = raw();
        let json = prepare_raw(&mut stripped, true, true).unwrap_or_default();
        let expected = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
        assert_eq!(serde_json::from_slice::<Value>(&json)?, expected);
        assert_eq!(
            stripped, expected,
            "the value decoded afterwards is stripped too"
        );
        let mut kept = raw();
        let json = prepare_raw(&mut kept, false, true).unwrap_or_default();
        assert_eq!(serde_json::from_slice::<Value>(&json)?, raw());
        assert_eq!(
            prepare_raw(&mut raw(), true, false),
            None,
            "a default store keeps no JSON"
        );
        Ok(())
    }

    fn added(object: &Value) -> Vec<u8> {
        json!({"type": "ADDED", "object": object})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn events_and_trees_decode_alike_and_managed_fields_go_only_when_stripped() -> anyhow::Result<()>
    {
        for strip in [true, false] {
            let decoder = decoder(strip, &Arc::default());
            let WatchEvent::Added(Some((from_line, _))) = decoder.event(&added(&raw()), false)?
            else {
                anyhow::bail!("an ADDED event with its object");
            };
            let (from_tree, _) = decoder.decode(raw()).expect("decodes");
            assert_eq!(from_line, from_tree);
            assert_eq!(from_line.metadata.managed_fields.is_none(), strip);
            assert_eq!(
                from_line
                    .data
                    .as_ref()
                    .and_then(|d| d.get("k"))
                    .map(String::as_str),
                Some("v")
            );
        }
        Ok(())
    }

    #[test]
    fn an_exact_event_holds_no_spare_capacity_in_its_lists() -> anyhow::Result<()> {
        let decoder = decoder(true, &Arc::default());
        let owner = json!({"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1"});
        let line = added(&json!({"metadata": {"name": "b", "ownerReferences": [owner]}}));
        let WatchEvent::Added(Some((exact, _))) = decoder.event(&line, true)? else {
            anyhow::bail!("an ADDED event with its object");
        };
        let owners = exact.metadata.owner_references.as_ref();
        assert_eq!(owners.map(Vec::len), Some(1));
        assert_eq!(owners.map(Vec::capacity), Some(1));
        Ok(())
    }

    #[test]
    fn an_event_whose_object_comes_first_decodes_too() -> anyhow::Result<()> {
        let decoder = decoder(true, &Arc::default());
        let line = format!(r#"{{"object":{},"type":"MODIFIED"}}"#, raw());
        let event = decoder.event(line.as_bytes(), false)?;
        assert!(
            matches!(&event, WatchEvent::Modified(Some((obj, _))) if obj.metadata.name.as_deref() == Some("a")),
            "{event:?}"
        );
        Ok(())
    }

    #[test]
    fn an_object_that_does_not_fit_is_skipped_and_counted() -> anyhow::Result<()> {
        let stats = Arc::new(Stats::default());
        let decoder = decoder(true, &stats);
        let event = decoder.event(
            &added(&json!({"metadata": {"name": "a"}, "data": 7})),
            false,
        )?;
        assert!(matches!(event, WatchEvent::Added(None)), "{event:?}");
        assert_eq!(stats.decode_failures(), 1);
        assert!(
            decoder.event(b"{\"type\":\"ADDED\",", false).is_err(),
            "a line that is not JSON is an error, not a skipped object"
        );
        Ok(())
    }
}
