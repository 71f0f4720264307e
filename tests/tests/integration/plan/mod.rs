//! Plan mode on the real control plane: what `Manager::plan` and the `plan` command find,
//! that nothing persists, and that a real run then makes exactly the planned writes.
//!
//! The operator is the example `ConfigMapGenerator`'s shape (owned ConfigMap through the kit's
//! `apply`, `Ready` condition, finalizer) without Events, so that every write to the cluster
//! is one the test can count.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Cleanup, Context, Controller, Reconciler};
use kubeward::manager::{Config, Manager};
use kubeward::testing::{ControlPlane, wait_for};
use kubeward_examples::by_hand::FINALIZER;
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};
use kubeward_tests::metric_sum;

use crate::fixtures::watching;

mod command;
mod drift;
mod overlay;
mod upgrade;

/// How long an operator may take to bring every generator to its ConfigMap.
const CONVERGE: Duration = Duration::from_secs(300);
/// The controller's name, as the field manager of its applies.
const CONTROLLER: &str = "plan-generator";

/// The generator's reconciler: server-side applies the ConfigMap `NAME-generated` holding the
/// spec's content, then reports `Ready`. Its second version (`upgraded`) also labels the
/// ConfigMap and writes a `format` key: the owned objects' new shape.
#[derive(Clone, Copy, Debug, Default)]
struct Quiet {
    upgraded: bool,
}

impl Reconciler<ConfigMapGenerator> for Quiet {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        cmg: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<Action, kubeward::Error> {
        let name = format!("{}-generated", cmg.name_any());
        let mut cm = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..ConfigMap::default()
        };
        let mut data = BTreeMap::from([("content".to_owned(), cmg.spec.content.clone())]);
        if self.upgraded {
            data.insert("format".to_owned(), "v2".to_owned());
            cm.metadata.labels = Some(BTreeMap::from([("shape".to_owned(), "v2".to_owned())]));
        }
        cm.data = Some(data);
        ctx.apply(&*cmg, cm).await?;
        ctx.succeed(
            &*cmg,
            "Generated",
            format!("ConfigMap {name} holds the content"),
        )
        .await?;
        Ok(Action::await_change())
    }
}

impl Cleanup<ConfigMapGenerator> for Quiet {
    async fn cleanup(
        &self,
        cmg: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<(), kubeward::Error> {
        ctx.prune::<ConfigMap>(&*cmg, &[]).await?;
        Ok(())
    }
}

/// A manager over `ns` with the generator controller (version `upgraded` or not).
fn manager(cp: &ControlPlane, ns: &str, upgraded: bool) -> anyhow::Result<Manager> {
    manager_with(cp, watching(ns.to_owned()), upgraded)
}

fn manager_with(cp: &ControlPlane, config: Config, upgraded: bool) -> anyhow::Result<Manager> {
    let manager = Manager::new(cp.client(), config)?;
    manager.add(
        Controller::with_finalizer(Quiet { upgraded }, FINALIZER)
            .name(CONTROLLER)
            .owns::<ConfigMap>()
            .concurrency(8),
    )?;
    Ok(manager)
}

/// The name of generator `i`.
fn generator(i: usize) -> String {
    format!("gen-{i:04}")
}

/// Creates generators `0..n` in `ns`, generator `i` holding content `i`; those in `labelled`
/// get the label `half=a`.
async fn create_generators(
    cp: &ControlPlane,
    ns: &str,
    n: usize,
    labelled: impl Fn(usize) -> bool,
) -> anyhow::Result<()> {
    let api: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), ns);
    futures::stream::iter(0..n)
        .map(|i| {
            let mut cmg = ConfigMapGenerator::new(
                &generator(i),
                ConfigMapGeneratorSpec {
                    content: i.to_string(),
                },
            );
            if labelled(i) {
                cmg.metadata.labels = Some(BTreeMap::from([("half".to_owned(), "a".to_owned())]));
            }
            let api = api.clone();
            async move { api.create(&PostParams::default(), &cmg).await.map(drop) }
        })
        .buffer_unordered(16)
        .try_collect::<()>()
        .await?;
    Ok(())
}

/// Runs the operator (version `upgraded` or not) until each of the `n` generators' ConfigMaps
/// holds its content (with the `format` key when `upgraded`), every generator is `Ready`, and
/// the controller has reconciled at least `n` times with nothing left in its queue; then stops
/// it and waits until it has stopped.
async fn converge(cp: &ControlPlane, ns: &str, n: usize, upgraded: bool) -> anyhow::Result<()> {
    let manager = manager(cp, ns, upgraded)?;
    let registry = manager.registry().clone();
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), ns);
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), ns);
    let what = format!("{n} generators in {ns} Ready with their ConfigMaps (upgraded: {upgraded})");
    wait_for(CONVERGE, &what, || async {
        let cms = config_maps.list(&ListParams::default()).await.ok()?;
        let right = |cm: &ConfigMap| {
            let data = cm.data.as_ref();
            let name = cm.name_any();
            let index: usize = name
                .strip_prefix("gen-")?
                .strip_suffix("-generated")?
                .parse()
                .ok()?;
            let shaped = data?.contains_key("format") == upgraded;
            (data?.get("content")? == &index.to_string()).then_some(shaped)
        };
        let held = cms
            .items
            .iter()
            .filter(|cm| right(cm) == Some(true))
            .count();
        let ready = (generators
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .iter())
        .filter(|g| {
            g.status
                .as_ref()
                .and_then(|s| s.conditions.find("Ready"))
                .is_some_and(|c| {
                    c.status == "True" && c.observed_generation == g.metadata.generation
                })
        })
        .count();
        let reconciles = metric_sum(
            &registry,
            "controller_runtime_reconcile_total",
            ("controller", CONTROLLER),
            |m| m.get_counter().get_value(),
        );
        let depth = metric_sum(&registry, "workqueue_depth", ("name", CONTROLLER), |m| {
            m.get_gauge().get_value()
        });
        let busy = metric_sum(
            &registry,
            "controller_runtime_active_workers",
            ("controller", CONTROLLER),
            |m| m.get_gauge().get_value(),
        );
        #[allow(clippy::cast_precision_loss, reason = "n is small")]
        let all = n as f64;
        (held == n && ready == n && reconciles >= all && depth == 0.0 && busy == 0.0).then_some(())
    })
    .await?;
    token.cancel();
    run.await??;
    Ok(())
}

/// Every ConfigMap's and generator's resourceVersion in `ns`, by kind and name.
async fn versions(cp: &ControlPlane, ns: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let mut versions = BTreeMap::new();
    let cms: Api<ConfigMap> = Api::namespaced(cp.client(), ns);
    for cm in cms.list(&ListParams::default()).await?.items {
        versions.insert(
            format!("ConfigMap {}", cm.name_any()),
            cm.resource_version().unwrap_or_default(),
        );
    }
    let gens: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), ns);
    for g in gens.list(&ListParams::default()).await?.items {
        versions.insert(
            format!("ConfigMapGenerator {}", g.name_any()),
            g.resource_version().unwrap_or_default(),
        );
    }
    Ok(versions)
}
