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

/// Derives `Kind::controller(reconciler)` and `Kind::rbac_rules()` for a custom resource.
///
/// It goes on the spec struct next to kube's `CustomResource` and reads `#[kube(kind, status,
/// ...)]` and `#[controller(...)]`: `reconciler = Type` (required), `owns(Type, ...)`,
/// `watches(Type = mapper_fn, ...)`, `finalizer = "domain/name"`, `concurrency = n`,
/// `predicate = expr`, `name = "..."` and `crate = "path"` (default `::kubeward`).
/// `rbac_rules()` is the least RBAC the controller needs (see [`rbac::Rules`]).
///
/// ```no_run
/// # use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::CustomResource;
/// use kubeward::Controller;
/// use kubeward::controller::{Action, Context, Reconciler};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(CustomResource, Controller, Clone, Debug, Serialize, Deserialize, JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
/// #[controller(reconciler = Builder, owns(ConfigMap), finalizer = "example.com/cleanup")]
/// pub struct WidgetSpec {
///     pub size: u32,
/// }
///
/// struct Builder;
///
/// impl Reconciler<Widget> for Builder {
///     type Error = kube::Error;
///     async fn reconcile(&self, _: Arc<Widget>, _: &Context<Widget>) -> Result<Action, kube::Error> {
///         Ok(Action::await_change())
///     }
/// }
///
/// let controller = Widget::controller(Builder); // hand it to `Manager::add`
/// let rules = Widget::rbac_rules(); // widgets, widgets/finalizers, configmaps, events
/// # let _ = (controller, rules);
/// ```
pub use kubeward_macros::Controller;
