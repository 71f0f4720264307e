//! Reconciles objects: implement [`Reconciler`], build a [`Controller`], run it.
//!
//! A controller watches its kind `K` (plus what it [owns](Controller::owns) and
//! [watches](Controller::watches)) through shared informers, turns every change into the key of
//! a `K` in a rate-limited work queue, and calls [`Reconciler::reconcile`] with the cached
//! object. Keys are deduplicated while they wait, one key is never reconciled twice at once,
//! success forgets the key's failures, errors are retried with backoff (or not at all when they
//! cannot succeed, see [`Error::default_action`]) and reported on the object, a 409 Conflict is
//! looked at again without counting as an error, and a panic in a reconcile is caught, counted
//! and retried. A [finalizer](Controller::with_finalizer) runs the reconciler's [`Cleanup`]
//! before a deleted object goes.
//!
//! An object annotated [`PAUSED_ANNOTATION`]` = "true"` is not reconciled (nor cleaned up) until
//! the annotation goes, and a new value of [`RECONCILE_REQUESTED_ANNOTATION`] reconciles it once
//! through any predicate; neither needs code in the reconciler.
//!
//! # Kinds known at run time
//!
//! `K` is usually a compiled kind ([`Watchable`]): a k8s-openapi
//! type or a kube `CustomResource`. A controller can also run over a kind found only at run
//! time, e.g. by `kube::discovery`: [`Controller::dynamic`] takes `DynamicObject`'s
//! `ApiResource` (any `K`'s `Resource::DynamicType`) and the kind's scope. The controller keeps
//! that description of its kind and builds every URL, owner reference, Event reference and its
//! default name from it, so both run the same machinery; owned and watched kinds stay compiled.
//!
//! # Layers
//!
//! Data flows one way, and each layer knows only the ones before it:
//!
//! ```text
//! reflector ─► store ─► handlers ─► queue ─► workers ─► Reconciler
//! (informer)  (cache)  (informer)  (queue)  (controller)
//! ```
//!
//! [`Controller::bind`] registers the controller's handlers on the shared informers of a
//! [`Cluster`] (client, informer factory, namespace, metrics); [`Bound::run`] works its queue
//! until a shutdown token is cancelled. That is the whole controller, usable on its own. The
//! manager sits on top: `Manager::add` binds a controller to the manager's cluster and runs it
//! for each term of leadership, next to the HTTP endpoints and the leader elector. Nothing in
//! this module names the manager (the layering test in `src/tests/layers.rs` checks it).

mod action;
mod attempt;
mod bound;
mod builder;
mod cleanup;
mod cluster;
mod condition;
mod context;
#[cfg(feature = "sharding")]
mod drain;
mod dynamic;
mod erased;
mod error;
mod expectations;
mod failure;
mod fenced_client;
mod fences;
mod finalizer;
mod first_state;
mod intake;
mod invalid;
mod kind;
mod own_writes;
pub(crate) mod pause;
mod plan_pass;
mod predicate;
mod reads;
mod reconcile_id;
mod reconciler;
mod reporting;
mod running;
mod source;
// They run controllers on the fake API server, which comes with the `testing` feature.
#[cfg(test)]
mod tests;
mod trigger;
mod why;
mod wiring;
mod worker;

pub(crate) use crate::informer::{Cacheable, Watchable};
pub use action::{Action, ErrorAction};
pub use bound::Bound;
pub use builder::{Controller, DEFAULT_CONCURRENCY, DEFAULT_READ_YOUR_WRITES_TIMEOUT};
pub use cleanup::Cleanup;
pub use cluster::Cluster;
pub(crate) use condition::{Report, reported_status};
pub use context::Context;
pub use error::Error;
pub(crate) use first_state::note_status_written;
pub use invalid::Invalid;
pub(crate) use kind::Kind;
pub(crate) use own_writes::target_of;
pub use pause::{PAUSED_ANNOTATION, PAUSED_CONDITION, RECONCILE_REQUESTED_ANNOTATION};
pub(crate) use plan_pass::{Pass, PassError};
pub use predicate::Predicate;
pub use reconciler::Reconciler;
pub(crate) use reporting::INITIAL_REASON;
pub(crate) use trigger::target;
#[cfg(feature = "cli")]
pub(crate) use why::record;
pub use why::{DEFAULT_RECORDED_RECONCILES, EventType, MAX_TRIGGERS, Reason, Trigger};
pub(crate) use why::{History, Reconciles, note_diff};
