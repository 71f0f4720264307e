//! kubeward is a Kubernetes controller framework: informers feed rate-limited work queues that
//! call your [`Reconciler`](controller::Reconciler), with leader election and Prometheus metrics.
//! It is what client-go and controller-runtime are to Go operators, built on the kube-rs client:
//! `kube::Client`, k8s-openapi types and kube's `CustomResource` derive stay as they are, and
//! [`Controller`](macro@Controller) derives a custom resource's wiring, RBAC rules and CRD.
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
//!     let manager = Operator::from_args("Labels every ConfigMap").await?; // --leader-elect, ...
//!     manager.add(Controller::new(Labeller).concurrency(4))?;
//!     manager.run().await?; // until SIGTERM or a lost Lease; `crd` and `manifests` print instead
//!     Ok(())
//! }
//! ```
//!
//! Informer-only users (the client-go pattern) start at [`informer::Factory`]; tests use
//! `testing::ControlPlane` and `testing::FakeApiServer` (feature `testing`).
//!
//! # Features
//!
//! | feature | default | turns on |
//! | --- | --- | --- |
//! | `cli` | yes | the [`cli`] module: [`Operator::from_args`](cli::Operator::from_args), its flags, subcommands and logging (clap, tracing-subscriber). Without it, an operator builds its manager from a [`manager::Config`] in code: informers, queues, controllers, the reconcile kit, leader election and metrics are all there (the `crd` and `manifests` subcommands are the command line's) |
//! | `tls` | yes | HTTPS serving with rustls (the `tls` module; rcgen for self-signed certificates) and secure metrics (`serving::Endpoints::secure_metrics`, `--metrics-secure`, on in the Helm chart) |
//! | `webhooks` | no | admission and conversion webhooks (the `webhook` module, `Manager::add_webhook` and `add_conversion`, the `--webhook-*` flags) and a sharded ring's assignment webhooks; turns on `tls`. As with kubebuilder's `create webhook`, an operator adds them when it has webhooks; a CRD's versions and their [`conversion`]s compile without it, and without it the `crd` command prints a CRD that serves only its stored version |
//! | `sharding` | no | one controller spread over replicas, each reconciling its share (the sharder, shard Leases, the `shard` module, the `--shard-*` flags, the `shards` command; with `webhooks`, the ring's assignment webhooks). Without it, [`Controller::ring`](controller::Controller::ring) only names the ring; [`sharding`] keeps its labels and keys |
//! | `testing` | no | the test kit (the `kubeward-testing` crate, re-exported as `testing`) and kubeward's own test helpers (with `webhooks`, the fuzz targets); for `[dev-dependencies]` only |
//!
//! On docs.rs every item says the feature it needs. kubeward enables no Kubernetes version of
//! k8s-openapi: the operator's binary picks one (`k8s-openapi = { features = ["latest"] }`), as
//! with kube.
//!
//! The smallest build, `default-features = false`, keeps informers, queues, controllers, the
//! reconcile kit, leader election, plain-HTTP metrics and probes and the manager with a `Config`
//! built in code (the example program `configmap_generator_minimal` is one such operator); CI
//! lints it on its own, and with `cli` alone, and an integration test builds such an operator
//! apart from the workspace and runs it on the local control plane.
//!
//! # Layout
//!
//! The modules follow the data, each using only those above it in this list:
//!
//! | module | holds |
//! | --- | --- |
//! | `tls` | HTTPS serving: certificates reloaded from files, a self-signed CA for development (feature `tls`) |
//! | [`cache`] | the store: objects by [`cache::ObjectKey`], indexes |
//! | [`informer`] | reflectors listing and watching into stores, handlers fanned out, the shared [`informer::Factory`] |
//! | [`queue`] | the rate-limited work queue that deduplicates keys |
//! | [`metrics`], [`events`] | Prometheus families of informers, queues and controllers; the Event recorder |
//! | `client` | the manager's client: kube's stack over HTTP/2 with connection health checks, its requests counted |
//! | `webhook` | the HTTPS server of admission webhooks: validators, defaulters, routes; it knows no controller (feature `webhooks`) |
//! | [`crd`], [`conversion`], [`rbac`] | what a controller carries for its manifests: the polished CRD (with its versions), the RBAC rules; conversions between versions |
//! | [`sharding`] | the ring of shards: labels, the hash ring, shard Leases, the sharder and its assignment webhook (feature `sharding`, but for the labels) |
//! | [`controller`] | handlers that queue keys, workers that call the [`Reconciler`](controller::Reconciler) |
//! | [`reconcile`] | what a reconcile uses from its context: owned objects, status and conditions |
//! | [`leader`] | Lease leader election, on its own |
//! | [`plan`] | what an operator would write: its client's dry runs, their diffs against the live objects, the plan |
//! | [`manager`] | runs controllers per term of leadership, endpoints, shutdown |
//! | [`serving`] | the probes and metrics endpoints, and the webhook server, runnables of the manager |
//! | `shard` | a replica as one shard of a controller ring: its shard Lease, the ring's controllers on their share, the sharder; a runnable of the manager (feature `sharding`) |
//! | `cli` | on top: the command line's flags, logging and subcommands, and the manager they describe (feature `cli`) |
//!
//! `error`, `names` (the API server's name rules), `process` (the program's name, its pod's
//! namespace), `random` (jitter a simulation can seed) and `task` (spawning boxed futures) serve
//! every
//! layer. A test (`src/tests/layers.rs`) fails when a module's code names a
//! module below it in this table, or when a module has no row.
//!
//! # Where to read on
//!
//! The kubeward book, in the repository's `book/` folder (`mdbook serve book`), walks from a first
//! operator (`cargo kubeward init`, the tutorial) through every concept above to operations
//! (the Helm chart, RBAC, metrics, high availability) and testing; its Migrating page maps
//! controller-runtime, client-go and kube-runtime names to kubeward's, and the repository's
//! `CHANGELOG.md` says what changed between versions.
#![doc(test(attr(deny(warnings))))]
// docs.rs builds with nightly and `--cfg docsrs`: each item shows the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod cache;
#[cfg(feature = "cli")]
pub mod cli;
mod client;
pub mod controller;
pub mod conversion;
pub mod crd;
mod error;
pub mod events;
pub mod informer;
pub mod leader;
pub mod manager;
pub mod metrics;
mod names;
pub mod plan;
mod process;
pub mod queue;
mod random;
pub mod rbac;
pub mod reconcile;
pub mod serving;
#[cfg(feature = "sharding")]
pub mod shard;
pub mod sharding;
mod spare_capacity;
mod task;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "webhooks")]
pub mod webhook;

