//! Waits for conditions with a timeout, and installs CRDs from Rust types.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::PostParams;
use kube::{Api, Client, CustomResourceExt};

use super::{Error, Result};

/// Waits until `check` returns `Some`, polling every 50 ms, for at most `timeout`.
///
/// # Errors
/// [`Error::Timeout`], whose message says `what` was expected.
pub async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Timeout {
                what: what.to_owned(),
                timeout,
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Installs kube's plain CRD of `K` (unless it is there already) and waits until it is served.
/// For a kind with kubeward's `#[derive(Controller)]`, `kubeward::testing::install_definition`
/// installs what the operator ships instead.
///
/// # Errors
/// [`Error::Api`] when the API server refuses the CRD; [`Error::Timeout`] when it is not
/// established within 30 s.
pub async fn install_crd<K: CustomResourceExt>(client: Client) -> Result<()> {
    install_crd_object(client, K::crd()).await
}

/// Installs `crd` (unless a CRD of that name is there already) and waits until it is served.
///
/// # Errors
/// As [`install_crd`].
pub async fn install_crd_object(client: Client, crd: CustomResourceDefinition) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let name = crd.metadata.name.clone().unwrap_or_default();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => {
            return Err(Error::Api {
                action: format!("creating the CRD {name}"),
                source: Box::new(e),
            });
        }
    }
    wait_for(
        Duration::from_secs(30),
        &format!("the CRD {name} to be established"),
        || async {
            let crd = crds.get(&name).await.ok()?;
            let conditions = crd.status?.conditions?;
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        },
    )
    .await
}
