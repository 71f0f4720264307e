//! A watched namespace that does not exist yet: the manager starts with a warning naming it,
//! and reconciles its objects once it is created.

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::controller::Controller;
use kubeward::informer::CacheScope;
use kubeward::manager::{Config, Manager};
use kubeward::testing::{ControlPlane, wait_for};

use super::{REACT, Seen, create};
use crate::fixtures::Log;

#[tokio::test(flavor = "current_thread")]
async fn a_watched_namespace_that_does_not_exist_is_warned_of_and_cached_once_created()
-> anyhow::Result<()> {
    let log = Log::default();
    let _capture = log.capture("warn");
    let cp = ControlPlane::shared().await?;
    let client = cp.client();
    let present = cp.create_namespace("scope-present").await?;
    // Unique, as the present one is, and not made yet.
    let later = format!("{present}-later");
    let seen = Seen::default();
    let scope = CacheScope::default().namespaces([present.clone(), later.clone()]);
    let manager = Manager::new(client.clone(), Config::default().cache(scope))?;
    manager.add(Controller::new(seen.clone()).name("scope-missing"))?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let warning = format!("the watched namespace \"{later}\" does not exist");
    wait_for(REACT, "the warning of the missing namespace", || async {
        log.text().contains(&warning).then_some(())
    })
    .await
    .map_err(|e| anyhow::Error::from(e).context(format!("the log:\n{}", log.text())))?;
    create(&client, &present, "here", &[]).await?;
    seen.reconciled(&format!("{present}/here")).await?;

    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(later.clone()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    create(&client, &later, "arrived", &[]).await?;
    seen.reconciled(&format!("{later}/arrived")).await?;
    assert!(
        !log.text()
            .contains(&format!("the watched namespace \"{present}\"")),
        "warned of a namespace that exists:\n{}",
        log.text()
    );

    token.cancel();
    tokio::time::timeout(REACT, run).await???;
    Ok(())
}
