//! Server-side applies an object the reconciled object owns, skipping the write when the cache
//! shows nothing would change.

use std::sync::Arc;

use http_body_util::BodyExt as _;
use kube::Resource;
use kube::api::{Patch, PatchParams};
use kube::core::Request;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::diff::{applied_fields_within, changed, covers};
use super::{Error, Operation, Written};
use crate::controller::{Context, Watchable, target};

impl<K: Resource> Context<K> {
    /// Server-side applies `child` as an object that `owner` controls, and returns it as the API
    /// server (or the cache) has it, with what the apply did: [`Operation::Created`] (the API
    /// server answered 201), [`Operation::Updated`], or [`Operation::Unchanged`] (no request
    /// was sent, or the API server kept the object's resourceVersion).
    ///
    /// The apply uses the controller's name as field manager and forces conflicts (the
    /// controller owns what it applies). `owner` becomes the child's controller owner
    /// reference, so changes to the child reconcile the owner (with
    /// [`owns`](crate::controller::Controller::owns)) and Kubernetes' garbage collector deletes
    /// it with the owner. The reference sets `blockOwnerDeletion`, as controller-runtime does: a
    /// foreground deletion of the owner waits for the child, and where the API server enforces
    /// owner-reference permissions the controller needs `update` on the owner's `finalizers`
    /// (which the derive's RBAC rules grant). A namespaced child without a namespace goes in the
    /// owner's. On a shard of a controller ring, a child of a kind the controller owns gets the
    /// owner's shard label, where the sharder would put it, so it is in the shard's cache from
    /// its first version on (see [`sharding`](crate::sharding)). With
    /// [`owned_events`](crate::controller::Controller::owned_events) on, a create or an update
    /// records a Normal Event about `owner`: `Created` or `Updated`, noting `Created Deployment
    /// web`. The returned [`Written::previous`] is the cached object an update changed.
    ///
    /// **No request is sent when nothing would change**: when the controller's cache of `C`
    /// (the informer it has because it owns `C`) holds the child with every field `child` sets
    /// at the same value (labels, annotations and owner references included), and — if the
    /// cache keeps `managedFields` — the controller's last apply set no field that `child` now
    /// leaves out. A kind the controller does not cache is always applied.
    ///
    /// # Errors
    /// [`Error::Incomplete`] when `child` has no name (or no namespace, under a cluster-scoped
    /// owner) or `owner` has no uid; [`Error::Forbidden`] naming the missing permission when
    /// RBAC refuses the patch; [`Error::Api`] for any other refusal.
    pub async fn apply<C>(&self, owner: &K, mut child: C) -> Result<Written<C>, Error>
    where
        C: Watchable + Serialize,
    {
        let owner_kind = self.kind();
        let mut owner_ref = owner_kind
            .controller_owner_ref(owner.meta())
            .ok_or_else(|| Error::Incomplete {
                kind: owner_kind.name().to_owned(),
                name: owner.meta().name.clone().unwrap_or_default(),
                missing: "metadata.uid",
            })?;
        // As controller-runtime's `SetControllerReference`: a foreground deletion of the owner
        // waits for the child.
        owner_ref.block_owner_deletion = Some(true);
        let meta = child.meta_mut();
        let name = meta
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| incomplete::<C>(None, "metadata.name"))?;
        let namespace = if C::NAMESPACED {
            if meta.namespace.is_none() {
                meta.namespace.clone_from(&owner.meta().namespace);
            }
            let namespace = meta.namespace.clone();
            Some(namespace.ok_or_else(|| incomplete::<C>(Some(&name), "metadata.namespace"))?)
        } else {
            None
        };
        let references = meta.owner_references.get_or_insert_with(Vec::new);
        references.retain(|r| r.uid != owner_ref.uid);
        references.push(owner_ref);
        self.label_with_shard::<C>(owner.meta(), meta);

        let desired = serde_json::to_value(&child).map_err(|source| Error::Json {
            what: format!("{} {name}", C::kind(&())),
            source,
        })?;
        let cached = self.cached::<C>(namespace.as_deref(), &name);
        if let Some(cached) = &cached {
            let have = serde_json::to_value(cached.as_ref()).map_err(|source| Error::Json {
                what: format!("the cached {} {name}", C::kind(&())),
                source,
            })?;
            if covers(&have, &desired) && applied_fields_within(&have, self.name(), &desired) {
                return Ok(Written::new(Arc::clone(cached), Operation::Unchanged));
            }
            // For the flight recorder: what this apply changes.
            if let Some(diff) = changed(&have, &desired) {
                crate::controller::note_diff(&diff.to_string());
            }
        }

