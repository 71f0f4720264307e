//! One reconcile per change: the example operator's own writes (finalizer, status, owned
//! ConfigMap) do not reconcile its generators a second time.

use crate::fixtures::watching;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::controller::{Action, Cleanup, Context, Controller, Predicate, Reconciler};
use kubeward::manager::Manager;
use kubeward::testing::{ControlPlane, install_definition, wait_for};
use kubeward_examples::by_hand::{FINALIZER, generated_name};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, Generator};
use parking_lot::Mutex;

use super::{generator, start, stop};

/// The example's reconciler, recording the resourceVersion of each generator it reconciles.
#[derive(Clone, Default)]
struct Counted(Arc<Mutex<HashMap<String, Vec<String>>>>);

impl Counted {
    fn of(&self, name: &str) -> usize {
        self.0.lock().get(name).map_or(0, Vec::len)
    }

    /// The resourceVersions `name` was reconciled at, for failure messages.
    fn versions(&self, name: &str) -> Vec<String> {
        self.0.lock().get(name).cloned().unwrap_or_default()
    }
}

impl Reconciler<ConfigMapGenerator> for Counted {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        obj: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<Action, kubeward::Error> {
        let version = obj.resource_version().unwrap_or_default();
        self.0
            .lock()
            .entry(obj.name_any())
            .or_default()
            .push(version);
        Generator.reconcile(obj, ctx).await
    }
}

