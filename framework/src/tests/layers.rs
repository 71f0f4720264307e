//! The crate's layers point one way: each module's code uses only the modules listed before it
//! (the order of the crate docs' Layout table), and every module has its place in that order.
//!
//! Doc links may point up (to where a thing is used); code may not.

use std::path::{Path, PathBuf};

use super::source::library_code;

/// The modules from the bottom layer up.
const LAYERS: [&str; 20] = [
    "tls",
    "cache",
    "informer",
    "queue",
    "metrics",
    "client",
    "events",
    "webhook",
    "crd",
    "conversion",
    "rbac",
    "sharding",
    "controller",
    "reconcile",
    "leader",
    "plan",
    "manager",
    "serving",
    "shard",
    "cli",
];

/// What every layer may use: the crate's error, the name checks, the process's name and namespace, seedable jitter, a buffer helper, the boxed
/// spawns, the testing kit, and `lib.rs` and `tests`, which are not code of a layer.
const SERVES_ALL: [&str; 9] = [
    "error",
    "names",
    "process",
    "random",
    "spare_capacity",
    "task",
    "testing",
    "lib",
    "tests",
];

/// The crate modules a line of code names through `crate::` paths, grouped ones included.
fn crate_modules(code: &str) -> Vec<&str> {
    let mut named = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let items = match rest.strip_prefix('{') {
            Some(group) => group.split_once('}').map_or(group, |(inner, _)| inner),
            None => rest,
        };
        for item in items.split(',') {
            let word = item
                .trim_start()
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            if !word.is_empty() {
                named.push(word);
            }
            if !rest.starts_with('{') {
                break;
            }
        }
    }
    named
}

fn rust_files(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("the source folder reads") {
            let entry = entry.expect("a folder entry reads").path();
            // A folder's `tests/` directory holds tests, which may use any layer.
            if entry.file_name().is_some_and(|name| name != "tests") {
                rust_files(&entry, found);
            }
        }
    } else if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
        found.push(path.to_owned());
    }
}

#[test]
fn each_module_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offences = Vec::new();
    let mut files_read = 0;
    for (level, module) in LAYERS.iter().enumerate() {
        let mut files = Vec::new();
        rust_files(&src.join(module), &mut files);
        rust_files(&src.join(format!("{module}.rs")), &mut files);
        assert!(!files.is_empty(), "module {module} has source files");
        for file in files {
            files_read += 1;
            let text = std::fs::read_to_string(&file).expect("a source file reads");
            for (line, code) in library_code(&text).lines().enumerate() {
                for named in crate_modules(code) {
                    if LAYERS[level + 1..].contains(&named) {
                        offences.push(format!(
                            "{}:{}: {module} uses {named}, a layer above it",
                            file.display(),
                            line + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(files_read > 80, "read the crate's files ({files_read})");
    assert!(
        offences.is_empty(),
        "layers must point one way (the crate docs' Layout table):\n{}",
        offences.join("\n")
    );
}

#[test]
fn every_module_of_the_crate_has_its_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut unplaced = Vec::new();
    for entry in std::fs::read_dir(&src).expect("the source folder reads") {
        let path = entry.expect("a folder entry reads").path();
        let module = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if !LAYERS.contains(&module) && !SERVES_ALL.contains(&module) {
            unplaced.push(module.to_owned());
        }
    }
    assert!(
        unplaced.is_empty(),
        "give each module its layer in LAYERS and the crate docs' Layout table: {unplaced:?}"
    );
}

#[test]
fn the_check_sees_plain_and_grouped_paths_but_not_comments() {
    assert_eq!(crate_modules("use crate::manager::Runnable;"), ["manager"]);
    assert_eq!(
        crate_modules("use crate::{informer, leader::Config};"),
        ["informer", "leader"]
    );
    assert_eq!(
        crate_modules("let s = crate::cache::store(); crate::queue::x()"),
        ["cache", "queue"]
    );
    let text = "use crate::cache; // crate::manager
#[cfg(test)]
mod tests {
    use crate::manager::{self, Runnable};
    const OPEN: char = '{';
}
fn after_the_tests() -> &'static str { crate::queue::x(); \"crate::leader }\" }
impl Thing {
    #[cfg(test)]
    fn only_in_tests(&self) { crate::reconcile::y() }
    /* crate::leader */ fn in_the_library(&self) { crate::metrics::z(r#\"crate::leader\"#) }
}
#[cfg(test)]
use crate::manager;
use crate::informer::Factory;";
    let code = library_code(text);
    assert_eq!(
        code.lines().count(),
        text.lines().count(),
        "lines keep their numbers"
    );
    let named: Vec<_> = code
        .lines()
        .enumerate()
        .flat_map(|(line, code)| crate_modules(code).into_iter().map(move |m| (line + 1, m)))
        .collect();
    assert_eq!(
        named,
        [
            (1, "cache"),
            (7, "queue"),
            (11, "metrics"),
            (15, "informer")
        ]
    );
}
