//! Finds the etcd, kube-apiserver and openssl programs the control plane runs.

use std::path::{Path, PathBuf};

use super::{Error, Result};

const INSTALL: &str = "bash scripts/setup";

/// The programs a [`ControlPlane`](super::ControlPlane) runs.
///
/// Looked up, in order, in `$KUBEWARD_BIN`, `$KUBEBUILDER_ASSETS` (the envtest convention),
/// `$KUBEWARD_CACHE/bin` or else `~/.cache/kubeward/bin` (where `scripts/setup` installs them), and `$PATH`.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// The etcd server.
    pub etcd: PathBuf,
    /// The Kubernetes API server.
    pub kube_apiserver: PathBuf,
    /// The openssl command, used to make service-account signing keys.
    pub openssl: PathBuf,
}

impl Binaries {
    /// Finds every program.
    ///
    /// # Errors
    /// [`Error::MissingBinary`] names the first program that is missing and the command that installs it.
    pub fn find() -> Result<Self> {
        Ok(Self {
            etcd: find("etcd", INSTALL)?,
            kube_apiserver: find("kube-apiserver", INSTALL)?,
            openssl: find("openssl", "apt-get install openssl")?,
        })
    }

    /// Finds another program `scripts/setup` installs (`helm`, `kubectl`, `promtool`, ...), in the
    /// same places.
    ///
    /// # Errors
    /// [`Error::MissingBinary`] naming it and the command that installs it.
    pub fn tool(program: &str) -> Result<PathBuf> {
        find(program, INSTALL)
    }
}

fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["KUBEWARD_BIN", "KUBEBUILDER_ASSETS"] {
        if let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            dirs.push(PathBuf::from(dir));
        }
    }
    if let Some(cache) = std::env::var_os("KUBEWARD_CACHE").filter(|v| !v.is_empty()) {
        dirs.push(Path::new(&cache).join("bin"));
    } else if let Some(home) = std::env::var_os("HOME") {
        dirs.push(Path::new(&home).join(".cache/kubeward/bin"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs
}

fn find(program: &str, install: &'static str) -> Result<PathBuf> {
    let dirs = search_dirs();
    dirs.iter()
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| Error::MissingBinary {
            program: program.to_owned(),
            searched: dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(":"),
            install,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_itself_and_its_installer() {
        let err = find("kubeward-no-such-program", INSTALL).unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("kubeward-no-such-program not found"),
            "{message}"
        );
        assert!(message.contains("bash scripts/setup"), "{message}");
    }
}
