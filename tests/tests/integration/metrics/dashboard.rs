//! The chart's Grafana dashboard queries every family the code registers, and only those.

use std::collections::BTreeSet;

use kubeward::metrics::REFERENCE;

/// Every query of the dashboard: the panel's title and the `PromQL` expression.
pub(super) fn queries() -> anyhow::Result<Vec<(String, String)>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../charts/configmap-generator/files/dashboard.json"
    );
    let dashboard: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    Ok(dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|panel| {
            let title = panel["title"].as_str().unwrap_or_default().to_owned();
            panel["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(move |t| Some((title.clone(), t["expr"].as_str()?.to_owned())))
        })
        .collect())
}

/// `expr` with Grafana's variables replaced as Grafana would for "All" and a 1 s scrape interval.
pub(super) fn substituted(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$job", ".*")
        .replace("$controller", ".*")
}

/// The metric names an expression mentions (identifiers with a family's prefix).
fn metric_names(expr: &str) -> impl Iterator<Item = &str> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|word| {
            [
                "controller_runtime_",
                "workqueue_",
                "leader_election_",
                "kubeward_",
                "process_",
                "rest_client_",
            ]
            .iter()
            .any(|prefix| word.starts_with(prefix))
        })
}

#[test]
fn the_dashboard_queries_every_family_and_only_families_the_code_registers() -> anyhow::Result<()> {
    let families: BTreeSet<&str> = REFERENCE.iter().map(|family| family.name).collect();
    let mut shown = BTreeSet::new();
    let panels = queries()?;
    for (title, expr) in &panels {
        for name in metric_names(expr) {
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| {
                    name.strip_suffix(suffix)
                        .filter(|base| families.contains(base))
                })
                .unwrap_or(name);
            assert!(
                families.contains(family),
                "panel {title:?} queries {name}, which the code does not register"
            );
            shown.insert(family);
        }
    }
    let unqueried: Vec<_> = families.difference(&shown).collect();
    assert!(unqueried.is_empty(), "no panel shows {unqueried:?}");
    Ok(())
}
