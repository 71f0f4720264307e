//! `cargo kubeward update`: rewrites the files the tool owns in an existing project as this
//! version writes them, and says which it cannot.
//!
//! A file `init` wrote whole is rewritten when its user has not changed it (its hash is the one
//! `KUBEWARD` recorded), and kept otherwise: `--dry-run` shows this version's content of each kept
//! file, to merge by hand. The marked regions of `src/lib.rs` and `tests/integration/main.rs` are
//! rewritten as `create` does. `Cargo.toml`, the chart's values and what the user writes (kinds,
//! reconcilers, webhooks, tests) are left alone.

use std::path::Path;

use anyhow::Context as _;

use crate::init::KUBEWARD_VERSION;
use crate::plan::Plan;
use crate::project::{self, Project};
use crate::registry;

/// Why a file is kept: changed by its user since the tool wrote it.
const CHANGED: &str = "changed since cargo kubeward wrote it, so not updated (`cargo kubeward \
                       update --dry-run` shows this version's, to merge by hand)";
/// Why a file is kept: the project records nothing of it.
const UNRECORDED: &str = "differs from this version's, and the project does not record what \
                          cargo kubeward wrote (made before it recorded that), so not updated \
                          (`--dry-run` shows this version's; delete the file and run update \
                          again to take it)";
/// Why a file is kept: its user deleted it.
const DELETED: &str = "deleted since cargo kubeward wrote it, so not made again (delete its \
                       `file =` line in KUBEWARD to have update make it)";

/// The plan of `update` in the project at `root`.
///
/// # Errors
/// No project at `root`, a marker missing from `src/lib.rs` or `tests/integration/main.rs`, or
/// a file that cannot be read.
pub(crate) fn plan(root: &Path) -> anyhow::Result<Plan> {
    let old = Project::read(root)?;
    let mut project = old.clone();
    project.kubeward = Some(KUBEWARD_VERSION.to_owned());
    project.files.clear();
    let mut plan = Plan::new(root);
    for (path, content) in crate::init::owned_files(&project)? {
        let current = read(root, &path)?;
        let recorded = old.recorded(&path);
        let keep = match (&current, recorded) {
            (Some(current), _) if *current == content => None,
            (None, None) => {
                plan.create(&path, content.as_str());
                None
            }
            (None, Some(_)) => Some(DELETED),
            (Some(current), Some(hash)) if project::hash(current) == hash => {
                plan.replace(&path, content.as_str());
                None
            }
            (Some(_), Some(_)) => Some(CHANGED),
            (Some(_), None) => Some(UNRECORDED),
        };
        match keep {
            // What the tool wrote is recorded as it was: the next update knows the file as
            // changed, and rewrites it once the user takes this version.
            Some(reason) => {
                if let Some(hash) = recorded {
                    project.files.push((path.clone(), hash.to_owned()));
                }
                plan.keep(&path, content, reason);
            }
            None => project.files.push((path, project::hash(&content))),
        }
    }
    for (path, fresh) in [
        ("src/lib.rs", registry::lib_rs(&project)),
        (
            "tests/integration/main.rs",
            registry::tests_main_rs(&project),
        ),
    ] {
        let Some(current) = read(root, path)? else {
            plan.create(path, fresh);
            continue;
        };
        let content = if crate::regions::has_markers(&current) {
            crate::regions::carry(path, &fresh, &current)?
        } else {
            // Made before the markers, when `create` rewrote the whole file: this version's.
            fresh
        };
        if crate::format::rust(&content)? != current {
            plan.replace(path, content);
        }
    }
    if project != old {
        plan.replace(project::FILE, project.render());
    }
    Ok(plan)
}

/// The file `path` of the project at `root`; none when it is missing.
fn read(root: &Path, path: &str) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(root.join(path)) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", root.join(path).display())),
    }
}
