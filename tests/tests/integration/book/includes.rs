//! Every snippet of the book is included, by anchor, from a file that a workspace crate compiles.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{pages, repo};

/// The workspace members' folders, from the root manifest's `members = [...]`.
fn members() -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("the root manifest");
    let list = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("the root manifest lists its members on one `members = [...]`")
        .0;
    list.split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| repo().join(m))
        .collect()
}

/// The crate roots of a member: the conventional ones and every `path = "....rs"` of its manifest.
fn crate_roots(member: &Path) -> Vec<PathBuf> {
    let mut roots = vec![member.join("src/lib.rs"), member.join("src/main.rs")];
    for dir in ["src/bin", "tests", "examples", "benches"] {
        if let Ok(entries) = std::fs::read_dir(member.join(dir)) {
            roots.extend(entries.map(|e| e.expect("a readable entry").path()));
        }
    }
    let manifest = std::fs::read_to_string(member.join("Cargo.toml")).expect("a member manifest");
    for line in manifest.lines() {
        if let Some(path) = line.trim().strip_prefix("path = \"") {
            roots.push(member.join(path.trim_end_matches('"')));
        }
    }
    roots
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && p.is_file())
        .collect()
}

/// The `mod name;` declarations of a Rust file.
fn declared_modules(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.split("//").next().unwrap_or_default().trim();
            let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        .collect()
}

/// Every `.rs` file the workspace compiles: crate roots and the modules they declare, transitively.
fn compiled_files() -> HashSet<PathBuf> {
    let mut seen = HashSet::new();
    let mut todo: Vec<(PathBuf, bool)> = members()
        .iter()
        .flat_map(|m| crate_roots(m))
        .map(|root| (root, true))
        .collect();
    while let Some((file, is_root)) = todo.pop() {
        let Ok(file) = file.canonicalize() else {
            continue;
        };
        if !seen.insert(file.clone()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a readable Rust file");
        let parent = file.parent().expect("a file has a folder");
        let stem = file.file_stem().expect("a file name").to_string_lossy();
        let dir = if is_root || stem == "mod" {
            parent.to_owned()
        } else {
            parent.join(stem.as_ref())
        };
        for module in declared_modules(&text) {
            todo.push((dir.join(format!("{module}.rs")), false));
            todo.push((dir.join(&module).join("mod.rs"), false));
        }
    }
    seen
}

/// The `{{#include path:anchor}}` (and `rustdoc_include`) arguments of a page.
fn includes(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for directive in ["{{#include ", "{{#rustdoc_include "] {
        let mut rest = text;
        while let Some(start) = rest.find(directive) {
            let after = &rest[start + directive.len()..];
            let end = after.find("}}").expect("an include directive ends with }}");
            found.push(after[..end].trim().to_owned());
            rest = &after[end..];
        }
    }
    found
}

/// Whether `text` has a line `... ANCHOR: name` and a line `... ANCHOR_END: name`.
fn has_anchor(text: &str, name: &str) -> bool {
    let marks = |tag: &str| {
        text.lines().any(|line| {
            line.split_once(tag)
                .is_some_and(|(_, rest)| rest.trim() == name)
        })
    };
    marks("ANCHOR:") && marks("ANCHOR_END:")
}

#[test]
fn every_include_in_the_book_names_an_anchor_of_a_file_a_workspace_crate_compiles() {
    let compiled = compiled_files();
    let manifests: HashSet<PathBuf> = members()
        .iter()
        .map(|m| {
            m.join("Cargo.toml")
                .canonicalize()
                .expect("a member manifest")
        })
        .collect();
    let mut problems = Vec::new();
    let mut count = 0;
    for (page, text) in pages() {
        for include in includes(&text) {
            count += 1;
            let Some((path, anchor)) = include.split_once(':') else {
                problems.push(format!("{page}: `{include}` names no anchor"));
                continue;
            };
            if anchor.is_empty() || anchor.contains(':') || anchor.parse::<u32>().is_ok() {
                problems.push(format!(
                    "{page}: `{include}` uses lines, not a named anchor"
                ));
                continue;
            }
            let Ok(file) = repo().join("book/src").join(path).canonicalize() else {
                problems.push(format!("{page}: `{path}` does not exist"));
                continue;
            };
            if !(compiled.contains(&file) || manifests.contains(&file)) {
                problems.push(format!(
                    "{page}: `{path}` is neither a Rust file a workspace crate compiles nor a member's Cargo.toml"
                ));
            }
            let body = std::fs::read_to_string(&file).expect("a readable included file");
            if !has_anchor(&body, anchor) {
                problems.push(format!("{page}: `{path}` has no anchor `{anchor}`"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        count >= 20,
        "only {count} includes found: is the parser broken?"
    );
}

#[test]
fn every_rust_and_toml_block_in_the_book_is_an_include_and_other_blocks_are_shell_or_text() {
    let mut problems = Vec::new();
    for (page, text) in pages() {
        let mut lines = text.lines();
        let mut previous = "";
        while let Some(line) = lines.next() {
            let Some(language) = line.trim_start().strip_prefix("```") else {
                previous = line;
                continue;
            };
            // A file `cargo kubeward` generates, shown whole: cargo-kubeward's own test compares
            // each such block with what the tool writes.
            let generated = previous.trim().starts_with("<!-- file: ");
            previous = "";
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.trim_start().starts_with("```"))
                .collect();
            let kind = language.split(',').next().unwrap_or_default();
            match kind {
                "rust" | "toml" if generated => {}
                "rust" | "toml" => {
                    if let Some(pasted) = body
                        .iter()
                        .find(|l| !l.trim().is_empty() && !l.trim().starts_with("{{#include "))
                    {
                        problems.push(format!("{page}: a {kind} block has pasted code: {pasted}"));
                    }
                }
                // Commands, their output and data are not code that can rot silently.
                "sh" | "bash" | "console" | "text" | "yaml" | "json" => {}
                other => problems.push(format!(
                    "{page}: a block in `{other}`: only included rust or toml, or commands and data, are allowed"
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_page_is_in_the_summary_and_every_link_and_image_of_a_page_exists() {
    let summary = super::page("SUMMARY.md");
    let mut problems = Vec::new();
    for (page, text) in pages() {
        if page != "SUMMARY.md" && !summary.contains(&format!("]({page})")) {
            problems.push(format!("{page} is not in SUMMARY.md"));
        }
        for target in text.split("](").skip(1) {
            let target = target.split(')').next().unwrap_or_default();
            let file = target.split('#').next().unwrap_or_default();
            if file.is_empty() || file.contains("://") {
                continue;
            }
            if !repo().join("book/src").join(file).is_file() {
                problems.push(format!("{page} links to {file}, which does not exist"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