impl Cleanup<ConfigMapGenerator> for Counted {
    async fn cleanup(
        &self,
        obj: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<(), kubeward::Error> {
        Generator.cleanup(obj, ctx).await
    }
}

/// Waits until `name` is Ready for its generation `generation`.
async fn ready_at(
    generators: &Api<ConfigMapGenerator>,
    name: &str,
    generation: i64,
) -> anyhow::Result<()> {
    let what = format!("{name} Ready for generation {generation}");
    Ok(wait_for(Duration::from_secs(30), &what, || async {
        let g = generators.get(name).await.ok()?;
        let status = g.status?;
        (status.observed_generation == Some(generation) && status.conditions.is_true("Ready"))
            .then_some(())
    })
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_and_an_updated_generator_are_reconciled_once_each() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("per-change").await?;
    let counted = Counted::default();
    // The example's controller, as its derive builds it, with a counting reconciler; one
    // worker, so keys are reconciled in the order they were queued.
    let controller = Controller::with_finalizer(counted.clone(), FINALIZER)
        .name("configmap-generator")
        .owns::<ConfigMap>()
        .predicate(Predicate::generation_changed());
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(controller)?;
    let (token, run) = start(manager);

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let created = generators
        .create(&PostParams::default(), &generator("subject", "v1"))
        .await?;
    ready_at(&generators, "subject", 1).await?;
    let change = serde_json::json!({ "spec": { "content": "v2" } });
    generators
        .patch("subject", &PatchParams::default(), &Patch::Merge(&change))
        .await?;
    ready_at(&generators, "subject", 2).await?;

    // A marker whose ConfigMap is edited by hand after all of the above: the ConfigMaps' watch
    // delivers that edit after the subject's own ConfigMap writes, and the generators' watch
    // delivered the subject's finalizer and status writes before the marker's creation. With
    // one worker, anything those writes queued for the subject runs before the marker's repair.
    generators
        .create(&PostParams::default(), &generator("marker", "m"))
        .await?;
    ready_at(&generators, "marker", 1).await?;
    let edit = serde_json::json!({ "data": { "content": "edited by hand" } });
    let marker_cm = "marker-generated";
    configmaps
        .patch(marker_cm, &PatchParams::default(), &Patch::Merge(&edit))
        .await?;
    wait_for(
        Duration::from_secs(30),
        "the marker's ConfigMap repaired (its second reconcile)",
        || async { (counted.of("marker") >= 2).then_some(()) },
    )
    .await?;
    // The marker only orders the watches; its own count is not what this test is about. (In 1
    // of about 7 runs on a shared, busy cluster it was reconciled a third time; see the issue
    // note.)

    assert_eq!(
        counted.of("subject"),
        2,
        "one reconcile for the creation and one for the spec update of {}; the finalizer, status \
         and ConfigMap writes of those reconciles must not reconcile it again (reconciled at \
         resourceVersions {:?})",
        generated_name(&created),
        counted.versions("subject")
    );
    stop(token, run).await
}

/// The example's reconciler, except that a generator whose content is `fail` fails terminally:
/// recording, as [`Counted`] does, each resourceVersion it reconciles.
#[derive(Clone, Default)]
struct Judged(Counted);

impl Reconciler<ConfigMapGenerator> for Judged {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        obj: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<Action, kubeward::Error> {
        if obj.spec.content == "fail" {
            let version = obj.resource_version().unwrap_or_default();
            (self.0)
                .0
                .lock()
                .entry(obj.name_any())
                .or_default()
                .push(version);
            return Err("content `fail` cannot be generated".into());
        }
        self.0.reconcile(obj, ctx).await
    }

    fn error_policy(
        &self,
        _: &ConfigMapGenerator,
        _: &kubeward::controller::Error<kubeward::Error>,
        _: &Context<ConfigMapGenerator>,
    ) -> kubeward::controller::ErrorAction {
        kubeward::controller::ErrorAction::Terminal
    }
}

impl Cleanup<ConfigMapGenerator> for Judged {
    async fn cleanup(
        &self,
        obj: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<(), kubeward::Error> {
        Generator.cleanup(obj, ctx).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_predicate_each_spec_change_is_one_reconcile_whether_it_writes_status_or_fails()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("per-change-all").await?;
    let judged = Judged::default();
    // No predicate: every update of a generator reaches the controller, its own writes too (the
    // finalizer, the status the reconciler writes, the failure report on the status); one
    // worker, so keys are reconciled in the order they were queued.
    let controller = Controller::with_finalizer(judged.clone(), FINALIZER)
        .name("configmap-generator")
        .owns::<ConfigMap>();
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(controller)?;
    let (token, run) = start(manager);

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    generators
        .create(&PostParams::default(), &generator("subject", "v1"))
        .await?;
    ready_at(&generators, "subject", 1).await?;
    let set = |content: &str| serde_json::json!({ "spec": { "content": content } });
    generators
        .patch(
            "subject",
            &PatchParams::default(),
            &Patch::Merge(&set("fail")),
        )
        .await?;
    wait_for(
        Duration::from_secs(30),
        "subject Ready=False for generation 2",
        || async {
            let status = generators.get("subject").await.ok()?.status?;
            let ready = status.conditions.find("Ready")?;
            (ready.status == "False" && ready.observed_generation == Some(2)).then_some(())
        },
    )
    .await?;
    let failed = generators.get("subject").await?.status.unwrap_or_default();
    assert_eq!(
        failed.observed_generation,
        Some(2),
        "the failure report moves the status' observedGeneration with its condition's, so the two \
         agree that generation 2 was seen and failed"
    );
    generators
        .patch(
            "subject",
            &PatchParams::default(),
            &Patch::Merge(&set("v3")),
        )
        .await?;
    ready_at(&generators, "subject", 3).await?;

    // As above: the marker's hand-edited ConfigMap is repaired after anything the subject's
    // writes could have queued has run.
    let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    generators
        .create(&PostParams::default(), &generator("marker", "m"))
        .await?;
    ready_at(&generators, "marker", 1).await?;
    let before = judged.0.of("marker");
    let edit = serde_json::json!({ "data": { "content": "edited by hand" } });
    configmaps
        .patch(
            "marker-generated",
            &PatchParams::default(),
            &Patch::Merge(&edit),
        )
        .await?;
    wait_for(
        Duration::from_secs(30),
        "the marker's ConfigMap repaired (another reconcile of it)",
        || async { (judged.0.of("marker") > before).then_some(()) },
    )
    .await?;

    assert_eq!(
        judged.0.of("subject"),
        3,
        "one reconcile for the creation, one for the failing spec and one for the fixed spec; \
         the finalizer and status writes and the failure report must not reconcile it again \
         (reconciled at resourceVersions {:?})",
        judged.0.versions("subject")
    );
    stop(token, run).await
}
