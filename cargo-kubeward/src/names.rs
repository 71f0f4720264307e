//! The names a kind goes by: Rust module, Kubernetes plural, file names.

/// `ConfigMapThing` → `config_map_thing`.
pub(crate) fn snake(kind: &str) -> String {
    let mut out = String::new();
    for (i, c) in kind.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `ConfigMapThing` → `config-map-thing`.
pub(crate) fn kebab(kind: &str) -> String {
    snake(kind).replace('_', "-")
}

/// Whether `kind` is a kind name: an upper-case ASCII letter, then ASCII letters and digits.
pub(crate) fn is_kind(kind: &str) -> bool {
    kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric())
}

/// Whether `version` is a Kubernetes API version: `v1`, `v1alpha1`, `v2beta3`.
pub(crate) fn is_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let tail = &rest[digits..];
    digits > 0
        && (tail.is_empty()
            || ["alpha", "beta"].iter().any(|stage| {
                tail.strip_prefix(stage)
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            }))
}

/// Whether `name` can name a crate, a binary and a Helm chart: lower-case ASCII letters, digits
/// and `-`, starting with a letter.
pub(crate) fn is_project_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
}

/// Whether `group` is a custom resource's API group: a DNS subdomain with at least one dot, as
/// the API server requires of a CRD's group.
pub(crate) fn is_group(group: &str) -> bool {
    group.contains('.') && kubeward_core::names::dns_subdomain(group).is_ok()
}

/// The module of k8s-openapi holding the kinds of a built-in API `group` (`""` is the core
/// group): `apps` → `apps`, `networking.k8s.io` → `networking`.
pub(crate) fn openapi_module(group: &str) -> &str {
    match group {
        "" | "core" => "core",
        _ => group.split('.').next().unwrap_or(group),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_become_snake_and_kebab_case() {
        assert_eq!(snake("Memo"), "memo");
        assert_eq!(snake("ConfigMapThing"), "config_map_thing");
        assert_eq!(kebab("ConfigMapThing"), "config-map-thing");
    }

    #[test]
    fn names_are_checked_the_way_kubernetes_and_cargo_read_them() {
        assert!(is_kind("Memo") && !is_kind("memo") && !is_kind("Me-mo"));
        assert!(is_version("v1") && is_version("v1alpha1") && is_version("v2beta3"));
        assert!(!is_version("1") && !is_version("v1alpha") && !is_version("valpha1"));
        assert!(
            is_project_name("memo-operator") && !is_project_name("Memo") && !is_project_name("a-")
        );
        assert!(is_group("example.com") && !is_group("example") && !is_group("Example.com"));
        assert!(!is_group("-example.com") && !is_group("example-.com") && !is_group("a..b"));
        assert_eq!(openapi_module("networking.k8s.io"), "networking");
        assert_eq!(openapi_module(""), "core");
    }
}
