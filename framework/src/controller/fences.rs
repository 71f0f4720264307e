//! Remembers what a controller wrote, so that its next cached read waits for the informer to
//! bring it in.
//!
//! Every write through the [`Context`](super::Context)'s client leaves a mark per resource
//! (`configmaps`, `widgets.example.com`): the resourceVersion the API server returned for the
//! object, or its uid when the delete removed it, and per namespace the newest resourceVersion
//! written there. A read of one object waits for its mark, a list for its namespace's newest
//! version and deletes (see `cache::Fence`). A mark goes once a read has found the store past
//! it; at most [`CAPACITY`] objects are remembered per resource, and one forgotten only lets a
//! read be as stale as without fencing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use kube::api::ObjectMeta;
use parking_lot::Mutex;

use crate::cache::{Fence, NewestPerNamespace, ObjectKey};

/// How many objects per resource keep a mark; past it, an arbitrary one is forgotten.
const CAPACITY: usize = 4096;

/// The marks of one controller's writes not yet seen read back.
#[derive(Debug, Default)]
pub(crate) struct Fences {
    by_resource: Mutex<HashMap<String, Marks>>,
    /// How many resources `by_resource` holds marks of, read without its lock: a read of a
    /// controller with nothing to wait for (most, most of the time) takes no lock. A write's
    /// mark is counted here before the write returns, so a read ordered after it sees it.
    resources: AtomicUsize,
}

#[derive(Debug, Default)]
struct Marks {
    objects: HashMap<ObjectKey, Mark>,
    newest: NewestPerNamespace,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Mark {
    Version(String),
    Gone(String),
}

impl Fences {
    /// Notes that a write of `resource` left the object in the state `meta` describes.
    pub(crate) fn wrote(&self, resource: &str, meta: &ObjectMeta) {
        let (Some(name), Some(version)) = (meta.name.as_deref(), meta.resource_version.as_deref())
        else {
            return;
        };
        let key = ObjectKey::new(meta.namespace.as_deref(), name);
        let mut by_resource = self.by_resource.lock();
        let marks = by_resource.entry(resource.to_owned()).or_default();
        marks.newest.note(meta.namespace.as_deref(), version);
        marks.mark(key, Mark::Version(version.to_owned()));
        self.resources.store(by_resource.len(), Ordering::Release);
    }

    /// Notes that a delete of `resource` removed the object `key` with `uid`.
    pub(crate) fn deleted(&self, resource: &str, key: ObjectKey, uid: &str) {
        let mut by_resource = self.by_resource.lock();
        let marks = by_resource.entry(resource.to_owned()).or_default();
        marks.mark(key, Mark::Gone(uid.to_owned()));
        self.resources.store(by_resource.len(), Ordering::Release);
    }

    /// What a read of the object `key` of `resource` waits for (nothing if not written).
    pub(crate) fn of_object(&self, resource: &str, key: &ObjectKey) -> Vec<Fence> {
        if self.is_empty() {
            return Vec::new();
        }
        let by_resource = self.by_resource.lock();
        let Some(mark) = by_resource.get(resource).and_then(|m| m.objects.get(key)) else {
            return Vec::new();
        };
        vec![fence(key, mark)]
    }

    /// What a list of `resource` in `namespace` waits for (every namespace when `None`): the
    /// newest write of each namespace and every delete.
    pub(crate) fn of_list(&self, resource: &str, namespace: Option<&str>) -> Vec<Fence> {
        if self.is_empty() {
            return Vec::new();
        }
        let by_resource = self.by_resource.lock();
        let Some(marks) = by_resource.get(resource) else {
            return Vec::new();
        };
        let in_scope = |ns: Option<&str>| namespace.is_none() || ns == namespace;
        let versions = marks
            .newest
            .iter()
            .filter(|(ns, _)| in_scope(*ns))
            .map(|(ns, version)| Fence::Namespace {
                namespace: ns.map(str::to_owned),
                version: version.to_owned(),
            });
        let deletes = marks
            .objects
            .iter()
            .filter(|(key, mark)| matches!(mark, Mark::Gone(_)) && in_scope(key.namespace()))
            .map(|(key, mark)| fence(key, mark));
        versions.chain(deletes).collect()
    }

