//! The local control plane's scratch folders: each names the process that made it, and folders
//! whose process has ended are removed when the next one is made.
//!
//! A test binary's shared control plane lives in a `static`, which is never dropped, so its
//! folder (etcd's data, about 120 MB) would outlive the process; without the sweep every test
//! run would leave one behind in the temporary folder.

use std::path::Path;

use tempfile::TempDir;

use super::{Result, io_error};

const PREFIX: &str = "kubeward-cp-";
const OWNER: &str = "owner.pid";

/// A new scratch folder owned by this process, after removing those of ended processes.
pub(crate) fn scratch_dir() -> Result<TempDir> {
    sweep(&std::env::temp_dir());
    let dir = tempfile::Builder::new()
        .prefix(PREFIX)
        .tempdir()
        .map_err(io_error("creating a temporary folder"))?;
    std::fs::write(dir.path().join(OWNER), std::process::id().to_string())
        .map_err(io_error("writing the scratch folder's owner"))?;
    Ok(dir)
}

/// Removes the scratch folders in `parent` whose owner has ended. A folder without an owner
/// file (being made, or from an older version) is left alone.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for path in entries.flatten().map(|entry| entry.path()) {
        let ours = path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with(PREFIX));
        let owner = std::fs::read_to_string(path.join(OWNER))
            .ok()
            .and_then(|pid| pid.trim().parse::<u32>().ok());
        if ours && owner.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_of_ended_owners_go_and_the_others_stay() -> anyhow::Result<()> {
        let parent = tempfile::tempdir()?;
        let make = |name: &str, owner: Option<String>| -> anyhow::Result<std::path::PathBuf> {
            let dir = parent.path().join(name);
            std::fs::create_dir(&dir)?;
            if let Some(owner) = owner {
                std::fs::write(dir.join(OWNER), owner)?;
            }
            Ok(dir)
        };
        // A process that has ended: a child that has been waited for.
        let mut child = std::process::Command::new("true").spawn()?;
        let ended = child.id();
        child.wait()?;
        let gone = make("kubeward-cp-gone", Some(ended.to_string()))?;
        let alive = make("kubeward-cp-alive", Some(std::process::id().to_string()))?;
        let unowned = make("kubeward-cp-unowned", None)?;
        let other = make("someone-else", Some(ended.to_string()))?;

        sweep(parent.path());
        assert!(!gone.exists(), "the folder of an ended process stays");
        for kept in [alive, unowned, other] {
            assert!(kept.exists(), "{kept:?} was removed");
        }
        Ok(())
    }
}
