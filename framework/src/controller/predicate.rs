//! Filters which changes of an object trigger a reconcile.

use std::fmt;
use std::sync::Arc;

use kube::Resource;

/// Decides whether a change from `old` to `new` should trigger a reconcile. Adds and deletes
/// always trigger; predicates filter updates (including resyncs, where `old` is `new`).
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeward::controller::Predicate;
///
/// let relevant = Predicate::<ConfigMap>::generation_changed().or(Predicate::labels_changed());
/// # let _ = relevant;
/// ```
pub struct Predicate<K> {
    test: Test<K>,
}

type Test<K> = Arc<dyn Fn(&K, &K) -> bool + Send + Sync>;

impl<K> Clone for Predicate<K> {
    fn clone(&self) -> Self {
        Self {
            test: Arc::clone(&self.test),
        }
    }
}

impl<K> fmt::Debug for Predicate<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Predicate").finish_non_exhaustive()
    }
}

impl<K: Resource + 'static> Predicate<K> {
    /// A predicate from a function of the old and new state. It runs on the controller's own
    /// task for the informer, so a slow one delays only its controller; still, a quick
    /// comparison, never I/O (it would hold a runtime thread).
    pub fn new(test: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        Self {
            test: Arc::new(test),
        }
    }

    /// Passes when `metadata.generation` changed, i.e. the spec changed (status-only writes and
    /// resyncs are filtered out). Objects without a generation always pass.
    #[must_use]
    pub fn generation_changed() -> Self {
        Self::new(
            |old, new| match (old.meta().generation, new.meta().generation) {
                (Some(a), Some(b)) => a != b,
                _ => true,
            },
        )
    }

    /// Passes when the labels changed.
    #[must_use]
    pub fn labels_changed() -> Self {
        Self::new(|old, new| old.meta().labels != new.meta().labels)
    }

    /// Passes when the annotations changed.
    #[must_use]
    pub fn annotations_changed() -> Self {
        Self::new(|old, new| old.meta().annotations != new.meta().annotations)
    }

    /// Passes when the resourceVersion changed: filters out resyncs only.
    #[must_use]
    pub fn resource_version_changed() -> Self {
        Self::new(|old, new| old.meta().resource_version != new.meta().resource_version)
    }

    /// Passes when both pass.
    #[must_use]
    pub fn and(self, other: Self) -> Self {
        Self::new(move |old, new| (self.test)(old, new) && (other.test)(old, new))
    }

    /// Passes when either passes.
    #[must_use]
    pub fn or(self, other: Self) -> Self {
        Self::new(move |old, new| (self.test)(old, new) || (other.test)(old, new))
    }

    /// Whether the update from `old` to `new` passes.
    #[must_use]
    pub fn test(&self, old: &K, new: &K) -> bool {
        (self.test)(old, new)
    }
}

impl<K: Resource + 'static> std::ops::Not for Predicate<K> {
    type Output = Self;

    /// Passes when this one does not.
    fn not(self) -> Self {
        Self::new(move |old, new| !(self.test)(old, new))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn cm(generation: i64, label: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                generation: Some(generation),
                labels: Some([("tier".to_owned(), label.to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn generation_changed_ignores_status_only_updates() {
        let p = Predicate::<ConfigMap>::generation_changed();
        assert!(!p.test(&cm(1, "a"), &cm(1, "b")));
        assert!(p.test(&cm(1, "a"), &cm(2, "a")));
    }

    #[test]
    fn predicates_combine_with_and_or_and_negation() {
        let gen_or_labels =
            Predicate::<ConfigMap>::generation_changed().or(Predicate::labels_changed());
        assert!(gen_or_labels.test(&cm(1, "a"), &cm(1, "b")));
        assert!(!gen_or_labels.test(&cm(1, "a"), &cm(1, "a")));
        let both = Predicate::<ConfigMap>::generation_changed().and(Predicate::labels_changed());
        assert!(!both.test(&cm(1, "a"), &cm(2, "a")));
        assert!(both.test(&cm(1, "a"), &cm(2, "b")));
        assert!((!Predicate::<ConfigMap>::labels_changed()).test(&cm(1, "a"), &cm(2, "a")));
    }
}
