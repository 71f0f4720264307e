//! Runs controllers under a Manager: bound to its cluster when added, one run per term of
//! leadership, their caches in `/readyz`, their CRD and RBAC rules in its manifests.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{BoxError, IntoRunnable, Manager, Runnable, RunsOn, runnable_fn};
use crate::controller::{Bound, Cluster, Controller};
use crate::informer::Cacheable;

impl<K: Cacheable> IntoRunnable for Controller<K> {
    /// Binds the controller to the manager's cluster (its informer factory, watch namespace and
    /// metrics), with the manager's default concurrency unless it set its own.
    ///
    /// # Panics
    /// If another controller of this manager has the same name (names label metrics and
    /// Events, so two controllers sharing one could not be told apart).
    #[track_caller]
    fn into_runnable(self, manager: &Manager) -> Box<dyn Runnable> {
        let name = self.resolved_name();
        if let Err(invalid) = self.check() {
            // Until `add` returns it: reported when the manager runs, as a runnable's failure.
            let error: BoxError = invalid.into();
            return Box::new(runnable_fn(
                name,
                RunsOn::EveryReplica,
                move |_| async move { Err(error) },
            ));
        }
        assert!(
            manager.claim_controller_name(&name),
            "another controller of this manager is already named {name:?}; give each a unique \
             name with Controller::name"
        );
        let mut controller = self;
        manager.record_manifests(&name, controller.crd.take(), controller.rbac.take());
        if !controller.has_concurrency() {
            controller = controller.concurrency(manager.config().default_concurrency());
        }
        #[cfg(feature = "sharding")]
        let controller = match manager.run_in_ring(controller, &name) {
            Ok(member) => return member,
            Err(unsharded) => unsharded,
        };
        let cluster = Cluster::new(Arc::clone(manager.factory()))
            .cache(manager.config().cache_scope().clone())
            .metrics(manager.metrics().clone());
        let bound = controller.bind_unchecked(&cluster);
        manager.add_cache_readiness(&bound);
        Box::new(ControllerRunnable(bound))
    }
}

impl Manager {
    /// Adds `/readyz` check `NAME-cache`: ready once the cache of the controller's kind holds
    /// its first complete list.
    pub(super) fn add_cache_readiness<K: Cacheable>(&self, bound: &Bound<K>) {
        let readiness = bound.clone();
        self.add_readiness_check(
            format!("{}-cache", bound.name()),
            Arc::new(move || {
                if readiness.has_synced() {
                    Ok(())
                } else {
                    Err("cache not synced yet".into())
                }
            }),
        );
    }
}

/// A bound controller as one of the manager's leader-only runnables, for one term of leadership;
/// [`Runnable::next_term`] gives the next term's, sharing the binding (informers, handlers,
/// caches).
pub(super) struct ControllerRunnable<K>(pub(super) Bound<K>);

impl<K: Cacheable> Runnable for ControllerRunnable<K> {
    fn name(&self) -> String {
        self.0.name().to_owned()
    }

    fn next_term(&self) -> Option<Box<dyn Runnable>> {
        Some(Box::new(ControllerRunnable(self.0.clone())))
    }

    fn run(
        self: Box<Self>,
        shutdown: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move { Ok(self.0.run(shutdown.cancelled_owned()).await?) })
    }
}

// The tests use the testing kit's no-op reconciler.
#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use crate::controller::Controller;
    use crate::manager::{Config, Manager};
    use crate::testing::NoopReconciler as Nothing;

    fn manager() -> Manager {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
        let client = kube::Client::try_from(config).expect("a plain HTTP config builds a client");
        Manager::new(client, Config::default())
    }

    #[tokio::test]
    #[should_panic(expected = "already named \"twin\"")]
    async fn adding_a_second_controller_with_a_taken_name_panics_at_add() {
        let manager = manager();
        manager.add(Controller::<ConfigMap>::new(Nothing).name("twin"));
        manager.add(Controller::<ConfigMap>::new(Nothing).name("twin"));
    }

    #[tokio::test]
    #[should_panic(expected = "already named \"configmap\"")]
    async fn two_unnamed_controllers_of_one_kind_share_the_default_name_and_panic() {
        let manager = manager();
        manager.add(Controller::<ConfigMap>::new(Nothing));
        manager.add(Controller::<ConfigMap>::new(Nothing));
    }

    #[tokio::test]
    async fn controllers_with_different_names_are_both_added() {
        let manager = manager();
        manager.add(Controller::<ConfigMap>::new(Nothing).name("one"));
        manager.add(Controller::<ConfigMap>::new(Nothing).name("two"));
        let debug = format!("{manager:?}");
        assert!(
            debug.contains("\"one\"") && debug.contains("\"two\""),
            "{debug}"
        );
    }
}
