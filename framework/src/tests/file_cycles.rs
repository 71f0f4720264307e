//! Inside each module folder the files form a DAG: no file uses a file that uses it, directly
//! or through others.
//!
//! A folder's nodes are its child modules: each file, and each subfolder taken whole. A child
//! uses a sibling when its library code (read as in `layers.rs`) names the sibling in a
//! `super::`, `self::` or `crate::` path, grouped ones included, or names an item that the
//! folder's `mod.rs` imports from the sibling: going through a re-export does not hide a use.
//! The `mod.rs` (or `x.rs` next to `x/`) is the folder's front door, not a node: its `mod` and
//! `use` declarations assemble the children, the items it defines are shared by all of them, and
//! its own code may use any child. `super::` is read as the file's parent module, which holds
//! because library code has no inline modules. The order of `mod` declarations is not checked:
//! rustfmt sorts them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::source::library_code;

/// Cycles tolerated for now: a folder and the files of the cycle.
const ALLOWED: [(&str, &[&str]); 0] = [];

/// Who uses whom in one folder: (user, used) and the first place of such a use.
type Uses = BTreeMap<(String, String), String>;

/// A module folder as its children see it.
#[derive(Default)]
struct Folder {
    /// Its child modules.
    children: BTreeSet<String>,
    /// The names its front door imports, with the child they come from (`None`: elsewhere).
    imports: BTreeMap<String, Option<String>>,
}

/// The paths a use tree names, each with the name it binds: `a::{b, c::d as e}` names `a::b`
/// (binding `b`) and `a::c::d` (binding `e`). Stops where the path does, so it also reads the
/// path at the start of any code.
fn tree<'a>(text: &'a str, prefix: &[&'a str], out: &mut Vec<(Vec<&'a str>, &'a str)>) {
    let mut segments = prefix.to_vec();
    let mut rest = text.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0_usize;
            let mut item = 0;
            for (at, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => return tree(&group[item..at], &segments, out),
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        tree(&group[item..at], &segments, out);
                        item = at + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let word = rest
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default();
        if word.is_empty() {
            break;
        }
        segments.push(word);
        rest = rest[word.len()..].trim_start();
        match rest.strip_prefix("::") {
            Some(after) => rest = after.trim_start(),
            None => break,
        }
    }
    let name = match rest.strip_prefix("as ") {
        Some(alias) => alias.trim_start().split([',', '}', ';', ' ']).next(),
        None => segments.iter().rev().find(|s| **s != "self").copied(),
    };
    if segments.len() > prefix.len() {
        out.push((segments, name.unwrap_or_default()));
    }
}

/// Where a path written in `module` leads, if it starts with `crate`, `super` or `self`.
fn resolve(segments: &[&str], module: &[String]) -> Option<Vec<String>> {
    let mut path = match *segments.first()? {
        "crate" => Vec::new(),
        "super" | "self" => module.to_vec(),
        _ => return None,
    };
    let mut named = false;
    for segment in &segments[usize::from(segments[0] == "crate")..] {
        match *segment {
            "super" if !named => drop(path.pop()),
            "self" => {}
            _ => {
                named = true;
                path.push((*segment).to_owned());
            }
        }
    }
    Some(path)
}

/// Every `crate::`, `super::` and `self::` path in `code`.
fn paths(code: &str) -> Vec<Vec<&str>> {
    let mut found = Vec::new();
    for head in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(head) {
            let before = code[..at].chars().next_back().unwrap_or(' ');
            if !(before.is_alphanumeric() || before == '_' || before == ':') {
                tree(&code[at..], &[], &mut found);
            }
        }
    }
    found.into_iter().map(|(path, _)| path).collect()
}

/// The folder at `module` with `children`, and what its front door's `code` imports.
fn folder(code: &str, module: &[String], children: BTreeSet<String>) -> Folder {
    let mut imports = BTreeMap::new();
    for (at, _) in code.match_indices("use ") {
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut leaves = Vec::new();
        let statement = code[at + "use ".len()..].split(';').next();
        tree(statement.unwrap_or_default(), &[], &mut leaves);
        for (path, name) in leaves {
            // A path of no `crate`, `super` or `self` starts at a child or another crate.
            let path = resolve(&path, module).unwrap_or_else(|| {
                let path = path.iter().map(|s| (*s).to_owned());
                module.iter().cloned().chain(path).collect()
            });
            let child = path.get(module.len()).filter(|c| children.contains(*c));
            imports.insert(
                name.to_owned(),
                child.filter(|_| path.starts_with(module)).cloned(),
            );
        }
    }
    Folder { children, imports }
}

/// The child of `folder` (at `module`) that `path` leads into, if it leads into one.
fn child_used<'a>(folder: &'a Folder, module: &[String], path: &[String]) -> Option<&'a str> {
    let step = path
        .get(module.len())
        .filter(|_| path.starts_with(module))?;
    match folder.children.get(step) {
        Some(child) => Some(child),
        None => folder.imports.get(step)?.as_deref(),
    }
}

