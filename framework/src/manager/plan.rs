//! Plans instead of running: each controller reconciles every object once, with dry-run writes.

use futures::future::BoxFuture;

use super::{Error, Manager, Result};
use crate::informer::selector::check_labels;
use crate::plan::{Options, Plan};

impl Manager {
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
    /// caches do not sync, or a reconcile that fails, is a [`Failure`](crate::plan::Failure) in the plan.
    pub fn plan(self, options: Options) -> impl Future<Output = Result<Plan>> + Send + 'static {
        let plan: BoxFuture<'static, Result<Plan>> = Box::pin(async move {
            if let Some(selector) = &options.selector {
                check_labels(selector)
                    .map_err(|e| Error::InvalidFlags(format!("--selector {selector:?}: {e}")))?;
            }
            self.plan.planning.start();
            let mut plan = self.plan.planners.pass(&options).await;
            self.factory.shutdown().await;
            plan.add_writes(self.plan.planning.take_writes());
            plan.events_not_recorded = self.plan.planning.events();
            Ok(plan)
        });
        plan
    }
}
