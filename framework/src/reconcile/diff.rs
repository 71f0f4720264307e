//! Compares objects as JSON: whether an apply or a status write would change anything.

use serde_json::{Map, Value};

/// Whether `cached` already holds everything `desired` sets: every field of `desired` is in
/// `cached` with the same value; lists have the same length and are compared item by item the
/// same way (the server adds defaults inside items); a null, empty map or empty list in
/// `desired` matches a missing field (the API server drops those).
pub(super) fn covers(cached: &Value, desired: &Value) -> bool {
    match (cached, desired) {
        (Value::Object(cached), Value::Object(desired)) => desired.iter().all(|(key, want)| {
            cached
                .get(key)
                .map_or_else(|| is_empty(want), |have| covers(have, want))
        }),
        (Value::Array(cached), Value::Array(desired)) => {
            cached.len() == desired.len() && cached.iter().zip(desired).all(|(c, d)| covers(c, d))
        }
        (cached, desired) => cached == desired || (is_empty(desired) && is_empty(cached)),
    }
}

/// The fields of `desired` that `cached` does not hold with the same value, as a JSON object
/// of just those paths (lists whole, metadata's bookkeeping left out); `None` if there is none.
pub(super) fn changed(cached: &Value, desired: &Value) -> Option<Value> {
    match (cached, desired) {
        (Value::Object(cached), Value::Object(desired)) => {
            let fields: Map<String, Value> = (desired.iter())
                .filter(|(key, _)| {
                    !matches!(key.as_str(), "apiVersion" | "kind" | "ownerReferences")
                })
                .filter_map(|(key, want)| {
                    let change = match cached.get(key) {
                        Some(have) => changed(have, want)?,
                        None if is_empty(want) => return None,
                        None => want.clone(),
                    };
                    Some((key.clone(), change))
                })
                .collect();
            (!fields.is_empty()).then_some(Value::Object(fields))
        }
        (cached, desired) => (!covers(cached, desired)).then(|| desired.clone()),
    }
}

/// Whether `manager`'s last server-side apply, per the `managedFields` of `cached`, set no field
/// that `desired` leaves out (an apply that leaves a field out removes it). `true` when the
/// object carries no `managedFields` (an informer strips them by default): then only
/// [`covers`] can tell. `false` when they are there but `manager` never applied the object.
pub(super) fn applied_fields_within(cached: &Value, manager: &str, desired: &Value) -> bool {
    let entries = cached
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .filter(|entries| !entries.is_empty());
    let Some(entries) = entries else {
        return true;
    };
    entries
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == "Apply")
        .is_some_and(|entry| within(&entry["fieldsV1"], desired))
}

/// Whether every `f:` field of a `fieldsV1` set is in `desired`; list items (`k:`, `v:`, `i:`)
/// are left to [`covers`], which compares lists whole.
fn within(fields: &Value, desired: &Value) -> bool {
    let Some(fields) = fields.as_object() else {
        return true;
    };
    fields
        .iter()
        .all(|(key, sub)| match key.strip_prefix("f:") {
            Some(name) => desired
                .get(name)
                .is_some_and(|value| !value.is_null() && within(sub, value)),
            None => true,
        })
}

/// Whether `a` and `b` are the same JSON once null fields are dropped (serializers differ in
/// whether they write `None` as null or leave it out; the API server stores neither).
pub(super) fn same(a: &Value, b: &Value) -> bool {
    without_nulls(a) == without_nulls(b)
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(list) => list.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_the_fields_that_differ_are_in_the_change() {
        let cached = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"a": "1", "b": "2"}});
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"a": "1", "b": "3", "c": "4"}});
        assert_eq!(
            changed(&cached, &desired),
            Some(json!({"data": {"b": "3", "c": "4"}}))
        );
        assert_eq!(changed(&cached, &cached), None);
    }

    #[test]
    fn a_desired_object_is_covered_by_a_cached_one_with_more_fields() {
        let cached = json!({
            "metadata": { "name": "a", "uid": "1", "labels": { "x": "1", "y": "2" } },
            "data": { "k": "v" },
            "spec": { "containers": [{ "name": "c", "image": "i", "imagePullPolicy": "Always" }] }
        });
        let desired = json!({
            "metadata": { "name": "a", "labels": { "x": "1" } },
            "data": { "k": "v" },
            "spec": { "containers": [{ "name": "c", "image": "i" }] }
        });
        assert!(covers(&cached, &desired));
    }

    #[test]
    fn a_changed_value_a_missing_field_or_another_list_length_is_not_covered() {
        let cached = json!({ "data": { "k": "v" }, "list": [1, 2] });
        assert!(!covers(&cached, &json!({ "data": { "k": "w" } })));
        assert!(!covers(&cached, &json!({ "data": { "other": "v" } })));
        assert!(!covers(&cached, &json!({ "list": [1] })));
        assert!(!covers(&cached, &json!({ "list": [2, 1] })));
    }

    #[test]
    fn empty_and_null_desired_fields_match_missing_ones() {
        let cached = json!({ "metadata": { "name": "a" } });
        assert!(covers(
            &cached,
            &json!({ "metadata": { "name": "a", "labels": {} }, "data": null, "list": [] })
        ));
    }

    #[test]
    fn a_field_this_manager_applied_before_but_no_longer_sets_needs_an_apply() {
        let cached = json!({
            "metadata": { "managedFields": [
                { "manager": "other", "operation": "Update", "fieldsV1": { "f:data": { "f:z": {} } } },
                { "manager": "me", "operation": "Apply",
                  "fieldsV1": { "f:data": { ".": {}, "f:k": {}, "f:old": {} } } }
            ] },
            "data": { "k": "v", "old": "x", "z": "z" }
        });
        assert!(!applied_fields_within(
            &cached,
            "me",
            &json!({ "data": { "k": "v" } })
        ));
        assert!(applied_fields_within(
            &cached,
            "me",
            &json!({ "data": { "k": "v", "old": "x" } })
        ));
        assert!(!applied_fields_within(
            &cached,
            "stranger",
            &json!({ "data": { "k": "v" } })
        ));
        assert!(applied_fields_within(
            &json!({ "data": {} }),
            "me",
            &json!({ "data": {} })
        ));
    }

    #[test]
    fn null_fields_do_not_make_objects_differ_but_values_do() {
        let a = json!({ "a": 1, "b": { "c": null }, "list": [{ "x": null, "y": "" }] });
        let b = json!({ "a": 1, "b": {}, "list": [{ "y": "" }] });
        assert!(same(&a, &b));
        assert!(!same(
            &a,
            &json!({ "a": 2, "b": {}, "list": [{ "y": "" }] })
        ));
        assert!(!same(&a, &json!({ "a": 1, "b": {}, "list": [] })));
        assert!(same(&Value::Null, &Value::Null));
    }
}
