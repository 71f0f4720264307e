//! Checks names as the API server does: DNS labels and subdomains, qualified names, label values.
//!
//! The rules are apimachinery's (`pkg/util/validation`, `pkg/api/validate/content`). A refusal is
//! a `&'static str` saying what such a name is, for the caller to put after the name in its own
//! error: each caller words its error around it, so there is no error type here.

/// The longest DNS label (RFC 1123).
pub const DNS_LABEL_MAX: usize = 63;

/// The longest DNS subdomain (RFC 1123), such as the name of most objects.
pub const DNS_SUBDOMAIN_MAX: usize = 253;

/// The longest name part of a qualified name, and the longest label value.
pub const QUALIFIED_NAME_MAX: usize = 63;

/// A DNS label (RFC 1123), such as a namespace: 1-63 lower-case letters, digits and `-`,
/// starting and ending with a letter or digit.
///
/// # Errors
/// What a DNS label is, when `name` is not one.
pub fn dns_label(name: &str) -> Result<(), &'static str> {
    if name.len() <= DNS_LABEL_MAX && is_label(name) {
        Ok(())
    } else {
        Err(
            "a DNS label is 1-63 lower-case letters, digits and `-`, starting and ending with a letter or digit",
        )
    }
}

/// A DNS subdomain (RFC 1123), such as the name of most objects or an API group: at most 253
/// characters, dot-separated parts of lower-case letters, digits and `-`, each starting and
/// ending with a letter or digit. As for the API server, a part may be longer than a DNS label.
///
/// # Errors
/// What a DNS subdomain is, when `name` is not one.
pub fn dns_subdomain(name: &str) -> Result<(), &'static str> {
    if name.len() <= DNS_SUBDOMAIN_MAX && is_subdomain(name) {
        Ok(())
    } else {
        Err(
            "a DNS subdomain is 1-253 lower-case letters, digits, `-` and `.`, each dot-separated part starting and ending with a letter or digit",
        )
    }
}

/// A DNS subdomain that is also a label value, such as a Lease name used in labels: 1-63
/// lower-case letters, digits, `-` and `.`, each dot-separated part starting and ending with a
/// letter or digit.
///
/// # Errors
/// What such a name is, when `name` is not one.
pub fn short_dns_subdomain(name: &str) -> Result<(), &'static str> {
    if name.len() <= QUALIFIED_NAME_MAX && is_subdomain(name) {
        Ok(())
    } else {
        Err(
            "1-63 lower-case letters, digits, `-` and `.`, each dot-separated part starting and ending with a letter or digit",
        )
    }
}

/// A qualified name, such as a label key, an annotation key or a condition type: a name of 1-63
/// letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit, after an
/// optional DNS subdomain and one `/`.
///
/// # Errors
/// Which part of `value` is wrong, and what it should be.
pub fn qualified_name(value: &str) -> Result<(), &'static str> {
    let (prefix, name) = match value.split_once('/') {
        None => (None, value),
        Some((prefix, name)) if !name.contains('/') => (Some(prefix), name),
        Some(_) => return Err("at most one `/` separates the prefix from the name"),
    };
    if prefix.is_some_and(|prefix| dns_subdomain(prefix).is_err()) {
        return Err("the part before `/` must be a lower-case DNS subdomain");
    }
    if is_qualified_part(name) {
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
/// What is missing or wrong in `value`.
pub fn domain_qualified_name(value: &str) -> Result<(), &'static str> {
    if !value.contains('/') {
        return Err("it needs a domain prefix and a slash");
    }
    qualified_name(value)
}

/// A label value: empty, or 1-63 letters, digits, `-`, `_` and `.`, starting and ending with a
/// letter or digit.
///
/// # Errors
/// What a label value is, when `value` is not one.
pub fn label_value(value: &str) -> Result<(), &'static str> {
    if value.is_empty() || is_qualified_part(value) {
        Ok(())
    } else {
        Err(
            "a label value is empty or 1-63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit",
        )
    }
}

/// One part of a DNS name, of any length: lower-case letters, digits and `-`, alphanumeric at
/// both ends.
fn is_label(part: &str) -> bool {
    let bytes = part.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    bytes.first().is_some_and(alphanumeric)
        && bytes.last().is_some_and(alphanumeric)
        && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
}

fn is_subdomain(name: &str) -> bool {
    name.split('.').all(is_label)
}

