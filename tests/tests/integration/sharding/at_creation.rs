//! Assignment at creation on the real control plane: the API server calls a shard's assignment
//! webhook at `https://127.0.0.1:PORT/...` (trusting the caBundle the manager installed), so a
//! new object carries its shard label in the create response itself; and a shard labels the
//! owned objects it applies with their owner's shard.

use crate::fixtures::watching;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use http::StatusCode;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::core::admission::AdmissionRequest;
use kube::{Api, Client, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::leader;
use kubeward::manager::{LeaderElection, Manager};
use kubeward::shard::Shard;
use kubeward::sharding::{HashRing, RING_LABEL, Shards, object_key, shard_label};
use kubeward::testing::{ControlPlane, free_addr, wait_for};
use kubeward::webhook::{self, Admission, Defaulter, Verdict};
use kubeward_tests::metric_sum;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::conversion::https::post_to;
use crate::webhook::{label_namespace, remove_configurations};

/// The ring of the ConfigMap controller.
const RING: &str = "created";
const WAIT: Duration = Duration::from_secs(60);
/// The webhook path of the ring's ConfigMaps.
const PATH: &str = "/shard-created--v1-configmap";

/// Reconciles nothing: the tests look at labels only.
struct Idle;

impl Reconciler<ConfigMap> for Idle {
    type Error = kube::Error;

    async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context<ConfigMap>) -> kube::Result<Action> {
        Ok(Action::await_change())
    }
}

/// Applies a ConfigMap `NAME-copy` for each Secret through the reconcile kit.
struct Copy;

impl Reconciler<Secret> for Copy {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        secret: Arc<Secret>,
        ctx: &Context<Secret>,
    ) -> Result<Action, kubeward::Error> {
        let copy = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("{}-copy", secret.name_any())),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        ctx.apply(secret.as_ref(), copy).await?;
        Ok(Action::await_change())
    }
}

/// Labels every ConfigMap `stamped: yes`: shows that the manager's webhooks are being called.
struct Stamp;

impl Defaulter<ConfigMap> for Stamp {
    async fn default(&self, cm: &mut ConfigMap, _: &AdmissionRequest<ConfigMap>) -> Verdict {
        cm.labels_mut().insert("stamped".into(), "yes".into());
        Verdict::allow()
    }
}

struct Replica {
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

impl Replica {
    fn start(manager: Manager) -> Self {
        Self {
            token: manager.shutdown_token(),
            run: tokio::spawn(manager.run()),
        }
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(WAIT, self.run).await???;
        Ok(())
    }
}

/// A manager of shard `id` of `ring` watching `ns` (its Leases there), serving its webhooks on
/// `port` (`0`: none) with a self-signed CA, reached at `https://127.0.0.1:PORT`.
fn manager(client: Client, ns: &str, ring: &str, id: &str, port: u16) -> Manager {
    let timings = leader::Config::default()
        .lease_duration(Duration::from_secs(3))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(300));
    let webhooks = webhook::Config::default()
        .port(port)
        .self_signed(true)
        .url(format!("https://127.0.0.1:{port}"))
        .configuration_name(ns);
    let config = watching(ns.to_owned())
        .leader_election(Some(LeaderElection::new(
            format!("sharder-{ring}"),
            Some(ns.to_owned()),
            timings.clone(),
        )))
        .webhook(webhooks);
    let manager = Manager::new(client, config).expect("a manager builds for a client given");
    manager
        .add(
            Shard::new(ring, id)
                .namespace(Some(ns.to_owned()))
                .lease(timings),
        )
        .expect("the test manager takes the shard");
    manager
}

/// A shard of [`RING`] reconciling ConfigMaps.
fn config_map_shard(cp: &ControlPlane, ns: &str, id: &str, port: u16) -> Manager {
    let manager = manager(cp.client(), ns, RING, id, port);
    manager
        .add(Controller::new(Idle).ring(RING))
        .expect("the test manager takes it");
    manager
}

