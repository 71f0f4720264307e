//! Reconciles a `@@kind@@`: applies the ConfigMap it asks for and reports it Ready; deletes the
//! ConfigMap when the `@@kind@@` is deleted. Replace the ConfigMap with your domain logic.

use k8s_openapi::api::core::v1::ConfigMap;
use kubeward::prelude::*;

use crate::api::@@module@@::@@kind@@;

/// The reconciler of `@@kind@@`s. It holds nothing: the client comes from the [`Context`].
#[derive(Clone, Copy, Debug, Default)]
pub struct @@kind@@Reconciler;

type Ctx = Context<@@kind@@>;

impl Reconciler<@@kind@@> for @@kind@@Reconciler {
    type Error = kubeward::Error;

    async fn reconcile(&self, object: Arc<@@kind@@>, ctx: &Ctx) -> Result<Action, Self::Error> {
        // Server-side apply of the owned object: owner reference, field manager, no write when
        // nothing changed.
        let name = format!("{}-@@kebab@@", object.name_any());
        let mut config_map = ConfigMap::named(&name);
        config_map.data = Some([("content".to_owned(), object.spec.content.clone())].into());
        ctx.apply(&object, config_map).await?;

        // The `Ready` condition and `observedGeneration`, in one status write when they change.
        let message = format!("ConfigMap {name} holds the content");
        if ctx.succeed(&object, "Applied", message).await?.changed() {
            ctx.event(&object)
                .normal("Applied", format!("applied ConfigMap {name}"));
        }
        Ok(Action::await_change())
    }
}

/// What the finalizer waits for before a deleted `@@kind@@` goes.
impl Cleanup<@@kind@@> for @@kind@@Reconciler {
    async fn cleanup(&self, object: Arc<@@kind@@>, ctx: &Ctx) -> Result<(), Self::Error> {
        for deleted in ctx.prune::<ConfigMap>(&object, &[]).await? {
            ctx.event(&object)
                .normal("Deleted", format!("deleted ConfigMap {}", deleted.name()));
        }
        Ok(())
    }
}
