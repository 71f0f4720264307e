//! Compares a live object with what a dry-run write would leave, field by field, without noise.

use serde_json::{Map, Value};

use super::FieldChange;

/// Metadata the API server keeps up to date on every write, which says nothing about what
/// the operator would change.
const METADATA_NOISE: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "uid",
    "selfLink",
];

/// Status fields that move with every write or every spec change (a condition's timestamps,
/// the generation a status observed), anywhere under `status`.
const STATUS_NOISE: [&str; 5] = [
    "observedGeneration",
    "lastTransitionTime",
    "lastUpdateTime",
    "lastHeartbeatTime",
    "lastProbeTime",
];

/// List items are matched by the first of these keys they all have (conditions by `type`,
/// containers and ports by `name`), else the lists are compared whole.
const ITEM_KEYS: [&str; 2] = ["type", "name"];

/// The fields that differ between `live` and `planned`, both without noise, in path order.
pub(crate) fn changed_fields(live: &Value, planned: &Value) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    walk(
        &without_noise(live),
        &without_noise(planned),
        String::new(),
        &mut changes,
    );
    changes
}

/// `object` without the fields that change on every write (see [`METADATA_NOISE`] and
/// [`STATUS_NOISE`]) and without null fields (which the API server does not store).
pub(crate) fn without_noise(object: &Value) -> Value {
    let mut object = without_nulls(object);
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in METADATA_NOISE {
            metadata.remove(field);
        }
    }
    if let Some(status) = object.get_mut("status") {
        strip(status, &STATUS_NOISE);
    }
    object
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Removes `fields` at any depth of `value`.
fn strip(value: &mut Value, fields: &[&str]) {
    match value {
        Value::Object(map) => {
            for field in fields {
                map.remove(*field);
            }
            map.values_mut().for_each(|v| strip(v, fields));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| strip(v, fields)),
        _ => {}
    }
}

fn walk(live: &Value, planned: &Value, path: String, changes: &mut Vec<FieldChange>) {
    if live == planned {
        return;
    }
    match (live, planned) {
        (Value::Object(before), Value::Object(after)) => {
            let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let path = field_path(&path, key);
                match (before.get(key), after.get(key)) {
                    (Some(b), Some(a)) => walk(b, a, path, changes),
                    (b, a) => changes.push(FieldChange::new(path, b.cloned(), a.cloned())),
                }
            }
        }
        (Value::Array(before), Value::Array(after)) => match item_key(before, after) {
            Some(key) => walk_items(key, before, after, &path, changes),
            None => changes.push(FieldChange::new(
                path,
                Some(live.clone()),
                Some(planned.clone()),
            )),
        },
        _ => changes.push(FieldChange::new(
            path,
            Some(live.clone()),
            Some(planned.clone()),
        )),
    }
}

/// Lists whose items are all objects with a string `key` (the same one in both), unique.
fn item_key(before: &[Value], after: &[Value]) -> Option<&'static str> {
    ITEM_KEYS.into_iter().find(|key| {
        let ids: Option<Vec<&str>> = before
            .iter()
            .chain(after)
            .map(|item| item.get(key).and_then(Value::as_str))
            .collect();
        ids.is_some_and(|ids| {
            let (b, a) = ids.split_at(before.len());
            unique(b) && unique(a)
        })
    })
}

fn unique(ids: &[&str]) -> bool {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.windows(2).all(|pair| pair[0] != pair[1])
}

fn walk_items(
    key: &str,
    before: &[Value],
    after: &[Value],
    path: &str,
    changes: &mut Vec<FieldChange>,
) {
    let id = |item: &Value| item[key].as_str().unwrap_or_default().to_owned();
    let index = |items: &[Value]| -> Map<String, Value> {
        items.iter().map(|item| (id(item), item.clone())).collect()
    };
    let (before, after) = (index(before), index(after));
    let mut ids: Vec<&String> = before.keys().chain(after.keys()).collect();
    ids.sort();
    ids.dedup();
    for item in ids {
        let path = format!("{path}[{key}={item}]");
        match (before.get(item), after.get(item)) {
            (Some(b), Some(a)) => walk(b, a, path, changes),
            (b, a) => changes.push(FieldChange::new(path, b.cloned(), a.cloned())),
        }
    }
}

/// `parent.key`, with a key that is not a plain word quoted: `metadata.labels["app/name"]`.
fn field_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    match (parent.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{parent}.{key}"),
        (_, false) => format!("{parent}[{key:?}]"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn paths(changes: &[FieldChange]) -> Vec<&str> {
        changes.iter().map(|c| c.path.as_str()).collect()
    }

    #[test]
    fn metadata_and_status_noise_is_no_change() {
        let live = json!({
            "metadata": {"name": "a", "resourceVersion": "1", "generation": 1,
                         "managedFields": [{"manager": "x"}], "uid": "u1"},
            "data": {"content": "x"},
            "status": {"observedGeneration": 1, "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        });
        let planned = json!({
            "metadata": {"name": "a", "resourceVersion": "7", "generation": 2,
                         "managedFields": [{"manager": "y"}], "uid": "u1"},
            "data": {"content": "x"},
            "status": {"observedGeneration": 2, "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-02-02T00:00:00Z"}]},
        });
        assert_eq!(changed_fields(&live, &planned), Vec::new());
    }

    #[test]
    fn a_changed_value_a_new_field_and_a_removed_field_are_each_one_change() {
        let live = json!({"data": {"content": "drifted", "old": "1"}});
        let planned = json!({"data": {"content": "7", "new": "2"}});
        let changes = changed_fields(&live, &planned);
        assert_eq!(
            changes,
            vec![
                FieldChange::new(
                    "data.content".into(),
                    Some(json!("drifted")),
                    Some(json!("7"))
                ),
                FieldChange::new("data.new".into(), None, Some(json!("2"))),
                FieldChange::new("data.old".into(), Some(json!("1")), None),
            ]
        );
    }

    #[test]
    fn list_items_with_a_type_or_name_are_matched_by_it_and_others_compared_whole() {
        let live = json!({"status": {"conditions": [
            {"type": "Ready", "status": "False"}, {"type": "Paused", "status": "False"}]},
            "args": ["a", "b"]});
        let planned = json!({"status": {"conditions": [
            {"type": "Paused", "status": "False"}, {"type": "Ready", "status": "True"}]},
            "args": ["a", "c"]});
        let changes = changed_fields(&live, &planned);
        assert_eq!(
            paths(&changes),
            ["args", "status.conditions[type=Ready].status"]
        );
    }

    #[test]
    fn keys_that_are_not_plain_words_are_quoted_and_nulls_are_missing_fields() {
        let live = json!({"metadata": {"labels": {"app.kubernetes.io/name": "a"}}, "x": null});
        let planned = json!({"metadata": {"labels": {"app.kubernetes.io/name": "b"}}});
        assert_eq!(
            paths(&changed_fields(&live, &planned)),
            [r#"metadata.labels["app.kubernetes.io/name"]"#]
        );
    }
}
