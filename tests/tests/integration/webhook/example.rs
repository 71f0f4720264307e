//! The example operator's webhooks on its own CRD: an oversized `content` is refused with the
//! validator's message; a generator without a team is stored with the defaulted label.

use std::time::Duration;

use kube::Api;
use kube::api::PostParams;
use kubeward::testing::{ControlPlane, install_definition, wait_for};
use kubeward::webhook::{self, Admission};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};
use kubeward_examples::webhooks::{ContentLimit, DEFAULT_TEAM, MAX_CONTENT, TEAM_LABEL, TeamLabel};

use super::{manager, only_in, remove_configurations};

fn generator(name: &str, content: String) -> ConfigMapGenerator {
    ConfigMapGenerator::new(name, ConfigMapGeneratorSpec { content })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_operator_refuses_oversized_content_and_defaults_the_team() -> anyhow::Result<()>
{
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("webhook-example").await?;
    let (manager, _) = manager(
        cp.client(),
        &ns,
        webhook::Config::default().self_signed(true),
    )
    .await?;
    manager.add_webhook(
        Admission::validator::<ConfigMapGenerator>(ContentLimit).namespace_selector(only_in(&ns)),
    )?;
    manager.add_webhook(
        Admission::defaulter::<ConfigMapGenerator>(TeamLabel).namespace_selector(only_in(&ns)),
    )?;
    let stop = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let api: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);

    let mut attempt = 0;
    let message = wait_for(
        Duration::from_secs(30),
        "the API server to call the example's validator",
        || {
            attempt += 1;
            let too_big = generator(&format!("big-{attempt}"), "x".repeat(MAX_CONTENT + 1));
            let api = api.clone();
            async move {
                match api.create(&PostParams::default(), &too_big).await {
                    Ok(_) => None,
                    Err(e) => Some(e.to_string()),
                }
            }
        },
    )
    .await?;
    assert!(
        message.contains(&format!(
            "at most {MAX_CONTENT} fit in the generated ConfigMap"
        )),
        "{message}"
    );

    let created = api
        .create(&PostParams::default(), &generator("small", "hello".into()))
        .await?;
    let stored = api.get("small").await?;
    for object in [&created, &stored] {
        let labels = object.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get(TEAM_LABEL).map(String::as_str),
            Some(DEFAULT_TEAM)
        );
    }
    assert_eq!(stored.spec.content, "hello");

    stop.cancel();
    run.await??;
    remove_configurations(&cp.client(), &ns).await;
    Ok(())
}