fn named(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// The shard label of `obj` in `ring`.
fn shard_of(obj: &impl kube::Resource, ring: &str) -> Option<String> {
    obj.meta()
        .labels
        .as_ref()
        .and_then(|l| l.get(&shard_label(ring)))
        .cloned()
}

/// The available shards of `ring` as their Leases in `ns` show them now.
async fn available(client: &Client, ns: &str, ring: &str) -> anyhow::Result<BTreeSet<String>> {
    let leases = Api::<Lease>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&format!("{RING_LABEL}={ring}")))
        .await?;
    Ok(Shards::of(&leases.items, Timestamp::now().as_microsecond()).available)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_object_carries_the_shard_the_ring_gives_it_in_its_create_response()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("shard-created").await?;
    label_namespace(&cp.client(), &ns).await?;
    let port = free_addr()?.port();
    // Shard a serves the webhooks; shard b has none, but holds its share of the ring.
    let serving = config_map_shard(cp, &ns, "shard-a", port);
    let registry = serving.registry().clone();
    let by_webhook = || {
        metric_sum(
            &registry,
            "kubeward_sharder_assignments_total",
            ("by", "webhook"),
            |m| m.get_counter().get_value(),
        )
    };
    let replicas = [
        Replica::start(serving),
        Replica::start(config_map_shard(cp, &ns, "shard-b", 0)),
    ];
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let client = cp.client();
    let ring = wait_for(WAIT, "both shards' Leases to be held", || async {
        let shards = available(&client, &ns, RING).await.ok()?;
        (shards.len() == 2).then(|| HashRing::new(shards.iter().map(String::as_str)))
    })
    .await?;
    let key = |name: &str| object_key::<ConfigMap>(Some(&ns), name);
    let mut probe = 0;
    wait_for(
        WAIT,
        "a probe labelled as the ring of both shards puts it",
        || {
            probe += 1;
            let name = format!("probe-{probe}");
            let (api, want) = (&api, ring.shard_for(&key(&name)).map(str::to_owned));
            async move {
                let created = api
                    .create(&PostParams::default(), &named(&name))
                    .await
                    .ok()?;
                (shard_of(&created, RING) == want).then_some(())
            }
        },
    )
    .await?;

    let before = by_webhook();
    let mut shares = BTreeSet::new();
    for i in 0..20 {
        let name = format!("cm-{i}");
        // The object the API server returns from the create, before anything else saw it.
        let created = api.create(&PostParams::default(), &named(&name)).await?;
        let shard = shard_of(&created, RING);
        assert_eq!(shard.as_deref(), ring.shard_for(&key(&name)), "{name}");
        shares.extend(shard);
    }
    assert_eq!(shares.len(), 2, "20 objects all went to {shares:?}");
    // Shard a's webhook assigned each of them (the sharder counts `by="sharder"`).
    assert!(
        (by_webhook() - before - 20.0).abs() < 0.5,
        "{} webhook assignments counted for 20 creates",
        by_webhook() - before
    );
    assert_eq!(
        available(&client, &ns, RING).await?.len(),
        2,
        "a shard was lost meanwhile"
    );

    // The configuration entry: only unlabelled objects, never refusing for the webhook's sake.
    let configuration = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get(&format!("{ns}-mutating-webhook-configuration"))
        .await?;
    let entry = serde_json::to_value(&configuration.webhooks.unwrap_or_default()[0])?;
    assert_eq!(entry["failurePolicy"], "Ignore");
    assert_eq!(entry["timeoutSeconds"], 5);
    assert_eq!(
        entry["objectSelector"]["matchExpressions"][0],
        serde_json::json!({"key": shard_label(RING), "operator": "DoesNotExist"})
    );
    assert_eq!(
        entry["rules"][0]["operations"],
        serde_json::json!(["CREATE", "UPDATE"])
    );
    assert_eq!(
        entry["clientConfig"]["url"],
        format!("https://127.0.0.1:{port}{PATH}")
    );

    // Bad input on the webhook port is refused clearly, and the server keeps serving.
    let ca_pem = String::from_utf8(configuration_ca(&client, &ns).await?)?;
    let (status, body) = post_to(port, PATH, &ca_pem, "application/json", b"{no".to_vec()).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("cannot decode the AdmissionReview"), "{body}");
    let (status, body) = post_to(port, PATH, &ca_pem, "text/plain", b"x".to_vec()).await?;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    let after = api
        .create(&PostParams::default(), &named("after-garbage"))
        .await?;
    assert_eq!(
        shard_of(&after, RING).as_deref(),
        ring.shard_for(&key("after-garbage"))
    );

    for replica in replicas {
        replica.stop().await?;
    }
    remove_configurations(&client, &ns).await;
    Ok(())
}

