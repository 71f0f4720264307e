//! The sharder tends its ring's shard Leases on the real control plane: a crashed shard's Lease
//! expires, is taken over (the shard is dead) and later deleted, and the ring view shows it.

use crate::fixtures::watching;
use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ApiResource, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Api, ResourceExt as _};
use kubeward::controller::Controller;
use kubeward::leader;
use kubeward::manager::{LeaderElection, Manager};
use kubeward::shard::Shard;
use kubeward::sharding::{RING_LABEL, SHARDER_IDENTITY, STATE_LABEL, ShardState, ring_view};
use kubeward::testing::{ControlPlane, NoopReconciler, wait_for};

const RING: &str = "leases";
/// How long a dead shard's Lease stays in this test (a minute by default).
const TTL: Duration = Duration::from_secs(3);

/// A Lease of shard `name` of the ring, held by `holder`, renewed `ago` before now.
fn shard_lease(name: &str, holder: &str, ago: Duration, seconds: i32) -> anyhow::Result<Lease> {
    let renewed = Timestamp::now() - jiff_span(ago)?;
    Ok(Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(RING_LABEL.to_owned(), RING.to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(seconds),
            acquire_time: Some(MicroTime(renewed)),
            renew_time: Some(MicroTime(renewed)),
            ..LeaseSpec::default()
        }),
    })
}

fn jiff_span(duration: Duration) -> anyhow::Result<k8s_openapi::jiff::SignedDuration> {
    Ok(k8s_openapi::jiff::SignedDuration::try_from(duration)?)
}

/// One observed version of a Lease: its holder and state label, or `None` once deleted.
type Seen = Option<(Option<String>, Option<String>)>;

/// One shard `live` of the ring in `ns`, which also runs the sharder (it leads alone); its
/// metrics registry.
fn start_live_shard(
    cp: &ControlPlane,
    ns: &str,
) -> (
    tokio_util::sync::CancellationToken,
    tokio::task::JoinHandle<kubeward::manager::Result<()>>,
    prometheus::Registry,
) {
    let timings = leader::Config::default()
        .lease_duration(Duration::from_secs(3))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(300));
    let config = watching(ns.to_owned()).leader_election(Some(LeaderElection::new(
        "sharder",
        Some(ns.to_owned()),
        timings.clone(),
    )));
    let manager = Manager::new(cp.client(), config).expect("a manager builds for a client given");
    manager
        .add(
            Shard::new(RING, "live")
                .namespace(Some(ns.to_owned()))
                .lease(timings)
                .dead_lease_ttl(TTL),
        )
        .expect("the test manager takes the shard");
    manager
        .add(Controller::<ConfigMap>::new(NoopReconciler).ring(RING))
        .expect("the test manager takes it");
    let token = manager.shutdown_token();
    let registry = manager.registry().clone();
    (token, tokio::spawn(manager.run()), registry)
}

/// The `kubeward_sharder_shard_leases` gauge of the test's ring, by state.
fn lease_states(registry: &prometheus::Registry) -> BTreeMap<String, i64> {
    let mut states = BTreeMap::new();
    for family in registry.gather() {
        if family.name() != "kubeward_sharder_shard_leases" {
            continue;
        }
        for metric in family.get_metric() {
            let label = |name: &str| {
                metric
                    .get_label()
                    .iter()
                    .find(|l| l.name() == name)
                    .map(|l| l.value().to_owned())
            };
            if label("ring").as_deref() == Some(RING)
                && let Some(state) = label("state")
            {
                #[allow(clippy::cast_possible_truncation, reason = "a count of Leases")]
                states.insert(state, metric.get_gauge().get_value() as i64);
            }
        }
    }
    states
}

