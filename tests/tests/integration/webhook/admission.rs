//! The API server refuses what the validator refuses, with its message, and stores what the
//! defaulter set.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use kubeward::testing::ControlPlane;
use kubeward::webhook::{self, Admission};

use super::{
    DEFAULTED, Labeller, MAX_VALUE, config_map, manager, only_in, refusal, remove_configurations,
    validator_in, wait_until_validated,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_refuses_with_the_validators_message_and_stores_the_defaulters_label()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("webhook-admission").await?;
    let (manager, _) = manager(
        cp.client(),
        &ns,
        webhook::Config::default().self_signed(true),
    )
    .await?;
    manager.add_webhook(validator_in(&ns))?;
    manager.add_webhook(
        Admission::defaulter::<ConfigMap>(Labeller).namespace_selector(only_in(&ns)),
    )?;
    let stop = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);

    let message = wait_until_validated(&api).await?;
    assert!(
        message.contains(&format!(
            "data.key is {} bytes; at most {MAX_VALUE} are allowed",
            MAX_VALUE + 1
        )),
        "{message}"
    );
    assert!(message.contains("denied the request"), "{message}");

    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let refused = refusal(
        &api,
        &config_map("dry", &"y".repeat(MAX_VALUE + 5)),
        &dry_run,
    )
    .await;
    assert!(
        refused.is_some_and(|m| m.contains("at most 16")),
        "a dry run is validated too"
    );

    let created = api
        .create(&PostParams::default(), &config_map("fine", "short"))
        .await?;
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get(DEFAULTED).map(String::as_str), Some("kubeward"));
    let stored = api.get("fine").await?;
    assert_eq!(
        stored
            .metadata
            .labels
            .unwrap_or_default()
            .get(DEFAULTED)
            .map(String::as_str),
        Some("kubeward"),
        "the defaulted label is stored"
    );
    assert_eq!(
        stored
            .data
            .unwrap_or_default()
            .get("key")
            .map(String::as_str),
        Some("short")
    );

    let mut own = config_map("own-label", "short");
    own.metadata.labels = Some([(DEFAULTED.to_owned(), "me".to_owned())].into());
    let kept = api.create(&PostParams::default(), &own).await?;
    assert_eq!(
        kept.metadata
            .labels
            .unwrap_or_default()
            .get(DEFAULTED)
            .map(String::as_str),
        Some("me")
    );

    stop.cancel();
    run.await??;
    remove_configurations(&cp.client(), &ns).await;
    Ok(())
}
