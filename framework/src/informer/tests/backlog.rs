//! A backlog of watch events is decoded ahead on other threads and applied in the order it came.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use parking_lot::Mutex;

use crate::informer::{CacheScope, Factory};
use crate::testing::{FakeApiServer, wait_for};

/// Objects created, then all updated, then every third deleted: several batches of lines, more
/// than can decode at once.
const OBJECTS: usize = 1000;

fn config_map(i: usize, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i}")),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        data: Some([("v".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

/// One worker thread runs every task, the reflector's too; decoding ahead needs a multi-thread
/// runtime (on a current-thread one everything decodes inline, see `decode_ahead`).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_backlog_decodes_off_the_reflectors_thread_and_its_changes_land_in_order()
-> anyhow::Result<()> {
    let fake = FakeApiServer::new().with_history_limit(OBJECTS * 4);
    fake.register::<ConfigMap>();
    let factory = Factory::new(fake.client());
    let informer = factory.watched::<ConfigMap>(&CacheScope::default());
    let decoded_on: Arc<Mutex<HashSet<std::thread::ThreadId>>> = Arc::default();
    let threads = Arc::clone(&decoded_on);
    informer.add_transform(move |_: &mut ConfigMap| {
        threads.lock().insert(std::thread::current().id());
    })?;
    factory.start()?;
    tokio::time::timeout(Duration::from_secs(30), factory.wait_for_sync()).await??;
    wait_for(Duration::from_secs(30), "the watch to open", || {
        let open = fake.open_watches() > 0;
        async move { open.then_some(()) }
    })
    .await?;

    fake.pause_watches();
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "default");
    for i in 0..OBJECTS {
        api.create(&PostParams::default(), &config_map(i, "created"))
            .await?;
    }
    for i in 0..OBJECTS {
        let name = format!("cm-{i}");
        api.replace(&name, &PostParams::default(), &config_map(i, "updated"))
            .await?;
    }
    for i in (0..OBJECTS).step_by(3) {
        api.delete(&format!("cm-{i}"), &DeleteParams::default())
            .await?;
    }
    let left = OBJECTS - OBJECTS.div_ceil(3);
    fake.resume_watches();

    let store = informer.store();
    let version = fake.resource_version().to_string();
    wait_for(
        Duration::from_secs(60),
        "the last change to be cached",
        || {
            let caught_up = informer.last_sync_resource_version() == Some(version.clone());
            async move { caught_up.then_some(()) }
        },
    )
    .await?;
    assert_eq!(store.len(), left, "every third object is gone");
    for i in 0..OBJECTS {
        let cached = store.get_by_name(Some("default"), &format!("cm-{i}"));
        let value = cached.and_then(|cm| cm.data.as_ref()?.get("v").cloned());
        let expected = (i % 3 != 0).then(|| "updated".to_owned());
        assert_eq!(
            value, expected,
            "cm-{i}: its changes were applied out of order"
        );
    }
    assert_eq!(
        informer.stats().watch_requests(),
        1,
        "the burst was taken by the watch it came on, not by a restarted one"
    );
    let worker = tokio::spawn(async { std::thread::current().id() }).await?;
    assert!(
        decoded_on.lock().iter().any(|thread| *thread != worker),
        "no event of the burst was decoded off the reflector's thread"
    );
    factory.shutdown().await;
    Ok(())
}
