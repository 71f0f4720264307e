//! The rule on `configmapgenerators/finalizers`, where the apiserver enforces owner-reference
//! permissions (its `OwnerReferencesPermissionEnforcement` admission plugin, which some
//! distributions and managed clusters turn on): the owned ConfigMap's owner reference sets
//! `blockOwnerDeletion`, which then needs `update` on the owner's `finalizers` subresource.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, ResourceExt as _};
use kubeward::testing::{ControlPlane, install_definition, skip_on_existing_cluster, wait_for};
use kubeward_examples::by_hand::generated_name;
use kubeward_examples::configmap_generator::ConfigMapGenerator;

use super::{REACT, all_rules_but, generator, run_as};

const ENFORCE: &str = "--enable-admission-plugins=OwnerReferencesPermissionEnforcement";

#[tokio::test]
async fn where_owner_references_are_enforced_the_finalizers_rule_is_needed_and_the_rules_suffice()
-> anyhow::Result<()> {
    if skip_on_existing_cluster("a private control plane that enforces owner-reference permissions")
    {
        return Ok(());
    }
    let cp = ControlPlane::start_with_apiserver_flags(&[ENFORCE]).await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    admission_knows_the_kind(&cp).await?;
    let (short, short_manager) = run_as(
        &cp,
        "rbac-no-finalizers",
        all_rules_but("configmapgenerators/finalizers")?,
    )
    .await?;
    let (full, full_manager) =
        run_as(&cp, "rbac-enforced", ConfigMapGenerator::rbac_rules()).await?;
    let runs = [short_manager, full_manager].map(|manager| {
        let token = manager.shutdown_token();
        (token, tokio::spawn(manager.run()))
    });

    let refused: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &short);
    let created = refused
        .create(&PostParams::default(), &generator("refused"))
        .await?;
    let allowed: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &full);
    allowed
        .create(&PostParams::default(), &generator("allowed"))
        .await?;

    // Without the rule the apply is refused, and the error on the object names the rule (the
    // apiserver's own message does not: "... you can't set finalizers on: , <nil>").
    let expected = format!(
        "the controller may not update configmapgenerators/finalizers in API group \
         \"demo.kubeward.dev\" in namespace \"{short}\"; its RBAC role needs verb \"update\" on \
         resource \"configmapgenerators/finalizers\" of group \"demo.kubeward.dev\""
    );
    let message = ready_condition(&refused, "refused", "False").await?;
    assert!(
        message.contains(&expected),
        "the Ready=False message must name the missing permission:\n{message}"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), &short);
    assert!(
        config_maps
            .get_opt(&generated_name(&created))
            .await?
            .is_none(),
        "the apiserver refused the ConfigMap, yet it exists"
    );

    // With every generated rule, the same operator works on this cluster.
    ready_condition(&allowed, "allowed", "True").await?;
    let generated = Api::<ConfigMap>::namespaced(cp.client(), &full)
        .get("allowed-generated")
        .await?;
    let blocking = generated
        .owner_references()
        .iter()
        .any(|r| r.kind == "ConfigMapGenerator" && r.block_owner_deletion == Some(true));
    assert!(
        blocking,
        "the generated ConfigMap's owner reference must block its owner's deletion: {generated:?}"
    );

    for (token, run) in runs {
        token.cancel();
        tokio::time::timeout(REACT, run).await???;
    }
    Ok(())
}

/// Waits until the Ready condition of generator `name` has `status`; returns its message.
async fn ready_condition(
    generators: &Api<ConfigMapGenerator>,
    name: &str,
    status: &str,
) -> anyhow::Result<String> {
    let what = format!("generator {name} Ready={status}");
    let found = wait_for(REACT, &what, || async {
        let conditions = generators.get(name).await.ok()?.status?.conditions;
        conditions
            .iter()
            .find(|c| c.type_ == "Ready" && c.status == status)
            .map(|c| c.message.clone())
    })
    .await;
    match found {
        Ok(message) => Ok(message),
        Err(error) => {
            let now = generators.get(name).await?;
            Err(anyhow::Error::from(error).context(format!("generator {name} is now {now:?}")))
        }
    }
}

/// Waits until the admission plugin can map the `ConfigMapGenerator` kind to its resource, which it
/// learns from discovery (refreshed every 30 s in kube-apiserver): until then it refuses any
/// owner reference to one with `blockOwnerDeletion`, whoever sets it. Probed as admin, dry run.
async fn admission_knows_the_kind(cp: &ControlPlane) -> anyhow::Result<()> {
    let ns = cp.create_namespace("rbac-probe").await?;
    let probe = ConfigMap {
        metadata: ObjectMeta {
            name: Some("probe".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "demo.kubeward.dev/v1".into(),
                kind: "ConfigMapGenerator".into(),
                name: "probe".into(),
                uid: "00000000-0000-0000-0000-000000000000".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let last = parking_lot::Mutex::new(None);
    let mapped = wait_for(
        REACT,
        "the apiserver's admission to map ConfigMapGenerator to its resource",
        || async {
            let answer = config_maps.create(&dry_run, &probe).await;
            answer.map_err(|e| *last.lock() = Some(e)).ok().map(drop)
        },
    )
    .await;
    mapped.map_err(|e| {
        anyhow::Error::from(e).context(format!("the last refusal: {:?}", last.lock().take()))
    })
}
