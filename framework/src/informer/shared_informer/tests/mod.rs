//! Fan-out, buffering, late and removed handlers, resync, compact caching and shutdown.

use std::collections::HashMap;
use std::sync::mpsc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

use super::*;
use crate::cache::ObjectKey;
use crate::informer::handler_fns;

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

fn rv(obj: &ConfigMap) -> u64 {
    obj.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_default()
}

fn name(obj: &ConfigMap) -> String {
    obj.metadata.name.clone().unwrap_or_default()
}

/// Polls `done` (the handlers run on their own tasks) for up to 10 s.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Latest resourceVersion each handler saw per object name.
fn recording_handler(seen: &Arc<Mutex<HashMap<String, u64>>>) -> impl EventHandler<ConfigMap> {
    let (on_add, on_update) = (Arc::clone(seen), Arc::clone(seen));
    handler_fns()
        .on_add(move |obj: Arc<ConfigMap>| {
            on_add.lock().insert(name(&obj), rv(&obj));
        })
        .on_update(move |_, new: Arc<ConfigMap>| {
            on_update.lock().insert(name(&new), rv(&new));
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_handler_gets_nothing_more_and_the_others_keep_receiving() {
    let informer = SharedInformer::<ConfigMap>::without_reflector(&Config::default());
    let (kept_seen, removed_seen) = (Arc::default(), Arc::default());
    let _kept = informer.add_handler(recording_handler(&kept_seen));
    let removed = informer.add_handler(recording_handler(&removed_seen));
    informer.start().expect("inside a runtime");
    informer.inner.fan_out.apply(cm("before", 1), None);
    eventually("both handlers to see the first object", || {
        kept_seen.lock().contains_key("before") && removed_seen.lock().contains_key("before")
    })
    .await;

    assert!(informer.remove_handler(&removed), "it was registered");
    assert!(!informer.remove_handler(&removed), "it is gone already");
    informer.inner.fan_out.apply(cm("after", 2), None);
    assert_eq!(
        removed.pending(),
        0,
        "nothing is buffered for a removed handler"
    );
    eventually("the kept handler to see the second object", || {
        kept_seen.lock().contains_key("after")
    })
    .await;
    assert!(!removed_seen.lock().contains_key("after"));
    informer.shutdown().await;
}

// The blocked handler holds one of the two runtime threads (as a handler that blocks does); the
// other handler's task runs on the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_handler_delays_no_other_and_buffers_at_most_one_change_per_object() {
    let informer = SharedInformer::<ConfigMap>::without_reflector(&Config::default());
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let gate_rx = Mutex::new(gate_rx);
    let slow_seen = Arc::new(Mutex::new(HashMap::new()));
    let slow_record = Arc::clone(&slow_seen);
    let slow = informer.add_handler(
        handler_fns()
            .on_add(move |obj: Arc<ConfigMap>| {
                // Blocks on the first change until the test opens the gate: a handler stuck in I/O.
                let _ = gate_rx.lock().recv();
                slow_record.lock().insert(name(&obj), rv(&obj));
            })
            .on_update({
                let seen = Arc::clone(&slow_seen);
                move |_, new: Arc<ConfigMap>| {
                    seen.lock().insert(name(&new), rv(&new));
                }
            }),
    );
    let fast_seen = Arc::new(Mutex::new(HashMap::new()));
    let _fast = informer.add_handler(recording_handler(&fast_seen));
    informer.start().expect("inside a runtime");

    let mut version = 0;
    for i in 0..100 {
        version += 1;
        informer
            .inner
            .fan_out
            .apply(cm(&format!("cm-{i}"), version), None);
    }
    for round in 0..1000 {
        for i in 0..100 {
            version += 1;
            informer
                .inner
                .fan_out
                .apply(cm(&format!("cm-{i}"), version), None);
        }
        assert!(
            slow.pending() <= 100,
            "round {round}: {} pending",
            slow.pending()
        );
    }
    let last = version;
    let expected = |seen: &Mutex<HashMap<String, u64>>| {
        let seen = seen.lock();
        seen.len() == 100
            && (0..100).all(|i| seen.get(&format!("cm-{i}")) == Some(&(last - 99 + i)))
    };
    eventually(
        "the fast handler to see the last state of all 100 objects",
        || expected(&fast_seen),
    )
    .await;
    assert!(
        slow_seen.lock().is_empty(),
        "the slow handler is still blocked on its first change"
    );
    assert!(
        slow.pending() <= 100,
        "{} pending changes for 100 objects",
        slow.pending()
    );

    drop(gate_tx);
    eventually(
        "the slow handler to catch up with the latest states",
        || expected(&slow_seen),
    )
    .await;
    informer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_added_after_start_first_gets_an_add_for_each_cached_object() {
    let informer = SharedInformer::<ConfigMap>::without_reflector(&Config::default());
    informer.start().expect("inside a runtime");
    informer.inner.fan_out.apply(cm("a", 1), None);
    informer.inner.fan_out.apply(cm("b", 2), None);

    let store = informer.store();
    let events = Arc::new(Mutex::new(Vec::new()));
    let (adds, updates) = (Arc::clone(&events), Arc::clone(&events));
    let _late = informer.add_handler(
        handler_fns()
            .on_add(move |obj: Arc<ConfigMap>| {
                // Panics in handlers are caught, so a broken promise is recorded instead.
                let cached = store.get(&ObjectKey::of(obj.as_ref())).is_some();
                let uncached = if cached {
                    ""
                } else {
                    " (not in the store yet)"
                };
                adds.lock()
                    .push(format!("add {} {}{uncached}", name(&obj), rv(&obj)));
            })
            .on_update(move |old: Arc<ConfigMap>, new: Arc<ConfigMap>| {
                updates
                    .lock()
                    .push(format!("update {} {}->{}", name(&new), rv(&old), rv(&new)));
            }),
    );
    informer.inner.fan_out.apply(cm("a", 3), None);
    let finished = |seen: &[String]| {
        seen.iter().any(|e| e == "add b 2")
            && seen.iter().any(|e| e == "add a 3" || e == "update a 1->3")
    };
    eventually("the replay and the later update", || {
        finished(&events.lock())
    })
    .await;
    let mut seen = events.lock().clone();
    seen.sort();
    // The update to `a` may coalesce with its replayed add into one add of the latest state.
    assert!(
        seen == ["add a 1", "add b 2", "update a 1->3"] || seen == ["add a 3", "add b 2"],
        "unexpected deliveries: {seen:?}"
    );
    informer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_redelivers_every_cached_object_as_an_update_of_itself() {
    let informer = SharedInformer::<ConfigMap>::without_reflector(&Config::default());
    informer.inner.fan_out.apply(cm("a", 1), None);
    informer.inner.fan_out.apply(cm("b", 1), None);
    let resyncs = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let record = Arc::clone(&resyncs);
    let _registration = informer.add_handler_with_resync(
        handler_fns().on_update(move |old: Arc<ConfigMap>, new: Arc<ConfigMap>| {
            // A resync hands the cached object as both old and new.
            let what = if Arc::ptr_eq(&old, &new) {
                name(&new)
            } else {
                "a real update".into()
            };
            *record.lock().entry(what).or_default() += 1;
        }),
        Some(Duration::from_millis(100)),
    );
    let unwanted = Arc::new(Mutex::new(0));
    let count_unwanted = Arc::clone(&unwanted);
    let _without = informer.add_handler_with_resync(
        handler_fns().on_update(move |_, _: Arc<ConfigMap>| *count_unwanted.lock() += 1),
        None,
    );
    informer.start().expect("inside a runtime");
    eventually("two resyncs of both objects", || {
        let resyncs = resyncs.lock();
        resyncs.len() == 2 && resyncs.values().all(|n| *n >= 2)
    })
    .await;
    assert_eq!(
        resyncs.lock().len(),
        2,
        "only resyncs of a and b: {:?}",
        resyncs.lock()
    );
    assert_eq!(
        *unwanted.lock(),
        0,
        "a handler without a resync period got updates"
    );
    informer.shutdown().await;
}

#[tokio::test]
async fn a_compact_informer_reads_back_what_it_cached_with_the_transforms_applied()
-> anyhow::Result<()> {
    let informer = SharedInformer::<ConfigMap>::without_reflector(&Config::default().compact(4));
    informer.add_transform(|obj: &mut ConfigMap| {
        obj.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("seen".into(), "yes".into());
    })?;
    let added = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&added);
    let _registration = informer
        .add_handler(handler_fns().on_add(move |obj: Arc<ConfigMap>| record.lock().push(obj)));
    informer.start()?;
    let raw = serde_json::json!({
        "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7",
                     "managedFields": [{"manager": "kubectl"}]},
        "data": {"k": "v"}
    });
    // What the reflector caches: decoded, stripped, transformed; and the raw JSON.
    let mut cached: ConfigMap = serde_json::from_value(raw.clone())?;
    cached.metadata.managed_fields = None;
    cached
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("seen".into(), "yes".into());
    informer
        .inner
        .fan_out
        .apply(Arc::new(cached.clone()), Some(serde_json::to_vec(&raw)?));

    let store = informer.store();
    assert!(store.is_compact());
    assert_eq!(
        store.get(&ObjectKey::new(Some("ns"), "a")).as_deref(),
        Some(&cached)
    );
    eventually("the handler to hear of the add", || added.lock().len() == 1).await;
    assert_eq!(added.lock().first().map(AsRef::as_ref), Some(&cached));
    informer.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn shutdown_ends_every_task_and_wait_for_sync_reports_it() {
    let informer = SharedInformer::<ConfigMap>::without_reflector(
        &Config::default().resync(Duration::from_secs(1)),
    );
    let _registration = informer.add_handler(handler_fns());
    informer.start().expect("inside a runtime");
    assert!(!informer.has_synced());
    informer.shutdown().await;
    assert!(informer.inner.tasks.lock().handles.is_empty());
    assert!(matches!(
        informer.wait_for_sync().await,
        Err(Error::ShutDown)
    ));
}
