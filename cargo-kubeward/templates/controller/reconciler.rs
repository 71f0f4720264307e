//! Reconciles `@@kind@@`s (`@@api_version@@`), a kind the API server already serves: this
//! controller reads them and reports what it saw. Replace the event with your domain logic.

use @@type_path@@;
use kubeward::prelude::*;
use kubeward::rbac::Rules;

/// The reconciler of `@@kind@@`s. It holds nothing: the client comes from the [`Context`].
#[derive(Clone, Copy, Debug, Default)]
pub struct @@kind@@Reconciler;

impl Reconciler<@@kind@@> for @@kind@@Reconciler {
    type Error = kubeward::Error;

    async fn reconcile(
        &self,
        object: Arc<@@kind@@>,
        _ctx: &Context<@@kind@@>,
    ) -> Result<Action, Self::Error> {
        let generation = object.metadata.generation.unwrap_or_default();
        tracing::debug!(generation, "seen");
        Ok(Action::await_change())
    }
}

/// The controller, with the RBAC rules `manifests` writes into the chart: read `@@kind@@`s,
/// publish Events.
pub fn controller() -> Controller<@@kind@@> {
    let rules = Rules::new().watched::<@@kind@@>().events().build();
    Controller::new(@@kind@@Reconciler)
        .predicate(Predicate::generation_changed())
        .rbac_rules(rules)
}
