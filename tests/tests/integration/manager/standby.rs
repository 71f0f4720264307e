//! `--leader-election-on-loss=standby`: a leader that loses the Lease keeps running and its
//! caches, leads again later, and a replica that does not lead queues no work.

use crate::fixtures::watching;
use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::leader;
use kubeward::manager::{LeaderElection, Manager, OnLeadershipLoss};
use kubeward::testing::{ControlPlane, TcpProxy, wait_for};
use kubeward_tests::metric_sum;
use parking_lot::Mutex;

const LEASE_NAME: &str = "standby";
const LEASE: Duration = Duration::from_secs(3);
const RENEW_DEADLINE: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(500);
/// Scheduling and request latency allowed on top of the renew deadline.
const SLACK: Duration = Duration::from_millis(500);
const CONTROLLER: &str = "standby-test";

/// One reconcile as the reconciler saw it start.
#[derive(Clone, Debug)]
struct Started {
    name: String,
    version: String,
    /// Wall clock at the start, to compare with the Lease's `renewTime` (same machine).
    at: SystemTime,
    /// The Lease read right after the start: its holder and `renewTime`.
    lease: Option<(Option<String>, Option<SystemTime>)>,
}

/// Records every reconcile; with `leases`, also reads the Lease at each start, as a witness of
/// whether this replica held it then. `requeue` keeps keys coming back, so a replica that kept
/// working without the Lease would be seen.
#[derive(Clone)]
struct Recorder {
    started: Arc<Mutex<Vec<Started>>>,
    leases: Option<Api<Lease>>,
    requeue: Option<Duration>,
}

impl Recorder {
    fn new(leases: Option<Api<Lease>>, requeue: Option<Duration>) -> Self {
        Self {
            started: Arc::default(),
            leases,
            requeue,
        }
    }

    fn started(&self) -> Vec<Started> {
        self.started.lock().clone()
    }

    /// name → the last resourceVersion a reconcile started at.
    fn last_versions(&self) -> BTreeMap<String, String> {
        self.started()
            .into_iter()
            .map(|s| (s.name, s.version))
            .collect()
    }
}

impl Reconciler<ConfigMap> for Recorder {
    type Error = Infallible;

    async fn reconcile(
        &self,
        obj: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Infallible> {
        let at = SystemTime::now();
        let lease = match &self.leases {
            Some(leases) => leases.get_opt(LEASE_NAME).await.ok().flatten().map(|l| {
                let spec = l.spec.unwrap_or_default();
                let renewed = spec.renew_time.map(|t| SystemTime::from(t.0));
                (spec.holder_identity.filter(|h| !h.is_empty()), renewed)
            }),
            None => None,
        };
        self.started.lock().push(Started {
            name: obj.name_any(),
            version: obj.resource_version().unwrap_or_default(),
            at,
            lease,
        });
        Ok(self
            .requeue
            .map_or_else(Action::await_change, Action::requeue))
    }
}

fn manager(
    client: kube::Client,
    ns: &str,
    recorder: &Recorder,
    on_loss: OnLeadershipLoss,
) -> Manager {
    let timings = leader::Config::default()
        .lease_duration(LEASE)
        .renew_deadline(RENEW_DEADLINE)
        .retry_period(RETRY);
    let config = watching(ns.to_owned()).leader_election(Some(
        LeaderElection::new(LEASE_NAME, Some(ns.to_owned()), timings).on_loss(on_loss),
    ));
    let manager = Manager::new(client, config).expect("a manager builds for a client given");
    manager
        .add(Controller::<ConfigMap>::new(recorder.clone()).name(CONTROLLER))
        .expect("the test manager takes it");
    manager
}

fn leading(manager_registry: &prometheus::Registry) -> bool {
    metric_sum(
        manager_registry,
        "leader_election_master_status",
        ("name", LEASE_NAME),
        |m| m.get_gauge().get_value(),
    ) > 0.5
}

fn queue_metric(manager_registry: &prometheus::Registry, family: &str) -> f64 {
    metric_sum(manager_registry, family, ("name", CONTROLLER), |m| {
        if family.ends_with("_total") {
            m.get_counter().get_value()
        } else {
            m.get_gauge().get_value()
        }
    })
}

/// A `kubeward_controller_*` run family of the controller, or `None` when it has no series.
fn run_metric(manager_registry: &prometheus::Registry, family: &str) -> Option<f64> {
    manager_registry
        .gather()
        .iter()
        .filter(|f| f.name() == family)
        .flat_map(|f| f.get_metric().iter())
        .find(|m| {
            m.get_label()
                .iter()
                .any(|l| l.name() == "controller" && l.value() == CONTROLLER)
        })
        .map(|m| m.get_gauge().get_value())
}

/// The new leader's run: its backlog was the `live` objects, its first reconcile came after it
/// started (within the test's wait), the backlog drained after that, and it counted at least one
/// reconcile per live object.
async fn takeover_was_measured(registry: &prometheus::Registry, live: usize) -> anyhow::Result<()> {
    let live = f64::from(u32::try_from(live)?);
    let backlog = run_metric(registry, "kubeward_controller_backlog_keys");
    assert_eq!(backlog, Some(live), "the backlog at takeover");
    let first = run_metric(registry, "kubeward_controller_first_reconcile_seconds");
    assert!(
        first.is_some_and(|s| s > 0.0 && s < 30.0),
        "seconds from the takeover to the first reconcile: {first:?}"
    );
    let drained = wait_for(Duration::from_secs(10), "the backlog drained", || async {
        run_metric(registry, "kubeward_controller_backlog_drained_seconds")
    })
    .await?;
    assert!(
        drained >= first.unwrap_or_default(),
        "drained after {drained} s, before the first reconcile ({first:?})"
    );
    let since = run_metric(registry, "kubeward_controller_run_reconciles");
    assert!(
        since.is_some_and(|n| n >= live),
        "{since:?} reconciles since the takeover, {live} live objects"
    );
    Ok(())
}

async fn create(api: &Api<ConfigMap>, name: &str, value: &str) -> anyhow::Result<()> {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([("v".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &cm).await?;
    Ok(())
}

async fn update(api: &Api<ConfigMap>, name: &str, value: &str) -> anyhow::Result<()> {
    let mut cm = api.get(name).await?;
    cm.data = Some([("v".to_owned(), value.to_owned())].into());
    api.replace(name, &PostParams::default(), &cm).await?;
    Ok(())
}

/// name → resourceVersion of every ConfigMap on the server.
async fn on_server(api: &Api<ConfigMap>) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|cm| (cm.name_any(), cm.resource_version().unwrap_or_default()))
        .collect())
}

