//! Pausing one object and requesting a reconcile, by annotation, on the real control plane.
//!
//! The example `ConfigMapGenerator` reconciler (owned ConfigMap, `Ready` condition, finalizer,
//! `generation_changed` predicate) runs wrapped in a counter, with one worker: a key queued
//! before another is finished before the other starts, so once a witness generator queued after
//! a change is reconciled, the change's key has been dealt with.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use kubeward::controller::{Action, Cleanup, Context, Controller, Predicate, Reconciler};
use kubeward::manager::Manager;
use kubeward::testing::{ControlPlane, install_definition, wait_for};
use kubeward_examples::by_hand::FINALIZER;
use kubeward_examples::configmap_generator::{
    ConfigMapGenerator, ConfigMapGeneratorSpec, Generator,
};
use kubeward_tests::metric_sum;
use parking_lot::Mutex;
use prometheus::Registry;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::fixtures::watching;

mod deletion;
mod paused;
mod requested;

/// How long the controller may take to react to a change.
const REACT: Duration = Duration::from_secs(30);
/// The field manager of the test's own writes, which the `Paused` condition names.
const ADMIN: &str = "pause-test-admin";
/// The generator whose reconcile shows the queue got past what was queued before it.
const WITNESS: &str = "witness";

/// One reconcile the counter saw.
#[derive(Clone, Debug)]
struct Seen {
    name: String,
    generation: Option<i64>,
    requested: Option<String>,
}

/// The example reconciler, counting its reconciles and cleanups.
#[derive(Clone, Default)]
struct Counted {
    reconciles: Arc<Mutex<Vec<Seen>>>,
    cleanups: Arc<Mutex<Vec<String>>>,
}

impl Reconciler<ConfigMapGenerator> for Counted {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        cmg: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<Action, kubeward::Error> {
        self.reconciles.lock().push(Seen {
            name: cmg.name_any(),
            generation: cmg.metadata.generation,
            requested: cmg
                .annotations()
                .get(kubeward::controller::RECONCILE_REQUESTED_ANNOTATION)
                .cloned(),
        });
        Generator.reconcile(cmg, ctx).await
    }
}

impl Cleanup<ConfigMapGenerator> for Counted {
    async fn cleanup(
        &self,
        cmg: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<(), kubeward::Error> {
        self.cleanups.lock().push(cmg.name_any());
        Generator.cleanup(cmg, ctx).await
    }
}

/// A manager running the counted generator controller `name` over namespace `ns`.
struct Running {
    name: &'static str,
    counted: Counted,
    registry: Registry,
    generators: Api<ConfigMapGenerator>,
    config_maps: Api<ConfigMap>,
    token: CancellationToken,
    run: JoinHandle<kubeward::manager::Result<()>>,
}

impl Running {
    /// Installs the CRD, makes a namespace, starts the controller and creates the witness.
    async fn start(cp: &ControlPlane, name: &'static str) -> anyhow::Result<Self> {
        install_definition::<ConfigMapGenerator>(cp.client()).await?;
        let ns = cp.create_namespace(name).await?;
        let counted = Counted::default();
        let manager = Manager::new(cp.client(), watching(ns.clone()))?;
        manager.add(
            Controller::with_finalizer(counted.clone(), FINALIZER)
                .name(name)
                .owns::<ConfigMap>()
                .predicate(Predicate::generation_changed())
                .concurrency(1),
        )?;
        let registry = manager.registry().clone();
        let token = manager.shutdown_token();
        let run = tokio::spawn(manager.run());
        let running = Self {
            name,
            counted,
            registry,
            generators: Api::namespaced(cp.client(), &ns),
            config_maps: Api::namespaced(cp.client(), &ns),
            token,
            run,
        };
        running.create(WITNESS, "0").await?;
        running.generated(WITNESS, "0").await?;
        Ok(running)
    }

    /// Creates generator `name` asking for `content`.
    async fn create(&self, name: &str, content: &str) -> anyhow::Result<ConfigMapGenerator> {
        let cmg = ConfigMapGenerator::new(
            name,
            ConfigMapGeneratorSpec {
                content: content.to_owned(),
            },
        );
        Ok(self.generators.create(&PostParams::default(), &cmg).await?)
    }

