//! Names Event objects: `<object>.<hex>`, always a valid DNS subdomain of at most 253 characters.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::names;

/// The longest name Kubernetes accepts for an Event (a DNS subdomain).
pub(crate) const MAX_NAME: usize = names::DNS_SUBDOMAIN_MAX;

/// Room the unique suffix takes: a dot and 16 hex digits.
const SUFFIX: usize = 1 + 16;

/// Room the hash of a changed object name takes: a dash and 8 hex digits.
const HASH: usize = 1 + 8;

/// A new, unique Event name about the object named `object`.
pub(crate) fn event_name(object: &str) -> String {
    let name = format!("{}.{:016x}", prefix(object), unique());
    debug_assert!(
        names::dns_subdomain(&name).is_ok(),
        "event names are valid: {name}"
    );
    name
}

/// `object` as the first part of an Event name: unchanged when it fits and is valid, otherwise
/// made valid, shortened, and followed by a hash of the original (so two long names sharing
/// their first 227 characters still get different prefixes).
pub(crate) fn prefix(object: &str) -> String {
    let room = MAX_NAME - SUFFIX;
    let valid = valid_subdomain(object);
    if !valid.is_empty() && valid == object && valid.len() <= room {
        return valid;
    }
    let mut short = valid;
    short.truncate(room - HASH);
    let trimmed = short.trim_end_matches(['-', '.']).len();
    short.truncate(trimmed);
    let hash = fnv1a(object.as_bytes());
    if short.is_empty() {
        format!("x-{hash:08x}")
    } else {
        format!("{short}-{hash:08x}")
    }
}

/// `name` with upper case lowered, other invalid characters as dashes, and labels trimmed of
/// dashes; empty labels are dropped. Only ASCII remains, so byte lengths are character counts.
fn valid_subdomain(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '.' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '-',
        })
        .collect();
    mapped
        .split('.')
        .map(|label| label.trim_matches('-'))
        .filter(|label| !label.is_empty())
        .collect::<Vec<_>>()
        .join(".")
}

/// 32 bits of FNV-1a: stable across processes, unlike std's hasher.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, b| {
        (hash ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// 64 random-looking bits, different on every call: a per-process random key (std's
/// `RandomState`) hashing a counter.
fn unique() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static STATE: std::sync::OnceLock<std::hash::RandomState> = std::sync::OnceLock::new();
    let mut hasher = STATE
        .get_or_init(std::hash::RandomState::new)
        .build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_valid_name_is_kept_as_the_prefix() {
        let name = event_name("web-0.cache");
        assert!(name.starts_with("web-0.cache."), "{name}");
        assert_eq!(name.len(), "web-0.cache".len() + SUFFIX);
        assert_eq!(names::dns_subdomain(&name), Ok(()), "{name}");
    }

    #[test]
    fn a_250_character_object_name_gives_a_valid_event_name_of_at_most_253_characters() {
        let object = "a".repeat(250);
        let name = event_name(&object);
        assert!(name.len() <= MAX_NAME, "{} characters", name.len());
        assert_eq!(names::dns_subdomain(&name), Ok(()), "{name}");
        assert!(name.starts_with(&"a".repeat(200)));
    }

    #[test]
    fn a_253_character_object_name_with_dots_gives_a_valid_event_name() {
        // 63-character labels, as long as a DNS label may be: 4 * 63 + 3 dots = 255, cut to 253.
        let label = "b".repeat(63);
        let object = [label.as_str(); 4].join(".")[..253].to_owned();
        assert_eq!(object.len(), 253);
        let name = event_name(&object);
        assert!(name.len() <= MAX_NAME, "{} characters", name.len());
        assert_eq!(names::dns_subdomain(&name), Ok(()), "{name}");
    }

    #[test]
    fn a_cut_that_lands_on_a_dot_or_dash_is_trimmed() {
        for filler in ['.', '-'] {
            let mut object = "c".repeat(MAX_NAME - SUFFIX - HASH - 1);
            object.push(filler);
            object.push_str(&"d".repeat(40));
            let name = event_name(&object);
            assert_eq!(names::dns_subdomain(&name), Ok(()), "{name}");
        }
    }

    #[test]
    fn two_long_names_with_the_same_start_get_different_prefixes() {
        let common = "e".repeat(240);
        assert_ne!(prefix(&format!("{common}1")), prefix(&format!("{common}2")));
    }

    #[test]
    fn invalid_characters_are_replaced_and_the_original_hashed() {
        let object = "system:controller:Node_Lifecycle";
        let p = prefix(object);
        assert!(p.starts_with("system-controller-node-lifecycle-"), "{p}");
        assert_eq!(names::dns_subdomain(&event_name(object)), Ok(()));
        assert_eq!(names::dns_subdomain(&event_name("..--..")), Ok(()));
        assert_eq!(names::dns_subdomain(&event_name("")), Ok(()));
    }

    #[test]
    fn every_event_name_is_unique() {
        let names: std::collections::HashSet<String> =
            (0..1000).map(|_| event_name("same")).collect();
        assert_eq!(names.len(), 1000);
    }
}
