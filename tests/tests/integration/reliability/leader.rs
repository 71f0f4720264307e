//! Leader faults between replicas of one operator: the leader killed, cut off, or handing over
//! gracefully. Leadership never overlaps and the work continues on the new leader.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kubeward::cache::Store;
use kubeward::controller::Controller;
use kubeward::leader;
use kubeward::manager::{BoxError, Config, Error, LeaderElection, OnLeadershipLoss, Runnable};
use kubeward::testing::{ControlPlane, TcpProxy, lease_holder, wait_for};
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::summary::Row;
use super::witness::{Operator, Witness, check, new_manager};
use super::writer::{Writer, create_config_maps};

const LEASE: &str = "rel-leader";
const LEASE_DURATION: Duration = Duration::from_secs(2);

/// Which replicas do leader-only work right now, and every moment two did.
#[derive(Debug, Default)]
struct Leaders {
    running: AtomicUsize,
    overlaps: AtomicUsize,
    current: Mutex<Option<String>>,
}

/// Marks a replica as leading for as long as its leader-only task lives (also when aborted).
struct Leading(Arc<Leaders>, String);

impl Drop for Leading {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        let mut current = self.0.current.lock();
        if current.as_deref() == Some(self.1.as_str()) {
            *current = None;
        }
    }
}

/// Leader-only work that marks its replica as leading; it can run again in a later term.
struct LeadingTask {
    leaders: Arc<Leaders>,
    me: String,
}

impl Runnable for LeadingTask {
    fn name(&self) -> String {
        format!("leading-{}", self.me)
    }

    fn next_term(&self) -> Option<Box<dyn Runnable>> {
        Some(Box::new(LeadingTask {
            leaders: Arc::clone(&self.leaders),
            me: self.me.clone(),
        }))
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            let LeadingTask { leaders, me } = *self;
            if leaders.running.fetch_add(1, Ordering::SeqCst) > 0 {
                leaders.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            *leaders.current.lock() = Some(me.clone());
            let _leading = Leading(leaders, me);
            shutdown.cancelled().await;
            Ok(())
        })
    }
}

/// One replica: a manager whose client goes through its own proxy, so it can be cut off.
struct Replica {
    operator: Operator,
    proxy: TcpProxy,
    cache: Store<ConfigMap>,
}

async fn replica(
    cp: &ControlPlane,
    ns: &str,
    name: &str,
    witness: &Witness,
    leaders: &Arc<Leaders>,
    on_loss: OnLeadershipLoss,
) -> anyhow::Result<Replica> {
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let timings = leader::Config::default()
        .identity(name)
        .lease_duration(LEASE_DURATION)
        .renew_deadline(Duration::from_millis(1500))
        .retry_period(Duration::from_millis(300));
    let config = Config::default().leader_election(Some(
        LeaderElection::new(LEASE, Some(ns.to_owned()), timings).on_loss(on_loss),
    ));
    let (manager, probes) = new_manager(cp.client_through(&proxy), ns, config)?;
    let cache = manager
        .factory()
        .informer(Api::<ConfigMap>::namespaced(manager.client(), ns))
        .store();
    manager.add(
        Controller::<ConfigMap>::new(witness.clone())
            .name("leader")
            .concurrency(2),
    )?;
    manager.add(LeadingTask {
        leaders: Arc::clone(leaders),
        me: name.to_owned(),
    })?;
    Ok(Replica {
        operator: Operator::start(manager, probes),
        proxy,
        cache,
    })
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    Killed,
    CutOff,
    HandsOver,
}

