//! kubeward is a Kubernetes controller framework: informers feed rate-limited work queues that
//! call your `Reconciler`, with leader election and Prometheus metrics.
//!
//! The framework grows issue by issue; the modules below are what has landed.
#![doc(test(attr(deny(warnings))))]

pub mod cache;
pub mod informer;
pub mod leader;
pub mod manager;

#[cfg(feature = "testing")]
pub mod testing;
