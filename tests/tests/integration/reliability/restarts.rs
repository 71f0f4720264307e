//! kube-apiserver killed (SIGKILL) and restarted on the same etcd while objects keep changing.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kubeward::manager::Config;
use kubeward::testing::ControlPlane;
use tokio::time::Instant;

use super::summary::Row;
use super::witness::check;
use super::witnessed::{Witnessed, start_witnessed};
use super::writer::{Writer, create_config_maps};

/// Restarts kube-apiserver `restarts` times, with writes going on, and checks after each one.
pub(super) async fn apiserver_killed_and_restarted(
    cp: &mut ControlPlane,
    restarts: usize,
) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-restarts").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let names = create_config_maps(&api, "cm", 30).await?;

    let Witnessed {
        witness,
        cache,
        operator,
        ..
    } = start_witnessed(cp.client(), &ns, Config::default(), ("restarts", 4))?;
    check("start-up", &api, &cache, &witness, &operator).await?;

    let writer = Writer::start(&api, &names, 50, 1);
    let mut row = Row::new(
        "kube-apiserver SIGKILLed and restarted on the same etcd, objects changing",
        "apiserver ready again (then 5 more writes)",
    );
    for restart in 1..=restarts {
        writer.wait_written(10).await?; // changes flow between faults
        cp.restart_apiserver().await?;
        let back = Instant::now();
        // Changes after the restart, so the check needs a working watch, not a stale cache.
        writer.wait_written(5).await?;
        let paused = writer.pause().await;
        let fault = format!("apiserver restart {restart}");
        let checked = check(&fault, &api, &cache, &witness, &operator).await?;
        row.record(&checked, back.elapsed());
        drop(paused);
    }
    let written = writer.stop().await;
    row.note(format!("{written} writes in all"));
    operator.stop().await?;
    Ok(vec![row])
}
