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
    /// name (the uid precondition fails), is skipped. `&[]` deletes them all, e.g. in a
    /// cleanup. With [`owned_events`](crate::controller::Controller::owned_events) on, each
    /// delete records a Normal Event `Deleted` about `owner` (`Deleted ConfigMap a`).
    ///
    /// On a shard, when `owner` is being deleted and `C` is a kind of the controller's ring,
    /// the objects are listed from the API server (their metadata, in the owner's namespace)
    /// instead of the cache: the sharder moves an owned object to its owner's new shard in a
    /// write of its own, so during a hand-over an owned object may still carry the old shard's
    /// label and be in no cache of this shard. A cleanup then never misses one.
    ///
    /// # Errors
    /// As [`Self::owned`]; [`Error::Forbidden`] naming the missing permission when RBAC
    /// refuses a delete; [`Error::Api`] for any other refusal.
    pub async fn prune<C: Watchable>(
        &self,
        owner: &K,
        keep: &[&str],
    ) -> Result<Vec<ObjectKey>, Error> {
        let moving = owner.meta().deletion_timestamp.is_some() && self.owned_move_with_shard::<C>();
        let targets: Vec<ObjectMeta> = if moving {
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
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
                Err(e) => return Err(fail(e)),
            }
        }
        Ok(deleted)
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
