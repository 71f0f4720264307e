//! A second example operator, of another domain: a `WebApp` runs an image as a Deployment
//! behind a Service, sized from its spec, and reports kubebuilder's `Available` condition.
//!
//! It exercises what the first example does not: two owned kinds, a condition other than
//! `Ready` set from the Deployment's status, a Scaled event from what the apply changed, and a
//! cleanup of both kinds.
//! The objects it owns are spelled out in [`webapp_objects`](crate::webapp_objects), as they
//! would be in any framework.

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Service};
use kubeward::{Error, prelude::*};

use crate::webapp_objects::{deployment, service};

// ANCHOR: crd
/// Runs `image` as `replicas` pods behind a Service on `port`.
#[derive(CustomResource, Controller, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "apps.kubeward.dev", version = "v1", kind = "WebApp")]
#[kube(namespaced, status = "Status", shortname = "wa")]
#[controller(reconciler = WebApps, owns(Deployment, Service), condition = "Available")]
#[controller(finalizer = "apps.kubeward.dev/cleanup", owned_events = true)]
pub struct WebAppSpec {
    /// The container image.
    pub image: String,
    /// How many pods run it.
    pub replicas: i32,
    /// The port it serves on.
    pub port: i32,
}
// ANCHOR_END: crd

/// The reconciler.
#[derive(Clone, Copy, Debug, Default)]
pub struct WebApps;

// ANCHOR: reconciler
impl Reconciler<WebApp> for WebApps {
    type Error = Error;

    async fn reconcile(&self, app: Arc<WebApp>, ctx: &Context<WebApp>) -> Result<Action, Error> {
        let deployment = ctx.apply(&app, deployment(&app)).await?;
        ctx.apply(&app, service(&app)).await?; // Events `Created Deployment web`, ...
        let replicas = app.spec.replicas;
        let was = deployment.previous().and_then(|d| d.spec.replicas);
        if let Some(was) = was.filter(|was| *was != replicas) {
            let note = format!("scaled from {was} to {replicas} replicas");
            ctx.event(&app).normal("Scaled", note);
        }
        let ready = deployment.status.clone().and_then(|s| s.available_replicas);
        let note = format!("{} of {replicas} replicas available", ready.unwrap_or(0));
        ctx.report(&app, ready >= Some(replicas), "Replicas", note)
            .await?;
        Ok(Action::await_change())
    }
}

/// Deletes what the app owns (an Event `Deleted Deployment web`, ...) before the app goes.
impl Cleanup<WebApp> for WebApps {
    async fn cleanup(&self, app: Arc<WebApp>, ctx: &Context<WebApp>) -> Result<(), Error> {
        ctx.prune::<Deployment>(&app, &[]).await?;
        ctx.prune::<Service>(&app, &[]).await?;
        Ok(())
    }
}
// ANCHOR_END: reconciler
