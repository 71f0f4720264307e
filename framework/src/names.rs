//! Checks names as the API server validates them: DNS labels and subdomains, qualified names.
//!
//! One copy for the crate and for `#[derive(Controller)]`, which includes this file, so a name
//! the derive accepts at compile time is one the builder accepts at run time. Each check answers
//! why a name is refused, in words a user can act on.

/// An RFC 1123 label, such as a namespace: 1-63 lower-case letters, digits and `-`, starting and
/// ending with a letter or digit.
///
/// # Errors
/// Why `name` is not one.
pub(crate) fn dns_label(name: &str) -> Result<(), &'static str> {
    if is_dns_label(name) {
        Ok(())
    } else {
        Err(
            "a DNS label is 1-63 lower-case letters, digits and `-`, starting and ending with a letter or digit",
        )
    }
}

/// An RFC 1123 subdomain that is also a label value, such as a Lease name used in labels: 1-63
/// lower-case letters, digits, `-` and `.`, each dot-separated part a DNS label.
///
/// # Errors
/// Why `name` is not one.
pub(crate) fn short_dns_subdomain(name: &str) -> Result<(), &'static str> {
    if name.len() <= 63 && is_dns_subdomain(name) {
        Ok(())
    } else {
        Err(
            "1-63 lower-case letters, digits, `-` and `.`, starting and ending with a letter or digit",
        )
    }
}

/// A qualified name, such as a label key or a condition type: a name of 1-63 letters, digits,
/// `-`, `_` and `.`, starting and ending with a letter or digit, after an optional lower-case DNS
/// subdomain and `/`.
///
/// # Errors
/// Why `value` is not one.
pub(crate) fn qualified_name(value: &str) -> Result<(), &'static str> {
    let (prefix, name) = match value.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, value),
    };
    if prefix.is_some_and(|p| !is_dns_subdomain(p)) {
        return Err("the part before `/` must be a lower-case DNS subdomain");
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let name_ok = (1..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && edge(name.chars().next())
        && edge(name.chars().last());
    if name_ok {
        Ok(())
    } else {
        Err(
            "the name must be 1-63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit",
        )
    }
}

/// A qualified name with its domain, such as a finalizer: `example.com/cleanup`.
///
/// # Errors
/// Why `value` is not one.
pub(crate) fn domain_qualified_name(value: &str) -> Result<(), &'static str> {
    if !value.contains('/') {
        return Err("it needs a domain prefix and a slash");
    }
    qualified_name(value)
}

fn is_dns_label(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels_are_short_lower_case_and_start_and_end_alphanumeric() {
        for good in ["a", "web-1", "0abc", &"a".repeat(63)] {
            assert_eq!(dns_label(good), Ok(()), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", "a_b", &"a".repeat(64)] {
            assert!(dns_label(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn short_subdomains_allow_dots_between_labels_and_63_characters() {
        for good in ["ring", "ring.v2", "a-b.c-d", &"a".repeat(63)] {
            assert_eq!(short_dns_subdomain(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            ".a",
            "a.",
            "a..b",
            "Ring",
            "ring_1",
            "-a",
            &"a".repeat(64),
        ] {
            assert!(short_dns_subdomain(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn qualified_names_take_an_optional_lower_case_domain() {
        for good in ["Ready", "Available", "example.com/Synced", "a_b.c-d", "x/y"] {
            assert_eq!(qualified_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "-Ready",
            "Ready-",
            "Example.com/x",
            "a/b/c",
            "a/",
            "/a",
            "a b",
            &"a".repeat(64),
        ] {
            assert!(qualified_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_domain_qualified_name_needs_its_domain() {
        assert_eq!(domain_qualified_name("example.com/cleanup"), Ok(()));
        assert!(
            domain_qualified_name("cleanup")
                .unwrap_err()
                .contains("domain prefix")
        );
        assert!(domain_qualified_name("Example.com/cleanup").is_err());
    }
}
