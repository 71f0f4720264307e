//! The Manager on the real control plane: leader election gates work, and a lost Lease ends the
//! run or puts the replica on standby.

mod missing_crd;
mod standby;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kubeward::leader;
use kubeward::manager::{
    BoxError, Config, Error, LeaderElection, Manager, OnLeadershipLoss, Runnable,
};
use kubeward::testing::{ControlPlane, TcpProxy, lease_holder, wait_for};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// The Lease the replicas elect on.
const LEASE: &str = "managers";

/// Counts the replicas doing leader-only work, and every moment two did.
#[derive(Default)]
struct Workers {
    running: AtomicUsize,
    overlaps: AtomicUsize,
    started_by: Mutex<Vec<&'static str>>,
    stopped_at: Mutex<Vec<tokio::time::Instant>>,
}

/// Marks one replica as working for as long as it lives (also when its task is aborted).
struct Working(Arc<Workers>);

impl Drop for Working {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        self.0.stopped_at.lock().push(tokio::time::Instant::now());
    }
}

/// Leader-only work of one replica; it can run again in a later term, as standby needs.
struct Work {
    replica: &'static str,
    workers: Arc<Workers>,
}

impl Runnable for Work {
    fn name(&self) -> String {
        format!("work-{}", self.replica)
    }

    fn next_term(&self) -> Option<Box<dyn Runnable>> {
        Some(Box::new(Work {
            replica: self.replica,
            workers: Arc::clone(&self.workers),
        }))
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            let workers = self.workers;
            if workers.running.fetch_add(1, Ordering::SeqCst) > 0 {
                workers.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            workers.started_by.lock().push(self.replica);
            let _working = Working(workers);
            shutdown.cancelled().await;
            Ok(())
        })
    }
}

fn manager(
    client: kube::Client,
    ns: &str,
    replica: &'static str,
    workers: &Arc<Workers>,
    on_loss: OnLeadershipLoss,
) -> Manager {
    let timings = leader::Config::default()
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_millis(1500))
        .retry_period(Duration::from_millis(300));
    let config = Config::default().leader_election(Some(
        LeaderElection::new(LEASE, Some(ns.to_owned()), timings).on_loss(on_loss),
    ));
    let manager = Manager::new(client, config).expect("a manager builds for a client given");
    manager
        .add(Work {
            replica,
            workers: Arc::clone(workers),
        })
        .expect("the test manager takes it");
    manager
}

