//! Orders resourceVersions: as integers where both parse, otherwise only by equality.
//!
//! A resourceVersion is opaque by contract, but every API server in use (etcd's revision) hands
//! out decimal integers that grow with every write, and client-go's staleness mitigation
//! (KEP-5647) compares them as such. A version that does not parse can only be compared for
//! equality: then a cache is not known to lag, and a fenced read does not wait for it.

use std::cmp::Ordering;

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
}
