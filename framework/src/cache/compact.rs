//! Keeps cached objects as compact JSON, decoding them on read, with the hot ones kept decoded.

use std::sync::Arc;

use kube::Resource;
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::hot::Hot;
use super::slot::Encoded;
use super::store::with_compact;
use super::{ObjectKey, Store, Writer};

/// Turns a cached object's JSON back into the object.
pub(crate) type Decode<K> = Arc<dyn Fn(&[u8]) -> serde_json::Result<K> + Send + Sync>;

/// Turns an object into the JSON the store keeps.
type Encode<K> = Arc<dyn Fn(&K) -> serde_json::Result<Vec<u8>> + Send + Sync>;

/// Creates an empty compact store: like [`store`](super::store), but each object is kept as
/// compact JSON (a realistic Pod: 4 KB instead of 19 KB) and decoded when read. The `hot`
/// objects read most recently stay decoded (up to `hot`, rounded up to even), so a controller
/// that reads the same objects again pays the decode once.
///
/// Reads still hand out `Arc<K>`; [`Store::get`] of a cold object decodes it (tens of
/// microseconds for a Pod, see the book's performance chapter) and makes it hot, while
/// [`Store::list`] and [`Store::by_index`] decode every cold object they return without making
/// it hot, so prefer [`Store::keys`] or [`Store::index_keys`] with `get` on large stores. Two
/// reads of a cold object give equal objects in different allocations. Index functions and
/// resourceVersion checks work as in the default store; an update or a delete decodes the
/// previous state once, for the indexes and for the change it reports.
#[must_use]
pub fn compact_store<K>(hot: usize) -> (Store<K>, Writer<K>)
where
    K: Resource + Serialize + DeserializeOwned + 'static,
{
    let encode: Encode<K> = Arc::new(|obj: &K| serde_json::to_vec(obj));
    let decode: Decode<K> = Arc::new(|json: &[u8]| serde_json::from_slice(json));
    with_compact(Some(Compact::new(hot, decode, Some(encode))))
}

/// A compact store whose writer is handed each object's JSON along with the object (an
/// informer's reflector has it already), so `K` need not be `Serialize`.
pub(crate) fn compact_store_with<K: Resource + 'static>(
    hot: usize,
    decode: Decode<K>,
) -> (Store<K>, Writer<K>) {
    with_compact(Some(Compact::new(hot, decode, None)))
}

/// The codec and the hot set of a compact store.
pub(super) struct Compact<K> {
    decode: Decode<K>,
    encode: Option<Encode<K>>,
    hot: Mutex<Hot<K>>,
}

impl<K> Compact<K> {
    fn new(hot: usize, decode: Decode<K>, encode: Option<Encode<K>>) -> Self {
        Self {
            decode,
            encode,
            hot: Mutex::new(Hot::new(hot)),
        }
    }

    /// The object behind `encoded`: the hot one, or a fresh decode that becomes hot when
    /// `remember` is set. The caller holds the store's lock, so no write can interleave.
    pub(super) fn read(
        &self,
        key: &ObjectKey,
        encoded: &Encoded,
        remember: bool,
    ) -> Option<Arc<K>> {
        let found = if remember {
            self.hot.lock().get(key)
        } else {
            self.hot.lock().peek(key)
        };
        if found.is_some() {
            return found;
        }
        match (self.decode)(encoded.json()) {
            Ok(obj) => {
                let obj = Arc::new(obj);
                if remember {
                    self.hot.lock().insert(key.clone(), Arc::clone(&obj));
                }
                Some(obj)
            }
            Err(err) => {
                // The store encoded this JSON itself, so this is a broken invariant; the object
                // reads as absent rather than taking the reader down.
                tracing::error!(key = %key, error = %err, "a compact store could not decode an object it holds");
                None
            }
        }
    }

    /// The object's new state replaces its hot one, if it is hot.
    pub(super) fn refresh(&self, key: &ObjectKey, obj: &Arc<K>) {
        self.hot.lock().refresh(key, obj);
    }

    /// A deleted object is no longer hot.
    pub(super) fn forget(&self, key: &ObjectKey) {
        self.hot.lock().remove(key);
    }

    /// How many objects are hot.
    #[cfg(test)]
    pub(super) fn hot_len(&self) -> usize {
        self.hot.lock().len()
    }
}

