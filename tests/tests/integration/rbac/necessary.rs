//! Each generated rule is necessary: without it the operator fails, naming what it lacks.
//!
//! (The rule on `configmapgenerators/finalizers` is needed only where the apiserver enforces
//! owner-reference permissions: see `owner_references`.)

use kube::Api;
use kube::api::PostParams;
use kubeward::testing::{ControlPlane, wait_for};
use kubeward_examples::configmap_generator::ConfigMapGenerator;

use super::{REACT, all_rules_but, generator, reconcile_errors, run_as};
use crate::fixtures::Log;

#[tokio::test(flavor = "current_thread")]
async fn without_the_rule_on_its_own_kind_the_operator_cannot_list_it_and_says_so()
-> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("warn");
    let cp = ControlPlane::shared().await?;
    let rules = all_rules_but("configmapgenerators")?;
    let (ns, manager) = run_as(cp, "rbac-no-kind", rules).await?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    generators
        .create(&PostParams::default(), &generator("unseen"))
        .await?;

    log.line_with(
        REACT,
        &[
            "list failed; retrying",
            &format!(
                "cannot list resource \"configmapgenerators\" in API group \"demo.kubeward.dev\" \
             in the namespace \"{ns}\""
            ),
        ],
    )
    .await?;
    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn without_the_status_rule_the_reconcile_fails_naming_patch_on_the_status()
-> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("warn");
    let cp = ControlPlane::shared().await?;
    let rules = all_rules_but("configmapgenerators/status")?;
    let (ns, manager) = run_as(cp, "rbac-no-status", rules).await?;
    let registry = manager.registry().clone();
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    generators
        .create(&PostParams::default(), &generator("short"))
        .await?;

    log.line_with(
        REACT,
        &[
            "reconcile failed",
            &format!(
                "the controller may not patch configmapgenerators/status in API group \
             \"demo.kubeward.dev\" in namespace \"{ns}\""
            ),
        ],
    )
    .await?;
    wait_for(REACT, "the failed reconcile counted", || async {
        (reconcile_errors(&registry) >= 1.0).then_some(())
    })
    .await?;
    let status = generators.get("short").await?.status;
    assert!(
        status.is_none(),
        "the status must stay unwritten without its rule: {status:?}"
    );
    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn without_the_configmaps_rule_the_operator_cannot_list_what_it_owns_and_says_so()
-> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("warn");
    let cp = ControlPlane::shared().await?;
    let rules = all_rules_but("configmaps")?;
    let (ns, manager) = run_as(cp, "rbac-no-configmaps", rules).await?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    generators
        .create(&PostParams::default(), &generator("owner"))
        .await?;

    log.line_with(
        REACT,
        &[
            "list failed; retrying",
            &format!(
                "cannot list resource \"configmaps\" in API group \"\" in the namespace \"{ns}\""
            ),
        ],
    )
    .await?;
    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn without_the_events_rule_the_work_is_done_but_its_events_are_refused_and_logged()
-> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("warn");
    let cp = ControlPlane::shared().await?;
    let rules = all_rules_but("events")?;
    let (ns, manager) = run_as(cp, "rbac-no-events", rules).await?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    generators
        .create(&PostParams::default(), &generator("quiet"))
        .await?;

    // Events never block the work: the reconcile succeeds...
    wait_for(REACT, "the generator's Ready condition", || async {
        let status = generators.get("quiet").await.ok()?.status?;
        status.conditions.is_true("Ready").then_some(())
    })
    .await?;
    // ... and its Generated Event is refused, which the log says with the missing permission.
    log.line_with(
        REACT,
        &[
            "could not record an Event",
            "reason=Generated",
            &format!(
                "cannot create resource \"events\" in API group \"events.k8s.io\" in the namespace \
             \"{ns}\""
            ),
        ],
    )
    .await?;
    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    Ok(())
}
