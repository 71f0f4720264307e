//! The files a command writes, checked as a whole before any is written.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// Files to create, to replace and to leave as they are, under a project's root.
#[derive(Debug)]
pub(crate) struct Plan {
    root: PathBuf,
    files: Vec<File>,
}

#[derive(Debug)]
struct File {
    /// Relative to the root.
    path: PathBuf,
    content: String,
    change: Change,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// A new file: refused if it exists.
    Create,
    /// A file `cargo kubeward` rewrites: refused if it does not exist.
    Replace,
    /// A file left as it is, for the reason given; its content is what the tool would write.
    Keep(&'static str),
}

impl Plan {
    /// Nothing to write yet under `root`.
    pub(crate) fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            files: Vec::new(),
        }
    }

    /// Creates `path` (relative to the root) holding `content`.
    pub(crate) fn create(&mut self, path: impl Into<PathBuf>, content: impl Into<String>) {
        self.push(path.into(), content.into(), Change::Create);
    }

    /// Replaces the existing `path` with `content`.
    pub(crate) fn replace(&mut self, path: impl Into<PathBuf>, content: impl Into<String>) {
        self.push(path.into(), content.into(), Change::Replace);
    }

    /// Leaves `path` as it is, for `reason`; `content` is what the tool would write (shown by a
    /// dry run).
    pub(crate) fn keep(
        &mut self,
        path: impl Into<PathBuf>,
        content: impl Into<String>,
        reason: &'static str,
    ) {
        self.push(path.into(), content.into(), Change::Keep(reason));
    }

    fn push(&mut self, path: PathBuf, content: String, change: Change) {
        self.files.push(File {
            path,
            content,
            change,
        });
    }

    /// Whether the plan writes no file (it may keep some).
    pub(crate) fn writes_nothing(&self) -> bool {
        self.files
            .iter()
            .all(|file| matches!(file.change, Change::Keep(_)))
    }

    /// Lists the files and what would happen to each, with the content of each, on `out`.
    pub(crate) fn describe(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        for (file, content) in self.files.iter().zip(self.formatted()?) {
            let path = file.path.display();
            match file.change {
                Change::Create => writeln!(out, "--- would create {path}")?,
                Change::Replace => writeln!(out, "--- would replace {path}")?,
                Change::Keep(reason) => {
                    writeln!(out, "--- would keep {path}: {reason}; this version writes")?;
                }
            }
            out.write_all(content.as_bytes())?;
            if !content.ends_with('\n') {
                writeln!(out)?;
            }
        }
        writeln!(out, "--- dry run: nothing was written")?;
        Ok(())
    }

    /// Writes every file, after checking that none to create exists and every one to replace
    /// does: a refused plan writes nothing.
    ///
    /// # Errors
    /// A file to create exists, a file to replace is missing (the error names it and says that
    /// nothing was written), or writing fails.
    pub(crate) fn write(&self, out: &mut dyn Write) -> anyhow::Result<()> {
        let contents = self.formatted()?;
        for file in &self.files {
            let path = self.root.join(&file.path);
            match (file.change, path.exists()) {
                (Change::Create, true) => bail!(
                    "{} exists already: cargo kubeward makes it, and changes nothing when it \
                     is there (nothing was written)",
                    path.display()
                ),
                (Change::Replace, false) => bail!(
                    "{} is missing: cargo kubeward rewrites it, so this does not look like a \
                     project it made (nothing was written)",
                    path.display()
                ),
                _ => {}
            }
        }
        for (file, content) in self.files.iter().zip(&contents) {
            let path = self.root.join(&file.path);
            let verb = match file.change {
                Change::Create => "created",
                Change::Replace => "updated",
                Change::Keep(reason) => {
                    writeln!(out, "{:>8} {}: {reason}", "kept", file.path.display())?;
                    continue;
                }
            };
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&path, content)
                .with_context(|| format!("writing {}", path.display()))?;
            if file.path.starts_with("scripts") {
                make_executable(&path)?;
            }
            writeln!(out, "{verb:>8} {}", file.path.display())?;
        }
        Ok(())
    }
}

impl Plan {
    /// The files' contents, Rust files formatted by rustfmt.
    fn formatted(&self) -> anyhow::Result<Vec<String>> {
        self.files
            .iter()
            .map(|file| {
                if file.path.extension().is_some_and(|e| e == "rs") {
                    crate::format::rust(&file.content)
                } else {
                    Ok(file.content.clone())
                }
            })
            .collect()
    }
}

/// Makes the file at `path` executable (scripts).
#[cfg(unix)]
pub(crate) fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_mode(permissions.mode() | 0o111);
    std::fs::set_permissions(path, permissions)
        .with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
pub(crate) fn make_executable(_: &Path) -> anyhow::Result<()> {
    Ok(())
}