    /// Forgets the marks `fences` stand for, which the store of `resource` has passed (unless
    /// a newer write replaced them meanwhile).
    pub(crate) fn passed(&self, resource: &str, fences: &[Fence]) {
        let mut by_resource = self.by_resource.lock();
        let Some(marks) = by_resource.get_mut(resource) else {
            return;
        };
        for passed in fences {
            match passed {
                Fence::Namespace { namespace, version } => {
                    marks.newest.remove_if(namespace.as_deref(), version);
                }
                Fence::Version { key, .. } | Fence::Gone { key, .. } => {
                    if marks.objects.get(key).map(|mark| fence(key, mark)).as_ref() == Some(passed)
                    {
                        marks.objects.remove(key);
                    }
                }
            }
        }
        if marks.objects.is_empty() && marks.newest.is_empty() {
            by_resource.remove(resource);
            self.resources.store(by_resource.len(), Ordering::Release);
        }
    }

    /// Whether no write is waiting to be read back.
    fn is_empty(&self) -> bool {
        self.resources.load(Ordering::Acquire) == 0
    }
}

impl Marks {
    fn mark(&mut self, key: ObjectKey, mark: Mark) {
        if self.objects.len() >= CAPACITY && !self.objects.contains_key(&key) {
            let any = self.objects.keys().next().cloned();
            if let Some(any) = any {
                self.objects.remove(&any);
            }
        }
        self.objects.insert(key, mark);
    }
}

fn fence(key: &ObjectKey, mark: &Mark) -> Fence {
    match mark {
        Mark::Version(version) => Fence::Version {
            key: key.clone(),
            version: version.clone(),
        },
        Mark::Gone(uid) => Fence::Gone {
            key: key.clone(),
            uid: uid.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(namespace: &str, name: &str, version: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: Some(namespace.into()),
            name: Some(name.into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn a_list_waits_for_the_newest_write_of_its_namespace_and_every_delete() {
        let fences = Fences::default();
        fences.wrote("configmaps", &meta("a", "x", "9"));
        fences.wrote("configmaps", &meta("a", "y", "10"));
        fences.wrote("configmaps", &meta("b", "z", "11"));
        fences.deleted("configmaps", ObjectKey::new(Some("a"), "old"), "u");
        let mut in_a = fences.of_list("configmaps", Some("a"));
        in_a.sort_by_key(|f| format!("{f:?}"));
        assert_eq!(
            in_a,
            [
                Fence::Gone {
                    key: ObjectKey::new(Some("a"), "old"),
                    uid: "u".into()
                },
                Fence::Namespace {
                    namespace: Some("a".into()),
                    version: "10".into()
                },
            ]
        );
        assert_eq!(fences.of_list("configmaps", None).len(), 3);
        assert!(fences.of_list("secrets", None).is_empty());
    }

    #[test]
    fn a_mark_is_forgotten_once_passed_unless_a_newer_write_replaced_it() {
        let fences = Fences::default();
        fences.wrote("configmaps", &meta("a", "x", "9"));
        let key = ObjectKey::new(Some("a"), "x");
        let read = fences.of_object("configmaps", &key);
        fences.wrote("configmaps", &meta("a", "x", "12"));
        fences.passed("configmaps", &read);
        assert_eq!(
            fences.of_object("configmaps", &key),
            [Fence::Version {
                key: key.clone(),
                version: "12".into()
            }]
        );
        let read = fences.of_object("configmaps", &key);
        fences.passed("configmaps", &read);
        assert!(fences.of_object("configmaps", &key).is_empty());
    }
}