/// The CA the manager installed in its mutating webhook configuration.
async fn configuration_ca(client: &Client, ns: &str) -> anyhow::Result<Vec<u8>> {
    let configuration = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get(&format!("{ns}-mutating-webhook-configuration"))
        .await?;
    let entry = configuration
        .webhooks
        .unwrap_or_default()
        .into_iter()
        .next();
    let ca = entry.and_then(|w| w.client_config.ca_bundle);
    Ok(ca.map(|b| b.0).unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_object_is_created_unlabelled_while_no_shard_is_available_and_assigned_once_one_is()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("shard-none").await?;
    let client = cp.client();
    label_namespace(&client, &ns).await?;
    // Shard a's Lease is held by someone else for an hour: the ring has no available shard.
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("shard-a".into()),
            labels: Some([(RING_LABEL.to_owned(), RING.to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("someone-else".into()),
            lease_duration_seconds: Some(3600),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    Api::<Lease>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &lease)
        .await?;
    let manager = config_map_shard(cp, &ns, "shard-a", free_addr()?.port());
    manager.add_webhook(
        Admission::defaulter::<ConfigMap>(Stamp).namespace_selector(crate::webhook::only_in(&ns)),
    )?;
    let replica = Replica::start(manager);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let mut probe = 0;
    let created = wait_for(WAIT, "the manager's webhooks to be called", || {
        probe += 1;
        let api = &api;
        async move {
            let created = api
                .create(&PostParams::default(), &named(&format!("probe-{probe}")))
                .await
                .ok()?;
            created.labels().contains_key("stamped").then_some(created)
        }
    })
    .await?;
    assert_eq!(shard_of(&created, RING), None);
    assert!(available(&client, &ns, RING).await?.is_empty());
    // The assignment webhook is in the configuration the API server just called.
    let configuration = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .get(&format!("{ns}-mutating-webhook-configuration"))
        .await?;
    let paths: Vec<String> = configuration
        .webhooks
        .iter()
        .flatten()
        .filter_map(|w| w.client_config.url.clone())
        .collect();
    assert!(paths.iter().any(|url| url.ends_with(PATH)), "{paths:?}");

    // Once the Lease is free, the shard takes it and new objects are assigned to it.
    Api::<Lease>::namespaced(client.clone(), &ns)
        .delete("shard-a", &kube::api::DeleteParams::default())
        .await?;
    wait_for(WAIT, "a new ConfigMap assigned to shard-a", || {
        probe += 1;
        let api = &api;
        async move {
            let created = api
                .create(&PostParams::default(), &named(&format!("probe-{probe}")))
                .await
                .ok()?;
            (shard_of(&created, RING).as_deref() == Some("shard-a")).then_some(())
        }
    })
    .await?;
    replica.stop().await?;
    remove_configurations(&client, &ns).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owned_object_a_shard_applies_carries_its_owners_shard_from_its_first_version()
-> anyhow::Result<()> {
    const COPIES: &str = "copies";
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("shard-owned").await?;
    let client = cp.client();
    // No webhook: the label can only come from the shard or, later, the sharder.
    let manager = manager(client.clone(), &ns, COPIES, "shard-a", 0);
    manager.add(Controller::new(Copy).owns::<ConfigMap>().ring(COPIES))?;
    let replica = Replica::start(manager);

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let since = config_maps.list(&ListParams::default()).await?;
    let version = since.metadata.resource_version.unwrap_or_default();
    let mut events = config_maps
        .watch(&WatchParams::default(), &version)
        .await?
        .boxed();
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("source".into()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    Api::<Secret>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await?;
    // The copy's first event: its first version, as the shard created it.
    let first = tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            match event? {
                WatchEvent::Added(cm) if cm.name_any() == "source-copy" => {
                    return anyhow::Ok(cm);
                }
                WatchEvent::Modified(cm) if cm.name_any() == "source-copy" => {
                    anyhow::bail!("the copy was modified before it was seen added: {cm:?}")
                }
                _ => {}
            }
        }
        anyhow::bail!("the watch ended before the copy appeared")
    })
    .await
    .map_err(|_| anyhow::anyhow!("no ConfigMap source-copy within {WAIT:?}"))??;
    let owner = Api::<Secret>::namespaced(client.clone(), &ns)
        .get("source")
        .await?;
    assert_eq!(shard_of(&owner, COPIES).as_deref(), Some("shard-a"));
    assert_eq!(shard_of(&first, COPIES).as_deref(), Some("shard-a"));
    replica.stop().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_object_is_assigned_anew_in_the_write_that_hands_it_back() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("shard-handback").await?;
    let client = cp.client();
    label_namespace(&client, &ns).await?;
    let first = Replica::start(config_map_shard(cp, &ns, "shard-a", free_addr()?.port()));
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let mut probe = 0;
    wait_for(WAIT, "a probe assigned to shard-a at creation", || {
        probe += 1;
        let api = &api;
        async move {
            let created = api
                .create(&PostParams::default(), &named(&format!("probe-{probe}")))
                .await
                .ok()?;
            (shard_of(&created, RING).as_deref() == Some("shard-a")).then_some(())
        }
    })
    .await?;
    for i in 0..30 {
        let created = api
            .create(&PostParams::default(), &named(&format!("cm-{i}")))
            .await?;
        assert_eq!(shard_of(&created, RING).as_deref(), Some("shard-a"));
    }

    // Every change from here on, while shard b joins and takes its share.
    let version = api
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut events = api.watch(&WatchParams::default(), &version).await?.boxed();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let watching = {
        let seen = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                match event {
                    Ok(WatchEvent::Modified(cm)) => {
                        seen.lock().push((cm.name_any(), shard_of(&cm, RING)));
                    }
                    other => seen.lock().push((format!("{other:?}"), None)),
                }
            }
        })
    };
    let second = Replica::start(config_map_shard(cp, &ns, "shard-b", 0));
    let ring = HashRing::new(["shard-a", "shard-b"]);
    let key = |name: &str| object_key::<ConfigMap>(Some(&ns), name);
    wait_for(
        WAIT,
        "every ConfigMap on the shard the ring of a and b gives",
        || {
            let (api, ring) = (&api, &ring);
            async move {
                let all = api.list(&ListParams::default()).await.ok()?;
                all.items
                    .iter()
                    .all(|cm| shard_of(cm, RING).as_deref() == ring.shard_for(&key(&cm.name_any())))
                    .then_some(())
            }
        },
    )
    .await?;
    watching.abort();
    let seen = seen.lock().clone();
    let moved = seen
        .iter()
        .filter(|(_, shard)| shard.as_deref() == Some("shard-b"))
        .count();
    assert!(moved > 0, "no object moved to shard-b: {seen:?}");
    let unassigned: Vec<_> = seen.iter().filter(|(_, shard)| shard.is_none()).collect();
    assert!(
        unassigned.is_empty(),
        "objects left without a shard between hand-back and assignment: {unassigned:?}"
    );
    second.stop().await?;
    first.stop().await?;
    remove_configurations(&client, &ns).await;
    Ok(())
}
