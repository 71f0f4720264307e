//! kubeward is a Kubernetes controller framework: informers feed rate-limited work queues that
//! call your `Reconciler`, with leader election and Prometheus metrics.
//!
//! The framework grows issue by issue; the modules below are what has landed.
#![doc(test(attr(deny(warnings))))]

pub mod cache;
pub mod controller;
pub mod informer;
pub mod leader;
pub mod manager;
pub mod metrics;
pub mod queue;
pub mod rbac;

#[cfg(feature = "testing")]
pub mod testing;

/// Derives `Kind::controller(reconciler)` and `Kind::rbac_rules()` for a custom resource; see the
/// [`rbac`] module and the book's tutorial.
pub use kubeward_macros::Controller;
