//! A burst of watch events, many to a chunk, does not hold the thread until the last is cached.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use parking_lot::Mutex;

use crate::informer::{CacheScope, Factory};
use crate::testing::{FakeApiServer, wait_for};

const EVENTS: usize = 1000;

#[tokio::test(flavor = "current_thread")]
async fn another_task_runs_while_the_reflector_caches_a_burst_of_events() -> anyhow::Result<()> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    let factory = Factory::new(fake.client());
    let informer = factory.watched::<ConfigMap>(&CacheScope::default());
    factory.start()?;
    tokio::time::timeout(Duration::from_secs(30), factory.wait_for_sync()).await??;
    let store = informer.store();
    wait_for(Duration::from_secs(30), "the watch to open", || {
        let open = fake.open_watches() > 0;
        async move { open.then_some(()) }
    })
    .await?;

    fake.pause_watches();
    for i in 0..EVENTS {
        fake.seed(&ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })?;
    }
    // On one thread, this task sees the cache between two events only if the reflector gives
    // the thread up in the middle of the burst.
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let watcher = {
        let (seen, store) = (Arc::clone(&seen), store.clone());
        tokio::spawn(async move {
            loop {
                let cached = store.len();
                seen.lock().push(cached);
                if cached == EVENTS {
                    return;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    fake.resume_watches();
    tokio::time::timeout(Duration::from_secs(30), watcher).await??;
    let seen = seen.lock().clone();
    assert!(
        seen.iter().any(|&cached| cached > 0 && cached < EVENTS),
        "no other task ran while {EVENTS} events were cached: it saw {seen:?}"
    );
    factory.shutdown().await;
    Ok(())
}
