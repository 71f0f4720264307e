//! Writes what a reconcile produces: owned objects, status and conditions, with few requests.
//!
//! The pieces controller-runtime users know from `controllerutil`, `meta` and `client`, as
//! methods of the [`Context`](crate::controller::Context) and a conditions list:
//!
//! | need | kubeward | controller-runtime |
//! | --- | --- | --- |
//! | create or update an owned object | [`ctx.apply(&owner, child)`](crate::controller::Context::apply) | `SetControllerReference` + `CreateOrPatch` |
//! | delete owned objects no longer produced | [`ctx.prune::<C>(&owner, &keep)`](crate::controller::Context::prune) | (by hand) |
//! | list owned objects from the cache | [`ctx.owned::<C>(&owner)`](crate::controller::Context::owned) | `List` with a field index |
//! | write status if it changed | [`ctx.patch_status(&obj, &status)`](crate::controller::Context::patch_status) | `Status().Patch` with `MergeFromWithOptimisticLock` |
//! | report the outcome on the controller's condition, with `observedGeneration` | [`ctx.report(&obj, holds, reason, message)`](crate::controller::Context::report), [`ctx.succeed(&obj, reason, message)`](crate::controller::Context::succeed) | `meta.SetStatusCondition` + `Status().Update` |
//! | conditions | [`Conditions::set`], [`find`](Conditions::find), [`is_true`](Conditions::is_true), ... | `meta.SetStatusCondition`, ... |
//! | ignore a 404 | [`IgnoreNotFound::ignore_not_found`] | `client.IgnoreNotFound` |
//!
//! Choices, and why:
//!
//! - **Conditions are k8s-openapi's `metav1.Condition`** ([`Condition`]), so no second copy of
//!   the type exists and conditions move freely between kubeward and other kube-rs code. The
//!   kit adds only the list, [`Conditions`], whose JSON schema carries apimachinery's
//!   validation (status `True`/`False`/`Unknown`, `date-time` transition times, reason and type
//!   patterns and lengths, `observedGeneration >= 0`, a list map keyed by `type`; `message` is
//!   nullable so that an empty one passes the local kube-apiserver 1.20) and a
//!   description on every field, inline, so kube's `CustomResource` derive puts it into a
//!   structural schema the API server accepts.
//! - **Applies are server-side applies that skip unchanged objects** by comparing with the
//!   controller's cache of the owned kind: a steady-state reconcile sends no write.
//! - **Status is replaced with a JSON Patch under a resourceVersion precondition**, only when
//!   it differs: fields the caller dropped are dropped, a concurrent change is a 409 Conflict
//!   (never a lost update), and the caller starts from the status it read, so others' fields
//!   survive. Not server-side apply: the controller would become the owner of every field it
//!   sends back, other writers' conditions included.
//! - **One condition per controller, set by one piece of code**: a failed reconcile sets it
//!   `False`, [`ctx.report`](crate::controller::Context::report) sets the outcome, and an object
//!   that lacks it gets `Unknown` (`Reconciling`) first, each through the same function, so
//!   transition times and `observedGeneration` follow one rule. The first state goes into the
//!   reconcile's own status write when there is one, so a first reconcile that reports writes
//!   the status once; the reconciler never spells the condition's type.
//! - **Errors name what is missing**: a 403 becomes [`Error::Forbidden`] with the verb,
//!   resource, group and namespace the controller's RBAC lacks.
//!
//! ```
//! use kubeward::reconcile::{Condition, ConditionStatus, Conditions, NewCondition as _};
//!
//! let mut conditions = Conditions::default();
//! assert!(conditions.set(Condition::new("Ready", ConditionStatus::False, "Starting", "")));
//! assert!(conditions.set(Condition::new("Ready", true, "Applied", "ConfigMap up to date")));
//! assert!(conditions.is_true("Ready"));
//! ```

mod apply;
mod conditions;
mod diff;
mod error;
mod named;
mod not_found;
mod observed;
mod owned;
mod schema;
mod status;
mod written;

pub use conditions::{ConditionStatus, Conditions, NewCondition};
pub use error::Error;
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
pub use named::Named;
pub use not_found::IgnoreNotFound;
pub use observed::Status;
pub use written::{Operation, Written};

/// The result of the kit's calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;
