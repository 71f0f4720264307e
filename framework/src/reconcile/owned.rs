//! Finds the objects a reconciled object controls in the cache, and deletes those no longer wanted.

use std::sync::Arc;

use kube::Resource;
use kube::api::{DeleteParams, ListParams, ObjectList, Preconditions};
use kube::core::{ObjectMeta, PartialObjectMeta, Request};

use super::Error;
use crate::cache::ObjectKey;
use crate::controller::Context;
use crate::informer::{SharedInformer, Watchable};
use crate::metrics::ReadSource;

/// The index the kit adds to the cache of an owned kind: each object's controller owner's uid.
const CONTROLLER_UID_INDEX: &str = "kubeward.dev/controller-uid";

impl<K: Resource> Context<K> {
    /// The cached objects of `C` that `owner` controls (an owner reference to it with
    /// `controller: true`), found through an index on the controller's uid, without a request.
    ///
    /// # Errors
    /// [`Error::NotCached`] when the controller keeps no cache of `C` (declare that it owns
    /// `C`); [`Error::Incomplete`] when `owner` has no uid.
    pub fn owned<C: Watchable>(&self, owner: &K) -> Result<Vec<Arc<C>>, Error> {
        let uid = self.owner_uid(owner)?;
        let informer = self.informer_of::<C>().ok_or_else(|| Error::NotCached {
            kind: C::kind(&()).into_owned(),
        })?;
        let store = informer.store();
        if store.index_keys(CONTROLLER_UID_INDEX, uid).is_err() {
            // Added on first use and filled from what is cached; a concurrent first use may
            // have added it already, which is as good.
            let _ = informer.add_index(CONTROLLER_UID_INDEX, controller_uid::<C>);
        }
        Ok(store
            .by_index(CONTROLLER_UID_INDEX, uid)
            .unwrap_or_default())
    }