/// Two replicas; the leader is killed, then cut off, then hands over; a fresh standby joins
/// after each fault. With `OnLeadershipLoss::Standby` the cut-off leader keeps running and,
/// reconnected, stays on as a standby.
pub(super) async fn faults(
    cp: &ControlPlane,
    on_loss: OnLeadershipLoss,
) -> anyhow::Result<Vec<Row>> {
    let standby = on_loss == OnLeadershipLoss::Standby;
    let ns = cp
        .create_namespace(if standby { "rel-standby" } else { "rel-leader" })
        .await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let leases: Api<Lease> = Api::namespaced(cp.client(), &ns);
    let names = create_config_maps(&api, "cm", 20).await?;
    let witness = Witness::default();
    let leaders = Arc::new(Leaders::default());
    let mut replicas = HashMap::new();
    for name in ["replica-1", "replica-2"] {
        let started = replica(cp, &ns, name, &witness, &leaders, on_loss).await?;
        replicas.insert(name.to_owned(), started);
    }
    let first = new_leader(&leaders, None).await?;
    let leading = &replicas[&first];
    check(
        "start-up",
        &api,
        &leading.cache,
        &witness,
        &leading.operator,
    )
    .await?;

    let writer = Writer::start(&api, &names, 20, 1);
    let mut rows = Vec::new();
    let mut old = first;
    for (n, fault) in [Fault::Killed, Fault::CutOff, Fault::HandsOver]
        .into_iter()
        .enumerate()
    {
        writer.wait_written(10).await?;
        let gone = replicas
            .remove(&old)
            .ok_or_else(|| anyhow::anyhow!("no replica {old}"))?;
        let injected = Instant::now();
        let ended = inject(fault, gone);
        let next = new_leader(&leaders, Some(&old)).await?;
        let took_over = injected.elapsed();
        let stood_by = old_leader_after(fault, ended, standby).await?;
        anyhow::ensure!(
            lease_holder(&leases, LEASE).await? == Some(next.clone()),
            "{fault:?}: the Lease does not name the new leader {next}"
        );
        writer.wait_written(5).await?; // work for the new leader
        let paused = writer.pause().await;
        let leading = &replicas[&next];
        let fault_name = format!("leader {fault:?}");
        let checked = check(
            &fault_name,
            &api,
            &leading.cache,
            &witness,
            &leading.operator,
        )
        .await?;
        let recovered = injected.elapsed();
        drop(paused);
        let overlaps = leaders.overlaps.load(Ordering::SeqCst);
        anyhow::ensure!(
            overlaps == 0,
            "{fault:?}: two replicas led at once {overlaps} times"
        );
        let described = if standby {
            format!("{} on standby", fault.describe())
        } else {
            fault.describe().to_owned()
        };
        let mut row = Row::new(described, "fault → converged on the new leader");
        row.record(&checked, recovered);
        row.note(format!(
            "new leader after {:.2} s (lease {} s); no overlap",
            took_over.as_secs_f64(),
            LEASE_DURATION.as_secs()
        ));
        if let Some(stood_by) = stood_by {
            stood_by.operator.assert_alive("standing by").await?;
            row.note("the old leader stands by");
            replicas.insert(old.clone(), stood_by);
        }
        rows.push(row);
        let fresh = format!("replica-{}", n + 3);
        let started = replica(cp, &ns, &fresh, &witness, &leaders, on_loss).await?;
        replicas.insert(fresh, started);
        old = next;
    }
    writer.stop().await;
    for (_, replica) in replicas {
        replica.operator.stop().await?;
    }
    Ok(rows)
}

/// Checks how the old leader's `run()` ended after `fault`; on standby, a cut-off leader keeps
/// running: it is reconnected and returned, to stay on as a standby.
async fn old_leader_after(
    fault: Fault,
    ended: Option<Replica>,
    standby: bool,
) -> anyhow::Result<Option<Replica>> {
    let Some(ended) = ended else {
        return Ok(None);
    };
    if standby && matches!(fault, Fault::CutOff) {
        anyhow::ensure!(
            !ended.operator.is_finished(),
            "{fault:?}: the old leader's run() ended instead of standing by"
        );
        ended.proxy.restore();
        return Ok(Some(ended));
    }
    let outcome = ended.operator.wait().await?;
    match (fault, &outcome) {
        (Fault::CutOff, Err(Error::LeadershipLost { .. })) | (Fault::HandsOver, Ok(())) => Ok(None),
        _ => anyhow::bail!("{fault:?}: the old leader's run() ended with {outcome:?}"),
    }
}

/// Injects `fault` into the leader `gone`; returns it (with its proxy) unless it was killed.
fn inject(fault: Fault, gone: Replica) -> Option<Replica> {
    match fault {
        Fault::Killed => {
            gone.proxy.cut();
            gone.operator.kill();
            None
        }
        Fault::CutOff => {
            gone.proxy.cut();
            Some(gone)
        }
        Fault::HandsOver => {
            gone.operator.begin_shutdown();
            Some(gone)
        }
    }
}

impl Fault {
    fn describe(self) -> &'static str {
        match self {
            Fault::Killed => "leader killed (connections cut, process gone)",
            Fault::CutOff => "leader cut off from the apiserver (partition)",
            Fault::HandsOver => "leader shuts down gracefully (hand-over)",
        }
    }
}

/// Waits until a replica other than `old` does leader-only work; returns its name.
async fn new_leader(leaders: &Leaders, old: Option<&str>) -> anyhow::Result<String> {
    Ok(wait_for(
        LEASE_DURATION * 10,
        &format!("a replica other than {old:?} to lead"),
        || async {
            let current = leaders.current.lock().clone()?;
            (Some(current.as_str()) != old).then_some(current)
        },
    )
    .await?)
}

/// Regression: `Manager::run` spawned its leader elector as a detached task, so dropping the
/// `run()` future (a `select!` that picked another branch, a timeout, an aborted task) stopped
/// the controllers but left the elector renewing the Lease: no replica worked until the process
/// exited. Dropping `run()` must end the election like a killed process: the Lease expires and a
/// standby takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_run_future_stops_renewing_the_lease_so_a_standby_takes_over()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("rel-dropped").await?;
    let leases: Api<Lease> = Api::namespaced(cp.client(), &ns);
    let (witness, leaders) = (Witness::default(), Arc::new(Leaders::default()));
    let exit = OnLeadershipLoss::Exit;
    let dropped = replica(cp, &ns, "dropped", &witness, &leaders, exit).await?;
    anyhow::ensure!(new_leader(&leaders, None).await? == "dropped");
    dropped.operator.kill(); // its connections stay open: only the future is gone
    let standby = replica(cp, &ns, "standby", &witness, &leaders, exit).await?;
    let next = new_leader(&leaders, Some("dropped")).await?;
    anyhow::ensure!(next == "standby", "{next} leads");
    anyhow::ensure!(
        lease_holder(&leases, LEASE).await? == Some(next),
        "the Lease names the standby"
    );
    standby.operator.stop().await
}
