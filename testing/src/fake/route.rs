//! Parses request URLs into the resource, namespace, name and query they address.

use std::collections::HashMap;

/// What a request URL addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) namespace: Option<String>,
    pub(crate) plural: String,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
    pub(crate) query: HashMap<String, String>,
}

impl Route {
    /// Parses `/api/v1/...` and `/apis/group/version/...` paths; `None` for anything else.
    pub(crate) fn parse(path: &str, query: Option<&str>) -> Option<Self> {
        let segments: Vec<String> = path
            .trim_matches('/')
            .split('/')
            .map(percent_decode)
            .collect();
        let (group, version, rest) = match segments.as_slice() {
            [api, version, rest @ ..] if api == "api" => (String::new(), version.clone(), rest),
            [apis, group, version, rest @ ..] if apis == "apis" => {
                (group.clone(), version.clone(), rest)
            }
            _ => return None,
        };
        let (namespace, rest) = match rest {
            [namespaces, namespace, rest @ ..]
                if namespaces == "namespaces" && !rest.is_empty() =>
            {
                (Some(namespace.clone()), rest)
            }
            _ => (None, rest),
        };
        let (plural, name, subresource) = match rest {
            [plural] => (plural.clone(), None, None),
            [plural, name] => (plural.clone(), Some(name.clone()), None),
            [plural, name, subresource] => (
                plural.clone(),
                Some(name.clone()),
                Some(subresource.clone()),
            ),
            _ => return None,
        };
        let query = query
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (percent_decode(key), percent_decode(value))
            })
            .collect();
        Some(Self {
            group,
            version,
            namespace,
            plural,
            name,
            subresource,
            query,
        })
    }

    /// A query parameter.
    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// Whether a boolean query parameter is set to true.
    pub(crate) fn flag(&self, key: &str) -> bool {
        matches!(self.param(key), Some("true" | "1"))
    }
}

/// Decodes `%XX` escapes and `+` (a space in query strings).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'%' if index + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).unwrap_or("");
                if let Ok(byte) = u8::from_str_radix(hex, 16) {
                    decoded.push(byte);
                    index += 3;
                    continue;
                }
                decoded.push(b'%');
            }
            b'+' => decoded.push(b' '),
            byte => decoded.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_and_cluster_urls_are_told_apart() {
        let route = Route::parse("/api/v1/namespaces/ns/configmaps/a", None).unwrap();
        assert_eq!(
            (
                route.namespace.as_deref(),
                route.plural.as_str(),
                route.name.as_deref()
            ),
            (Some("ns"), "configmaps", Some("a"))
        );
        let route = Route::parse("/api/v1/namespaces/ns", None).unwrap();
        assert_eq!(
            (
                route.namespace,
                route.plural.as_str(),
                route.name.as_deref()
            ),
            (None, "namespaces", Some("ns"))
        );
        let route = Route::parse("/apis/example.com/v1/widgets/w/status", None).unwrap();
        assert_eq!(route.group, "example.com");
        assert_eq!(route.subresource.as_deref(), Some("status"));
    }

    #[test]
    fn query_values_are_percent_decoded() {
        let route = Route::parse(
            "/api/v1/configmaps",
            Some("labelSelector=tier+in+%28a%2Cb%29&watch=true"),
        )
        .unwrap();
        assert_eq!(route.param("labelSelector"), Some("tier in (a,b)"));
        assert!(route.flag("watch"));
    }
}
