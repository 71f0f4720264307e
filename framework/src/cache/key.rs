//! Identifies a cached object by its namespace and name.

use std::fmt;
use std::sync::Arc;

use kube::Resource;

/// The namespace/name of an object: how the cache and work queues address it.
///
/// Displays as `namespace/name`, or `name` for cluster-scoped objects, like client-go's
/// `MetaNamespaceKeyFunc`. Cloning one is cheap: the cache, its indexes and the work queues
/// share the strings.
#[doc(alias = "MetaNamespaceKeyFunc")]
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    namespace: Option<Arc<str>>,
    name: Arc<str>,
}

impl ObjectKey {
    /// The key of the object `name` in `namespace` (`None` for cluster-scoped objects).
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        Self {
            namespace: namespace.map(Arc::from),
            name: Arc::from(name),
        }
    }

    /// The key of `obj`, from its metadata (an object without a name gets the empty name).
    #[must_use]
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self {
            namespace: meta.namespace.as_deref().map(Arc::from),
            name: Arc::from(meta.name.as_deref().unwrap_or_default()),
        }
    }

    /// The namespace, `None` for cluster-scoped objects.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_display_as_namespace_slash_name_or_just_the_name() {
        assert_eq!(ObjectKey::new(Some("ns"), "a").to_string(), "ns/a");
        assert_eq!(ObjectKey::new(None, "node-1").to_string(), "node-1");
    }
}
