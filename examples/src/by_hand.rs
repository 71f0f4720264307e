//! The example operator's pieces written out by hand: the controller without the derive, the
//! finalizer it declares and the name of the ConfigMap it generates, for the book and the tests.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kubeward::controller::{Controller, Predicate};

use crate::configmap_generator::{ConfigMapGenerator, Generator};

/// The finalizer the operator puts on every generator (as declared in `#[controller(...)]`).
pub const FINALIZER: &str = "demo.kubeward.dev/cleanup";

// ANCHOR: controller
/// The controller built by hand, without the derive: what `ConfigMapGenerator::controller`
/// generates from `#[controller(...)]` (less the CRD and RBAC rules the derive attaches for the
/// manager's `crd` and `manifests` subcommands). It owns ConfigMaps, runs the generator's
/// cleanup behind a finalizer, records an Event for each ConfigMap it creates, updates or
/// deletes, and reconciles a generator again only when its spec changed.
pub fn controller_without_macro() -> Controller<ConfigMapGenerator> {
    Controller::with_finalizer(Generator, FINALIZER)
        .name("configmap-generator")
        .owns::<ConfigMap>()
        .owned_events(true)
        .predicate(Predicate::generation_changed())
}
// ANCHOR_END: controller

/// The name of the ConfigMap a generator produces.
#[must_use]
pub fn generated_name(generator: &ConfigMapGenerator) -> String {
    format!("{}-generated", generator.name_any())
}

#[cfg(test)]
mod tests {
    use super::FINALIZER;

    #[test]
    fn the_finalizer_is_the_one_the_operator_declares() {
        // The derive keeps the finalizer inside the controller it builds; the attribute's text
        // is where the operator declares it.
        let source = include_str!("configmap_generator.rs");
        assert!(
            source.contains(&format!("finalizer = \"{FINALIZER}\"")),
            "FINALIZER must match #[controller(finalizer = ...)]"
        );
    }
}