/// The sets of children that use each other, directly or through others.
fn cycles(uses: &Uses) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut next = vec![from];
        while let Some(node) = next.pop() {
            for (_, used) in uses.keys().filter(|(user, _)| user == node) {
                if seen.insert(used) {
                    next.push(used);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<_, _> = uses.keys().map(|(user, _)| (user, reach(user))).collect();
    let mut found: Vec<BTreeSet<String>> = Vec::new();
    for (node, seen) in &reached {
        let cycle: BTreeSet<String> = seen
            .iter()
            .filter(|other| reached.get(*other).is_some_and(|back| back.contains(node)))
            .map(|other| (*other).clone())
            .collect();
        if !cycle.is_empty() && !found.contains(&cycle) {
            found.push(cycle);
        }
    }
    found
}

/// A source file of the crate, not of its tests.
struct Source {
    /// Its module path from the crate root (`mod.rs` is its folder's module).
    module: Vec<String>,
    /// Its path below `src`.
    file: String,
    code: String,
}

fn sources(src: &Path, dir: &Path, module: &[String], found: &mut Vec<Source>) {
    for entry in std::fs::read_dir(dir).expect("the source folder reads") {
        let path = entry.expect("a folder entry reads").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let inner = [module, &[name.to_owned()]].concat();
        if path.is_dir() && name != "tests" {
            sources(src, &path, &inner, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            found.push(Source {
                module: if name == "mod" || name == "lib" {
                    module.to_vec()
                } else {
                    inner
                },
                file: path
                    .strip_prefix(src)
                    .unwrap_or(&path)
                    .display()
                    .to_string(),
                code: library_code(&text),
            });
        }
    }
}

/// Who uses whom in each module folder of `files`.
fn uses(files: &[Source]) -> (usize, BTreeMap<String, Uses>) {
    let mut children: BTreeMap<&[String], BTreeSet<String>> = BTreeMap::new();
    for file in files {
        if let Some((child, folder)) = file.module.split_last().filter(|(_, f)| !f.is_empty()) {
            children.entry(folder).or_default().insert(child.clone());
        }
    }
    let folders: Vec<_> = children
        .into_iter()
        .map(|(module, children)| {
            let door = files.iter().find(|f| f.module == module);
            let door = door.expect("a module folder has its mod.rs or a file named after it");
            (module, folder(&door.code, module, children))
        })
        .collect();
    let mut by_folder: BTreeMap<String, Uses> = BTreeMap::new();
    for file in files {
        for (line, code) in file.code.lines().enumerate() {
            for path in paths(code).iter().filter_map(|p| resolve(p, &file.module)) {
                for (module, folder) in &folders {
                    let Some(user) = file.module.get(module.len()) else {
                        continue;
                    };
                    let inside = file.module.starts_with(module);
                    let child = child_used(folder, module, &path).filter(|c| inside && c != user);
                    if let Some(used) = child {
                        let folder_uses = by_folder.entry(module.join("/")).or_default();
                        folder_uses
                            .entry((user.clone(), used.to_owned()))
                            .or_insert_with(|| format!("{}:{}", file.file, line + 1));
                    }
                }
            }
        }
    }
    (folders.len(), by_folder)
}

#[test]
fn the_files_of_each_module_folder_use_each_other_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &src, &[], &mut files);
    let (folders, uses) = uses(&files);
    let count: usize = uses.values().map(BTreeMap::len).sum();
    assert!(
        folders > 15 && count > 200,
        "read the crate's module folders ({folders}) and the uses between their files ({count})"
    );
    let mut found = Vec::new();
    let mut tolerated = Vec::new();
    for (folder, uses) in &uses {
        for cycle in cycles(uses) {
            let names: Vec<&str> = cycle.iter().map(String::as_str).collect();
            if let Some(allowed) = ALLOWED.iter().find(|(f, n)| f == folder && *n == names) {
                tolerated.push(allowed);
                continue;
            }
            found.push(format!("{folder}/: {}", names.join(" ↔ ")));
            for ((user, used), at) in uses {
                if cycle.contains(user) && cycle.contains(used) {
                    found.push(format!("    {user} uses {used} ({at})"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "files that use each other; move what both need to the file it belongs to:\n{}",
        found.join("\n")
    );
    for allowed @ (folder, names) in &ALLOWED {
        assert!(
            tolerated.contains(&allowed),
            "{folder}/: {} no longer use each other; take them off ALLOWED",
            names.join(" ↔ ")
        );
    }
}

#[test]
fn the_graph_sees_grouped_and_re_exported_uses_and_finds_their_cycle() {
    let module = ["queue".to_owned()];
    let children = ["done", "locked", "work_queue"].map(String::from).into();
    let front_door = "mod locked;\npub use work_queue::{Done, WorkQueue as Queue};\n\
                      pub use crate::cache::ObjectKey;";
    let queue = folder(front_door, &module, children);
    let in_locked = ["queue".to_owned(), "locked".to_owned()];
    let code = "use super::{Done, done::{self, Other}}; crate::queue::Queue::new(); \
                super::ObjectKey; mod_self::x; crate::cache::Store";
    let named: Vec<_> = paths(code)
        .iter()
        .filter_map(|path| resolve(path, &in_locked))
        .filter_map(|path| child_used(&queue, &module, &path).map(str::to_owned))
        .collect();
    assert_eq!(named, ["work_queue", "work_queue", "done", "done"]);

    let uses: Uses = [
        ("locked", "work_queue"),
        ("work_queue", "locked"),
        ("work_queue", "done"),
        ("done", "hooks"),
    ]
    .map(|(user, used)| ((user.to_owned(), used.to_owned()), String::new()))
    .into();
    let cycle = BTreeSet::from(["locked".to_owned(), "work_queue".to_owned()]);
    assert_eq!(cycles(&uses), [cycle]);
}
