//! Network and storage faults: a watch connection that stalls without closing, and history
//! compacted in etcd while the operator was cut off (410 Gone).

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kubeward::controller::Controller;
use kubeward::informer;
use kubeward::manager::Config;
use kubeward::testing::{ControlPlane, TcpProxy, wait_for};
use kubeward_tests::event_about_a_config_map;
use tokio::time::Instant;

use super::summary::Row;
use super::witness::{Operator, Witness, check, new_manager};
use super::writer::{Writer, create_config_maps};
use crate::informer::{etcd_revision, etcdctl};

/// The server ends each watch request after this long, so a healthy watch is never silent longer.
const WATCH_TIMEOUT: Duration = Duration::from_secs(2);
/// The documented bound: a watch silent this long is taken as stalled and restarted.
const IDLE_TIMEOUT: Duration = Duration::from_secs(4);
/// Scheduling and request time allowed on top of the idle timeout on a busy two-core machine.
const SLACK: Duration = Duration::from_secs(2);
const STALLS: usize = 2;

fn informer_config() -> informer::Config {
    informer::Config::default()
        .watch_timeout(WATCH_TIMEOUT)
        .idle_timeout(IDLE_TIMEOUT)
        .backoff(Duration::from_millis(100), Duration::from_secs(1))
}

/// Stalls the operator's connections (the proxy holds bytes, closes nothing) while objects change.
pub(super) async fn stalled_connection(cp: &ControlPlane) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-stall").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let names = create_config_maps(&api, "cm", 20).await?;
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let client = cp.client_through(&proxy);

    let witness = Witness::default();
    let (manager, probes) = new_manager(client.clone(), &ns, Config::default())?;
    let informer = manager
        .factory()
        .informer_with(Api::<ConfigMap>::namespaced(client, &ns), informer_config())?;
    let cache = informer.store();
    manager.add(
        Controller::<ConfigMap>::new(witness.clone())
            .name("stall")
            .concurrency(2),
    )?;
    let operator = Operator::start(manager, probes);
    check("start-up", &api, &cache, &witness, &operator).await?;

    let writer = Writer::start(&api, &names, 20, 1);
    let mut row = Row::new(
        format!(
            "watch connection stalls without closing (bound: idle timeout {} s)",
            IDLE_TIMEOUT.as_secs()
        ),
        "proxy forwards again",
    );
    let mut slowest_detection = Duration::ZERO;
    for stall in 1..=STALLS {
        writer.wait_written(10).await?;
        let watches = informer.stats().watch_requests();
        proxy.stall();
        let stalled = Instant::now();
        wait_for(
            IDLE_TIMEOUT + SLACK + SLACK,
            "the stalled watch to be given up and a new one requested",
            || async { (informer.stats().watch_requests() > watches).then_some(()) },
        )
        .await?;
        let detected = stalled.elapsed();
        anyhow::ensure!(
            detected <= IDLE_TIMEOUT + SLACK,
            "stall {stall} was detected after {detected:?}, beyond the idle timeout {IDLE_TIMEOUT:?} and {SLACK:?} slack"
        );
        slowest_detection = slowest_detection.max(detected);
        proxy.restore();
        let restored = Instant::now();
        let paused = writer.pause().await;
        let checked = check(&format!("stall {stall}"), &api, &cache, &witness, &operator).await?;
        row.record(&checked, restored.elapsed());
        drop(paused);
    }
    writer.stop().await;
    row.note(format!(
        "stall detected after {:.1} s at worst",
        slowest_detection.as_secs_f64()
    ));
    operator.stop().await?;
    Ok(vec![row])
}

/// Cuts the operator off, deletes, creates and changes objects, compacts etcd past everything
/// the operator saw, and lets it back. Events, because kube-apiserver keeps no watch cache for
/// them: the resumed watch reaches etcd and gets 410 Gone.
pub(super) async fn compacted_history(cp: &ControlPlane) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-gone").await?;
    let api: Api<Event> = Api::namespaced(cp.client(), &ns);
    let keep: Vec<String> = (0..10).map(|i| format!("keep-{i}")).collect();
    let gone: Vec<String> = (0..5).map(|i| format!("gone-{i}")).collect();
    for name in keep.iter().chain(&gone) {
        api.create(&PostParams::default(), &event(&ns, name))
            .await?;
    }
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let client = cp.client_through(&proxy);

    let witness = Witness::default();
    let (manager, probes) = new_manager(client.clone(), &ns, Config::default())?;
    let informer = manager
        .factory()
        .informer_with(Api::<Event>::namespaced(client, &ns), informer_config())?;
    let cache = informer.store();
    manager.add(
        Controller::<Event>::new(witness.clone())
            .name("gone")
            .concurrency(2),
    )?;
    let operator = Operator::start(manager, probes);
    check("start-up", &api, &cache, &witness, &operator).await?;

    let relists = informer.stats().relists();
    proxy.cut();
    for name in &gone {
        api.delete(name, &DeleteParams::default()).await?;
    }
    for name in ["new-0", "new-1"] {
        api.create(&PostParams::default(), &event(&ns, name))
            .await?;
    }
    for name in keep.iter().take(3) {
        let patch = serde_json::json!({ "message": "changed while the operator was cut off" });
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    let revision = etcd_revision(cp).await?;
    etcdctl(cp, &["compact", &revision.to_string()]).await?;
    proxy.restore();
    let restored = Instant::now();
    let checked = check("compaction", &api, &cache, &witness, &operator).await?;
    anyhow::ensure!(
        informer.stats().relists() > relists,
        "the compacted history must have forced a relist (410 Gone)"
    );
    let mut row = Row::new(
        "history compacted in etcd while cut off (410 Gone): 5 deletes, 2 creates, 3 changes missed",
        "connection restored",
    );
    row.record(&checked, restored.elapsed());
    row.note("relisted; no deleted object left in the cache");
    operator.stop().await?;
    Ok(vec![row])
}

fn event(ns: &str, name: &str) -> Event {
    event_about_a_config_map(ns, name, "an event for the reliability suite")
}
