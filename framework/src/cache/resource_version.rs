//! Orders resourceVersions: as integers where both parse, otherwise only by equality.
//!
//! A resourceVersion is opaque by contract, but every API server in use (etcd's revision) hands
//! out decimal integers that grow with every write, and client-go's staleness mitigation
//! (KEP-5647) compares them as such. A version that does not parse can only be compared for
//! equality: then a cache is not known to lag, and a fenced read does not wait for it.

use std::cmp::Ordering;
use std::collections::HashMap;

/// How `a` compares to `b`: numerically when both parse as integers, `Equal` for equal strings,
/// `None` when the order cannot be told.
#[must_use]
pub(crate) fn compare(a: &str, b: &str) -> Option<Ordering> {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => Some(a.cmp(&b)),
        _ => (a == b).then_some(Ordering::Equal),
    }
}

/// Whether a store that has seen `have` has passed `want`: `have` is `want` or newer, or the two
/// cannot be ordered (then nothing says the store lags, and waiting could last forever).
#[must_use]
pub(crate) fn has_passed(have: &str, want: &str) -> bool {
    compare(have, want).is_none_or(Ordering::is_ge)
}

/// The newer of `a` and `b`: `b` unless `a` is known to be newer.
#[must_use]
pub(crate) fn newer<'a>(a: &'a str, b: &'a str) -> &'a str {
    if compare(a, b) == Some(Ordering::Greater) {
        a
    } else {
        b
    }
}

/// The newest resourceVersion per namespace (`None`: cluster-scoped objects), looked up without
/// allocating: a namespace is never empty, so the empty key stands for `None`.
#[derive(Debug, Default)]
pub(crate) struct NewestPerNamespace(HashMap<String, String>);

impl NewestPerNamespace {
    /// Keeps `version` for `namespace` unless the one kept there is known to be newer.
    pub(crate) fn note(&mut self, namespace: Option<&str>, version: &str) {
        let key = namespace.unwrap_or_default();
        match self.0.get_mut(key) {
            Some(newest) => {
                if newer(newest, version) == version {
                    version.clone_into(newest);
                }
            }
            None => {
                self.0.insert(key.to_owned(), version.to_owned());
            }
        }
    }

    /// The newest version kept for `namespace`.
    pub(crate) fn get(&self, namespace: Option<&str>) -> Option<&str> {
        self.0
            .get(namespace.unwrap_or_default())
            .map(String::as_str)
    }

    /// Forgets the version kept for `namespace` if it is `version` (not a newer one).
    pub(crate) fn remove_if(&mut self, namespace: Option<&str>, version: &str) {
        let key = namespace.unwrap_or_default();
        if self.0.get(key).is_some_and(|newest| newest == version) {
            self.0.remove(key);
        }
    }

    /// Whether no version is kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every namespace (`None`: cluster-scoped objects) with its newest version.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Option<&str>, &str)> {
        self.0.iter().map(|(namespace, version)| {
            (
                (!namespace.is_empty()).then_some(namespace.as_str()),
                version.as_str(),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_integers_not_as_strings() {
        assert_eq!(compare("10", "9"), Some(Ordering::Greater));
        assert!(has_passed("10", "9"));
        assert!(!has_passed("9", "10"));
        assert_eq!(newer("10", "9"), "10");
        assert_eq!(newer("9", "10"), "10");
    }

    #[test]
    fn versions_that_do_not_parse_are_equal_or_unordered_and_never_block() {
        assert_eq!(compare("abc", "abc"), Some(Ordering::Equal));
        assert_eq!(compare("abc", "12"), None);
        assert!(
            has_passed("abc", "12"),
            "an unordered store would wait forever"
        );
        assert!(has_passed("12", "abc"));
    }

    #[test]
    fn the_newest_per_namespace_is_kept_apart_for_cluster_scoped_objects() {
        let mut newest = NewestPerNamespace::default();
        newest.note(Some("ns"), "9");
        newest.note(Some("ns"), "10");
        newest.note(Some("ns"), "8");
        newest.note(None, "3");
        assert_eq!(newest.get(Some("ns")), Some("10"));
        assert_eq!(newest.get(None), Some("3"));
        assert_eq!(newest.get(Some("other")), None);
        let mut all: Vec<_> = newest.iter().collect();
        all.sort_unstable();
        assert_eq!(all, [(None, "3"), (Some("ns"), "10")]);
        newest.remove_if(Some("ns"), "9");
        assert_eq!(
            newest.get(Some("ns")),
            Some("10"),
            "9 was no longer the newest"
        );
        newest.remove_if(Some("ns"), "10");
        newest.remove_if(None, "3");
        assert!(newest.is_empty());
    }
}
