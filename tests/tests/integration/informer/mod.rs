//! Informers list in pages (or fall back to them from streaming lists), survive cut connections
//! and expired versions, share one watch, and skip objects that do not decode.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kubeward::cache::Deleted;
use kubeward::informer::{self, Factory, SharedInformer, handler_fns};
use kubeward::testing::{ControlPlane, TcpProxy, wait_for};
use kubeward_tests::event_about_a_config_map;

mod backlog;
mod cached;
mod crd;
mod outage;
mod streaming;
mod strict;

const SYNC: Duration = Duration::from_secs(60);

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

async fn create_many(api: &Api<ConfigMap>, prefix: &str, count: usize) -> anyhow::Result<()> {
    futures::stream::iter(0..count)
        .map(|i| async move {
            api.create(
                &PostParams::default(),
                &config_map(&format!("{prefix}-{i}"), "0"),
            )
            .await
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// name → resourceVersion, as the server has it.
async fn server_state(api: &Api<ConfigMap>) -> anyhow::Result<BTreeMap<String, String>> {
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .map(|cm| {
            (
                cm.metadata.name.unwrap_or_default(),
                cm.metadata.resource_version.unwrap_or_default(),
            )
        })
        .collect())
}

/// name → resourceVersion, as the informer caches it.
fn cached_state(informer: &SharedInformer<ConfigMap>) -> BTreeMap<String, String> {
    informer
        .store()
        .list()
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap_or_default(),
                cm.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

async fn wait_until_converged(
    informer: &SharedInformer<ConfigMap>,
    server: &Api<ConfigMap>,
    what: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(wait_for(SYNC, what, || async {
        let expected = server_state(server).await.ok()?;
        (cached_state(informer) == expected).then_some(expected)
    })
    .await?)
}

/// Every event a handler saw, as "add NAME", "update NAME", "delete NAME" or "delete? NAME"
/// (final state unknown).
fn recorder() -> (
    Arc<Mutex<Vec<String>>>,
    impl informer::EventHandler<ConfigMap>,
) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let (a, u, d) = (
        Arc::clone(&events),
        Arc::clone(&events),
        Arc::clone(&events),
    );
    let name = |cm: &ConfigMap| cm.metadata.name.clone().unwrap_or_default();
    let handler = handler_fns()
        .on_add(move |cm: Arc<ConfigMap>| a.lock().unwrap().push(format!("add {}", name(&cm))))
        .on_update(move |old: Arc<ConfigMap>, new: Arc<ConfigMap>| {
            let same = old.metadata.resource_version == new.metadata.resource_version;
            let kind = if same { "resync" } else { "update" };
            u.lock().unwrap().push(format!("{kind} {}", name(&new)));
        })
        .on_delete(move |deleted: Deleted<ConfigMap>| {
            let kind = if deleted.is_final_state_unknown() {
                "delete?"
            } else {
                "delete"
            };
            d.lock()
                .unwrap()
                .push(format!("{kind} {}", name(deleted.object())));
        });
    (events, handler)
}

fn take(events: &Mutex<Vec<String>>) -> Vec<String> {
    let mut taken = std::mem::take(&mut *events.lock().unwrap());
    taken.sort();
    taken
}

fn quick_retries() -> informer::Config {
    informer::Config::default().backoff(Duration::from_millis(100), Duration::from_secs(1))
}

#[tokio::test]
async fn a_thousand_config_maps_listed_in_pages_of_a_hundred_are_cached_as_the_server_has_them()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-pages").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&api, "cm", 1000).await?;

    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        informer::Config::default().page_size(100),
    );
    informer.start()?;
    tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;
    assert!(informer.has_synced());
    let server = server_state(&api).await?;
    assert_eq!(server.len(), 1000);
    let newest = server
        .values()
        .filter_map(|rv| rv.parse::<u64>().ok())
        .max();
    let synced_at = informer
        .last_sync_resource_version()
        .and_then(|rv| rv.parse::<u64>().ok());
    assert!(
        synced_at >= newest && newest.is_some(),
        "the list's resourceVersion {synced_at:?} is at least the newest object's {newest:?}"
    );
    assert_eq!(
        cached_state(&informer),
        server,
        "the synced cache differs from the server"
    );
    assert_eq!(
        informer.stats().list_requests(),
        10,
        "1,000 objects in pages of 100 take 10 requests"
    );
    informer.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn after_a_cut_connection_the_cache_converges_and_only_what_changed_produces_events()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-cut").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "keep", 10).await?;

    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client_through(&proxy), &ns),
        quick_retries(),
    );
    let (events, handler) = recorder();
    let _registration = informer.add_handler(handler);
    informer.start()?;
    tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;
    wait_for(SYNC, "ten initial adds", || async {
        (events.lock().unwrap().len() == 10).then_some(())
    })
    .await?;
    take(&events);
    let watches_before = informer.stats().watch_requests();

    proxy.cut();
    admin
        .create(&PostParams::default(), &config_map("new", "1"))
        .await?;
    admin
        .patch(
            "keep-1",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"value": "changed"}})),
        )
        .await?;
    admin.delete("keep-2", &DeleteParams::default()).await?;
    proxy.restore();

    wait_until_converged(&informer, &admin, "the cache to converge after the cut").await?;
    wait_for(SYNC, "the three changes to be delivered", || async {
        (events.lock().unwrap().len() >= 3).then_some(())
    })
    .await?;
    let seen = take(&events);
    assert!(
        seen == ["add new", "delete keep-2", "update keep-1"]
            || seen == ["add new", "delete? keep-2", "update keep-1"],
        "expected exactly one add, update and delete, got {seen:?}"
    );
    assert!(
        informer.stats().watch_requests() > watches_before,
        "the cut must have ended the watch"
    );
    informer.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_stalled_watch_is_restarted_and_the_cache_catches_up() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-stall").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    // The server ends each watch after 2 s; a watch silent for 4 s counts as stalled.
    let config = quick_retries()
        .watch_timeout(Duration::from_secs(2))
        .idle_timeout(Duration::from_secs(4));
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client_through(&proxy), &ns),
        config,
    );
    informer.start()?;
    tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;

    proxy.stall();
    admin
        .create(&PostParams::default(), &config_map("during-stall", "1"))
        .await?;
    let watches = informer.stats().watch_requests();
    wait_for(
        SYNC,
        "the stalled watch to be given up and retried",
        || async { (informer.stats().watch_requests() > watches).then_some(()) },
    )
    .await?;
    proxy.restore();
    wait_until_converged(&informer, &admin, "the object created during the stall").await?;
    informer.shutdown().await;
    Ok(())
}

