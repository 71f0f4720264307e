//! The metrics reference lists every family the code registers.

use kubeward::metrics::REFERENCE;

#[test]
fn the_metrics_reference_in_the_book_lists_every_registered_family_with_its_type_and_labels() {
    let page = super::page("metrics.md");
    for family in REFERENCE {
        let labels = match family.labels {
            [] => "none".to_owned(),
            labels => labels.join(", "),
        };
        let row = format!("| `{}` | {} | {labels} |", family.name, family.kind);
        assert!(
            page.contains(&row),
            "book/src/metrics.md lacks the row {row}"
        );
    }
    let rows = page.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(
        rows,
        REFERENCE.len(),
        "the book lists families the code does not register"
    );
}
