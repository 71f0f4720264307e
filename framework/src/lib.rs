//! kubeward is a Kubernetes controller framework: informers feed rate-limited work queues that
//! call your [`Reconciler`](controller::Reconciler), with leader election and Prometheus metrics.
//!
//! Start at [`controller`]: implement [`Reconciler`](controller::Reconciler) for your kind, build a
//! [`Controller`](controller::Controller), hand it to a [`Manager`](manager::Manager) and run it.
//! A complete operator:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use kube::api::{Patch, PatchParams};
//! use kubeward::prelude::*;
//!
//! /// Labels every ConfigMap it sees.
//! struct Labeller;
//!
//! impl Reconciler<ConfigMap> for Labeller {
//!     type Error = kube::Error;
//!
//!     async fn reconcile(&self, cm: Arc<ConfigMap>, ctx: &Context<ConfigMap>) -> Result<Action, kube::Error> {
//!         let namespace = cm.metadata.namespace.as_deref().unwrap_or_default();
//!         let name = cm.metadata.name.as_deref().unwrap_or_default();
//!         let patch = serde_json::json!({ "metadata": { "labels": { "seen-by": "kubeward" } } });
//!         let api: Api<ConfigMap> = Api::namespaced(ctx.client(), namespace);
//!         api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
//!         Ok(Action::await_change())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let manager = Manager::from_args().await?; // --leader-elect, --metrics-bind-address, ...
//!     manager.add(Controller::new(Labeller).concurrency(4));
//!     manager.run().await?; // until SIGTERM, or until leadership is lost
//!     Ok(())
//! }
//! ```
//!
//! Informer-only users (the client-go pattern) start at [`informer::Factory`]; tests use
//! `testing::ControlPlane` and `testing::FakeApiServer` (feature `testing`).
#![doc(test(attr(deny(warnings))))]

pub mod cache;
pub mod controller;
pub mod informer;
pub mod leader;
pub mod manager;
pub mod metrics;
pub mod queue;

#[cfg(feature = "testing")]
pub mod testing;

/// The names most operators use.
pub mod prelude {
    pub use crate::controller::{Action, Context, Controller, ErrorAction, Predicate, Reconciler};
    pub use crate::manager::Manager;
}