    /// Deletes the objects of `C` that `owner` controls (per the cache, see [`Self::owned`])
    /// whose names are not in `keep`: what the reconcile no longer produces. Returns the keys
    /// of those it deleted; one already gone (404), or replaced by a new object of the same
    /// name (the uid precondition fails, and a look-up finds another uid), is skipped; a
    /// conflict on an object that still has its uid is an error, so the reconcile is retried. `&[]` deletes them all, e.g. in a
    /// cleanup. With [`owned_events`](crate::controller::Controller::owned_events) on, each
    /// delete records a Normal Event `Deleted` about `owner` (`Deleted ConfigMap a`).
    ///
    /// When `owner` is being deleted (a cleanup, after which its finalizer comes off), the
    /// objects are listed from the API server (their metadata, in the owner's namespace)
    /// instead of the cache, so that a cleanup never misses one: an informer in a watch's
    /// backoff may not hold yet what the last reconcile created (a seeded simulation of the
    /// `WebApp` example found it), and on a shard the sharder moves an owned object to its
    /// owner's new shard in a write of its own, so during a hand-over it may still carry the
    /// old shard's label and be in no cache of this shard.
    ///
    /// # Errors
    /// As [`Self::owned`]; [`Error::Forbidden`] naming the missing permission when RBAC
    /// refuses a delete; [`Error::Api`] for any other refusal.
    pub async fn prune<C: Watchable>(
        &self,
        owner: &K,
        keep: &[&str],
    ) -> Result<Vec<ObjectKey>, Error> {
        let targets: Vec<ObjectMeta> = if owner.meta().deletion_timestamp.is_some() {
            self.owned_on_server::<C>(owner).await?
        } else {
            let cached = self.owned::<C>(owner)?;
            cached.iter().map(|obj| obj.meta().clone()).collect()
        };
        let mut deleted = Vec::new();
        for meta in &targets {
            let name = meta.name.as_deref().unwrap_or_default();
            if keep.contains(&name) {
                continue;
            }
            let namespace = meta.namespace.as_deref();
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: meta.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            let fail = |e| Error::request::<C>("delete", None, namespace, name, e);
            let request = Request::new(C::url_path(&(), namespace))
                .delete(name, &params)
                .map_err(|e| fail(kube::Error::BuildRequest(e)))?;
            match self.client().request_text(request).await {
                Ok(_) => {
                    if self.reporting().owned_events {
                        let note = format!("Deleted {} {name}", C::kind(&()));
                        self.event(owner).action("Prune").normal("Deleted", note);
                    }
                    deleted.push(ObjectKey::new(namespace, name));
                }
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    // The uid precondition failed: the object was replaced, unless it still
                    // carries the uid asked for (a conflict of another cause), then retried.
                    if self.still_there::<C>(meta).await? {
                        return Err(fail(kube::Error::Api(status)));
                    }
                }
                Err(e) => return Err(fail(e)),
            }
        }
        Ok(deleted)
    }

    /// Whether the object `meta` describes is still on the API server with the same uid.
    async fn still_there<C: Watchable>(&self, meta: &ObjectMeta) -> Result<bool, Error> {
        let (namespace, name) = (
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
        );
        let fail = |e| Error::request::<C>("get", None, namespace, name, e);
        let request = Request::new(C::url_path(&(), namespace))
            .get_metadata(name, &kube::api::GetParams::default())
            .map_err(|e| fail(kube::Error::BuildRequest(e)))?;
        match self.client().request::<PartialObjectMeta<C>>(request).await {
            Ok(found) => Ok(found.metadata.uid == meta.uid),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(e) => Err(fail(e)),
        }
    }

    /// The uid of `owner`, which its owned objects' owner references name.
    fn owner_uid<'o>(&self, owner: &'o K) -> Result<&'o str, Error> {
        owner
            .meta()
            .uid
            .as_deref()
            .ok_or_else(|| Error::Incomplete {
                kind: self.kind().name().to_owned(),
                name: owner.meta().name.clone().unwrap_or_default(),
                missing: "metadata.uid",
            })
    }

    /// The metadata of the objects of `C` that `owner` controls, listed from the API server in
    /// the owner's namespace (all namespaces for a cluster-scoped owner), 500 at a time.
    async fn owned_on_server<C: Watchable>(&self, owner: &K) -> Result<Vec<ObjectMeta>, Error> {
        let uid = self.owner_uid(owner)?;
        let namespace = owner.meta().namespace.as_deref();
        let fail = |e| Error::request::<C>("list", None, namespace, "", e);
        let mut params = ListParams::default().limit(500);
        let mut found = Vec::new();
        loop {
            let request = Request::new(C::url_path(&(), namespace))
                .list_metadata(&params)
                .map_err(|e| fail(kube::Error::BuildRequest(e)))?;
            let page: ObjectList<PartialObjectMeta<C>> =
                self.client().request(request).await.map_err(fail)?;
            self.count_read::<C>(ReadSource::Api);
            found.extend(
                page.items
                    .into_iter()
                    .map(|obj| obj.metadata)
                    .filter(|meta| controller_uid_of(meta).any(|owner| owner == uid)),
            );
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => params = params.continue_token(&next),
                None => return Ok(found),
            }
        }
    }

    /// The object of `C` with this namespace and name in the controller's cache of `C`.
    pub(super) fn cached<C: Watchable>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Arc<C>> {
        let informer = self.informer_of::<C>()?;
        self.count_read::<C>(ReadSource::Cache);
        informer.store().get(&ObjectKey::new(namespace, name))
    }

    /// The informer of `C` the controller's manager already runs for what it caches (one the
    /// controller owns or watches); never makes one.
    fn informer_of<C: Watchable>(&self) -> Option<SharedInformer<C>> {
        self.factory().watched_existing::<C>(self.scope())
    }
}

fn controller_uid<C: Resource>(obj: &C) -> Vec<String> {
    controller_uid_of(obj.meta()).map(str::to_owned).collect()
}

/// The uid of each owner reference of `meta` with `controller: true` (at most one, if valid).
fn controller_uid_of(meta: &ObjectMeta) -> impl Iterator<Item = &str> {
    meta.owner_references
        .iter()
        .flatten()
        .filter(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}
