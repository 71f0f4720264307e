//! The CPU-bound reconciler: this bench binary again, as a child process with `KUBEWARD_BENCH_BURN=1`.
//!
//! The child is an operator of its own (the example operator stays lean): a `burn` controller
//! over ConfigMaps whose reconcile burns a fixed amount of CPU (on tokio's blocking pool) and
//! asks to run again 1 ms later, so a shard's worker is never idle and no API request is made
//! per reconcile.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::cli::Operator;
use kubeward::controller::{Action, Context, Controller, Reconciler};

/// The environment variable that makes this binary the child.
pub const CHILD: &str = "KUBEWARD_BENCH_BURN";

/// The controller, and ring, name of the child.
pub const RING: &str = "burn";

/// Xorshift rounds per reconcile: about a millisecond of one core in a release build.
const ROUNDS: u64 = 1_000_000;

/// Whether this process is the child.
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// Burns [`ROUNDS`] rounds of a xorshift generator; the result keeps the work from being
/// optimised away.
pub fn burn() -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15_u64;
    for _ in 0..ROUNDS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = std::hint::black_box(x);
    }
    x
}

#[derive(Clone)]
struct Burner;

impl Reconciler<ConfigMap> for Burner {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        _: Arc<ConfigMap>,
        _: &Context<ConfigMap>,
    ) -> Result<Action, Self::Error> {
        // On the blocking pool, as a CPU-bound reconciler should: the runtime's workers stay
        // free for the Lease renewals and /metrics.
        let burnt = tokio::task::spawn_blocking(burn).await;
        std::hint::black_box(burnt.ok());
        // A positive delay: a zero one would go through the rate limiter's per-object backoff.
        Ok(Action::requeue(Duration::from_millis(1)))
    }
}

/// Runs the child operator with the flags on its command line.
pub fn child() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let manager =
            Operator::from_args("Burns CPU in each reconcile, for the sharding benchmark").await?;
        manager.add(Controller::new(Burner).name(RING))?;
        Ok(manager.run().await?)
    })
}
