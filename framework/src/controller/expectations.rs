//! Holds an owner's next reconcile back until the cache has seen the objects its last reconcile
//! created with `generateName`, wrote as their controller or deleted.
//!
//! A fenced read waits for a write it can name: an object at a resourceVersion, a namespace's
//! newest version. Some writes a reconcile cannot look up by name afterwards: a create with
//! `generateName` (the API server picks the name) and the deletes of owned objects, which a
//! reconcile finds again through a selector, an index or the store itself, reads no fence
//! covers; nor does `ctx.owned`, an index look-up that does not wait, so the writes of objects
//! the owner controls are expected too. So, as client-go's `ControllerExpectations` and JOSDK's
//! `ExpectationManager`, the controller remembers those writes per owner (the object whose
//! reconcile made them, known from the task it runs on) and, before it reconciles that owner
//! again, waits until the owned kind's informer has seen each of them: the written object at its
//! resourceVersion (or anything newer in its namespace), the deleted uid gone or marked for
//! deletion. The wait is woken by the informer's store, lasts at most the controller's
//! read-your-writes timeout counted from the last write, and then the reconcile goes ahead and
//! `kubeward_expectations_timeouts_total` counts what was not seen. The key stays the worker's
//! meanwhile: changes arriving for it are queued behind, never dropped.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use kube::api::ObjectMeta;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::cache::{Fence, ObjectKey, Waited};
use crate::informer::Factory;
use crate::metrics::ExpectationMetrics;

tokio::task_local! {
    /// The object whose reconcile runs on this task: the owner of the writes it makes.
    static OWNER: ObjectKey;
}

/// Runs `reconcile`, the reconcile of `owner`, so that the writes it makes are expected of
/// `owner` (writes from tasks it spawns are not).
pub(crate) async fn reconciling<F: Future>(owner: ObjectKey, reconcile: F) -> F::Output {
    OWNER.scope(owner, reconcile).await
}

/// The writes a controller's reconciles made and its caches have not shown yet, by owner.
#[derive(Debug)]
pub(crate) struct Expectations {
    /// The controller's own kind, as fences name it: deleting the owner itself is no expectation.
    own_resource: String,
    timeout: Duration,
    pending: Mutex<HashMap<ObjectKey, Pending>>,
    /// How many owners `pending` holds, read without its lock: a reconcile of a controller
    /// that expects nothing (most, most of the time) takes no lock.
    owners: AtomicUsize,
    metrics: ExpectationMetrics,
}

#[derive(Debug)]
struct Pending {
    /// When the owner's next reconcile stops waiting: the timeout after its last write.
    deadline: Instant,
    expected: Vec<Expected>,
}

#[derive(Debug)]
struct Expected {
    /// `plural` or `plural.group`.
    resource: String,
    /// What the resource's cache shows once it has seen the write.
    seen: Fence,
}

impl Expectations {
    /// Expectations of the controller of `own_resource`, waited for at most `timeout`.
    pub(crate) fn new(own_resource: &str, timeout: Duration, metrics: ExpectationMetrics) -> Self {
        Self {
            own_resource: own_resource.to_owned(),
            timeout,
            pending: Mutex::new(HashMap::new()),
            owners: AtomicUsize::new(0),
            metrics,
        }
    }

    /// Notes a write of `resource` the API server answered with `meta`, made during a
    /// reconcile: expected when it was a create with `generateName` (`create`), or when the
    /// object has the reconciled object as its controller owner (what `ctx.owned` finds, with
    /// no fence of its own).
    pub(crate) fn wrote(&self, resource: &str, meta: &ObjectMeta, create: bool) {
        let (Some(name), Some(version)) = (meta.name.as_deref(), meta.resource_version.as_deref())
        else {
            return;
        };
        let generated = create && meta.generate_name.as_deref().is_some_and(|g| !g.is_empty());
        let controller = (meta.owner_references.iter().flatten())
            .find(|owner| owner.controller == Some(true))
            .map(|owner| owner.name.as_str());
        let owned = controller.is_some_and(|controller| {
            OWNER.try_with(|owner| owner.name() == controller) == Ok(true)
        });
        if generated || owned {
            let key = ObjectKey::new(meta.namespace.as_deref(), name);
            self.expect(
                resource,
                Fence::Version {
                    key,
                    version: version.to_owned(),
                },
            );
        }
    }

    /// Notes a delete of `resource` made during a reconcile, once `seen` is what its cache
    /// shows (the uid gone, or the object marked for deletion at a version); a reconcile
    /// deleting its own object expects nothing.
    pub(crate) fn deleted(&self, resource: &str, seen: Fence) {
        let key = match &seen {
            Fence::Version { key, .. } | Fence::Gone { key, .. } => key,
            Fence::Namespace { .. } => return,
        };
        let own = resource == self.own_resource && OWNER.try_with(|owner| owner == key) == Ok(true);
        if !own {
            self.expect(resource, seen);
        }
    }

    fn expect(&self, resource: &str, seen: Fence) {
        let Ok(owner) = OWNER.try_with(ObjectKey::clone) else {
            return;
        };
        let deadline = Instant::now() + self.timeout;
        let mut pending = self.pending.lock();
        let of_owner = pending.entry(owner).or_insert_with(|| Pending {
            deadline,
            expected: Vec::new(),
        });
        of_owner.deadline = deadline;
        of_owner.expected.push(Expected {
            resource: resource.to_owned(),
            seen,
        });
        self.owners.store(pending.len(), Ordering::Release);
        self.metrics.pending.inc();
    }

