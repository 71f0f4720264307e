//! Helpers shared by kubeward's integration tests: the testing kit's, under their old names.

use std::future::Future;
use std::time::Duration;

/// Waits until `check` returns `Some` (see [`kubeward::testing::wait_for`]).
///
/// # Errors
/// The condition did not hold within `timeout`; the message says what was expected.
pub async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    Ok(kubeward::testing::wait_for(timeout, what, check).await?)
}

/// Installs the CRD of `K` and waits until it is served (see [`kubeward::testing::install_crd`]).
///
/// # Errors
/// The API refused the CRD, or it was not established within 30 s.
pub async fn ensure_crd<K: kube::CustomResourceExt>(client: kube::Client) -> anyhow::Result<()> {
    Ok(kubeward::testing::install_crd::<K>(client).await?)
}
