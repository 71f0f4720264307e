//! Informers list in pages, survive cut connections and expired versions, share one watch, and
//! skip objects that do not decode.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Event, ObjectReference};
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kubeward::cache::Deleted;
use kubeward::informer::{self, Factory, SharedInformer, handler_fns};
use kubeward::testing::{ControlPlane, TcpProxy};
use kubeward_tests::wait_for;

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
    wait_for(SYNC, what, || async {
        let expected = server_state(server).await.ok()?;
        (cached_state(informer) == expected).then_some(expected)
    })
    .await
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
    Event {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            kind: Some("ConfigMap".into()),
            name: Some("subject".into()),
            namespace: Some(ns.into()),
            ..ObjectReference::default()
        },
        reason: Some("Testing".into()),
        message: Some("an event for the informer".into()),
        ..Event::default()
    }
}

#[tokio::test]
async fn a_compacted_resource_version_leads_to_a_relist_and_convergence() -> anyhow::Result<()> {
    // A private control plane, so the compaction disturbs no other test. Events, because
    // kube-apiserver keeps no watch cache for them: a watch from a compacted version reaches
    // etcd and gets 410 Gone (for cached resources the watch cache would still serve it).
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
    Ok(())
}

#[tokio::test]
async fn two_handlers_and_two_consumers_through_the_factory_share_one_list_and_one_watch()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-shared").await?;
    let factory = Factory::new(cp.client());
    let first = factory.namespaced_informer::<ConfigMap>(&ns);
    let second = factory.namespaced_informer::<ConfigMap>(&ns);
    assert!(
        first.ptr_eq(&second),
        "the same type and namespace must give the same informer"
    );
    assert!(
        !first.ptr_eq(&factory.informer::<ConfigMap>()),
        "all namespaces is another informer"
    );
    assert!(!first.ptr_eq(&factory.informer_with(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        informer::Config::default().labels("app=other"),
    )));

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

mod crd {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::CustomResource;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    use serde::{Deserialize, Serialize};

    use super::*;

    /// Only `replicas` is typed; the CRD keeps whatever else clients send.
    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize)]
    #[kube(
        group = "informer.kubeward.dev",
        version = "v1",
        kind = "Widget",
        namespaced,
        schema = "disabled"
    )]
    pub(super) struct WidgetSpec {
        replicas: i32,
    }

    fn crd() -> anyhow::Result<CustomResourceDefinition> {
        Ok(serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.informer.kubeward.dev"},
            "spec": {
                "group": "informer.kubeward.dev",
                "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
                }]
            }
        }))?)
    }

    async fn install_crd(client: &Client, ns: &str) -> anyhow::Result<Api<DynamicObject>> {
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        match crds.create(&PostParams::default(), &crd()?).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(err) => return Err(err.into()),
        }
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("informer.kubeward.dev", "v1", "Widget"),
            "widgets",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
        wait_for(SYNC, "the Widget CRD to be served", || async {
            api.list(&ListParams::default()).await.ok().map(drop)
        })
        .await?;
        Ok(api)
    }

    fn widget(name: &str, replicas: &serde_json::Value) -> anyhow::Result<DynamicObject> {
        Ok(serde_json::from_value(serde_json::json!({
            "apiVersion": "informer.kubeward.dev/v1",
            "kind": "Widget",
            "metadata": {"name": name},
            "spec": {"replicas": replicas}
        }))?)
    }

    #[tokio::test]
    async fn a_custom_resource_that_does_not_decode_is_skipped_and_every_other_one_is_cached()
    -> anyhow::Result<()> {
        let cp = ControlPlane::start().await?;
        let ns = cp.create_namespace("inf-crd").await?;
        let dynamic = match install_crd(&cp.client(), &ns).await {
            Ok(api) => api,
            Err(err) => panic!("install: {err}\n{}", cp.apiserver_log_tail(60)),
        };
        for i in 0..3 {
            let created = dynamic
                .create(
                    &PostParams::default(),
                    &widget(&format!("good-{i}"), &i.into())?,
                )
                .await;
            if let Err(err) = created {
                panic!("create: {err}\n{}", cp.apiserver_log_tail(60));
            }
        }
        dynamic
            .create(&PostParams::default(), &widget("bad", &"three".into())?)
            .await?;

        let factory = Factory::new(cp.client());
        let widgets = factory.namespaced_informer::<Widget>(&ns);
        let untyped = factory.informer_with(dynamic.clone(), informer::Config::default());
        factory.start()?;
        tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;

        let mut names: Vec<String> = widgets
            .store()
            .list()
            .iter()
            .map(|w| w.metadata.name.clone().unwrap_or_default())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["good-0", "good-1", "good-2"],
            "the bad widget is skipped, the others cached"
        );
        assert_eq!(widgets.stats().decode_failures(), 1);
        assert_eq!(
            untyped.store().len(),
            4,
            "a DynamicObject informer caches every widget"
        );

        // The informer keeps running: a later good object still arrives.
        dynamic
            .create(&PostParams::default(), &widget("good-later", &7.into())?)
            .await?;
        wait_for(SYNC, "the widget created after the bad one", || async {
            widgets
                .store()
                .get(&kubeward::cache::ObjectKey::new(Some(&ns), "good-later"))
                .map(drop)
        })
        .await?;
        factory.shutdown().await;
        Ok(())
    }
}

