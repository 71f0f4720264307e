//! Reconciles a `Memo`: applies the ConfigMap it asks for and reports it Ready; deletes the
//! ConfigMap when the `Memo` is deleted. Replace the ConfigMap with your domain logic.

use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::prelude::*;

use crate::api::memo::Memo;

/// The reconciler of `Memo`s. It holds nothing: the client comes from the [`Context`].
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoReconciler;

type Ctx = Context<Memo>;

impl Reconciler<Memo> for MemoReconciler {
    type Error = kubeward::Error;

    async fn reconcile(&self, object: Arc<Memo>, ctx: &Ctx) -> Result<Action, Self::Error> {
        // Server-side apply of the owned object: owner reference, field manager, no write when
        // nothing changed.
        let name = format!("{}-memo", object.name_any());
        let mut config_map = ConfigMap::named(&name);
        config_map.data = Some([("content".to_owned(), object.spec.content.clone())].into());
        ctx.apply(&object, config_map).await?;

        let mut status = object.status.clone().unwrap_or_default();
        let message = format!("ConfigMap {name} holds the content");
        status
            .conditions
            .set(Condition::new("Ready", true, "Applied", message));
        if ctx.patch_status(&object, &status).await?.changed() {
            ctx.event(&object)
                .normal("Applied", format!("applied ConfigMap {name}"));
        }
        Ok(Action::await_change())
    }
}

/// What the finalizer waits for before a deleted `Memo` goes.
impl Cleanup<Memo> for MemoReconciler {
    async fn cleanup(&self, object: Arc<Memo>, ctx: &Ctx) -> Result<(), Self::Error> {
        for deleted in ctx.prune::<ConfigMap>(&object, &[]).await? {
            ctx.event(&object)
                .normal("Deleted", format!("deleted ConfigMap {}", deleted.name()));
        }
        Ok(())
    }
}
