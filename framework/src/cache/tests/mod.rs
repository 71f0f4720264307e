//! The compact store, through the store's API.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use serde_json::json;

use super::store::{compact_store, compact_store_with};
use super::{Change, Decode, NAMESPACE_INDEX, ObjectKey};

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
fn a_store_handed_the_json_keeps_it_and_decodes_it_with_its_own_decoder() -> anyhow::Result<()> {
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
