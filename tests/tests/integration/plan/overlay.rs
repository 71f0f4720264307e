//! A chain within one reconcile (create an owned ConfigMap, read it back, name its uid in the
//! status) plans as a whole: the read is answered from the plan's overlay.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Resource as _, ResourceExt as _};
use kubeward::controller::{Action, Context, Controller, Reconciler};
use kubeward::manager::Manager;
use kubeward::plan::{Action as Planned, Options};
use kubeward::testing::{ControlPlane, install_definition};
use kubeward_examples::configmap_generator::ConfigMapGenerator;

use super::create_generators;
use crate::fixtures::watching;

/// Creates the ConfigMap `NAME-made` with a plain POST when a GET does not find it, reads it
/// back with a GET, and reports its uid on the `Ready` condition.
struct Chain;

impl Reconciler<ConfigMapGenerator> for Chain {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        cmg: Arc<ConfigMapGenerator>,
        ctx: &Context<ConfigMapGenerator>,
    ) -> Result<Action, kubeward::Error> {
        let api: Api<ConfigMap> =
            Api::namespaced(ctx.client(), &cmg.namespace().unwrap_or_default());
        let name = format!("{}-made", cmg.name_any());
        let missing = api.get_opt(&name).await?.is_none();
        if missing {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    owner_references: cmg.controller_owner_ref(&()).map(|r| vec![r]),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            api.create(&PostParams::default(), &cm).await?;
        }
        let made = api.get(&name).await?;
        let uid = made.uid().unwrap_or_default();
        ctx.succeed(&*cmg, "Made", format!("ConfigMap {name} has uid {uid}"))
            .await?;
        Ok(Action::await_change())
    }
}

#[tokio::test]
async fn a_create_then_a_read_of_it_then_a_status_naming_it_plans_as_one_chain()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("plan-overlay").await?;
    create_generators(cp, &ns, 1, |_| false).await?;

    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(Controller::new(Chain).name("chain"))?;
    let plan = manager.plan(Options::default()).await?;
    assert!(
        plan.failures.is_empty() && plan.refused.is_empty(),
        "{plan}"
    );
    let made = format!("{ns}/gen-0000-made");
    let created = plan.changes.iter().find(|c| c.object() == made);
    assert_eq!(created.map(|c| c.action), Some(Planned::Create), "{plan}");
    let status = plan
        .changes
        .iter()
        .find(|c| c.kind == "ConfigMapGenerator")
        .ok_or_else(|| anyhow::anyhow!("no status change planned:\n{plan}"))?;
    let message = status
        .fields
        .iter()
        .find_map(|f| f.after.as_ref().filter(|_| f.path.starts_with("status")))
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(message.contains("has uid "), "{plan}");
    let cms: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    assert!(
        cms.get_opt("gen-0000-made").await?.is_none(),
        "the plan created the ConfigMap"
    );
    Ok(())
}
