//! Streaming lists through the reflector: the cache a stream leaves, when it syncs, 410 Gone
//! amid the stream, the warnings while its end does not come, and the fallback to paginated lists
//! on a server that refuses them.

use std::fmt::Write as _;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};

use crate::informer::{Config, SharedInformer, WatchList};
use crate::testing::{FakeApiServer, wait_for};

const WAIT: Duration = Duration::from_secs(30);
const NAMESPACE: &str = "stream";

fn config_map(namespace: &str, name: &str, tier: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: Some([("tier".to_owned(), tier.to_owned())].into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), name.repeat(8))].into()),
        ..ConfigMap::default()
    }
}

fn seeded(fake: &FakeApiServer, names: &[&str]) -> anyhow::Result<()> {
    for name in names {
        fake.seed(&config_map(NAMESPACE, name, "web"))?;
    }
    Ok(())
}

/// Namespace, name and resourceVersion of every object, sorted.
fn identities<'a>(
    objects: impl IntoIterator<Item = &'a ConfigMap>,
) -> Vec<(String, String, String)> {
    let mut ids: Vec<_> = objects
        .into_iter()
        .map(|cm| {
            let meta = &cm.metadata;
            (
                meta.namespace.clone().unwrap_or_default(),
                meta.name.clone().unwrap_or_default(),
                meta.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect();
    ids.sort();
    ids
}

/// Waits until the informer's cache holds exactly what a list of the namespace gives.
async fn until_cache_equals_list(
    informer: &SharedInformer<ConfigMap>,
    fake: &FakeApiServer,
) -> anyhow::Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), NAMESPACE);
    let store = informer.store();
    wait_for(WAIT, "the cache to hold what a list gives", || {
        let (api, store) = (api.clone(), store.clone());
        async move {
            let listed = api.list(&ListParams::default()).await.ok()?;
            let cached = store.list();
            (identities(&listed.items) == identities(cached.iter().map(AsRef::as_ref)))
                .then_some(())
        }
    })
    .await?;
    Ok(())
}

/// Every ConfigMap of the namespace, listed in pages of `limit`.
async fn paginated_list(api: &Api<ConfigMap>, limit: u32) -> kube::Result<Vec<ConfigMap>> {
    let mut params = ListParams::default().limit(limit);
    let mut items = Vec::new();
    loop {
        let page = api.list(&params).await?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(items),
        }
    }
}

fn streaming() -> Config {
    Config::default().watch_list(WatchList::On)
}

#[tokio::test]
async fn a_streamed_cache_holds_what_a_paginated_one_does_without_a_list_request()
-> anyhow::Result<()> {
    let fake = FakeApiServer::new();
    fake.register::<ConfigMap>();
    for i in 0..40 {
        let tier = if i % 3 == 0 { "db" } else { "web" };
        fake.seed(&config_map(NAMESPACE, &format!("cm-{i}"), tier))?;
        fake.seed(&config_map("elsewhere", &format!("cm-{i}"), tier))?;
    }
    let api = || Api::<ConfigMap>::namespaced(fake.client(), NAMESPACE);
    let streamed = SharedInformer::new(api(), streaming().labels("tier=web"));
    let listed = SharedInformer::new(api(), Config::default().labels("tier=web").page_size(7));
    streamed.start()?;
    listed.start()?;
    tokio::time::timeout(WAIT, streamed.wait_for_sync()).await??;
    tokio::time::timeout(WAIT, listed.wait_for_sync()).await??;
    let cached = |informer: &SharedInformer<ConfigMap>| {
        identities(informer.store().list().iter().map(AsRef::as_ref))
    };
    assert_eq!(
        cached(&streamed).len(),
        26,
        "the 26 web ConfigMaps of the namespace"
    );
    assert_eq!(cached(&streamed), cached(&listed));
    let stats = streamed.stats();
    assert_eq!(
        (
            stats.list_requests(),
            stats.streamed_lists(),
            stats.relists()
        ),
        (0, 1, 1),
        "one streaming list and no list request"
    );

    api()
        .create(&PostParams::default(), &config_map(NAMESPACE, "new", "web"))
        .await?;
    api().delete("cm-1", &DeleteParams::default()).await?;
    wait_for(WAIT, "both caches to see the live changes", || {
        let same = cached(&streamed) == cached(&listed) && cached(&streamed).len() == 26;
        let has_new = streamed
            .store()
            .get_by_name(Some(NAMESPACE), "new")
            .is_some();
        async move { (same && has_new).then_some(()) }
    })
    .await?;
    streamed.shutdown().await;
    listed.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_cache_syncs_only_after_the_annotated_bookmark_and_deletes_meanwhile_are_applied()
-> anyhow::Result<()> {
    let fake = FakeApiServer::new().with_bookmark_interval(Duration::from_millis(10));
    fake.register::<ConfigMap>();
    seeded(&fake, &["a", "b", "c", "d", "e"])?;
    fake.stall_initial_events_after(2);
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(fake.client(), NAMESPACE),
        streaming(),
    );
    informer.start()?;
    let store = informer.store();
    wait_for(WAIT, "the first two objects streamed", || {
        let cached = store.len();
        async move { (cached == 2).then_some(()) }
    })
    .await?;
    let bookmarks = fake.bookmarks_sent();
    wait_for(WAIT, "two bookmarks amid the initial events", || {
        let sent = fake.bookmarks_sent();
        async move { (sent >= bookmarks + 2).then_some(()) }
    })
    .await?;
    assert!(
        !informer.has_synced(),
        "bookmarks without the end annotation do not end the initial events"
    );

    // One object already streamed and one not yet are deleted amid the stream.
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), NAMESPACE);
    api.delete("a", &DeleteParams::default()).await?;
    api.delete("e", &DeleteParams::default()).await?;
    fake.resume_initial_events();
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;
    until_cache_equals_list(&informer, &fake).await?;
    assert_eq!(informer.store().len(), 3);
    informer.shutdown().await;
    Ok(())
}