/// Every version of Lease `name` from `version` on (its holder and state label), until it is
/// deleted (`None`), or an error after 30 s.
async fn versions_until_deleted(
    leases: &Api<Lease>,
    name: &str,
    version: &str,
) -> anyhow::Result<Vec<Seen>> {
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut stream = leases.watch(&params, version).await?.boxed();
    let mut seen: Vec<Seen> = Vec::new();
    let deleted = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.try_next().await? {
            match event {
                WatchEvent::Added(lease) | WatchEvent::Modified(lease) => seen.push(Some((
                    lease.spec.and_then(|s| s.holder_identity),
                    lease
                        .metadata
                        .labels
                        .and_then(|mut l| l.remove(STATE_LABEL)),
                ))),
                WatchEvent::Deleted(_) => {
                    seen.push(None);
                    return Ok::<_, anyhow::Error>(());
                }
                WatchEvent::Bookmark(_) | WatchEvent::Error(_) => {}
            }
        }
        anyhow::bail!("the watch ended")
    })
    .await;
    anyhow::ensure!(
        matches!(deleted, Ok(Ok(()))),
        "Lease {name} was not deleted within 30 s: {deleted:?}, seen {seen:?}"
    );
    Ok(seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_shards_lease_expires_is_taken_over_as_dead_and_deleted_after_the_ttl()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("shard-leases").await?;
    let leases: Api<Lease> = Api::namespaced(cp.client(), &ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    for i in 0..5 {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        configmaps.create(&PostParams::default(), &cm).await?;
    }

    // One live shard, which also runs the sharder.
    let (token, run, registry) = start_live_shard(cp, &ns);

    // A shard that crashed a second after its last renewal, and one released long ago.
    let crashed = shard_lease("crashed", "crashed", Duration::ZERO, 1)?;
    let created = leases.create(&PostParams::default(), &crashed).await?;
    let released = shard_lease("released", "", Duration::from_secs(600), 1)?;
    leases.create(&PostParams::default(), &released).await?;
    let seen = versions_until_deleted(
        &leases,
        "crashed",
        &created.resource_version().unwrap_or_default(),
    )
    .await?;
    // Expired (still its own), then taken over by the sharder and dead, then deleted.
    let expired = seen.iter().position(|s| {
        s.as_ref().is_some_and(|(h, st)| {
            h.as_deref() == Some("crashed") && st.as_deref() == Some("expired")
        })
    });
    let dead = seen.iter().position(|s| {
        s.as_ref().is_some_and(|(h, st)| {
            h.as_deref() == Some(SHARDER_IDENTITY) && st.as_deref() == Some("dead")
        })
    });
    assert!(
        matches!((expired, dead), (Some(e), Some(d)) if e < d),
        "expected expired, then taken over and dead, then deleted; saw {seen:?}"
    );
    assert_eq!(seen.last(), Some(&None));

    // The Lease released ten minutes ago is past the TTL: it is deleted too.
    wait_for(
        Duration::from_secs(10),
        "the long-released Lease deleted",
        || async { matches!(leases.get_opt("released").await, Ok(None)).then_some(()) },
    )
    .await?;

    // The ring view: the live shard is ready, labelled so, and holds every ConfigMap.
    let kinds = [(ApiResource::erase::<ConfigMap>(&()), true)];
    let view = wait_for(
        Duration::from_secs(10),
        "the live shard holding all five ConfigMaps",
        || async {
            let view = ring_view(&cp.client(), &ns, RING, &kinds, std::slice::from_ref(&ns))
                .await
                .ok()?;
            (view.shard("live")?.objects == [5]).then_some(view)
        },
    )
    .await?;
    let live = view.shard("live").expect("the live shard's row");
    assert_eq!(live.state, Some(ShardState::Ready));
    assert_eq!(live.holder.as_deref(), Some("live"));
    assert_eq!(view.unassigned, [0]);
    assert!(view.shard("crashed").is_none(), "{view}");
    let table = view.to_string();
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()[..4]
                == [RING, "live", "ready", "live"]),
        "{table}"
    );
    let label = leases.get("live").await?.labels().get(STATE_LABEL).cloned();
    assert_eq!(label.as_deref(), Some("ready"));

    // The sharder's gauge counts the one Lease left, ready, and none in any other state.
    let expected: BTreeMap<String, i64> = ShardState::ALL
        .iter()
        .map(|s| (s.as_str().to_owned(), i64::from(*s == ShardState::Ready)))
        .collect();
    wait_for(Duration::from_secs(10), "the shard Lease gauge", || {
        let states = lease_states(&registry);
        let matched = states == expected;
        async move { matched.then_some(()) }
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}; gauge: {:?}", lease_states(&registry)))?;

    token.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    Ok(())
}
