//! Shutdown with 100 reconciles in flight: they finish, the Lease is released, `run()` is `Ok`,
//! and a restarted manager converges.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::leader;
use kubeward::manager::{Config, LeaderElection};
use kubeward::testing::{ControlPlane, lease_holder, wait_for};
use tokio::sync::watch;
use tokio::time::Instant;

use super::summary::Row;
use super::witness::{Operator, check, new_manager};
use super::witnessed::{Witnessed, start_witnessed};
use super::writer::{config_map, create_config_maps};

const IN_FLIGHT: usize = 100;
const LEASE: &str = "rel-shutdown";

/// Holds every reconcile at a gate until the test opens it, then finishes it.
#[derive(Clone)]
struct Gated {
    gate: watch::Receiver<bool>,
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl Reconciler<ConfigMap> for Gated {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        _cm: Arc<ConfigMap>,
        _ctx: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let mut gate = self.gate.clone();
        // An error means the test dropped the sender: finish anyway.
        let _ = gate.wait_for(|open| *open).await;
        tokio::time::sleep(Duration::from_millis(50)).await; // the rest of the work
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(Action::await_change())
    }
}

fn config(ns: &str) -> Config {
    let timings = leader::Config::default()
        .lease_duration(Duration::from_secs(4))
        .renew_deadline(Duration::from_secs(3))
        .retry_period(Duration::from_millis(500));
    Config::default()
        .leader_election(Some(LeaderElection::new(
            LEASE,
            Some(ns.to_owned()),
            timings,
        )))
        .graceful_shutdown_timeout(Duration::from_secs(30))
}

/// Shuts down while 100 reconciles wait at a gate, opens it, then restarts after changes.
pub(super) async fn with_reconciles_in_flight(cp: &ControlPlane) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-shutdown").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let leases: Api<Lease> = Api::namespaced(cp.client(), &ns);
    create_config_maps(&api, "cm", IN_FLIGHT).await?;

    let (open, gate) = watch::channel(false);
    let gated = Gated {
        gate,
        started: Arc::default(),
        finished: Arc::default(),
    };
    let (manager, probes) = new_manager(cp.client(), &ns, config(&ns))?;
    manager.add(
        Controller::new(gated.clone())
            .name("gated")
            .concurrency(u16::try_from(IN_FLIGHT)?),
    )?;
    let operator = Operator::start(manager, probes);
    wait_for(
        Duration::from_secs(60),
        "100 reconciles in flight at once",
        || async { (gated.started.load(Ordering::SeqCst) == IN_FLIGHT).then_some(()) },
    )
    .await?;
    anyhow::ensure!(
        lease_holder(&leases, LEASE).await?.is_some(),
        "the working manager holds the Lease"
    );

    operator.begin_shutdown();
    wait_for(
        Duration::from_secs(10),
        "/readyz to report the shutdown",
        || async { matches!(operator.get("/readyz").await, Ok((503, _))).then_some(()) },
    )
    .await?;
    anyhow::ensure!(
        !operator.is_finished() && gated.finished.load(Ordering::SeqCst) == 0,
        "run() must wait for the reconciles in flight"
    );
    open.send_replace(true);
    operator.stop().await?;
    let finished = gated.finished.load(Ordering::SeqCst);
    anyhow::ensure!(
        finished == IN_FLIGHT,
        "{finished} of {IN_FLIGHT} reconciles in flight finished before run() returned"
    );
    let left = lease_holder(&leases, LEASE).await?;
    anyhow::ensure!(left.is_none(), "the Lease is still held by {left:?}");

    // Changes while no manager runs, then a new one on the same Lease.
    for i in 0..10 {
        let patch = serde_json::json!({ "data": { "round": "1" } });
        api.patch(
            &format!("cm-{i}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    }
    for i in 0..5 {
        api.create(&PostParams::default(), &config_map(&format!("late-{i}")))
            .await?;
    }
    let restarted = Instant::now();
    let Witnessed {
        witness,
        cache,
        operator,
        ..
    } = start_witnessed(cp.client(), &ns, config(&ns), ("restarted", 8))?;
    let checked = check("restart after shutdown", &api, &cache, &witness, &operator).await?;
    let mut row = Row::new(
        format!("graceful shutdown with {IN_FLIGHT} reconciles in flight, then restart"),
        "restart → converged",
    );
    row.record(&checked, restarted.elapsed());
    row.note(format!(
        "{finished}/{IN_FLIGHT} finished, Lease released, run() Ok; 10 changes and 5 creates while down"
    ));
    operator.stop().await?;
    Ok(vec![row])
}
