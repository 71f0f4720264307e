//! A second example operator, of another domain: a `WebApp` runs an image as a Deployment
//! behind a Service, sized from its spec, and reports kubebuilder's `Available` condition.
//!
//! It exercises what the first example does not: two owned kinds, a condition other than
//! `Ready`, events on create and scale from what each write did, and a cleanup of both kinds.
//! The objects it owns are spelled out in [`webapp_objects`](crate::webapp_objects), as they
//! would be in any framework.

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Service};
use kubeward::reconcile::Operation::{Created, Updated};
use kubeward::{Error, prelude::*};

use crate::webapp_objects::{deployment, service};

// ANCHOR: crd
/// Runs `image` as `replicas` pods behind a Service on `port`.
#[derive(CustomResource, Controller, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "apps.kubeward.dev", version = "v1", kind = "WebApp")]
#[kube(namespaced, status = "WebAppStatus", shortname = "wa")]
#[controller(reconciler = WebApps, owns(Deployment, Service), condition = "Available")]
#[controller(finalizer = "apps.kubeward.dev/cleanup")]
pub struct WebAppSpec {
    /// The container image.
    pub image: String,
    /// How many pods run it.
    pub replicas: i32,
    /// The port it serves on.
    pub port: i32,
}

/// What the operator observed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct WebAppStatus {
    /// The replicas asked for when last reconciled.
    pub replicas: i32,
    /// `Available` when every replica is.
    pub conditions: Conditions,
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
        let service = ctx.apply(&app, service(&app)).await?;
        if deployment.operation() == Created || service.operation() == Created {
            ctx.event(&app).normal("Created", "created its objects");
        }
        let (mut status, replicas) = (app.status.clone().unwrap_or_default(), app.spec.replicas);
        if deployment.operation() == Updated && status.replicas != replicas {
            let note = format!("scaled from {} to {replicas} replicas", status.replicas);
            ctx.event(&app).normal("Scaled", note);
        }
        let ready = deployment.status.clone().and_then(|s| s.available_replicas);
        let note = format!("{} of {replicas} replicas available", ready.unwrap_or(0));
        let available = Condition::new("Available", ready >= Some(replicas), "Replicas", note);
        status.replicas = replicas;
        status.conditions.set(available);
        ctx.patch_status(&app, &status).await?;
        Ok(Action::await_change())
    }
}

/// Deletes what the app owns, with an event, before the app goes.
impl Cleanup<WebApp> for WebApps {
    async fn cleanup(&self, app: Arc<WebApp>, ctx: &Context<WebApp>) -> Result<(), Error> {
        let n = ctx.prune::<Deployment>(&app, &[]).await?.len();
        let n = n + ctx.prune::<Service>(&app, &[]).await?.len();
        ctx.event(&app).normal("Deleted", format!("deleted {n}"));
        Ok(())
    }
}
// ANCHOR_END: reconciler
