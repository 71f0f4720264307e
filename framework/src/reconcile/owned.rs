//! Finds the objects a reconciled object controls in the cache, and deletes those no longer wanted.

use std::sync::Arc;

use kube::Resource;
use kube::api::{DeleteParams, Preconditions};
use kube::core::Request;

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
        let uid = owner
            .meta()
            .uid
            .as_deref()
            .ok_or_else(|| Error::Incomplete {
                kind: self.kind().name().to_owned(),
                name: owner.meta().name.clone().unwrap_or_default(),
                missing: "metadata.uid",
            })?;
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
    /// cleanup.
    ///
    /// # Errors
    /// As [`Self::owned`]; [`Error::Forbidden`] naming the missing permission when RBAC
    /// refuses a delete; [`Error::Api`] for any other refusal.
    pub async fn prune<C: Watchable>(
        &self,
        owner: &K,
        keep: &[&str],
    ) -> Result<Vec<ObjectKey>, Error> {
        let mut deleted = Vec::new();
        for obj in self.owned::<C>(owner)? {
            let meta = obj.meta();
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
                Ok(_) => deleted.push(ObjectKey::new(namespace, name)),
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
                Err(e) => return Err(fail(e)),
            }
        }
        Ok(deleted)
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
    obj.meta()
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
        .collect()
}
