//! Turns changes of owned and watched kinds into keys of the controller's kind.

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::api::ObjectMeta;

use super::intake::Intake;
use super::own_writes::{OwnWrites, Target, target_of};
use super::why::{EventType, Reason, Trigger as Why};
use super::{Cacheable, Kind, Watchable};
use crate::cache::ObjectKey;
use crate::informer::{self, CacheScope, Factory, Hints, Registration, SharedInformer, change_fns};

/// Waits until an informer has synced.
pub(crate) type WaitForSync =
    Box<dyn Fn() -> BoxFuture<'static, Result<(), informer::Error>> + Send + Sync>;

/// A trigger once wired to an informer: a wait until that informer has synced; dropping it
/// removes the handler from the shared informer, so a stopped controller's queue gets no more keys.
pub(crate) struct Wired {
    pub(crate) synced: WaitForSync,
    unregister: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl Wired {
    /// Wired to `informer` through `registration`.
    pub(crate) fn new<C: Cacheable>(
        informer: &SharedInformer<C>,
        registration: Registration<C>,
    ) -> Self {
        let synced = informer.clone();
        let owner = informer.clone();
        Self {
            synced: Box::new(move || {
                let informer = synced.clone();
                Box::pin(async move { informer.wait_for_sync().await })
            }),
            unregister: Some(Box::new(move || {
                owner.remove_handler(&registration);
            })),
        }
    }
}

impl Drop for Wired {
    fn drop(&mut self) {
        if let Some(unregister) = self.unregister.take() {
            unregister();
        }
    }
}

/// Wires a trigger to the shared informer of its kind, feeding keys into the controller's intake;
/// states of objects the controller wrote itself ([`OwnWrites`]) trigger nothing.
pub(crate) type Wire =
    Box<dyn FnOnce(&Factory, &CacheScope, &Intake, &Arc<OwnWrites>) -> Wired + Send>;

/// Enqueues the controlling owner of kind `owner` of every changed `C`.
pub(crate) fn owner_trigger<C: Watchable>(owner: Kind) -> Wire {
    Box::new(move |factory, scope, queue, own_writes| {
        let informer = factory.watched::<C>(scope);
        let owners = Arc::new(move |meta: &ObjectMeta| controller_owner(&owner, meta));
        let keys = move |c: &C| owners(c.meta()).into_iter().collect();
        wire(&informer, queue, own_writes, Reason::Owned, keys)
    })
}

/// Enqueues what `mapper` names for every changed `W`.
pub(crate) fn watch_trigger<W: Watchable>(
    mapper: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
) -> Wire {
    Box::new(move |factory, scope, queue, own_writes| {
        let informer = factory.watched::<W>(scope);
        wire(&informer, queue, own_writes, Reason::Watched, mapper)
    })
}

/// Registers the handler that turns changes of `C` into the `keys` it triggers (as `reason`), on the
/// controller's own task for this informer: a mapper, the framework's (an owner reference) or a
/// user's (`watches`), delays only its controller, however slow.
fn wire<C: Watchable>(
    informer: &SharedInformer<C>,
    queue: &Intake,
    own_writes: &Arc<OwnWrites>,
    reason: Reason,
    keys: impl Fn(&C) -> Vec<ObjectKey> + Send + Sync + 'static,
) -> Wired {
    let keys = Arc::new(keys);
    let (on_add, on_update, on_delete) = (Arc::clone(&keys), Arc::clone(&keys), keys);
    let q_delete = queue.clone();
    let (added, updated) = (Arc::clone(own_writes), Arc::clone(own_writes));
    let handler = change_fns()
        .on_add(move |c: Arc<C>, hints: Hints| {
            let why = changed(reason, EventType::Added, c.as_ref(), &hints.key);
            observe(&added, c.as_ref(), on_add(&c), why, &hints);
        })
        .on_update(move |old: Arc<C>, new: Arc<C>, hints: Hints| {
            // Both states' keys, once each: an owner that did not change is one trigger.
            let mut keys = on_update(&old);
            for key in on_update(&new) {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            let why = changed(reason, EventType::Modified, new.as_ref(), &hints.key);
            observe(&updated, new.as_ref(), keys, why, &hints);
        })
        .on_delete(move |deleted| {
            let c = deleted.object();
            let why = changed(
                reason,
                EventType::Deleted,
                c.as_ref(),
                &ObjectKey::of(c.as_ref()),
            );
            for key in on_delete(c) {
                q_delete.add(key, why.clone());
            }
        });
    Wired::new(informer, informer.add_change_handler(handler))
}

/// The trigger a change `event` of `c` (whose key is `key`) is, as `reason`.
fn changed<C: Watchable>(reason: Reason, event: EventType, c: &C, key: &ObjectKey) -> Why {
    let version = c.meta().resource_version.as_deref();
    Why::mapped(reason, event, C::kind(&()), key.clone(), version)
}

/// Hands a change of `c` that would trigger `keys` (as `why`) to the own-writes filter.
fn observe<C: Watchable>(
    own_writes: &OwnWrites,
    c: &C,
    keys: Vec<ObjectKey>,
    why: Why,
    hints: &Hints,
) {
    if hints.coalesced {
        own_writes.trigger_coalesced(&target(c), c.meta(), keys, why);
    } else {
        own_writes.trigger(&target(c), c.meta(), keys, why);
    }
}

/// Which object `c` is, for [`OwnWrites`].
pub(crate) fn target<C: Watchable>(c: &C) -> Target {
    target_of(&C::kind(&()), c.meta())
}

/// The key of the ownerReference with `controller: true` whose kind and group are `owner`'s.
pub(crate) fn controller_owner(owner: &Kind, meta: &ObjectMeta) -> Option<ObjectKey> {
    let (kind, group) = (owner.name(), owner.resource().group.as_str());
    let reference = meta.owner_references.as_ref()?.iter().find(|r| {
        r.controller == Some(true)
            && r.kind == kind
            && r.api_version.rsplit_once('/').map_or("", |(g, _)| g) == group
    })?;
    let namespace = if owner.namespaced() {
        meta.namespace.as_deref()
    } else {
        None
    };
    Some(ObjectKey::new(namespace, &reference.name))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn owned_by(refs: Vec<(&str, &str, &str, bool)>) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("prod".into()),
            owner_references: Some(
                refs.into_iter()
                    .map(|(api_version, kind, name, controller)| OwnerReference {
                        api_version: api_version.into(),
                        kind: kind.into(),
                        name: name.into(),
                        uid: "u".into(),
                        controller: Some(controller),
                        ..OwnerReference::default()
                    })
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn only_the_controlling_owner_of_the_right_kind_and_group_is_enqueued() {
        let meta = owned_by(vec![
            ("apps/v1", "Deployment", "not-controller", false),
            ("other.io/v1", "Deployment", "wrong-group", true),
            ("apps/v1", "Deployment", "web", true),
        ]);
        assert_eq!(
            controller_owner(&Kind::of::<Deployment>(), &meta),
            Some(ObjectKey::new(Some("prod"), "web"))
        );
    }

    #[test]
    fn a_cluster_scoped_owner_has_no_namespace_and_the_core_group_is_empty() {
        let meta = owned_by(vec![("v1", "Namespace", "team-a", true)]);
        assert_eq!(
            controller_owner(&Kind::of::<Namespace>(), &meta),
            Some(ObjectKey::new(None, "team-a"))
        );
    }
}
