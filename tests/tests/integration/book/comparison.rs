//! The comparison page's line counts are what `scripts/loc` measures today.

use super::{page, repo};

#[test]
fn the_comparison_table_is_what_scripts_loc_counts() {
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
    let table = String::from_utf8(output.stdout).expect("the table is UTF-8");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| ")).collect();
    assert!(
        rows.len() >= 5,
        "a header, a rule and three operators:\n{table}"
    );
    let text = page("from-kube-rs-and-controller-runtime.md");
    let stale: Vec<&str> = rows
        .iter()
        .copied()
        .filter(|row| !text.contains(row))
        .collect();
    assert!(
        stale.is_empty(),
        "the book's table differs from `bash scripts/loc comparison`; rows it lacks:\n{}",
        stale.join("\n")
    );
}

/// 64 lines, and one more since the CRD declares its older version (`versions(...)`).
#[test]
fn the_example_operator_is_at_most_65_lines() {
    let text = page("from-kube-rs-and-controller-runtime.md");
    let lines: u32 = text
        .lines()
        .find(|l| l.starts_with("| kubeward |"))
        .and_then(|l| l.trim_end_matches('|').rsplit('|').next())
        .and_then(|n| n.trim().parse().ok())
        .expect("the table has a kubeward row ending in its line count");
    assert!(
        lines <= 65,
        "the example operator has grown to {lines} lines"
    );
}
