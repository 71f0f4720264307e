//! Tests of the store: puts, deletes, relists, indexes and reads by key and by name.

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::api::ObjectMeta;

use super::*;

fn pod(ns: &str, name: &str, node: &str, rv: &str) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            ..PodSpec::default()
        }),
        ..Pod::default()
    })
}

fn by_node(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

fn sorted_names(pods: &[Arc<Pod>]) -> Vec<String> {
    let mut names: Vec<String> = pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

#[test]
fn readers_get_the_same_allocation_the_writer_stored() {
    let (store, writer) = store::<Pod>();
    let stored = pod("ns", "a", "n1", "1");
    writer.apply(Arc::clone(&stored));
    let read = store.get(&ObjectKey::new(Some("ns"), "a"));
    assert!(read.is_some_and(|p| Arc::ptr_eq(&p, &stored)));
    assert_eq!(store.len(), 1);
}

#[test]
fn a_lookup_by_name_finds_what_a_lookup_by_key_finds() {
    let (store, writer) = store::<Pod>();
    let stored = pod("ns", "a", "n1", "1");
    writer.apply(Arc::clone(&stored));
    let by_name = store.get_by_name(Some("ns"), "a");
    assert!(by_name.is_some_and(|p| Arc::ptr_eq(&p, &stored)));
    assert!(store.get_by_name(Some("ns"), "b").is_none());
    assert!(store.get_by_name(None, "a").is_none(), "a is namespaced");
    assert!(store.get_by_name(Some("other"), "a").is_none());
}

#[test]
fn an_object_with_an_unchanged_resource_version_is_no_change_and_keeps_the_cached_arc() {
    let (store, writer) = store::<Pod>();
    let first = pod("ns", "a", "n1", "1");
    assert!(matches!(
        writer.apply(Arc::clone(&first)),
        Some(Change::Added(_))
    ));
    assert!(writer.apply(pod("ns", "a", "n1", "1")).is_none());
    assert!(store.list().iter().all(|p| Arc::ptr_eq(p, &first)));
    let change = writer.apply(pod("ns", "a", "n2", "2"));
    assert!(
        matches!(change, Some(Change::Updated { old, .. }) if Arc::ptr_eq(&old, &first)),
        "a new resourceVersion is an update that carries the old state"
    );
}

#[test]
fn indexes_follow_adds_updates_and_deletes() -> anyhow::Result<()> {
    let (store, writer) = store::<Pod>();
    writer.add_index("node", by_node)?;
    writer.apply(pod("ns", "a", "n1", "1"));
    writer.apply(pod("ns", "b", "n1", "1"));
    writer.apply(pod("other", "c", "n2", "1"));
    assert_eq!(sorted_names(&store.by_index("node", "n1")?), ["a", "b"]);
    writer.apply(pod("ns", "b", "n2", "2"));
    assert_eq!(sorted_names(&store.by_index("node", "n1")?), ["a"]);
    assert_eq!(sorted_names(&store.by_index("node", "n2")?), ["b", "c"]);
    writer.delete(pod("other", "c", "n2", "3"));
    assert_eq!(
        store.index_keys("node", "n2")?,
        [ObjectKey::new(Some("ns"), "b")]
    );
    let mut values = store.index_values("node")?;
    values.sort();
    assert_eq!(values, ["n1", "n2"]);
    assert_eq!(
        sorted_names(&store.by_index(NAMESPACE_INDEX, "ns")?),
        ["a", "b"]
    );
    assert!(store.by_index(NAMESPACE_INDEX, "other")?.is_empty());
    Ok(())
}

#[test]
fn an_index_added_late_covers_objects_already_cached_and_unknown_indexes_are_errors()
-> anyhow::Result<()> {
    let (store, writer) = store::<Pod>();
    writer.apply(pod("ns", "a", "n1", "1"));
    writer.add_index("node", by_node)?;
    assert_eq!(sorted_names(&store.by_index("node", "n1")?), ["a"]);
    assert!(matches!(
        writer.add_index("node", by_node),
        Err(Error::IndexExists(_))
    ));
    assert!(matches!(
        store.by_index("nope", "x"),
        Err(Error::UnknownIndex(_))
    ));
    Ok(())
}

#[test]
fn a_relist_reports_only_what_changed_and_deletes_what_vanished_with_unknown_final_state() {
    let (store, writer) = store::<Pod>();
    writer.apply(pod("ns", "same", "n1", "1"));
    writer.apply(pod("ns", "changed", "n1", "1"));
    writer.apply(pod("ns", "gone", "n1", "1"));
    let mut relist = writer.relist();
    assert!(relist.apply(pod("ns", "same", "n1", "1")).is_none());
    assert!(matches!(
        relist.apply(pod("ns", "changed", "n1", "2")),
        Some(Change::Updated { .. })
    ));
    assert!(matches!(
        relist.apply(pod("ns", "new", "n1", "1")),
        Some(Change::Added(_))
    ));
    let deleted = relist.finish();
    assert_eq!(deleted.len(), 1);
    assert!(matches!(
        &deleted[0],
        Change::Deleted(d) if d.is_final_state_unknown() && d.object().metadata.name.as_deref() == Some("gone")
    ));
    assert_eq!(sorted_names(&store.list()), ["changed", "new", "same"]);
    assert!(
        store
            .by_index(NAMESPACE_INDEX, "ns")
            .is_ok_and(|p| p.len() == 3)
    );
}

#[test]
fn an_initial_list_adds_everything_deletes_nothing_and_the_next_relist_deletes_again() {
    let (store, writer) = store::<Pod>();
    let mut initial = writer.relist();
    for name in ["a", "b"] {
        assert!(matches!(
            initial.apply(pod("ns", name, "n1", "1")),
            Some(Change::Added(_))
        ));
    }
    assert!(initial.finish().is_empty());
    assert_eq!(sorted_names(&store.list()), ["a", "b"]);

    let mut relist = writer.relist();
    assert!(relist.apply(pod("ns", "a", "n1", "1")).is_none());
    let deleted = relist.finish();
    assert_eq!(deleted.len(), 1);
    assert!(matches!(
        &deleted[0],
        Change::Deleted(d) if d.object().metadata.name.as_deref() == Some("b")
    ));
    assert_eq!(sorted_names(&store.list()), ["a"]);
}

#[test]
fn a_deletion_amid_a_relist_is_final_and_the_relist_ends_without_reporting_it_again() {
    let (store, writer) = store::<Pod>();
    writer.apply(pod("ns", "cached", "n1", "1"));
    writer.apply(pod("ns", "kept", "n1", "1"));
    let mut relist = writer.relist();
    assert!(relist.apply(pod("ns", "streamed", "n1", "2")).is_some());
    for name in ["streamed", "cached"] {
        assert!(matches!(
            relist.delete(pod("ns", name, "n1", "3")),
            Some(Change::Deleted(d)) if !d.is_final_state_unknown()
        ));
    }
    assert!(relist.apply(pod("ns", "kept", "n1", "1")).is_none());
    assert!(
        relist.finish().is_empty(),
        "what was deleted amid the relist is not deleted again"
    );
    assert_eq!(sorted_names(&store.list()), ["kept"]);
}

#[test]
fn a_relist_of_one_namespace_deletes_only_that_namespaces_missing_objects() {
    let (store, writer) = store::<Pod>();
    for (ns, name) in [("a", "kept"), ("a", "gone"), ("b", "other")] {
        writer.apply(pod(ns, name, "n1", "1"));
    }
    let mut relist = writer.relist_in("a");
    assert!(relist.apply(pod("a", "kept", "n1", "1")).is_none());
    let deleted = relist.finish();
    assert_eq!(deleted.len(), 1, "only a/gone: {deleted:?}");
    assert!(
        matches!(&deleted[0], Change::Deleted(Deleted::FinalStateUnknown(p))
        if p.metadata.name.as_deref() == Some("gone"))
    );
    assert!(store.get(&ObjectKey::new(Some("b"), "other")).is_some());
    assert_eq!(store.len(), 2);
}

#[test]
fn the_first_list_of_a_namespace_deletes_nothing_even_when_other_namespaces_are_cached() {
    let (store, writer) = store::<Pod>();
    writer.apply(pod("b", "other", "n1", "1"));
    let mut initial = writer.relist_in("a");
    assert!(matches!(
        initial.apply(pod("a", "new", "n1", "1")),
        Some(Change::Added(_))
    ));
    assert!(initial.finish().is_empty());
    assert_eq!(store.len(), 2);
}
