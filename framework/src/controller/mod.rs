//! Reconciles objects: implement [`Reconciler`], build a [`Controller`], add it to a Manager.
//!
//! A controller watches its kind `K` (plus what it [owns](Controller::owns) and
//! [watches](Controller::watches)) through the manager's shared informers, turns every change
//! into the key of a `K` in a rate-limited work queue, and calls [`Reconciler::reconcile`] with
//! the cached object. Keys are deduplicated while they wait, one key is never reconciled twice at
//! once, success forgets the key's failures, errors are retried with backoff (or not at all when
//! they cannot succeed, see [`Error::default_action`]) and reported on the object, a 409 Conflict
//! is looked at again without counting as an error, and a panic in a reconcile is caught,
//! counted and retried.

mod action;
mod attempt;
mod builder;
mod context;
mod erased;
mod error;
mod failure;
mod finalizer;
mod intake;
mod own_writes;
mod predicate;
mod reconcile_id;
mod reconciler;
mod running;
mod setup;
mod source;
mod trigger;
mod worker;

pub(crate) use crate::informer::Watchable;
pub use action::{Action, ErrorAction};
pub use builder::{Controller, DEFAULT_CONCURRENCY};
pub use context::Context;
pub use error::Error;
pub use predicate::Predicate;
pub use reconciler::Reconciler;
pub(crate) use trigger::target;
