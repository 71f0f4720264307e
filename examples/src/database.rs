//! A third example operator, of a stateful domain: a `Database` runs as a StatefulSet, with a
//! volume per replica, behind a headless Service, and reports `Ready`.
//!
//! It shows what the first two do not: a kind whose spec the API server will not let change
//! (a StatefulSet's volume templates), so resizing the storage is a failing apply that lands on the
//! `Ready` condition with the API server's reason, and no finalizer at all: the owned objects carry
//! owner references, and the cluster's garbage collector deletes them with their owner (the tests
//! run the testing kit's collector, as the local control plane has none).
//! The objects it owns are spelled out in [`database_objects`](crate::database_objects).

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Service};
use kubeward::{Error, prelude::*};

use crate::database_objects::{service, stateful_set};

// ANCHOR: crd
/// Runs `image` as `replicas` pods, each with a volume of `storage` (a quantity: `1Gi`).
#[derive(CustomResource, Controller, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "data.kubeward.dev", version = "v1", kind = "Database")]
#[kube(namespaced, status = "Status", shortname = "db")]
#[controller(reconciler = Databases, owns(StatefulSet, Service), owned_events = true)]
pub struct DatabaseSpec {
    /// The database server's image.
    pub image: String,
    /// How many pods run it.
    pub replicas: i32,
    /// The volume each pod gets; fixed once the database exists.
    pub storage: String,
}
// ANCHOR_END: crd

/// The reconciler.
#[derive(Clone, Copy, Debug, Default)]
pub struct Databases;

// ANCHOR: reconciler
impl Reconciler<Database> for Databases {
    type Error = Error;

    async fn reconcile(&self, db: Arc<Database>, ctx: &Context<Database>) -> Result<Action, Error> {
        ctx.apply(&db, service(&db)).await?;
        let set = ctx.apply(&db, stateful_set(&db)).await?; // a new `storage` is refused here
        let ready = set.status.as_ref().and_then(|s| s.ready_replicas);
        let replicas = db.spec.replicas;
        let note = format!("{} of {replicas} replicas ready", ready.unwrap_or(0));
        ctx.report(&db, ready >= Some(replicas), "Replicas", note)
            .await?;
        Ok(Action::await_change())
    }
}
// ANCHOR_END: reconciler
