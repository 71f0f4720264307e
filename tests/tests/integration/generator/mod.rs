//! Operators built as their authors build them, apart from this workspace. `cargo kubeward` end to
//! end: a new operator with two kinds, a controller of Deployments and webhooks is generated,
//! formatted, built, tested against the shared control plane, its chart rendered and linted, and
//! run until its sample is Ready. And the smallest build (kubeward without default features),
//! built and run until it has reconciled.
//!
//! The project is built with this workspace's `Cargo.lock`, target folder and `--offline`: its
//! dependencies resolve to the same versions, so only crates whose features differ from the
//! workspace's builds are compiled again, once (3.5 min for `cargo test --no-run` with cargo's
//! default jobs on two busy cores), and later runs compile the generated crate alone (about
//! 2 min for the whole test). The nested cargo runs one job, so that the other tests of this
//! binary keep a core.

mod project;
mod smallest;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

/// The workspace's root folder.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// The target folder this test binary was built in (`TARGET/debug/deps/integration-…`), where
/// the generated project is built too.
fn target_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .ok_or_else(|| anyhow::anyhow!("{} is not in TARGET/PROFILE/deps", exe.display()))
}

/// The variables cargo set for this test binary that describe its package (`CARGO_PKG_NAME`,
/// `CARGO_MANIFEST_DIR`, `OUT_DIR`…). A nested cargo must not inherit them: build scripts such as
/// ring's ask to rerun when one changes, and the workspace's own builds run without them, so each
/// side would rebuild ring, rustls and kube for the other on every run.
fn variables_of_this_package() -> Vec<std::ffi::OsString> {
    const PREFIXES: [&str; 6] = [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
        "CARGO_CFG_",
        "CARGO_PRIMARY_PACKAGE",
    ];
    std::env::vars_os()
        .map(|(key, _)| key)
        .filter(|key| {
            key.to_str().is_some_and(|key| {
                key == "OUT_DIR"
                    || key == "CARGO_TARGET_TMPDIR"
                    || PREFIXES.iter().any(|p| key.starts_with(p))
            })
        })
        .collect()
}

/// `cargo ARGS` in `dir` on the workspace's target folder, offline; its standard output, or an
/// error quoting its output. One job, so that the other tests of this binary keep a core.
async fn cargo(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> anyhow::Result<String> {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir()?)
        .env("CARGO_BUILD_JOBS", "1")
        .env("CARGO_NET_OFFLINE", "true")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for key in variables_of_this_package() {
        command.env_remove(key);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(900), command.output())
        .await
        .map_err(|_| anyhow::anyhow!("cargo {args:?} did not finish within 15 min"))??;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    anyhow::ensure!(
        output.status.success(),
        "cargo {args:?} in {} failed with {}:\n{}\n{stdout}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(stdout)
}
