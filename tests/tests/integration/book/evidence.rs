//! The tests the book cites as evidence for a feature exist where it says.

use super::{page, repo};

/// Each page, the folders under `tests/tests/integration/` its cited tests live in (a cited
/// test is found in one of them).
const CITING: [(&str, &[&str]); 4] = [
    ("operating.md", &["pause", "plan"]),
    ("rbac.md", &["rbac"]),
    ("triggers.md", &["triggers"]),
    ("webhooks.md", &["webhook"]),
];

/// The section of `text` under its heading that starts with `## How`.
fn how_section(text: &str) -> &str {
    let start = text.find("\n## How").map_or(text.len(), |i| i + 1);
    let rest = &text[start..];
    let end = rest[1..].find("\n## ").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

/// The code spans of `text`'s "How ..." section that read `file::test_name`.
fn cited(text: &str) -> Vec<(&str, &str)> {
    how_section(text)
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|span| span.split_once("::"))
        .filter(|(file, name)| {
            let snake =
                |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            snake(file) && snake(name) && name.contains('_')
        })
        .collect()
}

#[test]
fn every_test_the_book_cites_as_evidence_exists() {
    let mut missing = Vec::new();
    let mut found = 0;
    for (name, folders) in CITING {
        for (file, test) in cited(&page(name)) {
            let defines = |folder: &&str| {
                let path = repo()
                    .join("tests/tests/integration")
                    .join(folder)
                    .join(format!("{file}.rs"));
                let source = std::fs::read_to_string(&path).unwrap_or_default();
                source.contains(&format!("async fn {test}()"))
            };
            if folders.iter().any(defines) {
                found += 1;
            } else {
                missing.push(format!("{name}: {file}::{test} (in {folders:?})"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "cited tests that do not exist:\n{}",
        missing.join("\n")
    );
    assert!(
        found >= 8,
        "the pages cite the watches, predicate and RBAC tests; found {found}"
    );
}
