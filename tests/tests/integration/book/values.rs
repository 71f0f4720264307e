//! The Helm values reference lists every key of the chart's `values.yaml` with its default.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{code_rows, page, repo, unquote};

/// Checks `value` at `path` against the rows: a row for the path itself (its default as JSON),
/// or, for a non-empty map without one, rows for each of its keys.
fn check(
    path: &str,
    value: &Value,
    rows: &mut BTreeMap<String, String>,
    problems: &mut Vec<String>,
) {
    if let Some(default) = rows.remove(path) {
        match serde_json::from_str::<Value>(unquote(&default)) {
            Ok(documented) if documented == *value => {}
            Ok(documented) => problems.push(format!(
                "`{path}`: the book says {documented}, values.yaml says {value}"
            )),
            Err(e) => problems.push(format!("`{path}`: the default {default} is not JSON: {e}")),
        }
        return;
    }
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                check(&child_path, child, rows, problems);
            }
        }
        _ => problems.push(format!(
            "`{path}` (default {value}) is not in the values reference"
        )),
    }
}

#[test]
fn the_values_reference_lists_every_key_of_values_yaml_with_its_default() {
    let text = std::fs::read_to_string(repo().join("charts/configmap-generator/values.yaml"))
        .expect("the chart's values.yaml");
    let values: Value = serde_norway::from_str(&text).expect("values.yaml parses");
    let mut rows: BTreeMap<String, String> =
        code_rows(&page("helm.md"), Some("## Values reference"))
            .into_iter()
            .map(|cells| {
                (
                    unquote(&cells[0]).to_owned(),
                    cells.get(1).cloned().unwrap_or_default(),
                )
            })
            .collect();
    assert!(rows.len() > 20, "the values table was not found in helm.md");
    let mut problems = Vec::new();
    check("", &values, &mut rows, &mut problems);
    for extra in rows.keys() {
        problems.push(format!("`{extra}` is in the book but not in values.yaml"));
    }
    assert!(
        problems.is_empty(),
        "book/src/helm.md:\n{}",
        problems.join("\n")
    );
}
