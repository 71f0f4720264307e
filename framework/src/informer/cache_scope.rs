//! Which objects a manager's informers cache: a set of namespaces, and selectors per kind.
//!
//! An informer over a namespace set is still one informer with one [`Store`](crate::cache::Store):
//! it runs one reflector (list and watch) per namespace, all feeding the same store and the same
//! handlers, and a relist of one namespace replaces only that namespace's objects. So
//! `Context::store`, `Context::lister` and every index read across the whole set as one cache,
//! and the factory shares that informer between everyone asking for the same kind, namespace
//! set and selectors. (The other design, one informer per namespace and a store view reading
//! across them, would have given every handler and index several sources to register with.)

use std::collections::{BTreeMap, BTreeSet};

use kube::Resource;

use super::selector;
use super::{Config, Error, Result, Watchable};

/// A URL path an informer lists and watches, and the namespace it covers when it is one of
/// several (`None`: it alone fills the informer's store).
pub(crate) type Source = (String, Option<String>);

/// Which objects informers cache (controller-runtime's `cache.Options`): every namespace or a
/// set of them (`DefaultNamespaces`), and label and field selectors per kind (`ByObject`).
///
/// Cluster-scoped kinds are always cached cluster-wide; selectors apply to every informer of
/// their kind a manager's controllers use (`owns`, `watches`, `Context::lister`), typed or
/// metadata-only. Selectors are checked when the manager starts ([`Self::check`]).
///
/// ```
/// use k8s_openapi::api::core::v1::Secret;
/// use kubeward::informer::CacheScope;
///
/// let scope = CacheScope::default()
///     .namespaces(["shop", "billing"])
///     .labels::<Secret>("app.kubernetes.io/managed-by=shop-operator");
/// assert!(scope.check().is_ok());
/// ```
#[doc(alias = "cache.Options")]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct CacheScope {
    /// Empty: every namespace.
    namespaces: BTreeSet<String>,
    /// By `(group, kind)`.
    selectors: BTreeMap<(String, String), Selectors>,
}

/// The selectors of one kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Selectors {
    labels: Option<String>,
    fields: Option<String>,
}

impl CacheScope {
    /// Caches namespaced kinds in `namespaces` only (added to any set before); an empty set
    /// means every namespace. A namespace that does not exist yet is watched all the same, and
    /// its objects are cached once it is created.
    pub fn namespaces<I, S>(mut self, namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.namespaces
            .extend(namespaces.into_iter().map(Into::into));
        self
    }

    /// Caches only objects of `K` whose labels match `selector`, e.g. `app=web,tier!=cache`.
    pub fn labels<K: Resource<DynamicType = ()>>(mut self, selector: &str) -> Self {
        self.selectors_mut::<K>().labels = Some(selector.to_owned());
        self
    }

    /// Caches only objects of `K` whose fields match `selector`, e.g. `type=kubernetes.io/tls`.
    pub fn fields<K: Resource<DynamicType = ()>>(mut self, selector: &str) -> Self {
        self.selectors_mut::<K>().fields = Some(selector.to_owned());
        self
    }

    /// This scope's namespaces with the selectors of `other`.
    pub(crate) fn with_selectors_of(mut self, other: &Self) -> Self {
        self.selectors.clone_from(&other.selectors);
        self
    }

    /// The watched namespaces, in order; empty when every namespace is.
    pub fn watched_namespaces(&self) -> impl Iterator<Item = &str> {
        self.namespaces.iter().map(String::as_str)
    }

    /// Checks the namespace names and every selector.
    ///
    /// # Errors
    /// [`Error::InvalidSelector`] naming the kind, the selector and why it does not parse;
    /// [`Error::InvalidNamespace`] for a name Kubernetes would refuse.
    pub fn check(&self) -> Result<()> {
        if let Some(bad) = self
            .namespaces
            .iter()
            .find(|ns| crate::names::dns_label(ns).is_err())
        {
            return Err(Error::InvalidNamespace {
                namespace: bad.clone(),
            });
        }
        for ((group, kind), selectors) in &self.selectors {
            let kind = if group.is_empty() {
                kind.clone()
            } else {
                format!("{kind}.{group}")
            };
            let invalid = |which, selector: &String| {
                let kind = kind.clone();
                let selector = selector.clone();
                move |source| Error::InvalidSelector {
                    which,
                    kind,
                    selector,
                    source,
                }
            };
            if let Some(labels) = &selectors.labels {
                selector::check_labels(labels).map_err(invalid("label", labels))?;
            }
            if let Some(fields) = &selectors.fields {
                selector::check_fields(fields).map_err(invalid("field", fields))?;
            }
        }
        Ok(())
    }