mod strict {
    use std::borrow::Cow;

    use kube::Resource;
    use kube::core::NamespaceResourceScope;
    use serde::{Deserialize, Deserializer};

    use super::*;

    /// A stricter view of `ConfigMaps`: `data.value` must hold a number.
    #[derive(Clone, Debug, Deserialize)]
    pub(super) struct NumberMap {
        metadata: ObjectMeta,
        data: NumberData,
    }

    #[derive(Clone, Debug, Deserialize)]
    struct NumberData {
        #[serde(deserialize_with = "number")]
        value: u64,
    }

    fn number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }

    impl Resource for NumberMap {
        type DynamicType = ();
        type Scope = NamespaceResourceScope;

        fn kind((): &()) -> Cow<'_, str> {
            "ConfigMap".into()
        }
        fn group((): &()) -> Cow<'_, str> {
            "".into()
        }
        fn version((): &()) -> Cow<'_, str> {
            "v1".into()
        }
        fn plural((): &()) -> Cow<'_, str> {
            "configmaps".into()
        }
        fn meta(&self) -> &ObjectMeta {
            &self.metadata
        }
        fn meta_mut(&mut self) -> &mut ObjectMeta {
            &mut self.metadata
        }
    }

    #[tokio::test]
    async fn an_object_that_does_not_decode_is_skipped_and_every_other_one_still_flows()
    -> anyhow::Result<()> {
        let cp = ControlPlane::shared().await?;
        let ns = cp.create_namespace("inf-decode").await?;
        let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
        for (name, value) in [("one", "1"), ("two", "2"), ("bad", "three"), ("four", "4")] {
            admin
                .create(&PostParams::default(), &config_map(name, value))
                .await?;
        }

        let factory = Factory::new(cp.client());
        let numbers = factory.namespaced_informer::<NumberMap>(&ns);
        factory.start()?;
        tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;
        let mut cached: Vec<(String, u64)> = numbers
            .store()
            .list()
            .iter()
            .map(|n| (n.metadata.name.clone().unwrap_or_default(), n.data.value))
            .collect();
        cached.sort();
        assert_eq!(
            cached,
            [
                ("four".to_owned(), 4),
                ("one".to_owned(), 1),
                ("two".to_owned(), 2)
            ],
            "the undecodable object is skipped, the others cached"
        );
        assert_eq!(numbers.stats().decode_failures(), 1);

        // The watch keeps flowing past another bad object.
        admin
            .create(&PostParams::default(), &config_map("bad-too", "x"))
            .await?;
        admin
            .create(&PostParams::default(), &config_map("five", "5"))
            .await?;
        wait_for(SYNC, "the object created after two bad ones", || async {
            numbers
                .store()
                .get(&kubeward::cache::ObjectKey::new(Some(&ns), "five"))
                .map(drop)
        })
        .await?;
        assert_eq!(numbers.stats().decode_failures(), 2);
        factory.shutdown().await;
        Ok(())
    }
}

