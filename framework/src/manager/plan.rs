//! Plans instead of running: each controller reconciles every object once, with dry-run writes.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, join_all};

use super::{Error, Manager, Result};
use crate::controller::{Bound, Pass, PassError};
use crate::informer::Cacheable;
use crate::informer::selector::check_labels;
use crate::plan::{Failure, Options, Plan};

/// A controller as a plan runs it.
pub(super) trait Planner: Send + Sync {
    /// The controller's name.
    fn name(&self) -> String;

    /// Its pass over the objects `selector` names.
    fn pass<'a>(
        &'a self,
        selector: Option<&'a str>,
        sync_timeout: Duration,
    ) -> BoxFuture<'a, Result<Pass, PassError>>;
}

impl<K: Cacheable> Planner for Bound<K> {
    fn name(&self) -> String {
        Bound::name(self).to_owned()
    }

    fn pass<'a>(
        &'a self,
        selector: Option<&'a str>,
        sync_timeout: Duration,
    ) -> BoxFuture<'a, Result<Pass, PassError>> {
        Box::pin(self.reconcile_each_once(selector, sync_timeout))
    }
}

impl Manager {
    /// Notes a controller for [`Self::plan`].
    pub(super) fn add_planner(&self, planner: Arc<dyn Planner>) {
        self.planners.lock().push(planner);
    }

    /// Plans instead of running, and returns what the operator would do: see the
    /// [`plan`](crate::plan) module. From now on every write of the manager's client (and of
    /// the clients it handed out) is sent with `dryRun=All`; the informers start, no Lease is
    /// taken, and each controller reconciles each object of its kind once (those `options`
    /// select), all at once. The manager is consumed: its client stays dry.
    ///
    /// Controllers of a controller ring (feature `sharding`) and runnables other than
    /// controllers take no part.
    ///
    /// ```no_run
    /// # #[allow(dead_code)]
    /// # async fn demo(manager: kubeward::manager::Manager) -> Result<(), kubeward::manager::Error> {
    /// use kubeward::plan::Options;
    ///
    /// let plan = manager.plan(Options::default().selector("tier=web")).await?;
    /// print!("{plan}"); // `~ update ConfigMap web/site` and its fields, ..., the summary
    /// std::process::exit(plan.exit_code()); // 0: nothing to do, 2: changes, 1: failures
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidFlags`] for a label selector that does not parse. A controller whose
    /// caches do not sync, or a reconcile that fails, is a [`Failure`] in the plan.
    pub fn plan(self, options: Options) -> impl Future<Output = Result<Plan>> + Send + 'static {
        let plan: BoxFuture<'static, Result<Plan>> = Box::pin(async move {
            if let Some(selector) = &options.selector {
                check_labels(selector)
                    .map_err(|e| Error::InvalidFlags(format!("--selector {selector:?}: {e}")))?;
            }
            self.planning.start();
            let planners: Vec<Arc<dyn Planner>> = self.planners.lock().clone();
            let selector = options.selector.as_deref();
            let passes = planners
                .iter()
                .map(|p| p.pass(selector, options.sync_timeout));
            let passes = join_all(passes).await;
            self.factory.shutdown().await;
            let mut plan = Plan::default();
            for (planner, pass) in planners.iter().zip(passes) {
                let name = planner.name();
                match pass {
                    Ok(pass) => {
                        plan.reconciled += pass.reconciled;
                        plan.paused += pass.paused;
                        plan.failures.extend(
                            (pass.failed.into_iter())
                                .map(|(object, error)| Failure::new(&name, Some(object), error)),
                        );
                    }
                    Err(error) => plan.failures.push(Failure::new(&name, None, chain(&error))),
                }
                plan.controllers.push(name);
            }
            plan.add_writes(self.planning.take_writes());
            plan.events_not_recorded = self.planning.events();
            Ok(plan)
        });
        plan
    }
}

/// An error and its causes, `: `-separated.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
