//! A controller whose CRD is not installed waits for it, with one line and a failing readiness
//! check, starts once it is, and waits again when it goes; the manager's other controllers work on,
//! and the replica that leads says which cache is behind.

use std::collections::BTreeSet;
use std::convert::Infallible;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{CustomResource, CustomResourceExt as _, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::informer::{CacheScope, Watchable};
use kubeward::serving::{BindAddress, Endpoints};
use kubeward::testing::{free_addr, get, install_crd};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;
use crate::fixtures::Log;

/// A kind only this test installs, and only after its manager started.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(group = "late.kubeward.dev", version = "v1", kind = "Late", namespaced)]
pub(crate) struct LateSpec {
    /// Anything.
    note: String,
}

const WAIT: Duration = Duration::from_secs(30);
/// The informer checks every 2 s; the rest is the CRD's establishing and a reconcile.
const NOTICED: Duration = Duration::from_secs(10);

/// Names of what a controller reconciled.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<BTreeSet<String>>>);

impl<K: Watchable> Reconciler<K> for Seen {
    type Error = Infallible;

    async fn reconcile(&self, obj: Arc<K>, _: &Context<K>) -> Result<Action, Infallible> {
        self.0.lock().insert(obj.name_any());
        Ok(Action::await_change())
    }
}

impl Seen {
    async fn reconciled(&self, name: &str) -> anyhow::Result<()> {
        let what = format!("{name} to be reconciled");
        Ok(wait_for(NOTICED, &what, || async {
            self.0.lock().contains(name).then_some(())
        })
        .await?)
    }
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    }
}

/// `/readyz`'s status and body.
async fn readyz(addr: std::net::SocketAddr) -> anyhow::Result<(u16, String)> {
    let answer = get(addr, "/readyz").await?;
    Ok((answer.status().as_u16(), answer.body().clone()))
}

/// Checks that the `late` controller waits for its CRD, in the log and in `/readyz`, and that
/// the leader said its cache is behind; returns the one line that says it waits.
async fn waiting_for_the_crd(log: &Log, probes: std::net::SocketAddr) -> anyhow::Result<String> {
    let line = log
        .line_with(
            WAIT,
            &["late.kubeward.dev", "does not serve", "waiting for it"],
        )
        .await?;
    let leading = log
        .line_with(WAIT, &["leading while these caches are behind"])
        .await?;
    assert!(
        leading.contains("late.kubeward.dev"),
        "the new leader names the cache that is behind: {leading}"
    );
    let (status, body) = readyz(probes).await?;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("late-cache") && body.contains("waiting for its CRD"),
        "{body}"
    );
    assert!(
        !body.contains("maps-cache"),
        "the ConfigMaps' cache is ready: {body}"
    );

    Ok(line)
}

#[tokio::test]
async fn a_controller_waits_for_its_crd_starts_when_installed_and_waits_again_when_removed()
-> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("kubeward=info");
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("missing-crd").await?;
    let crds: Api<CustomResourceDefinition> = Api::all(cp.client());
    let crd_name = Late::crd().name_any();
    let _ = crds.delete(&crd_name, &DeleteParams::default()).await;

    let election = LeaderElection::new("missing-crd", Some(ns.clone()), leader::Config::default());
    let config = Config::default()
        .cache(CacheScope::default().namespaces([ns.as_str()]))
        .leader_election(Some(election));
    let manager = Manager::new(cp.config(), config)?;
    let probes = free_addr()?;
    manager.add(Endpoints::new().health_probes(BindAddress::On(probes)))?;
    let (late, config_maps) = (Seen::default(), Seen::default());
    manager.add(Controller::<Late>::new(late.clone()).name("late"))?;
    manager.add(Controller::<ConfigMap>::new(config_maps.clone()).name("maps"))?;
    let token = manager.shutdown_token();
    let running = tokio::spawn(manager.run());

    // The ConfigMaps' controller works while the other waits, and says why.
    let maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    maps.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: meta("before"),
            ..ConfigMap::default()
        },
    )
    .await?;
    config_maps.reconciled("before").await?;
    let line = waiting_for_the_crd(&log, probes).await?;

    install_crd::<Late>(cp.client()).await?;
    let lates: Api<Late> = Api::namespaced(cp.client(), &ns);
    lates
        .create(
            &PostParams::default(),
            &Late {
                metadata: meta("first"),
                spec: LateSpec { note: "x".into() },
            },
        )
        .await?;
    late.reconciled("first").await?;
    let waits = log.lines_with("does not serve");
    assert_eq!(
        waits,
        vec![line],
        "one line for the whole wait, however many checks it took"
    );
    log.line_with(WAIT, &["late.kubeward.dev", "serves the resource again"])
        .await?;
    let ready = wait_for(WAIT, "/readyz to pass", || async {
        readyz(probes)
            .await
            .ok()
            .filter(|(status, _)| *status == 200)
    });
    ready.await?;

    // The CRD goes: the controller waits again, the other goes on.
    crds.delete(&crd_name, &DeleteParams::default()).await?;
    wait_for(WAIT, "a second waiting line", || async {
        (log.lines_with("does not serve").len() == 2).then_some(())
    })
    .await?;
    maps.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: meta("after"),
            ..ConfigMap::default()
        },
    )
    .await?;
    config_maps.reconciled("after").await?;
    let (status, body) = readyz(probes).await?;
    assert!(
        status == 503 && body.contains("waiting for its CRD"),
        "{status} {body}"
    );

    token.cancel();
    tokio::time::timeout(WAIT, running).await???;
    Ok(())
}