    /// Whether no owner expects anything: then neither [`settle`](Self::settle) nor
    /// [`forget`](Self::forget) has anything to do. The expectations a reconcile recorded are
    /// seen here by the owner's next reconcile, which the work queue's lock orders after it.
    pub(crate) fn is_empty(&self) -> bool {
        self.owners.load(Ordering::Acquire) == 0
    }

    /// How many creates and deletes of `owner` are expected.
    #[cfg(test)]
    pub(crate) fn pending(&self, owner: &ObjectKey) -> usize {
        self.pending
            .lock()
            .get(owner)
            .map_or(0, |p| p.expected.len())
    }

    /// Waits until `factory`'s caches have seen every create and delete expected of `owner`,
    /// or its deadline passed, and forgets them; says whether it had to wait. A write of a kind
    /// no informer caches is not waited for.
    ///
    /// # Cancel safety
    /// Cancel safe: the expectations are forgotten either way, as after a timeout (uncounted).
    pub(crate) async fn settle(&self, factory: &Factory, owner: &ObjectKey) -> bool {
        let Some(pending) = self.take(owner) else {
            return false;
        };
        let mut by_cache: HashMap<(String, Option<String>), Vec<Fence>> = HashMap::new();
        for expected in pending.expected {
            let namespace = namespace_of(&expected.seen).map(str::to_owned);
            let fences = by_cache.entry((expected.resource, namespace)).or_default();
            fences.push(expected.seen);
        }
        let (mut unseen, mut waited_any) = (0, false);
        for ((resource, namespace), fences) in by_cache {
            let count = fences.len() as u64;
            let left = pending.deadline.saturating_duration_since(Instant::now());
            let waited = factory
                .wait_for(&resource, namespace.as_deref(), fences, left)
                .await;
            waited_any |= matches!(waited, Some(Waited::CaughtUp | Waited::TimedOut));
            if waited == Some(Waited::TimedOut) {
                tracing::debug!(
                    resource,
                    owner = %owner,
                    "the cache did not show our own creates or deletes in time; reconciling anyway"
                );
                unseen += count;
            }
        }
        self.metrics.timeouts.inc_by(unseen);
        waited_any
    }

    /// Forgets what is expected of `owner` (it is gone: nothing will reconcile it again).
    pub(crate) fn forget(&self, owner: &ObjectKey) {
        let _ = self.take(owner);
    }

    fn take(&self, owner: &ObjectKey) -> Option<Pending> {
        if self.is_empty() {
            return None;
        }
        let mut all = self.pending.lock();
        let pending = all.remove(owner)?;
        self.owners.store(all.len(), Ordering::Release);
        drop(all);
        let count = i64::try_from(pending.expected.len()).unwrap_or(i64::MAX);
        self.metrics.pending.sub(count);
        Some(pending)
    }
}

fn namespace_of(fence: &Fence) -> Option<&str> {
    match fence {
        Fence::Version { key, .. } | Fence::Gone { key, .. } => key.namespace(),
        Fence::Namespace { namespace, .. } => namespace.as_deref(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn metrics() -> ExpectationMetrics {
        let metrics = crate::metrics::Metrics::new(&prometheus::Registry::new());
        metrics
            .expect("invariant: a fresh registry has no families")
            .expectations("test")
    }

    fn written(name: &str, generate_name: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            generate_name: generate_name.map(Into::into),
            resource_version: Some("7".into()),
            ..ObjectMeta::default()
        }
    }

    #[tokio::test]
    async fn only_generated_creates_owned_writes_and_deletes_made_while_reconciling_are_expected() {
        let metrics = metrics();
        let expectations = Expectations::new("widgets", Duration::from_secs(5), metrics.clone());
        let owner = ObjectKey::new(Some("ns"), "w");
        expectations.wrote("configmaps", &written("copy-x1", Some("copy-")), true);
        assert_eq!(
            expectations.pending(&owner),
            0,
            "no reconcile runs: no owner"
        );
        reconciling(owner.clone(), async {
            expectations.wrote("configmaps", &written("copy-x1", Some("copy-")), true);
            expectations.wrote("configmaps", &written("named", None), true);
            expectations.wrote("configmaps", &written("copy-x1", Some("copy-")), false);
            let mut controlled = written("owned", None);
            controlled.owner_references = Some(vec![OwnerReference {
                controller: Some(true),
                name: "w".into(),
                ..OwnerReference::default()
            }]);
            expectations.wrote("configmaps", &controlled, false);
            expectations.deleted(
                "configmaps",
                Fence::Gone {
                    key: ObjectKey::new(Some("ns"), "old"),
                    uid: "u".into(),
                },
            );
            expectations.deleted(
                "widgets",
                Fence::Gone {
                    key: owner.clone(),
                    uid: "self".into(),
                },
            );
        })
        .await;
        assert_eq!(expectations.pending(&owner), 3);
        assert_eq!(metrics.pending.get(), 3);
        expectations.forget(&owner);
        assert_eq!(metrics.pending.get(), 0);
    }
}
