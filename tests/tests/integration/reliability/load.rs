//! Sustained load: many objects, steady updates, bounded concurrency; the queue drains and
//! resident memory returns to where it was after warm-up.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kubeward::manager::Config;
use kubeward::testing::{ControlPlane, resident_bytes};
use kubeward_tests::metric_sum;
use tokio::time::Instant;

use super::summary::Row;
use super::witness::check;
use super::witnessed::{Witnessed, start_witnessed};
use super::writer::{Writer, create_config_maps};

/// The size of the load.
#[derive(Clone, Copy, Debug)]
pub(super) struct Load {
    pub(super) objects: usize,
    pub(super) updates_per_second: u32,
    pub(super) seconds: u64,
    pub(super) concurrency: u16,
    /// Whether resident memory must end within 10% of its warm-up value. Only meaningful when
    /// the suite runs alone in its process, as the full profile is run.
    pub(super) memory_bound: bool,
}

/// Creates the objects, lets the controller warm up, changes them for a while, and checks.
pub(super) async fn sustained(cp: &ControlPlane, load: Load) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-load").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let names = create_config_maps(&api, "load", load.objects).await?;

    let Witnessed {
        witness,
        cache,
        registry,
        operator,
    } = start_witnessed(
        cp.client(),
        &ns,
        Config::default(),
        ("load", load.concurrency),
    )?;
    check("warm-up", &api, &cache, &witness, &operator).await?;
    let warm = resident_bytes(std::process::id())?;

    // Eight lanes: each waits for its write before the next, so a slow answer from the
    // apiserver under load costs one lane's tick, not a quarter of the rate.
    let writer = Writer::start(&api, &names, load.updates_per_second, 8);
    let writing = Instant::now();
    tokio::time::sleep(Duration::from_secs(load.seconds)).await; // the load's duration, not a wait for an event
    let written = writer.stop().await;
    let rate = written as f64 / writing.elapsed().as_secs_f64();
    let stopped = Instant::now();
    let checked = check("sustained load", &api, &cache, &witness, &operator).await?;
    let drained = stopped.elapsed();
    let depth = gauge(&registry, "workqueue_depth", "load");
    anyhow::ensure!(
        depth == 0.0,
        "the work queue holds {depth} keys after the load"
    );
    let end = resident_bytes(std::process::id())?;
    let growth = (end as f64 - warm as f64) / warm as f64;
    if load.memory_bound {
        anyhow::ensure!(
            growth <= 0.10,
            "resident memory grew {:.1}% from {} MiB after warm-up to {} MiB",
            growth * 100.0,
            warm >> 20,
            end >> 20
        );
    }

    let mut row = Row::new(
        format!(
            "load: {} objects, {} updates/s for {} s, concurrency {}",
            load.objects, load.updates_per_second, load.seconds, load.concurrency
        ),
        "last update → queue drained",
    );
    row.record(&checked, drained);
    row.injected(written);
    row.note(format!(
        "{rate:.0} updates/s achieved; RSS {} MiB after warm-up, {} MiB at the end ({:+.1}%{})",
        warm >> 20,
        end >> 20,
        growth * 100.0,
        if load.memory_bound {
            ", bound 10%"
        } else {
            ", not bounded: other tests share the process"
        }
    ));
    operator.stop().await?;
    Ok(vec![row])
}

/// The value of gauge `family` for `name` (the queue's name is the controller's).
fn gauge(registry: &prometheus::Registry, family: &str, name: &str) -> f64 {
    metric_sum(registry, family, ("name", name), |m| {
        m.get_gauge().get_value()
    })
}
