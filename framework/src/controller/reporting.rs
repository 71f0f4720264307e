//! Says what a controller reports on its objects: which condition, and which reports are on.

use std::sync::Arc;

use super::Kind;

/// The condition failures are reported on unless a controller names another.
pub(crate) const DEFAULT_CONDITION: &str = kubeward_core::condition::DEFAULT;

/// The reason of the condition's first state, `Unknown` until a reconcile says otherwise.
pub(crate) const INITIAL_REASON: &str = "Reconciling";

/// What a controller reports on its objects: failed reconciles (both ways on unless the builder
/// turns them off), its condition's first state, and its writes of owned objects (opt-in).
#[derive(Clone, Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "four independent switches, one builder method each"
)]
pub(crate) struct Reporting {
    /// A Warning Event about the object.
    pub(crate) events: bool,
    /// `condition=False` in the status conditions of a custom resource.
    pub(crate) status: bool,
    /// The controller's condition: `Ready` unless the controller names another.
    pub(crate) condition: Arc<str>,
    /// `condition=Unknown` (reason `Reconciling`) on an object whose status lacks it (with
    /// `status` on).
    pub(crate) initial: bool,
    /// A Normal Event about the owner for each owned object the kit creates, updates or
    /// deletes.
    pub(crate) owned_events: bool,
}

impl Default for Reporting {
    fn default() -> Self {
        Self {
            events: true,
            status: true,
            condition: Arc::from(DEFAULT_CONDITION),
            initial: true,
            owned_events: false,
        }
    }
}

impl Reporting {
    /// Whether the controller keeps its condition on the status of objects of `kind`: custom
    /// resources (their group has a dot and is not a Kubernetes one, since built-in kinds'
    /// conditions belong to Kubernetes' own controllers: a Pod's `Ready` is the kubelet's), with
    /// reporting on the status on.
    pub(crate) fn keeps_condition(&self, kind: &Kind) -> bool {
        self.status && kind.is_custom()
    }

    /// Whether the controller sets its condition Unknown on objects of `kind` that lack it.
    pub(crate) fn starts_unknown(&self, kind: &Kind) -> bool {
        self.initial && self.keeps_condition(kind)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::networking::v1::Ingress;

    use super::*;

    #[test]
    fn custom_resources_get_conditions_and_built_in_kinds_do_not() {
        let reporting = Reporting::default();
        assert!(!reporting.keeps_condition(&Kind::of::<Pod>()));
        assert!(!reporting.keeps_condition(&Kind::of::<Deployment>()));
        assert!(!reporting.keeps_condition(&Kind::of::<Ingress>()));
    }
}