/// The warnings a test's code writes: each one's message and fields, as text.
#[derive(Clone, Default)]
struct Warnings(std::sync::Arc<parking_lot::Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() != tracing::Level::WARN {
            return;
        }
        let mut text = String::new();
        event.record(
            &mut |field: &tracing::field::Field, value: &dyn std::fmt::Debug| {
                let _ = write!(text, "{}={value:?} ", field.name());
            },
        );
        self.0.lock().push(text);
    }
}

/// A server that accepts a streaming list but never sends the bookmark that ends its initial
/// events (here the fake, stalled after two objects, sending a plain bookmark every second)
/// leaves the informer unsynced: the reflector says so every 10 s, with the wait and the objects
/// received, not once per bookmark; and stops once the end comes.
#[tokio::test(start_paused = true)]
async fn a_stream_whose_end_bookmark_does_not_come_is_reported_every_ten_seconds()
-> anyhow::Result<()> {
    use tracing_subscriber::layer::SubscriberExt as _;

    let warnings = Warnings::default();
    let _logs =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(warnings.clone()));
    let fake = FakeApiServer::new().with_bookmark_interval(Duration::from_secs(1));
    fake.register::<ConfigMap>();
    seeded(&fake, &["a", "b", "c", "d", "e"])?;
    fake.stall_initial_events_after(2);
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(fake.client(), NAMESPACE),
        streaming(),
    );
    let started = tokio::time::Instant::now();
    informer.start()?;
    let store = informer.store();
    wait_for(WAIT, "the first two objects streamed", || {
        let cached = store.len();
        async move { (cached == 2).then_some(()) }
    })
    .await?;
    let bookmarks = fake.bookmarks_sent();

    // Time is paused: this runs the clock 35 s on, firing every timer due meanwhile (the fake's
    // bookmarks, the reflector's warnings) in order.
    tokio::time::sleep_until(started + Duration::from_secs(35)).await;
    assert!(!informer.has_synced(), "the initial events have not ended");
    assert!(
        fake.bookmarks_sent() >= bookmarks + 30,
        "a plain bookmark every second meanwhile"
    );
    let seen = warnings.0.lock().clone();
    assert_eq!(seen.len(), 3, "one warning at 10, 20 and 30 s: {seen:?}");
    for (warning, seconds) in seen.iter().zip([10, 20, 30]) {
        assert!(
            warning.contains("still awaiting the bookmark")
                && warning.contains("objects=2 ")
                && warning.contains(&format!("waited={seconds}")),
            "{warning}"
        );
    }

    fake.resume_initial_events();
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        warnings.0.lock().len(),
        3,
        "no warning once the end bookmark came"
    );
    informer.shutdown().await;
    Ok(())
}

/// A real server (1.27+) streams a snapshot of the state at the watch's start, and its end
/// bookmark carries that version: an object deleted amid the initial events is among them
/// whether it was sent before the delete (`cm-1`) or not (`cm-7`), and its `DELETED` event
/// follows the end bookmark. The fake does the same; the cache must lose both.
#[tokio::test]
async fn objects_deleted_amid_the_initial_events_leave_the_cache_once_their_deletes_arrive()
-> anyhow::Result<()> {
    let fake = FakeApiServer::new().with_bookmark_interval(Duration::from_millis(10));
    fake.register::<ConfigMap>();
    for i in 0..10 {
        fake.seed(&config_map(NAMESPACE, &format!("cm-{i}"), "web"))?;
    }
    fake.stall_initial_events_after(4);
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), NAMESPACE);
    let informer = SharedInformer::new(api.clone(), streaming());
    informer.start()?;
    let store = informer.store();
    wait_for(WAIT, "cm-0 to cm-3 streamed, then the stall", || {
        let cached = store.len();
        async move { (cached == 4).then_some(()) }
    })
    .await?;

    api.delete("cm-1", &DeleteParams::default()).await?;
    api.delete("cm-7", &DeleteParams::default()).await?;
    fake.resume_initial_events();
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;
    wait_for(
        WAIT,
        "the cache to hold what a paginated list gives",
        || {
            let (api, store) = (api.clone(), store.clone());
            async move {
                let listed = paginated_list(&api, 3).await.ok()?;
                let cached = store.list();
                (identities(&listed) == identities(cached.iter().map(AsRef::as_ref))).then_some(())
            }
        },
    )
    .await?;
    for deleted in ["cm-1", "cm-7"] {
        assert!(
            store.get_by_name(Some(NAMESPACE), deleted).is_none(),
            "{deleted} was deleted amid the initial events"
        );
    }
    let listed = paginated_list(&api, 3).await?;
    assert_eq!(listed.len(), 8, "ten seeded, two deleted");
    assert_eq!(
        identities(store.list().iter().map(AsRef::as_ref)),
        identities(&listed)
    );
    informer.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_410_amid_the_stream_streams_again_and_what_vanished_meanwhile_leaves_the_cache()
