//! The comparison page's line counts are what `scripts/loc` measures today.

use super::{page, repo};

/// The comparison page.
const PAGE: &str = "from-kube-rs-and-controller-runtime.md";

/// The tables `bash scripts/loc comparison` prints, each as its lines.
fn tables_of_scripts_loc() -> Vec<Vec<String>> {
    let output = std::process::Command::new("bash")
        .arg(repo().join("scripts/loc"))
        .arg("comparison")
        .output()
        .expect("bash runs scripts/loc");
    assert!(
        output.status.success(),
        "scripts/loc comparison failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("the tables are UTF-8");
    let mut tables: Vec<Vec<String>> = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        let row = line.starts_with("| ");
        if row && !in_table {
            tables.push(Vec::new());
        }
        if let Some(table) = tables.last_mut().filter(|_| row) {
            table.push(line.to_owned());
        }
        in_table = row;
    }
    tables
}

/// The line count at the end of the page's kubeward row that names `file`.
fn kubeward_lines(text: &str, file: &str) -> u32 {
    text.lines()
        .find(|l| l.starts_with("| kubeward |") && l.contains(&format!("`{file}`")))
        .and_then(|l| l.trim_end_matches('|').rsplit('|').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("the page has a kubeward row naming {file} with its line count"))
}

#[test]
fn the_comparison_tables_are_what_scripts_loc_counts() {
    let tables = tables_of_scripts_loc();
    assert_eq!(
        tables.iter().map(Vec::len).collect::<Vec<_>>(),
        [5, 5, 5],
        "three tables, each a header, a rule and three operators: {tables:?}"
    );
    let text = page(PAGE);
    for table in &tables {
        let block = table.join("\n");
        assert!(
            text.contains(&block),
            "the book lacks this table of `bash scripts/loc comparison`, row for row:\n{block}"
        );
    }
}

/// Issue 59's bound, the CRD's older version (`versions(...)`) and the demo's delay included.
#[test]
fn the_example_operator_is_at_most_50_lines() {
    let lines = kubeward_lines(&page(PAGE), "examples/src/configmap_generator.rs");
    assert!(
        lines <= 50,
        "the example operator has grown to {lines} lines"
    );
}

/// Issue 59's bound (issue 37's was 60): CRD types, reconciler, cleanup and `main`, without the
/// objects' literals.
#[test]
fn the_second_example_operator_is_at_most_50_lines() {
    let lines = kubeward_lines(&page(PAGE), "examples/src/webapp.rs");
    assert!(
        lines <= 50,
        "the WebApp operator has grown to {lines} lines"
    );
}

/// Issue 59's bound for the third example operator, of another domain.
#[test]
fn the_third_example_operator_is_at_most_50_lines() {
    let lines = kubeward_lines(&page(PAGE), "examples/src/database.rs");
    assert!(
        lines <= 50,
        "the Database operator has grown to {lines} lines"
    );
}
