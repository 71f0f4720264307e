//! The book stays in step with the code it documents.

use kubeward::metrics::REFERENCE;

#[test]
fn the_metrics_reference_in_the_book_lists_every_registered_family_with_its_type_and_labels() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../book/src/metrics.md"
    ))
    .expect("the book has a metrics page");
    for (name, kind, labels, _) in REFERENCE {
        let row = format!("| `{name}` | {kind} | {labels} |");
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