-> anyhow::Result<()> {
    let fake = FakeApiServer::new().with_bookmark_interval(Duration::from_millis(10));
    fake.register::<ConfigMap>();
    seeded(&fake, &["a", "b", "c", "d", "e"])?;
    fake.stall_initial_events_after(2);
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(fake.client(), NAMESPACE),
        streaming(),
    );
    informer.start()?;
    let store = informer.store();
    wait_for(WAIT, "the first two objects streamed", || {
        let cached = store.len();
        async move { (cached == 2).then_some(()) }
    })
    .await?;

    // While the watch is gone, a streamed object and one not streamed yet go, and one comes:
    // their events are lost with the expired watch, so only the next stream can tell.
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), NAMESPACE);
    let watches = informer.stats().watch_requests();
    fake.expire_watches();
    api.delete("a", &DeleteParams::default()).await?;
    api.delete("d", &DeleteParams::default()).await?;
    api.create(&PostParams::default(), &config_map(NAMESPACE, "f", "web"))
        .await?;
    let stats = informer.stats();
    wait_for(WAIT, "a second streaming list", || {
        let again = stats.watch_requests() > watches;
        async move { again.then_some(()) }
    })
    .await?;
    fake.resume_initial_events();
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;
    until_cache_equals_list(&informer, &fake).await?;
    let names: Vec<_> = identities(informer.store().list().iter().map(AsRef::as_ref))
        .into_iter()
        .map(|(_, name, _)| name)
        .collect();
    assert_eq!(names, ["b", "c", "e", "f"]);
    assert_eq!(
        (stats.list_requests(), stats.streamed_lists()),
        (0, 1),
        "the interrupted stream was not a complete list, and nothing fell back to listing"
    );
    informer.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn auto_falls_back_to_paginated_lists_once_on_a_server_that_refuses_streaming_lists()
-> anyhow::Result<()> {
    let fake = FakeApiServer::new().without_streaming_lists();
    fake.register::<ConfigMap>();
    seeded(&fake, &["a", "b"])?;
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(fake.client(), NAMESPACE),
        Config::default().watch_list(WatchList::Auto),
    );
    informer.start()?;
    tokio::time::timeout(WAIT, informer.wait_for_sync()).await??;
    assert_eq!(informer.store().len(), 2);
    let stats = informer.stats();
    assert_eq!(
        (
            stats.watch_requests(),
            stats.list_requests(),
            stats.streamed_lists()
        ),
        (2, 1, 0),
        "one refused streaming list, then a list and its watch"
    );

    // A relist after 410 Gone lists at once: the refusal is remembered.
    fake.expire_next_watch();
    fake.drop_watches();
    wait_for(WAIT, "a relist after the expired watch", || {
        let relisted = stats.relists() == 2;
        async move { relisted.then_some(()) }
    })
    .await?;
    wait_for(WAIT, "the watch after the relist", || {
        let watching = fake.open_watches() == 1;
        async move { watching.then_some(()) }
    })
    .await?;
    assert_eq!(
        (stats.watch_requests(), stats.list_requests()),
        (4, 2),
        "the expired watch and the one after the relist: no streaming list was tried again"
    );
    informer.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn on_keeps_asking_for_a_streaming_list_and_never_lists() -> anyhow::Result<()> {
    let fake = FakeApiServer::new().without_streaming_lists();
    fake.register::<ConfigMap>();
    seeded(&fake, &["a"])?;
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(fake.client(), NAMESPACE),
        streaming().backoff(Duration::from_millis(5), Duration::from_millis(10)),
    );
    informer.start()?;
    let stats = informer.stats();
    wait_for(WAIT, "three refused streaming lists", || {
        let tried = stats.watch_requests() >= 3;
        async move { tried.then_some(()) }
    })
    .await?;
    assert!(!informer.has_synced());
    assert_eq!(stats.list_requests(), 0);
    informer.shutdown().await;
    Ok(())
}
