//! A shard's Lease over its life on the real control plane (issue 41): a shard restarted after
//! the sharder took over its Lease leads once the takeover's term ends, and a shard that loses
//! its Lease says so in its log line and its metrics.

use crate::fixtures::{Log, watching};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use kubeward::controller::Controller;
use kubeward::leader;
use kubeward::manager::{LeaderElection, Manager};
use kubeward::shard::Shard;
use kubeward::sharding::{RING_LABEL, SHARDER_IDENTITY};
use kubeward::testing::{ControlPlane, NoopReconciler, wait_for};
use kubeward_tests::metric_sum;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const RING: &str = "restarts";
const WAIT: Duration = Duration::from_secs(60);

struct Replica {
    registry: prometheus::Registry,
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

/// Shard `id` of [`RING`] in `ns`, reconciling nothing, with a 3 s Lease.
fn start(client: Client, ns: &str, id: &str) -> Replica {
    let timings = leader::Config::default()
        .lease_duration(Duration::from_secs(3))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(300));
    let config = watching(ns.to_owned()).leader_election(Some(LeaderElection::new(
        "sharder",
        Some(ns.to_owned()),
        timings.clone(),
    )));
    let manager = Manager::new(client, config).expect("a manager builds for a client given");
    manager
        .add(
            Shard::new(RING, id)
                .namespace(Some(ns.to_owned()))
                .lease(timings),
        )
        .expect("the test manager takes the shard");
    manager
        .add(Controller::<ConfigMap>::new(NoopReconciler).ring(RING))
        .expect("the test manager takes it");
    Replica {
        registry: manager.registry().clone(),
        token: manager.shutdown_token(),
        run: tokio::spawn(manager.run()),
    }
}

impl Replica {
    async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(WAIT, self.run).await???;
        Ok(())
    }
}

/// The holder of Lease `name` and its `renewTime`, once it exists.
async fn holder(leases: &Api<Lease>, name: &str) -> Option<(String, Timestamp)> {
    let spec = leases.get_opt(name).await.ok()??.spec?;
    Some((spec.holder_identity?, spec.renew_time?.0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_restarted_after_its_lease_was_taken_over_leads_when_the_takeover_ends()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("shard-restart").await?;
    let client = cp.client();
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    // Shard `restarted` crashed 3 s ago with a 3 s Lease: it is expired now and uncertain in
    // 3 s, when the live shard's sharder takes it over for 6 s.
    let crashed = Timestamp::now() - SignedDuration::from_secs(3);
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("restarted".into()),
            labels: Some([(RING_LABEL.to_owned(), RING.to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("restarted".into()),
            lease_duration_seconds: Some(3),
            acquire_time: Some(MicroTime(crashed)),
            renew_time: Some(MicroTime(crashed)),
            ..LeaseSpec::default()
        }),
    };
    leases.create(&PostParams::default(), &lease).await?;
    let live = start(client.clone(), &ns, "live");
    let (_, taken_at) = wait_for(
        WAIT,
        "the sharder to take the crashed shard's Lease over",
        || {
            let leases = &leases;
            async move {
                holder(leases, "restarted")
                    .await
                    .filter(|(h, _)| h == SHARDER_IDENTITY)
            }
        },
    )
    .await?;
    let term = leases
        .get("restarted")
        .await?
        .spec
        .and_then(|s| s.lease_duration_seconds)
        .unwrap_or_default();
    assert_eq!(term, 6, "the takeover lasts twice the shard's Lease");
    let ends = taken_at + SignedDuration::from_secs(6);
    // The shard restarts 4 s into the 6 s term: 2 s of it are left.
    tokio::time::sleep_until(
        tokio::time::Instant::now()
            + Duration::try_from(
                (taken_at + SignedDuration::from_secs(4)).duration_since(Timestamp::now()),
            )
            .unwrap_or_default(),
    )
    .await;
    let restarted_at = tokio::time::Instant::now();
    let restarted = start(client.clone(), &ns, "restarted");
    let (_, acquired) = wait_for(WAIT, "the restarted shard to hold its Lease again", || {
        let leases = &leases;
        async move {
            holder(leases, "restarted")
                .await
                .filter(|(h, _)| h == "restarted")
        }
    })
    .await?;
    let waited = restarted_at.elapsed();
    assert!(
        acquired >= ends,
        "the restarted shard took its Lease at {acquired}, before the takeover's term ended at {ends}"
    );
    // 2 s of the term were left; 2 s more for the shard's start, its 300 ms retry period and a
    // loaded machine. Waiting twice its own Lease (the term written, 6 s) would fail.
    assert!(
        waited < Duration::from_secs(4),
        "the restarted shard led {waited:?} after its start, though 2 s of the takeover were left"
    );
    restarted.stop().await?;
    live.stop().await
}

#[tokio::test(flavor = "current_thread")]
async fn a_shard_that_loses_its_lease_says_so_in_the_log_line_that_stops_it_and_in_a_metric()
-> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("error");
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("shard-lost").await?;
    let client = cp.client();
    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let replica = start(client.clone(), &ns, "loser");
    wait_for(WAIT, "the shard to hold its Lease", || {
        let leases = &leases;
        async move { holder(leases, "loser").await.filter(|(h, _)| h == "loser") }
    })
    .await?;
    // Someone else takes the Lease: the shard's next renewal sees it and stops.
    wait_for(WAIT, "the Lease to be taken from the shard", || {
        let leases = &leases;
        async move {
            let mut lease = leases.get("loser").await.ok()?;
            let spec = lease.spec.get_or_insert_default();
            spec.holder_identity = Some("intruder".into());
            spec.lease_duration_seconds = Some(3600);
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            leases
                .replace("loser", &PostParams::default(), &lease)
                .await
                .ok()
                .map(drop)
        }
    })
    .await?;
    let ended = tokio::time::timeout(WAIT, replica.run).await??;
    let error = ended.expect_err("a shard that lost its Lease stops with an error");
    let stopping = log.lines_with("stopping the manager");
    assert!(
        stopping
            .iter()
            .any(|l| l.contains("lost its shard Lease loser of ring restarts")),
        "the log line that stops the manager does not say why: {stopping:?}"
    );
    let lost = metric_sum(
        &replica.registry,
        "kubeward_shard_lease_losses_total",
        ("ring", RING),
        |m| m.get_counter().get_value(),
    );
    assert!(
        (lost - 1.0).abs() < 0.5,
        "kubeward_shard_lease_losses_total is {lost}, not 1"
    );
    let mut causes = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        causes = format!("{causes}: {cause}");
        source = cause.source();
    }
    assert!(
        causes.contains("lost its shard Lease loser of ring restarts"),
        "the error the manager returns does not say why: {causes}"
    );
    Ok(())
}
