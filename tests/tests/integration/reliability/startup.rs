//! kube-apiserver unreachable when the operator starts: it keeps retrying, unready but alive,
//! and converges once the apiserver answers.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kubeward::manager::Config;
use kubeward::testing::{ControlPlane, TcpProxy, wait_for};
use tokio::time::Instant;

use super::summary::Row;
use super::witness::check;
use super::witnessed::{Witnessed, start_witnessed};
use super::writer::create_config_maps;

/// Connection attempts to see refused before the apiserver comes back: the first list and two
/// retries, with the informer's default backoff (0.8 s, doubling, jittered).
const ATTEMPTS: usize = 3;

/// Starts an operator whose connections are refused, checks its probes, then lets it through.
pub(super) async fn apiserver_unreachable(cp: &ControlPlane) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-startup").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    create_config_maps(&api, "cm", 20).await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    proxy.cut();

    let Witnessed {
        witness,
        cache,
        operator,
        ..
    } = start_witnessed(
        cp.client_through(&proxy),
        &ns,
        Config::default(),
        ("startup", 1),
    )?;
    wait_for(
        Duration::from_secs(30),
        &format!("{ATTEMPTS} refused connection attempts (retries)"),
        || async { (proxy.connections_accepted() >= ATTEMPTS).then_some(()) },
    )
    .await?;
    let (ready, why) = operator.get("/readyz").await?;
    anyhow::ensure!(
        ready == 503 && why.contains("startup-cache: cache not synced yet"),
        "/readyz must be 503 naming the unsynced controller while the apiserver is unreachable, got {ready}: {why}"
    );
    let (healthy, body) = operator.get("/healthz").await?;
    anyhow::ensure!(
        healthy == 200,
        "/healthz must stay 200 while retrying (a restart would not help), got {healthy}: {body}"
    );
    anyhow::ensure!(!operator.is_finished(), "the manager gave up");

    let refused = proxy.connections_accepted();
    proxy.restore();
    let restored = Instant::now();
    let checked = check(
        "apiserver reachable again",
        &api,
        &cache,
        &witness,
        &operator,
    )
    .await?;
    let mut row = Row::new(
        "kube-apiserver unreachable at start-up",
        "apiserver reachable",
    );
    row.record(&checked, restored.elapsed());
    row.injected(refused as u64);
    row.note(format!(
        "{refused} refused connections; meanwhile /readyz 503 naming the controller, /healthz 200; default backoff 0.8 s → 30 s"
    ));
    operator.stop().await?;
    Ok(vec![row])
}
