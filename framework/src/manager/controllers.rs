//! Runs controllers under a Manager: bound to its cluster when added, one run per term of
//! leadership, their caches in `/readyz`, their CRD and RBAC rules in its manifests.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{BoxError, Error, IntoRunnable, Manager, Result, Runnable};
use crate::controller::{Bound, Cluster, Controller};
use crate::informer::Cacheable;

impl<K: Cacheable> IntoRunnable for Controller<K> {
    /// Binds the controller to the manager's cluster (its informer factory, watch namespace and
    /// metrics), with the manager's default concurrency unless it set its own.
    ///
    /// # Errors
    /// [`Error::InvalidController`] if another controller of this manager has the same name
    /// (names label metrics and Events, so two controllers sharing one could not be told
    /// apart), or the controller's builder was given a value it cannot run with.
    fn into_runnable(self, manager: &Manager) -> Result<Box<dyn Runnable>> {
        let name = self.resolved_name();
        if let Err(invalid) = self.check() {
            return Err(Error::InvalidController {
                name,
                reason: invalid.to_string(),
            });
        }
        let mut controller = self;
        if !controller.has_concurrency() {
            let Some(workers) = manager.config().default_concurrency() else {
                return Err(Error::InvalidController {
                    name,
                    reason: "Config::max_concurrent_reconciles(0): a controller needs at least \
                             one worker"
                        .to_owned(),
                });
            };
            controller = controller.concurrency(workers.get());
        }
        manager.record_controller(&name, controller.crd.take(), controller.rbac.take())?;
        #[cfg(feature = "sharding")]
        if let Some(shard) = manager.ring_shard(&mut controller, &name) {
            return manager.bind_member(&*shard, controller);
        }
        let cluster = Cluster::new(Arc::clone(manager.factory()))
            .cache(manager.config().cache_scope().clone())
            .metrics(manager.metrics().clone())
            .reconciles(manager.reconciles().clone());
        let bound = controller.bind_unchecked(&cluster);
        manager.add_cache_readiness(&bound);
        manager.plan.planners.add(Arc::new(bound.clone()));
        Ok(Box::new(ControllerRunnable(bound)))
    }
}

impl Manager {
    /// Adds `/readyz` check `NAME-cache`: ready once the cache of the controller's kind holds
    /// its first complete list, and not while the API server does not serve that kind.
    pub(super) fn add_cache_readiness<K: Cacheable>(&self, bound: &Bound<K>) {
        let readiness = bound.clone();
        self.add_readiness_check(
            format!("{}-cache", bound.name()),
            Arc::new(move || {
                if readiness.waits_for_its_kind() {
                    Err("the API server does not serve its kind: waiting for its CRD".into())
                } else if readiness.has_synced() {
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
    use crate::manager::{Config, Error, Manager};
    use crate::testing::NoopReconciler as Nothing;

    fn manager(config: Config) -> Manager {
        let url = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
        let client = kube::Client::try_from(url).expect("a plain HTTP config builds a client");
        Manager::new(client, config).expect("a client given needs no building")
    }

    /// The controller named in an [`Error::InvalidController`], and why.
    fn refused(outcome: crate::manager::Result<()>) -> (String, String) {
        match outcome {
            Err(Error::InvalidController { name, reason }) => (name, reason),
            other => panic!("expected InvalidController, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn adding_a_second_controller_with_a_taken_name_is_an_error_and_adds_nothing() {
        let manager = manager(Config::default());
        manager
            .add(Controller::<ConfigMap>::new(Nothing).name("twin"))
            .expect("the first is added");
        let (name, reason) =
            refused(manager.add(Controller::<ConfigMap>::new(Nothing).name("twin")));
        assert_eq!(name, "twin");
        assert!(reason.contains("Controller::name"), "{reason}");
        assert_eq!(format!("{manager:?}").matches("\"twin\"").count(), 1);
    }

    #[tokio::test]
    async fn two_unnamed_controllers_of_one_kind_share_the_default_name_and_the_second_is_refused()
    {
        let manager = manager(Config::default());
        assert!(manager.add(Controller::<ConfigMap>::new(Nothing)).is_ok());
        let (name, _) = refused(manager.add(Controller::<ConfigMap>::new(Nothing)));
        assert_eq!(name, "configmap");
    }

    #[tokio::test]
    async fn a_default_concurrency_of_zero_refuses_controllers_that_set_none() {
        let manager = manager(Config::default().max_concurrent_reconciles(0));
        let (name, reason) =
            refused(manager.add(Controller::<ConfigMap>::new(Nothing).name("lazy")));
        assert_eq!(name, "lazy");
        assert!(reason.contains("max_concurrent_reconciles(0)"), "{reason}");
        let own = Controller::<ConfigMap>::new(Nothing)
            .name("busy")
            .concurrency(2);
        assert!(
            manager.add(own).is_ok(),
            "a controller with its own concurrency needs none"
        );
    }

    #[tokio::test]
    async fn a_controller_its_builder_refused_a_value_for_is_refused_by_add_and_keeps_no_name() {
        let manager = manager(Config::default());
        let bad = Controller::<ConfigMap>::new(Nothing)
            .name("bad")
            .concurrency(0);
        let (name, reason) = refused(manager.add(bad));
        assert_eq!(name, "bad");
        assert!(reason.contains("concurrency(0)"), "{reason}");
        let fixed = Controller::<ConfigMap>::new(Nothing)
            .name("bad")
            .concurrency(1);
        assert!(
            manager.add(fixed).is_ok(),
            "the refused one did not take the name"
        );
    }

    #[tokio::test]
    async fn controllers_with_different_names_are_both_added() -> anyhow::Result<()> {
        let manager = manager(Config::default());
        manager.add(Controller::<ConfigMap>::new(Nothing).name("one"))?;
        manager.add(Controller::<ConfigMap>::new(Nothing).name("two"))?;
        let debug = format!("{manager:?}");
        assert!(
            debug.contains("\"one\"") && debug.contains("\"two\""),
            "{debug}"
        );
        Ok(())
    }
}