#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use error::Error;

/// The names most operators use (`Controller` is both the builder and the derive; kube's
/// `CustomResource` derive and `ResourceExt` come along, since every operator names them).
pub mod prelude {
    #[cfg(feature = "cli")]
    pub use crate::cli::Operator;
    pub use crate::controller::{
        Action, Cleanup, Context, Controller, ErrorAction, Predicate, Reconciler,
    };
    pub use crate::manager::Manager;
    pub use crate::reconcile::{
        Condition, ConditionStatus, Conditions, IgnoreNotFound as _, Named as _, NewCondition as _,
        Operation, Status, Written,
    };
    pub use kube::{CustomResource, ResourceExt as _};
    pub use kubeward_macros::Controller;
    /// What a custom resource's spec and status derive, and what a reconciler is handed.
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
    pub use std::sync::Arc;
}

/// Derives the controller, RBAC rules and polished CRD of a custom resource.
///
/// It goes on the spec struct next to kube's `CustomResource` and reads `#[kube(kind, status,
/// ...)]`, the struct's doc comment and `#[controller(...)]`: `reconciler = Type` (required),
/// `owns(Type, ...)`, `watches(Type = mapper_fn, ...)`, their metadata-only forms
/// `owns_metadata(Type, ...)` and `watches_metadata(Type = mapper_fn, ...)`, `finalizer =
/// "domain/name"` (the reconciler then implements [`Cleanup`](controller::Cleanup)),
/// `versions(Type, ...)` (the kind's other versions, each
/// [`Convertible`](conversion::Convertible) to and from this one; this one is stored unless
/// `storage = "version"` names another), `concurrency = n`, `predicate = expr`, `name = "..."`,
/// `condition = "Type"` (the status condition failures go on, `ctx.report` sets and the
/// columns show; `Ready` by default), `initial_condition = false` (the condition does not start
/// `Unknown`, see [`Controller::initial_condition`](controller::Controller::initial_condition)),
/// `owned_events = true` (an Event for each owned object `ctx.apply` writes, see
/// [`Controller::owned_events`](controller::Controller::owned_events)) and `crate = "path"`
/// (default `::kubeward`). For the kind it generates:
///
/// - `Kind::CONDITION`: the condition's type, for the reconciler and tests to name;
/// - `Kind::controller(reconciler)`: the [`Controller`](controller::Controller) those keys
///   declare, carrying the kind's CRD and RBAC rules, so that the manager's `crd` and
///   `manifests` subcommands can print and write them (see `cli::Command`);
/// - `Kind::rbac_rules()`: the least RBAC the controller needs (see [`rbac::Rules`]);
/// - [`crd::Definition`]: kube's CRD [polished](crd::polish) for `kubectl`, described by the
///   spec struct's doc comment, with an explainable status and, for a status with conditions,
///   `Ready`/`Reason`/`Message` columns; with `versions(...)`, every version (this one stored)
///   and a conversion webhook ([`crd::with_versions`]);
/// - with `versions(...)`, `Kind::converter()`: the [`conversion::Converter`] between them, for
///   `Manager::add_conversion` (feature `webhooks`) to serve.
///
/// Short names, categories (`kubectl get CATEGORY`) and extra columns are kube's keys:
/// `#[kube(shortname = "...", category = "...", printcolumn = ...)]`; `#[controller]` has none.
///
/// ```no_run
/// # use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::CustomResource;
/// use kubeward::Controller;
/// use kubeward::controller::{Action, Cleanup, Context, Reconciler};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// /// Asks for a widget of a size (what `kubectl explain widget` prints).
/// #[derive(CustomResource, Controller, Clone, Debug, Serialize, Deserialize, JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, category = "example")]
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
/// impl Cleanup<Widget> for Builder {
///     async fn cleanup(&self, _: Arc<Widget>, _: &Context<Widget>) -> Result<(), kube::Error> {
///         Ok(()) // what the finalizer waits for before the widget goes
///     }
/// }
///
/// let controller = Widget::controller(Builder); // hand it to `Manager::add`
/// let rules = Widget::rbac_rules(); // widgets, widgets/finalizers, configmaps, events
/// let crd = <Widget as kubeward::crd::Definition>::definition(); // what `operator crd` prints
/// # let _ = (controller, rules, crd);
/// ```
pub use kubeward_macros::Controller;
