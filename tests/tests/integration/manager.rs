//! The Manager on the real control plane: leader election gates work, and a lost Lease ends the run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kubeward::leader;
use kubeward::manager::{Config, Error, LeaderElection, Manager, runnable_fn};
use kubeward::testing::{ControlPlane, TcpProxy};
use kubeward_tests::wait_for;
use parking_lot::Mutex;

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

fn manager(
    client: kube::Client,
    ns: &str,
    replica: &'static str,
    workers: &Arc<Workers>,
) -> Manager {
    let timings = leader::Config::default()
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_millis(1500))
        .retry_period(Duration::from_millis(300));
    let config = Config::default().leader_election(Some(LeaderElection::new(
        "managers",
        Some(ns.to_owned()),
        timings,
    )));
    let manager = Manager::new(client, config);
    let workers = Arc::clone(workers);
    manager.add(runnable_fn(
        format!("work-{replica}"),
        true,
        move |shutdown| async move {
            if workers.running.fetch_add(1, Ordering::SeqCst) > 0 {
                workers.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            workers.started_by.lock().push(replica);
            let _working = Working(workers);
            shutdown.cancelled().await;
            Ok(())
        },
    ));
    manager
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt("managers")
        .await
        .ok()??
        .spec?
        .holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_works_and_a_leader_cut_off_stops_at_once_and_exits_with_an_error()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("managers").await?;
    let leases: Api<Lease> = Api::namespaced(cp.client(), &ns);
    let workers = Arc::new(Workers::default());

    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let first = manager(cp.client_through(&proxy), &ns, "first", &workers);
    let first_run = tokio::spawn(first.run());
    wait_for(
        Duration::from_secs(20),
        "the first replica to lead and work",
        || async { (workers.running.load(Ordering::SeqCst) == 1).then_some(()) },
    )
    .await?;
    let first_holder = holder(&leases).await.expect("the leader holds the Lease");

    let second = manager(cp.client(), &ns, "second", &workers);
    let second_token = second.shutdown_token();
    let second_run = tokio::spawn(second.run());
    // Let the second replica see the first one renew a few times: it must stay idle meanwhile.
    let seen = Mutex::new(std::collections::HashSet::new());
    wait_for(
        Duration::from_secs(10),
        "the leader to renew its Lease three times",
        || async {
            let renew = leases.get("managers").await.ok()?.spec?.renew_time?;
            let mut seen = seen.lock();
            seen.insert(renew.0.to_string());
            (seen.len() > 3).then_some(())
        },
    )
    .await?;
    assert_eq!(
        *workers.started_by.lock(),
        ["first"],
        "the standby must not work while the leader renews"
    );

    proxy.cut();
    let cut_at = tokio::time::Instant::now();
    let first_outcome = tokio::time::timeout(Duration::from_secs(10), first_run).await??;
    let stopped_after = workers
        .stopped_at
        .lock()
        .first()
        .expect("the first replica stopped working")
        .duration_since(cut_at);
    assert!(
        matches!(first_outcome, Err(Error::LeadershipLost { ref lease }) if lease == "managers"),
        "a leader that cannot renew must end its run with LeadershipLost, got {first_outcome:?}"
    );
    assert!(
        stopped_after < Duration::from_secs(2),
        "its work stopped {stopped_after:?} after the cut, after its Lease could expire"
    );

    wait_for(
        Duration::from_secs(10),
        "the second replica to take over",
        || async {
            (holder(&leases).await.is_some_and(|h| h != first_holder)
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

    second_token.cancel();
    tokio::time::timeout(Duration::from_secs(10), second_run).await???;
    assert_eq!(workers.running.load(Ordering::SeqCst), 0);
    assert_eq!(
        holder(&leases).await.unwrap_or_default(),
        "",
        "a graceful shutdown releases the Lease"
    );
    Ok(())
}
