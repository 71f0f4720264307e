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
