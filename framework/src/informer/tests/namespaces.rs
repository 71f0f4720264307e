//! An informer over a namespace set: one store filled by a reflector per namespace, where a
//! relist of one namespace removes what vanished there and leaves the other namespaces alone.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::DeleteParams;
use parking_lot::Mutex;

use super::config_map;
use crate::informer::{CacheScope, Factory, handler_fns};
use crate::testing::{FakeApiServer, wait_for};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_of_one_namespace_deletes_only_what_vanished_there() -> anyhow::Result<()> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    for (namespace, name) in [
        ("a", "kept"),
        ("a", "gone"),
        ("b", "x"),
        ("b", "y"),
        ("c", "z"),
    ] {
        fake.seed(&config_map(namespace, name))?;
    }
    let factory = Factory::new(fake.client());
    let scope = CacheScope::default().namespaces(["a", "b"]);
    let informer = factory.watched::<ConfigMap>(&scope);
    assert!(
        informer.ptr_eq(&factory.watched::<ConfigMap>(&scope)),
        "one shared informer for the namespace set"
    );
    let deleted: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&deleted);
    let _registration = informer.add_handler(handler_fns().on_delete(
        move |gone: crate::cache::Deleted<ConfigMap>| {
            let meta = &gone.object().metadata;
            let key = format!(
                "{}/{}",
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default()
            );
            seen.lock().push(key);
        },
    ));
    factory.start()?;
    tokio::time::timeout(WAIT, factory.wait_for_sync()).await??;
    let store = informer.store();
    let mut keys: Vec<String> = store.keys().iter().map(ToString::to_string).collect();
    keys.sort();
    assert_eq!(
        keys,
        ["a/gone", "a/kept", "b/x", "b/y"],
        "both namespaces, not c"
    );

    // The delete happens while the watches hold their events back; then the history is
    // compacted and the watches dropped, so each reflector resumes into 410 Gone and relists.
    let relists_before = informer.stats().relists();
    fake.pause_watches();
    Api::<ConfigMap>::namespaced(fake.client(), "a")
        .delete("gone", &DeleteParams::default())
        .await?;
    fake.compact();
    fake.drop_watches();
    let stats = informer.stats();
    wait_for(WAIT, "both namespaces relisted", || {
        let relisted = stats.relists() >= relists_before + 2;
        async move { relisted.then_some(()) }
    })
    .await?;
    wait_for(WAIT, "the vanished object deleted from the cache", || {
        let gone = store.get_by_name(Some("a"), "gone").is_none();
        async move { gone.then_some(()) }
    })
    .await?;
    assert_eq!(store.len(), 3, "{:?}", store.keys());
    wait_for(WAIT, "the handler told of the delete", || {
        let told = !deleted.lock().is_empty();
        async move { told.then_some(()) }
    })
    .await?;
    assert_eq!(
        *deleted.lock(),
        ["a/gone"],
        "a relist of one namespace deleted objects of another"
    );
    factory.shutdown().await;
    Ok(())
}
