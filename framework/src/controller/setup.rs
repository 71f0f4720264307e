//! Wires a controller into a manager: informers from the shared factory, the intake its queues
//! are fed through, metrics, readiness.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::cache::ObjectKey;
use crate::informer::{SharedInformer, handler_fns};
use crate::manager::{IntoRunnable, Manager, Runnable, runnable_fn};
use crate::queue::{AddOptions, Priority};

use super::failure::Echoes;
use super::intake::Intake;
use super::own_writes::OwnWrites;
use super::running::{Queues, Running, Wiring};
use super::worker::Shared;
use super::{Context, Controller, Watchable};

impl<K: Watchable> IntoRunnable for Controller<K> {
    fn into_runnable(self, manager: &Manager) -> Box<dyn Runnable> {
        let name = self.name.unwrap_or_else(Controller::<K>::default_name);
        if !manager.claim_controller_name(&name) {
            // Names label metrics and Events: two controllers sharing one would be indistinguishable.
            let message = format!(
                "another controller of this manager is already named {name:?}; give each a unique name"
            );
            return Box::new(runnable_fn(name, false, move |_| async move {
                Err(message.into())
            }));
        }
        manager.record_manifests(&name, self.crd, self.rbac);
        let concurrency = self
            .concurrency
            .unwrap_or(manager.config().default_concurrency());
        let namespace = manager.config().watch_namespace();
        let factory = manager.factory();
        let metrics = manager.metrics();

        // The queue belongs to a term of leadership (see running.rs): until one runs, and
        // between terms, the handlers below queue nothing.
        let intake = Intake::default();
        let queues = Queues::new(metrics.workqueue(&name), self.rate_limiter);

        let informer = factory.watched::<K>(namespace);
        let predicate = self.predicate;
        let echoes = Arc::new(Echoes::new(self.to_json));
        let own_writes = Arc::clone(&echoes);
        let (on_add, on_update, on_delete) = (intake.clone(), intake.clone(), intake.clone());
        let synced = informer.clone();
        let registration = informer.add_handler(
            handler_fns()
                .on_add(move |obj: Arc<K>| {
                    // Objects of the initial list wait behind live changes (with aging).
                    let priority = if synced.has_synced() {
                        Priority::default()
                    } else {
                        Priority::LOW
                    };
                    on_add.add_with(
                        ObjectKey::of(obj.as_ref()),
                        AddOptions::new().priority(priority),
                    );
                })
                .on_update(move |old: Arc<K>, new: Arc<K>| {
                    // The controller's own report of a failure is no reason to reconcile again.
                    if own_writes.is_echo(old.as_ref(), new.as_ref())
                        || predicate.as_ref().is_some_and(|p| !p.test(&old, &new))
                    {
                        return;
                    }
                    let resync = Arc::ptr_eq(&old, &new);
                    let priority = if resync {
                        Priority::LOW
                    } else {
                        Priority::default()
                    };
                    on_update.add_with(
                        ObjectKey::of(new.as_ref()),
                        AddOptions::new().priority(priority),
                    );
                })
                .on_delete(move |deleted| on_delete.add(ObjectKey::of(deleted.object().as_ref()))),
        );

        let own_writes = Arc::new(OwnWrites::new(intake.clone()));
        let mut wired: Vec<_> = self
            .triggers
            .into_iter()
            .map(|t| t(factory, namespace, &intake, &own_writes))
            .collect();
        wired.push(super::trigger::Wired::new(&informer, registration));

        add_cache_readiness(manager, &name, informer.clone());

        let ctx = Context::new(
            name.clone(),
            manager.client(),
            informer.store(),
            Arc::clone(factory),
            namespace.map(str::to_owned),
            metrics,
            own_writes,
        );
        let shared = Arc::new(Shared {
            ctx,
            reconciler: self.reconciler,
            timeout: self.timeout,
            finalizer: self.finalizer,
            metrics: metrics.controller(&name, concurrency),
            reporting: self.reporting,
            echoes,
        });
        Box::new(Running(Arc::new(Wiring {
            name,
            informer,
            intake,
            queues,
            shared,
            concurrency,
            wired,
            sources: Mutex::new(self.sources),
            forwarding: Mutex::new(None),
        })))
    }
}

/// Makes `/readyz` fail until the controller's cache of `K` has synced.
fn add_cache_readiness<K: Watchable>(manager: &Manager, name: &str, informer: SharedInformer<K>) {
    manager.add_readiness_check(
        format!("{name}-cache"),
        Arc::new(move || {
            if informer.has_synced() {
                Ok(())
            } else {
                Err("cache not synced yet".into())
            }
        }),
    );
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;

    use crate::controller::{Action, Context, Controller, Reconciler};
    use crate::manager::{Config, Error, Manager};

    struct Nothing;

    impl Reconciler<ConfigMap> for Nothing {
        type Error = std::convert::Infallible;

        async fn reconcile(
            &self,
            _: Arc<ConfigMap>,
            _: &Context<ConfigMap>,
        ) -> Result<Action, Self::Error> {
            Ok(Action::await_change())
        }
    }

    #[tokio::test]
    async fn two_controllers_with_one_name_stop_the_manager_with_an_error_naming_it() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
        let client = kube::Client::try_from(config).expect("a plain HTTP config builds a client");
        let manager = Manager::new(client, Config::default());
        manager.add(Controller::new(Nothing).name("twin"));
        manager.add(Controller::new(Nothing).name("twin"));
        let outcome = tokio::time::timeout(Duration::from_secs(10), manager.run())
            .await
            .expect("run returns");
        match outcome {
            Err(Error::Runnable { name, source }) => {
                assert_eq!(name, "twin");
                assert!(
                    source.to_string().contains("already named \"twin\""),
                    "{source}"
                );
            }
            other => panic!("expected a duplicate-name error, got {other:?}"),
        }
    }
}
