//! Tests operators: the `kubeward-testing` kit (a local control plane, a fake API server, waits,
//! endpoint probes, Leases), with what needs kubeward's own types.
//!
//! ```no_run
//! # #[allow(dead_code)]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use kubeward::testing::ControlPlane;
//!
//! let cp = ControlPlane::start().await?;
//! let configmaps: Api<ConfigMap> = Api::namespaced(cp.client(), "default");
//! assert!(configmaps.list(&Default::default()).await?.items.is_empty());
//! # Ok(()) }
//! ```

// Half of the input surfaces they fuzz are the webhook server's.
#[cfg(feature = "webhooks")]
pub mod fuzz;
mod noop;
mod wait;

pub use kubeward_testing::*;
pub use noop::NoopReconciler;
pub use wait::install_definition;

/// Makes the framework's random choices on this thread (informer backoff jitter, the leader
/// elector's jitter) follow `seed`: call it first in a [simulation](sim)'s body, which runs on one
/// thread, so that the run is replayed from its seed.
pub fn seed_randomness(seed: u64) {
    crate::random::seed(seed);
}

/// A compact store filled by hand: the store an informer keeps with
/// [`informer::Config::compact`](crate::informer::Config::compact), for benchmarks that measure
/// it without an informer. `hot`: how many recently read objects stay decoded.
#[must_use]
pub fn compact_store<K>(hot: usize) -> (crate::cache::Store<K>, crate::cache::Writer<K>)
where
    K: kube::Resource + serde::Serialize + serde::de::DeserializeOwned + 'static,
{
    crate::cache::compact_store(hot)
}