    /// What an informer of `K` lists and watches: for a namespaced kind, one URL path per
    /// watched namespace, with that namespace; else the one cluster-wide path.
    pub(crate) fn sources<K: Watchable>(&self) -> Vec<Source> {
        self.sources_of(K::NAMESPACED, |ns| K::url_path(&(), ns))
    }

    /// As [`Self::sources`], for a kind whose scope and URL paths are known at run time.
    pub(crate) fn sources_of(
        &self,
        namespaced: bool,
        url_path: impl Fn(Option<&str>) -> String,
    ) -> Vec<Source> {
        if namespaced && !self.namespaces.is_empty() {
            self.namespaces
                .iter()
                .map(|ns| (url_path(Some(ns)), Some(ns.clone())))
                .collect()
        } else {
            vec![(url_path(None), None)]
        }
    }

    /// `base` with the selectors set for `K`'s kind, if any.
    pub(crate) fn config_for<K: Resource<DynamicType = ()>>(&self, base: &Config) -> Config {
        let (group, kind) = kind_of::<K>();
        self.config_for_kind(group, kind, base)
    }

    /// `base` with the selectors set for the kind `kind` of `group`, if any, added to its own
    /// (both must match: a shard's selector and the kind's).
    pub(crate) fn config_for_kind(&self, group: String, kind: String, base: &Config) -> Config {
        let both = |own: &Option<String>, more: &str| match own {
            Some(own) => format!("{own},{more}"),
            None => more.to_owned(),
        };
        let mut config = base.clone();
        if let Some(selectors) = self.selectors.get(&(group, kind)) {
            if let Some(labels) = &selectors.labels {
                config = config.labels(&both(&base.label_selector, labels));
            }
            if let Some(fields) = &selectors.fields {
                config = config.fields(&both(&base.field_selector, fields));
            }
        }
        config
    }

    fn selectors_mut<K: Resource<DynamicType = ()>>(&mut self) -> &mut Selectors {
        self.selectors.entry(kind_of::<K>()).or_default()
    }
}

/// `K`'s group and kind, the same for `K` and `PartialObjectMeta<K>`.
fn kind_of<K: Resource<DynamicType = ()>>() -> (String, String) {
    (K::group(&()).into_owned(), K::kind(&()).into_owned())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
    use kube::core::PartialObjectMeta;

    use super::*;

    #[test]
    fn a_namespaced_kind_gets_one_url_per_namespace_and_a_cluster_scoped_one_a_single_url() {
        let urls = |sources: Vec<Source>| -> Vec<String> {
            sources.into_iter().map(|(url, _)| url).collect()
        };
        let scope = CacheScope::default().namespaces(["b", "a", "b"]);
        assert_eq!(
            urls(scope.sources::<ConfigMap>()),
            [
                "/api/v1/namespaces/a/configmaps",
                "/api/v1/namespaces/b/configmaps"
            ]
        );
        assert_eq!(urls(scope.sources::<Namespace>()), ["/api/v1/namespaces"]);
        assert_eq!(
            urls(CacheScope::default().sources::<ConfigMap>()),
            ["/api/v1/configmaps"]
        );
    }

    #[test]
    fn selectors_apply_to_their_kind_typed_or_metadata_only_and_to_no_other() {
        let scope = CacheScope::default()
            .labels::<Secret>("app=web")
            .fields::<Secret>("type=Opaque");
        let base = Config::default();
        for config in [
            scope.config_for::<Secret>(&base),
            scope.config_for::<PartialObjectMeta<Secret>>(&base),
        ] {
            assert_eq!(config.label_selector.as_deref(), Some("app=web"));
            assert_eq!(config.field_selector.as_deref(), Some("type=Opaque"));
        }
        assert_eq!(scope.config_for::<ConfigMap>(&base), base);
    }

    #[test]
    fn an_invalid_selector_is_refused_naming_the_kind_the_selector_and_the_parse_error() {
        let scope = CacheScope::default().labels::<Secret>("app in (web");
        let error = scope.check().expect_err("an unclosed set");
        let Error::InvalidSelector {
            which,
            kind,
            selector,
            source,
        } = &error
        else {
            panic!("not an invalid selector: {error:?}");
        };
        assert_eq!((*which, kind.as_str()), ("label", "Secret"));
        assert_eq!(selector, "app in (web");
        assert!(source.to_string().contains("without its ')'"), "{source}");
        assert_eq!(
            error.to_string(),
            "invalid label selector \"app in (web\" for Secret"
        );
    }

    #[test]
    fn a_namespace_name_kubernetes_would_refuse_is_refused() {
        let error = CacheScope::default()
            .namespaces(["shop", "Not_A_Name"])
            .check()
            .expect_err("an invalid name");
        assert!(error.to_string().contains("\"Not_A_Name\""), "{error}");
    }
}
