//! The book stays in step with the code it documents.

mod comparison;
mod evidence;
mod flags;
mod includes;
mod metrics;
mod values;

use std::path::{Path, PathBuf};

/// The repository's root folder.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the repository's root")
        .to_owned()
}

/// The text of `book/src/<page>`.
fn page(name: &str) -> String {
    let path = repo().join("book/src").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Every page of the book: its file name and its text.
fn pages() -> Vec<(String, String)> {
    let dir = repo().join("book/src");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("book/src is a folder")
        .map(|entry| entry.expect("a readable entry of book/src").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| {
            let name = path
                .file_name()
                .expect("a file")
                .to_string_lossy()
                .into_owned();
            (name.clone(), page(&name))
        })
        .collect();
    pages.sort();
    pages
}

/// The cells of the table rows of `text` whose first cell is a code span, within the section that
/// starts with the heading `section` (the whole text when `None`).
fn code_rows(text: &str, section: Option<&str>) -> Vec<Vec<String>> {
    let lines: Vec<&str> = match section {
        None => text.lines().collect(),
        Some(heading) => text
            .lines()
            .skip_while(|l| *l != heading)
            .skip(1)
            .take_while(|l| !l.starts_with("## "))
            .collect(),
    };
    lines
        .iter()
        .filter(|l| l.starts_with("| `"))
        .map(|l| split_row(l))
        .collect()
}

/// The cells of a markdown table row, trimmed; `\|` is a literal bar, not a separator.
fn split_row(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut().expect("one cell at least").push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            _ => cells.last_mut().expect("one cell at least").push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// `` `text` `` to `text`; other cells unchanged.
fn unquote(cell: &str) -> &str {
    cell.strip_prefix('`')
        .and_then(|c| c.strip_suffix('`'))
        .unwrap_or(cell)
}
