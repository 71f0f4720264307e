//! With the webhook process down, the API server follows the declared failurePolicy.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use kubeward::testing::ControlPlane;
use kubeward::webhook::{self, FailurePolicy};

use super::{
    config_map, manager, refusal, remove_configurations, validator_in, wait_until_validated,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_webhook_down_failure_policy_fail_refuses() -> anyhow::Result<()> {
    let refused = create_with_the_webhook_down(FailurePolicy::Fail).await?;
    let message = refused.expect("Fail refuses when the webhook cannot be called");
    assert!(message.contains("failed calling webhook"), "{message}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_webhook_down_failure_policy_ignore_admits() -> anyhow::Result<()> {
    let refused = create_with_the_webhook_down(FailurePolicy::Ignore).await?;
    assert_eq!(
        refused, None,
        "Ignore admits when the webhook cannot be called"
    );
    Ok(())
}

/// Runs a manager until the API server calls its validator, stops it (its configuration stays),
/// then creates a ConfigMap the validator would have refused: the API server's refusal, if any.
async fn create_with_the_webhook_down(policy: FailurePolicy) -> anyhow::Result<Option<String>> {
    let cp = ControlPlane::shared().await?;
    let ns = cp
        .create_namespace(&format!("webhook-{policy:?}").to_lowercase())
        .await?;
    let (manager, _) = manager(
        cp.client(),
        &ns,
        webhook::Config::default().self_signed(true),
    )
    .await?;
    manager.add_webhook(validator_in(&ns).failure_policy(policy))?;
    let stop = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    wait_until_validated(&api).await?;

    stop.cancel();
    run.await??;
    let refused = refusal(
        &api,
        &config_map("while-down", &"z".repeat(64)),
        &PostParams::default(),
    )
    .await;
    remove_configurations(&cp.client(), &ns).await;
    Ok(refused)
}
