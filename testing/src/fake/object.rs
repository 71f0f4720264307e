//! Reads and fills in object metadata the way the API server does.

use serde_json::{Map, Value};

use super::kind::Kind;
use super::status::Failure;

/// `metadata.name`, or the empty string.
pub(crate) fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

/// `metadata.resourceVersion`, or the empty string.
pub(crate) fn resource_version(object: &Value) -> &str {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
}

/// Whether `metadata.deletionTimestamp` is set.
pub(crate) fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

/// Whether `metadata.finalizers` is non-empty.
pub(crate) fn has_finalizers(object: &Value) -> bool {
    object["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|finalizers| !finalizers.is_empty())
}

/// The object's `metadata` as a mutable map, created when missing.
pub(crate) fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = Value::Object(Map::new());
    }
    let metadata = &mut object["metadata"];
    if !metadata.is_object() {
        *metadata = Value::Object(Map::new());
    }
    match metadata {
        Value::Object(map) => map,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// The current time as the API server writes it (RFC 3339, whole seconds, UTC): the system's,
/// or with a `virtual_start`, tokio's clock counted from [`VIRTUAL_EPOCH`] at that instant.
pub(crate) fn now(virtual_start: Option<tokio::time::Instant>) -> String {
    use k8s_openapi::jiff::Timestamp;
    let seconds = match virtual_start {
        Some(start) => {
            let elapsed = tokio::time::Instant::now().duration_since(start).as_secs();
            VIRTUAL_EPOCH.saturating_add(i64::try_from(elapsed).unwrap_or(i64::MAX))
        }
        None => Timestamp::now().as_second(),
    };
    Timestamp::from_second(seconds).map_or_else(|_| Timestamp::now().to_string(), |t| t.to_string())
}

/// Where a deterministic fake's clock starts: 2025-01-01T00:00:00Z, in seconds since 1970.
pub(crate) const VIRTUAL_EPOCH: i64 = 1_735_689_600;

/// Whether anything outside `apiVersion`, `kind`, `metadata` and (when it has its own
/// subresource) `status` differs: what bumps `metadata.generation`.
pub(crate) fn spec_changed(old: &Value, new: &Value, status_subresource: bool) -> bool {
    let rest = |object: &Value| -> Map<String, Value> {
        object
            .as_object()
            .map(|map| {
                map.iter()
                    .filter(|(key, _)| match key.as_str() {
                        "apiVersion" | "kind" | "metadata" => false,
                        "status" => !status_subresource,
                        _ => true,
                    })
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    rest(old) != rest(new)
}

/// Checks a name the way the real server checks most kinds: a lowercase RFC 1123 subdomain.
pub(crate) fn validate_name(kind: &Kind, name: &str) -> Result<(), Failure> {
    if kubeward_core::names::dns_subdomain(name).is_ok() {
        return Ok(());
    }
    // The real server's words, which clients may match.
    Err(Failure::invalid(
        kind,
        name,
        "metadata.name",
        name,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' \
         or '.', and must start and end with an alphanumeric character",
    ))
}

/// A well-mixed 64-bit value from a counter (splitmix64), for names and uids.
pub(crate) fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// Five characters from the alphabet the real server uses for `generateName` suffixes.
pub(crate) fn name_suffix(seed: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut value = mix(seed);
    (0..5)
        .map(|_| {
            let index = usize::try_from(value % ALPHABET.len() as u64).unwrap_or_default();
            value /= ALPHABET.len() as u64;
            char::from(ALPHABET[index])
        })
        .collect()
}

/// A UUID-shaped uid from a seed.
pub(crate) fn uid(seed: u64) -> String {
    let (high, low) = (mix(seed), mix(seed ^ 0xA5A5_A5A5));
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xFFFF,
        high & 0xFFF,
        low >> 52,
        low & 0xFFFF_FFFF_FFFF
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_changes_outside_metadata_and_a_separate_status_are_spec_changes() {
        let old = json!({ "metadata": { "labels": {} }, "spec": { "a": 1 }, "status": {} });
        let relabelled = json!({ "metadata": { "labels": { "x": "y" } }, "spec": { "a": 1 } });
        let respecced = json!({ "metadata": {}, "spec": { "a": 2 } });
        assert!(!spec_changed(&old, &relabelled, true));
        assert!(spec_changed(&old, &respecced, true));
        let restatused = json!({ "metadata": {}, "spec": { "a": 1 }, "status": { "b": 2 } });
        assert!(!spec_changed(&old, &restatused, true));
        assert!(
            spec_changed(&old, &restatused, false),
            "without /status, status is spec"
        );
    }

    #[test]
    fn names_are_checked_as_rfc_1123_subdomains() {
        let kind = Kind::built_in("", "v1", "ConfigMap", "configmaps", true);
        assert!(validate_name(&kind, "a-b.c1").is_ok());
        for bad in [
            "",
            "Upper",
            "under_score",
            "-dash",
            "dot.",
            &"a".repeat(254),
        ] {
            assert!(validate_name(&kind, bad).is_err(), "{bad} must be invalid");
        }
    }

    #[test]
    fn generated_suffixes_and_uids_differ_between_seeds() {
        assert_ne!(name_suffix(1), name_suffix(2));
        assert_eq!(name_suffix(1).len(), 5);
        assert_ne!(uid(1), uid(2));
        assert_eq!(uid(1).len(), 36);
    }
}
