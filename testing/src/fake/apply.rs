//! Applies server-side apply configurations, tracking which fields each apply manager owns.
//!
//! The common cases only: a manager's re-apply removes the fields it stopped applying (unless
//! another apply manager also applies them), and applying a different value to a field another
//! apply manager owns is a 409 Conflict unless forced, which moves the field. Ownership by
//! non-apply writers (create, update, patch) is not tracked; lists are atomic values.

use std::collections::BTreeMap;

use http::StatusCode;
use serde_json::{Map, Value};

use super::kind::Kind;
use super::object::metadata_mut;
use super::state::{State, Target};
use super::status::Failure;

/// A field as the list of keys leading to it.
type Path = Vec<String>;

/// One apply request.
#[derive(Debug)]
pub(crate) struct Apply<'a> {
    pub(crate) kind: &'a Kind,
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    pub(crate) target: Target,
    pub(crate) manager: &'a str,
    pub(crate) force: bool,
}

impl Apply<'_> {
    /// Creates the object from `config`, or merges `config` into it.
    pub(crate) fn run(
        &self,
        state: &mut State,
        config: Value,
    ) -> Result<(StatusCode, Value), Failure> {
        let current = match state.get(self.kind, self.namespace, self.name) {
            Ok(current) => current,
            Err(missing) if self.target == Target::Status => return Err(missing),
            Err(_) => {
                let mut object = config.clone();
                metadata_mut(&mut object)
                    .entry("name")
                    .or_insert_with(|| Value::String(self.name.to_owned()));
                let created = state.create(self.kind, self.namespace, object, false)?;
                let mut managers = BTreeMap::new();
                managers.insert(self.manager.to_owned(), config);
                state.set_applied(uid(&created), managers);
                return Ok((StatusCode::CREATED, created));
            }
        };
        let mut managers = state.applied(&uid(&current));
        let applied = fields(&config);
        let mut conflicts = Vec::new();
        for (other, other_config) in managers.iter().filter(|(m, _)| *m != self.manager) {
            for path in fields(other_config).iter().filter(|p| applied.contains(p)) {
                if lookup(&config, path) != lookup(&current, path) {
                    conflicts.push((other.clone(), path.clone()));
                }
            }
        }
        if !conflicts.is_empty() && !self.force {
            let listed: Vec<String> = conflicts
                .iter()
                .map(|(manager, path)| format!("conflict with \"{manager}\": .{}", path.join(".")))
                .collect();
            let message = format!(
                "Apply failed with {} conflict{}: {}",
                conflicts.len(),
                if conflicts.len() == 1 { "" } else { "s" },
                listed.join("\n")
            );
            return Err(Failure::new(StatusCode::CONFLICT, "Conflict", message));
        }
        for (other, path) in &conflicts {
            if let Some(other_config) = managers.get_mut(other) {
                remove(other_config, path);
            }
        }
        let mut document = current.clone();
        if let Some(previous) = managers.get(self.manager) {
            let still_applied_elsewhere = |path: &Path| {
                managers
                    .iter()
                    .any(|(m, c)| m != self.manager && lookup(c, path).is_some())
            };
            for path in fields(previous) {
                if !applied.contains(&path) && !still_applied_elsewhere(&path) {
                    remove(&mut document, &path);
                }
            }
        }
        json_patch::merge(&mut document, &config);
        let updated = state.update(self.kind, self.namespace, self.name, document, self.target)?;
        managers.insert(self.manager.to_owned(), config);
        state.set_applied(uid(&updated), managers);
        Ok((StatusCode::OK, updated))
    }
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The leaf fields a configuration sets; identity fields are not owned.
fn fields(config: &Value) -> Vec<Path> {
    fn walk(value: &Map<String, Value>, prefix: &mut Path, out: &mut Vec<Path>) {
        for (key, child) in value {
            prefix.push(key.clone());
            match child {
                Value::Object(map) if !map.is_empty() => walk(map, prefix, out),
                Value::Null => {}
                _ => out.push(prefix.clone()),
            }
            prefix.pop();
        }
    }
    let mut out = Vec::new();
    if let Value::Object(map) = config {
        walk(map, &mut Vec::new(), &mut out);
    }
    out.retain(|path| {
        !matches!(
            path.iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice(),
            ["apiVersion" | "kind"] | ["metadata", "name" | "namespace" | "resourceVersion"]
        )
    });
    out
}

fn lookup<'v>(value: &'v Value, path: &Path) -> Option<&'v Value> {
    path.iter().try_fold(value, |value, key| value.get(key))
}

fn remove(value: &mut Value, path: &Path) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let parent = parents
        .iter()
        .try_fold(value, |value, key| value.get_mut(key));
    if let Some(Value::Object(map)) = parent {
        map.remove(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn owned_fields_are_leaves_without_identity_fields() {
        let config = json!({ "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "a", "labels": { "x": "1" } }, "data": { "k": "v" } });
        let mut owned = fields(&config);
        owned.sort();
        assert_eq!(owned, [vec!["data", "k"], vec!["metadata", "labels", "x"]]);
    }
}
