//! Answers `/version` and API discovery from the registered kinds.

use serde_json::{Value, json};

use super::kind::Kind;

/// The document for a discovery path, or `None` when the path is not one.
pub(crate) fn document(path: &str, kinds: &[&Kind]) -> Option<Value> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["version"] => Some(json!({
            "major": "1",
            "minor": "20",
            "gitVersion": "v1.20.2-kubeward-fake",
            "platform": "linux/amd64",
        })),
        ["api"] => Some(json!({ "kind": "APIVersions", "versions": ["v1"] })),
        ["apis"] => Some(groups(kinds)),
        ["api", version] => Some(resources("", version, kinds)),
        ["apis", group, version] => Some(resources(group, version, kinds)),
        _ => None,
    }
}

fn groups(kinds: &[&Kind]) -> Value {
    let mut names: Vec<(&str, &str)> = kinds
        .iter()
        .filter(|kind| !kind.group.is_empty())
        .map(|kind| (kind.group.as_str(), kind.version.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let groups: Vec<Value> = names
        .iter()
        .map(|(group, version)| {
            let entry = json!({ "groupVersion": format!("{group}/{version}"), "version": version });
            json!({ "name": group, "versions": [entry], "preferredVersion": entry })
        })
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

fn resources(group: &str, version: &str, kinds: &[&Kind]) -> Value {
    let verbs = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    let mut resources = Vec::new();
    for kind in kinds
        .iter()
        .filter(|kind| kind.group == group && kind.version == version)
    {
        resources.push(json!({
            "name": kind.plural,
            "singularName": kind.name.to_lowercase(),
            "namespaced": kind.namespaced,
            "kind": kind.name,
            "verbs": verbs,
        }));
        if kind.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", kind.plural),
                "singularName": "",
                "namespaced": kind.namespaced,
                "kind": kind.name,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    })
}