        let params = PatchParams::apply(self.name()).force();
        let fail = |e: kube::Error| {
            if refuses_owner_finalizers(&e) {
                let owner_meta = owner.meta();
                let owner_name = owner_meta.name.as_deref().unwrap_or_default();
                let owner_ns = owner_meta.namespace.as_deref();
                let owners = owner_kind.resource();
                return Error::request_on(
                    owners,
                    "update",
                    Some("finalizers"),
                    owner_ns,
                    owner_name,
                    e,
                );
            }
            Error::request::<C>("patch", None, namespace.as_deref(), &name, e)
        };
        let request = Request::new(C::url_path(&(), namespace.as_deref()))
            .patch(&name, &params, &Patch::Apply(&desired))
            .map_err(|e| fail(kube::Error::BuildRequest(e)))?;
        // Its watch event brings back what this reconcile already knows: no reason to run again.
        let ticket = self.own_writes().begin(target(&child));
        let (applied, created): (C, bool) = send(&self.client(), request).await.map_err(fail)?;
        // The answer is a state an earlier reconcile wrote, its echo not in the cache yet.
        let written_before = self.own_writes().wrote(applied.meta());
        ticket.finish(applied.meta());
        let kept = |cached: &Arc<C>| {
            let version = |meta: &kube::api::ObjectMeta| meta.resource_version.clone();
            cached.meta().uid == applied.meta().uid
                && version(cached.meta()) == version(applied.meta())
        };
        let operation = match &cached {
            _ if created => Operation::Created,
            _ if written_before => Operation::Unchanged,
            Some(cached) if kept(cached) => Operation::Unchanged,
            _ => Operation::Updated,
        };
        if self.reporting().owned_events && operation != Operation::Unchanged {
            let did = if created { "Created" } else { "Updated" };
            let note = format!("{did} {} {name}", C::kind(&()));
            self.event(owner).action("Apply").normal(did, note);
        }
        let previous = cached.filter(|_| operation == Operation::Updated);
        Ok(Written::new(Arc::new(applied), operation).with_previous(previous))
    }
}

/// Sends `request` and reads the object the API server answers with, and whether it created it
/// (201 Created, where an update answers 200); a refusal is the `kube::Error::Api` of its status.
async fn send<C: DeserializeOwned>(
    client: &kube::Client,
    request: http::Request<Vec<u8>>,
) -> Result<(C, bool), kube::Error> {
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let code = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    if code.is_client_error() || code.is_server_error() {
        let status = serde_json::from_slice::<kube::core::Status>(&body).unwrap_or_else(|_| {
            let text = String::from_utf8_lossy(&body);
            kube::core::Status::failure(text.trim(), "Unknown").with_code(code.as_u16())
        });
        return Err(kube::Error::Api(status.boxed()));
    }
    let object = serde_json::from_slice(&body).map_err(kube::Error::SerdeError)?;
    Ok((object, code == http::StatusCode::CREATED))
}

/// Whether the API server refused the owner reference's `blockOwnerDeletion`: with the
/// `OwnerReferencesPermissionEnforcement` admission plugin, setting it needs `update` on the
/// owner's `finalizers` subresource, not only the patch of the child.
fn refuses_owner_finalizers(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status)
        if status.code == 403 && status.message.contains("blockOwnerDeletion")
            && status.message.contains("finalizers"))
}

fn incomplete<C: Resource<DynamicType = ()>>(name: Option<&str>, missing: &'static str) -> Error {
    Error::Incomplete {
        kind: C::kind(&()).into_owned(),
        name: name.unwrap_or_default().to_owned(),
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden(message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "Forbidden")
                .with_code(403)
                .boxed(),
        )
    }

    #[test]
    fn only_the_admission_refusal_of_block_owner_deletion_blames_the_owner_finalizers() {
        // The message of kube-apiserver's OwnerReferencesPermissionEnforcement plugin (v1.20),
        // which names neither the verb nor the resource it lacks.
        let refused = forbidden(
            "configmaps \"a\" is forbidden: cannot set blockOwnerDeletion if an ownerReference \
             refers to a resource you can't set finalizers on: , <nil>",
        );
        assert!(refuses_owner_finalizers(&refused));
        let rbac = forbidden(
            "configmaps \"a\" is forbidden: User \"u\" cannot patch resource \"configmaps\"",
        );
        assert!(!refuses_owner_finalizers(&rbac));
    }
}