#[tokio::test]
async fn a_metadata_informer_caches_only_metadata_and_follows_changes() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-meta").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "meta", 3).await?;

    let factory = Factory::new(cp.client());
    let metadata = factory.namespaced_metadata_informer::<ConfigMap>(&ns);
    factory.start()?;
    tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;
    admin
        .create(&PostParams::default(), &config_map("meta-later", "1"))
        .await?;
    let expected = server_state(&admin).await?;
    wait_for(SYNC, "the metadata cache to equal the server", || async {
        let cached: BTreeMap<String, String> = metadata
            .store()
            .list()
            .iter()
            .map(|m| {
                (
                    m.metadata.name.clone().unwrap_or_default(),
                    m.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect();
        (cached == expected).then_some(())
    })
    .await?;
    let kinds: Vec<Option<String>> = metadata
        .store()
        .list()
        .iter()
        .map(|m| m.types.as_ref().map(|t| t.kind.clone()))
        .collect();
    assert!(
        kinds
            .iter()
            .all(|k| k.as_deref() == Some("PartialObjectMetadata")),
        "the server sent metadata only: {kinds:?}"
    );
    factory.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn pods_indexed_by_node_are_found_by_node_and_follow_a_move() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};

    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-index").await?;
    let pods: Api<Pod> = Api::namespaced(cp.client(), &ns);
    let pod = |name: &str, node: &str| Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            containers: vec![Container {
                name: "main".into(),
                image: Some("example.invalid/none".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    for (name, node) in [("a", "node-1"), ("b", "node-1"), ("c", "node-2")] {
        pods.create(&PostParams::default(), &pod(name, node))
            .await?;
    }

    let factory = Factory::new(cp.client());
    let informer = factory.namespaced_informer::<Pod>(&ns);
    informer.add_index("node", |pod: &Pod| {
        pod.spec
            .as_ref()
            .and_then(|spec| spec.node_name.clone())
            .into_iter()
            .collect()
    })?;
    factory.start()?;
    tokio::time::timeout(SYNC, factory.wait_for_sync()).await??;
    let store = informer.store();
    let names = |node: &str| -> anyhow::Result<Vec<String>> {
        let mut names: Vec<String> = store
            .by_index("node", node)?
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        names.sort();
        Ok(names)
    };
    assert_eq!(names("node-1")?, ["a", "b"]);
    assert_eq!(names("node-2")?, ["c"]);
    let mut nodes = store.index_values("node")?;
    nodes.sort();
    assert_eq!(nodes, ["node-1", "node-2"]);
    assert_eq!(
        store.by_index(kubeward::cache::NAMESPACE_INDEX, &ns)?.len(),
        3
    );

    // nodeName cannot change on a live Pod: delete and recreate `b` on node-2.
    pods.delete("b", &DeleteParams::default().grace_period(0))
        .await?;
    wait_for(SYNC, "b to leave node-1", || async {
        (names("node-1").ok()? == ["a"]).then_some(())
    })
    .await?;
    pods.create(&PostParams::default(), &pod("b", "node-2"))
        .await?;
    wait_for(SYNC, "b to show up on node-2", || async {
        (names("node-2").ok()? == ["b", "c"]).then_some(())
    })
    .await?;
    factory.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn managed_fields_are_stripped_unless_kept_and_transforms_run_before_caching()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-transform").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "t", 2).await?;
    let on_server = admin.get("t-0").await?;
    assert!(
        on_server.metadata.managed_fields.is_some(),
        "the server tracks managedFields, so stripping them can be seen"
    );

    let stripped = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        informer::Config::default(),
    );
    stripped.add_transform(|cm: &mut ConfigMap| {
        cm.data.get_or_insert_default().remove("value");
    });
    let kept = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client(), &ns),
        informer::Config::default().strip_managed_fields(false),
    );
    for informer in [&stripped, &kept] {
        informer.start()?;
        tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;
    }
    admin
        .create(&PostParams::default(), &config_map("t-later", "1"))
        .await?;
    for informer in [&stripped, &kept] {
        wait_for(SYNC, "the object created after sync", || async {
            (informer.store().len() == 3).then_some(())
        })
        .await?;
    }
    for cm in stripped.store().list() {
        assert!(
            cm.metadata.managed_fields.is_none(),
            "managedFields are stripped by default"
        );
        assert!(
            cm.data.as_ref().is_some_and(|d| !d.contains_key("value")),
            "the transform ran on every object, listed or watched"
        );
    }
    for cm in kept.store().list() {
        assert!(
            cm.metadata.managed_fields.is_some(),
            "managedFields are kept on request"
        );
        assert!(cm.data.as_ref().is_some_and(|d| d.contains_key("value")));
    }
    stripped.shutdown().await;
    kept.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_compact_informer_caches_the_same_objects_as_a_default_one_through_lists_and_watches()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-compact").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_many(&admin, "c", 250).await?;

    let informer = |config: informer::Config| {
        let informer = SharedInformer::new(Api::<ConfigMap>::namespaced(cp.client(), &ns), config);
        informer.add_transform(|cm: &mut ConfigMap| {
            cm.metadata
                .labels
                .get_or_insert_default()
                .insert("cached".into(), "yes".into());
        });
        informer
    };
    let default = informer(informer::Config::default().page_size(100));
    let compact = informer(informer::Config::default().page_size(100).compact(16));
    let kept = informer(
        informer::Config::default()
            .compact(0)
            .strip_managed_fields(false),
    );
    for informer in [&default, &compact, &kept] {
        informer.start()?;
        tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;
    }
    assert!(compact.store().is_compact() && !default.store().is_compact());

    // Watched changes: an update, a delete, a create.
    let mut changed = config_map("c-1", "changed");
    changed.metadata.resource_version = None;
    admin
        .patch("c-1", &PatchParams::default(), &Patch::Merge(&changed))
        .await?;
    admin.delete("c-2", &DeleteParams::default()).await?;
    admin
        .create(&PostParams::default(), &config_map("c-new", "1"))
        .await?;
    for informer in [&default, &compact, &kept] {
        wait_until_converged(informer, &admin, "every informer to follow the watch").await?;
    }

    let by_name = |informer: &SharedInformer<ConfigMap>| -> BTreeMap<String, ConfigMap> {
        informer
            .store()
            .list()
            .into_iter()
            .map(|cm| (cm.metadata.name.clone().unwrap_or_default(), (*cm).clone()))
            .collect()
    };
    assert_eq!(
        by_name(&compact),
        by_name(&default),
        "a compact store decodes exactly what the default store holds, transforms applied"
    );
    let updated = compact
        .store()
        .get(&kubeward::cache::ObjectKey::new(Some(&ns), "c-1"));
    assert_eq!(
        updated.and_then(|cm| cm.data.as_ref()?.get("value").cloned()),
        Some("changed".to_owned())
    );
    assert!(
        kept.store()
            .list()
            .iter()
            .all(|cm| cm.metadata.managed_fields.is_some()
                && cm
                    .metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("cached"))),
        "a compact store that keeps managedFields has them, and the transform ran on read"
    );
    for informer in [&default, &compact, &kept] {
        informer.shutdown().await;
    }
    Ok(())
}
