//! The memo-operator operator: its custom resources, controllers and webhooks.
//!
//! `cargo kubeward create` rewrites this file; write your code in the modules it lists.

use kubeward::crd::{CustomResourceDefinition, Definition as _};
use kubeward::manager::Manager;

/// The custom resources: what each asks for and what it reports.
pub mod api {
    pub mod memo;
}

/// The reconcilers: the operator's domain logic.
pub mod controller {
    pub mod memo;
}

/// The admission webhooks.
pub mod webhook {
    pub mod memo;
}

/// Adds every controller and webhook of the operator to `manager`.
///
/// # Errors
/// What [`Manager::add`] refuses, e.g. two controllers of one name.
pub fn register(manager: &Manager) -> Result<(), kubeward::manager::Error> {
    manager.add(api::memo::Memo::controller(
        controller::memo::MemoReconciler,
    ))?;
    manager.add_validator::<api::memo::Memo>(webhook::memo::MemoValidator)?;
    manager.add_defaulter::<api::memo::Memo>(webhook::memo::MemoDefaulter)?;
    Ok(())
}

/// The CustomResourceDefinitions of the operator's custom resources.
#[must_use]
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![api::memo::Memo::definition()]
}