/// Waits until `recorder` has reconciled every object on the server at its current version.
async fn all_reconciled(
    api: &Api<ConfigMap>,
    recorder: &Recorder,
    what: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(wait_for(Duration::from_secs(60), what, || async {
        let server = on_server(api).await.ok()?;
        let reconciled = recorder.last_versions();
        server
            .iter()
            .all(|(name, version)| reconciled.get(name) == Some(version))
            .then_some(server)
    })
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_leader_on_standby_survives_an_apiserver_outage_longer_than_its_renew_deadline_and_loses_no_update()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("standby-outage").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    for i in 0..8 {
        create(&api, &format!("cm-{i}"), "0").await?;
    }
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    // Requeues keep work coming all the time, so a replica working without the Lease would show.
    let recorder = Recorder::new(
        Some(Api::namespaced(cp.client(), &ns)),
        Some(Duration::from_millis(300)),
    );
    let manager = manager(
        cp.client_through(&proxy),
        &ns,
        &recorder,
        OnLeadershipLoss::Standby,
    );
    let registry = manager.registry().clone();
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    all_reconciled(&api, &recorder, "every object reconciled by the leader").await?;

    // The outage: the manager's connections stall for longer than the lease duration.
    proxy.stall();
    wait_for(
        RENEW_DEADLINE + SLACK * 2,
        "the stalled leader to stop leading at its renew deadline",
        || async { (!leading(&registry)).then_some(()) },
    )
    .await?;
    // Changes while it is cut off: updates, deletions and creations it sees only afterwards.
    for i in 0..4 {
        update(&api, &format!("cm-{i}"), "changed").await?;
    }
    for i in 4..6 {
        api.delete(&format!("cm-{i}"), &DeleteParams::default())
            .await?;
    }
    for i in 8..10 {
        create(&api, &format!("cm-{i}"), "new").await?;
    }
    tokio::time::sleep(LEASE).await; // the outage lasts past the lease duration
    assert!(!run.is_finished(), "a leader on standby keeps running");
    assert!(!leading(&registry));
    let restored_at = SystemTime::now();
    proxy.restore();

    wait_for(
        Duration::from_secs(20),
        "the manager to lead again after the API server came back",
        || async { leading(&registry).then_some(()) },
    )
    .await?;
    all_reconciled(
        &api,
        &recorder,
        "every change made during the outage to be reconciled afterwards",
    )
    .await?;
    assert!(!run.is_finished(), "the manager still runs");

    // No reconcile started while the Lease (as read at that start) was stale or someone else's.
    let started = recorder.started();
    let stale: Vec<_> = started
        .iter()
        .filter(|s| match &s.lease {
            Some((Some(_), Some(renewed))) => {
                s.at.duration_since(*renewed)
                    .is_ok_and(|since| since > RENEW_DEADLINE + SLACK)
            }
            _ => true,
        })
        .collect();
    assert!(
        stale.is_empty(),
        "{} of {} reconciles started without a fresh Lease, e.g. {:?}",
        stale.len(),
        started.len(),
        stale.first()
    );
    let after_outage: Vec<_> = started
        .iter()
        .filter(|s| s.at > restored_at && (s.name == "cm-4" || s.name == "cm-5"))
        .collect();
    assert!(
        after_outage.is_empty(),
        "objects deleted during the outage were reconciled after it: {after_outage:?}"
    );

    token.cancel();
    tokio::time::timeout(Duration::from_secs(20), run).await???;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_replica_queues_nothing_and_as_the_new_leader_reconciles_every_live_object_and_none_deleted()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("standby-queue").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    for i in 0..20 {
        create(&api, &format!("cm-{i}"), "0").await?;
    }
    let (first, second) = (Recorder::new(None, None), Recorder::new(None, None));
    let leader = manager(cp.client(), &ns, &first, OnLeadershipLoss::Standby);
    let (leader_registry, leader_token) = (leader.registry().clone(), leader.shutdown_token());
    let leader_run = tokio::spawn(leader.run());
    all_reconciled(
        &api,
        &first,
        "the first replica to lead and reconcile everything",
    )
    .await?;

    let standby = manager(cp.client(), &ns, &second, OnLeadershipLoss::Standby);
    let standby_cache = standby
        .factory()
        .informer(Api::<ConfigMap>::namespaced(standby.client(), &ns))
        .store();
    let (standby_registry, standby_token) = (standby.registry().clone(), standby.shutdown_token());
    let standby_run = tokio::spawn(standby.run());

    // Churn while the second replica stands by: updates, deletions, creations.
    for i in 0..10 {
        update(&api, &format!("cm-{i}"), "changed").await?;
    }
    let deleted: BTreeSet<String> = (10..15).map(|i| format!("cm-{i}")).collect();
    for name in &deleted {
        api.delete(name, &DeleteParams::default()).await?;
    }
    for i in 20..23 {
        create(&api, &format!("cm-{i}"), "new").await?;
    }
    let server = all_reconciled(&api, &first, "the leader to reconcile the churn").await?;
    wait_for(
        Duration::from_secs(30),
        "the standby's cache to hold what the server holds",
        || async {
            let cached: BTreeMap<_, _> = standby_cache
                .list()
                .iter()
                .map(|cm| (cm.name_any(), cm.resource_version().unwrap_or_default()))
                .collect();
            (cached == server).then_some(())
        },
    )
    .await?;
    assert!(leading(&leader_registry) && !leading(&standby_registry));
    assert!(
        queue_metric(&leader_registry, "workqueue_adds_total") >= 20.0,
        "the leader's queue counts its adds"
    );
    let depth = queue_metric(&standby_registry, "workqueue_depth");
    assert!(depth < 0.5, "the standby's queue holds {depth} keys");
    let adds = queue_metric(&standby_registry, "workqueue_adds_total");
    assert!(adds < 0.5, "{adds} keys were queued on the standby");
    assert!(
        second.started().is_empty(),
        "the standby reconciled nothing"
    );
    let idle = run_metric(&standby_registry, "kubeward_controller_backlog_keys");
    assert!(idle.unwrap_or(0.0) < 0.5, "no run on the standby: {idle:?}");

    // The leader shuts down and releases the Lease; the standby takes over.
    leader_token.cancel();
    tokio::time::timeout(Duration::from_secs(20), leader_run).await???;
    all_reconciled(
        &api,
        &second,
        "the new leader to reconcile every live object",
    )
    .await?;
    let reconciled: BTreeSet<String> = second.started().into_iter().map(|s| s.name).collect();
    let live: BTreeSet<String> = server.keys().cloned().collect();
    assert_eq!(
        reconciled, live,
        "the new leader reconciled exactly the live objects (none of the deleted {deleted:?})"
    );
    let adds = queue_metric(&standby_registry, "workqueue_adds_total");
    assert!(
        (adds - f64::from(u32::try_from(live.len())?)).abs() < 0.5,
        "{adds} adds for {} live objects: each should be queued once when the new leader starts",
        live.len()
    );
    takeover_was_measured(&standby_registry, live.len()).await?;

    standby_token.cancel();
    tokio::time::timeout(Duration::from_secs(20), standby_run).await???;
    Ok(())
}