/// Waits until `who` has renewed the Lease three times.
async fn renewed_three_times(leases: &Api<Lease>, who: &str) -> anyhow::Result<()> {
    let seen = Mutex::new(std::collections::HashSet::new());
    Ok(wait_for(
        Duration::from_secs(10),
        &format!("{who} to renew its Lease three times"),
        || async {
            let renew = leases.get(LEASE).await.ok()?.spec?.renew_time?;
            let mut seen = seen.lock();
            seen.insert(renew.0.to_string());
            (seen.len() > 3).then_some(())
        },
    )
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_works_and_a_leader_cut_off_stops_at_once_and_exits_with_an_error()
-> anyhow::Result<()> {
    only_the_leader_works_and_a_cut_off_leader_stops_at_once(OnLeadershipLoss::Exit).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_works_and_a_leader_cut_off_stops_at_once_then_stands_by_and_leads_again()
-> anyhow::Result<()> {
    only_the_leader_works_and_a_cut_off_leader_stops_at_once(OnLeadershipLoss::Standby).await
}

/// Two replicas; the leader is cut off from the API server. It stops working before its Lease
/// can expire; with `Exit` its run ends with `LeadershipLost`, with `Standby` it keeps running,
/// stays idle while the other replica leads, and leads again when that one shuts down.
async fn only_the_leader_works_and_a_cut_off_leader_stops_at_once(
    on_loss: OnLeadershipLoss,
) -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp
        .create_namespace(&format!("managers-{on_loss:?}").to_lowercase())
        .await?;
    let leases: Api<Lease> = Api::namespaced(cp.client(), &ns);
    let workers = Arc::new(Workers::default());

    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let first = manager(cp.client_through(&proxy), &ns, "first", &workers, on_loss);
    let first_token = first.shutdown_token();
    let first_run = tokio::spawn(first.run());
    wait_for(
        Duration::from_secs(20),
        "the first replica to lead and work",
        || async { (workers.running.load(Ordering::SeqCst) == 1).then_some(()) },
    )
    .await?;
    let first_holder = lease_holder(&leases, LEASE)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the leader holds no Lease"))?;

    let second = manager(cp.client(), &ns, "second", &workers, on_loss);
    let second_token = second.shutdown_token();
    let second_run = tokio::spawn(second.run());
    // Let the second replica see the first one renew a few times: it must stay idle meanwhile.
    renewed_three_times(&leases, "the leader").await?;
    assert_eq!(
        *workers.started_by.lock(),
        ["first"],
        "the standby must not work while the leader renews"
    );

    proxy.cut();
    let cut_at = tokio::time::Instant::now();
    wait_for(
        Duration::from_secs(10),
        "the cut-off leader to stop working",
        || async { (workers.running.load(Ordering::SeqCst) == 0).then_some(()) },
    )
    .await?;
    let stopped_after = workers
        .stopped_at
        .lock()
        .first()
        .expect("the first replica stopped working")
        .duration_since(cut_at);
    assert!(
        stopped_after < Duration::from_secs(2),
        "its work stopped {stopped_after:?} after the cut, after its Lease could expire"
    );
    let first_run = if on_loss == OnLeadershipLoss::Standby {
        Some(first_run)
    } else {
        let first_outcome = tokio::time::timeout(Duration::from_secs(10), first_run).await??;
        assert!(
            matches!(first_outcome, Err(Error::LeadershipLost { ref lease }) if lease == LEASE),
            "a leader that cannot renew must end its run with LeadershipLost, got {first_outcome:?}"
        );
        None
    };

    wait_for(
        Duration::from_secs(10),
        "the second replica to take over",
        || async {
            (lease_holder(&leases, LEASE)
                .await
                .ok()
                .flatten()
                .is_some_and(|h| h != first_holder)
                && workers.running.load(Ordering::SeqCst) == 1)
                .then_some(())
        },
    )
    .await?;
    assert_eq!(*workers.started_by.lock(), ["first", "second"]);
    assert_eq!(
        workers.overlaps.load(Ordering::SeqCst),
        0,
        "two replicas worked at the same moment"
    );

    let Some(first_run) = first_run else {
        second_token.cancel();
        tokio::time::timeout(Duration::from_secs(10), second_run).await???;
        assert_eq!(workers.running.load(Ordering::SeqCst), 0);
        assert_eq!(
            lease_holder(&leases, LEASE).await?,
            None,
            "a graceful shutdown releases the Lease"
        );
        return Ok(());
    };

    stands_by_then_leads_again(
        &leases,
        &workers,
        &proxy,
        (first_run, first_token, &first_holder),
        (second_run, second_token),
    )
    .await
}

type Run = tokio::task::JoinHandle<kubeward::manager::Result<()>>;

/// The cut-off first replica on standby: reconnected, it stays idle while the second leads, and
/// leads again once the second shuts down.
async fn stands_by_then_leads_again(
    leases: &Api<Lease>,
    workers: &Arc<Workers>,
    proxy: &TcpProxy,
    (first_run, first_token, first_holder): (Run, CancellationToken, &str),
    (second_run, second_token): (Run, CancellationToken),
) -> anyhow::Result<()> {
    // On standby: reconnected, the first replica stays idle while the second renews...
    assert!(
        !first_run.is_finished(),
        "a replica on standby keeps running"
    );
    proxy.restore();
    renewed_three_times(leases, "the new leader").await?;
    assert_eq!(*workers.started_by.lock(), ["first", "second"]);
    assert!(
        !first_run.is_finished(),
        "a replica on standby keeps running"
    );

    // ...and leads again once the second one shuts down and releases the Lease.
    second_token.cancel();
    tokio::time::timeout(Duration::from_secs(10), second_run).await???;
    wait_for(
        Duration::from_secs(10),
        "the replica on standby to lead and work again",
        || async {
            (lease_holder(leases, LEASE).await.ok().flatten().as_deref() == Some(first_holder)
                && workers.running.load(Ordering::SeqCst) == 1)
                .then_some(())
        },
    )
    .await?;
    assert_eq!(*workers.started_by.lock(), ["first", "second", "first"]);
    first_token.cancel();
    tokio::time::timeout(Duration::from_secs(10), first_run).await???;
    assert_eq!(workers.running.load(Ordering::SeqCst), 0);
    assert_eq!(
        workers.overlaps.load(Ordering::SeqCst),
        0,
        "two replicas worked at the same moment"
    );
    assert_eq!(
        lease_holder(leases, LEASE).await?,
        None,
        "a graceful shutdown releases the Lease"
    );
    Ok(())
}