impl<K: Resource> Compact<K> {
    /// Packs `obj` with `json` (or its own encoding); `None` if it cannot be encoded, in which
    /// case the store keeps it decoded.
    pub(super) fn encode(&self, obj: &K, json: Option<Vec<u8>>) -> Option<Encoded> {
        let json = match json {
            Some(json) => json,
            None => match (self.encode.as_ref()?)(obj) {
                Ok(json) => json,
                Err(err) => {
                    tracing::warn!(key = %ObjectKey::of(obj), error = %err, "keeping an object that does not encode decoded");
                    return None;
                }
            },
        };
        Some(Encoded::new(obj.meta().resource_version.as_deref(), &json))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde_json::json;

    use super::*;
    use crate::cache::{Change, NAMESPACE_INDEX};

    /// A Pod with what round trips are most likely to lose: managedFields with `fieldsV1`,
    /// quantities, int-or-string ports, timestamps, owner references, status conditions.
    fn rich_pod(name: &str, node: &str, rv: &str) -> anyhow::Result<Arc<Pod>> {
        Ok(Arc::new(serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "shop",
                "uid": "3f1c2d7e-8b9a-4c1d-9e2f-000000000001",
                "resourceVersion": rv,
                "creationTimestamp": "2026-11-20T10:00:00Z",
                "labels": {"app": "web", "pod-template-hash": "7d4f4bd8dc"},
                "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-20T09:59:58Z"},
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4f4bd8dc",
                    "uid": "0b7a1b0e-1111-2222-3333-444455556666", "controller": true,
                    "blockOwnerDeletion": true
                }],
                "managedFields": [{
                    "manager": "kube-controller-manager", "operation": "Update",
                    "apiVersion": "v1", "time": "2026-11-20T10:00:00Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
                }]
            },
            "spec": {
                "nodeName": node,
                "containers": [{
                    "name": "web",
                    "image": "registry.example/web:1.2.3",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}},
                    "livenessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 10}
                }]
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True",
                                "lastTransitionTime": "2026-11-20T10:00:05Z"}],
                "startTime": "2026-11-20T10:00:01Z"
            }
        }))?))
    }

    fn node(pod: &Pod) -> Vec<String> {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect()
    }

    fn names(mut keys: Vec<ObjectKey>) -> Vec<String> {
        keys.sort();
        keys.iter().map(|k| k.name().to_owned()).collect()
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("shop"), name)
    }

    #[test]
    fn a_compact_store_hands_back_objects_equal_to_those_stored() -> anyhow::Result<()> {
        let (store, writer) = compact_store::<Pod>(8);
        let pod = rich_pod("web-1", "node-1", "10")?;
        writer.apply(Arc::clone(&pod));
        assert!(store.is_compact());
        let read = store.get(&key("web-1"));
        assert_eq!(read.as_deref(), Some(pod.as_ref()));
        assert!(
            read.is_some_and(|read| !Arc::ptr_eq(&read, &pod)),
            "a cold read decodes a copy"
        );
        assert_eq!(store.list(), [Arc::clone(&pod)]);

        let (maps, map_writer) = compact_store::<ConfigMap>(0);
        let map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "settings", "namespace": "shop", "resourceVersion": "3"},
            "data": {"mode": "fast", "empty": ""},
            "binaryData": {"blob": "AAECAw=="},
            "immutable": true
        }))?;
        map_writer.apply(Arc::new(map.clone()));
        assert_eq!(maps.get(&key("settings")).as_deref(), Some(&map));
        Ok(())
    }

    #[test]
    fn indexes_of_a_compact_store_follow_adds_updates_and_deletes() -> anyhow::Result<()> {
        let (store, writer) = compact_store::<Pod>(0);
        writer.apply(rich_pod("a", "n1", "1")?);
        writer.add_index("node", node)?;
        writer.apply(rich_pod("b", "n1", "1")?);
        assert_eq!(names(store.index_keys("node", "n1")?), ["a", "b"]);
        writer.apply(rich_pod("b", "n2", "2")?);
        assert_eq!(names(store.index_keys("node", "n1")?), ["a"]);
        assert_eq!(names(store.index_keys("node", "n2")?), ["b"]);
        let on_n2 = store.by_index("node", "n2")?;
        assert_eq!(node(&on_n2[0]), ["n2"]);
        writer.delete(rich_pod("a", "n1", "3")?);
        assert!(store.index_keys("node", "n1")?.is_empty());
        assert_eq!(names(store.index_keys(NAMESPACE_INDEX, "shop")?), ["b"]);
        Ok(())
    }

    #[test]
    fn an_update_replaces_a_hot_object_and_every_read_sees_the_new_state() -> anyhow::Result<()> {
        let (store, writer) = compact_store::<Pod>(8);
        writer.apply(rich_pod("a", "n1", "1")?);
        let first = store
            .get(&key("a"))
            .ok_or_else(|| anyhow::anyhow!("a is cached"))?;
        let again = store
            .get(&key("a"))
            .ok_or_else(|| anyhow::anyhow!("a is cached"))?;
        assert!(Arc::ptr_eq(&first, &again), "a hot object is decoded once");

        let newer = rich_pod("a", "n2", "2")?;
        let change = writer.apply(Arc::clone(&newer));
        assert!(
            matches!(&change, Some(Change::Updated { old, .. }) if node(old) == ["n1"]),
            "the update carries the old state: {change:?}"
        );
        let read = store
            .get(&key("a"))
            .ok_or_else(|| anyhow::anyhow!("a is cached"))?;
        assert!(Arc::ptr_eq(&read, &newer), "the hot entry is the new state");
        assert_eq!(store.list(), [Arc::clone(&newer)]);

        let (cold, cold_writer) = compact_store::<Pod>(0);
        cold_writer.apply(rich_pod("a", "n1", "1")?);
        cold_writer.apply(rich_pod("a", "n3", "2")?);
        assert_eq!(
            cold.get(&key("a")).map(|p| node(&p)),
            Some(vec!["n3".into()])
        );
        Ok(())
    }

    #[test]
    fn a_deleted_object_leaves_the_store_and_the_hot_set() -> anyhow::Result<()> {
        let (store, writer) = compact_store::<Pod>(8);
        writer.apply(rich_pod("a", "n1", "1")?);
        assert!(store.get(&key("a")).is_some());
        assert_eq!(store.hot_len(), 1);
        assert!(matches!(
            writer.delete(rich_pod("a", "n1", "2")?),
            Some(Change::Deleted(_))
        ));
        assert!(store.get(&key("a")).is_none());
        assert!(store.is_empty());
        assert_eq!(store.hot_len(), 0);
        Ok(())
    }

    #[test]
    fn a_compact_relist_reports_changes_with_decoded_old_states_and_deletes_what_vanished()
    -> anyhow::Result<()> {
        let (store, writer) = compact_store::<Pod>(4);
        writer.apply(rich_pod("same", "n1", "1")?);
        writer.apply(rich_pod("changed", "n1", "1")?);
        writer.apply(rich_pod("gone", "n1", "1")?);
        let mut relist = writer.relist();
        assert!(relist.apply(rich_pod("same", "n1", "1")?).is_none());
        assert!(matches!(
            relist.apply(rich_pod("changed", "n2", "2")?),
            Some(Change::Updated { old, new }) if node(&old) == ["n1"] && node(&new) == ["n2"]
        ));
        assert!(matches!(
            relist.apply(rich_pod("new", "n1", "1")?),
            Some(Change::Added(_))
        ));
        let deleted = relist.finish();
        assert!(
            matches!(deleted.as_slice(), [Change::Deleted(d)]
                if d.is_final_state_unknown() && d.object().metadata.name.as_deref() == Some("gone")),
            "{deleted:?}"
        );
        assert_eq!(names(store.keys()), ["changed", "new", "same"]);
        Ok(())
    }

    #[test]
    fn a_store_handed_the_json_keeps_it_and_decodes_it_with_its_own_decoder() -> anyhow::Result<()>
    {
        let decode: Decode<ConfigMap> = Arc::new(|json: &[u8]| {
            let mut map: ConfigMap = serde_json::from_slice(json)?;
            map.metadata.labels = Some([("decoded".into(), "yes".into())].into());
            Ok(map)
        });
        let (store, writer) = compact_store_with(2, decode);
        let json = br#"{"metadata":{"name":"a","namespace":"shop","resourceVersion":"1"},"data":{"k":"v"},"unknownField":1}"#;
        let map: ConfigMap = serde_json::from_slice(json)?;
        writer.apply_with_json(Arc::new(map), Some(json.to_vec()));
        let read = store
            .get(&key("a"))
            .ok_or_else(|| anyhow::anyhow!("a is cached"))?;
        assert_eq!(
            read.metadata
                .labels
                .as_ref()
                .map(std::collections::BTreeMap::len),
            Some(1)
        );
        assert_eq!(
            read.data
                .as_ref()
                .and_then(|d| d.get("k"))
                .map(String::as_str),
            Some("v")
        );
        // Without JSON and without an encoder the object is kept decoded, not lost.
        writer.apply(Arc::new(ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("b".into()),
                namespace: Some("shop".into()),
                ..Default::default()
            },
            ..ConfigMap::default()
        }));
        assert!(store.get(&key("b")).is_some());
        Ok(())
    }
}
