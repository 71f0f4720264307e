//! Helpers shared by kubeward's integration tests.

use std::future::Future;
use std::time::Duration;

/// Waits until `check` returns `Some`, polling every 50 ms, or fails with `what` after `timeout`.
///
/// # Errors
/// The condition did not hold within `timeout`; the message says what was expected.
pub async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> anyhow::Result<T>
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
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Installs the CRD of `K` unless it is there already, and waits until it is served.
///
/// # Errors
/// The API refused the CRD, or it was not established within 30 s.
pub async fn ensure_crd<K: kube::CustomResourceExt>(client: kube::Client) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client);
    let crd = K::crd();
    let name = crd.metadata.name.clone().unwrap_or_default();
    match crds.create(&kube::api::PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    wait_for(
        Duration::from_secs(30),
        &format!("CRD {name} to be established"),
        || async {
            let crd = crds.get(&name).await.ok()?;
            let established = crd
                .status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            established.then_some(())
        },
    )
    .await
}
