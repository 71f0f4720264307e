//! `#[derive(Controller)]`: the RBAC rules it generates for the example (that each is necessary
//! and all are sufficient on a real cluster is shown in `rbac`; the chart's generated files are
//! checked by the examples crate's `manifests` test, which runs the operator).

use kubeward_examples::configmap_generator::ConfigMapGenerator;

#[test]
fn the_generated_rules_are_the_least_the_example_needs() {
    let rules = ConfigMapGenerator::rbac_rules();
    let summary: Vec<(String, Vec<String>)> = rules
        .iter()
        .map(|r| {
            (
                r.resources.clone().unwrap_or_default().join(","),
                r.verbs.clone(),
            )
        })
        .collect();
    let verbs = |v: &[&str]| v.iter().map(|&s| s.to_owned()).collect::<Vec<_>>();
    assert_eq!(
        summary,
        [
            (
                "configmapgenerators".to_owned(),
                verbs(&["get", "list", "watch", "update", "patch"])
            ),
            (
                "configmapgenerators/status".to_owned(),
                verbs(&["get", "update", "patch"])
            ),
            (
                "configmapgenerators/finalizers".to_owned(),
                verbs(&["update"])
            ),
            (
                "configmaps".to_owned(),
                verbs(&[
                    "get", "list", "watch", "create", "update", "patch", "delete"
                ])
            ),
            ("events".to_owned(), verbs(&["create", "patch"])),
        ]
    );
}