/// The current etcd revision, from `etcdctl endpoint status`.
pub(crate) async fn etcd_revision(cp: &ControlPlane) -> anyhow::Result<u64> {
    let out = etcdctl(cp, &["endpoint", "status", "-w", "json"]).await?;
    let status: serde_json::Value = serde_json::from_str(&out)?;
    status[0]["Status"]["header"]["revision"]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("no revision in {out}"))
}

pub(crate) async fn etcdctl(cp: &ControlPlane, args: &[&str]) -> anyhow::Result<String> {
    let out = tokio::process::Command::new("etcdctl")
        .arg(format!("--endpoints={}", cp.etcd_url()))
        .args(args)
        .env("ETCDCTL_API", "3")
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "etcdctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

fn event(ns: &str, name: &str) -> Event {
    event_about_a_config_map(ns, name, "an event for the informer")
}

#[tokio::test]
async fn a_compacted_resource_version_leads_to_a_relist_and_convergence() -> anyhow::Result<()> {
    // A private control plane, so the compaction disturbs no other test. Events, because
    // kube-apiserver keeps no watch cache for them: a watch from a compacted version reaches
    // etcd and gets 410 Gone (for cached resources the watch cache would still serve it).
    if kubeward::testing::skip_on_existing_cluster("a private control plane whose etcd it compacts")
    {
        return Ok(());
    }
    let cp = ControlPlane::start().await?;
    let ns = cp.create_namespace("inf-gone").await?;
    let admin: Api<Event> = Api::namespaced(cp.client(), &ns);
    for name in ["keep-0", "keep-1", "gone-0", "gone-1", "gone-2"] {
        admin
            .create(&PostParams::default(), &event(&ns, name))
            .await?;
    }

    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let informer = SharedInformer::new(
        Api::<Event>::namespaced(cp.client_through(&proxy), &ns),
        quick_retries(),
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let (adds, updates, deletes) = (
        Arc::clone(&events),
        Arc::clone(&events),
        Arc::clone(&events),
    );
    let name = |e: &Event| e.metadata.name.clone().unwrap_or_default();
    let _registration = informer.add_handler(
        handler_fns()
            .on_add(move |e: Arc<Event>| adds.lock().unwrap().push(format!("add {}", name(&e))))
            .on_update(move |_, e: Arc<Event>| {
                updates.lock().unwrap().push(format!("update {}", name(&e)));
            })
            .on_delete(move |d: Deleted<Event>| {
                let kind = if d.is_final_state_unknown() {
                    "delete?"
                } else {
                    "delete"
                };
                deletes
                    .lock()
                    .unwrap()
                    .push(format!("{kind} {}", name(d.object())));
            }),
    );
    informer.start()?;
    tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;
    wait_for(SYNC, "five initial adds", || async {
        (events.lock().unwrap().len() == 5).then_some(())
    })
    .await?;
    take(&events);

    proxy.cut();
    for name in ["gone-0", "gone-1", "gone-2"] {
        admin.delete(name, &DeleteParams::default()).await?;
    }
    admin
        .create(&PostParams::default(), &event(&ns, "new"))
        .await?;
    let revision = etcd_revision(&cp).await?;
    etcdctl(&cp, &["compact", &revision.to_string()]).await?;
    proxy.restore();

    wait_for(SYNC, "the cache to hold keep-0, keep-1 and new", || async {
        let mut cached: Vec<String> = informer.store().list().iter().map(|e| name(e)).collect();
        cached.sort();
        (cached == ["keep-0", "keep-1", "new"]).then_some(())
    })
    .await?;
    wait_for(SYNC, "four events", || async {
        (events.lock().unwrap().len() >= 4).then_some(())
    })
    .await?;
    assert_eq!(
        take(&events),
        [
            "add new",
            "delete? gone-0",
            "delete? gone-1",
            "delete? gone-2"
        ],
        "a relist delivers missed deletes with unknown final state and nothing for unchanged objects"
    );
    assert_eq!(
        informer.stats().relists(),
        2,
        "the expired version must lead to exactly one relist"
    );
    informer.shutdown().await;

    expires_a_continue_token_from_before_a_compaction(&cp, &admin, &ns).await
}

/// A list's continue token from before a compaction is expired (410), as the fake's `compact`
/// models it for the reflector's fallback to one list without pages.
async fn expires_a_continue_token_from_before_a_compaction(
    cp: &ControlPlane,
    admin: &Api<Event>,
    ns: &str,
) -> anyhow::Result<()> {
    let first = admin.list(&ListParams::default().limit(1)).await?;
    let token = first.metadata.continue_.unwrap_or_default();
    assert!(!token.is_empty(), "three events in pages of one continue");
    admin
        .create(&PostParams::default(), &event(ns, "later"))
        .await?;
    let revision = etcd_revision(cp).await?;
    etcdctl(cp, &["compact", &revision.to_string()]).await?;
    let continued = admin
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await;
    match continued {
        Err(kube::Error::Api(status)) => assert_eq!(
            (status.code, status.reason.as_str()),
            (410, "Expired"),
            "{status:?}"
        ),
        other => panic!("a continue token from before the compaction was served: {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn two_handlers_and_two_consumers_through_the_factory_share_one_list_and_one_watch()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-shared").await?;
    let factory = Factory::new(cp.client());
    let first = factory.informer(Api::<ConfigMap>::namespaced(cp.client(), &ns));
    let second = factory.informer(Api::<ConfigMap>::namespaced(cp.client(), &ns));
    assert!(
        first.ptr_eq(&second),
        "the same type and namespace must give the same informer"
    );
    assert!(
        !first.ptr_eq(&factory.informer(Api::<ConfigMap>::all(cp.client()))),
        "all namespaces is another informer"
    );
    assert!(!first.ptr_eq(&factory.informer_with(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        informer::Config::default().labels("app=other"),
    )?));

    let (first_events, first_handler) = recorder();
    let (second_events, second_handler) = recorder();
    let _one = first.add_handler(first_handler);
    let _two = second.add_handler(second_handler);
    factory.start()?;
    tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;

    Api::<ConfigMap>::namespaced(cp.client(), &ns)
        .create(&PostParams::default(), &config_map("seen-by-both", "1"))
        .await?;
    for events in [&first_events, &second_events] {
        wait_for(SYNC, "both handlers to see the new object", || async {
            events
                .lock()
                .unwrap()
                .contains(&"add seen-by-both".to_owned())
                .then_some(())
        })
        .await?;
    }
    let stats = first.stats();
    assert_eq!(
        (stats.list_requests(), stats.watch_requests()),
        (1, 1),
        "one list and one watch for everyone"
    );
    factory.shutdown().await;
    Ok(())
}
