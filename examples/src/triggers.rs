//! A controller with every trigger: own kind, owned and watched kinds, outside keys, predicates.
//!
//! `Deployment`s are reconciled when they change (generation or labels only), when a
//! `ReplicaSet` they control changes, and when a `ConfigMap` that names them in its
//! [`CONSUMERS_ANNOTATION`] changes; [`controller_with_outside_keys`] also takes keys from outside.

use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::cache::ObjectKey;
use kubeward::controller::{Action, Context, Controller, Predicate, Reconciler};
use kubeward::queue::rate_limiter::ExponentialBackoff;

/// A ConfigMap annotation listing, comma-separated, the Deployments (same namespace) that read it.
pub const CONSUMERS_ANNOTATION: &str = "example.kubeward.dev/consumers";

/// Checks a Deployment against its ConfigMaps (the body is beside the point here).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rollout;

impl Reconciler<Deployment> for Rollout {
    type Error = kube::Error;

    async fn reconcile(
        &self,
        deployment: Arc<Deployment>,
        ctx: &Context<Deployment>,
    ) -> Result<Action, kube::Error> {
        tracing::info!(name = ?deployment.metadata.name, controller = ctx.name(), "checked");
        Ok(Action::await_change())
    }
}

// ANCHOR: mapper
/// The keys of the Deployments a ConfigMap names in its consumers annotation.
pub fn consumers(config_map: &ConfigMap) -> Vec<ObjectKey> {
    let namespace = config_map.metadata.namespace.as_deref();
    let annotations = config_map.metadata.annotations.as_ref();
    let names = annotations.and_then(|a| a.get(CONSUMERS_ANNOTATION));
    names
        .into_iter()
        .flat_map(|names| names.split(','))
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| ObjectKey::new(namespace, name))
        .collect()
}
// ANCHOR_END: mapper

// ANCHOR: controller
/// The controller with every trigger and knob.
pub fn controller() -> Controller<Deployment> {
    Controller::new(Rollout)
        .name("rollout")
        // A change to a ReplicaSet whose controlling owner is a Deployment reconciles that owner.
        .owns::<ReplicaSet>()
        // A change to a ConfigMap reconciles the Deployments `consumers` names.
        .watches::<ConfigMap>(consumers)
        // Updates of Deployments pass only when the spec or the labels changed.
        .predicate(Predicate::generation_changed().or(Predicate::labels_changed()))
        .concurrency(4)
        .rate_limiter(ExponentialBackoff::new(
            Duration::from_millis(100),
            Duration::from_secs(60),
        ))
        .reconcile_timeout(Duration::from_secs(30))
}
// ANCHOR_END: controller

// ANCHOR: external
/// The controller, also reconciling every Deployment an outside system names: whoever holds the
/// returned sender (a webhook handler, say) calls `sender.unbounded_send(key)`.
pub fn controller_with_outside_keys() -> (UnboundedSender<ObjectKey>, Controller<Deployment>) {
    let (sender, keys) = futures::channel::mpsc::unbounded();
    (sender, controller().reconcile_on(keys))
}
// ANCHOR_END: external

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;

    use super::*;

    #[test]
    fn a_config_map_maps_to_every_deployment_its_annotation_names_in_its_namespace() {
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("shop".into()),
                annotations: Some([(CONSUMERS_ANNOTATION.into(), "web, api,".into())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        assert_eq!(
            consumers(&config_map),
            [
                ObjectKey::new(Some("shop"), "web"),
                ObjectKey::new(Some("shop"), "api")
            ]
        );
        assert!(consumers(&ConfigMap::default()).is_empty());
        let _ = controller();
        let (sender, _controller) = controller_with_outside_keys();
        assert!(
            sender
                .unbounded_send(ObjectKey::new(Some("shop"), "web"))
                .is_ok()
        );
    }
}