/// The name part of a qualified name, or a non-empty label value.
fn is_qualified_part(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() <= QUALIFIED_NAME_MAX
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    //! The good and bad inputs are those of apimachinery's own validation tests.

    use super::*;

    type Check = fn(&str) -> Result<(), &'static str>;

    fn accepts(check: Check, good: &[&str]) {
        for value in good {
            assert_eq!(check(value), Ok(()), "{value:?} must be accepted");
        }
    }

    fn refuses(check: Check, bad: &[&str]) {
        for value in bad {
            assert!(check(value).is_err(), "{value:?} must be refused");
        }
    }

    /// Accepted by every DNS check.
    const LABELS: &[&str] = &[
        "a",
        "ab",
        "abc",
        "a1",
        "a-1",
        "a--1--2--b",
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        "1--a--b--2",
    ];

    /// Refused by every DNS check: upper case, `_`, spaces, stray dashes and dots.
    const NOT_DNS: &[&str] = &[
        "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a",
        "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "1.", ".1", " ", "a ", " a", "a b", "1 ", " 1",
        "1 2",
    ];

    #[test]
    fn dns_labels_are_what_the_api_server_calls_labels() {
        accepts(dns_label, LABELS);
        accepts(dns_label, &[&"a".repeat(63)]);
        refuses(dns_label, NOT_DNS);
        refuses(dns_label, &["a.b", "1.2", &"a".repeat(64)]);
    }

    #[test]
    fn dns_subdomains_are_dot_separated_labels_of_at_most_253_characters() {
        accepts(dns_subdomain, LABELS);
        accepts(
            dns_subdomain,
            &[
                "a.a",
                "a-1.a",
                "a--1--2--b.a",
                "a.1",
                "0.a",
                "1-a.a",
                "0.1",
                "1--a--b--2.1",
                "a.b.c.d.e",
                "aa.bb.cc.dd.ee",
                "1.2.3.4.5",
                "11.22.33.44.55",
            ],
        );
        accepts(dns_subdomain, &[&"a".repeat(253)]);
        refuses(dns_subdomain, NOT_DNS);
        refuses(
            dns_subdomain,
            &[
                "a..b",
                "1..2",
                "A.a",
                "aB.a",
                "ab.A",
                "A.1",
                "1A.1",
                "0.A",
                "A.B.C.D.E",
                "a.B.c.d.e",
                "a@b",
                "a,b",
                "a;b",
                "a:b",
                "a%b",
                "a?b",
                "a$b",
            ],
        );
        refuses(dns_subdomain, &[&"a".repeat(254)]);
    }

    #[test]
    fn a_part_of_a_subdomain_may_be_longer_than_a_label() {
        let part = "a".repeat(64);
        assert_eq!(dns_subdomain(&format!("{part}.com")), Ok(()));
        assert!(dns_label(&part).is_err());
    }

    #[test]
    fn short_subdomains_are_subdomains_of_at_most_63_characters() {
        accepts(short_dns_subdomain, LABELS);
        accepts(
            short_dns_subdomain,
            &["ring.v2", "a-b.c-d", &"a".repeat(63)],
        );
        refuses(short_dns_subdomain, NOT_DNS);
        refuses(short_dns_subdomain, &["a..b", "Ring", &"a".repeat(64)]);
    }

    /// Label keys with a domain, accepted by both qualified-name checks.
    const WITH_DOMAIN: &[&str] = &[
        "simple/simple",
        "now-with-dashes/simple",
        "now-with-dashes/now-with-dashes",
        "now.with.dots/simple",
        "now-with.dashes-and.dots/simple",
        "1-num.2-num/3-num",
        "1234/5678",
        "1.2.3.4/5678",
        "example.com/Uppercase_Is_OK_123",
    ];

    /// Label keys without a domain, accepted only by [`qualified_name`].
    const WITHOUT_DOMAIN: &[&str] = &[
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "Uppercase_Is_OK_123",
        "requests.storage-foo",
    ];

    /// Refused by both qualified-name checks.
    const NOT_QUALIFIED: &[&str] = &[
        "",
        "nospecialchars%^=@",
        "cantendwithadash-",
        "-cantstartwithadash-",
        "only/one/slash",
        "Example.com/abc",
        "example_com/abc",
        "example.com/",
        "/simple",
        "a b",
    ];

    #[test]
    fn qualified_names_are_label_keys_with_an_optional_domain() {
        accepts(qualified_name, WITH_DOMAIN);
        accepts(qualified_name, WITHOUT_DOMAIN);
        accepts(qualified_name, &[&"a".repeat(63)]);
        accepts(
            qualified_name,
            &[&format!("{}/{}", "a".repeat(253), "b".repeat(63))],
        );
        refuses(qualified_name, NOT_QUALIFIED);
        refuses(qualified_name, &[&"a".repeat(64)]);
        refuses(qualified_name, &[&format!("{}/abc", "a".repeat(254))]);
    }

    #[test]
    fn domain_qualified_names_are_qualified_names_with_their_domain() {
        accepts(domain_qualified_name, WITH_DOMAIN);
        refuses(domain_qualified_name, WITHOUT_DOMAIN);
        refuses(domain_qualified_name, NOT_QUALIFIED);
    }

    #[test]
    fn label_values_are_empty_or_short_names() {
        accepts(
            label_value,
            &[
                "",
                "simple",
                "now-with-dashes",
                "1-starts-with-num",
                "end-with-num-1",
                "1234",
            ],
        );
        accepts(label_value, &[&"a".repeat(63)]);
        refuses(
            label_value,
            &[
                "nospecialchars%^=@",
                "Tama-nui-te-rā.is.Māori.sun",
                "\\backslashes\\are\\bad",
                "-starts-with-dash",
                "ends-with-dash-",
                ".starts.with.dot",
                "ends.with.dot.",
                "a/b",
            ],
        );
        refuses(label_value, &[&"a".repeat(64)]);
    }

    #[test]
    fn a_refused_qualified_name_says_which_part_is_wrong() {
        let why = |value| qualified_name(value).unwrap_err();
        assert!(why("a/b/c").contains("one `/`"));
        assert!(why("Example.com/x").contains("before `/`"));
        assert!(why("example.com/-x").contains("the name"));
        assert!(
            domain_qualified_name("cleanup")
                .unwrap_err()
                .contains("domain prefix")
        );
    }
}