    /// Merge-patches generator `name` as [`ADMIN`].
    async fn patch(
        &self,
        name: &str,
        patch: serde_json::Value,
    ) -> anyhow::Result<ConfigMapGenerator> {
        let params = PatchParams {
            field_manager: Some(ADMIN.to_owned()),
            ..PatchParams::default()
        };
        Ok(self
            .generators
            .patch(name, &params, &Patch::Merge(&patch))
            .await?)
    }

    /// Sets (or with `None` removes) annotation `key` of generator `name`.
    async fn annotate(&self, name: &str, key: &str, value: Option<&str>) -> anyhow::Result<()> {
        self.patch(
            name,
            serde_json::json!({ "metadata": { "annotations": { key: value } } }),
        )
        .await?;
        Ok(())
    }

    /// Waits until generator `name`'s ConfigMap holds `content`.
    async fn generated(&self, name: &str, content: &str) -> anyhow::Result<ConfigMap> {
        let what = format!("ConfigMap {name}-generated to hold {content:?}");
        Ok(wait_for(REACT, &what, || async {
            let cm = self
                .config_maps
                .get(&format!("{name}-generated"))
                .await
                .ok()?;
            (cm.data.as_ref()?.get("content").map(String::as_str) == Some(content)).then_some(cm)
        })
        .await?)
    }

    /// Waits until generator `name`'s `Paused` condition has `status` and `reason`.
    async fn paused_condition(
        &self,
        name: &str,
        status: &str,
        reason: &str,
    ) -> anyhow::Result<kubeward::reconcile::Condition> {
        let what = format!("generator {name} to show Paused={status} ({reason})");
        Ok(wait_for(REACT, &what, || async {
            let cmg = self.generators.get(name).await.ok()?;
            let paused = cmg.status?.conditions.find("Paused")?.clone();
            (paused.status == status && paused.reason == reason).then_some(paused)
        })
        .await?)
    }

    /// How many reconciles of `name` the counter saw.
    fn reconciles(&self, name: &str) -> usize {
        self.counted
            .reconciles
            .lock()
            .iter()
            .filter(|s| s.name == name)
            .count()
    }

    /// The reconciles of `name` the counter saw.
    fn seen(&self, name: &str) -> Vec<Seen> {
        let seen = self.counted.reconciles.lock();
        seen.iter().filter(|s| s.name == name).cloned().collect()
    }

    /// `workqueue_adds_total` of the controller's queue.
    fn adds(&self) -> f64 {
        metric_sum(
            &self.registry,
            "workqueue_adds_total",
            ("name", self.name),
            |m| m.get_counter().get_value(),
        )
    }

    /// Waits until the queue took a key after `before` adds: the change's watch event got
    /// through the controller's handlers.
    async fn queued_after(&self, before: f64) -> anyhow::Result<()> {
        let what = format!("a key queued in {} after {before} adds", self.name);
        Ok(wait_for(REACT, &what, || async {
            (self.adds() > before).then_some(())
        })
        .await?)
    }

    /// Changes the witness's spec and waits for its reconcile: with one worker, whatever was
    /// queued before has been dealt with.
    async fn past_the_witness(&self) -> anyhow::Result<()> {
        let content = format!("{}", self.reconciles(WITNESS) + 1);
        self.patch(
            WITNESS,
            serde_json::json!({ "spec": { "content": content } }),
        )
        .await?;
        self.generated(WITNESS, &content).await?;
        Ok(())
    }

    /// `kubeward_paused_objects` of the controller.
    fn paused_gauge(&self) -> f64 {
        metric_sum(
            &self.registry,
            "kubeward_paused_objects",
            ("controller", self.name),
            |m| m.get_gauge().get_value(),
        )
    }

    /// Waits until `kubeward_paused_objects` reads `n`.
    async fn paused_objects(&self, n: f64) -> anyhow::Result<()> {
        let what = format!(
            "kubeward_paused_objects{{controller={:?}}} to read {n}",
            self.name
        );
        Ok(wait_for(REACT, &what, || async {
            ((self.paused_gauge() - n).abs() < f64::EPSILON).then_some(())
        })
        .await?)
    }

    async fn stop(self) -> anyhow::Result<()> {
        self.token.cancel();
        tokio::time::timeout(REACT, self.run)
            .await??
            .map_err(Into::into)
    }
}
