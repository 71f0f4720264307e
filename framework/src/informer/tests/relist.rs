//! A relist after `410 Gone`, through the reflector, paginated or streamed, never holds the old and the new list in full.
//!
//! The objects count themselves: each live `Counted` holds a token that counts up when it is
//! made (decoded or cloned) and down when it is dropped, and the highest count is kept. Once the
//! informer has synced, exactly one object per cached object is alive; a relist that built the
//! new list beside the old one before swapping would reach twice that. Both cases run in one
//! test, one after the other, since the counts are global.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::core::NamespaceResourceScope;
use kube::{Api, Resource};
use serde::Deserialize;

use crate::informer::{Config, SharedInformer, WatchList};
use crate::testing::{FakeApiServer, wait_for};

/// Live `Counted` objects; only the test in this file makes them.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most `Counted` objects alive at once since it was last reset.
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Every `Counted` ever made.
static MADE: AtomicUsize = AtomicUsize::new(0);

/// Counts one live object.
#[derive(Debug)]
struct Alive;

impl Alive {
    fn count() -> Self {
        MADE.fetch_add(1, Ordering::SeqCst);
        let live = LIVE.fetch_add(1, Ordering::SeqCst) + 1;
        PEAK.fetch_max(live, Ordering::SeqCst);
        Self
    }
}

/// What a decode makes (the field is skipped by serde).
impl Default for Alive {
    fn default() -> Self {
        Self::count()
    }
}

impl Clone for Alive {
    fn clone(&self) -> Self {
        Self::count()
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A ConfigMap that counts itself.
#[derive(Clone, Debug, Deserialize)]
struct Counted {
    metadata: ObjectMeta,
    #[serde(default)]
    data: BTreeMap<String, String>,
    #[serde(skip)]
    _alive: Alive,
}

impl Resource for Counted {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind((): &()) -> Cow<'_, str> {
        ConfigMap::kind(&())
    }

    fn group((): &()) -> Cow<'_, str> {
        ConfigMap::group(&())
    }

    fn version((): &()) -> Cow<'_, str> {
        ConfigMap::version(&())
    }

    fn plural((): &()) -> Cow<'_, str> {
        ConfigMap::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

const NAMESPACE: &str = "relist";
/// Enough objects for a doubled list to stand far above the 1.3× bound, and for a streamed
/// one's batches decoding ahead (at most 4 × 512 objects) to stay well below it.
const OBJECTS: usize = 10_000;
/// Several pages, so the relist is paginated as in production.
const PAGE: u32 = 250;
const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_after_410_gone_paginated_or_streamed_keeps_at_most_1_3_times_the_steady_objects_alive()
-> anyhow::Result<()> {
    relist_after_410_gone(Config::default().page_size(PAGE)).await?;
    relist_after_410_gone(Config::default().watch_list(WatchList::On)).await
}

/// A fake holding [`OBJECTS`] ConfigMaps.
fn seeded() -> anyhow::Result<FakeApiServer> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    for i in 0..OBJECTS {
        fake.seed(&ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                namespace: Some(NAMESPACE.into()),
                ..ObjectMeta::default()
            },
            data: Some([("value".to_owned(), "x".repeat(64))].into()),
            ..ConfigMap::default()
        })?;
    }
    Ok(fake)
}

async fn relist_after_410_gone(config: Config) -> anyhow::Result<()> {
    let fake = seeded()?;
    let informer = SharedInformer::new(
        Api::<Counted>::namespaced(fake.client(), NAMESPACE),
        config.clone(),
    );
    informer.start()?;
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;
    let steady = LIVE.load(Ordering::SeqCst);
    assert_eq!(
        steady, OBJECTS,
        "once synced, exactly the cached objects are alive"
    );
    assert!(
        informer
            .store()
            .list()
            .iter()
            .all(|cm| cm.data.get("value").is_some_and(|v| v.len() == 64))
    );

    // Half the objects change while the informer is not watching, so the relist replaces
    // them; the next watch answers 410 Gone, so the reflector lists again.
    PEAK.store(steady, Ordering::SeqCst);
    let made_before = MADE.load(Ordering::SeqCst);
    let relists_before = informer.stats().relists();
    fake.expire_next_watch();
    fake.drop_watches();
    let configmaps: Api<ConfigMap> = Api::namespaced(fake.client(), NAMESPACE);
    for i in (0..OBJECTS).step_by(2) {
        let patch = serde_json::json!({ "data": { "value": "y".repeat(64) } });
        configmaps
            .patch(
                &format!("cm-{i}"),
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await?;
    }
    let stats = informer.stats();
    wait_for(WAIT, "a relist after the expired watch", || {
        let relisted = stats.relists() > relists_before;
        async move { relisted.then_some(()) }
    })
    .await?;
    let store = informer.store();
    wait_for(WAIT, "the cache to hold every change", || {
        let changed = store
            .list()
            .iter()
            .filter(|cm| cm.data.get("value").is_some_and(|v| v.starts_with('y')))
            .count();
        async move { (changed == OBJECTS / 2).then_some(()) }
    })
    .await?;

    let made = MADE.load(Ordering::SeqCst) - made_before;
    let peak = PEAK.load(Ordering::SeqCst);
    assert!(
        made >= OBJECTS,
        "the relist decoded every object again ({made} made)"
    );
    assert!(
        peak * 10 <= steady * 13,
        "{peak} objects alive at the peak of a relist, for {steady} cached: more than 1.3× \
         ({config:?})"
    );
    assert_eq!(
        informer.stats().streamed_lists(),
        if config.watch_list == WatchList::On {
            2
        } else {
            0
        }
    );
    // Events that follow a stream's end (changes made while it ran) may still be decoding.
    wait_for(
        WAIT,
        "exactly the cached objects alive after the relist",
        || {
            let live = LIVE.load(Ordering::SeqCst);
            async move { (live == OBJECTS).then_some(()) }
        },
    )
    .await?;
    informer.shutdown().await;
    drop((informer, store));
    assert_eq!(
        LIVE.load(Ordering::SeqCst),
        0,
        "the informer let go of every object"
    );
    Ok(())
}
