//! The controllers a plan reconciles, and their passes gathered into one plan.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, join_all};
use parking_lot::Mutex;

use super::dry_run::Planning;
use super::{Failure, Options, Plan};
use crate::controller::{Bound, Pass, PassError};
use crate::informer::Cacheable;

/// A controller as a plan runs it.
pub(crate) trait Planner: Send + Sync {
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

/// The controllers of a manager, for a plan.
#[derive(Default)]
pub(crate) struct Planners(Mutex<Vec<Arc<dyn Planner>>>);

impl std::fmt::Debug for Planners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Planners")
            .field(&self.0.lock().len())
            .finish()
    }
}

impl Planners {
    /// Notes a controller.
    pub(crate) fn add(&self, planner: Arc<dyn Planner>) {
        self.0.lock().push(planner);
    }

    /// Runs every controller's pass over what `options` select, all at once, and gathers what
    /// they reconciled, skipped and failed (the writes come from the dry-run client).
    pub(crate) async fn pass(&self, options: &Options) -> Plan {
        let planners: Vec<Arc<dyn Planner>> = self.0.lock().clone();
        let selector = options.selector.as_deref();
        let passes = planners
            .iter()
            .map(|p| p.pass(selector, options.sync_timeout));
        let passes = join_all(passes).await;
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
                Err(error) => {
                    let error = crate::error::chain(&error);
                    plan.failures.push(Failure::new(&name, None, error));
                }
            }
            plan.controllers.push(name);
        }
        plan
    }
}

/// What a manager keeps for a plan: the switch that makes its clients' writes dry runs (and
/// notes them), and its controllers.
#[derive(Debug)]
pub(crate) struct Planned {
    pub(crate) planning: Arc<Planning>,
    pub(crate) planners: Planners,
}

impl Planned {
    pub(crate) fn new(planning: Arc<Planning>) -> Self {
        Self {
            planning,
            planners: Planners::default(),
        }
    }
}
